"""ChunQiu Temporal Retrieval: loader for the user's local copy under ``$RETECO_DATA/chunqiu/``.

Files (as named in the ChunQiu task description)::

    chunqiu/corpus.jsonl           {"doc_id", "text"}                         18,662 records
    chunqiu/examples.jsonl         {"query_id", "text", "relevant_doc_ids"}   6,617 labelled examples
    chunqiu/dated_examples.jsonl   {"doc_id", "time_text", "reign", "year", "month"}   19,452 rows

Registered with ir_datasets as ``chunqiu``: ``docs`` (corpus order kept: it is the tie order of
the contract), ``queries`` (the labelled examples), ``qrels`` (``relevant_doc_ids`` → relevance
1) and the dated associations as document metadata (``dates_iter()`` / ``dates_frame()`` on the
dataset). The same data as DataFrames: `load_corpus`, `load_examples`,
`load_qrels`, `load_dates`, and `join_dates` to attach the dates to any frame
with a ``doc_id`` column (a run, a qrels table)::

    import ir_datasets, reteco_measures as rm
    ds = ir_datasets.load("chunqiu")
    dates = ds.dates_frame()                      # doc_id, time_text, reign, year, month
    run_with_dates = rm.benchmarks.chunqiu.data.join_dates(run)

Malformed lines are skipped with a `DataFormatWarning` naming
``path:line`` (``on_bad_lines='error'`` raises instead); good lines are never lost.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ...datasets.base import DataFile, add_topics
from ...errors import Problem, report_problems
from ...io.jsonl import iter_jsonl

__all__ = [
    "NAME",
    "ChunQiuDoc",
    "ChunQiuQuery",
    "ChunQiuDate",
    "files",
    "load_corpus",
    "corpus_order",
    "load_examples",
    "load_qrels",
    "load_dates",
    "join_dates",
    "iter_jsonl",
]

#: the ir_datasets name
NAME = "chunqiu"
FOLDER = "chunqiu"


class ChunQiuDoc(NamedTuple):
    doc_id: str
    text: str

    def default_text(self) -> str:
        return self.text


class ChunQiuQuery(NamedTuple):
    query_id: str
    text: str

    def default_text(self) -> str:
        return self.text


class ChunQiuDate(NamedTuple):
    """One dated association of a record: the date expression and its reading."""

    doc_id: str
    time_text: str | None
    reign: str | None
    year: int | None
    month: int | None


def files(root: str | os.PathLike | None = None) -> dict[str, DataFile]:
    """The benchmark files (resolved lazily under ``root`` or ``$RETECO_DATA``)."""
    return {
        "corpus": DataFile(f"{FOLDER}/corpus.jsonl", "the ChunQiu corpus (corpus.jsonl: doc_id, text)", root),
        "examples": DataFile(f"{FOLDER}/examples.jsonl",
                             "the ChunQiu labelled examples (examples.jsonl: query_id, text, relevant_doc_ids)", root),
        "dates": DataFile(f"{FOLDER}/dated_examples.jsonl",
                          "the ChunQiu dated associations (dated_examples.jsonl: doc_id, time_text, reign, year, "
                          "month)", root),
    }


# ------------------------------------------------------------------------------------------------
# reading


def _require(rec: dict, fields: tuple[str, ...], line: int, path: str, problems: list[Problem],
             key: str | None = None) -> bool:
    missing = [f for f in fields if f not in rec or rec[f] is None]
    if missing:
        qid = str(rec.get(key)) if key and rec.get(key) is not None else None
        problems.append(Problem(f"missing field(s) {missing}", line=line, path=path, query_id=qid, kind="field"))
        return False
    return True


def _int_or_none(value: Any, name: str, line: int, path: str, problems: list[Problem], doc: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        ok = False
    elif isinstance(value, int):
        return value
    elif isinstance(value, float) and value.is_integer():
        return int(value)
    else:
        try:
            return int(str(value).strip())
        except ValueError:
            ok = False
    if not ok:
        problems.append(Problem(f"{name} {value!r} is not an integer; kept as missing (time_text keeps the "
                                "original)", line=line, path=path, kind="field", doc_id=doc))
    return None


def load_corpus(root: str | os.PathLike | None = None, *, on_bad_lines: str = "warn") -> pd.DataFrame:
    """The corpus as a DataFrame ``doc_id, text`` in corpus (file) order."""
    path = files(root)["corpus"].path()
    problems: list[Problem] = []
    ids, texts = [], []
    for line, rec in iter_jsonl(path, problems):
        if _require(rec, ("doc_id", "text"), line, path, problems):
            ids.append(str(rec["doc_id"]))
            texts.append(str(rec["text"]))
    report_problems(problems, on_bad_lines, path)
    frame = pd.DataFrame({"doc_id": pd.array(ids, dtype="str"), "text": pd.array(texts, dtype="str")})
    dup = frame["doc_id"].duplicated()
    if dup.any():
        report_problems([Problem(f"document {d} appears more than once in the corpus (first kept)", path=path,
                                 kind="duplicate", doc_id=d) for d in frame.loc[dup, "doc_id"]], on_bad_lines, path)
        frame = frame[~dup].reset_index(drop=True)
    return frame


def corpus_order(root: str | os.PathLike | None = None) -> list[str]:
    """Doc ids in corpus order (the ``corpus=`` argument of the contract and of
    ``tie_break='corpus_order'``)."""
    return load_corpus(root)["doc_id"].tolist()


def load_examples(root: str | os.PathLike | None = None, *, path: str | os.PathLike | None = None,
                  on_bad_lines: str = "warn") -> pd.DataFrame:
    """Labelled examples ``query_id, text, relevant_doc_ids`` (list of str).

    ``path``: read another file in the same format instead (e.g. a held-out queries file; a
    file without ``relevant_doc_ids`` gives empty lists).
    """
    path = os.fspath(path) if path is not None else files(root)["examples"].path()
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such queries file")
    problems: list[Problem] = []
    rows = []
    for line, rec in iter_jsonl(path, problems):
        if not _require(rec, ("query_id", "text"), line, path, problems, key="query_id"):
            continue
        rel = rec.get("relevant_doc_ids", [])
        if not isinstance(rel, list):
            problems.append(Problem("'relevant_doc_ids' must be a list", line=line, path=path,
                                    query_id=str(rec["query_id"]), kind="field"))
            continue
        rows.append({"query_id": str(rec["query_id"]), "text": str(rec["text"]),
                     "relevant_doc_ids": [str(d) for d in rel]})
    report_problems(problems, on_bad_lines, path)
    frame = pd.DataFrame(rows, columns=["query_id", "text", "relevant_doc_ids"])
    return frame.astype({"query_id": "str", "text": "str"})


def load_qrels(root: str | os.PathLike | None = None, *, path: str | os.PathLike | None = None,
               on_bad_lines: str = "warn") -> pd.DataFrame:
    """Binary qrels ``query_id, doc_id, relevance (=1)`` from the examples' ``relevant_doc_ids``
    (a doc listed twice for a query counts once)."""
    ex = load_examples(root, path=path, on_bad_lines=on_bad_lines)
    lengths = ex["relevant_doc_ids"].map(len).to_numpy(dtype=np.int64)
    qids = np.repeat(ex["query_id"].to_numpy(dtype=object), lengths)
    docs = [d for lst in ex["relevant_doc_ids"] for d in lst]
    frame = pd.DataFrame({"query_id": pd.array(qids, dtype="str"), "doc_id": pd.array(docs, dtype="str"),
                          "relevance": np.ones(len(docs), dtype=np.int64)})
    return frame.drop_duplicates(["query_id", "doc_id"]).reset_index(drop=True)


def load_dates(root: str | os.PathLike | None = None, *, on_bad_lines: str = "warn") -> pd.DataFrame:
    """Dated associations ``doc_id, time_text, reign, year, month`` (year/month nullable Int64).

    A record can have several associations (19,452 rows for 18,662 records) and some have
    none, so joining is one-to-many: see `join_dates`. A ``year``/``month`` that is not an
    integer is reported and kept as missing (``time_text`` still holds the original).
    """
    path = files(root)["dates"].path()
    problems: list[Problem] = []
    cols: dict[str, list] = {k: [] for k in ChunQiuDate._fields}
    for line, rec in iter_jsonl(path, problems):
        if not _require(rec, ("doc_id",), line, path, problems):
            continue
        doc = str(rec["doc_id"])
        cols["doc_id"].append(doc)
        cols["time_text"].append(None if rec.get("time_text") is None else str(rec["time_text"]))
        cols["reign"].append(None if rec.get("reign") is None else str(rec["reign"]))
        cols["year"].append(_int_or_none(rec.get("year"), "year", line, path, problems, doc))
        cols["month"].append(_int_or_none(rec.get("month"), "month", line, path, problems, doc))
    report_problems(problems, on_bad_lines, path)
    return pd.DataFrame(
        {
            "doc_id": pd.array(cols["doc_id"], dtype="str"),
            "time_text": pd.array(cols["time_text"], dtype="str"),
            "reign": pd.array(cols["reign"], dtype="str"),
            "year": pd.array(cols["year"], dtype="Int64"),
            "month": pd.array(cols["month"], dtype="Int64"),
        }
    )


def join_dates(
    frame: pd.DataFrame,
    dates: pd.DataFrame | None = None,
    *,
    root: str | os.PathLike | None = None,
    how: str = "left",
) -> pd.DataFrame:
    """Attach the dated associations to any DataFrame with a ``doc_id`` column (a run, qrels,
    the corpus). One row per (input row, association): a document with several dates repeats,
    one without dates gets missing values (``how='left'``) or is dropped (``how='inner'``)."""
    if "doc_id" not in frame.columns:
        raise ValueError(f"join_dates needs a 'doc_id' column (found {list(frame.columns)})")
    dates = load_dates(root) if dates is None else dates
    left = frame.assign(doc_id=frame["doc_id"].astype(str))
    return left.merge(dates, on="doc_id", how=how, sort=False)


def _topics() -> pd.DataFrame:
    return load_examples()[["query_id", "text"]]


add_topics(NAME, _topics)
