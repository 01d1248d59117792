"""The ``chunqiu`` output contract (ChunQiu Temporal Retrieval) — strict, whole batch.

One JSON object per line::

    {"query_id": "q1", "results": [{"doc_id": "d7", "score": 0.93}, {"doc_id": "d2", "score": 0.5}]}

Rules (ChunQiu task description: "Return at most ten distinct known IDs per query, sorted by finite
descending scores, with ties following corpus order. Empty results are valid. Every query must
appear exactly once; output row order is unrestricted"):

* every line is UTF-8 JSON, an object with a string ``query_id`` and an array ``results`` of
  objects with a string ``doc_id`` and a numeric ``score``;
* every expected query exactly once, no unknown query (when ``queries`` is given);
* at most ``top_k`` results; doc ids distinct within a query and known (when ``corpus`` is given);
* scores finite numbers (not ``NaN``/``Infinity`` tokens, booleans, strings or null) in
  non-increasing order; equal scores must follow corpus order (when ``corpus`` is given).

Any violation makes the *whole batch* invalid (``report.valid`` False, official score 0); all
violations are reported at once, each with its line. So every problem has severity ``error``.

`parse_results` (shared with the ``spoken`` contract) reads the lines with
`iter_jsonl`, the loop of every JSONL reader of the package: a
line that is not UTF-8, not JSON or not a JSON object is reported with the same number, words
and kind as by ``rm.read_run(format="jsonl")`` (``not valid UTF-8 text (byte 0xe9 at column
18)``, kind ``encoding``; ``not valid JSON: ...`` and ``a line must be a JSON object, found a
JSON array``, kind ``format``). The format's own rules are checked on the decoded objects, and
every violation is kept (the run reader drops what it cannot use, a contract must see
everything): a key twice in one object, missing or mistyped fields, scores.

Choices where the task description is silent (documented in ``docs/benchmarks/chunqiu.md``): ids must be
JSON strings (an integer id is a violation, not silently converted); lines holding only ASCII
whitespace are ignored (``blank_lines='error'`` makes them violations); a key twice in one object
is a violation (JSON parsers disagree on which value counts); unknown extra keys are allowed
(``allow_extra_fields=False`` forbids them); a UTF-8 byte-order mark at the start is tolerated;
without ``corpus`` the unknown-id and tie-order checks cannot run and are listed in
``report.extra["checks_skipped"]``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...contracts.base import ValidationReport, contract, id_frame, with_severity
from ...errors import Problem
from ...io.jsonl import iter_jsonl, json_number
from ...io.lines import is_inline_text, read_source_bytes, source_name
from ...kernels.ranking import corpus_positions, group_rank

__all__ = [
    "validate_chunqiu",
    "parse_results",
    "ParsedResults",
    "Record",
    "score_value",
    "sort_problems",
    "item_problems",
]


# ================================================================================================
# strict JSONL parsing (shared with the spoken contract)


@dataclass
class Record:
    """One non-blank line of a results file: its line, query id, results list and problems."""

    line: int | None
    query_id: str | None
    results: list[Any] | None
    problems: list[Problem] = field(default_factory=list)


@dataclass
class ParsedResults:
    """A parsed results file.

    Attributes:
        path: the file name (None for in-memory data).
        records: one `Record` per non-blank line, in file order.
        items: one row per result object: ``record`` (index into ``records``), ``line``,
            ``query_id``, ``pos`` (1-based position in the list), ``doc_id`` (None when not a
            string), ``score`` (NaN when not a finite number), ``score_ok``.
        problems: problems not tied to a record (blank lines with ``blank_lines='error'``).
    """

    path: str | None
    records: list[Record]
    items: pd.DataFrame
    problems: list[Problem]

    def all_problems(self) -> list[Problem]:
        out = list(self.problems)
        for rec in self.records:
            out.extend(rec.problems)
        return out


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the string {json.dumps(value, ensure_ascii=False)}"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, dict):
        return "a JSON object"
    return repr(value)


def score_value(value: Any) -> tuple[float, str | None]:
    """``(score, None)`` for a finite JSON number, else ``(nan, what is wrong)``.

    Booleans, strings, null, arrays and objects are not numbers; ``NaN``/``Infinity`` tokens and
    numbers beyond the double range (``1e400``, huge integers) are not finite.
    """
    f = json_number(value)
    if f is not None:
        return f, None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan, f"is not a number ({_describe(value)})"
    if isinstance(value, int):
        return math.nan, "is not finite (an integer too large for a double)"
    return math.nan, f"is not finite ({_describe(value)})"


@dataclass(frozen=True)
class _Bad:
    message: str
    kind: str


_BLANK = _Bad("blank line", "format")


def _decode_lines(data: bytes, path: str | None) -> list[tuple[int, Any]]:
    """Every line of ``data`` in file order, read by `iter_jsonl`
    (the loop every JSONL reader uses, so a damaged line has the same number, words and kind as
    in ``rm.read_run``): ``(line, object)``, ``(line, _Bad(its problem))`` or ``(line, _BLANK)``.

    One contract rule is added to the decoding (``unique=True``): an object with a key twice
    (which the JSON parser alone would read as its last value) makes its line a ``_Bad`` too."""
    problems: list[Problem] = []
    blank: list[int] = []
    out: list[tuple[int, Any]] = list(iter_jsonl(data, problems, name=path, blank_lines=blank, unique=True))
    out += [(p.line, _Bad(p.message, p.kind)) for p in problems if p.line is not None]
    out += [(line, _BLANK) for line in blank]
    out.sort(key=lambda pair: pair[0])
    return out


def parse_results(run: Any, *, blank_lines: str = "ignore", allow_extra_fields: bool = True) -> ParsedResults:
    """Parse a results file ``{"query_id": str, "results": [{"doc_id": str, "score": number}]}``
    line by line, keeping every problem.

    Args:
        run: a path, the file's text (a str containing a newline), bytes, an open file, a list
            of records (dicts; "line" = 1-based position in the list) or a DataFrame with
            ``query_id, doc_id, score`` (each query's rows, in row order, form its list; there
            are no line numbers and no way to express an empty list).
        blank_lines: ``'ignore'`` (default: whitespace-only lines are skipped) or ``'error'``.
        allow_extra_fields: ignore unknown keys (default) or report them.

    Returns:
        `ParsedResults`.

    Raises:
        FileNotFoundError: the path does not exist. Content problems never raise.
    """
    if blank_lines not in ("ignore", "error"):
        raise ValueError(f"blank_lines must be 'ignore' or 'error', not {blank_lines!r}")
    if isinstance(run, pd.DataFrame):
        return _parse_frame(run, allow_extra_fields)
    path: str | None = None
    if isinstance(run, list):
        lines: list[tuple[int, Any]] = list(enumerate(run, start=1))
    elif isinstance(run, (str, bytes, os.PathLike)) or hasattr(run, "read"):
        if isinstance(run, (str, os.PathLike)) and not is_inline_text(run) and not Path(run).exists():
            raise FileNotFoundError(f"{os.fspath(run)}: no such results file")
        path = source_name(run)
        lines = _decode_lines(read_source_bytes(run), path)
    else:
        raise TypeError(f"cannot read results from a {type(run).__name__}; give a path, text, records or a DataFrame")

    problems: list[Problem] = []
    records: list[Record] = []
    cols: dict[str, list] = {k: [] for k in ("record", "line", "query_id", "pos", "doc_id", "score", "score_ok")}

    def bad(rec: Record, message: str, kind: str, doc_id: str | None = None) -> None:
        rec.problems.append(
            Problem(message, line=rec.line, query_id=rec.query_id, path=path, kind=kind, doc_id=doc_id)
        )

    for line, obj in lines:
        if obj is _BLANK:
            if blank_lines == "error":
                problems.append(Problem("blank line", line=line, path=path, kind="format"))
            continue
        rec = Record(line=line, query_id=None, results=None)
        records.append(rec)
        if isinstance(obj, _Bad):
            bad(rec, obj.message, obj.kind)
            continue
        if not isinstance(obj, dict):
            bad(rec, f"a line must be a JSON object, found {_describe(obj)}", "format")
            continue
        if "query_id" not in obj:
            bad(rec, "missing field 'query_id'", "field")
        elif isinstance(obj["query_id"], str):
            rec.query_id = obj["query_id"]
        else:
            bad(rec, f"'query_id' must be a JSON string, found {_describe(obj['query_id'])}", "field")
        if not allow_extra_fields and set(obj) - {"query_id", "results"}:
            bad(rec, f"unexpected field(s) {sorted(set(obj) - {'query_id', 'results'})}", "field")
        if "results" not in obj:
            bad(rec, "missing field 'results'", "field")
            continue
        results = obj["results"]
        if not isinstance(results, list):
            bad(rec, f"'results' must be a JSON array, found {_describe(results)}", "field")
            continue
        rec.results = results
        for pos, item in enumerate(results, start=1):
            if not isinstance(item, dict):
                bad(rec, f"result {pos} must be a JSON object, found {_describe(item)}", "field")
                continue
            doc = item.get("doc_id")
            if "doc_id" not in item:
                bad(rec, f"result {pos} lacks 'doc_id'", "field")
            elif not isinstance(doc, str):
                bad(rec, f"result {pos}: 'doc_id' must be a JSON string, found {_describe(doc)}", "field")
                doc = None
            label = f"result {pos} ({doc})" if doc is not None else f"result {pos}"
            if not allow_extra_fields and set(item) - {"doc_id", "score"}:
                bad(rec, f"{label}: unexpected field(s) {sorted(set(item) - {'doc_id', 'score'})}", "field", doc)
            if "score" not in item:
                bad(rec, f"{label} lacks 'score'", "field", doc)
                score, why = math.nan, "missing"
            else:
                score, why = score_value(item["score"])
                if why:
                    bad(rec, f"{label}: score {why}", "score", doc)
            cols["record"].append(len(records) - 1)
            cols["line"].append(line)
            cols["query_id"].append(rec.query_id)
            cols["pos"].append(pos)
            cols["doc_id"].append(doc)
            cols["score"].append(score)
            cols["score_ok"].append(why is None)
    items = pd.DataFrame(
        {
            "record": np.asarray(cols["record"], dtype=np.int64),
            "line": np.asarray(cols["line"], dtype=np.int64),
            "query_id": np.asarray(cols["query_id"], dtype=object),
            "pos": np.asarray(cols["pos"], dtype=np.int64),
            "doc_id": np.asarray(cols["doc_id"], dtype=object),
            "score": np.asarray(cols["score"], dtype=np.float64),
            "score_ok": np.asarray(cols["score_ok"], dtype=bool),
        }
    )
    return ParsedResults(path=path, records=records, items=items, problems=problems)


def _parse_frame(frame: pd.DataFrame, allow_extra_fields: bool) -> ParsedResults:
    missing = {"query_id", "doc_id", "score"} - set(frame.columns)
    if missing:
        raise ValueError(f"run DataFrame lacks column(s) {sorted(missing)} (found {list(frame.columns)})")
    qids = frame["query_id"].astype(str).to_numpy(dtype=object)
    docs = frame["doc_id"].astype(str).to_numpy(dtype=object)
    scores = frame["score"].tolist()
    order = np.argsort(qids, kind="stable")
    sorted_q = qids[order]
    cuts = np.flatnonzero(sorted_q[1:] != sorted_q[:-1]) + 1
    groups = np.split(order, cuts) if len(order) else []
    groups.sort(key=lambda g: g[0])  # queries in order of first appearance
    records = [
        {"query_id": str(qids[g[0]]), "results": [{"doc_id": docs[i], "score": scores[i]} for i in g.tolist()]}
        for g in groups
    ]
    parsed = parse_results(records, allow_extra_fields=allow_extra_fields)
    for rec in parsed.records:  # a DataFrame has no lines
        rec.line = None
        rec.problems = [Problem(p.message, None, p.query_id, None, p.kind, p.doc_id) for p in rec.problems]
    parsed.items["line"] = 0
    return parsed


def sort_problems(problems: Iterable[Problem]) -> list[Problem]:
    """Problems ordered by line (problems without a line last); stable otherwise."""
    big = np.iinfo(np.int64).max
    return sorted(problems, key=lambda p: p.line if p.line is not None else big)


def cleaned_run(items: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """Kept rows in file order with the run-order rank inside each record."""
    kept = items[keep]
    rank = group_rank(kept["record"].to_numpy())
    return pd.DataFrame(
        {
            "query_id": pd.array(kept["query_id"].to_numpy(), dtype="str"),
            "doc_id": pd.array(kept["doc_id"].to_numpy(), dtype="str"),
            "score": kept["score"].to_numpy(dtype=np.float64),
            "rank": rank,
            "line": kept["line"].to_numpy(dtype=np.int64),
        }
    )


def _line(value: int) -> int | None:
    return int(value) if value > 0 else None


def item_problems(
    items: pd.DataFrame,
    path: str | None,
    *,
    corpus_pos: np.ndarray | None,
    check_ties: bool,
) -> list[tuple[int, Problem]]:
    """Vectorised per-result checks on the items frame: duplicates, unknown ids, score order
    and (``check_ties``) corpus order of equal scores. ``corpus_pos``: corpus position of each
    item's doc (int64 max = unknown), None when no corpus is known.

    Returns ``(record index, problem)`` pairs."""
    problems: list[tuple[int, Problem]] = []
    if items.empty:
        return problems
    rec = items["record"].to_numpy()
    pos = items["pos"].to_numpy()
    doc = items["doc_id"].to_numpy(dtype=object)
    qid = items["query_id"].to_numpy(dtype=object)
    line = items["line"].to_numpy()
    score = items["score"].to_numpy(dtype=np.float64)
    ok = items["score_ok"].to_numpy()
    has_doc = items["doc_id"].notna().to_numpy()
    doc = np.where(has_doc, doc, None)
    qid = np.where(items["query_id"].notna().to_numpy(), qid, None)
    score_text = [repr(float(v)) for v in score.tolist()]

    def add(mask: np.ndarray, kind: str, text) -> None:
        for i in np.flatnonzero(mask).tolist():
            problems.append((int(rec[i]), Problem(text(i), line=_line(line[i]), query_id=qid[i], path=path,
                                                  kind=kind, doc_id=doc[i])))

    # duplicates within one list
    key = pd.DataFrame({"r": rec, "d": np.where(has_doc, doc, None)})
    dup = key.duplicated(["r", "d"], keep="first").to_numpy() & has_doc
    if dup.any():
        first_pos = pd.Series(pos).groupby([rec, np.where(has_doc, doc, "")]).transform("first").to_numpy(np.int64)
        add(dup, "duplicate", lambda i: f"result {pos[i]}: document {doc[i]} repeated (first at result {first_pos[i]})")

    big = np.iinfo(np.int64).max
    if corpus_pos is not None:
        add(has_doc & (corpus_pos == big), "unknown_doc",
            lambda i: f"result {pos[i]}: unknown document {doc[i]} (not in the corpus)")

    # adjacent pairs inside one list
    prev = np.r_[-1, np.arange(len(items) - 1)]
    pair = np.zeros(len(items), dtype=bool)
    pair[1:] = (rec[1:] == rec[:-1]) & (pos[1:] == pos[:-1] + 1)
    both = pair & ok & ok[prev]
    rising = both & (score > score[prev])
    add(rising, "order", lambda i: (
        f"scores not in descending order: result {pos[i]} ({doc[i]}) has score {score_text[i]} "
        f"> {score_text[prev[i]]} of result {pos[i] - 1} ({doc[prev[i]]})"))
    if check_ties and corpus_pos is not None:
        known = (corpus_pos != big) & has_doc
        tie_bad = both & (score == score[prev]) & known & known[prev] & (corpus_pos < corpus_pos[prev])
        add(tie_bad, "tie_order", lambda i: (
            f"tie not in corpus order: result {pos[i]} ({doc[i]}, corpus position {corpus_pos[i] + 1}) has the "
            f"same score {score_text[i]} as result {pos[i] - 1} ({doc[prev[i]]}, corpus position "
            f"{corpus_pos[prev[i]] + 1}) but comes earlier in the corpus"))
    return problems


# ================================================================================================
# the contract


@contract("chunqiu")
def validate_chunqiu(
    run: Any,
    *,
    corpus: Any = None,
    queries: Any = None,
    top_k: int = 10,
    blank_lines: str = "ignore",
    allow_extra_fields: bool = True,
) -> ValidationReport:
    """Validate a ChunQiu results batch; any violation makes the whole batch invalid.

    Args:
        run: results JSONL (path, text, bytes, open file), a list of records, or a DataFrame
            ``query_id, doc_id, score`` (lists in row order).
        corpus: doc ids in corpus order (a sequence, a DataFrame with ``doc_id``, or the path of
            ``corpus.jsonl``); needed for the unknown-id and tie-order checks.
        queries: the expected query ids (a sequence, a DataFrame with ``query_id``, or a
            queries JSONL path); needed for the missing / unknown query checks.
        top_k: maximum results per query (10).
        blank_lines: ``'ignore'`` (default) or ``'error'``.
        allow_extra_fields: ignore unknown keys (default) or report them.

    Returns:
        A `ValidationReport`: ``valid`` (= ``ok``) False on any violation, ``errors``
        sorted by line, ``run`` the well-formed results (``query_id, doc_id, score, rank,
        line``; rank = position in the list), ``missing_queries``, and ``extra`` with
        ``checks_skipped`` and counts.
    """
    parsed = parse_results(run, blank_lines=blank_lines, allow_extra_fields=allow_extra_fields)
    path = parsed.path
    problems = parsed.all_problems()
    items = parsed.items
    skipped: list[str] = []

    for rec in parsed.records:
        if rec.results is not None and len(rec.results) > top_k:
            problems.append(Problem(f"{len(rec.results)} results, more than top_k = {top_k}", line=rec.line,
                                    query_id=rec.query_id, path=path, kind="too_many"))

    corpus_frame = id_frame(corpus, "doc_id")
    corpus_pos = None
    if corpus_frame is not None:
        corpus_pos = corpus_positions(pd.Series(items["doc_id"].fillna("").astype(str)), corpus_frame["doc_id"])
    else:
        skipped += ["unknown_doc", "tie_order"]
    problems += [p for _, p in item_problems(items, path, corpus_pos=corpus_pos, check_ties=True)]

    # query coverage: once each, none unknown, none missing
    rec_q = [(rec.line, rec.query_id) for rec in parsed.records if rec.query_id is not None]
    first_line: dict[str, int | None] = {}
    for line, q in rec_q:
        if q in first_line:
            where = f" (first at line {first_line[q]})" if first_line[q] is not None else ""
            problems.append(Problem(f"query appears more than once{where}", line=line, query_id=q, path=path,
                                    kind="repeated_query"))
        else:
            first_line[q] = line
    expected = id_frame(queries, "query_id")
    missing: list[str] = []
    if expected is not None:
        known_q = set(expected["query_id"].tolist())
        for line, q in rec_q:
            if q not in known_q:
                problems.append(Problem("unknown query id (not among the queries)", line=line, query_id=q,
                                        path=path, kind="unknown_query"))
        missing = [q for q in expected["query_id"].tolist() if q not in first_line]
        problems += [Problem("query missing from the results (every query must appear exactly once)",
                             query_id=q, path=path, kind="missing_query") for q in missing]
    else:
        skipped += ["missing_query", "unknown_query"]

    keep = items["score_ok"].to_numpy() & items["doc_id"].notna().to_numpy() & items["query_id"].notna().to_numpy()
    cleaned = cleaned_run(items, keep)
    problems = with_severity(sort_problems(problems), "error")  # any violation invalidates the batch
    return ValidationReport(
        "chunqiu",
        problems,
        cleaned,
        missing_queries=missing,
        extra={"checks_skipped": skipped, "lines": len(parsed.records), "queries": len(first_line)},
    )
