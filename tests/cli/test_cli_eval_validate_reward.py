"""The command line: eval / validate / reward through main(), exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reteco_measures.cli.main import main


def test_eval_table_matches_trec_eval(trec_eval_dir: Path, capsys) -> None:
    code = main(["eval", str(trec_eval_dir / "qrels.test"), str(trec_eval_dir / "results.test"),
                 "nDCG@10", "MAP@10", "MRR", "P@10", "R@10"])
    assert code == 0
    out = capsys.readouterr().out
    # values printed by trec_eval 10 in out.test.aq (all): 0.3016 0.0259 0.4064 0.3000 0.0317
    # a measure prints as written: MAP@10 stays MAP@10 (it is AP@10), MRR stays MRR (RR)
    for label, value in [("nDCG@10", "0.3016"), ("MAP@10", "0.0259"), ("MRR", "0.4064"), ("P@10", "0.3000"),
                         ("R@10", "0.0317")]:
        assert any(line.split()[:2] == [label, value] for line in out.splitlines()), (label, out)


def test_eval_per_query_json(trec_eval_dir: Path, capsys) -> None:
    code = main(["eval", str(trec_eval_dir / "qrels.test"), str(trec_eval_dir / "results.test"),
                 "nDCG@10", "--per-query", "--format", "json"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    values = {r["query_id"]: round(r["value"], 4) for r in rows}
    assert values == {"301": 0.1518, "302": 0.7530, "303": 0.0, "all": 0.3016}


def test_eval_per_query_evaluates_once(trec_eval_dir: Path, capsys, monkeypatch) -> None:
    """``eval --per-query`` reads, checks and ranks the run once (one engine ``prepare``) and prints
    pytrec_eval's ndcg_cut_10 per query and their mean, computed side by side here."""
    import pytrec_eval

    from reteco_measures.engine import evaluate as engine

    calls = []
    real = engine.prepare
    monkeypatch.setattr(engine, "prepare", lambda *a, **k: calls.append(1) or real(*a, **k))
    qrels_path, run_path = trec_eval_dir / "qrels.test", trec_eval_dir / "results.test"
    assert main(["eval", str(qrels_path), str(run_path), "nDCG@10", "--per-query", "--format", "json"]) == 0
    assert len(calls) == 1
    rows = {r["query_id"]: r["value"] for r in json.loads(capsys.readouterr().out)}
    qrels: dict = {}
    for line in qrels_path.read_text().splitlines():
        q, _, d, rel = line.split()[:4]
        qrels.setdefault(q, {})[d] = int(rel)
    run: dict = {}
    for line in run_path.read_text().splitlines():
        q, _, d, _, score = line.split()[:5]
        run.setdefault(q, {})[d] = float(score)
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    per_query = {q: expected.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"] for q in qrels}
    for q, value in per_query.items():
        assert rows[q] == pytest.approx(value, abs=1e-9), q
    assert rows["all"] == pytest.approx(sum(per_query.values()) / len(per_query), abs=1e-9)


def test_eval_tsv(trec_eval_dir: Path, capsys) -> None:
    main(["eval", str(trec_eval_dir / "qrels.test"), str(trec_eval_dir / "results.trunc"), "P@5", "--format", "tsv"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "measure\tvalue\tn"
    # -c semantics: 302 is missing from results.trunc and scores 0 (out.test.aqc: P_5 301 0, 302 0, 303 0.6, all 0.2000)
    assert lines[1].split("\t")[:2] == ["P@5", "0.2000"]


def test_validate_exit_code_and_output(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run.txt"
    run.write_text("q Q0 a 1 1.0 r\nq Q0 a 2 0.5 r\n")
    cleaned = tmp_path / "clean.txt"
    assert main(["validate", str(run), "--contract", "reteco", "--output", str(cleaned)]) == 0
    out = capsys.readouterr().out
    assert "duplicate document a removed" in out and f"{run}:2: q:" in out
    assert cleaned.read_text().split()[:5] == ["q", "Q0", "a", "1", "1.0"]


def test_user_errors_are_messages_not_tracebacks(tmp_path: Path, capsys) -> None:
    assert main(["eval", str(tmp_path / "missing.qrels"), str(tmp_path / "run"), "nDCG@10"]) == 2
    err = capsys.readouterr().err
    assert "missing.qrels" in err and "Traceback" not in err
    assert main(["eval", str(tmp_path / "x"), str(tmp_path / "y"), "Bogus@1"]) == 2
    assert "unknown measure" in capsys.readouterr().err


def test_reward_command(capsys) -> None:
    assert main(["reward", "0.4530094614433184"]) == 0
    assert capsys.readouterr().out.strip() == "0.150000"


def test_ir_measures_cli_sees_our_measures(trec_eval_dir: Path, capsys) -> None:
    code = main(["ir_measures", str(trec_eval_dir / "qrels.test"), str(trec_eval_dir / "results.test"), "nDCG@10"])
    assert code == 0
    assert capsys.readouterr().out.strip() == "nDCG@10\t0.3016"


def test_console_script_module_entry(trec_eval_dir: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "reteco_measures", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and "reteco-measures" in proc.stdout


@pytest.mark.parametrize("args", [["score", "--help"], ["eval", "--help"], ["validate", "--help"]])
def test_help_works(args, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 0


def test_validate_ikat_with_topics_json(ikat2023_dir: Path, capsys) -> None:
    data = ikat2023_dir
    code = main(["validate", str(data / "2023_sample_run.json"), "--contract", "ikat",
                 "--queries", str(data / "2023_test_topics.json"), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert out["contract"] == "ikat" and code in (0, 1)
    assert out["rows"] > 0


def test_eval_per_query_prepares_the_run_once(tmp_path: Path, capsys, monkeypatch) -> None:
    """``eval --per-query`` reads, checks and ranks the run once (one engine ``prepare``): the
    'all' row is the mean of the per-query rows it printed, not a second evaluation."""
    from reteco_measures.engine import evaluate as engine

    calls: list[int] = []
    real = engine.prepare

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "prepare", spy)
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 b 1 2.0 r\nq1 Q0 a 2 1.0 r\nq2 Q0 c 1 1.0 r\n")
    assert main(["eval", str(qrels), str(run), "P@1", "RR", "--per-query", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(calls) == 1
    # by hand: q1 ranks b (non-relevant) then a (relevant): P@1 0, RR 1/2; q2: P@1 1, RR 1
    got = {(r["query_id"], r["measure"]): r["value"] for r in rows}
    assert got == {("q1", "P@1"): 0.0, ("q2", "P@1"): 1.0, ("q1", "RR"): 0.5, ("q2", "RR"): 1.0,
                   ("all", "P@1"): 0.5, ("all", "RR"): 0.75}
