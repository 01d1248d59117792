"""TEMPO (RETECO Track 1) loaders: a tiny release tree built in a temp dir, the organisers' real
sample (read in place), ir_datasets registration, docstore, export through our console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ir_datasets
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tempo_tree import TRACK, write_domain, write_two_domain_release

import reteco_measures as rm
from reteco_measures.benchmarks.tempo.data import (
    TEMPO_DOMAINS,
    load_tempo,
    read_doc_ids,
    read_documents,
    read_examples,
    read_steps,
    read_tempo_qrels,
    tempo_topics,
)
from reteco_measures.cli.main import main as cli_main
from reteco_measures.datasets.base import MissingDataError
from reteco_measures.errors import DataFormatError, DataFormatWarning


@pytest.fixture
def release(tmp_path: Path, monkeypatch) -> Path:
    """A two-domain release (bitcoin, law) under tmp_path/data; RETECO_DATA points at it."""
    root = tmp_path / "data"
    write_two_domain_release(root)
    monkeypatch.setenv("RETECO_DATA", str(root))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    return root


# ------------------------------------------------------------------------------------------------
# a release tree


def test_1a_dataset_queries_qrels_docs(release):
    ds = ir_datasets.load("reteco/tempo/bitcoin/dev")
    queries = list(ds.queries_iter())
    assert [q.query_id for q in queries] == ["100_1", "101_2"]
    assert queries[0].text == 'Title 100_1?\n<p>Body &quot;100_1&quot;</p>'  # raw HTML kept
    assert queries[0].domain == "bitcoin"
    assert [(q.query_id, q.doc_id, q.relevance) for q in ds.qrels_iter()] == [
        ("100_1", "bitcoin/a.txt", 1), ("100_1", "bitcoin/b.txt", 1), ("100_1", "bitcoin/c.txt", 1),
        ("101_2", "bitcoin/d.txt", 1)]
    assert [d.doc_id for d in ds.docs_iter()] == ["bitcoin/a.txt", "bitcoin/b.txt", "bitcoin/c.txt",
                                                  "bitcoin/d.txt", "bitcoin/e.txt"]
    assert ds.docs_count() == 5
    store = ds.docs_store()
    assert store.get("bitcoin/c.txt").text == "<p>Text of bitcoin/c.txt &amp; more</p>"
    assert set(store.get_many(["bitcoin/a.txt", "bitcoin/zzz.txt"])) == {"bitcoin/a.txt"}
    assert ds.docs_count() == 5  # from the built store now


def test_1b_dataset_step_topics_and_qrels(release):
    ds = ir_datasets.load("reteco/tempo/bitcoin/dev/steps")
    steps = list(ds.queries_iter())
    assert [(s.query_id, s.parent_id, s.step, s.text) for s in steps] == [
        ("100_1_step1", "100_1", 1, "do step 1"), ("100_1_step2", "100_1", 2, "do step 2"),
        ("101_2_step1", "101_2", 1, "do step 1")]
    assert [(q.query_id, q.doc_id) for q in ds.qrels_iter()] == [
        ("100_1_step1", "bitcoin/a.txt"), ("100_1_step2", "bitcoin/b.txt"), ("100_1_step2", "bitcoin/c.txt"),
        ("101_2_step1", "bitcoin/d.txt")]


def test_all_domains_dataset_and_docstore_routing(release, monkeypatch):
    # the all-domains datasets cover the 13 official domains: with only two present, the message
    # names the first missing file
    with pytest.raises(MissingDataError, match=r"cardano/examples_dev\.jsonl"):
        list(ir_datasets.load("reteco/tempo/dev").queries_iter())
    # restricted to the present domains, the all-domain machinery works (ids kept as released)
    topics = tempo_topics("dev", ["bitcoin", "law"])
    assert set(topics.loc[topics["kind"] == "query", "query_id"]) == {"100_1", "101_2", "200_3"}
    from reteco_measures.benchmarks.tempo.irds import _tempo_docs

    store = _tempo_docs(("bitcoin", "law")).docs_store()
    got = store.get_many(["law/z.txt", "bitcoin/e.txt", "nowhere/q.txt"])
    assert set(got) == {"law/z.txt", "bitcoin/e.txt"} and got["law/z.txt"].domain == "law"
    assert store.count() == 8


def test_all_domains_ids_must_be_unique(release):
    write_domain(release, "history", [("100_1", [["history/h.txt"]])], ["history/h.txt"])
    with pytest.raises(DataFormatError, match=r"100_1.*bitcoin, history"):
        tempo_topics("dev", ["bitcoin", "history"])


def test_topics_required_periods_guidance_or_steps(release):
    topics = rm.topics("reteco/tempo/bitcoin/dev")
    q = topics[topics["kind"] == "query"].set_index("query_id")
    assert q.loc["100_1", "required_periods"] == ["2017", "2021"] and q.loc["100_1", "periods_source"] == "guidance"
    assert q.loc["101_2", "required_periods"] == ["101_2_step1"] and q.loc["101_2", "periods_source"] == "steps"
    assert [s["gold_ids"] for s in q.loc["100_1", "steps"]] == [["bitcoin/a.txt"], ["bitcoin/b.txt", "bitcoin/c.txt"]]
    s = topics[topics["kind"] == "step"].set_index("query_id")
    assert s.loc["100_1_step2", "parent_id"] == "100_1" and s.loc["100_1_step2", "domain"] == "bitcoin"
    assert s.loc["100_1_step2", "required_periods"] == ["100_1_step2"]
    # periods='steps' ignores the guidance anchors
    q2 = tempo_topics("dev", "bitcoin", periods="steps").set_index("query_id")
    assert q2.loc["100_1", "required_periods"] == ["100_1_step1", "100_1_step2"]
    # the 1b dataset has the same topics; the loaded dataset object works as well as its name
    assert rm.topics(ir_datasets.load("reteco/tempo/bitcoin/dev/steps")).equals(topics)


def test_topics_drive_the_oracle_measures(release):
    # bitcoin 100_1: steps {a}, {b, c}; 101_2: step {d}. Run: 100_1 -> [b, x], 101_2 -> [d]
    # TC@10: 100_1 = 1/2 (step 2 via b), 101_2 = 1/1 -> 0.75; StepNDCG on the step qrels
    topics = rm.topics("reteco/tempo/bitcoin/dev")
    qrels = pd.DataFrame([(q.query_id, q.doc_id, q.relevance) for q in
                          ir_datasets.load("reteco/tempo/bitcoin/dev").qrels_iter()],
                         columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame({"query_id": ["100_1", "100_1", "101_2"], "doc_id": ["bitcoin/b.txt", "x", "bitcoin/d.txt"],
                        "score": [2.0, 1.0, 1.0]})
    assert rm.calc_aggregate(["TC@10"], qrels, run, topics=topics)[rm.TC @ 10] == pytest.approx(0.75)


def test_missing_file_and_missing_root_messages(release, monkeypatch):
    (release / TRACK / "bitcoin" / "qrels_dev.txt").unlink()
    with pytest.raises(MissingDataError) as info:
        list(ir_datasets.load("reteco/tempo/bitcoin/dev").qrels_iter())
    msg = str(info.value)
    assert "qrels_dev.txt" in msg and str(release / TRACK / "bitcoin" / "qrels_dev.txt") in msg
    assert "$RETECO_DATA/reteco/track1_tempo/bitcoin/qrels_dev.txt" in msg
    monkeypatch.delenv("RETECO_DATA")
    with pytest.raises(MissingDataError, match="RETECO_DATA"):
        list(ir_datasets.load("reteco/tempo/law/dev").queries_iter())


def test_malformed_lines_are_reported_and_good_rows_kept(tmp_path):
    path = tmp_path / "examples_dev.jsonl"
    path.write_text('{"id": "1_1", "query": "a", "gold_ids": ["x"]}\n{not json\n'
                    '{"query": "no id"}\n{"id": "2_2", "query": "b", "gold_ids": "x"}\n', encoding="utf-8")
    with pytest.warns(DataFormatWarning) as record:
        frame = read_examples(path, "law")
    text = " ".join(str(w.message) for w in record)
    assert f"{path}:2" in text and f"{path}:3" in text and f"{path}:4: 2_2" in text
    assert frame["query_id"].tolist() == ["1_1", "2_2"]  # the record with a bad gold list is kept (no gold)
    with pytest.raises(DataFormatError):
        read_examples(path, "law", on_bad_lines="error")


def test_load_tempo_for_scoring(release):
    data = load_tempo("dev", root=release)
    assert data.domains == ["bitcoin", "law"] and not data.steps
    assert data.query_ids == ["100_1", "101_2", "200_3"]
    assert data.corpus["doc_id"].tolist()[-3:] == ["law/x.txt", "law/y.txt", "law/z.txt"]
    assert data.qrels.groupby("domain").size().to_dict() == {"bitcoin": 4, "law": 2}
    steps = load_tempo("dev", steps=True, root=release, domains=["law"])
    assert steps.query_ids == ["200_3_step1", "200_3_step2"]
    # a qrels topic that the topics do not know is kept and reported
    with open(release / TRACK / "law" / "qrels_dev.txt", "a", encoding="utf-8") as f:
        f.write("999_9\t0\tlaw/z.txt\t1\n")
    data = load_tempo("dev", root=release, domains="law")
    assert [(p.query_id, p.line, p.kind) for p in data.problems] == [("999_9", 3, "unknown_query")]


# ------------------------------------------------------------------------------------------------
# export through our console script


def test_export_through_cli(release, capsys):
    assert cli_main(["datasets", "export", "reteco/tempo/bitcoin/dev", "qrels"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "100_1 0 bitcoin/a.txt 1" and len(out) == 4
    assert cli_main(["datasets", "export", "reteco/tempo/law/dev/steps", "queries", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[1] == {"query_id": "200_3_step2", "text": "do step 2", "parent_id": "200_3", "step": 2,
                       "domain": "law"}
    assert cli_main(["datasets", "export", "reteco/tempo/law/dev", "docs", "--fields", "doc_id"]) == 0
    assert capsys.readouterr().out.split() == ["law/x.txt", "law/y.txt", "law/z.txt"]


def test_export_console_script_missing_file(release):
    (release / TRACK / "law" / "documents.jsonl").unlink()
    exe = Path(sys.executable).with_name("reteco-measures")
    proc = subprocess.run([str(exe), "datasets", "export", "reteco/tempo/law/dev", "docs"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert "missing TEMPO law documents: put it at" in proc.stderr and "law/documents.jsonl" in proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------------------------
# the organisers' real sample (stripped layout: one folder, no domain sub-folders, no step lists)


def test_organiser_sample_ids_html_and_qrels_consistency(tempo_sample_dir):
    examples = read_examples(tempo_sample_dir / "examples.jsonl", "sample")
    assert examples["query_id"].tolist() == ["122291_22", "59375_163", "9808_315", "79305_12", "18988_650"]
    assert [len(g) for g in examples["gold_ids"]] == [5, 5, 7, 5, 4]
    assert examples["text"].str.contains("<p>").all()  # raw HTML, title then body
    assert examples["text"].str.contains("&amp;|&quot;").sum() == 3  # entities kept, not unescaped
    assert examples["text"].str.contains("<a href").sum() == 3
    assert examples["text"].str.contains("\n").all()
    docs = list(read_documents(tempo_sample_dir / "documents.jsonl", "sample"))
    ids = [d.doc_id for d in docs]
    assert len(ids) == 26 and len(set(ids)) == 26
    assert all(re_id.count("/") == 1 and re_id.endswith(".txt") for re_id in ids)  # <domain>/<hex>_<n>.txt
    assert sum("\u2014" in d.text for d in docs) == 3  # non-ASCII (em dash) decoded, not mangled
    assert read_doc_ids(tempo_sample_dir / "documents.jsonl")["doc_id"].tolist() == ids  # fast id reader agrees
    qrels = read_tempo_qrels(tempo_sample_dir / "qrels.txt")
    assert len(qrels) == 26
    from_qrels = set(zip(qrels["query_id"], qrels["doc_id"], strict=True))
    from_examples = {(q, d) for q, g in zip(examples["query_id"], examples["gold_ids"], strict=True) for d in g}
    assert from_qrels == from_examples
    assert set(qrels["doc_id"]) <= set(ids)
    # the stripped steps file has no step lists: every record reads as a query without steps
    steps = read_steps(tempo_sample_dir / "steps.jsonl", "sample")
    assert steps["query_id"].tolist() == examples["query_id"].tolist()
    assert all(s == [] for s in steps["steps"])


def test_organiser_sample_as_a_release_tree(tempo_sample_dir, tempo_sample_release, tmp_path, monkeypatch):
    """Lay the real sample out as a release (folders by the doc ids' domain prefix) and read it back
    through ir_datasets: real ids with slashes, real HTML text, qrels per domain."""
    root = tempo_sample_release
    docs = [json.loads(line) for line in (tempo_sample_dir / "documents.jsonl").read_text(encoding="utf-8").splitlines()]
    monkeypatch.setenv("RETECO_DATA", str(root))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    ds = ir_datasets.load("reteco/tempo/genealogy/dev")
    assert [q.query_id for q in ds.queries_iter()] == ["9808_315"]
    assert len(list(ds.qrels_iter())) == 7 and ds.docs_count() == 7
    first = next(d for d in docs if d["id"].startswith("genealogy/"))
    assert ds.docs_store().get(first["id"]).text == first["content"]
    # no steps file: 1a topics without oracle periods (TC is not defined), no error
    topics = rm.topics("reteco/tempo/genealogy/dev")
    assert topics["periods_source"].tolist() == ["none"]
    assert tempo_domains_present(root) == ["bitcoin", "economics", "genealogy", "history", "hsm"]


def tempo_domains_present(root: Path) -> list[str]:
    from reteco_measures.benchmarks.tempo.data import tempo_domains

    return tempo_domains("dev", root)


# ------------------------------------------------------------------------------------------------
# the fast document-id reader against json.loads


_ids = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(records=st.lists(st.tuples(_ids, st.text(max_size=30), st.booleans(), st.booleans()), min_size=1,
                        max_size=8))
def test_read_doc_ids_matches_json(tmp_path_factory, records):
    path = tmp_path_factory.mktemp("ids") / "documents.jsonl"
    lines = []
    for did, text, id_first, key_doc_id in records:
        content = f'{text} ,"id": "fake" \\ "x"'  # a decoy key inside the text
        key = "doc_id" if key_doc_id else "id"
        rec = {key: did, "content": content} if id_first else {"content": content, key: did}
        lines.append(json.dumps(rec, ensure_ascii=bool(id_first)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert read_doc_ids(path)["doc_id"].tolist() == [r[0] for r in records]


def test_registered_names():
    names = set(rm.datasets.REGISTERED_DATASETS)
    for dom in TEMPO_DOMAINS:
        for split in ("train", "dev"):
            assert f"reteco/tempo/{dom}/{split}" in names and f"reteco/tempo/{dom}/{split}/steps" in names
    assert {"reteco/tempo", "reteco/tempo/dev", "reteco/tempo/train/steps", "reteco/tempo/hsm"} <= names


def test_topics_feed_the_temporal_judge(release, tmp_path):
    """The query rows of rm.topics, written as the docs show, are valid input of `judge temporal`."""
    from reteco_measures.judge.inputs import read_temporal_topics

    topics = rm.topics("reteco/tempo/bitcoin/dev")
    queries = topics[topics["kind"] == "query"][["query_id", "text", "required_periods"]]
    path = tmp_path / "temporal_topics.jsonl"
    queries.to_json(path, orient="records", lines=True, force_ascii=False)
    parsed, problems = read_temporal_topics(path)
    assert problems == []
    assert parsed["100_1"]["required_periods"] == ["2017", "2021"]
    assert parsed["101_2"]["required_periods"] == ["101_2_step1"]
    assert parsed["100_1"]["query"].startswith("Title 100_1?")


def test_v11_duplicate_maps_are_read(tmp_path: Path) -> None:
    from tempo_tree import write_v11_release

    from reteco_measures.benchmarks.tempo.data import load_tempo, map_duplicates
    from reteco_measures.errors import DataFormatError

    root = write_v11_release(tmp_path)
    data = load_tempo("dev", root=root)
    assert sorted(map(tuple, data.duplicates[["removed", "kept", "domain"]].to_numpy().tolist())) == [
        ("bitcoin/a2.txt", "bitcoin/a.txt", "bitcoin"), ("law/x2.txt", "law/x.txt", "law")]
    mapped, n = map_duplicates(data.qrels, data.duplicates)
    assert n == 1 and "law/x2.txt" not in set(mapped["doc_id"]) and "law/x.txt" in set(mapped["doc_id"])
    # a release without maps: no duplicates, nothing renamed
    assert load_tempo("dev", root=write_two_domain_release(tmp_path / "v10")).duplicates.empty
    bad = root / TRACK / "law" / "duplicate_map.json"
    bad.write_text('["law/x2.txt"]', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"law/duplicate_map.json: .*a duplicate map is a JSON object"):
        load_tempo("dev", root=root)


def test_corpus_ids_are_parsed_once_per_file_version(tmp_path, monkeypatch):
    """A documents file is parsed once per process (keyed by path, size and modification time):
    a second read parses nothing, a changed file is parsed again, and `load_tempo` gives the
    same corpus frame for the same release (indexes built on it are built once)."""
    import os

    from reteco_measures.benchmarks.tempo import data as reteco_tempo

    reteco_tempo.clear_corpus_cache()
    parsed: list[Path] = []
    real = reteco_tempo._parse_doc_ids

    def spy(p, domain):
        parsed.append(p)
        return real(p, domain)

    monkeypatch.setattr(reteco_tempo, "_parse_doc_ids", spy)
    path = tmp_path / "documents.jsonl"
    path.write_text('{"id": "a", "content": "x"}\n{"id": "b", "content": "y"}\n', encoding="utf-8")
    first = read_doc_ids(path, "law")
    first["domain"] = "changed"  # a caller's frame is its own
    assert read_doc_ids(path, "law")[["doc_id", "domain"]].values.tolist() == [["a", "law"], ["b", "law"]]
    assert len(parsed) == 1
    path.write_text('{"id": "a", "content": "x"}\n{"id": "c", "content": "yy"}\n', encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a new version of the file, whatever the clock's resolution
    assert read_doc_ids(path, "law")["doc_id"].tolist() == ["a", "c"]
    assert len(parsed) == 2

    root = tmp_path / "data"
    write_two_domain_release(root)
    one = load_tempo("dev", root=root)
    two = load_tempo("dev", root=root)
    assert one.corpus is two.corpus and len(parsed) == 4  # two domains, each parsed once
