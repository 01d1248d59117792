"""RETECO Track 2 (RECOR) as ir_datasets datasets (``reteco/recor/<split>``,
``reteco/recor/<domain>/<split>``); the readers are `reteco_measures.benchmarks.recor.data`."""

from __future__ import annotations

from collections.abc import Iterator

from ...datasets.base import DataFile
from ...datasets.irds.base import Docs, Qrels, Queries, ir_datasets, register
from .data import (
    RECOR_DOMAINS,
    RECOR_SPLITS,
    TRACK_DIR,
    RecorData,
    RecorDoc,
    RecorQuery,
    load_recor,
    read_documents,
    recor_domains,
)

__all__: list[str] = []  # importing this module registers the datasets

NAMESPACE = "reteco/recor"
QRELS_DEFS = {0: "not relevant", 1: "relevant (gold passage of the turn)"}


def _load(split: str, domains: tuple[str, ...] | None) -> RecorData:
    return load_recor(split, domains=list(domains) if domains else None)


def _docs(split: str, domains: tuple[str, ...] | None) -> Iterator[RecorDoc]:
    for dom in list(domains) if domains else recor_domains(split):
        path = DataFile(f"{TRACK_DIR}/{dom}/documents.jsonl", f"RECOR {dom} documents").path()
        for row in read_documents(path, dom).itertuples(index=False):
            yield RecorDoc(row.doc_id, row.text, row.domain)


def _queries(split: str, domains: tuple[str, ...] | None) -> Iterator[RecorQuery]:
    for r in _load(split, domains).topics.itertuples(index=False):
        yield RecorQuery(r.query_id, r.text, r.conversation_id, int(r.turn), r.domain, r.history, r.answer,
                         tuple(r.gold_doc_ids))


def _dataset(split: str, domains: tuple[str, ...] | None) -> ir_datasets.Dataset:
    """Docs, queries and qrels of one split (lazy: nothing is read until asked)."""
    return ir_datasets.Dataset(
        Docs(lambda: _docs(split, domains), RecorDoc, NAMESPACE, "en"),
        Queries(lambda: _queries(split, domains), RecorQuery, NAMESPACE, "en",
                count=lambda: len(_load(split, domains).topics)),
        Qrels(lambda: [_load(split, domains).qrels], QRELS_DEFS),
    )


def _register_all() -> None:
    """The RECOR datasets (their topics are declared by the readers' module)."""
    for split in RECOR_SPLITS:
        register(f"reteco/recor/{split}", _dataset(split, None))
        for dom in RECOR_DOMAINS:
            register(f"reteco/recor/{dom}/{split}", _dataset(split, (dom,)))


_register_all()
