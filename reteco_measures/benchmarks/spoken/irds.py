"""Spoken-Query as ir_datasets datasets (``spoken-query``, ``spoken-query/<split>``); the
readers are `reteco_measures.benchmarks.spoken.data`."""

from __future__ import annotations

import os
from collections.abc import Iterator

from ...datasets.irds.base import MemoryDocstore, Qrels, Queries, StoredDocs, ir_datasets, register
from .data import (
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

__all__ = ["dataset"]


def _docs(root) -> Iterator[SpokenDoc]:
    frame = load_corpus(root)
    for row in zip(*(frame[c].tolist() for c in SpokenDoc._fields), strict=True):
        yield SpokenDoc(*row)


def dataset(split: str | None = None, root: str | os.PathLike | None = None) -> ir_datasets.Dataset:
    """``spoken-query`` (documents only, ``split=None``) or ``spoken-query/<split>``."""
    docs = StoredDocs(lambda: _docs(root), SpokenDoc, NAME, None, count=lambda: len(load_corpus(root)),
                store=MemoryDocstore)  # lang None: several languages
    if split is None:
        return ir_datasets.Dataset(docs)
    queries = Queries(lambda: load_requests(split, root), SpokenQuery, NAME, None)
    qrels = Qrels(lambda: [load_qrels(split, root)], dict(GRADES),
                  path=lambda: split_file(split, "qrels.jsonl", "the Spoken-Query labels", root).path())
    return ir_datasets.Dataset(docs, queries, qrels)


register(NAME, dataset())
for _split in SPLITS:  # topics: declared by the readers' module
    register(f"{NAME}/{_split}", dataset(_split))
