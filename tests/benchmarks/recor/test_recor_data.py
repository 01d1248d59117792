"""RECOR (RETECO Track 2) loaders: a tiny release tree built here, and the organisers' real sample.

The real sample is read in place from ../shared/data/recor_tempo_samples (never copied). Expected
counts come from its SOURCE.md and from parsing the files with plain ``json`` in the test.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import ir_datasets
import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.recor import data as rc
from reteco_measures.errors import DataFormatError, DataFormatWarning

# --------------------------------------------------------------------------------------------
# a tiny release tree: conversation "2" exists in both biology and earth_science


def _write_domain(base: Path, domain: str, conversations: list[dict], docs: list[str], qrels: list[str],
                  split: str = "dev") -> None:
    folder = base / "reteco" / "track2_recor" / domain
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"benchmark_{split}.json").write_text(json.dumps(conversations, indent=1), encoding="utf-8")
    (folder / f"qrels_{split}.txt").write_text("".join(line + "\n" for line in qrels), encoding="utf-8")
    (folder / "documents.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "content": f"text of {d}"}) + "\n" for d in docs), encoding="utf-8"
    )


def _turn(t: int, query: str, gold: list[str], history: str = "No previous conversation.") -> dict:
    return {"turn_id": t, "query": query, "answer": f"answer {t}", "gold_doc_ids": gold,
            "conversation_history": history}


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    _write_domain(
        tmp_path,
        "biology",
        [{"id": "2", "turns": [_turn(1, "why smell?", ["smell/A_1.txt"]),
                               _turn(2, "and taste?", ["smell/B_2.txt"], "Q: why smell?\nA: answer 1")]}],
        ["smell/A_1.txt", "smell/B_2.txt", "smell/C_3.txt"],
        ["2_turn_1 0 smell/A_1.txt 1", "2_turn_2 0 smell/B_2.txt 1"],
    )
    _write_domain(
        tmp_path,
        "earth_science",
        [{"id": "2", "turns": [_turn(1, "why rain?", ["rain/K_1.txt"])]},
         {"id": "7", "turns": [_turn(1, "what is magma?", ["rain/M_2.txt"])]}],
        ["rain/K_1.txt", "rain/M_2.txt"],
        ["2_turn_1 0 rain/K_1.txt 1", "7_turn_1 0 rain/M_2.txt 1"],
    )
    return tmp_path


def test_all_domains_ids_are_unique_and_qualified(release: Path):
    data = rc.load_recor("dev", root=release)
    assert data.domains == ["biology", "earth_science"]  # SPEC order
    assert data.qualified
    assert data.topics["query_id"].tolist() == [
        "biology/2_turn_1", "biology/2_turn_2", "earth_science/2_turn_1", "earth_science/7_turn_1"]
    assert data.topics["query_id"].is_unique
    assert data.topics["conversation_id"].tolist() == ["biology/2", "biology/2", "earth_science/2", "earth_science/7"]
    assert data.topics["release_query_id"].tolist() == ["2_turn_1", "2_turn_2", "2_turn_1", "7_turn_1"]
    assert data.topics["turn"].tolist() == [1, 2, 1, 1]
    assert data.topics["history"].tolist()[:2] == ["", "Q: why smell?\nA: answer 1"]
    # qrels use the same ids
    assert set(data.qrels["query_id"]) == set(data.topics["query_id"])
    assert data.qrels.loc[data.qrels["query_id"] == "earth_science/2_turn_1", "doc_id"].tolist() == ["rain/K_1.txt"]
    assert sorted(data.corpus["doc_id"]) == sorted(
        ["smell/A_1.txt", "smell/B_2.txt", "smell/C_3.txt", "rain/K_1.txt", "rain/M_2.txt"])
    assert not data.problems


def test_single_domain_keeps_release_ids(release: Path):
    data = rc.load_recor("dev", root=release, domains="earth_science")
    assert not data.qualified
    assert data.topics["query_id"].tolist() == ["2_turn_1", "7_turn_1"]
    assert data.qrels["query_id"].tolist() == ["2_turn_1", "7_turn_1"]


def test_ir_datasets_registration(release: Path, monkeypatch):
    monkeypatch.setenv("RETECO_DATA", str(release))
    ds = ir_datasets.load("reteco/recor/dev")
    queries = list(ds.queries_iter())
    assert [q.query_id for q in queries] == ["biology/2_turn_1", "biology/2_turn_2", "earth_science/2_turn_1",
                                             "earth_science/7_turn_1"]
    q = queries[1]
    assert (q.text, q.conversation_id, q.turn, q.domain) == ("and taste?", "biology/2", 2, "biology")
    assert q.history == "Q: why smell?\nA: answer 1" and q.gold_doc_ids == ("smell/B_2.txt",)
    assert ds.queries_count() == 4
    qrels = list(ds.qrels_iter())
    assert len(qrels) == 4 and qrels[2].query_id == "earth_science/2_turn_1" and qrels[2].relevance == 1
    docs = list(ds.docs_iter())
    assert len(docs) == 5 and docs[0].doc_id == "smell/A_1.txt" and docs[0].domain == "biology"
    assert docs[0].text == "text of smell/A_1.txt"
    one = ir_datasets.load("reteco/recor/earth_science/dev")
    assert [q.query_id for q in one.queries_iter()] == ["2_turn_1", "7_turn_1"]
    topics = rm.topics("reteco/recor/dev")
    assert {"query_id", "domain", "conversation_id", "turn"} <= set(topics.columns)


def test_missing_files_say_where_to_put_them(tmp_path: Path, release: Path):
    with pytest.raises(rc.MissingDataError, match=r"reteco/track2_recor"):
        rc.load_recor("dev", root=tmp_path / "nothing")
    (release / "reteco" / "track2_recor" / "biology" / "qrels_dev.txt").unlink()
    with pytest.raises(rc.MissingDataError, match=r"put it at .*biology/qrels_dev\.txt"):
        rc.load_recor("dev", root=release)
    with pytest.raises(rc.MissingDataError, match="benchmark_test.json"):
        rc.load_recor("test", root=release)


def test_hash_turn_ids_in_release_qrels_are_normalised_loudly_or_rejected(release: Path):
    qrels = release / "reteco" / "track2_recor" / "earth_science" / "qrels_dev.txt"
    qrels.write_text("2#turn1 0 rain/K_1.txt 1\n7#turn1 0 rain/M_2.txt 1\n", encoding="utf-8")
    with pytest.warns(DataFormatWarning, match="#turn"):
        data = rc.load_recor("dev", root=release)
    assert set(data.qrels["query_id"]) == set(data.topics["query_id"])
    assert any(p.kind == "id_form" for p in data.problems)
    with pytest.raises(DataFormatError) as err:
        rc.load_recor("dev", root=release, hash_turn_ids="reject")
    assert "qrels_dev.txt:1: 2#turn1" in str(err.value)


def test_qrels_topic_not_in_benchmark_is_reported(release: Path):
    qrels = release / "reteco" / "track2_recor" / "earth_science" / "qrels_dev.txt"
    qrels.write_text("2_turn_1 0 rain/K_1.txt 1\n9_turn_4 0 rain/M_2.txt 1\n", encoding="utf-8")
    data = rc.load_recor("dev", root=release)
    bad = [p for p in data.problems if p.kind == "unknown_query"]
    assert len(bad) == 1 and bad[0].query_id == "earth_science/9_turn_4" and bad[0].line == 2


def test_malformed_benchmark_records_are_reported_not_fatal(tmp_path: Path):
    convs = [
        {"id": "a", "turns": [_turn(1, "q", ["d"]), {"turn_id": "x", "query": "bad"}, _turn(1, "dup", [])]},
        {"turns": []},
        {"id": "b", "turns": "not a list"},
        {"id": "a", "turns": [_turn(1, "again", [])]},
    ]
    topics, problems = rc.conversations_to_topics(convs, "law", path="bench.json")
    assert topics["query_id"].tolist() == ["a_turn_1"]
    messages = [str(p) for p in problems]
    assert any("bench.json:1: a: turn 2: 'turn_id' 'x'" in m for m in messages)
    assert any("turn_id 1 is repeated" in m for m in messages)
    assert any("bench.json:2: -: conversation 2 has no 'id'" in m for m in messages)
    assert any("bench.json:3: b: 'turns' must be a list" in m for m in messages)
    assert any("bench.json:4: a: conversation id repeated" in m for m in messages)
    bad_json = tmp_path / "benchmark_dev.json"
    bad_json.write_text('[{"id": "a", "turns": [}]', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"benchmark_dev\.json:1"):
        rc.read_conversations(bad_json)


# --------------------------------------------------------------------------------------------
# run id mapping


def test_map_run_query_ids(release: Path):
    data = rc.load_recor("dev", root=release)
    run = pd.DataFrame(
        {
            "query_id": ["biology/2_turn_1", "7_turn_1", "2_turn_2", "2_turn_1", "7#turn1", "nope_turn_1"],
            "doc_id": ["smell/A_1.txt", "rain/M_2.txt", "smell/B_2.txt", "rain/K_1.txt", "rain/K_1.txt", "x"],
            "score": [1.0] * 6,
            "line": [1, 2, 3, 4, 5, 6],
        }
    )
    mapped, problems = rc.map_run_query_ids(run, data.topics)
    # 7_turn_1 exists only in earth_science; 2_turn_2 only in biology; 2_turn_1 is ambiguous
    assert mapped["query_id"].tolist() == ["biology/2_turn_1", "earth_science/7_turn_1", "biology/2_turn_2",
                                           "earth_science/7_turn_1", "nope_turn_1"]
    kinds = {(p.kind, p.query_id, p.line) for p in problems}
    assert ("ambiguous_query", "2_turn_1", 4) in kinds
    assert ("id_form", "7#turn1", 5) in kinds
    rejected, problems = rc.map_run_query_ids(run, data.topics, hash_turn_ids="reject")
    assert "7#turn1" not in rejected["query_id"].tolist() and len(rejected) == 4
    assert any(p.kind == "id_form" and "discarded" in p.message for p in problems)


# --------------------------------------------------------------------------------------------
# the organisers' real sample (../shared/data/recor_tempo_samples/reteco_sample/track2_recor)


def test_organiser_sample_parses_and_maps_hash_ids(recor_sample_dir: Path):
    with pytest.warns(DataFormatWarning, match="#turn"):
        data = rc.load_organiser_sample(recor_sample_dir)
    # counts from SOURCE.md: 4 conversations, 13 turns, 32 qrels lines, 15 documents
    assert data.topics["conversation_id"].nunique() == 4
    assert len(data.topics) == 13
    assert len(data.qrels) == 32
    assert len(data.corpus) == 15
    assert sorted(data.domains) == ["biology", "drones", "earth_science", "law"]  # "Drones" record task: drones
    # every qrels topic is a turn (none left in the '#turn' form, none unknown)
    assert set(data.qrels["query_id"]) <= set(data.topics["query_id"])
    assert not [p for p in data.problems if p.kind == "unknown_query"]
    # independent check: qrels == per-turn gold_doc_ids of benchmark.jsonl, parsed here with json
    gold = set()
    domains = {}
    for line in (recor_sample_dir / "benchmark.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        domains[str(rec["id"])] = rec["task"].lower()
        for t in rec["turns"]:
            gold |= {(f"{rec['task'].lower()}/{rec['id']}_turn_{t['turn_id']}", d) for d in t["gold_doc_ids"]}
    assert set(zip(data.qrels["query_id"], data.qrels["doc_id"], strict=True)) == gold
    assert domains == {"ex_111149": "law", "ex_3025": "drones", "2": "biology", "5": "earth_science"}
    first = data.topics.iloc[0]
    assert first["query_id"] == "law/ex_111149_turn_1" and first["history"] == ""
    assert data.topics.iloc[1]["history"].startswith("Q: ")
    assert set(data.corpus["domain"]) == {"law", "drones", "biology", "earth_science"}


def test_organiser_sample_reject_mode_is_loud(recor_sample_dir: Path):
    with pytest.raises(DataFormatError) as err:
        rc.load_organiser_sample(recor_sample_dir, hash_turn_ids="reject")
    assert len(err.value.problems) == 32
    assert "qrels.txt:1: ex_111149#turn1" in str(err.value)


def test_perfect_run_on_the_sample_scores_one_whatever_the_id_form(recor_sample_dir: Path):
    """A correct run must never silently score 0 because of the '#turn' id form."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataFormatWarning)
        data = rc.load_organiser_sample(recor_sample_dir)
    gold = data.qrels
    for form in ("qualified", "plain", "hash"):
        if form == "qualified":
            qids = gold["query_id"]
        else:
            plain = gold["query_id"].str.split("/", n=1).str[1]
            qids = plain if form == "plain" else plain.str.replace("_turn_", "#turn", regex=False)
        run = pd.DataFrame({"query_id": qids, "doc_id": gold["doc_id"], "score": 1.0, "line": range(1, 33)})
        mapped, problems = rc.map_run_query_ids(run, data.topics)
        assert len(mapped) == 32
        value = rm.calc_aggregate(["TurnNDCG@10"], gold, mapped[["query_id", "doc_id", "score"]])
        assert list(value.values())[0] == pytest.approx(1.0), form
        assert (form == "hash") == any(p.kind == "id_form" for p in problems)


def test_ir_datasets_export(release: Path, monkeypatch, capsys):
    from reteco_measures.cli.main import main

    monkeypatch.setenv("RETECO_DATA", str(release))
    assert main(["datasets", "export", "reteco/recor/dev", "queries", "--format", "jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["query_id"] for r in records][:2] == ["biology/2_turn_1", "biology/2_turn_2"]
    assert set(records[0]) == set(rc.RecorQuery._fields)
    assert main(["datasets", "export", "reteco/recor/dev", "qrels"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "biology/2_turn_1 0 smell/A_1.txt 1"
