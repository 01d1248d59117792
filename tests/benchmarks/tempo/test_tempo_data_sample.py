"""TEMPO reference data from loose files and the organisers' public sample (``track1_tempo/``):
the same frames as the release-tree loader, domains from the document ids, loud refusals.

Expected values come from parsing the sample with plain ``json`` here, from its documented counts
(5 queries, 26 qrels lines, 26 documents: genealogy 7, bitcoin/economics/history 5, hsm 4), and from
the release-tree loader ``load_tempo`` reading the same records laid out as a release."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.tempo.data import (
    load_tempo,
    load_tempo_files,
    load_tempo_organiser_sample,
    tempo_domains,
)
from reteco_measures.datasets.base import MissingDataError


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def test_sample_loads_with_domains_from_the_ids(tempo_sample_dir: Path):
    data = load_tempo_organiser_sample(tempo_sample_dir)
    examples = _jsonl(tempo_sample_dir / "examples.jsonl")
    # queries in file order, each in the domain its gold ids name (parsed here with json)
    expected_domain = {r["id"]: r["gold_ids"][0].split("/")[0] for r in examples}
    assert data.query_ids == [r["id"] for r in examples]
    queries = data.topics[data.topics["kind"] == "query"]
    assert dict(zip(queries["query_id"], queries["domain"], strict=True)) == expected_domain
    assert data.domains == ["bitcoin", "economics", "genealogy", "history", "hsm"]
    assert not data.steps and data.problems == []
    # the stripped steps file: no step rows, no oracle periods
    assert set(data.topics["kind"]) == {"query"} and set(data.topics["periods_source"]) == {"none"}
    # qrels: the 26 (query, gold id) pairs of examples.jsonl, domain from the query
    assert len(data.qrels) == 26
    pairs = {(r["id"], d) for r in examples for d in r["gold_ids"]}
    assert set(zip(data.qrels["query_id"], data.qrels["doc_id"], strict=True)) == pairs
    assert (data.qrels["domain"] == data.qrels["query_id"].map(expected_domain)).all()
    # corpus: 26 ids, per-domain counts as documented
    assert data.corpus["domain"].value_counts().to_dict() == {"genealogy": 7, "bitcoin": 5, "economics": 5,
                                                               "history": 5, "hsm": 4}
    assert data.corpus["doc_id"].tolist() == [r["id"] for r in _jsonl(tempo_sample_dir / "documents.jsonl")]


def test_sample_equals_the_release_tree_loader(tempo_sample_dir: Path, tempo_sample_release: Path):
    """The same records laid out as a release (one folder per domain) give the same frames."""
    tree = load_tempo("dev", root=tempo_sample_release)
    sample = load_tempo_organiser_sample(tempo_sample_dir)

    def norm(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
        cols = [c for c in frame.columns if c != "line"]
        return frame[cols].sort_values(keys).reset_index(drop=True)

    pd.testing.assert_frame_equal(norm(sample.topics, ["query_id"]), norm(tree.topics, ["query_id"]))
    pd.testing.assert_frame_equal(norm(sample.qrels, ["query_id", "doc_id"]), norm(tree.qrels, ["query_id", "doc_id"]))
    pd.testing.assert_frame_equal(norm(sample.corpus, ["doc_id"]), norm(tree.corpus, ["doc_id"]))
    assert sorted(sample.domains) == sorted(tree.domains)


def test_perfect_run_on_the_sample_scores_one(tempo_sample_dir: Path):
    data = load_tempo_organiser_sample(tempo_sample_dir)
    run = data.qrels[["query_id", "doc_id"]].assign(score=lambda f: -f.groupby("query_id").cumcount().astype(float))
    per = pd.DataFrame([{"query_id": m.query_id, "value": m.value}
                        for m in rm.iter_calc(["nDCG@10"], data.qrels, run)])
    assert sorted(per["query_id"]) == sorted(data.query_ids)
    assert per["value"].tolist() == pytest.approx([1.0] * 5)


def test_sample_has_no_step_view(tempo_sample_dir: Path):
    with pytest.raises(ValueError, match="strips"):
        load_tempo_files(tempo_sample_dir / "examples.jsonl", steps=tempo_sample_dir / "steps.jsonl",
                         qrels=tempo_sample_dir / "qrels.txt", step_view=True)


def test_missing_sample_files_are_named(tmp_path: Path):
    with pytest.raises(MissingDataError, match="not a folder"):
        load_tempo_organiser_sample(tmp_path / "nowhere")
    (tmp_path / "examples.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(MissingDataError, match=r"qrels file: .*qrels\.txt does not exist"):
        load_tempo_organiser_sample(tmp_path)
    with pytest.raises(ValueError, match="examples="):
        load_tempo_files(qrels=tmp_path / "qrels.txt")


def test_loose_files_step_view_and_explicit_domain(tmp_path: Path):
    """A hand-made 1b pair of files (ids without a domain prefix): steps become topics, step qrels
    keep their steps' domain, unknown qrels topics are reported and kept."""
    _write_jsonl(tmp_path / "steps.jsonl", [
        {"id": "q1", "query": "When?", "steps": [{"step_id": "q1_step1", "step": 1, "step_instruction": "a",
                                                   "gold_ids": ["d1"]},
                                                  {"step_id": "q1_step2", "step": 2, "step_instruction": "b",
                                                   "gold_ids": ["d2"]}]}])
    _write_jsonl(tmp_path / "docs.jsonl", [{"id": "d1", "content": "x"}, {"id": "d2", "content": "y"}])
    (tmp_path / "qrels_steps.txt").write_text("q1_step1 0 d1 1\nq1_step2 0 d2 1\nq9_step1 0 d1 1\n", encoding="utf-8")
    data = load_tempo_files(steps=tmp_path / "steps.jsonl", documents=tmp_path / "docs.jsonl",
                            qrels=tmp_path / "qrels_steps.txt", step_view=True, domain="law")
    assert data.steps and data.query_ids == ["q1_step1", "q1_step2"]
    query = data.topics[data.topics["kind"] == "query"].iloc[0]
    assert query["required_periods"] == ["q1_step1", "q1_step2"] and query["periods_source"] == "steps"
    assert set(data.qrels["domain"]) == {"law"} and set(data.corpus["domain"]) == {"law"}
    assert [(p.kind, p.query_id, p.line) for p in data.problems] == [("unknown_query", "q9_step1", 3)]
    # without domain=: no '<domain>/' prefix anywhere -> '(none)'
    plain = load_tempo_files(steps=tmp_path / "steps.jsonl", qrels=tmp_path / "qrels_steps.txt", step_view=True)
    assert plain.domains == ["(none)"] and plain.corpus is None


def test_missing_release_message_has_no_stray_dollar(tmp_path: Path, monkeypatch):
    with pytest.raises(MissingDataError) as info:
        tempo_domains("dev", tmp_path)
    message = str(info.value)
    # a root the caller gave is named once, as given; $RETECO_DATA only when it was the source
    assert f"at {tmp_path}/reteco/track1_tempo/<domain>/..." in message and "$" not in message
    monkeypatch.setenv("RETECO_DATA", str(tmp_path))
    with pytest.raises(MissingDataError, match=r"\(that is \$RETECO_DATA/reteco/track1_tempo/<domain>/\.\.\.\)"):
        tempo_domains("dev")


def test_sample_as_an_ir_datasets_dataset(tempo_sample_dir: Path, tmp_path: Path, monkeypatch):
    import ir_datasets

    from reteco_measures.benchmarks.tempo.data import TempoDoc, TempoQuery
    from reteco_measures.benchmarks.tempo.irds import tempo_files_dataset
    from reteco_measures.datasets.base import REGISTERED_DATASETS, TOPICS_FACTORIES

    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    d = tempo_sample_dir
    name = "reteco/tempo/test-organiser-sample"
    try:
        tempo_files_dataset(d / "examples.jsonl", d / "steps.jsonl", d / "documents.jsonl", d / "qrels.txt", name=name)
        ds = ir_datasets.load(name)
        examples = _jsonl(d / "examples.jsonl")
        queries = list(ds.queries_iter())
        assert [q.query_id for q in queries] == [r["id"] for r in examples]
        assert all(isinstance(q, TempoQuery) for q in queries)
        assert [q.text for q in queries] == [r["query"] for r in examples]
        assert {(q.query_id, q.doc_id, q.relevance) for q in ds.qrels_iter()} == {
            (r["id"], g, 1) for r in examples for g in r["gold_ids"]}
        docs = _jsonl(d / "documents.jsonl")
        assert ds.docs_count() == 26
        first = ds.docs_store().get(docs[0]["id"])
        assert isinstance(first, TempoDoc) and first.text == docs[0]["content"] and first.domain == "bitcoin"
        assert rm.topics(name)["query_id"].tolist() == [r["id"] for r in examples]
    finally:
        ir_datasets.registry._registered.pop(name, None)
        if name in REGISTERED_DATASETS:
            REGISTERED_DATASETS.remove(name)
        TOPICS_FACTORIES.pop(name, None)
