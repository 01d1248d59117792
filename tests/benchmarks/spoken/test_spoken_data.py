"""The ``spoken-query`` loader: the layout defined in docs/benchmarks/spoken-query.md."""

from __future__ import annotations

import json
from pathlib import Path

import ir_datasets
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.spoken import data as sp
from reteco_measures.datasets.base import MissingDataError
from reteco_measures.errors import DataFormatWarning

SAMPLE = Path(rm.__file__).resolve().parent / "sample" / "data"


def jsonl(path: Path, rows: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")


def word(w, c, s, e):
    return {"word": w, "confidence": c, "start": s, "end": e}


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    base = tmp_path / "spoken"
    jsonl(base / "corpus" / "med.jsonl", [
        {"id": "m1", "domain": "med", "language": "en", "title": "Fever", "text": "fever in children"},
        {"id": "m2", "domain": "med", "language": "en", "title": "Dose", "text": "dose of tablets"},
    ])
    jsonl(base / "corpus" / "law.jsonl", [
        {"id": "l1", "domain": "law", "language": "de", "title": "Miete", "text": "Mietvertrag"},
    ])
    jsonl(base / "validation" / "requests.jsonl", [
        {"query_id": "r1", "domain": "med", "language": "en", "one_best": "fever child",
         "hypotheses": [{"text": "fever child", "score": -1.5,
                         "words": [word("fever", 0.9, 0.0, 0.4), word("child", 0.6, 0.45, 0.8)]},
                        {"text": "fewer child", "score": -2.5, "words": []}],
         "condition": "noisy"},
        {"query_id": "r2", "domain": "law", "language": "de", "one_best": "miete", "hypotheses": [],
         "condition": "clean", "collection": "legal"},
    ])
    jsonl(base / "validation" / "qrels.jsonl", [
        {"query_id": "r1", "doc_id": "m1", "relevance": 3},
        {"query_id": "r1", "doc_id": "m2", "relevance": 0},
        {"query_id": "r2", "doc_id": "l1", "relevance": 2},
    ])
    return tmp_path


def test_dataframes(tree):
    corpus = sp.load_corpus(tree)
    assert corpus["doc_id"].tolist() == ["l1", "m1", "m2"]  # files in name order
    assert corpus["collection"].tolist() == ["law", "med", "med"]
    assert corpus["language"].tolist() == ["de", "en", "en"]
    reqs = sp.load_requests(root=tree)
    r1 = reqs[0]
    assert (r1.query_id, r1.text, r1.one_best, r1.domain, r1.condition, r1.collection) == (
        "r1", "fever child", "fever child", "med", "noisy", "med")  # collection = domain by default
    assert r1.hypotheses[0] == sp.SpokenHypothesis("fever child", -1.5, (
        sp.SpokenWord("fever", 0.9, 0.0, 0.4), sp.SpokenWord("child", 0.6, 0.45, 0.8)))
    assert r1.hypotheses[1].words == ()
    assert reqs[1].collection == "legal"  # an explicit collection field wins
    topics = sp.topics(root=tree)
    assert topics[["query_id", "collection", "condition", "domain"]].values.tolist() == [
        ["r1", "med", "noisy", "med"], ["r2", "legal", "clean", "law"]]
    assert topics["n_hypotheses"].tolist() == [2, 0]
    qrels = sp.load_qrels(root=tree)
    assert qrels.values.tolist() == [["r1", "m1", 3], ["r1", "m2", 0], ["r2", "l1", 2]]


def test_ir_datasets(tree, monkeypatch):
    monkeypatch.setenv("RETECO_DATA", str(tree))
    docs = ir_datasets.load("spoken-query")
    assert [d.doc_id for d in docs.docs_iter()] == ["l1", "m1", "m2"]
    assert docs.docs_store().get("m2").title == "Dose"
    ds = ir_datasets.load("spoken-query/validation")
    q = next(iter(ds.queries_iter()))
    assert q.default_text() == "fever child" and q.hypotheses[0].words[1].confidence == 0.6
    assert [(x.query_id, x.doc_id, x.relevance) for x in ds.qrels_iter()] == [
        ("r1", "m1", 3), ("r1", "m2", 0), ("r2", "l1", 2)]
    assert ds.qrels_defs()[3] == "highly relevant"
    assert rm.topics("spoken-query/validation")["condition"].tolist() == ["noisy", "clean"]


def test_missing_files(tmp_path):
    with pytest.raises(MissingDataError, match=r"spoken/corpus/<collection>\.jsonl"):
        sp.load_corpus(tmp_path)
    with pytest.raises(MissingDataError) as info:
        sp.load_requests(root=tmp_path)
    assert str(tmp_path / "spoken" / "validation" / "requests.jsonl") in str(info.value)
    with pytest.raises(MissingDataError, match="qrels.jsonl"):
        sp.load_qrels(root=tmp_path)


def test_malformed_request_parts_reported_good_parts_kept(tree):
    jsonl(tree / "spoken" / "validation" / "requests.jsonl", [
        {"query_id": "r1", "domain": "med", "one_best": "x", "condition": "clean",
         "hypotheses": [{"text": "x", "score": "high"},
                        {"text": "x", "score": -1, "words": [{"word": "x", "confidence": None, "start": 0, "end": 1},
                                                             word("y", 0.5, 1, 2)]}]},
        "{nope",
        {"query_id": "r3", "one_best": "no domain"},
        {"query_id": "r4", "domain": "law", "one_best": "y", "condition": "noisy"},
    ])
    with pytest.warns(DataFormatWarning) as record:
        reqs = sp.load_requests(root=tree)
    text = "\n".join(str(w.message) for w in record)
    assert "requests.jsonl:1: r1: hypothesis 1 needs a string 'text' and a numeric 'score'" in text
    assert "requests.jsonl:1: r1: hypothesis 2, word 1 needs" in text
    assert "requests.jsonl:2: -: not valid JSON" in text
    assert "requests.jsonl:3: r3: missing field(s) ['domain']" in text
    assert [r.query_id for r in reqs] == ["r1", "r4"]
    assert len(reqs[0].hypotheses) == 1 and [w.word for w in reqs[0].hypotheses[0].words] == ["y"]


def test_bundled_sample_follows_the_layout():
    corpus = sp.load_corpus(SAMPLE)
    assert sorted(corpus["collection"].unique()) == ["cooking", "finance", "health", "law", "technology", "travel"]
    assert (corpus["collection"] == corpus["domain"]).all()
    topics = sp.topics(root=SAMPLE)
    assert sorted(topics["condition"].unique()) == ["accented", "clean", "far_field", "noisy"]
    assert topics.groupby(["collection", "condition"]).size().shape[0] == 24  # the full 6 x 4 grid
    qrels = sp.load_qrels(root=SAMPLE)
    assert set(qrels["relevance"]) == {0, 1, 2, 3}
    assert set(qrels["query_id"]) == set(topics["query_id"])
    reqs = sp.load_requests(root=SAMPLE)
    assert all(len(r.hypotheses) == 3 and r.hypotheses[0].text == r.one_best for r in reqs)
    w = reqs[0].hypotheses[0].words
    assert all(0 <= x.confidence <= 1 and x.start < x.end for x in w)
