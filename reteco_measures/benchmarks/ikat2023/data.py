"""TREC iKAT 2023 (personalised conversational search): readers and ir_datasets registrations.

Files, under ``$RETECO_DATA/ikat2023/`` with the organisers' / NIST names:

* ``2023_test_topics.json``, ``2023_train_topics.json`` — JSON lists of conversations
  ``{"number", "title", "ptkb": {"1": statement, ...}, "turns": [{"turn_id", "utterance",
  "resolved_utterance", "response", "ptkb_provenance", "response_provenance"}]}``;
* ``2023-qrels.all-turns.txt`` — NIST passage qrels, ``turn_id 0 passage_id grade`` (grades 0–4);
* ``2023_ptkb_rel_org.txt`` / ``2023_ptkb_rel_nist.txt`` — PTKB statement qrels
  (``turn_id 0 statement_number 0|1``), the organisers' and NIST's versions;
* ``passages/`` — **your licensed copy** of the iKAT 2023 ClueWeb22-B passage collection in the
  organisers' JSONL form (``{"id", "contents", "url"}`` per line; ``*.jsonl``, ``*.jsonl.gz`` or
  ``*.jsonl.bz2`` files, read in name order). It is not distributed with this package.

Turn (query) ids are ``<conversation number>_<turn_id>``, e.g. ``9-1_3``; passage ids
``<ClueWeb22 doc id>:<passage number>``.

Datasets:

=================================  ======================================================
``ikat/2023/test``                 332 test turns; passage qrels (34,183 judgments)
``ikat/2023/test/judged``          the 176 turns that have passage qrels; same qrels
``ikat/2023/train``                95 train turns (no qrels exist)
``ikat/2023/test/ptkb/org``        the 112 turns of the organisers' PTKB qrels; PTKB qrels
``ikat/2023/test/ptkb/nist``       the 98 turns of NIST's PTKB qrels; PTKB qrels
=================================  ======================================================

The passage datasets' docs are the ClueWeb22-B passages (``passages/``); the PTKB datasets have
no docs component (statement ids ``1``, ``2``, … are local to a conversation: read them from the
queries' ``ptkb`` field).

The ids proposed for iKAT 2023 in ir_datasets' pull request #264 (``trec-ikat/2023``,
``trec-ikat/2023/judged``, ``trec-ikat/2023/judged/ptkb``) are registered as aliases of these
datasets, with the upstream query fields (`IkatUpstreamQuery`), unless ir_datasets already
defines them; see `UPSTREAM_IDS`.
"""


import bz2
import gzip
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, Dict, Literal, NamedTuple, Tuple  # noqa: UP035  (ir_datasets export needs typing.Tuple)

import pandas as pd

from ...datasets.base import DataFile, MissingDataError, add_topics, data_root
from ...errors import DataFormatError, Problem, report_problems
from ...io.readers import read_qrels_with_problems

__all__ = [
    "IKAT_DIR",
    "TOPICS_FILES",
    "QRELS_FILE",
    "PTKB_QRELS_FILES",
    "PASSAGES_DIR",
    "PASSAGE_QRELS_DEFS",
    "IkatQuery",
    "IkatHistoryTurn",
    "IkatPtkbStatement",
    "IkatPassage",
    "load_ikat_topics",
    "ikat_qrels",
    "ptkb_qrels",
    "ikat_ptkb",
    "passages_dir",
    "ptkb_turns",
    "UPSTREAM_IDS",
    "UPSTREAM_PTKB_VERSION",
    "IkatUpstreamQuery",
]

IKAT_DIR = "ikat2023"
TOPICS_FILES = {"test": "2023_test_topics.json", "train": "2023_train_topics.json"}
QRELS_FILE = "2023-qrels.all-turns.txt"
PTKB_QRELS_FILES = {"org": "2023_ptkb_rel_org.txt", "nist": "2023_ptkb_rel_nist.txt"}
PASSAGES_DIR = "passages"

#: passage grades (the TREC CAsT 2022 / iKAT graded scale); binary measures use grade >= 2
PASSAGE_QRELS_DEFS = {
    0: "fails to meet",
    1: "slightly meets",
    2: "moderately meets",
    3: "highly meets",
    4: "fully meets",
}
PTKB_QRELS_DEFS = {0: "statement not relevant to the turn", 1: "statement relevant to the turn"}

PtkbVersion = Literal["org", "nist"]


class IkatHistoryTurn(NamedTuple):
    """A previous turn of the conversation (user utterance and the canonical system response)."""

    turn_id: str
    utterance: str
    resolved_utterance: str
    response: str


class IkatPtkbStatement(NamedTuple):
    """One statement of a conversation's Personal Text Knowledge Base."""

    statement_id: str
    text: str


class IkatQuery(NamedTuple):
    """One iKAT 2023 turn.

    ``text`` is the raw user ``utterance`` (what a system sees); ``resolved_utterance`` the manual
    rewrite; ``response`` the canonical response; ``ptkb`` the conversation's PTKB as
    ``(IkatPtkbStatement(statement_id, text), ...)`` (``dict(q.ptkb)`` gives id → statement); ``ptkb_provenance`` / ``response_provenance`` the
    organisers' provenance ids; ``history`` the previous turns.
    """

    query_id: str
    text: str
    utterance: str
    resolved_utterance: str
    response: str
    conversation_id: str
    topic_id: str
    turn: int
    title: str
    # typing.Tuple[X, ...]: the form ir_datasets' exporters understand
    ptkb: Tuple[IkatPtkbStatement, ...]  # noqa: UP006
    ptkb_provenance: Tuple[str, ...]  # noqa: UP006
    response_provenance: Tuple[str, ...]  # noqa: UP006
    history: Tuple[IkatHistoryTurn, ...]  # noqa: UP006

    def default_text(self) -> str:
        return self.text


class IkatPassage(NamedTuple):
    """A ClueWeb22-B passage of the iKAT collection."""

    doc_id: str
    text: str
    url: str

    def default_text(self) -> str:
        return self.text


def ikat_file(name: str, what: str, root: str | os.PathLike | None = None) -> DataFile:
    """The iKAT 2023 file ``name`` under the data root (``what`` names it in messages)."""
    return DataFile(f"{IKAT_DIR}/{name}", what, root)


# ------------------------------------------------------------------------------------------------
# topics


@lru_cache(maxsize=8)
def _topics_cached(path: str, mtime: float) -> pd.DataFrame:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as exc:
        raise DataFormatError([Problem(f"not valid JSON: {exc.msg}", line=exc.lineno, path=path)]) from None
    if not isinstance(data, list):
        raise DataFormatError([Problem("expected a JSON list of conversations", path=path)])
    rows: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for n, conv in enumerate(data, start=1):
        if not isinstance(conv, dict) or "number" not in conv or not isinstance(conv.get("turns"), list):
            problems.append(
                Problem(f"conversation {n} lacks 'number' or a 'turns' list", path=path, kind="field")
            )
            continue
        number = str(conv["number"])
        ptkb = {str(k): str(v) for k, v in (conv.get("ptkb") or {}).items()}
        history: list[dict[str, str]] = []
        for turn in conv["turns"]:
            qid = f"{number}_{turn.get('turn_id')}"
            rows.append(
                {
                    "query_id": qid,
                    "conversation_id": number,
                    "topic_id": number.split("-")[0],
                    "turn": int(turn["turn_id"]),
                    "title": str(conv.get("title", "")),
                    "text": str(turn.get("utterance", "")),
                    "utterance": str(turn.get("utterance", "")),
                    "resolved_utterance": str(turn.get("resolved_utterance", "")),
                    "response": str(turn.get("response", "")),
                    "ptkb": dict(ptkb),
                    "ptkb_provenance": [str(p) for p in turn.get("ptkb_provenance") or []],
                    "response_provenance": [str(p) for p in turn.get("response_provenance") or []],
                    "history": list(history),
                }
            )
            history.append(
                {
                    "turn_id": qid,
                    "utterance": str(turn.get("utterance", "")),
                    "resolved_utterance": str(turn.get("resolved_utterance", "")),
                    "response": str(turn.get("response", "")),
                }
            )
    if problems:
        raise DataFormatError(problems)
    frame = pd.DataFrame(rows)
    frame["turn"] = frame["turn"].astype("Int64")
    return frame


def load_ikat_topics(
    split: str = "test", *, root: str | os.PathLike | None = None, judged: bool = False
) -> pd.DataFrame:
    """The turns of ``split`` (``'test'`` or ``'train'``) as a DataFrame keyed by ``query_id``.

    Columns: ``query_id`` (``9-1_3``), ``conversation_id`` (``9-1``), ``topic_id`` (``9``),
    ``turn`` (int), ``title``, ``text`` (= ``utterance``), ``utterance``, ``resolved_utterance``,
    ``response`` (canonical), ``ptkb`` (dict statement id → statement), ``ptkb_provenance``,
    ``response_provenance`` (lists of ids) and ``history`` (list of the previous turns as dicts
    ``turn_id, utterance, resolved_utterance, response``). ``judged=True`` keeps the turns that
    have passage qrels (test only).
    """
    if split not in TOPICS_FILES:
        raise ValueError(f"iKAT 2023 split must be one of {sorted(TOPICS_FILES)}, not {split!r}")
    path = ikat_file(TOPICS_FILES[split], f"iKAT 2023 {split} topics", root).path()
    frame = _topics_cached(str(Path(path).resolve()), os.stat(path).st_mtime).copy()
    if judged:
        judged_ids = set(ikat_qrels(root=root)["query_id"].tolist())
        frame = frame[frame["query_id"].isin(judged_ids)].reset_index(drop=True)
    return frame


def ikat_ptkb(split: str = "test", *, root: str | os.PathLike | None = None) -> dict[str, dict[str, str]]:
    """``{conversation_id: {statement_id: statement}}`` of ``split``."""
    topics = load_ikat_topics(split, root=root)
    first = topics.drop_duplicates("conversation_id")
    return dict(zip(first["conversation_id"].tolist(), first["ptkb"].tolist(), strict=True))


# ------------------------------------------------------------------------------------------------
# qrels


def _read_qrels(name: str, what: str, root: str | os.PathLike | None) -> pd.DataFrame:
    path = ikat_file(name, what, root).path()
    frame, problems = read_qrels_with_problems(path, "trec")
    if any(p.severity == "error" for p in problems):
        raise DataFormatError([p for p in problems if p.severity == "error"])
    report_problems(problems, "warn", str(path))  # pairs judged twice with different grades
    return frame[["query_id", "doc_id", "relevance"]].reset_index(drop=True)


def ikat_qrels(*, root: str | os.PathLike | None = None) -> pd.DataFrame:
    """NIST's passage qrels (``query_id, doc_id, relevance``; grades 0–4; 34,183 rows)."""
    return _read_qrels(QRELS_FILE, "iKAT 2023 passage qrels", root)


def ptkb_qrels(version: PtkbVersion = "org", *, root: str | os.PathLike | None = None) -> pd.DataFrame:
    """PTKB statement qrels (``query_id, doc_id`` = statement number, ``relevance`` 0/1).

    ``version``: ``'org'`` (organisers' judgments, 112 turns; equal to the topics'
    ``ptkb_provenance``) or ``'nist'`` (NIST assessors, 98 turns).
    """
    if version not in PTKB_QRELS_FILES:
        raise ValueError(f"PTKB qrels version must be 'org' or 'nist', not {version!r}")
    return _read_qrels(PTKB_QRELS_FILES[version], f"iKAT 2023 PTKB qrels ({version})", root)


# ------------------------------------------------------------------------------------------------
# passages (the user's licensed ClueWeb22-B copy)


def passages_dir(root: str | os.PathLike | None = None) -> Path:
    """The folder of the iKAT passage collection; a clear error says where to put it if absent."""
    folder = data_root(root) / IKAT_DIR / PASSAGES_DIR
    files = passage_files(folder)
    if not files:
        raise MissingDataError(
            "the iKAT 2023 ClueWeb22-B passage collection is licensed (ClueWeb22, CMU) and not shipped: "
            f'put your copy of the organisers\' passage JSONL files ({{"id", "contents", "url"}} per '
            f"line; .jsonl, .jsonl.gz or .jsonl.bz2) in {folder}"
            + (f" (that is $RETECO_DATA/{IKAT_DIR}/{PASSAGES_DIR}/)" if root is None else "")
        )
    return folder


def passage_files(folder: Path) -> list[Path]:
    """The passage collection's JSONL files in ``folder`` (plain, gzip or bzip2), sorted."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz", ".jsonl.bz2")))


def open_text(path: Path) -> IO[str]:
    """``path`` opened as UTF-8 text, decompressed when it ends in ``.gz`` or ``.bz2``."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    if path.name.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def ptkb_turns(version: PtkbVersion = "org", *, root: str | os.PathLike | None = None) -> pd.DataFrame:
    """The test turns (as `load_ikat_topics`) that have PTKB qrels in ``version``: the
    topics of ``ikat/2023/test/ptkb/<version>``."""
    topics = load_ikat_topics("test", root=root)
    turns = set(ptkb_qrels(version, root=root)["query_id"].tolist())
    return topics[topics["query_id"].isin(turns)].reset_index(drop=True)


def _declare_topics() -> None:
    add_topics("ikat/2023/test", lambda: load_ikat_topics("test"))
    add_topics("ikat/2023/test/judged", lambda: load_ikat_topics("test", judged=True))
    add_topics("ikat/2023/train", lambda: load_ikat_topics("train"))
    for version in ("org", "nist"):
        add_topics(f"ikat/2023/test/ptkb/{version}", lambda v=version: ptkb_turns(v))


_declare_topics()


# ------------------------------------------------------------------------------------------------
# the ids proposed upstream (ir_datasets pull request #264), as aliases of ours

#: iKAT 2023 ids proposed by ir_datasets' open pull request #264 ("add trec ikat 2023"), mapped to
#: what they hold there: ``trec-ikat/2023`` — train and test turns, passage qrels;
#: ``trec-ikat/2023/judged`` — the 176 test turns that have passage qrels (ir_datasets' ``/judged``
#: suffix: the queries that have qrels), passage qrels; ``trec-ikat/2023/judged/ptkb`` — the turns
#: that have PTKB statement qrels (98 in NIST's version), those qrels, no docs. The proposal's download list (which PTKB
#: file it fetches) was not visible to us: we use NIST's judgments, the version NIST publishes.
UPSTREAM_IDS = ("trec-ikat/2023", "trec-ikat/2023/judged", "trec-ikat/2023/judged/ptkb")
#: the PTKB qrels version behind ``trec-ikat/2023/judged/ptkb``
UPSTREAM_PTKB_VERSION: PtkbVersion = "nist"


class IkatUpstreamQuery(NamedTuple):
    """A turn in the field layout the upstream proposal uses (``trec-ikat/...`` ids), so code
    written against it reads the same attributes: ``topic_number`` is the conversation id
    (``9-1``), ``turn_id`` the turn number, ``topic_ptkb`` the conversation's statements."""

    query_id: str
    topic_title: str
    topic_ptkb: Dict[str, str]  # noqa: UP006  (the upstream annotation)
    topic_number: str
    turn_id: int
    utterance: str
    resolved_utterance: str
    response: str

    def default_text(self) -> str:
        return self.utterance
