"""ChunQiu as an ir_datasets dataset (``chunqiu``): docs, queries, qrels and the dated
associations; the readers are `reteco_measures.datasets.chunqiu`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pandas as pd
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, TrecQrel
from ir_datasets.indices import Docstore

from ..chunqiu import (
    NAME,
    ChunQiuDate,
    ChunQiuDoc,
    ChunQiuQuery,
    files,
    load_corpus,
    load_dates,
    load_examples,
    load_qrels,
)
from .base import ir_datasets, register

__all__ = ["MemoryDocstore", "dataset"]


class MemoryDocstore(Docstore):
    """A docstore over documents read into memory on first use (benchmark corpora are small)."""

    def __init__(self, docs_handler: Any, id_field: str = "doc_id"):
        super().__init__(docs_handler.docs_cls(), id_field)
        self._handler = docs_handler
        self._docs: dict[str, Any] | None = None

    def get_many_iter(self, doc_ids):
        if self._docs is None:
            self._docs = {getattr(d, self._id_field): d for d in self._handler.docs_iter()}
        for doc_id in doc_ids:
            if doc_id in self._docs:
                yield self._docs[doc_id]

    def clear_cache(self) -> None:
        self._docs = None


class _Docs(BaseDocs):
    def __init__(self, root=None):
        self._root = root

    def docs_iter(self):
        frame = load_corpus(self._root)
        for doc_id, text in zip(frame["doc_id"].tolist(), frame["text"].tolist(), strict=True):
            yield ChunQiuDoc(doc_id, text)

    def docs_count(self) -> int:
        return len(load_corpus(self._root))

    def docs_cls(self):
        return ChunQiuDoc

    def docs_store(self, field: str = "doc_id") -> MemoryDocstore:
        return MemoryDocstore(self, field)

    def docs_namespace(self) -> str:
        return NAME

    def docs_lang(self) -> str:
        return "lzh"  # Literary (Classical) Chinese, ISO 639-3


class _Queries(BaseQueries):
    def __init__(self, root=None):
        self._root = root

    def queries_iter(self):
        ex = load_examples(self._root)
        for qid, text in zip(ex["query_id"].tolist(), ex["text"].tolist(), strict=True):
            yield ChunQiuQuery(qid, text)

    def queries_cls(self):
        return ChunQiuQuery

    def queries_namespace(self) -> str:
        return NAME

    def queries_lang(self) -> str:
        return "lzh"


class _Qrels(BaseQrels):
    def __init__(self, root=None):
        self._root = root

    def qrels_iter(self):
        q = load_qrels(self._root)
        for qid, did in zip(q["query_id"].tolist(), q["doc_id"].tolist(), strict=True):
            yield TrecQrel(qid, did, 1, "0")

    def qrels_defs(self) -> dict[int, str]:
        return {1: "listed in the example's relevant_doc_ids"}

    def qrels_path(self) -> str:
        return files(self._root)["examples"].path()

    def qrels_cls(self):
        return TrecQrel


class _Dates:
    """The dated associations as document metadata of the dataset."""

    def __init__(self, root=None):
        self._root = root

    def dates_iter(self) -> Iterator[ChunQiuDate]:
        frame = load_dates(self._root)
        for row in zip(*(frame[c].tolist() for c in ChunQiuDate._fields), strict=True):
            yield ChunQiuDate(*(None if v is pd.NA else v for v in row))

    def dates_cls(self):
        return ChunQiuDate

    def dates_frame(self) -> pd.DataFrame:
        return load_dates(self._root)

    def dates_handler(self):
        return self


def dataset(root: str | os.PathLike | None = None) -> ir_datasets.Dataset:
    """The ChunQiu dataset object (``root`` overrides ``$RETECO_DATA``)."""
    return ir_datasets.Dataset(_Docs(root), _Queries(root), _Qrels(root), _Dates(root))


register(NAME, dataset())
