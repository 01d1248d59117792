"""Spoken-Query Document Search: loader for the user's local copy under ``$RETECO_DATA/spoken/``.

No public sample of the request/label files exists, so this module *defines* the layout
(documented in ``docs/benchmarks/spoken-query.md``; the bundled synthetic sample follows it)::

    spoken/corpus/<collection>.jsonl   {"id", "domain", "language", "title", "text"}  one file per collection
    spoken/<split>/requests.jsonl      {"query_id", "domain", "language", "one_best",
                                        "hypotheses": [{"text", "score",
                                                        "words": [{"word", "confidence", "start", "end"}]}],
                                        "condition", ["collection"]}
    spoken/<split>/qrels.jsonl         {"query_id", "doc_id", "relevance"}   graded labels (0-3)

``<split>`` is ``validation`` for the public requests and labels (the task
description's ``/task/data/validation/``). A request's ``collection`` is its ``collection`` field, or its
``domain`` when the field is absent (in this layout a collection file holds one domain, named
like the file). ``condition`` is the request's acoustic condition.

Registered with ir_datasets: ``spoken-query`` (the documents of every collection) and
``spoken-query/validation`` (documents, requests as queries with every field — one-best text,
scored hypotheses with word confidences and time spans, domain, language, condition,
collection — and the graded qrels). DataFrame functions: `load_corpus`,
`load_requests`, `load_qrels`, `topics` (``query_id, collection, condition,
domain, language, one_best``: pass it as ``topics=`` to ``SpokenMacroNDCG``).

Malformed lines are skipped with a `DataFormatWarning` naming
``path:line`` (``on_bad_lines='error'`` raises); good lines are never lost.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ...datasets.base import ENV_VAR, DataFile, MissingDataError, add_topics, data_root
from ...errors import Problem, report_problems
from ...io.jsonl import iter_jsonl
from ...io.readers import read_qrels

__all__ = [
    "NAME",
    "SPLITS",
    "GRADES",
    "SpokenDoc",
    "SpokenWord",
    "SpokenHypothesis",
    "SpokenQuery",
    "corpus_files",
    "load_corpus",
    "load_requests",
    "load_qrels",
    "topics",
]

NAME = "spoken-query"
FOLDER = "spoken"
#: registered splits (each ``spoken-query/<split>``)
SPLITS = ("validation",)
#: label grades of the layout
GRADES = {0: "not relevant", 1: "partially relevant", 2: "relevant", 3: "highly relevant"}


class SpokenDoc(NamedTuple):
    doc_id: str
    collection: str
    domain: str
    language: str
    title: str
    text: str

    def default_text(self) -> str:
        return f"{self.title}\n{self.text}" if self.title else self.text


class SpokenWord(NamedTuple):
    word: str
    confidence: float
    start: float
    end: float


class SpokenHypothesis(NamedTuple):
    text: str
    score: float
    words: tuple[SpokenWord, ...]


class SpokenQuery(NamedTuple):
    query_id: str
    text: str
    domain: str
    language: str
    one_best: str
    hypotheses: tuple[SpokenHypothesis, ...]
    condition: str | None
    collection: str

    def default_text(self) -> str:
        return self.one_best


# ------------------------------------------------------------------------------------------------
# files


def corpus_files(root: str | os.PathLike | None = None) -> list[Path]:
    """The collection files ``spoken/corpus/*.jsonl`` (sorted by name)."""
    folder = data_root(root) / FOLDER / "corpus"
    found = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not found:
        source = f"${ENV_VAR}" if root is None else str(root)
        raise MissingDataError(
            f"missing the Spoken-Query corpus: put one JSONL file per collection ({{id, domain, language, title, "
            f"text}} per line) in {folder} (that is {source}/{FOLDER}/corpus/<collection>.jsonl)"
        )
    return found


def split_file(split: str, name: str, what: str, root: str | os.PathLike | None) -> DataFile:
    """The Spoken-Query file ``name`` of ``split`` under the data root (``what`` names it in messages)."""
    return DataFile(f"{FOLDER}/{split}/{name}", what, root)


def _str(rec: dict, key: str) -> str | None:
    value = rec.get(key)
    return None if value is None else str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# ------------------------------------------------------------------------------------------------
# DataFrames


def load_corpus(root: str | os.PathLike | None = None, *, on_bad_lines: str = "warn") -> pd.DataFrame:
    """Every collection's documents: ``doc_id, collection, domain, language, title, text``.

    ``collection`` is the file name without ``.jsonl``. Files are read in name order, lines in
    file order. A doc id seen twice is reported; the first is kept.
    """
    problems: list[Problem] = []
    cols: dict[str, list] = {k: [] for k in SpokenDoc._fields}
    for path in corpus_files(root):
        for line, rec in iter_jsonl(str(path), problems):
            missing = [f for f in ("id", "domain", "text") if rec.get(f) is None]
            if missing:
                problems.append(Problem(f"missing field(s) {missing}", line=line, path=str(path), kind="field"))
                continue
            cols["doc_id"].append(str(rec["id"]))
            cols["collection"].append(path.stem)
            cols["domain"].append(str(rec["domain"]))
            cols["language"].append(_str(rec, "language") or "")
            cols["title"].append(_str(rec, "title") or "")
            cols["text"].append(str(rec["text"]))
    frame = pd.DataFrame({k: pd.array(v, dtype="str") for k, v in cols.items()})
    dup = frame["doc_id"].duplicated()
    if dup.any():
        problems += [Problem(f"document {d} appears more than once in the corpus (first kept)", kind="duplicate",
                             doc_id=d) for d in frame.loc[dup, "doc_id"]]
        frame = frame[~dup].reset_index(drop=True)
    report_problems(problems, on_bad_lines, "the Spoken-Query corpus")
    return frame


def _hypotheses(raw: Any, line: int, path: str, qid: str, problems: list[Problem]) -> tuple[SpokenHypothesis, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append(Problem("'hypotheses' must be a list; ignored", line=line, path=path, query_id=qid,
                                kind="field"))
        return ()
    out = []
    for h_pos, hyp in enumerate(raw, start=1):
        if not isinstance(hyp, dict) or not isinstance(hyp.get("text"), str) or _number(hyp.get("score")) is None:
            problems.append(Problem(f"hypothesis {h_pos} needs a string 'text' and a numeric 'score'; ignored",
                                    line=line, path=path, query_id=qid, kind="field"))
            continue
        words = []
        for w_pos, w in enumerate(hyp.get("words") or [], start=1):
            nums = [_number(w.get(k)) if isinstance(w, dict) else None for k in ("confidence", "start", "end")]
            if not isinstance(w, dict) or not isinstance(w.get("word"), str) or any(v is None for v in nums):
                problems.append(Problem(f"hypothesis {h_pos}, word {w_pos} needs 'word', numeric 'confidence', "
                                        "'start', 'end'; ignored", line=line, path=path, query_id=qid,
                                        kind="field"))
                continue
            words.append(SpokenWord(w["word"], *nums))  # type: ignore[arg-type]
        out.append(SpokenHypothesis(hyp["text"], float(hyp["score"]), tuple(words)))
    return tuple(out)


def load_requests(split: str = "validation", root: str | os.PathLike | None = None, *,
                  path: str | os.PathLike | None = None, on_bad_lines: str = "warn") -> list[SpokenQuery]:
    """The requests of ``split`` (or of the file ``path``) as `SpokenQuery` records."""
    path = os.fspath(path) if path is not None else split_file(
        split, "requests.jsonl", f"the Spoken-Query {split} requests (requests.jsonl: query_id, domain, language, "
        "one_best, hypotheses, condition)", root).path()
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such requests file")
    problems: list[Problem] = []
    out: list[SpokenQuery] = []
    for line, rec in iter_jsonl(path, problems):
        missing = [f for f in ("query_id", "domain", "one_best") if rec.get(f) is None]
        if missing:
            problems.append(Problem(f"missing field(s) {missing}", line=line, path=path,
                                    query_id=_str(rec, "query_id"), kind="field"))
            continue
        qid = str(rec["query_id"])
        hyps = _hypotheses(rec.get("hypotheses"), line, path, qid, problems)
        domain = str(rec["domain"])
        out.append(SpokenQuery(qid, str(rec["one_best"]), domain, _str(rec, "language") or "", str(rec["one_best"]),
                               hyps, _str(rec, "condition"), _str(rec, "collection") or domain))
    report_problems(problems, on_bad_lines, path)
    return out


def load_qrels(split: str = "validation", root: str | os.PathLike | None = None, *,
               path: str | os.PathLike | None = None, on_bad_lines: str = "warn") -> pd.DataFrame:
    """Graded labels ``query_id, doc_id, relevance`` of ``split`` (JSONL, or TREC qrels via
    ``path``)."""

    path = os.fspath(path) if path is not None else split_file(
        split, "qrels.jsonl", f"the Spoken-Query {split} labels (qrels.jsonl: query_id, doc_id, relevance)",
        root).path()
    frame = read_qrels(path, on_bad_lines=on_bad_lines)  # type: ignore[arg-type]
    return frame[["query_id", "doc_id", "relevance"]]


def topics(split: str = "validation", root: str | os.PathLike | None = None, *,
           path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Request metadata keyed by ``query_id``: ``collection, condition, domain, language,
    one_best, n_hypotheses`` — the ``topics=`` of ``SpokenMacroNDCG`` and of
    ``rm.evaluate(..., by=["collection", "condition"])``."""
    reqs = load_requests(split, root, path=path)
    return pd.DataFrame(
        {
            "query_id": pd.array([r.query_id for r in reqs], dtype="str"),
            "collection": pd.array([r.collection for r in reqs], dtype="str"),
            "condition": pd.array([r.condition for r in reqs], dtype="str"),
            "domain": pd.array([r.domain for r in reqs], dtype="str"),
            "language": pd.array([r.language for r in reqs], dtype="str"),
            "one_best": pd.array([r.one_best for r in reqs], dtype="str"),
            "n_hypotheses": np.asarray([len(r.hypotheses) for r in reqs], dtype=np.int64),
        }
    )


for _split in SPLITS:
    add_topics(f"{NAME}/{_split}", lambda s=_split: topics(s))
