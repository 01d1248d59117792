"""The command line never prints a silent 0.0000: bad inputs are a message and a non-zero exit.

Also: ``eval --contract`` scores what the official scorer scores, ``eval`` says what a contract
would discard, and every name printed for programs (TSV, JSON) parses back to the same measure.
Expected values are worked out by hand in each test.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import ir_measures
import pytest

import reteco_measures as rm
from reteco_measures.cli.main import build_parser, main
from reteco_measures.kernels.ranking import TIE_BREAKS

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n"
RUN = "q1 Q0 d2 1 2.0 r\nq1 Q0 d1 2 1.0 r\nq2 Q0 d3 1 1.0 r\n"


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for name, text in {"qrels": QRELS, "run": RUN, "empty": "", "bad": "garbage\nmore garbage here\n"}.items():
        (tmp_path / name).write_text(text)
        paths[name] = str(tmp_path / name)
    return paths


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


def test_good_pair_scores(files, capsys):
    code, out, _ = _run(["eval", files["qrels"], files["run"], "nDCG@10", "--format", "tsv"], capsys)
    # q1: d1 (relevant) at rank 2 -> 1/log2(3); q2: d3 at rank 1 -> 1
    assert code == 0
    assert out.splitlines()[1].split("\t")[:2] == ["nDCG@10", f"{(1 / math.log2(3) + 1) / 2:.4f}"]


@pytest.mark.parametrize(
    "which, code, message",
    [
        ("empty-run", 1, "run .* has no usable row"),
        ("empty-qrels", 1, "qrels .* have no usable row"),
        ("bad-run", 1, "run .* has no usable row"),
        ("swapped", 2, "looks like a run .* the order is: eval QRELS RUN"),
        ("folder-run", 2, "(folder|directory)"),
    ],
)
def test_inputs_that_would_score_a_silent_zero(files, tmp_path, capsys, which, code, message):
    qrels, run = {
        "empty-run": (files["qrels"], files["empty"]),
        "empty-qrels": (files["empty"], files["run"]),
        "bad-run": (files["qrels"], files["bad"]),
        "swapped": (files["run"], files["qrels"]),
        "folder-run": (files["qrels"], str(tmp_path)),
    }[which]
    got, out, err = _run(["eval", qrels, run, "nDCG@10"], capsys)
    assert got == code
    assert out == ""  # no table with 0.0000 / NaN
    import re

    assert re.search(message, err), err
    assert len([line for line in err.splitlines() if line.startswith("reteco-measures: error")]) == 1


def test_disjoint_ids_exit_non_zero(files, tmp_path, capsys):
    other = tmp_path / "other"
    other.write_text("x1 Q0 d1 1 1.0 r\n")
    code, out, err = _run(["eval", files["qrels"], str(other), "nDCG@10"], capsys)
    assert code == 1 and out == "" and "share no query id" in err


def test_validate_with_no_usable_row_is_invalid(files, capsys):
    code, out, _ = _run(["validate", files["bad"], "--contract", "reteco"], capsys)
    assert code == 1 and "INVALID" in out
    code, out, _ = _run(["validate", files["bad"], "--contract", "reteco", "--format", "json"], capsys)
    assert code == 1 and json.loads(out)["valid"] is False and json.loads(out)["rows"] == 0


def test_eval_notes_what_a_contract_would_discard_and_applies_it(files, tmp_path, capsys):
    run = tmp_path / "dup"
    # q1: d9 (not in the corpus) first, then d1; d1 repeated with a lower score; q2 as before
    run.write_text("q1 Q0 d9 1 3.0 r\nq1 Q0 d1 2 2.0 r\nq1 Q0 d1 3 0.5 r\nq2 Q0 d3 1 1.0 r\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("d1\nd2\nd3\n")
    code, out, err = _run(["eval", files["qrels"], str(run), "nDCG@10", "--format", "tsv"], capsys)
    assert code == 0 and "1 duplicate document(s)" in err and "--contract reteco" in err
    # eval keeps the last score of a repeated pair: q1 ranks d9 (3.0), d1 (0.5) -> d1 at rank 2
    assert out.splitlines()[1].split("\t")[1] == f"{(1 / math.log2(3) + 1) / 2:.4f}"
    code, out, err = _run(["eval", files["qrels"], str(run), "nDCG@10", "--corpus", str(corpus)], capsys)
    assert code == 0 and "1 duplicate document(s), 1 unknown document(s)" in err and f"--corpus {corpus}" in err
    code, out, err = _run(["eval", files["qrels"], str(run), "nDCG@10", "--contract", "reteco", "--corpus",
                           str(corpus), "--format", "tsv"], capsys)
    # the contract drops d9 (unknown) and the second d1: q1 ranks d1 first -> 1; q2 -> 1
    assert code == 0 and "contract reteco" in err
    assert out.splitlines()[1].split("\t")[1] == "1.0000"


def test_names_parse_back_and_print_as_written(files, capsys):
    measures = ["nDCG|FC@10", "TP@10", "TR@5", "MAP@10", "MRR", "nDCG@10", "TurnNDCG(average='conversation')@10"]
    for fmt in ("json", "tsv"):
        code, out, _ = _run(["eval", files["qrels"], files["run"], *measures, "--format", fmt], capsys)
        assert code == 0
        names = [r["measure"] for r in json.loads(out)] if fmt == "json" else [
            line.split("\t")[0] for line in out.splitlines()[1:]]
        assert names[:3] == ["nDCG_FC@10", "TP@10", "TR@5"]
        for name, written in zip(names, measures):
            assert ir_measures.parse_measure(name) == rm.parse_measures(written)[0], name
    code, out, _ = _run(["eval", files["qrels"], files["run"], *measures], capsys)
    table = [line.split()[0] for line in out.splitlines()[2:]]
    assert table[:4] == ["nDCG|FC@10", "TP@10", "TR@5", "MAP@10"]
    code, out, _ = _run(["eval", files["qrels"], files["run"], "TP@10", "--per-query", "--format", "json"], capsys)
    assert {r["measure"] for r in json.loads(out)} == {"TP@10"}


def test_measure_name_helper():
    assert rm.measure_name("nDCG|FC@10") == "nDCG_FC@10"
    assert rm.measure_name("nDCG|FC@10", machine=False) == "nDCG|FC@10"
    assert rm.measure_name(rm.nDCG_FC @ 10, machine=False) == "nDCG|FC@10"
    assert rm.measure_name(rm.TP @ 10) == "TP@10" and rm.measure_name(rm.TemporalPrecision @ 10) == "TemporalPrecision@10"
    assert rm.TP @ 10 == rm.TemporalPrecision @ 10  # same measure, same results, its own spelling
    assert rm.measure_name(ir_measures.parse_measure("TC@5")) == "TC@5"
    assert rm.measure_name("TP(form='ap')@5") == "TP(form='ap')@5"


def test_tie_break_choices_follow_the_kernel():
    eval_parser = build_parser()._subparsers._group_actions[0].choices["eval"]
    action = next(a for a in eval_parser._actions if a.dest == "tie_break")
    assert list(action.choices) == list(TIE_BREAKS) and "stable" in action.choices


def test_an_internal_error_is_one_line(files, capsys, monkeypatch):
    import reteco_measures.cli.main as cli

    def boom(args):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(cli, "_cmd_eval", boom)
    monkeypatch.delenv("RETECO_MEASURES_DEBUG", raising=False)
    code, out, err = _run(["eval", files["qrels"], files["run"], "nDCG@10"], capsys)
    assert code == 3 and err.strip().startswith("reteco-measures: internal error: RuntimeError: kaboom")
    monkeypatch.setenv("RETECO_MEASURES_DEBUG", "1")
    with pytest.raises(RuntimeError):
        cli.main(["eval", files["qrels"], files["run"], "nDCG@10"])


def test_eval_with_a_contract_refuses_an_invalid_run(files, capsys):
    code, out, err = _run(["eval", files["qrels"], files["bad"], "nDCG@10", "--contract", "reteco"], capsys)
    assert code == 1 and out == "" and "not valid under the reteco contract" in err
