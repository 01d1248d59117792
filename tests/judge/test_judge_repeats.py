"""Repeated judge runs (``reteco_measures.judge.repeats``): the replicate-level interval against
``scipy.stats.t.interval``, the item bootstrap, flip rates and pass^k by hand, the gate over repeats
on constructed systems (equal plus judge noise passes, worse by a known margin fails)."""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from reteco_measures.judge.repeats import gate_repeats, pass_hat_k, repeats


def _judgments(scores: np.ndarray, dimension: str = "correctness") -> pd.DataFrame:
    """items x repeats matrix -> judgment rows."""
    return pd.DataFrame([{"turn_id": f"t{i:03d}", "dimension": dimension, "repeat": r, "score": int(s)}
                         for i, row in enumerate(scores) for r, s in enumerate(row)])


def test_replicate_interval_flip_rate_and_pass_k_by_hand():
    # 4 items x 3 repeats of a pass/fail dimension
    S = np.array([[1, 1, 1], [1, 0, 1], [0, 0, 0], [1, 0, 0]])
    res = repeats(_judgments(S, "answers_question"), scale="binary", n_resamples=500)
    row = res.summary.iloc[0]
    rep = S.mean(axis=0)  # replicate means 3/4, 1/4, 2/4
    lo, hi = sps.t.interval(0.95, 2, loc=rep.mean(), scale=sps.sem(rep))
    assert row["replicate_ci_low"] == pytest.approx(lo) and row["replicate_ci_high"] == pytest.approx(hi)
    assert row["mean"] == pytest.approx(S.mean())
    # flips: items 2 and 4 disagree: each has one pair of three agreeing -> 1 - 2/6 = 2/3
    items = res.items.set_index("turn_id")
    assert items.loc["t001", "flip_rate"] == pytest.approx(2 / 3) and items.loc["t000", "flip_rate"] == 0
    assert row["flip_share"] == 0.5 and row["flip_rate"] == pytest.approx((0 + 2 / 3 + 0 + 2 / 3) / 4)
    # pass^3: only item 1 passes all three -> 1/4; pass^2: (1 + C(2,2)/C(3,2) + 0 + 0) / 4
    assert row["pass_k"] == pytest.approx(0.25)
    assert pass_hat_k(items["passes"], items["n_repeats"], 2) == pytest.approx((1 + 1 / 3) / 4)
    assert pass_hat_k(np.array([2]), np.array([5]), 2) == pytest.approx(comb(2, 2) / comb(5, 2))
    assert row["ci_low"] <= row["mean"] <= row["ci_high"]


def test_pass_k_needs_a_threshold_on_a_likert_scale():
    S = np.array([[5, 4], [3, 3], [2, 4]])
    assert np.isnan(repeats(_judgments(S), n_resamples=0).summary.iloc[0]["pass_k"])
    res = repeats(_judgments(S), pass_threshold=4, n_resamples=0).summary.iloc[0]
    assert res["pass_k"] == pytest.approx(1 / 3)  # only item 1 passes both repeats


def test_gate_over_repeats():
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, 120)
    noisy = lambda t: np.clip(t[:, None] + rng.integers(-1, 2, (len(t), 3)), 1, 5)  # noqa: E731
    base = _judgments(noisy(truth))
    same = _judgments(noisy(truth))
    worse = _judgments(noisy(np.clip(truth - 1, 1, 5)))
    assert gate_repeats(base, same, dimension="correctness", margin=0.1, n_resamples=2000).verdict == "not_worse"
    g = gate_repeats(base, worse, dimension="correctness", n_resamples=2000)
    assert g.verdict == "worse" and g.params["unit"] == "item" and g.n == 120
    item_mean = lambda j: j.groupby("turn_id")["score"].mean().mean()  # noqa: E731
    assert g.delta == pytest.approx(item_mean(worse) - item_mean(base))
