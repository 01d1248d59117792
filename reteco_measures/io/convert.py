"""Normalise whatever ir_measures accepts (plus file paths) into DataFrames, and back."""

from __future__ import annotations

import itertools
import os
from operator import methodcaller
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataFormatError, Problem
from .lines import is_inline_text
from .readers import MAX_GRADE, read_qrels, read_run, read_run_with_problems

__all__ = ["as_run_frame", "as_qrels_frame", "run_frame_with_problems", "run_to_dict", "qrels_to_dict", "is_source"]


def is_source(value: Any) -> bool:
    """A file path (str / PathLike) or inline file text, as opposed to in-memory data."""
    return isinstance(value, (str, os.PathLike, bytes))


def _check_exists(source: Any, what: str) -> None:
    """A ``str`` path (not inline text) that does not exist raises ``FileNotFoundError``
    ("<path>: no such <what> file"); other sources are left to the readers."""
    if isinstance(source, str) and not is_inline_text(source) and not os.path.exists(source):
        raise FileNotFoundError(f"{source}: no such {what} file")


def _str_col(values: Any) -> pd.Series:
    s = values if isinstance(values, pd.Series) else pd.Series(values)
    s = s.reset_index(drop=True)
    if isinstance(s.dtype, pd.StringDtype) or s.dtype == "str":
        return s
    if s.dtype == object and len(s) and isinstance(s.iloc[0], str):
        try:
            return s.astype("str")
        except (TypeError, ValueError):
            pass
    return s.map(str).astype("str")


def _strings(keys: list) -> pd.Series:
    """A ``str`` column of ``keys`` (any hashable: ``str()`` of each unless all are ``str``)."""
    try:
        arr = pa.array(keys, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        arr = pa.array([str(k) for k in keys], type=pa.string())
    return pd.Series(pd.array(arr, dtype="str"))


def _values(values: list) -> Any:
    """``values`` as a numeric array when numpy reads them as numbers (int, float, bool), else an
    object array (text, None, mixed): the checks afterwards see exactly what the user gave."""
    types = set(map(type, values))
    try:
        if types <= {float, int}:  # the common case, read without inferring a dtype
            return np.fromiter(values, dtype=np.float64 if float in types else np.int64, count=len(values))
    except OverflowError:  # an int beyond int64: numpy's inference below decides
        pass
    arr = np.array(values)
    if arr.ndim == 1 and arr.dtype.kind in "biuf":
        return arr
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _from_dict_of_dict(data: dict, value_name: str) -> pd.DataFrame:
    """``{query: {doc: value}}`` as columns, built in one pass over the dicts: the row counts
    first, the query ids as codes into the (few) outer keys, the document ids and values
    gathered by C-level iteration; checks follow on whole columns."""
    inner = list(data.values())
    lengths = np.fromiter(map(len, inner), dtype=np.int64, count=len(inner))
    codes = np.repeat(np.arange(len(inner), dtype=np.int64), lengths)
    qid_arr = pa.array([q if isinstance(q, str) else str(q) for q in data], type=pa.string())
    qids = pd.Series(pd.array(qid_arr.take(pa.array(codes)), dtype="str"))
    docs = _strings(list(itertools.chain.from_iterable(map(methodcaller("keys"), inner))))
    vals = _values(list(itertools.chain.from_iterable(map(methodcaller("values"), inner))))
    return pd.DataFrame({"query_id": qids, "doc_id": docs, value_name: vals}, copy=False)


def _bad_value_problems(frame: pd.DataFrame, bad: np.ndarray, value: str, raw: Any, what: str) -> list[Problem]:
    rows = np.flatnonzero(bad)
    qids = frame["query_id"].to_numpy()[rows]
    docs = frame["doc_id"].to_numpy()[rows]
    values = np.asarray(raw, dtype=object)[rows] if raw is not None else [None] * len(rows)
    return [
        Problem(f"row {int(r) + 1}: {value} {v!r} is not {what}", line=int(r) + 1, query_id=str(q), kind="score"
                if value == "score" else "format", doc_id=str(d))
        for r, q, d, v in zip(rows.tolist(), qids, docs, values)
    ]


def _scores(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """float64 scores and a mask of those that are not finite numbers (NaN, ±inf, text, None)."""
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    num = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    return num, ~np.isfinite(num)


def run_frame_with_problems(run: Any, *, line_numbers: bool = False, rank: bool = True
                            ) -> tuple[pd.DataFrame, list[Problem]]:
    """Like `as_run_frame`, but rows whose score is not a finite number (NaN, ±inf, text,
    None) are dropped and returned as problems (``line`` = row position + 1 for in-memory runs)
    instead of raising. Files are read as `read_run` reads them.
    ``line_numbers``: keep a ``line`` column (a DataFrame's own ``line`` column, else the row
    position + 1 for in-memory runs); ``rank=False``: no ``rank`` column (see `read_run`)."""
    if is_source(run):
        _check_exists(run, "run")
        frame, problems = read_run_with_problems(run, rank=rank)
        return (frame if line_numbers else frame.drop(columns="line")), problems
    if isinstance(run, pd.DataFrame):
        missing = {"query_id", "doc_id", "score"} - set(run.columns)
        if missing:
            raise ValueError(f"run DataFrame lacks column(s) {sorted(missing)} (found {list(run.columns)})")
        raw = run["score"]
        if raw.dtype == np.float64:  # shared (copy-on-write) rather than copied
            score, bad = raw.reset_index(drop=True), ~np.isfinite(raw.to_numpy())
        else:
            score, bad = _scores(raw)
        # no copy of the columns (arrow strings are shared, numbers taken as they are): the
        # caller's frame and this one hold the same buffers (peak memory on large runs)
        columns = {"query_id": _str_col(run["query_id"]), "doc_id": _str_col(run["doc_id"]), "score": score}
        for extra in ("rank", "line") if rank else ("line",):
            if extra in run.columns:
                columns[extra] = run[extra].reset_index(drop=True)  # shared, copy-on-write
        out = pd.DataFrame(columns, copy=False)
    elif isinstance(run, dict):
        out = _from_dict_of_dict(run, "score")
        raw = out["score"]
        score, bad = _scores(raw)
        out["score"] = score
    else:
        rows = [(r.query_id, r.doc_id, r.score) for r in run]  # namedtuple iterable
        raw = [r[2] for r in rows]
        score, bad = _scores(raw)
        out = pd.DataFrame({"query_id": _str_col([str(r[0]) for r in rows]),
                            "doc_id": _str_col([str(r[1]) for r in rows]), "score": score})
    if line_numbers and "line" not in out.columns:
        out["line"] = np.arange(1, len(out) + 1, dtype=np.int64)
    if not bad.any():
        return out, []
    problems = _bad_value_problems(out, bad, "score", raw, "a finite number")
    return out[~bad].reset_index(drop=True), problems


def as_run_frame(run: Any, *, rank: bool = True) -> pd.DataFrame:
    """A run as a DataFrame with ``query_id, doc_id, score`` (str, str, float64), order kept.

    Files are read by `read_run` (bad lines skipped with a warning); ``rank=False`` leaves
    out the file's (or a DataFrame's) ``rank`` column, which no evaluation reads. An
    in-memory run (DataFrame, ``{query: {doc: score}}``, scored-document tuples) whose scores
    are not all finite numbers raises `DataFormatError` naming
    every such row: a NaN score has no place in a ranking, and evaluators disagree about it.
    """
    if is_source(run):
        _check_exists(run, "run")
        return read_run(run, rank=rank)
    frame, problems = run_frame_with_problems(run, rank=rank)
    if problems:
        raise DataFormatError(problems)
    return frame


def as_qrels_frame(qrels: Any) -> pd.DataFrame:
    """Qrels as a DataFrame with ``query_id, doc_id, relevance`` (str, str, int64).

    In-memory relevance values must be integers (or floats with an integral value) from
    -1000 to 1000 (`MAX_GRADE`, the bound the readers apply);
    any other value (NaN, 1.5, text, 2**31) raises
    `DataFormatError` naming the rows, never becomes another
    number.
    """
    if is_source(qrels):
        _check_exists(qrels, "qrels")
        return read_qrels(qrels)
    if isinstance(qrels, pd.DataFrame):
        missing = {"query_id", "doc_id", "relevance"} - set(qrels.columns)
        if missing:
            raise ValueError(f"qrels DataFrame lacks column(s) {sorted(missing)} (found {list(qrels.columns)})")
        out = pd.DataFrame({"query_id": _str_col(qrels["query_id"]), "doc_id": _str_col(qrels["doc_id"])})
        raw = qrels["relevance"]
    elif isinstance(qrels, dict):
        out = _from_dict_of_dict(qrels, "relevance")
        raw = out.pop("relevance")
    else:
        rows = [(r.query_id, r.doc_id, r.relevance) for r in qrels]
        out = pd.DataFrame({"query_id": _str_col([str(r[0]) for r in rows]),
                            "doc_id": _str_col([str(r[1]) for r in rows])})
        raw = [r[2] for r in rows]
    out["relevance"] = _relevance(out, raw)
    return out


def _relevance(frame: pd.DataFrame, raw: Any) -> np.ndarray:
    values = raw if isinstance(raw, pd.Series) else pd.Series(list(raw), dtype=object)
    values = values.reset_index(drop=True)
    dtype = values.dtype
    if (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)) and not values.isna().any():
        out = values.to_numpy(dtype=np.int64) if not pd.api.types.is_unsigned_integer_dtype(dtype) else None
        if out is not None and not ((out > MAX_GRADE) | (out < -MAX_GRADE)).any():
            return out
    num = pd.to_numeric(values, errors="coerce")
    num = num.to_numpy(dtype=np.float64, na_value=np.nan)
    # integral values only (a float detour cannot change one within the grade bound)
    bad = ~(np.isfinite(num) & (num == np.round(num)))
    if bad.any():
        raise DataFormatError(_bad_value_problems(frame, bad, "relevance", values, "an integer"))
    large = np.abs(num) > MAX_GRADE
    if large.any():
        raise DataFormatError(_bad_value_problems(frame, large, "relevance", values,
                                                  f"a grade from {-MAX_GRADE} to {MAX_GRADE}"))
    return num.astype(np.int64)


def _to_dict(frame: pd.DataFrame, value: str) -> dict[str, dict[str, Any]]:
    if frame.empty:
        return {}
    # group once: rows of a query are usually contiguous already (a run file is written query by
    # query); otherwise one stable arrow sort by query makes them so. Then cut at the boundaries.
    q = pa.array(frame["query_id"].astype("str").array)
    change = pc.not_equal(q[1:], q[:-1]).to_numpy(zero_copy_only=False)
    order = None
    if int(change.sum()) + 1 != pc.count_distinct(q).as_py():
        order = pc.sort_indices(q)
        q = q.take(order)
        change = pc.not_equal(q[1:], q[:-1]).to_numpy(zero_copy_only=False)
    doc_arr = pa.array(frame["doc_id"].astype("str").array)
    val_arr = frame[value].to_numpy()
    if order is not None:
        doc_arr = doc_arr.take(order)
        val_arr = val_arr[order.to_numpy()]
    docs = doc_arr.to_pylist()
    vals = val_arr.tolist()
    cuts = (np.flatnonzero(change) + 1).tolist()
    starts = [0, *cuts]
    ends = [*cuts, len(docs)]
    qids = q.take(pa.array(starts)).to_pylist()
    return {qid: dict(zip(docs[s:e], vals[s:e])) for qid, s, e in zip(qids, starts, ends)}


def run_to_dict(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """``{query_id: {doc_id: score}}`` (pytrec_eval's input), later duplicates overwrite."""
    return _to_dict(frame, "score")


def qrels_to_dict(frame: pd.DataFrame) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: relevance}}``."""
    return _to_dict(frame, "relevance")
