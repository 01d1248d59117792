"""Spoken-Query as ir_datasets datasets (``spoken-query``, ``spoken-query/<split>``); the
readers are `reteco_measures.datasets.spoken`."""

from __future__ import annotations

import os

from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, TrecQrel

from ..spoken import (
    GRADES,
    NAME,
    SPLITS,
    SpokenDoc,
    SpokenQuery,
    load_corpus,
    load_qrels,
    load_requests,
    split_file,
)
from .base import ir_datasets, register
from .chunqiu import MemoryDocstore

__all__ = ["dataset"]


class _Docs(BaseDocs):
    def __init__(self, root=None):
        self._root = root

    def docs_iter(self):
        frame = load_corpus(self._root)
        for row in zip(*(frame[c].tolist() for c in SpokenDoc._fields), strict=True):
            yield SpokenDoc(*row)

    def docs_count(self) -> int:
        return len(load_corpus(self._root))

    def docs_cls(self):
        return SpokenDoc

    def docs_store(self, field: str = "doc_id") -> MemoryDocstore:
        return MemoryDocstore(self, field)

    def docs_namespace(self) -> str:
        return NAME

    def docs_lang(self) -> None:
        return None  # several languages


class _Queries(BaseQueries):
    def __init__(self, split: str, root=None):
        self._split = split
        self._root = root

    def queries_iter(self):
        yield from load_requests(self._split, self._root)

    def queries_cls(self):
        return SpokenQuery

    def queries_namespace(self) -> str:
        return NAME

    def queries_lang(self) -> None:
        return None


class _Qrels(BaseQrels):
    def __init__(self, split: str, root=None):
        self._split = split
        self._root = root

    def qrels_iter(self):
        q = load_qrels(self._split, self._root)
        for qid, did, rel in zip(q["query_id"].tolist(), q["doc_id"].tolist(), q["relevance"].tolist(), strict=True):
            yield TrecQrel(qid, did, int(rel), "0")

    def qrels_defs(self) -> dict[int, str]:
        return dict(GRADES)

    def qrels_path(self) -> str:
        return split_file(self._split, "qrels.jsonl", "the Spoken-Query labels", self._root).path()

    def qrels_cls(self):
        return TrecQrel


def dataset(split: str | None = None, root: str | os.PathLike | None = None) -> ir_datasets.Dataset:
    """``spoken-query`` (documents only, ``split=None``) or ``spoken-query/<split>``."""
    if split is None:
        return ir_datasets.Dataset(_Docs(root))
    return ir_datasets.Dataset(_Docs(root), _Queries(split, root), _Qrels(split, root))


register(NAME, dataset())
for _split in SPLITS:  # topics: declared by the readers' module
    register(f"{NAME}/{_split}", dataset(_split))
