"""iKAT 2023 datasets on the real topics and qrels (read in place through a symlink, never copied).

Expected counts come from ../shared/data/ikat2023/SOURCE.md and from parsing the files with plain
``json`` / ``str.split`` in the tests.
"""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path

import ir_datasets
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.ikat2023 import data as ik


@pytest.fixture()
def raw_test(ikat2023_dir: Path) -> list[dict]:
    return json.loads((ikat2023_dir / "2023_test_topics.json").read_text(encoding="utf-8"))


def test_turn_counts(ikat_root: Path):
    counts = {name: sum(1 for _ in ir_datasets.load(name).queries_iter())
              for name in ("ikat/2023/test", "ikat/2023/test/judged", "ikat/2023/train")}
    assert counts == {"ikat/2023/test": 332, "ikat/2023/test/judged": 176, "ikat/2023/train": 95}
    assert ir_datasets.load("ikat/2023/test").queries_count() == 332
    assert len({q.conversation_id for q in ir_datasets.load("ikat/2023/test").queries_iter()}) == 25
    assert len({q.conversation_id for q in ir_datasets.load("ikat/2023/train").queries_iter()}) == 11


def test_passage_qrels(ikat_root: Path, ikat2023_dir: Path):
    qrels = list(ir_datasets.load("ikat/2023/test/judged").qrels_iter())
    assert len(qrels) == 34183
    assert len({q.query_id for q in qrels}) == 176
    grades = collections.Counter(q.relevance for q in qrels)
    assert grades == {0: 25467, 1: 4131, 2: 2733, 3: 1542, 4: 310}
    assert ("9-1_3", "clueweb22-en0000-06-17856:4", 2) in {(q.query_id, q.doc_id, q.relevance) for q in qrels}
    # the qrels DataFrame accessor agrees with the file parsed here
    raw = [line.split() for line in (ikat2023_dir / "2023-qrels.all-turns.txt").open()]
    frame = ik.ikat_qrels()
    assert list(zip(frame["query_id"], frame["doc_id"], frame["relevance"], strict=True)) == [
        (r[0], r[2], int(r[3])) for r in raw]
    # 20 judged turns have no passage with grade >= 2 (SOURCE.md)
    best = frame.groupby("query_id")["relevance"].max()
    assert int((best < 2).sum()) == 20
    assert ir_datasets.load("ikat/2023/test").qrels_defs()[4]
    assert not ir_datasets.load("ikat/2023/train").has_qrels()


def test_query_lookup_carries_everything(ikat_root: Path, raw_test: list[dict]):
    queries = {q.query_id: q for q in ir_datasets.load("ikat/2023/test").queries_iter()}
    conv = next(c for c in raw_test if c["number"] == "9-1")
    turn3 = conv["turns"][2]
    q = queries["9-1_3"]
    assert q.text == q.utterance == turn3["utterance"]
    assert q.resolved_utterance == turn3["resolved_utterance"]
    assert q.response == turn3["response"]
    assert (q.conversation_id, q.topic_id, q.turn, q.title) == ("9-1", "9", 3, conv["title"])
    assert dict(q.ptkb) == conv["ptkb"]
    assert q.ptkb_provenance == tuple(str(p) for p in turn3["ptkb_provenance"])
    assert q.response_provenance == tuple(turn3["response_provenance"])
    # previous turns, in order, with the canonical responses
    assert [h.turn_id for h in q.history] == ["9-1_1", "9-1_2"]
    assert q.history[0].utterance == conv["turns"][0]["utterance"]
    assert q.history[1].response == conv["turns"][1]["response"]
    assert queries["9-1_1"].history == ()
    # the topics DataFrame (rm.topics) matches the queries
    topics = rm.topics("ikat/2023/test").set_index("query_id")
    assert topics.loc["9-1_3", "resolved_utterance"] == turn3["resolved_utterance"]
    assert topics.loc["9-1_3", "turn"] == 3
    judged = rm.topics("ikat/2023/test/judged")
    assert len(judged) == 176 and set(judged["query_id"]) <= set(topics.index)


def test_ptkb_qrels_both_versions(ikat_root: Path, raw_test: list[dict]):
    org = ik.ptkb_qrels("org")
    nist = ik.ptkb_qrels("nist")
    assert org["query_id"].nunique() == 112 and nist["query_id"].nunique() == 98
    assert set(org["relevance"]) <= {0, 1} and set(nist["relevance"]) <= {0, 1}
    # SOURCE.md: org equals the topics' ptkb_provenance exactly (on the turns it judges)
    provenance = {f"{c['number']}_{t['turn_id']}": {str(p) for p in t["ptkb_provenance"]}
                  for c in raw_test for t in c["turns"]}
    relevant = org[org["relevance"] == 1].groupby("query_id")["doc_id"].agg(set)
    for qid in org["query_id"].unique():
        assert relevant.get(qid, set()) == provenance[qid], qid
    # every statement id judged exists in that conversation's PTKB
    ptkb = ik.ikat_ptkb("test")
    for frame in (org, nist):
        for qid, sid in zip(frame["query_id"], frame["doc_id"], strict=True):
            assert sid in ptkb[qid.rsplit("_", 1)[0]]
    for version, n_turns in (("org", 112), ("nist", 98)):
        ds = ir_datasets.load(f"ikat/2023/test/ptkb/{version}")
        assert sum(1 for _ in ds.queries_iter()) == n_turns
        assert sum(1 for _ in ds.qrels_iter()) == len(ik.ptkb_qrels(version))
        assert not ds.has_docs()
    with pytest.raises(ValueError, match="org"):
        ik.ptkb_qrels("nsit")


def test_passage_collection_is_the_users_copy(ikat_root: Path, tmp_path: Path, ikat2023_dir: Path, monkeypatch):
    with pytest.raises(ik.MissingDataError, match=r"licensed.*ikat2023/passages"):
        next(iter(ir_datasets.load("ikat/2023/test").docs_iter()))
    # a user root with the files linked one by one and a (tiny, made-up) passages folder
    root = tmp_path / "user"
    folder = root / "ikat2023"
    (folder / "passages").mkdir(parents=True)
    for f in ikat2023_dir.iterdir():
        (folder / f.name).symlink_to(f)
    (folder / "passages" / "a.jsonl").write_text(
        json.dumps({"id": "clueweb22-en0000-00-00001:0", "contents": "made-up text", "url": "http://x"}) + "\n",
        encoding="utf-8")
    with gzip.open(folder / "passages" / "b.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps({"id": "clueweb22-en0000-00-00002:3", "contents": "more", "url": "http://y"}) + "\n")
    monkeypatch.setenv("RETECO_DATA", str(root))
    docs = list(ir_datasets.load("ikat/2023/test").docs_iter())
    assert [(d.doc_id, d.text) for d in docs] == [("clueweb22-en0000-00-00001:0", "made-up text"),
                                                  ("clueweb22-en0000-00-00002:3", "more")]
    assert ik.passages_dir() == folder / "passages"


def test_missing_topics_file_message(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RETECO_DATA", str(tmp_path))
    with pytest.raises(ik.MissingDataError, match=r"put it at .*ikat2023/2023_test_topics\.json"):
        ik.load_ikat_topics("test")
    with pytest.raises(ValueError, match="split"):
        ik.load_ikat_topics("dev")


def test_ir_datasets_export_keeps_every_field(ikat_root: Path, capsys):
    from reteco_measures.cli.main import main

    assert main(["datasets", "export", "ikat/2023/test/judged", "queries", "--format", "jsonl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 176
    first = json.loads(lines[0])
    assert set(first) == set(ik.IkatQuery._fields)  # nothing skipped (tuples of str / named tuples)
    assert first["query_id"] == "9-1_3" and first["ptkb"][0][0] == "1" and len(first["history"]) == 2
