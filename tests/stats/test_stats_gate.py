"""The regression gate on per-query frames (``reteco_measures.stats.gate``): constructed cases
whose truth is known (equal plus noise passes, worse by a known margin fails, too few units cannot
tell), the interval against ``scipy.stats.bootstrap`` on the paired differences, the margin."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from reteco_measures.stats.gate import gate_frame


def _frame(base: np.ndarray, cand: np.ndarray) -> pd.DataFrame:
    q = [f"q{i}" for i in range(len(base))]
    return pd.concat([pd.DataFrame({"run": "baseline", "query_id": q, "value": base}),
                      pd.DataFrame({"run": "candidate", "query_id": q, "value": cand})], ignore_index=True)


def test_equal_plus_noise_is_not_worse_and_a_known_loss_is_worse():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.2, 0.8, 200)
    noisy = base + rng.normal(0, 0.02, 200)
    g = gate_frame(_frame(base, noisy), n_resamples=2000)
    assert g.verdict == "not_worse" and g.exit_code == 0
    assert g.ci_low <= g.delta <= g.ci_high
    worse = base - 0.05 + rng.normal(0, 0.02, 200)  # worse by 0.05
    g = gate_frame(_frame(base, worse), n_resamples=2000)
    assert g.verdict == "worse" and g.exit_code == 1 and g.p_value < 0.05
    assert g.delta == pytest.approx(worse.mean() - base.mean())
    # a margin larger than the loss lets it pass; one smaller still fails
    assert gate_frame(_frame(base, worse), margin=0.08, n_resamples=2000).verdict == "not_worse"
    assert gate_frame(_frame(base, worse), margin=0.02, n_resamples=2000).verdict == "worse"


def test_too_few_units_cannot_tell():
    g = gate_frame(_frame(np.array([0.5, 0.6, 0.7]), np.array([0.1, 0.1, 0.1])))
    assert g.verdict == "cannot_tell" and g.exit_code == 2 and g.n == 3 and "3 query" in g.reason


def test_interval_and_p_value_agree_with_scipy_bootstrap_on_paired_differences():
    rng = np.random.default_rng(5)
    base = rng.uniform(0, 1, 60)
    cand = base + rng.normal(-0.03, 0.1, 60)
    g = gate_frame(_frame(base, cand), alpha=0.05, n_resamples=20_000, seed=3)
    d = cand - base
    ref = sps.bootstrap((d,), np.mean, confidence_level=0.90, method="percentile", n_resamples=20_000,
                        random_state=np.random.default_rng(9))
    assert g.delta == pytest.approx(d.mean(), abs=1e-12)
    assert g.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.004)
    assert g.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.004)
    # the one-sided p-value is the bootstrap share at or above -margin: P(mean* >= 0)
    boot = d[np.random.default_rng(11).integers(0, 60, (20_000, 60))].mean(axis=1)
    assert g.p_value == pytest.approx((1 + (boot >= 0).sum()) / 20_001, abs=0.01)


def test_units_and_weights_are_the_frame_s():
    # two conversations; resampling the conversation keeps its turns together: the aggregate is the
    # weighted mean, and a gate on 12 conversations of 3 turns has n = 12 units
    rng = np.random.default_rng(2)
    rows = []
    for c in range(12):
        for t in range(3):
            v = rng.uniform()
            rows += [{"run": "baseline", "query_id": f"c{c}_turn_{t}", "value": v, "weight": 1.0, "unit": f"c{c}"},
                     {"run": "candidate", "query_id": f"c{c}_turn_{t}", "value": v - 0.2, "weight": 1.0,
                      "unit": f"c{c}"}]
    g = gate_frame(pd.DataFrame(rows), n_resamples=500)
    assert g.n == 12 and g.delta == pytest.approx(-0.2) and g.verdict == "worse"


def test_bad_parameters_raise():
    f = _frame(np.ones(20), np.ones(20))
    for kw in ({"margin": -1}, {"alpha": 0.7}, {"n_resamples": 0}):
        with pytest.raises(ValueError):
            gate_frame(f, **kw)
    with pytest.raises(ValueError, match="no rows of run"):
        gate_frame(f, candidate="other")
