"""Messages of the command line in its own words (``cli/messages.py`` and the data-location hints
of the RETECO benchmarks): the command line names flags (``--data DIR``), Python names keywords
(``data=``); neither names loader function names nor ``$RETECO_DATA`` when a folder was given."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from reteco_measures.cli.main import main
from reteco_measures.cli.messages import cli_message


def test_a_concrete_value_is_kept_as_the_flags_argument() -> None:
    ns = argparse.Namespace(data=None, topics=None, qrels=None)
    assert cli_message("pass data='/x y/track1_tempo'", ns) == "pass --data '/x y/track1_tempo'"
    assert cli_message("or give topics=... and qrels=...", ns) == "or give --topics FILE and --qrels FILE"
    # a switch drops the Python value
    assert cli_message("pass query_ids='normalize'", argparse.Namespace(normalize_ids=False)) == \
        "pass --normalize-ids"


def _sample_root(tmp_path: Path) -> Path:
    """The organisers' sample layout: <root>/track1_tempo/, <root>/track2_recor/ (files are only looked at)."""
    tmp_path.mkdir()
    for track, files in (("track1_tempo", ("examples.jsonl", "qrels.txt")),
                         ("track2_recor", ("benchmark.jsonl", "qrels.txt"))):
        (tmp_path / track).mkdir()
        for name in files:
            (tmp_path / track / name).write_text("")
    return tmp_path


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as done:
        return int(done.code or 0)


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "good.run"
    run.write_text("q1 Q0 bitcoin/a 1 1.0 x\n")
    return run


@pytest.mark.parametrize("benchmark,track", [("reteco-1a", "track1_tempo"), ("reteco-2a", "track2_recor")])
def test_the_sample_root_given_as_data_names_the_flag_with_the_track_folder(
        benchmark: str, track: str, tmp_path: Path, capsys) -> None:
    root = _sample_root(tmp_path / "sample")
    assert _exit(["score", benchmark, str(_run(tmp_path)), "--data", str(root)]) != 0
    err = capsys.readouterr().err
    assert f"pass --data {root / track}" in err
    for python_word in ("load_tempo", "load_recor", "()", "root=", "data=", "$RETECO_DATA"):
        assert python_word not in err, (python_word, err)


@pytest.mark.parametrize("benchmark", ["reteco-1a", "reteco-2a"])
def test_a_missing_release_under_data_speaks_flags_not_functions(benchmark: str, tmp_path: Path, capsys) -> None:
    assert _exit(["score", benchmark, str(_run(tmp_path)), "--data", str(tmp_path / "nowhere")]) != 0
    err = capsys.readouterr().err
    assert str(tmp_path / "nowhere" / "reteco") in err and "--topics FILE" in err and "--data" in err
    for python_word in ("load_tempo", "load_recor", "()", "root=", "data=", "topics=", "$RETECO_DATA"):
        assert python_word not in err, (python_word, err)


def test_python_hears_the_keyword(tmp_path: Path) -> None:
    import reteco_measures as rm
    from reteco_measures.datasets import MissingDataError

    root = _sample_root(tmp_path / "sample")
    with pytest.raises(MissingDataError, match=r"pass data='.*track1_tempo'"):
        rm.benchmark("reteco-1a").score(str(_run(tmp_path)), data=root)


@pytest.mark.slow
def test_the_demo_ends_with_the_command_that_scores_ones_own_run(capsys) -> None:
    import shlex

    assert _exit(["demo"]) == 0
    out = capsys.readouterr().out
    tail = out[out.rindex("[valid submission]"):] if "[valid submission]" in out else out
    assert "next: score your own run" in tail
    line = next(ln.strip() for ln in tail.splitlines() if ln.strip().startswith("reteco-measures score "))
    argv = shlex.split(line)[1:]
    # the printed command runs as printed and gives the demo's reteco-2a official value
    demo_2a = out[out.index("reteco-2a:"):]
    official = next(ln for ln in demo_2a.splitlines() if ln.startswith("TurnNDCG@10")).split()[1]
    assert _exit(argv) == 0
    again = capsys.readouterr().out
    assert next(ln for ln in again.splitlines() if ln.startswith("TurnNDCG@10")).split()[1] == official


@pytest.mark.parametrize("benchmark", ["ikat-2023", "chunqiu"])
def test_a_missing_file_under_data_is_named_once_without_the_variable(benchmark: str, tmp_path: Path,
                                                                       capsys) -> None:
    assert _exit(["score", benchmark, str(_run(tmp_path)), "--data", str(tmp_path / "nowhere")]) != 0
    err = capsys.readouterr().err
    assert str(tmp_path / "nowhere") in err and "$RETECO_DATA" not in err and "that is" not in err, err
