"""RETECO Track 2 (RECOR) as ir_datasets datasets (``reteco/recor/<split>``,
``reteco/recor/<domain>/<split>``); the readers are `reteco_measures.datasets.reteco_recor`."""

from __future__ import annotations

from collections.abc import Iterator

from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, TrecQrel

from ..base import DataFile
from ..reteco_recor import (
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
from .base import ir_datasets, register

__all__: list[str] = []  # importing this module registers the datasets


class _RecorHandler(BaseDocs, BaseQueries, BaseQrels):
    """Docs, queries and qrels of one split (lazy: nothing is read until asked)."""

    def __init__(self, split: str, domains: tuple[str, ...] | None):
        self.split = split
        self.domains = domains

    def _load(self, doc_text: bool = False) -> RecorData:
        return load_recor(self.split, domains=list(self.domains) if self.domains else None, doc_text=doc_text)

    # docs
    def docs_iter(self) -> Iterator[RecorDoc]:
        doms = list(self.domains) if self.domains else recor_domains(self.split)
        for dom in doms:
            path = DataFile(f"{TRACK_DIR}/{dom}/documents.jsonl", f"RECOR {dom} documents").path()
            for row in read_documents(path, dom).itertuples(index=False):
                yield RecorDoc(row.doc_id, row.text, row.domain)

    def docs_count(self) -> int:
        return sum(1 for _ in self.docs_iter())

    def docs_cls(self):
        return RecorDoc

    def docs_namespace(self) -> str:
        return "reteco/recor"

    def docs_lang(self) -> str:
        return "en"

    # queries
    def queries_iter(self) -> Iterator[RecorQuery]:
        for r in self._load().topics.itertuples(index=False):
            yield RecorQuery(
                r.query_id,
                r.text,
                r.conversation_id,
                int(r.turn),
                r.domain,
                r.history,
                r.answer,
                tuple(r.gold_doc_ids),
            )

    def queries_count(self) -> int:
        return len(self._load().topics)

    def queries_cls(self):
        return RecorQuery

    def queries_namespace(self) -> str:
        return "reteco/recor"

    def queries_lang(self) -> str:
        return "en"

    # qrels
    def qrels_iter(self) -> Iterator[TrecQrel]:
        q = self._load().qrels
        for qid, did, rel in zip(
            q["query_id"].tolist(), q["doc_id"].tolist(), q["relevance"].tolist(), strict=True
        ):
            yield TrecQrel(qid, did, int(rel), "0")

    def qrels_cls(self):
        return TrecQrel

    def qrels_defs(self) -> dict[int, str]:
        return {0: "not relevant", 1: "relevant (gold passage of the turn)"}


def _register_all() -> None:
    """The RECOR datasets (their topics are declared by the readers' module)."""
    for split in RECOR_SPLITS:
        handler = _RecorHandler(split, None)
        register(f"reteco/recor/{split}", ir_datasets.Dataset(handler, handler, handler))
        for dom in RECOR_DOMAINS:
            h = _RecorHandler(split, (dom,))
            register(f"reteco/recor/{dom}/{split}", ir_datasets.Dataset(h, h, h))


_register_all()
