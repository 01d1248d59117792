"""Normalise whatever ir_measures accepts (plus file paths) into DataFrames, and back."""

from __future__ import annotations

import itertools
import os
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._lines import is_inline_text
from .readers import read_qrels, read_run

__all__ = ["as_run_frame", "as_qrels_frame", "run_to_dict", "qrels_to_dict", "is_source"]


def is_source(value: Any) -> bool:
    """A file path (str / PathLike) or inline file text, as opposed to in-memory data."""
    return isinstance(value, (str, os.PathLike, bytes))


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


def _from_dict_of_dict(data: dict, value_name: str) -> pd.DataFrame:
    outer = list(data.items())
    lengths = np.fromiter((len(v) for _, v in outer), dtype=np.int64, count=len(outer))
    qids = np.repeat(np.array([str(q) for q, _ in outer], dtype=object), lengths)
    docs = list(itertools.chain.from_iterable(v.keys() for _, v in outer))
    vals = list(itertools.chain.from_iterable(v.values() for _, v in outer))
    return pd.DataFrame({"query_id": _str_col(qids), "doc_id": _str_col([str(d) for d in docs]), value_name: vals})


def as_run_frame(run: Any) -> pd.DataFrame:
    """A run as a DataFrame with ``query_id, doc_id, score`` (str, str, float64), order kept."""
    if is_source(run):
        if isinstance(run, str) and not is_inline_text(run) and not os.path.exists(run):
            raise FileNotFoundError(f"{run}: no such run file")
        return read_run(run)
    if isinstance(run, pd.DataFrame):
        missing = {"query_id", "doc_id", "score"} - set(run.columns)
        if missing:
            raise ValueError(f"run DataFrame lacks column(s) {sorted(missing)} (found {list(run.columns)})")
        out = pd.DataFrame(
            {
                "query_id": _str_col(run["query_id"]),
                "doc_id": _str_col(run["doc_id"]),
                "score": pd.to_numeric(run["score"]).to_numpy(dtype=np.float64),
            }
        )
        for extra in ("rank", "line"):
            if extra in run.columns:
                out[extra] = run[extra].to_numpy()
        return out
    if isinstance(run, dict):
        frame = _from_dict_of_dict(run, "score")
        frame["score"] = frame["score"].astype(np.float64)
        return frame
    rows = [(str(r.query_id), str(r.doc_id), float(r.score)) for r in run]  # namedtuple iterable
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]).astype(
        {"query_id": "str", "doc_id": "str"}
    )


def as_qrels_frame(qrels: Any) -> pd.DataFrame:
    """Qrels as a DataFrame with ``query_id, doc_id, relevance`` (str, str, int64)."""
    if is_source(qrels):
        if isinstance(qrels, str) and not is_inline_text(qrels) and not os.path.exists(qrels):
            raise FileNotFoundError(f"{qrels}: no such qrels file")
        return read_qrels(qrels)
    if isinstance(qrels, pd.DataFrame):
        missing = {"query_id", "doc_id", "relevance"} - set(qrels.columns)
        if missing:
            raise ValueError(f"qrels DataFrame lacks column(s) {sorted(missing)} (found {list(qrels.columns)})")
        return pd.DataFrame(
            {
                "query_id": _str_col(qrels["query_id"]),
                "doc_id": _str_col(qrels["doc_id"]),
                "relevance": qrels["relevance"].to_numpy(dtype=np.int64),
            }
        )
    if isinstance(qrels, dict):
        frame = _from_dict_of_dict(qrels, "relevance")
        frame["relevance"] = frame["relevance"].astype(np.int64)
        return frame
    rows = [(str(r.query_id), str(r.doc_id), int(r.relevance)) for r in qrels]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]).astype(
        {"query_id": "str", "doc_id": "str"}
    )


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
