"""``reteco-measures score reteco-1a|reteco-1b``: hand-computed official scores and diagnostics on
a tiny release tree, pytrec_eval side by side, frozen labels, the demo on the bundled sample, and
the sample generator's determinism."""

from __future__ import annotations

import filecmp
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval
from generate_reteco_tempo import generate
from tempo_tree import write_jsonl, write_two_domain_release

from reteco_measures.cli.main import main as cli_main
from reteco_measures.cli.score_cmd import demo_argv
from reteco_measures.sample import sample_root

L3 = math.log2(3)
TRACK = Path("reteco") / "track1_tempo"

# bitcoin: 100_1 gold {a, b, c}, steps {a}, {b, c}; 101_2 gold {d}, step {d}
# law:     200_3 gold {x, y}, steps {x}, {y}
RUN_1A = """\
100_1 Q0 bitcoin/a.txt 1 5 r
100_1 Q0 bitcoin/a.txt 2 4.5 r
100_1 Q0 bitcoin/nope.txt 3 4 r
100_1 Q0 law/x.txt 4 3.5 r
100_1 Q0 bitcoin/e.txt 5 3 r
100_1 Q0 bitcoin/b.txt 6 2 r
200_3 Q0 law/y.txt 1 2 r
200_3 Q0 law/z.txt 2 2 r
"""
# cleaned: 100_1 -> [a, e, b]; 101_2 missing; 200_3 tie broken by doc id descending -> [z, y]
NDCG_100_1 = (1 + 1 / 2) / (1 + 1 / L3 + 1 / 2)  # gains [1,0,1], three relevant: 1.5 / 2.130930 = 0.703918
NDCG_200_3 = (1 / L3) / (1 + 1 / L3)  # gains [0,1], two relevant: 0.630930 / 1.630930 = 0.386853

RUN_1B = """\
100_1_step1 Q0 bitcoin/a.txt 1 3 r
100_1_step2 Q0 bitcoin/e.txt 1 3 r
100_1_step2 Q0 bitcoin/c.txt 2 2 r
200_3_step1 Q0 law/x.txt 1 3 r
200_3_step2 Q0 law/z.txt 1 3 r
"""


@pytest.fixture
def release(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "data"
    write_two_domain_release(root)
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    monkeypatch.delenv("RETECO_DATA", raising=False)
    (tmp_path / "run1a.txt").write_text(RUN_1A, encoding="utf-8")
    (tmp_path / "run1b.txt").write_text(RUN_1B, encoding="utf-8")
    return root


def score(capsys, *argv: str) -> dict:
    assert cli_main(["score", *argv, "--format", "json", "--per-query"]) == 0
    return json.loads(capsys.readouterr().out)


def rows_by(records: list[dict], key: str) -> dict:
    return {r[key]: r for r in records}


def test_1a_official_and_diagnostics(release, capsys):
    out = score(capsys, "reteco-1a", str(release.parent / "run1a.txt"), "--data", str(release), "--split", "dev")
    assert out["official"]["measure"] == "nDCG@10" and out["queries"] == 3 and out["labels"] == "oracle"
    assert out["official"]["value"] == pytest.approx((NDCG_100_1 + 0 + NDCG_200_3) / 3, abs=1e-12)
    scores = rows_by(out["scores"], "measure")
    # TC@10 (oracle): 100_1 both steps covered (a; b) = 1, 101_2 missing = 0, 200_3 only y = 1/2
    assert scores["TC@10"]["value"] == pytest.approx((1 + 0 + 0.5) / 3)
    # nDCG|FC@10: only 100_1 is fully covered
    # (JSON names the measure as ir_measures parses it: nDCG_FC@10; tables print nDCG|FC@10)
    assert scores["nDCG_FC@10"]["value"] == pytest.approx(NDCG_100_1) and scores["nDCG_FC@10"]["n"] == 1
    # TR@10: 100_1 2 of 3 returned, 101_2 0, 200_3 1 of 2
    assert scores["TR@10"]["value"] == pytest.approx((2 / 3 + 0 + 1 / 2) / 3)
    # TP@10: 100_1 [1,0,1] -> 1.5 / 2.130930; 200_3 [0,1] -> 0.630930 / 1.630930
    assert scores["TP@10"]["value"] == pytest.approx(((1 + 1 / 2) / (1 + 1 / L3 + 1 / 2) + (1 / L3) / (1 + 1 / L3))
                                                     / 3)
    # MRR: 100_1 first relevant at rank 1, 200_3 at rank 2 -> (1 + 0 + 1/2) / 3
    assert scores["MRR"]["value"] == pytest.approx(0.5)
    # R@10: 100_1 2 of 3 relevant found, 200_3 1 of 2
    assert scores["R@10"]["value"] == pytest.approx((2 / 3 + 0 + 1 / 2) / 3)
    by_domain = rows_by(out["by_domain"], "domain")
    assert by_domain["bitcoin"]["nDCG@10"] == pytest.approx(NDCG_100_1 / 2) and by_domain["bitcoin"]["n"] == 2
    assert by_domain["law"]["nDCG@10"] == pytest.approx(NDCG_200_3)
    assert by_domain["(macro)"]["nDCG@10"] == pytest.approx((NDCG_100_1 / 2 + NDCG_200_3) / 2)
    assert by_domain["(all)"]["nDCG@10"] == pytest.approx(out["official"]["value"])
    # per query, the official measure equals pytrec_eval's ndcg_cut_10 on the cleaned run
    qrels = {"100_1": {"bitcoin/a.txt": 1, "bitcoin/b.txt": 1, "bitcoin/c.txt": 1}, "101_2": {"bitcoin/d.txt": 1},
             "200_3": {"law/x.txt": 1, "law/y.txt": 1}}
    cleaned = {"100_1": {"bitcoin/a.txt": 5.0, "bitcoin/e.txt": 3.0, "bitcoin/b.txt": 2.0},
               "200_3": {"law/y.txt": 2.0, "law/z.txt": 2.0}}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(cleaned)
    per_query = rows_by(out["per_query"], "query_id")
    for qid in qrels:
        expected = ref[qid]["ndcg_cut_10"] if qid in ref else 0.0
        assert per_query[qid]["nDCG@10"] == pytest.approx(expected, abs=1e-9)
    # what the contract removed, with line numbers
    problems = {(p["line"], p["kind"]) for p in out["validation"]["problems"]}
    assert {(2, "duplicate"), (3, "unknown_doc"), (4, "other_domain_doc"), (None, "missing_query")} == problems
    assert out["validation"]["rows_kept"] == 5


def test_1a_frozen_labels(release, capsys, tmp_path):
    # 100_1 (guidance periods 2017, 2021): a covers 2017, e covers 2021 (e is not gold), b has verdict 0
    # 200_3 (no guidance: periods = its step ids): y covers 200_3_step2; z is not in the labels
    labels = tmp_path / "labels.jsonl"
    write_jsonl(labels, [
        {"query_id": "100_1", "doc_id": "bitcoin/a.txt", "temporal": 1, "periods": ["2017"]},
        {"query_id": "100_1", "doc_id": "bitcoin/e.txt", "temporal": 1, "periods": ["2021"]},
        {"query_id": "100_1", "doc_id": "bitcoin/b.txt", "temporal": 0, "periods": []},
        {"query_id": "200_3", "doc_id": "law/y.txt", "temporal": 1, "periods": ["200_3_step2"]},
    ])
    out = score(capsys, "reteco-1a", str(tmp_path / "run1a.txt"), "--data", str(release), "--labels", str(labels))
    assert out["labels"] == str(labels)
    per_query = rows_by(out["per_query"], "query_id")
    assert per_query["100_1"]["TC@10"] == 1.0 and per_query["200_3"]["TC@10"] == 0.5
    assert per_query["101_2"]["TC@10"] == 0.0  # has periods (its step), missing from the run
    assert per_query["100_1"]["TR@10"] == pytest.approx(2 / 3)  # a, e temporal; b not
    assert per_query["200_3"]["TR@10"] == pytest.approx(1 / 2)  # [z, y]: y only
    # TP@10 100_1: verdicts [1,1,0] -> (1 + 1/log2 3) / (1 + 1/log2 3 + 1/2) = 1.630930 / 2.130930
    assert per_query["100_1"]["TP@10"] == pytest.approx((1 + 1 / L3) / (1 + 1 / L3 + 1 / 2))
    # the official measure does not depend on the labels
    assert out["official"]["value"] == pytest.approx((NDCG_100_1 + NDCG_200_3) / 3)
    # --periods steps: 100_1's periods become its steps, which the labels do not mention -> TC 0
    out = score(capsys, "reteco-1a", str(tmp_path / "run1a.txt"), "--data", str(release), "--labels", str(labels),
                "--periods", "steps")
    assert rows_by(out["per_query"], "query_id")["100_1"]["TC@10"] == 0.0


def test_1b_official_step_ndcg_and_query_averaged_diagnostics(release, capsys, tmp_path):
    out = score(capsys, "reteco-1b", str(tmp_path / "run1b.txt"), "--data", str(release))
    # steps: 100_1_step1 [a] -> 1; 100_1_step2 [e, c] gold {b, c} -> 0.630930 / 1.630930 = 0.386853
    #        101_2_step1 missing -> 0; 200_3_step1 [x] -> 1; 200_3_step2 [z] -> 0
    s2 = (1 / L3) / (1 + 1 / L3)
    q100, q101, q200 = (1 + s2) / 2, 0.0, (1 + 0) / 2
    assert out["official"]["measure"] == "StepNDCG@10" and out["queries"] == 3 and out["steps"] == 5
    assert out["official"]["value"] == pytest.approx((q100 + q101 + q200) / 3, abs=1e-12)
    by_domain = rows_by(out["by_domain"], "domain")
    assert by_domain["bitcoin"]["StepNDCG@10"] == pytest.approx((q100 + q101) / 2)
    assert by_domain["(macro)"]["StepNDCG@10"] == pytest.approx(((q100 + q101) / 2 + q200) / 2)
    per_query = rows_by(out["per_query"], "query_id")
    assert per_query["100_1"]["steps"] == 2 and per_query["101_2"]["steps"] == 1
    # TC per step = "its own top 10 holds one of its gold docs"; per query the mean over its steps
    assert per_query["100_1"]["TC@10"] == 1.0 and per_query["101_2"]["TC@10"] == 0.0
    assert per_query["200_3"]["TC@10"] == 0.5
    # nDCG|FC: covered steps only -> 100_1 (1 + 0.386853)/2, 200_3 step1 = 1, 101_2 undefined
    assert per_query["100_1"]["nDCG_FC@10"] == pytest.approx(q100) and per_query["200_3"]["nDCG_FC@10"] == 1.0
    assert per_query["101_2"]["nDCG_FC@10"] is None
    scores = rows_by(out["scores"], "measure")
    assert scores["nDCG_FC@10"]["value"] == pytest.approx((q100 + 1.0) / 2) and scores["nDCG_FC@10"]["n"] == 2
    # MRR per step (1, 1/2, 0, 1, 0) averaged per query: 100_1 = 3/4, 101_2 = 0, 200_3 = 1/2
    assert scores["MRR"]["value"] == pytest.approx((0.75 + 0 + 0.5) / 3)
    # the step run cannot be a 1a run: step ids are unknown query topics there; nothing is left to
    # score, which is refused loudly (exit 1), never a silent 0
    assert cli_main(["score", "reteco-1a", str(tmp_path / "run1b.txt"), "--data", str(release), "--format",
                     "json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # no table (and no JSON) of zeros: the reason, first, on stderr
    reason = captured.err.index("no query id in common with the reteco-1a topics (5 row(s) of unknown queries")
    assert reason < captured.err.index("100_1_step1: query id not in the topics")


def test_data_defaults_to_env_and_missing_data_message(release, capsys, monkeypatch, tmp_path):
    assert cli_main(["score", "reteco-1a", str(tmp_path / "run1a.txt")]) == 2
    assert "RETECO_DATA" in capsys.readouterr().err
    monkeypatch.setenv("RETECO_DATA", str(release))
    assert cli_main(["score", "reteco-1a", str(tmp_path / "run1a.txt"), "--domain", "law"]) == 0
    out = capsys.readouterr().out
    assert "1 domain(s), 1 queries" in out and "law" in out and "(macro)" in out
    (release / TRACK / "law" / "qrels_steps_dev.txt").unlink()
    assert cli_main(["score", "reteco-1b", str(tmp_path / "run1b.txt"), "--domain", "law"]) == 2
    err = capsys.readouterr().err
    assert "law/qrels_steps_dev.txt" in err and "put it at" in err


def test_tsv_output_keeps_stdout_machine_readable(release, capsys, tmp_path):
    assert cli_main(["score", "reteco-1a", str(tmp_path / "run1a.txt"), "--data", str(release),
                     "--format", "tsv"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "measure\tvalue\tn\trole"
    assert "run checks" in captured.err and "run checks" not in captured.out


# ------------------------------------------------------------------------------------------------
# the bundled sample


def test_demo_argv_scores_the_bundled_sample(capsys):
    for name in ("reteco-1a", "reteco-1b"):
        argv = demo_argv(name, sample_root())
        assert cli_main(["score", name, *argv, "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["domains"] == ["bitcoin", "history", "law"] and out["queries"] == 15
        kinds = out["validation"]["problem_counts"]
        assert kinds["duplicate"] >= 1 and kinds["missing_query"] == 1
        assert 0 < out["official"]["value"] < 1
        domains = [r["domain"] for r in out["by_domain"]]
        assert domains == ["bitcoin", "history", "law", "(macro)", "(all)"]
    assert out["labels"] == "oracle"


def test_sample_generator_is_deterministic(tmp_path):
    generate(tmp_path)
    bundled = sample_root()
    for rel in ["runs/reteco_track1a_dev.txt", "runs/reteco_track1b_dev.txt", "runs/reteco_track1a_labels_dev.jsonl"]:
        assert filecmp.cmp(tmp_path / rel, bundled / rel, shallow=False), rel
    theirs = sorted(p.relative_to(bundled) for p in (bundled / TRACK).rglob("*") if p.is_file())
    ours = sorted(p.relative_to(tmp_path) for p in (tmp_path / TRACK).rglob("*") if p.is_file())
    assert theirs == ours
    for rel in ours:
        assert filecmp.cmp(tmp_path / rel, bundled / rel, shallow=False), rel


def test_console_script_demo_runs():
    exe = Path(sys.executable).with_name("reteco-measures")
    proc = subprocess.run([str(exe), "score", "reteco-1b", *demo_argv("reteco-1b", sample_root())],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "StepNDCG@10" in proc.stdout and "Traceback" not in proc.stderr


def test_labels_that_cannot_match_are_reported(release, capsys, tmp_path):
    labels = tmp_path / "labels.jsonl"
    write_jsonl(labels, [{"query_id": "100_1", "doc_id": "bitcoin/a.txt", "temporal": 1, "periods": ["1999"]},
                         {"query_id": "100_1_step1", "doc_id": "bitcoin/a.txt", "temporal": 1, "periods": []}])
    out = score(capsys, "reteco-1a", str(tmp_path / "run1a.txt"), "--data", str(release), "--labels", str(labels))
    notes = " | ".join(out["notes"])
    assert "1 label row(s) name topics that are not evaluated" in notes
    assert "none of the labels' periods is a required period" in notes
    assert rows_by(out["scores"], "measure")["TC@10"]["value"] == 0.0  # 1999 is not 2017/2021
    # 1a labels on the 1b view: nothing matches the step topics
    out = score(capsys, "reteco-1b", str(tmp_path / "run1b.txt"), "--data", str(release), "--labels", str(labels))
    assert not any("no label row names an evaluated topic" in n for n in out["notes"])  # 100_1_step1 matches
    write_jsonl(labels, [{"query_id": "100_1", "doc_id": "bitcoin/a.txt", "temporal": 1, "periods": []}])
    out = score(capsys, "reteco-1b", str(tmp_path / "run1b.txt"), "--data", str(release), "--labels", str(labels))
    assert any("no label row names an evaluated topic" in n for n in out["notes"])
    assert rows_by(out["scores"], "measure")["TR@10"]["value"] == 0.0
