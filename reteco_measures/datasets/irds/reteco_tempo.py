"""RETECO Track 1 (TEMPO) as ir_datasets datasets (``reteco/tempo/...``, the table of
`reteco_measures.datasets.reteco_tempo`, which holds the readers) and
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
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, TrecQrel
from ir_datasets.indices import Docstore, PickleLz4FullStore

from ..base import DataFile
from ..reteco_tempo import (
    NO_DOMAIN,
    TEMPO_DOMAINS,
    TEMPO_SPLITS,
    TempoData,
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
from .base import ir_datasets, register

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


class _TempoDocsBase(BaseDocs):
    """What every TEMPO docs component shares: the record type, namespace and language."""

    def docs_cls(self):
        return TempoDoc

    def docs_namespace(self) -> str:
        return "reteco/tempo"

    def docs_lang(self) -> str:
        return "en"


class _TempoDocs(_TempoDocsBase):
    def __init__(self, domains: tuple[str, ...] | None):
        self._domains = domains

    def _parts(self) -> list[_DomainDocs]:
        doms = list(self._domains) if self._domains else list(TEMPO_DOMAINS)
        return [_DomainDocs(d) for d in doms]

    def docs_iter(self) -> Iterator[TempoDoc]:
        for part in self._parts():
            yield from part.iter()

    def docs_store(self, field: str = "doc_id", options=None) -> _TempoDocstore:
        return _TempoDocstore(self._parts())

    def docs_count(self) -> int:
        store = self.docs_store()
        if store.built():
            return store.count()
        return int(sum(len(read_doc_ids(p.file().path(), p.domain)) for p in self._parts()))


class _TempoTopics(BaseQueries, BaseQrels):
    """Queries and qrels of one split (1a or 1b), for one domain or all of them."""

    def __init__(self, split: str, domains: tuple[str, ...] | None, steps: bool):
        self.split = split
        self.domains = domains
        self.steps = steps

    def _doms(self) -> list[str]:
        return list(self.domains) if self.domains else list(TEMPO_DOMAINS)

    def topics(self) -> pd.DataFrame:
        return tempo_topics(self.split, self._doms(), require_steps=self.steps)

    def queries_iter(self) -> Iterator[TempoQuery | TempoStep]:
        t = self.topics()
        if self.steps:
            t = t[t["kind"] == "step"]
            for r in t.itertuples(index=False):
                yield TempoStep(r.query_id, r.text, r.parent_id, int(r.step), r.domain)
        else:
            t = t[t["kind"] == "query"]
            for r in t.itertuples(index=False):
                yield TempoQuery(r.query_id, r.text, r.domain)

    def queries_cls(self):
        return TempoStep if self.steps else TempoQuery

    def queries_namespace(self) -> str:
        return "reteco/tempo"

    def queries_lang(self) -> str:
        return "en"

    def qrels_frames(self) -> Iterator[pd.DataFrame]:
        """The qrels, one frame per domain file."""
        name = f"qrels_steps_{self.split}.txt" if self.steps else f"qrels_{self.split}.txt"
        for dom in self._doms():
            path = tempo_file(dom, name, f"TEMPO {dom} {self.split} {'step ' if self.steps else ''}qrels", None).path()
            yield read_tempo_qrels(path)

    def qrels_iter(self) -> Iterator[TrecQrel]:
        for q in self.qrels_frames():
            for qid, did, rel in zip(q["query_id"].tolist(), q["doc_id"].tolist(), q["relevance"].tolist(),
                                     strict=True):
                yield TrecQrel(qid, did, int(rel), "0")

    def qrels_cls(self):
        return TrecQrel

    def qrels_defs(self) -> dict[int, str]:
        what = "step" if self.steps else "query"
        return {0: "not relevant", 1: f"relevant (gold document of the {what})"}


class _FileDocs(_TempoDocsBase):
    """The passages of one loose ``documents.jsonl`` (domain: each id's ``<domain>/`` prefix)."""

    def __init__(self, path: str | os.PathLike, domain: str | None):
        self.path = str(path)
        self.domain = domain

    def docs_iter(self) -> Iterator[TempoDoc]:
        for doc in read_documents(self.path, self.domain or ""):
            if self.domain is None:
                prefix = doc.doc_id.split("/", 1)[0] if "/" in doc.doc_id else NO_DOMAIN
                doc = doc._replace(domain=prefix)
            yield doc

    def docs_store(self, field: str = "doc_id", options=None) -> PickleLz4FullStore:
        return PickleLz4FullStore(path=docstore_path(self.path, "files"), init_iter_fn=self.docs_iter,
                                  data_cls=TempoDoc, lookup_field="doc_id", index_fields=["doc_id"])

    def docs_count(self) -> int:
        return len(read_doc_ids(self.path))


class _FrameTopics(_TempoTopics):
    """Queries (or steps) and qrels of a loaded `TempoData` (the release datasets' types)."""

    def __init__(self, data: TempoData):
        self.data = data
        self.steps = data.steps

    def topics(self) -> pd.DataFrame:
        return self.data.topics

    def qrels_frames(self) -> Iterator[pd.DataFrame]:
        yield self.data.qrels


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
        parts.append(_FileDocs(documents, options.get("domain")))
    topics = _FrameTopics(data)
    parts += [topics, topics]
    dataset = ir_datasets.Dataset(*parts)
    if name is not None:
        register(name, dataset, topics=data.topics.copy)
    return dataset


def _register_all() -> None:
    """The ``reteco/tempo/...`` datasets (their topics are declared by the readers' module)."""
    register("reteco/tempo", ir_datasets.Dataset(_TempoDocs(None)))
    for dom in TEMPO_DOMAINS:
        register(f"reteco/tempo/{dom}", ir_datasets.Dataset(_TempoDocs((dom,))))
    for split in TEMPO_SPLITS:
        for doms in [None, *((d,) for d in TEMPO_DOMAINS)]:
            base = f"reteco/tempo/{doms[0]}/{split}" if doms else f"reteco/tempo/{split}"
            docs = _TempoDocs(doms)
            for steps, name in ((False, base), (True, f"{base}/steps")):
                topics = _TempoTopics(split, doms, steps)
                register(name, ir_datasets.Dataset(docs, topics, topics))


_register_all()
