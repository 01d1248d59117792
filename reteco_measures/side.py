"""How side information (topics, temporal labels, corpus order, tie policy) reaches our
provider inside a plain ``ir_measures`` call.

ir_measures' interface is ``calc_aggregate(measures, qrels, run)``: there is no slot for query
metadata. We use two channels, in this order of precedence:

1. **measure parameters holding file paths** — ``TC(labels='judge.jsonl', topics='t.jsonl')@10``.
   They keep measures hashable and parseable, so they also work from the ir_measures command line;
2. **a context** opened with `side_info` (a `contextvars` variable, so it is
   thread- and asyncio-safe) holding DataFrames::

       with rm.side_info(topics=topics_df, labels=labels_df):
           ir_measures.calc_aggregate([nDCG@10, rm.TC@10], qrels, run)

The keyword form ``rm.calc_aggregate(..., topics=..., labels=...)`` simply opens that context.
With neither, measures fall back to what can be derived from ids and qrels (the starter-kit
oracle for temporal labels, ``<query_id>_step<n>`` / ``<conversation_id>_turn_<t>`` id forms).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import DataFormatError, DataFormatWarning, user_stacklevel
from .io.jsonl import iter_jsonl

__all__ = ["SideInfo", "side_info", "current_side_info", "load_topics", "load_labels"]


@dataclass(frozen=True)
class SideInfo:
    """Side information for one evaluation (all optional)."""

    topics: pd.DataFrame | None = None
    labels: pd.DataFrame | None = None
    corpus: Sequence[str] | pd.Series | pd.Index | None = None
    tie_break: str = "trec_eval"
    extra: dict[str, Any] = field(default_factory=dict)


_CURRENT: contextvars.ContextVar[SideInfo | None] = contextvars.ContextVar("reteco_side_info", default=None)


def current_side_info() -> SideInfo:
    """The side information of the innermost active `side_info` context."""
    return _CURRENT.get() or SideInfo()


@contextlib.contextmanager
def side_info(
    *,
    topics: pd.DataFrame | str | os.PathLike | None = None,
    labels: pd.DataFrame | str | os.PathLike | None = None,
    corpus: Sequence[str] | pd.Series | pd.Index | None = None,
    tie_break: str | None = None,
    **extra: Any,
) -> Iterator[SideInfo]:
    """Make topics / labels / corpus order / tie policy visible to our measures in this block.

    Values not given are inherited from an enclosing context. ``topics`` and ``labels`` may be
    DataFrames or file paths (read with `load_topics` / `load_labels`).
    """
    outer = current_side_info()
    info = replace(
        outer,
        topics=load_topics(topics) if topics is not None else outer.topics,
        labels=load_labels(labels) if labels is not None else outer.labels,
        corpus=corpus if corpus is not None else outer.corpus,
        tie_break=tie_break if tie_break is not None else outer.tie_break,
        extra={**outer.extra, **extra},
    )
    token = _CURRENT.set(info)
    try:
        yield info
    finally:
        _CURRENT.reset(token)


def _read_records(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix in (".tsv", ".csv"):
        # every id column is read as text: 001 stays 001, 122291_22 never becomes a number
        ids = ("query_id", "id", "qid", "turn_id", "doc_id", "conversation_id", "parent_id")
        return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", dtype=dict.fromkeys(ids, str))
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        return pd.DataFrame(json.loads(text))
    problems: list = []
    rows = [rec for _, rec in iter_jsonl(path, problems)]
    if problems:
        raise DataFormatError(problems)
    return pd.DataFrame(rows)


@lru_cache(maxsize=32)
def _load_cached(path: str, mtime: float, kind: str) -> pd.DataFrame:
    frame = _read_records(Path(path))
    return _normalise_topics(frame, path) if kind == "topics" else _normalise_labels(frame)


def _is_conversations(frame: pd.DataFrame) -> bool:
    """Records of conversations (``{id, task, turns: [{turn_id, query, ...}]}``, the RECOR benchmark
    files of the organisers' sample and release) rather than one row per query."""
    return ("turns" in frame.columns and "id" in frame.columns and "query_id" not in frame.columns
            and bool(frame["turns"].map(lambda t: isinstance(t, list)).any()))


def _conversation_turns(frame: pd.DataFrame, path: str | None) -> pd.DataFrame:
    """One topics row per turn of RECOR conversation records: ``query_id`` =
    ``<conversation_id>_turn_<turn_id>`` (the release and run form; ``query_ids='normalize'``
    meets the sample qrels' ``#turn<t>``), ``conversation_id``, ``turn``, ``domain`` (the record's
    ``task`` or ``domain``, lower-cased, as the RECOR release names its folders), ``text`` (the
    turn's ``query``). A record or turn that cannot be read is left out with a
    `DataFormatWarning` naming the file and record (line)."""
    where = path or "topics"
    conv = pd.DataFrame({"conversation_id": frame["id"].astype(str).to_numpy(), "turns": frame["turns"].to_numpy(),
                         "line": np.arange(1, len(frame) + 1)})
    dom = frame["task"] if "task" in frame.columns else frame.get("domain")
    conv["domain"] = "" if dom is None else dom.fillna("").astype(str).str.lower().to_numpy()
    problems = [f"{where}:{line}: {cid}: 'turns' is not a list" for cid, line, ok in
                zip(conv["conversation_id"], conv["line"], conv["turns"].map(lambda t: isinstance(t, list)))
                if not ok]
    turns = conv[conv["turns"].map(lambda t: isinstance(t, list) and len(t) > 0)].explode("turns")
    position = turns.groupby("line").cumcount() + 1
    record = turns["turns"]
    is_dict = record.map(lambda t: isinstance(t, dict))
    raw_tid = [t.get("turn_id", pos) if d else None for t, d, pos in zip(record, is_dict, position)]
    tid = pd.to_numeric(pd.Series(raw_tid, index=turns.index, dtype=object).map(
        lambda v: v if isinstance(v, (int, str)) and not isinstance(v, bool) and str(v).isdigit() else None),
        errors="coerce")
    bad = tid.isna() | (tid < 1)
    for cid, line, pos, value in zip(turns["conversation_id"][bad], turns["line"][bad], position[bad],
                                     pd.Series(raw_tid, index=turns.index)[bad]):
        problems.append(f"{where}:{line}: {cid}: turn {pos}: 'turn_id' {value!r} is not a positive integer")
    turns = turns[~bad]
    out = pd.DataFrame({
        "query_id": turns["conversation_id"] + "_turn_" + tid[~bad].astype(int).astype(str),
        "conversation_id": turns["conversation_id"],
        "turn": tid[~bad].astype("Int64"),
        "domain": turns["domain"],
        "text": [t.get("query") for t in turns["turns"]],
    }).reset_index(drop=True)
    if problems:
        warnings.warn(f"{len(problems)} conversation record(s) or turn(s) left out of the topics:\n  "
                      + "\n  ".join(problems[:10]) + ("\n  ..." if len(problems) > 10 else ""),
                      DataFormatWarning, stacklevel=user_stacklevel())
    return out


def _normalise_topics(frame: pd.DataFrame, path: str | None = None) -> pd.DataFrame:
    if _is_conversations(frame):
        return _conversation_turns(frame, path)
    if "query_id" not in frame.columns:
        for alt in ("id", "qid", "turn_id"):
            if alt in frame.columns:
                frame = frame.rename(columns={alt: "query_id"})
                break
    if "query_id" not in frame.columns:
        raise ValueError(f"topics need a 'query_id' column (found {list(frame.columns)})")
    frame = frame.copy()
    # ids are strings everywhere; a JSON number column with gaps is float: 12.0 is the id "12"
    frame["query_id"] = [
        str(int(q)) if isinstance(q, float) and q.is_integer() else str(q) for q in frame["query_id"]
    ]
    if "turn" in frame.columns:
        frame["turn"] = pd.to_numeric(frame["turn"], errors="coerce").astype("Int64")
    return frame


def _normalise_labels(frame: pd.DataFrame) -> pd.DataFrame:
    missing = {"query_id", "doc_id"} - set(frame.columns)
    if missing:
        raise ValueError(f"labels need columns query_id, doc_id (missing {sorted(missing)})")
    frame = frame.copy()
    frame["query_id"] = frame["query_id"].astype(str)
    frame["doc_id"] = frame["doc_id"].astype(str)
    problems: list[str] = []
    if "temporal" not in frame.columns:
        frame["temporal"] = 0
    raw = frame["temporal"]
    verdict = pd.to_numeric(raw.where(~raw.map(lambda v: isinstance(v, str))), errors="coerce")
    # null = a judgment recorded as invalid: verdict 0, as a document missing from the labels
    bad = ~(verdict.isin([0, 1]) | raw.isna())
    for i in np.flatnonzero(bad.to_numpy())[:5]:
        problems.append(f"row {i + 1} ({frame['query_id'].iat[i]}, {frame['doc_id'].iat[i]}): "
                        f"temporal {raw.iat[i]!r} is not 0/1")
    n_bad_verdicts = int(bad.sum())
    frame["temporal"] = verdict.where(~bad, 0).fillna(0).astype(int)
    if "periods" not in frame.columns:
        frame["periods"] = [[] for _ in range(len(frame))]
    periods, n_bad_periods = [], 0
    for i, p in enumerate(frame["periods"]):
        if isinstance(p, (list, tuple, np.ndarray)):
            periods.append([str(x) for x in p])
        else:
            if not (p is None or (isinstance(p, float) and np.isnan(p))):
                n_bad_periods += 1
                if n_bad_periods <= 5:
                    problems.append(f"row {i + 1} ({frame['query_id'].iat[i]}, {frame['doc_id'].iat[i]}): "
                                    f"periods {p!r} is not a list")
            periods.append([])
    frame["periods"] = periods
    if n_bad_verdicts or n_bad_periods:
        warnings.warn(
            f"labels: {n_bad_verdicts} verdict(s) not 0/1 read as 0 and {n_bad_periods} 'periods' value(s) "
            f"that are not lists read as no period:\n  " + "\n  ".join(problems),
            DataFormatWarning,
            stacklevel=user_stacklevel(),
        )
    return frame


def _load(source: pd.DataFrame | str | os.PathLike, kind: str) -> pd.DataFrame:
    if isinstance(source, pd.DataFrame):
        return _normalise_topics(source) if kind == "topics" else _normalise_labels(source)
    path = Path(source).resolve()
    mtime = path.stat().st_mtime if path.exists() else -1.0
    return _load_cached(str(path), mtime, kind)


def load_topics(source: pd.DataFrame | str | os.PathLike) -> pd.DataFrame:
    """Topics (query metadata) from a DataFrame or a JSONL / JSON / TSV / CSV file.

    The key column is ``query_id`` (``id``, ``qid`` or ``turn_id`` are accepted and renamed).
    Known columns: ``domain``, ``parent_id``, ``conversation_id``, ``turn`` (int),
    ``collection``, ``condition``, ``required_periods`` (list of str).

    A RECOR benchmark file (conversation records ``{id, task, turns: [{turn_id, query, ...}]}``,
    as JSONL in the organisers' sample or a JSON array in the release) gives one row per turn:
    ``query_id`` = ``<id>_turn_<turn_id>``, ``conversation_id``, ``turn``, ``domain`` (``task``
    lower-cased) and ``text``, so ``by="domain"`` groups turns as the RECOR tables do.
    """
    return _load(source, "topics")


def load_labels(source: pd.DataFrame | str | os.PathLike) -> pd.DataFrame:
    """Frozen temporal labels: one row per (``query_id``, ``doc_id``) with ``temporal`` (0/1) and
    ``periods`` (list of the query's required periods the document covers)."""
    return _load(source, "labels")
