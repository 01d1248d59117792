"""RETECO Track 1 (TEMPO) as ir_datasets datasets (``reteco/tempo/...``, the table of
`reteco_measures.benchmarks.tempo.data`, which holds the readers) and
`tempo_files_dataset` over loose files such as the organisers' sample.

Lookups by id use an ir_datasets docstore built on first use under
``$IR_DATASETS_HOME/reteco_measures/tempo/`` (`docstore_path`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from ir_datasets.indices import Docstore, PickleLz4FullStore

from ...datasets.base import DataFile
from ...datasets.irds.base import Qrels, Queries, StoredDocs, ir_datasets, register
from .data import (
    NO_DOMAIN,
    TEMPO_DOMAINS,
    TEMPO_SPLITS,
    TempoDoc,
    TempoQuery,
    TempoStep,
    load_tempo_files,
    read_doc_ids,
    read_documents,
    read_tempo_qrels,
    require_file,
    tempo_file,
    tempo_topics,
)

__all__ = ["docstore_path", "tempo_files_dataset"]


def docstore_path(documents: str | os.PathLike, domain: str) -> str:
    """Where the lookup index of a ``documents.jsonl`` lives: under ``$IR_DATASETS_HOME``, keyed by
    the file's absolute path, size and modification time."""
    p = Path(documents).resolve()
    st = p.stat()
    key = hashlib.sha1(f"{p}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return str(ir_datasets.util.home_path() / "reteco_measures" / "tempo" / f"{domain}-{key}")


class _DomainDocs:
    def __init__(self, domain: str):
        self.domain = domain

    def file(self) -> DataFile:
        return tempo_file(self.domain, "documents.jsonl", f"TEMPO {self.domain} documents", None)

    def iter(self) -> Iterator[TempoDoc]:
        return read_documents(self.file().path(), self.domain)

    def store(self) -> PickleLz4FullStore:
        path = self.file().path()
        return PickleLz4FullStore(path=docstore_path(path, self.domain), init_iter_fn=self.iter, data_cls=TempoDoc,
                                  lookup_field="doc_id", index_fields=["doc_id"])


class _TempoDocstore(Docstore):
    """Lookups over one or several domain stores (a ``<domain>/`` id prefix picks the store)."""

    def __init__(self, parts: list[_DomainDocs]):
        super().__init__(TempoDoc, "doc_id")
        self.parts = parts

    def get_many_iter(self, doc_ids: Iterable[str]) -> Iterator[TempoDoc]:
        wanted = [str(d) for d in doc_ids]
        by_domain = {p.domain: p for p in self.parts}
        routed: dict[str, list[str]] = {}
        for did in wanted:
            prefix = did.split("/", 1)[0] if "/" in did else None
            routed.setdefault(prefix if prefix in by_domain else "*", []).append(did)
        for dom, ids in routed.items():
            parts = [by_domain[dom]] if dom != "*" else self.parts
            remaining = set(ids)
            for part in parts:
                if not remaining:
                    break
                for doc in part.store().get_many_iter(sorted(remaining)):
                    remaining.discard(doc.doc_id)
                    yield doc

    def build(self) -> None:
        for part in self.parts:
            part.store().build()

    def built(self) -> bool:
        return all(part.store().built() for part in self.parts)

    def count(self) -> int:
        return sum(part.store().count() for part in self.parts)

    def __iter__(self) -> Iterator[TempoDoc]:
        for part in self.parts:
            yield from part.store()


NAMESPACE = "reteco/tempo"


def _domain_parts(domains: tuple[str, ...] | None) -> list[_DomainDocs]:
    return [_DomainDocs(d) for d in (list(domains) if domains else list(TEMPO_DOMAINS))]


def _tempo_docs(domains: tuple[str, ...] | None) -> StoredDocs:
    """The documents of one domain or all of them, looked up through `_TempoDocstore`."""

    def records() -> Iterator[TempoDoc]:
        for part in _domain_parts(domains):
            yield from part.iter()

    def count() -> int:
        store = _TempoDocstore(_domain_parts(domains))
        if store.built():
            return store.count()
        return int(sum(len(read_doc_ids(p.file().path(), p.domain)) for p in _domain_parts(domains)))

    return StoredDocs(records, TempoDoc, NAMESPACE, "en", count=count,
                store=lambda docs, field: _TempoDocstore(_domain_parts(domains)))


def _query_records(topics: pd.DataFrame, steps: bool) -> Iterator[TempoQuery | TempoStep]:
    if steps:
        for r in topics[topics["kind"] == "step"].itertuples(index=False):
            yield TempoStep(r.query_id, r.text, r.parent_id, int(r.step), r.domain)
    else:
        for r in topics[topics["kind"] == "query"].itertuples(index=False):
            yield TempoQuery(r.query_id, r.text, r.domain)


def _qrels_defs(steps: bool) -> dict[int, str]:
    what = "step" if steps else "query"
    return {0: "not relevant", 1: f"relevant (gold document of the {what})"}


def _tempo_topics(split: str, domains: tuple[str, ...] | None, steps: bool) -> tuple[Queries, Qrels]:
    """Queries (or steps) and qrels of one split (1a or 1b), for one domain or all of them."""
    doms = list(domains) if domains else list(TEMPO_DOMAINS)

    def qrels_frames() -> Iterator[pd.DataFrame]:  # one frame per domain file
        name = f"qrels_steps_{split}.txt" if steps else f"qrels_{split}.txt"
        for dom in doms:
            yield read_tempo_qrels(tempo_file(dom, name, f"TEMPO {dom} {split} {'step ' if steps else ''}qrels", None).path())

    queries = Queries(lambda: _query_records(tempo_topics(split, doms, require_steps=steps), steps),
                      TempoStep if steps else TempoQuery, NAMESPACE, "en")
    return queries, Qrels(qrels_frames, _qrels_defs(steps))


def _file_docs(path: str | os.PathLike, domain: str | None) -> StoredDocs:
    """The passages of one loose ``documents.jsonl`` (domain: each id's ``<domain>/`` prefix)."""
    path = str(path)

    def records() -> Iterator[TempoDoc]:
        for doc in read_documents(path, domain or ""):
            if domain is None:
                prefix = doc.doc_id.split("/", 1)[0] if "/" in doc.doc_id else NO_DOMAIN
                doc = doc._replace(domain=prefix)
            yield doc

    return StoredDocs(records, TempoDoc, NAMESPACE, "en", count=lambda: len(read_doc_ids(path)),
                store=lambda docs, field: PickleLz4FullStore(
                    path=docstore_path(path, "files"), init_iter_fn=records, data_cls=TempoDoc,
                    lookup_field="doc_id", index_fields=["doc_id"]))


def tempo_files_dataset(
    examples: str | os.PathLike | None = None,
    steps: str | os.PathLike | None = None,
    documents: str | os.PathLike | None = None,
    qrels: str | os.PathLike | None = None,
    *,
    name: str | None = None,
    **options: Any,
) -> ir_datasets.Dataset:
    """An ir_datasets dataset over loose TEMPO files (e.g. the organisers' public sample), with
    the same docs, queries and qrels types as the ``reteco/tempo/...`` datasets.

    Arguments as `load_tempo_files` (``options``: ``guidance``, ``step_view``, ``domain``,
    ``periods``). With ``name``, the dataset is also registered, so ``ir_datasets.load(name)`` and
    ``rm.topics(name)`` work (e.g. ``name="reteco/tempo/sample"``).
    """
    # the docs component streams the documents file itself: only check here that it exists
    data = load_tempo_files(examples, steps, None, qrels, **options)
    parts: list[Any] = []
    if documents is not None:
        require_file(documents, f"TEMPO {options.get('domain') or ''} documents".replace("  ", " "))
        parts.append(_file_docs(documents, options.get("domain")))
    parts += [Queries(lambda: _query_records(data.topics, data.steps), TempoStep if data.steps else TempoQuery,
                      NAMESPACE, "en"),
              Qrels(lambda: [data.qrels], _qrels_defs(data.steps))]
    dataset = ir_datasets.Dataset(*parts)
    if name is not None:
        register(name, dataset, topics=data.topics.copy)
    return dataset


def _register_all() -> None:
    """The ``reteco/tempo/...`` datasets (their topics are declared by the readers' module)."""
    register("reteco/tempo", ir_datasets.Dataset(_tempo_docs(None)))
    for dom in TEMPO_DOMAINS:
        register(f"reteco/tempo/{dom}", ir_datasets.Dataset(_tempo_docs((dom,))))
    for split in TEMPO_SPLITS:
        for doms in [None, *((d,) for d in TEMPO_DOMAINS)]:
            base = f"reteco/tempo/{doms[0]}/{split}" if doms else f"reteco/tempo/{split}"
            docs = _tempo_docs(doms)
            for steps, name in ((False, base), (True, f"{base}/steps")):
                register(name, ir_datasets.Dataset(docs, *_tempo_topics(split, doms, steps)))


_register_all()
