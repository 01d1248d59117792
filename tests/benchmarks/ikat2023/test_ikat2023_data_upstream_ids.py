"""The iKAT 2023 ids proposed upstream (ir_datasets pull request #264: ``trec-ikat/2023``,
``trec-ikat/2023/judged``, ``trec-ikat/2023/judged/ptkb``) are aliases of our datasets on the real
files: same turns (``/judged``: the turns that have qrels), qrels and docs; the upstream field names;
skipped when ir_datasets defines them.

Expected values come from the real files parsed here with ``json`` / ``str.split`` and from the
counts documented with them (test 332 turns, 176 of them judged, train 95; 34,183 passage judgments)."""

from __future__ import annotations

import json
from pathlib import Path

import ir_datasets

import reteco_measures as rm
from reteco_measures.benchmarks.ikat2023 import data as ik
from reteco_measures.benchmarks.ikat2023 import irds as ik_irds
from reteco_measures.datasets import base


def _raw_turns(path: Path) -> list[tuple]:
    """(query id, title, ptkb, conversation, turn, utterance, resolved, response), parsed with json."""
    rows = []
    for conv in json.loads(path.read_text(encoding="utf-8")):
        for t in conv["turns"]:
            rows.append((f"{conv['number']}_{t['turn_id']}", conv["title"], conv["ptkb"], conv["number"],
                         int(t["turn_id"]), t["utterance"], t["resolved_utterance"], t["response"]))
    return rows


def _qrels_file(path: Path) -> list[tuple[str, str, int]]:
    return [(p[0], p[2], int(p[3])) for p in (line.split() for line in path.read_text().splitlines()) if p]


def test_queries_are_the_real_turns_in_the_upstream_layout(ikat_root: Path, ikat2023_dir: Path):
    train = _raw_turns(ikat2023_dir / "2023_train_topics.json")
    test = _raw_turns(ikat2023_dir / "2023_test_topics.json")
    assert (len(train), len(test)) == (95, 332)
    every = [tuple(q) for q in ir_datasets.load("trec-ikat/2023").queries_iter()]
    assert every == train + test  # upstream order: train topics, then test topics
    # ``/judged`` (ir_datasets' convention): the queries that have qrels, in topic order
    with_qrels = {q for q, _, _ in _qrels_file(ikat2023_dir / "2023-qrels.all-turns.txt")}
    judged = [tuple(q) for q in ir_datasets.load("trec-ikat/2023/judged").queries_iter()]
    assert judged == [t for t in test if t[0] in with_qrels] and len(judged) == 176
    assert ir_datasets.load("trec-ikat/2023/judged").queries_count() == 176
    with_ptkb = {q for q, _, _ in _qrels_file(ikat2023_dir / "2023_ptkb_rel_nist.txt")}
    ptkb_turns = [tuple(q) for q in ir_datasets.load("trec-ikat/2023/judged/ptkb").queries_iter()]
    assert ptkb_turns == [t for t in test if t[0] in with_ptkb] and len(ptkb_turns) == 98
    q = next(ir_datasets.load("trec-ikat/2023").queries_iter())
    assert q.default_text() == q.utterance and q.turn_id == 1
    q = next(ir_datasets.load("trec-ikat/2023/judged").queries_iter())
    assert q.topic_number == "9-1" and q.turn_id == min(int(t[4]) for t in test if t[3] == "9-1" and t[0] in with_qrels)
    assert ir_datasets.load("trec-ikat/2023").queries_count() == 427


def test_aliases_share_our_qrels_docs_and_topics(ikat_root: Path, ikat2023_dir: Path):
    passage = _qrels_file(ikat2023_dir / "2023-qrels.all-turns.txt")
    assert len(passage) == 34183
    for name in ("trec-ikat/2023", "trec-ikat/2023/judged"):
        ds = ir_datasets.load(name)
        assert [(q.query_id, q.doc_id, q.relevance) for q in ds.qrels_iter()] == passage
        assert ds.has_docs() and ds.docs_cls() is ik.IkatPassage
        assert ds.qrels_defs() == ir_datasets.load("ikat/2023/test").qrels_defs()
    ours = [tuple(q) for q in ir_datasets.load("ikat/2023/test").qrels_iter()]
    assert [tuple(q) for q in ir_datasets.load("trec-ikat/2023/judged").qrels_iter()] == ours
    # PTKB: NIST's statement judgments, as NIST publishes them
    ptkb = ir_datasets.load("trec-ikat/2023/judged/ptkb")
    assert not ptkb.has_docs()
    assert [(q.query_id, q.doc_id, q.relevance) for q in ptkb.qrels_iter()] == _qrels_file(
        ikat2023_dir / "2023_ptkb_rel_nist.txt")
    assert [tuple(q) for q in ptkb.qrels_iter()] == [
        tuple(q) for q in ir_datasets.load(f"ikat/2023/test/ptkb/{ik.UPSTREAM_PTKB_VERSION}").qrels_iter()]
    # topics metadata: the same frame as ours
    assert rm.topics("trec-ikat/2023/judged").equals(rm.topics("ikat/2023/test/judged"))
    assert len(rm.topics("trec-ikat/2023/judged")) == 176
    assert len(rm.topics("trec-ikat/2023")) == 427


def test_upstream_definitions_win(monkeypatch):
    """If ir_datasets already registers an id, our alias for it is skipped (the others still come)."""
    registry = ir_datasets.registry._registered
    saved = {n: registry.pop(n) for n in ik.UPSTREAM_IDS}
    saved_names = list(base.REGISTERED_DATASETS)
    try:
        for n in ik.UPSTREAM_IDS:
            base.REGISTERED_DATASETS.remove(n)
        upstream = ir_datasets.Dataset()
        registry["trec-ikat/2023"] = upstream
        assert ik_irds._register_upstream_aliases() == ["trec-ikat/2023/judged", "trec-ikat/2023/judged/ptkb"]
        assert registry["trec-ikat/2023"] is upstream and "trec-ikat/2023" not in base.REGISTERED_DATASETS
    finally:
        for n in ik.UPSTREAM_IDS:
            registry.pop(n, None)
        registry.update(saved)
        base.REGISTERED_DATASETS[:] = saved_names
