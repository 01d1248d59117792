"""Registering our datasets with ir_datasets (imports ir_datasets): `register` (ir_datasets'
public ``registry.register``, for names no other package holds), and the generic handlers every
benchmark's registration is built from — `Docs`, `StoredDocs`, `Queries`, `Qrels` (ir_datasets'
docs, queries and qrels components over functions that read the benchmark's files) and
`MemoryDocstore`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import ir_datasets
import pandas as pd
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, TrecQrel
from ir_datasets.indices import Docstore

from ..base import REGISTERED_DATASETS, TOPICS_FACTORIES

__all__ = ["register", "ir_datasets", "Docs", "StoredDocs", "Queries", "Qrels", "MemoryDocstore", "qrel_records"]


def register(name: str, dataset: ir_datasets.Dataset, topics=None) -> None:
    """Register ``dataset`` with ir_datasets under ``name``, once (a name we registered before
    keeps its first registration). ``topics``: a zero-argument function returning the
    dataset's query metadata as a DataFrame keyed by ``query_id`` (for
    `topics`)."""
    registry = ir_datasets.registry
    if name not in REGISTERED_DATASETS:
        if name in set(registry):  # iterating the registry lists its names
            raise RuntimeError(f"dataset name {name!r} is already registered by another package")
        registry.register(name, dataset)
        REGISTERED_DATASETS.append(name)
    if topics is not None:
        TOPICS_FACTORIES[name] = topics


# ------------------------------------------------------------------------------------------------
# the generic handlers every benchmark's registration is built from


class MemoryDocstore(Docstore):
    """A docstore over documents read into memory on first use (for small corpora)."""

    def __init__(self, docs_handler: Any, id_field: str = "doc_id"):
        super().__init__(docs_handler.docs_cls(), id_field)
        self._handler = docs_handler
        self._docs: dict[str, Any] | None = None

    def get_many_iter(self, doc_ids: Iterable[str]) -> Iterator[Any]:
        if self._docs is None:
            self._docs = {getattr(d, self._id_field): d for d in self._handler.docs_iter()}
        for doc_id in doc_ids:
            if doc_id in self._docs:
                yield self._docs[doc_id]

    def clear_cache(self) -> None:
        self._docs = None


class Docs(BaseDocs):
    """The documents of a dataset: ``records()`` yields records of ``cls`` (a NamedTuple). It
    has no docstore (as ir_datasets' own components without one); `StoredDocs` has one.

    Args:
        records: a zero-argument function returning an iterable of records (read lazily).
        cls: the record type.
        namespace, lang: ir_datasets' ``docs_namespace`` and ``docs_lang`` (``lang=None``: several).
        count: a zero-argument function returning the number of documents (default: count them).
    """

    def __init__(self, records: Callable[[], Iterable[Any]], cls: type, namespace: str, lang: str | None, *,
                 count: Callable[[], int] | None = None):
        self._records, self._cls, self._namespace, self._lang, self._count = records, cls, namespace, lang, count

    def docs_iter(self) -> Iterator[Any]:
        yield from self._records()

    def docs_count(self) -> int:
        return self._count() if self._count is not None else sum(1 for _ in self.docs_iter())

    def docs_cls(self) -> type:
        return self._cls

    def docs_namespace(self) -> str:
        return self._namespace

    def docs_lang(self) -> str | None:
        return self._lang


class StoredDocs(Docs):
    """`Docs` with a docstore: ``store(docs, field)`` builds it (e.g. `MemoryDocstore`); the
    other arguments as `Docs`."""

    def __init__(self, records: Callable[[], Iterable[Any]], cls: type, namespace: str, lang: str | None, *,
                 store: Callable[[Any, str], Any], count: Callable[[], int] | None = None):
        super().__init__(records, cls, namespace, lang, count=count)
        self._store = store

    def docs_store(self, field: str = "doc_id", options: Any = None) -> Any:
        return self._store(self, field)


class Queries(BaseQueries):
    """The queries of a dataset: ``records()`` yields records of ``cls``; arguments as `Docs`
    (``count``: default, count them)."""

    def __init__(self, records: Callable[[], Iterable[Any]], cls: type, namespace: str, lang: str | None, *,
                 count: Callable[[], int] | None = None):
        self._records, self._cls, self._namespace, self._lang, self._count = records, cls, namespace, lang, count

    def queries_iter(self) -> Iterator[Any]:
        yield from self._records()

    def queries_count(self) -> int:
        return self._count() if self._count is not None else sum(1 for _ in self.queries_iter())

    def queries_cls(self) -> type:
        return self._cls

    def queries_namespace(self) -> str:
        return self._namespace

    def queries_lang(self) -> str | None:
        return self._lang


class Qrels(BaseQrels):
    """The qrels of a dataset as `TrecQrel` records, read from frames with ``query_id``,
    ``doc_id`` and ``relevance`` columns.

    Args:
        frames: a zero-argument function returning an iterable of such frames (e.g. one per file).
        defs: ir_datasets' ``qrels_defs`` (grade -> meaning).
        path: a zero-argument function returning the qrels file (``qrels_path``), if there is one.
        relevance: a grade given to every row instead of the ``relevance`` column (for qrels
            that only list relevant pairs).
    """

    def __init__(self, frames: Callable[[], Iterable[pd.DataFrame]], defs: dict[int, str], *,
                 path: Callable[[], str] | None = None, relevance: int | None = None):
        self._frames, self._defs, self._path, self._relevance = frames, defs, path, relevance

    def qrels_iter(self) -> Iterator[TrecQrel]:
        for frame in self._frames():
            yield from qrel_records(frame, self._relevance)

    def qrels_cls(self) -> type:
        return TrecQrel

    def qrels_defs(self) -> dict[int, str]:
        return dict(self._defs)

    def qrels_path(self) -> str:
        if self._path is None:
            return super().qrels_path()
        return self._path()


def qrel_records(frame: pd.DataFrame, relevance: int | None = None) -> Iterator[TrecQrel]:
    """The rows of a qrels frame (``query_id``, ``doc_id``, ``relevance``) as `TrecQrel` records
    (iteration ``"0"``); ``relevance``: one grade for every row instead of the column."""
    grades = [relevance] * len(frame) if relevance is not None else frame["relevance"].tolist()
    for qid, did, rel in zip(frame["query_id"].tolist(), frame["doc_id"].tolist(), grades, strict=True):
        yield TrecQrel(qid, did, int(rel), "0")

