"""The ``chunqiu`` loader: a tiny tree in a tmp dir, ir_datasets access, dates as document metadata."""

from __future__ import annotations

import json
from pathlib import Path

import ir_datasets
import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.chunqiu import data as cq
from reteco_measures.datasets.base import MissingDataError
from reteco_measures.errors import DataFormatError, DataFormatWarning


def jsonl(path: Path, rows: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    base = tmp_path / "chunqiu"
    jsonl(base / "corpus.jsonl", [
        {"doc_id": "c3", "text": "隱公元年春王正月。"},
        {"doc_id": "c1", "text": "夏五月，鄭伯克段于鄢。"},
        {"doc_id": "c2", "text": "君子曰：非禮也。"},
    ])
    jsonl(base / "examples.jsonl", [
        {"query_id": "e1", "text": "隱公元年正月之事", "relevant_doc_ids": ["c3"]},
        {"query_id": "e2", "text": "鄭伯克段", "relevant_doc_ids": ["c1", "c3", "c1"]},
    ])
    jsonl(base / "dated_examples.jsonl", [
        {"doc_id": "c3", "time_text": "隱公元年春王正月", "reign": "隱公", "year": 1, "month": 1},
        {"doc_id": "c3", "time_text": "隱公元年春", "reign": "隱公", "year": 1, "month": None},
        {"doc_id": "c1", "time_text": "隱公元年夏五月", "reign": "隱公", "year": "1", "month": 5},
    ])
    return tmp_path


def test_dataframes(tree):
    corpus = cq.load_corpus(tree)
    assert corpus["doc_id"].tolist() == ["c3", "c1", "c2"]  # corpus (file) order kept
    assert cq.corpus_order(tree) == ["c3", "c1", "c2"]
    ex = cq.load_examples(tree)
    assert ex["query_id"].tolist() == ["e1", "e2"]
    assert ex["relevant_doc_ids"].tolist() == [["c3"], ["c1", "c3", "c1"]]
    qrels = cq.load_qrels(tree)
    assert sorted(map(tuple, qrels[["query_id", "doc_id", "relevance"]].values.tolist())) == [
        ("e1", "c3", 1), ("e2", "c1", 1), ("e2", "c3", 1)]  # a doc listed twice counts once
    dates = cq.load_dates(tree)
    assert dates["doc_id"].tolist() == ["c3", "c3", "c1"]
    assert dates["year"].tolist() == [1, 1, 1]  # "1" read as the integer 1
    assert str(dates["year"].dtype) == "Int64" and str(dates["month"].dtype) == "Int64"
    assert dates["month"].isna().tolist() == [False, True, False]


def test_join_dates_one_to_many(tree):
    run = pd.DataFrame({"query_id": ["q", "q", "q"], "doc_id": ["c3", "c2", "c1"], "score": [3.0, 2.0, 1.0]})
    joined = cq.join_dates(run, root=tree)
    assert joined["doc_id"].tolist() == ["c3", "c3", "c2", "c1"]  # c3 has two dates, c2 none
    assert joined["reign"].isna().tolist() == [False, False, True, False]
    inner = cq.join_dates(run, root=tree, how="inner")
    assert inner["doc_id"].tolist() == ["c3", "c3", "c1"]
    with pytest.raises(ValueError, match="doc_id"):
        cq.join_dates(pd.DataFrame({"x": [1]}), root=tree)


def test_ir_datasets_access(tree, monkeypatch):
    monkeypatch.setenv("RETECO_DATA", str(tree))
    ds = ir_datasets.load("chunqiu")
    docs = list(ds.docs_iter())
    assert [d.doc_id for d in docs] == ["c3", "c1", "c2"] and docs[1].text.startswith("夏五月")
    assert ds.docs_count() == 3
    assert ds.docs_store().get("c2").text == "君子曰：非禮也。"
    assert [(q.query_id, q.text) for q in ds.queries_iter()] == [("e1", "隱公元年正月之事"), ("e2", "鄭伯克段")]
    assert sorted((q.query_id, q.doc_id, q.relevance) for q in ds.qrels_iter()) == [
        ("e1", "c3", 1), ("e2", "c1", 1), ("e2", "c3", 1)]
    # the dated associations as document metadata, through the dataset
    dated = list(ds.dates_iter())
    assert dated[0] == cq.ChunQiuDate("c3", "隱公元年春王正月", "隱公", 1, 1)
    assert dated[1].month is None
    assert ds.dates_frame()["doc_id"].tolist() == ["c3", "c3", "c1"]
    # the qrels work directly with ir_measures
    run = {"e1": {"c3": 1.0}, "e2": {"c2": 2.0, "c1": 1.0}}
    vals = rm.calc_aggregate(["R@10"], ds.qrels_iter(), run)
    assert list(vals.values())[0] == pytest.approx((1 + 0.5) / 2)
    assert rm.topics("chunqiu")["query_id"].tolist() == ["e1", "e2"]


def test_missing_file_message(tmp_path, monkeypatch):
    monkeypatch.setenv("RETECO_DATA", str(tmp_path))
    with pytest.raises(MissingDataError) as info:
        list(ir_datasets.load("chunqiu").docs_iter())
    msg = str(info.value)
    assert str(tmp_path / "chunqiu" / "corpus.jsonl") in msg and "$RETECO_DATA/chunqiu/corpus.jsonl" in msg
    monkeypatch.delenv("RETECO_DATA")
    with pytest.raises(MissingDataError, match="RETECO_DATA"):
        cq.load_corpus()


def test_bad_lines_are_reported_and_good_ones_kept(tree):
    base = tree / "chunqiu"
    jsonl(base / "corpus.jsonl", [
        {"doc_id": "c3", "text": "a"},
        "{broken",
        {"doc_id": "c1"},
        {"doc_id": "c2", "text": "b"},
        {"doc_id": "c3", "text": "again"},
    ])
    with pytest.warns(DataFormatWarning) as record:
        corpus = cq.load_corpus(tree)
    assert corpus["doc_id"].tolist() == ["c3", "c2"]
    text = "\n".join(str(w.message) for w in record)
    assert "corpus.jsonl:2: -: not valid JSON" in text
    assert "corpus.jsonl:3: -: missing field(s) ['text']" in text
    assert "c3 appears more than once" in text
    with pytest.raises(DataFormatError):
        cq.load_corpus(tree, on_bad_lines="error")
    jsonl(base / "dated_examples.jsonl", [{"doc_id": "c3", "time_text": "某年", "reign": "隱公", "year": "元",
                                           "month": 1}])
    with pytest.warns(DataFormatWarning, match="year '元' is not an integer"):
        dates = cq.load_dates(tree)
    assert dates["year"].isna().tolist() == [True] and dates["time_text"].tolist() == ["某年"]


def test_bundled_sample_loads():
    sample = Path(rm.__file__).resolve().parent / "sample" / "data"
    assert len(cq.load_corpus(sample)) > 100
    ex = cq.load_examples(sample)
    assert len(ex) == 40 and ex["relevant_doc_ids"].map(len).min() >= 1
    dates = cq.load_dates(sample)
    assert set(dates["doc_id"]) <= set(cq.corpus_order(sample))
    # commentary records have no date of their own
    assert len(set(cq.corpus_order(sample)) - set(dates["doc_id"])) > 0
