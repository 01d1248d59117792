"""``reteco-measures compare``: runs told from measures, every output format, plots, exit codes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ir_measures
import numpy as np
import pytest

import reteco_measures as rm
from reteco_measures.cli.main import main
from reteco_measures.measures import REGISTERED
from reteco_measures.sample import sample_path, sample_root

TEMPO = sample_root() / "reteco" / "track1_tempo"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("compare")
    qrels = tmp / "qrels.txt"
    qrels.write_text("".join(p.read_text() for p in sorted(TEMPO.glob("*/qrels_dev.txt"))))
    topics = tmp / "steps.jsonl"
    topics.write_text("".join(p.read_text() for p in sorted(TEMPO.glob("*/steps_dev.jsonl"))))
    base = rm.read_run(sample_path("runs", "reteco_track1a_dev.txt"))
    rng = np.random.default_rng(1)
    out = {"qrels": qrels, "topics": topics}
    for name, run in {"base": base, "noisy": base.assign(score=base["score"] + rng.normal(0, 4, len(base))),
                      "shuffled": base.assign(score=rng.random(len(base)))}.items():
        path = tmp / f"{name}.txt"
        path.write_text("".join(f"{r.query_id} Q0 {r.doc_id} 0 {r.score!r} {name}\n" for r in run.itertuples()))
        out[name] = path
    return out


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main(["compare", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_table_with_baseline(files, capsys) -> None:
    code, out, _ = run_cli(capsys, files["qrels"], files["base"], files["noisy"], files["shuffled"], "nDCG@10",
                           "P@5", "--baseline", "base", "--resamples", "300")
    assert code == 0
    assert "summary" in out and "pairwise" in out
    assert "noisy" in out and "shuffled" in out


def test_json_names_parse_back_and_values_equal_calc_aggregate(files, capsys) -> None:
    code, out, _ = run_cli(capsys, files["qrels"], files["base"], files["noisy"], "nDCG|FC@10", "TC@10", "nDCG@10",
                           "--topics", files["topics"], "--format", "json", "--resamples", "300", "--test",
                           "randomization", "--correction", "bh")
    assert code == 0
    doc = json.loads(out)
    assert doc["measures"] == ["nDCG_FC@10", "TC@10", "nDCG@10"]
    assert doc["params"]["test"] == "randomization" and doc["params"]["correction"] == "bh"
    for rec in doc["summary"]:
        measure = ir_measures.parse_measure(rec["measure"])  # parseable names, not nDCG|FC@10
        run = files[rec["run"]]
        expected = rm.calc_aggregate([measure], files["qrels"], run, topics=files["topics"])[measure]
        if math.isnan(expected):
            assert rec["value"] is None
        elif measure.NAME in REGISTERED:  # our aggregator: the same left-to-right sum, bit for bit
            assert rec["value"] == expected
        else:  # a standard measure's backend may sum pairwise (numpy) instead of left to right
            assert rec["value"] == pytest.approx(expected, rel=4 * np.finfo(float).eps)
    assert {(r["run"], r["other"]) for r in doc["pairwise"]} == {("base", "noisy")}


@pytest.mark.parametrize("fmt,marker", [("markdown", "| run |"), ("latex", "\\toprule"), ("csv", "run,measure,value")])
def test_other_formats(files, capsys, fmt, marker) -> None:
    code, out, _ = run_cli(capsys, files["qrels"], files["base"], files["shuffled"], "nDCG@10", "--format", fmt,
                           "--resamples", "200")
    assert code == 0 and marker in out


@pytest.mark.parametrize("kind", ["runs", "delta"])
def test_plot_file(files, capsys, tmp_path, kind) -> None:
    target = tmp_path / f"{kind}.png"
    code, _, err = run_cli(capsys, files["qrels"], files["base"], files["noisy"], "nDCG@10", "--plot", target,
                           "--plot-kind", kind, "--resamples", "200")
    assert code == 0 and target.stat().st_size > 1000 and "plot written" in err


def test_usage_errors_exit_2_without_traceback(files, capsys, tmp_path) -> None:
    code, _, err = run_cli(capsys, files["qrels"], files["base"], "nDCG@10")
    assert code == 2 and "at least two run files" in err
    code, _, err = run_cli(capsys, files["qrels"], files["base"], tmp_path / "missing.txt", "nDCG@10")
    assert code == 2 and "no such run file" in err
    code, _, err = run_cli(capsys, files["qrels"], files["base"], files["noisy"], "nDCG@10", "--baseline", "bm25")
    assert code == 2 and "baseline" in err
    code, _, err = run_cli(capsys, files["qrels"], files["base"], files["noisy"], "nDCG@10", "--plot",
                           tmp_path / "x.png", "--plot-kind", "heatmap")
    assert code == 2 and "--by" in err
    code, _, err = run_cli(capsys, files["qrels"], files["base"], files["noisy"], "NoSuchMeasure@10")
    assert code == 2 and "Traceback" not in err


def test_mismatched_inputs_are_refused_with_exit_1(files, capsys, tmp_path) -> None:
    other = tmp_path / "other.txt"
    other.write_text("zzz Q0 d1 1 1.0 x\n")  # a run of queries the qrels do not have
    code, out, err = run_cli(capsys, files["qrels"], files["base"], other, "nDCG@10", "--resamples", "100")
    # refused: one line naming the run, no table of zeros
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("reteco-measures: error: run 'other'") and "share no query id" in err
