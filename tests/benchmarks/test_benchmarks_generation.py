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
