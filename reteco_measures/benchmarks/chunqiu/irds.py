"""ChunQiu as an ir_datasets dataset (``chunqiu``): docs, queries, qrels and the dated
associations; the readers are `reteco_measures.benchmarks.chunqiu.data`."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pandas as pd

from ...datasets.irds.base import MemoryDocstore, Qrels, Queries, StoredDocs, ir_datasets, register
from .data import (
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

__all__ = ["dataset"]

LANG = "lzh"  # Literary (Classical) Chinese, ISO 639-3


def _docs(root) -> Iterator[ChunQiuDoc]:
    frame = load_corpus(root)
    for doc_id, text in zip(frame["doc_id"].tolist(), frame["text"].tolist(), strict=True):
        yield ChunQiuDoc(doc_id, text)


def _queries(root) -> Iterator[ChunQiuQuery]:
    ex = load_examples(root)
    for qid, text in zip(ex["query_id"].tolist(), ex["text"].tolist(), strict=True):
        yield ChunQiuQuery(qid, text)


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
    docs = StoredDocs(lambda: _docs(root), ChunQiuDoc, NAME, LANG, count=lambda: len(load_corpus(root)),
                store=MemoryDocstore)
    queries = Queries(lambda: _queries(root), ChunQiuQuery, NAME, LANG)
    qrels = Qrels(lambda: [load_qrels(root)], {1: "listed in the example's relevant_doc_ids"},
                  path=lambda: files(root)["examples"].path(), relevance=1)
    return ir_datasets.Dataset(docs, queries, qrels, _Dates(root))


register(NAME, dataset())
