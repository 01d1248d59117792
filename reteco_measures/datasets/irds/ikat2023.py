"""TREC iKAT 2023 as ir_datasets datasets (``ikat/2023/...`` and the upstream ``trec-ikat/2023...``
aliases); the readers are `reteco_measures.datasets.ikat2023`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Literal

import pandas as pd
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, TrecQrel, TrecQrels

from ...errors import DataFormatError, Problem
from ..ikat2023 import (
    PASSAGE_QRELS_DEFS,
    PTKB_QRELS_DEFS,
    PTKB_QRELS_FILES,
    QRELS_FILE,
    UPSTREAM_PTKB_VERSION,
    IkatHistoryTurn,
    IkatPassage,
    IkatPtkbStatement,
    IkatQuery,
    IkatUpstreamQuery,
    PtkbVersion,
    ikat_file,
    ikat_qrels,
    load_ikat_topics,
    open_text,
    passage_files,
    passages_dir,
    ptkb_qrels,
    ptkb_turns,
)
from .base import ir_datasets, register

__all__: list[str] = []  # importing this module registers the datasets


class _IkatPassages(BaseDocs):
    def __init__(self, root: str | os.PathLike | None = None):
        self.root = root

    def docs_iter(self) -> Iterator[IkatPassage]:
        for path in passage_files(passages_dir(self.root)):
            with open_text(path) as f:
                for i, raw in enumerate(f, start=1):
                    if not raw.strip():
                        continue
                    try:
                        rec = json.loads(raw)
                        yield IkatPassage(
                            str(rec["id"]), str(rec.get("contents", "")), str(rec.get("url", ""))
                        )
                    except (json.JSONDecodeError, KeyError, TypeError):
                        raise DataFormatError(
                            [
                                Problem(
                                    'not a passage record {"id", "contents", "url"}', line=i, path=str(path)
                                )
                            ]
                        ) from None

    def docs_count(self) -> int:
        return sum(1 for _ in self.docs_iter())

    def docs_cls(self):
        return IkatPassage

    def docs_namespace(self) -> str:
        return "ikat/2023"

    def docs_lang(self) -> str:
        return "en"


# ------------------------------------------------------------------------------------------------
# ir_datasets handlers


class _IkatQueries(BaseQueries):
    def __init__(self, split: str, judged: bool = False, ptkb: PtkbVersion | None = None):
        self.split = split
        self.judged = judged
        self.ptkb = ptkb

    def frame(self) -> pd.DataFrame:
        if self.ptkb is not None:
            return ptkb_turns(self.ptkb)
        return load_ikat_topics(self.split, judged=self.judged)

    def queries_iter(self) -> Iterator[IkatQuery]:
        for r in self.frame().itertuples(index=False):
            yield IkatQuery(
                r.query_id,
                r.text,
                r.utterance,
                r.resolved_utterance,
                r.response,
                r.conversation_id,
                r.topic_id,
                int(r.turn),
                r.title,
                tuple(IkatPtkbStatement(k, v) for k, v in r.ptkb.items()),
                tuple(r.ptkb_provenance),
                tuple(r.response_provenance),
                tuple(
                    IkatHistoryTurn(h["turn_id"], h["utterance"], h["resolved_utterance"], h["response"])
                    for h in r.history
                ),
            )

    def queries_count(self) -> int:
        return len(self.frame())

    def queries_cls(self):
        return IkatQuery

    def queries_namespace(self) -> str:
        return "ikat/2023"

    def queries_lang(self) -> str:
        return "en"


class _PtkbQrels(BaseQrels):
    def __init__(self, version: PtkbVersion):
        self.version = version

    def qrels_iter(self) -> Iterator[TrecQrel]:
        q = ptkb_qrels(self.version)
        for qid, did, rel in zip(
            q["query_id"].tolist(), q["doc_id"].tolist(), q["relevance"].tolist(), strict=True
        ):
            yield TrecQrel(qid, did, int(rel), "0")

    def qrels_path(self) -> str:
        return ikat_file(PTKB_QRELS_FILES[self.version], f"iKAT 2023 PTKB qrels ({self.version})").path()

    def qrels_cls(self):
        return TrecQrel

    def qrels_defs(self) -> dict[int, str]:
        return PTKB_QRELS_DEFS


def _register_all() -> None:
    """The ``ikat/2023/...`` datasets (their topics are declared by the readers' module)."""
    docs = _IkatPassages()
    passage_qrels = TrecQrels(ikat_file(QRELS_FILE, "iKAT 2023 passage qrels"), PASSAGE_QRELS_DEFS)
    register("ikat/2023/test", ir_datasets.Dataset(docs, _IkatQueries("test"), passage_qrels))
    register("ikat/2023/test/judged", ir_datasets.Dataset(docs, _IkatQueries("test", judged=True), passage_qrels))
    register("ikat/2023/train", ir_datasets.Dataset(docs, _IkatQueries("train")))
    for version in ("org", "nist"):
        register(f"ikat/2023/test/ptkb/{version}",
                 ir_datasets.Dataset(_IkatQueries("test", ptkb=version), _PtkbQrels(version)))


_register_all()


class _UpstreamQueries(BaseQueries):
    """The turns of one or more splits (in the order given) as `IkatUpstreamQuery`.

    ``judged``: only the turns that have qrels — ir_datasets' meaning of a ``/judged`` id —
    ``"passage"`` the turns of the passage qrels, a PTKB version the turns of those PTKB qrels.
    """

    def __init__(self, splits: tuple[str, ...], judged: Literal["passage", "org", "nist"] | None = None):
        self.splits = splits
        self.judged = judged

    def frame(self) -> pd.DataFrame:
        frame = pd.concat([load_ikat_topics(s) for s in self.splits], ignore_index=True)
        if self.judged is None:
            return frame
        qrels = ikat_qrels() if self.judged == "passage" else ptkb_qrels(self.judged)
        return frame[frame["query_id"].isin(set(qrels["query_id"].tolist()))].reset_index(drop=True)

    def queries_iter(self) -> Iterator[IkatUpstreamQuery]:
        for r in self.frame().itertuples(index=False):
            yield IkatUpstreamQuery(r.query_id, r.title, dict(r.ptkb), r.conversation_id, int(r.turn), r.utterance,
                                    r.resolved_utterance, r.response)

    def queries_count(self) -> int:
        return len(self.frame())

    def queries_cls(self):
        return IkatUpstreamQuery

    def queries_namespace(self) -> str:
        return "trec-ikat"

    def queries_lang(self) -> str:
        return "en"


def _register_upstream_aliases() -> list[str]:
    """Register `UPSTREAM_IDS` unless ir_datasets itself already defines them (then its
    definitions win and ours are skipped). Returns the ids we registered."""
    docs = _IkatPassages()
    passage_qrels = TrecQrels(ikat_file(QRELS_FILE, "iKAT 2023 passage qrels"), PASSAGE_QRELS_DEFS)
    all_turns = _UpstreamQueries(("train", "test"))
    judged_turns = _UpstreamQueries(("test",), judged="passage")
    ptkb_turns = _UpstreamQueries(("test",), judged=UPSTREAM_PTKB_VERSION)
    datasets = {
        "trec-ikat/2023": (ir_datasets.Dataset(docs, all_turns, passage_qrels), all_turns.frame),
        "trec-ikat/2023/judged": (ir_datasets.Dataset(docs, judged_turns, passage_qrels), judged_turns.frame),
        "trec-ikat/2023/judged/ptkb": (ir_datasets.Dataset(ptkb_turns, _PtkbQrels(UPSTREAM_PTKB_VERSION)),
                                       ptkb_turns.frame),
    }
    done = []
    for name, (dataset, topics_factory) in datasets.items():
        try:
            register(name, dataset, topics=topics_factory)
        except RuntimeError:  # register's check: the name is taken by another package (ir_datasets)
            continue
        done.append(name)
    return done


_register_upstream_aliases()
