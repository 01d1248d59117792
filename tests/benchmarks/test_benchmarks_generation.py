"""benchmarks/generation.py: the judged generation tracks (a submission is its judgments file)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.generation import _AGGREGATES, IKAT_DIMENSIONS, RETECO_DIMENSIONS
from reteco_measures.judge import AGGREGATES, FAMILIES, aggregate_judgments


def test_declared_dimensions_are_the_judges():
    assert RETECO_DIMENSIONS == tuple(FAMILIES["reteco"])
    assert set(IKAT_DIMENSIONS) == set(FAMILIES["ikat"]) and IKAT_DIMENSIONS[0] == "groundedness"
    assert _AGGREGATES == tuple(AGGREGATES)


def test_score_equals_judge_aggregate_with_targets(tmp_path):
    rng = np.random.default_rng(4)
    turns = [f"t{i}" for i in range(10)]
    rows = [{"turn_id": t, "dimension": "groundedness", "score": int(rng.integers(0, 5)), "repeat": r}
            for t in turns[:8] for r in (0, 1)]
    rows.append({"turn_id": "t8", "dimension": "groundedness", "score": None, "error": "timeout"})
    path = tmp_path / "j.jsonl"
    pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    targets = tmp_path / "targets.txt"
    targets.write_text("\n".join(turns) + "\n", encoding="utf-8")
    score = rm.benchmark("ikat-2023-generation").score(path, targets=str(targets))
    want = aggregate_judgments(path, targets=turns).set_index("dimension")
    assert score.official_measure == "Likert(dimension='groundedness')"
    assert score.official == pytest.approx(want.loc["groundedness", "value"], abs=1e-12)
    # by hand: the mean of each turn's repeats (s/4), over the 8 judged turns (t8 invalid, t9 missing)
    frame = pd.DataFrame(rows[:-1])
    assert score.official == pytest.approx((frame["score"] / 4).groupby(frame["turn_id"]).mean().mean(), abs=1e-12)
    assert any("1 have an invalid judgment and 1 none" in n for n in score.notes)


def test_data_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="reads no reference data"):
        rm.benchmark("reteco-2b").score(pd.DataFrame({"turn_id": ["t"], "dimension": ["correctness"],
                                                      "score": [3]}), data=".")


# ------------------------------------------------------------------------------------------------
# generation boards say what each mean is over; --on-missing zero averages every run over the targets

_TURNS = [f"t{i}" for i in range(14)]


@pytest.fixture
def three_systems(tmp_path):
    """sysA: 14 judged, one invalid (9 is off the 1-5 scale); sysB: five invalid judgments (0) on its
    hard turns, 5 elsewhere; sysC: 3 everywhere but t13, which it did not answer."""
    def write(name, scores):
        path = tmp_path / f"{name}.jsonl"
        pd.DataFrame([{"turn_id": t, "dimension": "correctness", "score": s} for t, s in scores.items()]).to_json(
            path, orient="records", lines=True)
        return path

    runs = [write("sysA", dict(zip(_TURNS, [5, 4, 3, 2, 5, 4, 3, 2, 5, 4, 3, 2, 9, 4], strict=True))),
            write("sysB", {t: (0 if i < 5 else 5) for i, t in enumerate(_TURNS)}),
            write("sysC", {t: 3 for t in _TURNS[:13]})]
    targets = tmp_path / "targets.txt"
    targets.write_text("\n".join(_TURNS) + "\n", encoding="utf-8")
    return runs, targets


def test_generation_board_shows_n_invalid_missing_and_turn_sets(three_systems):
    import json

    from reteco_measures.report.html import leaderboard_html
    from reteco_measures.report.leaderboard import TURN_SET_NOTE, format_leaderboard

    runs, targets = three_systems
    board = rm.leaderboard("reteco-2c", runs, targets=str(targets), n_resamples=100)
    r = board.ranking.set_index("run")
    # by hand: (s - 1) / 4 over the valid judgments only
    a = [1, .75, .5, .25] * 3 + [.75]
    assert r.loc["sysA", "value"] == pytest.approx(sum(a) / 13, abs=1e-12)
    assert r.loc["sysB", "value"] == 1.0 and r.loc["sysC", "value"] == 0.5
    assert r.loc[["sysA", "sysB", "sysC"], ["n", "invalid", "missing"]].to_numpy().tolist() == \
        [[13, 1, 0], [9, 5, 0], [13, 0, 1]]
    assert r.loc[["sysB", "sysA", "sysC"], "turn_set"].tolist() == ["A", "B", "C"]  # ranked order: B, A, C
    for fmt in ("table", "markdown", "latex"):
        text = format_leaderboard(board, fmt)
        assert TURN_SET_NOTE.split(" (")[0] in text.replace("\\_", "_"), fmt
        row = next(line for line in text.splitlines() if "sysB" in line and ("0.0000" in line or "1.0000" in line))
        assert "9" in row.replace("|", " ").replace("&", " ").split() and "5" in row.replace("|", " ").replace(
            "&", " ").split(), (fmt, row)
    doc = json.loads(format_leaderboard(board, "json"))
    got = {x["run"]: (x["n"], x["invalid"], x["missing"], x["turn_set"]) for x in doc["ranking"]}
    assert got == {"sysB": (9, 5, 0, "A"), "sysA": (13, 1, 0, "B"), "sysC": (13, 0, 1, "C")}
    csv = format_leaderboard(board, "csv").splitlines()
    assert {"n", "invalid", "missing", "turn_set"} <= set(csv[0].split(","))
    html = leaderboard_html(board, plots=False)
    assert "different turn sets" in html and ">invalid<" in html and ">missing<" in html


def test_on_missing_zero_scores_every_target(three_systems, capsys):
    from reteco_measures.cli.main import main

    runs, targets = three_systems
    board = rm.leaderboard("reteco-2c", runs, targets=str(targets), on_missing="zero", n_resamples=100)
    r = board.ranking.set_index("run")
    # by hand: a turn without a valid judgment scores 0 over all 14 targets
    assert r.loc["sysA", "value"] == pytest.approx((sum([1, .75, .5, .25] * 3) + .75) / 14, abs=1e-12)
    assert r.loc["sysB", "value"] == pytest.approx(9 / 14, abs=1e-12)
    assert r.loc["sysC", "value"] == pytest.approx(6.5 / 14, abs=1e-12)
    assert r["n"].tolist() == [14, 14, 14] and "turn_set" not in r.columns
    assert r.loc["sysA", "invalid"] == 1 and r.loc["sysC", "missing"] == 1  # still counted
    # a dimension no run was judged on stays undefined, not 0
    assert "Likert(dimension='faithfulness')" not in board.ranking.columns
    rc = main(["leaderboard", "reteco-2c", *map(str, runs), "--targets", str(targets), "--on-missing", "zero",
               "--resamples", "100", "--format", "json"])
    import json

    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and [x["run"] for x in doc["ranking"]] == ["sysB", "sysA", "sysC"]
    # the default keeps every number as before: exclude
    assert rm.benchmark("reteco-2c").score(runs[0], targets=str(targets)).official == pytest.approx(sum(
        [1, .75, .5, .25] * 3 + [.75]) / 13, abs=1e-12)
