"""TREC iKAT 2023 as ir_datasets datasets (``ikat/2023/...`` and the upstream ``trec-ikat/2023...``
aliases); the readers are `reteco_measures.benchmarks.ikat2023.data`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Literal

import pandas as pd
from ir_datasets.formats import TrecQrels

from ...datasets.irds.base import Docs, Qrels, Queries, ir_datasets, register
from ...errors import DataFormatError, Problem
from .data import (
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

__all__: list[str] = []  # importing this module registers the datasets


NAMESPACE = "ikat/2023"


def _passages(root: str | os.PathLike | None = None) -> Iterator[IkatPassage]:
    for path in passage_files(passages_dir(root)):
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


def _passage_docs() -> Docs:
    return Docs(_passages, IkatPassage, NAMESPACE, "en")


# ------------------------------------------------------------------------------------------------
# ir_datasets handlers


def _turns(split: str, judged: bool = False, ptkb: PtkbVersion | None = None) -> pd.DataFrame:
    if ptkb is not None:
        return ptkb_turns(ptkb)
    return load_ikat_topics(split, judged=judged)


def _query_records(frame: pd.DataFrame) -> Iterator[IkatQuery]:
    for r in frame.itertuples(index=False):
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


def _ikat_queries(split: str, judged: bool = False, ptkb: PtkbVersion | None = None) -> Queries:
    return Queries(lambda: _query_records(_turns(split, judged, ptkb)), IkatQuery, NAMESPACE, "en",
                   count=lambda: len(_turns(split, judged, ptkb)))


def _ptkb_qrels(version: PtkbVersion) -> Qrels:
    return Qrels(lambda: [ptkb_qrels(version)], PTKB_QRELS_DEFS,
                 path=lambda: ikat_file(PTKB_QRELS_FILES[version], f"iKAT 2023 PTKB qrels ({version})").path())


def _register_all() -> None:
    """The ``ikat/2023/...`` datasets (their topics are declared by the readers' module)."""
    docs = _passage_docs()
    passage_qrels = TrecQrels(ikat_file(QRELS_FILE, "iKAT 2023 passage qrels"), PASSAGE_QRELS_DEFS)
    register("ikat/2023/test", ir_datasets.Dataset(docs, _ikat_queries("test"), passage_qrels))
    register("ikat/2023/test/judged", ir_datasets.Dataset(docs, _ikat_queries("test", judged=True), passage_qrels))
    register("ikat/2023/train", ir_datasets.Dataset(docs, _ikat_queries("train")))
    for version in ("org", "nist"):
        register(f"ikat/2023/test/ptkb/{version}",
                 ir_datasets.Dataset(_ikat_queries("test", ptkb=version), _ptkb_qrels(version)))


_register_all()


def _upstream_turns(splits: tuple[str, ...], judged: Literal["passage", "org", "nist"] | None = None
                    ) -> pd.DataFrame:
    """The turns of one or more splits (in the order given).

    ``judged``: only the turns that have qrels — ir_datasets' meaning of a ``/judged`` id —
    ``"passage"`` the turns of the passage qrels, a PTKB version the turns of those PTKB qrels.
    """
    frame = pd.concat([load_ikat_topics(s) for s in splits], ignore_index=True)
    if judged is None:
        return frame
    qrels = ikat_qrels() if judged == "passage" else ptkb_qrels(judged)
    return frame[frame["query_id"].isin(set(qrels["query_id"].tolist()))].reset_index(drop=True)


def _upstream_records(frame: pd.DataFrame) -> Iterator[IkatUpstreamQuery]:
    for r in frame.itertuples(index=False):
        yield IkatUpstreamQuery(r.query_id, r.title, dict(r.ptkb), r.conversation_id, int(r.turn), r.utterance,
                                r.resolved_utterance, r.response)


def _upstream_queries(frame: Callable[[], pd.DataFrame]) -> Queries:
    """The turns ``frame()`` as `IkatUpstreamQuery` records (namespace ``trec-ikat``)."""
    return Queries(lambda: _upstream_records(frame()), IkatUpstreamQuery, "trec-ikat", "en",
                   count=lambda: len(frame()))


def _register_upstream_aliases() -> list[str]:
    """Register `UPSTREAM_IDS` unless ir_datasets itself already defines them (then its
    definitions win and ours are skipped). Returns the ids we registered."""
    docs = _passage_docs()
    passage_qrels = TrecQrels(ikat_file(QRELS_FILE, "iKAT 2023 passage qrels"), PASSAGE_QRELS_DEFS)

    def all_turns() -> pd.DataFrame:
        return _upstream_turns(("train", "test"))

    def judged_turns() -> pd.DataFrame:
        return _upstream_turns(("test",), judged="passage")

    def ptkb_judged_turns() -> pd.DataFrame:
        return _upstream_turns(("test",), judged=UPSTREAM_PTKB_VERSION)

    datasets = {
        "trec-ikat/2023": (ir_datasets.Dataset(docs, _upstream_queries(all_turns), passage_qrels), all_turns),
        "trec-ikat/2023/judged": (ir_datasets.Dataset(docs, _upstream_queries(judged_turns), passage_qrels),
                                  judged_turns),
        "trec-ikat/2023/judged/ptkb": (ir_datasets.Dataset(_upstream_queries(ptkb_judged_turns),
                                                           _ptkb_qrels(UPSTREAM_PTKB_VERSION)), ptkb_judged_turns),
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
