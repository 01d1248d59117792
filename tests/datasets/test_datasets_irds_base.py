"""The generic ir_datasets handlers every benchmark folder builds its registrations from
(`reteco_measures.datasets.irds.base`: `Docs`, `Queries`, `Qrels`, `MemoryDocstore`) and the
hand-over `reteco_measures.datasets.on_ir_datasets`. Expected values are written out by hand."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import NamedTuple

import ir_datasets
import pandas as pd
import pytest
from ir_datasets.formats import TrecQrel

from reteco_measures.datasets.irds.base import Docs, MemoryDocstore, Qrels, Queries, StoredDocs, qrel_records


class Doc(NamedTuple):
    doc_id: str
    text: str


class Query(NamedTuple):
    query_id: str
    text: str


DOCS = [Doc("d1", "one"), Doc("d2", "two"), Doc("d3", "three")]
QUERIES = [Query("q1", "first"), Query("q2", "second")]


def test_docs_queries_and_qrels_make_one_dataset() -> None:
    reads = []

    def docs():
        reads.append("docs")
        return iter(DOCS)

    qrels = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d2", "d3"], "relevance": [2, 0]})
    ds = ir_datasets.Dataset(
        StoredDocs(docs, Doc, "toy", "en", store=MemoryDocstore),
        Queries(lambda: iter(QUERIES), Query, "toy", None, count=lambda: 7),
        Qrels(lambda: [qrels.iloc[:1], qrels.iloc[1:]], {0: "no", 2: "yes"}, path=lambda: "/x/qrels.txt"),
    )
    assert reads == []  # lazy: nothing read until asked
    assert list(ds.docs_iter()) == DOCS and ds.docs_count() == 3  # counted: no count function
    assert ds.docs_cls() is Doc and ds.docs_namespace() == "toy" and ds.docs_lang() == "en"
    store = ds.docs_store()
    assert store.get_many(["d3", "nowhere", "d1"]) == {"d3": DOCS[2], "d1": DOCS[0]}
    assert list(ds.queries_iter()) == QUERIES and ds.queries_count() == 7  # the count function
    assert ds.queries_cls() is Query and ds.queries_namespace() == "toy" and ds.queries_lang() is None
    assert list(ds.qrels_iter()) == [TrecQrel("q1", "d2", 2, "0"), TrecQrel("q2", "d3", 0, "0")]
    assert ds.qrels_cls() is TrecQrel and ds.qrels_defs() == {0: "no", 2: "yes"}
    assert ds.qrels_path() == "/x/qrels.txt"


def test_without_store_or_path_the_formats_defaults_apply() -> None:
    docs = ir_datasets.Dataset(Docs(lambda: iter(DOCS), Doc, "toy", "en"))
    assert not hasattr(docs, "docs_store")  # as ir_datasets' components without a docstore
    with pytest.raises(NotImplementedError):
        Qrels(lambda: [], {}).qrels_path()
    assert Queries(lambda: iter(QUERIES), Query, "toy", "en").queries_count() == 2


def test_qrels_with_one_grade_for_every_row() -> None:
    frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"]})  # relevant pairs only
    assert list(qrel_records(frame, relevance=1)) == [TrecQrel("q1", "d1", 1, "0"), TrecQrel("q1", "d2", 1, "0")]
    assert list(Qrels(lambda: [frame], {1: "listed"}, relevance=1).qrels_iter())[1] == TrecQrel("q1", "d2", 1, "0")


def test_on_ir_datasets_runs_at_the_explicit_register_call() -> None:
    code = textwrap.dedent("""
        import sys
        import reteco_measures as rm
        calls = []
        rm.datasets.on_ir_datasets(lambda: calls.append("x"))
        assert calls == [] and "ir_datasets" not in sys.modules, calls  # nothing happens on import
        rm.datasets.register()
        assert calls == ["x"], calls
        rm.datasets.register()
        assert calls == ["x"], calls  # once
        rm.datasets.on_ir_datasets(lambda: calls.append("y"))  # handed over after: runs at once
        assert calls == ["x", "y"], calls
        import ir_datasets
        assert ir_datasets.load("chunqiu") is not None and ir_datasets.load("reteco/tempo/dev") is not None
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.parametrize("first", ["reteco_measures.benchmarks.chunqiu.irds", "reteco_measures.benchmarks.tempo.irds",
                                   "reteco_measures.benchmarks"])
def test_a_registration_module_imported_first_then_register_gives_every_dataset(first: str) -> None:
    """Importing a registration module first (it imports ir_datasets) and then calling
    `register` gives every dataset of ours, each once."""
    code = textwrap.dedent(f"""
        import {first}
        import ir_datasets
        import reteco_measures as rm
        names = rm.datasets.register()
        assert len(names) == len(set(names)) == 105, len(names)
        for name in ("chunqiu", "spoken-query", "reteco/tempo/dev", "reteco/recor/dev", "ikat/2023/test"):
            ir_datasets.load(name)
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_register_before_any_benchmark_folder_says_what_to_import() -> None:
    code = textwrap.dedent("""
        from reteco_measures.datasets import register
        try:
            register()
        except RuntimeError as exc:
            assert "import reteco_measures.benchmarks" in str(exc), exc
            print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
