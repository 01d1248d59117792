"""Readers for runs and qrels: TREC text formats and JSONL.

All readers return a :class:`pandas.DataFrame` that ir_measures accepts as is, and never lose
good rows because of a bad one: a malformed line is skipped and reported as a
:class:`~reteco_measures.errors.Problem` (``path:line: query_id: what``) according to
``on_bad_lines`` ('warn' (default) | 'error' | 'skip'), as in :func:`pandas.read_csv`. The
problems are also kept in ``df.attrs["problems"]``.
"""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv

from ..errors import Problem, report_problems
from ._lines import Source, is_inline_text, read_source_bytes, source_name, split_lines

__all__ = ["read_run", "read_qrels", "read_run_with_problems", "read_qrels_with_problems", "RUN_COLUMNS"]

RUN_COLUMNS = ["query_id", "doc_id", "score", "rank", "run_id"]
QRELS_COLUMNS = ["query_id", "doc_id", "relevance", "iteration"]

Format = Literal["auto", "trec", "jsonl"]


# --------------------------------------------------------------------------------------------
# format detection


def _detect_format(source: Source, data: bytes) -> str:
    name = source_name(source) or ""
    lowered = name.lower().removesuffix(".gz")
    if lowered.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    head = data.lstrip()[:1]
    return "jsonl" if head in (b"{", b"[") else "trec"


def _parse_numbers(values: pa.ChunkedArray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised string -> number with a mask of what failed (fast path: one arrow cast)."""
    target = pa.float64() if kind == "float" else pa.int64()
    if len(values) == 0:
        return np.zeros(0, dtype=target.to_pandas_dtype()), np.zeros(0, dtype=bool)
    try:
        return pc.cast(values, target).to_numpy(), np.zeros(len(values), dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        text = pd.Series(values.to_numpy(zero_copy_only=False), dtype=object)
        num = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
        bad = np.isnan(num) & (text.str.lower() != "nan").to_numpy()
        if kind == "int":
            bad |= ~np.isnan(num) & (num != np.round(num))
            num = np.where(bad | np.isnan(num), 0, num).astype(np.int64)
        return num, bad


def _str_array(values: pa.ChunkedArray | pa.Array) -> pd.api.extensions.ExtensionArray:
    """An arrow string array as a pandas string column without copying through Python objects."""
    return pd.Series(pa.table({"v": values}).to_pandas()["v"]).array


# --------------------------------------------------------------------------------------------
# TREC run

_RUN_NAMES = ["query_id", "q0", "doc_id", "rank", "score", "run_id"]


def _fast_trec_run(data: bytes) -> pd.DataFrame | None:
    """The common case in one multi-threaded pass: fields separated by one space (or one tab),
    exactly 6 fields, no blank or comment lines, numeric rank and score. Returns None when
    the file needs the general (line-by-line checking) path."""
    if not data:
        return None
    head = data[: data.find(b"\n")] if b"\n" in data else data
    tabbed = b"\t" in head
    # Space-separated: a tab anywhere needs the general path (a single-byte scan is fast).
    # Tab-separated: spaces may pad numbers (trec_eval's own test runs do; arrow's number parser
    # accepts them) but must not appear inside the id fields, checked after parsing. A doubled,
    # leading or trailing separator makes a 7th (empty) field, which the parser rejects; an empty
    # field inside a 6-field line is caught after parsing.
    if not tabbed and b"\t" in data:
        return None
    delimiter = "\t" if tabbed else " "
    try:
        table = pv.read_csv(
            io.BytesIO(data),
            read_options=pv.ReadOptions(column_names=_RUN_NAMES, block_size=1 << 24),
            parse_options=pv.ParseOptions(
                delimiter=delimiter, quote_char=False, escape_char=False, ignore_empty_lines=False
            ),
            convert_options=pv.ConvertOptions(
                column_types={"query_id": pa.string(), "q0": pa.string(), "doc_id": pa.string(), "rank": pa.int64(),
                              "score": pa.float64(), "run_id": pa.string()},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if len(table) == 0:
        return None
    if pc.any(pc.starts_with(table["query_id"], "#")).as_py() or pc.any(pc.is_nan(table["score"])).as_py():
        return None
    for c in ("query_id", "doc_id", "run_id"):
        if pc.any(pc.equal(pc.binary_length(table[c]), 0)).as_py():
            return None
        if tabbed and pc.any(pc.match_substring(table[c], " ")).as_py():
            return None
    frame = table.drop_columns(["q0"]).to_pandas()
    frame["line"] = np.arange(1, len(frame) + 1, dtype=np.int64)
    frame = frame[[*RUN_COLUMNS, "line"]]
    return frame.astype({"query_id": "str", "doc_id": "str", "run_id": "str"})


def _read_trec_run(source: Source, data: bytes) -> tuple[pd.DataFrame, list[Problem]]:
    fast = _fast_trec_run(data)
    if fast is not None:
        return fast, []
    path = source_name(source)
    lines = split_lines(data, 6)
    n = lines.n_fields
    problems: list[Problem] = []
    blank = n == 0
    comment = lines.is_comment()
    short = (n > 0) & (n < 6) & ~comment
    for i in np.flatnonzero(short):
        fields = lines.fields_of(int(i))
        problems.append(
            Problem(
                f"expected 6 columns 'query_id Q0 doc_id rank score run_id', found {len(fields)}: {' '.join(fields)!r}",
                line=int(i) + 1,
                query_id=fields[0] if fields else None,
                path=path,
            )
        )
    keep = ~(blank | comment | short)
    line_no = np.flatnonzero(keep) + 1
    qid, doc, rank_s, score_s, run_id = (lines.column(i, keep) for i in (0, 2, 3, 4, 5))
    score, bad_score = _parse_numbers(score_s, "float")
    bad_score |= np.isnan(score)
    rank, bad_rank = _parse_numbers(rank_s, "int")
    bad_rows = np.flatnonzero(bad_score | bad_rank)
    for j in bad_rows.tolist():
        q, d = qid[j].as_py(), doc[j].as_py()
        if bad_score[j]:
            msg, kind = f"score {score_s[j].as_py()!r} is not a number", "score"
        else:
            msg, kind = f"rank {rank_s[j].as_py()!r} is not an integer", "format"
        problems.append(Problem(msg, line=int(line_no[j]), query_id=q, path=path, kind=kind, doc_id=d))
    problems.sort(key=lambda p: p.line or 0)
    ok = ~(bad_score | bad_rank)
    mask = pa.array(ok)
    frame = pd.DataFrame(
        {
            "query_id": _str_array(qid.filter(mask)),
            "doc_id": _str_array(doc.filter(mask)),
            "score": score[ok].astype(np.float64),
            "rank": rank[ok].astype(np.int64),
            "run_id": _str_array(run_id.filter(mask)),
            "line": line_no[ok].astype(np.int64),
        }
    )
    return frame, problems


# --------------------------------------------------------------------------------------------
# JSONL results


def _iter_json_lines(data: bytes, path: str | None, problems: list[Problem]):
    text = data.decode("utf-8-sig", errors="replace")
    stripped = text.lstrip()
    if stripped.startswith("["):  # a JSON array of records instead of JSONL
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"not valid JSON: {exc.msg}", line=exc.lineno, path=path))
            return
        for rec in records:
            yield None, rec
        return
    for i, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            yield i, json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"not valid JSON: {exc.msg} (column {exc.colno})", line=i, path=path))


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _read_jsonl_run(source: Source, data: bytes) -> tuple[pd.DataFrame, list[Problem]]:
    path = source_name(source)
    problems: list[Problem] = []
    qids: list[str] = []
    docs: list[str] = []
    scores: list[float] = []
    ranks: list[int] = []
    line_nos: list[int] = []
    for line, rec in _iter_json_lines(data, path, problems):
        if not isinstance(rec, dict):
            problems.append(Problem("a line must be a JSON object", line=line, path=path))
            continue
        qid = rec.get("query_id", rec.get("qid"))
        if qid is None or isinstance(qid, (dict, list)):
            problems.append(Problem("missing field 'query_id'", line=line, path=path, kind="field"))
            continue
        qid = str(qid)
        results = rec.get("results")
        if results is None:
            problems.append(Problem("missing field 'results'", line=line, query_id=qid, path=path, kind="field"))
            continue
        if not isinstance(results, list):
            problems.append(Problem("'results' must be a list", line=line, query_id=qid, path=path, kind="field"))
            continue
        for pos, item in enumerate(results, start=1):
            if not isinstance(item, dict) or "doc_id" not in item:
                problems.append(
                    Problem(f"result {pos} lacks 'doc_id'", line=line, query_id=qid, path=path, kind="field")
                )
                continue
            score = _as_number(item.get("score"))
            if score is None or math.isnan(score):
                problems.append(
                    Problem(f"result {pos} ({item['doc_id']}): score {item.get('score')!r} is not a number",
                            line=line, query_id=qid, path=path, kind="score", doc_id=str(item["doc_id"]))
                )
                continue
            qids.append(qid)
            docs.append(str(item["doc_id"]))
            scores.append(score)
            ranks.append(pos)
            line_nos.append(line if line is not None else 0)
    frame = pd.DataFrame(
        {
            "query_id": pd.array(qids, dtype="str"),
            "doc_id": pd.array(docs, dtype="str"),
            "score": np.asarray(scores, dtype=np.float64),
            "rank": np.asarray(ranks, dtype=np.int64),
            "run_id": pd.array([""] * len(qids), dtype="str"),
            "line": np.asarray(line_nos, dtype=np.int64),
        }
    )
    return frame, problems


def read_run_with_problems(source: Source, format: Format = "auto") -> tuple[pd.DataFrame, list[Problem]]:
    """Like :func:`read_run`, returning ``(frame with a 'line' column, problems)``; never raises
    on malformed content (only on a missing file)."""
    data = read_source_bytes(source)
    fmt = _detect_format(source, data) if format == "auto" else format
    if fmt == "trec":
        return _read_trec_run(source, data)
    if fmt == "jsonl":
        return _read_jsonl_run(source, data)
    raise ValueError(f"unknown run format {format!r}; use 'auto', 'trec' or 'jsonl'")


def read_run(
    source: Source,
    format: Format = "auto",
    *,
    on_bad_lines: Literal["warn", "error", "skip"] = "warn",
    line_numbers: bool = False,
) -> pd.DataFrame:
    """Read a run: TREC 6-column text or JSONL results.

    Args:
        source: a path (``.gz`` read transparently), a string holding the file's text, bytes,
            or an open file.
        format: ``'trec'`` (``query_id Q0 doc_id rank score run_id``; tabs, runs of spaces and
            trailing extra fields are tolerated as trec_eval does; lines starting with ``#``
            are comments), ``'jsonl'`` (one ``{"query_id", "results": [{"doc_id", "score"}]}``
            per line) or ``'auto'`` (by extension, else by the first character).
        on_bad_lines: what to do with malformed lines: ``'warn'`` (skip them and warn),
            ``'error'`` (raise :class:`~reteco_measures.errors.DataFormatError` listing all of
            them) or ``'skip'``.
        line_numbers: keep a ``line`` column (1-based line of each row in the file).

    Returns:
        DataFrame with columns ``query_id, doc_id, score, rank, run_id`` (+ ``line``) in file
        order. For JSONL, ``rank`` is the 1-based position in the results list. Duplicates are
        *not* removed here: that is a run contract's job (:func:`validate_run`).
    """
    frame, problems = read_run_with_problems(source, format)
    report_problems(problems, on_bad_lines, source_name(source) or "run")
    if not line_numbers:
        frame = frame.drop(columns="line")
    frame.attrs["problems"] = problems
    return frame


# --------------------------------------------------------------------------------------------
# qrels


def _read_trec_qrels(source: Source, data: bytes) -> tuple[pd.DataFrame, list[Problem]]:
    path = source_name(source)
    lines = split_lines(data, 4)
    n = lines.n_fields
    comment = lines.is_comment()
    bad_cols = (n > 0) & (n != 4) & ~comment
    problems: list[Problem] = []
    for i in np.flatnonzero(bad_cols):
        fields = lines.fields_of(int(i))
        problems.append(
            Problem(f"expected 4 columns 'query_id iteration doc_id relevance', found {len(fields)}",
                    line=int(i) + 1, query_id=fields[0], path=path)
        )
    keep = (n == 4) & ~comment
    line_no = np.flatnonzero(keep) + 1
    qid, it, doc, rel_s = (lines.column(i, keep) for i in range(4))
    rel, bad = _parse_numbers(rel_s, "int")
    for j in np.flatnonzero(bad).tolist():
        problems.append(Problem(f"relevance {rel_s[j].as_py()!r} is not an integer", line=int(line_no[j]),
                                query_id=qid[j].as_py(), path=path, doc_id=doc[j].as_py()))
    ok = ~bad
    mask = pa.array(ok)
    problems.sort(key=lambda p: p.line or 0)
    frame = pd.DataFrame(
        {
            "query_id": _str_array(qid.filter(mask)),
            "doc_id": _str_array(doc.filter(mask)),
            "relevance": rel[ok].astype(np.int64),
            "iteration": _str_array(it.filter(mask)),
            "line": line_no[ok].astype(np.int64),
        }
    )
    return frame, problems


_GOLD_LIST_FIELDS = ("relevant_doc_ids", "gold_ids", "gold_doc_ids")


def _read_jsonl_qrels(source: Source, data: bytes) -> tuple[pd.DataFrame, list[Problem]]:
    """JSONL qrels: ``{"query_id", "doc_id", "relevance"}`` per line, or one record per query
    with a list of relevant ids (``relevant_doc_ids`` / ``gold_ids`` / ``gold_doc_ids``,
    relevance 1) as in the ChunQiu and RETECO example files."""
    path = source_name(source)
    problems: list[Problem] = []
    rows: list[tuple[str, str, int, int]] = []
    for line, rec in _iter_json_lines(data, path, problems):
        if not isinstance(rec, dict):
            problems.append(Problem("a line must be a JSON object", line=line, path=path))
            continue
        qid = rec.get("query_id", rec.get("id"))
        if qid is None:
            problems.append(Problem("missing field 'query_id'", line=line, path=path, kind="field"))
            continue
        qid = str(qid)
        gold_field = next((f for f in _GOLD_LIST_FIELDS if f in rec), None)
        if "doc_id" in rec:
            rel = rec.get("relevance", 1)
            if isinstance(rel, bool) or not isinstance(rel, int):
                problems.append(Problem(f"relevance {rel!r} is not an integer", line=line, query_id=qid,
                                        path=path, doc_id=str(rec["doc_id"])))
                continue
            rows.append((qid, str(rec["doc_id"]), rel, line or 0))
        elif gold_field is not None:
            ids = rec[gold_field]
            if not isinstance(ids, list):
                problems.append(Problem(f"'{gold_field}' must be a list", line=line, query_id=qid, path=path))
                continue
            rows.extend((qid, str(d), 1, line or 0) for d in ids)
        else:
            problems.append(Problem("needs 'doc_id' (+ 'relevance') or a list 'relevant_doc_ids'",
                                    line=line, query_id=qid, path=path, kind="field"))
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance", "line"])
    frame = frame.astype({"query_id": "str", "doc_id": "str", "relevance": np.int64, "line": np.int64})
    frame.insert(3, "iteration", pd.array(["0"] * len(frame), dtype="str"))
    return frame, problems


def read_qrels_with_problems(source: Source, format: Format = "auto") -> tuple[pd.DataFrame, list[Problem]]:
    """Like :func:`read_qrels`, returning ``(frame with a 'line' column, problems)``."""
    data = read_source_bytes(source)
    fmt = _detect_format(source, data) if format == "auto" else format
    if fmt == "trec":
        return _read_trec_qrels(source, data)
    if fmt == "jsonl":
        return _read_jsonl_qrels(source, data)
    raise ValueError(f"unknown qrels format {format!r}; use 'auto', 'trec' or 'jsonl'")


def read_qrels(
    source: Source,
    format: Format = "auto",
    *,
    on_bad_lines: Literal["warn", "error", "skip"] = "warn",
    line_numbers: bool = False,
) -> pd.DataFrame:
    """Read relevance judgments: TREC qrels (``query_id iteration doc_id relevance``; ``#``
    comment lines skipped, as trec_eval 10 does) or JSONL.

    Returns a DataFrame with columns ``query_id, doc_id, relevance, iteration`` (+ ``line``),
    in file order. Repeated (query, doc) pairs are kept as they are; evaluation uses the last
    one, as pytrec_eval's dictionaries do.
    """
    frame, problems = read_qrels_with_problems(source, format)
    report_problems(problems, on_bad_lines, source_name(source) or "qrels")
    if not line_numbers:
        frame = frame.drop(columns="line")
    frame.attrs["problems"] = problems
    return frame


def looks_like_path(value: object) -> bool:
    """True for a path-like or a str that names an existing file (not inline text)."""
    if isinstance(value, os.PathLike):
        return True
    return isinstance(value, str) and not is_inline_text(value) and Path(value).exists()
