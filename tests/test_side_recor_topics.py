"""The organisers' RECOR topics (``benchmark.jsonl``: conversation records with ``turns``) are
accepted by ``load_topics`` and so by ``eval`` / ``compare --topics ... --by domain``, as ``score``
and ``leaderboard --topics`` accept them.

Expected values: pytrec_eval's ``ndcg_cut_10`` per turn, grouped by the ``task`` field of each
conversation as read here with ``json`` (never from our own output)."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.cli.main import main
from reteco_measures.errors import DataFormatWarning


def _files(recor_sample_dir: Path, tmp_path: Path) -> tuple[Path, Path, Path, dict[str, float], dict[str, str]]:
    topics = recor_sample_dir / "benchmark.jsonl"
    qrels_path = recor_sample_dir / "qrels.txt"
    domain_of = {}
    for line in topics.read_text(encoding="utf-8").splitlines():
        if line.strip():
            conv = json.loads(line)
            for turn in conv["turns"]:
                domain_of[f"{conv['id']}_turn_{turn['turn_id']}"] = conv["task"].lower()
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_path.read_text().splitlines():
        q, _, d, rel = line.split()
        qrels.setdefault(q.replace("#turn", "_turn_"), {})[d] = int(rel)
    docs = sorted({d for rels in qrels.values() for d in rels})
    rng = random.Random(7)
    run: dict[str, dict[str, float]] = {}
    lines = []
    for q in sorted(qrels):
        ranked = rng.sample(docs, 12)
        run[q] = {d: float(12 - i) for i, d in enumerate(ranked)}
        lines += [f"{q} Q0 {d} {i + 1} {12 - i} sys\n" for i, d in enumerate(ranked)]
    run_path = tmp_path / "sys.run"
    run_path.write_text("".join(lines))
    per = {q: v["ndcg_cut_10"] for q, v in pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run).items()}
    return topics, qrels_path, run_path, per, domain_of


def _by_domain(per: dict[str, float], domain_of: dict[str, str]) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for q, v in per.items():
        out.setdefault(domain_of[q], []).append(v)
    return {d: sum(v) / len(v) for d, v in out.items()}


def test_load_topics_reads_conversation_records_as_turns(recor_sample_dir: Path, tmp_path: Path) -> None:
    topics, *_, domain_of = _files(recor_sample_dir, tmp_path)
    frame = rm.load_topics(topics)
    assert dict(zip(frame["query_id"], frame["domain"])) == domain_of
    assert frame["turn"].tolist() == [int(q.rsplit("_", 1)[1]) for q in frame["query_id"]]


def test_rm_evaluate_by_domain_with_the_organisers_topics(recor_sample_dir: Path, tmp_path: Path) -> None:
    topics, qrels, run, per, domain_of = _files(recor_sample_dir, tmp_path)
    frame = rm.evaluate(["nDCG@10"], str(qrels), str(run), topics=str(topics), by="domain", query_ids="normalize")
    got = frame.set_index("domain")["value"]
    for dom, value in _by_domain(per, domain_of).items():
        assert got[dom] == pytest.approx(value, abs=1e-9)
    assert got["(all)"] == pytest.approx(sum(per.values()) / len(per), abs=1e-9)


def test_cli_eval_and_compare_accept_the_organisers_topics(recor_sample_dir: Path, tmp_path: Path, capsys) -> None:
    topics, qrels, run, per, domain_of = _files(recor_sample_dir, tmp_path)
    expected = _by_domain(per, domain_of)
    code = main(["eval", str(qrels), str(run), "nDCG@10", "--topics", str(topics), "--by", "domain",
                 "--normalize-ids", "--format", "tsv", "--places", "10"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = {line.split("\t")[0]: float(line.split("\t")[2]) for line in out.splitlines()[1:]}
    for dom, value in expected.items():
        assert rows[dom] == pytest.approx(value, abs=1e-9)
    other = tmp_path / "other.run"
    other.write_text(run.read_text())
    code = main(["compare", str(qrels), str(run), str(other), "nDCG@10", "--topics", str(topics), "--by", "domain",
                 "--normalize-ids", "--format", "json", "--resamples", "50"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)["summary"]
    got = {r["domain"]: r["value"] for r in summary if r["run"] == "sys"}
    for dom, value in expected.items():
        assert got[dom] == pytest.approx(value, abs=1e-9)


def test_a_bad_turn_is_left_out_with_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "benchmark.jsonl"
    path.write_text(json.dumps({"id": "c1", "task": "Law", "turns": [{"turn_id": 1, "query": "a"},
                                                                     {"turn_id": "x", "query": "b"}]}) + "\n"
                    + json.dumps({"id": "c2", "task": "Law", "turns": "none"}) + "\n")
    with pytest.warns(DataFormatWarning, match=r"benchmark.jsonl:1: c1: turn 2: 'turn_id' 'x'") as caught:
        frame = rm.load_topics(path)
    assert "benchmark.jsonl:2: c2: 'turns' is not a list" in str(caught[0].message)
    assert frame[["query_id", "domain", "turn"]].values.tolist() == [["c1_turn_1", "law", 1]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = tmp_path / "topics.jsonl"
        plain.write_text(json.dumps({"query_id": "q1", "domain": "law"}) + "\n")
        assert rm.load_topics(plain)["query_id"].tolist() == ["q1"]
