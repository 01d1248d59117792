"""Fleiss' kappa of ``reteco_measures.judge``: equal to ``statsmodels.stats.inter_rater.fleiss_kappa``
on the same table, to a hand computation, and as the ``fleiss_kappa`` column of ``agreement`` (judge
and raters as nominal raters over the items all of them rated)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from reteco_measures.judge import agreement
from reteco_measures.judge.agreement import fleiss_kappa


def test_fleiss_kappa_by_hand():
    # 3 subjects, 3 raters, 2 categories: counts (3,0), (0,3), (2,1)
    # P_i = 1, 1, (4 + 1 - 3)/6 = 1/3 -> P̄ = 7/9; p = (5/9, 4/9) -> P_e = 41/81
    table = np.array([[3, 0], [0, 3], [2, 1]])
    assert fleiss_kappa(table) == pytest.approx((7 / 9 - 41 / 81) / (1 - 41 / 81))
    assert np.isnan(fleiss_kappa(np.zeros((0, 3))))
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa(np.array([[3, 0], [1, 1]]))


@pytest.mark.parametrize("seed", range(6))
def test_fleiss_kappa_equals_statsmodels(seed):
    rng = np.random.default_rng(seed)
    raters, items, k = int(rng.integers(3, 7)), int(rng.integers(5, 60)), int(rng.integers(2, 6))
    truth = rng.integers(0, k, items)
    ratings = np.where(rng.random((items, raters)) < 0.6, truth[:, None], rng.integers(0, k, (items, raters)))
    table, _ = aggregate_raters(ratings, n_cat=k)
    assert fleiss_kappa(table) == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)


def test_agreement_reports_fleiss_kappa_of_judge_and_raters():
    rng = np.random.default_rng(3)
    n = 40
    truth = rng.integers(1, 6, n)
    human = np.clip(truth[:, None] + rng.integers(-1, 2, (n, 3)), 1, 5).astype(float)
    human[:5, 2] = np.nan  # five items are not rated by every rater: Fleiss leaves them out
    judge = np.clip(truth + rng.integers(-1, 2, n), 1, 5)
    items = [f"t{i:03d}" for i in range(n)]
    j = pd.DataFrame({"turn_id": items, "dimension": "correctness", "score": judge})
    h = pd.DataFrame([{"turn_id": items[i], "dimension": "correctness", "rater": f"r{r}", "score": int(v)}
                      for i in range(n) for r, v in enumerate(human[i]) if not np.isnan(v)])
    (row,) = agreement(j, h, bootstrap=0).to_dict(orient="records")
    full = np.column_stack([judge, human])[5:].astype(int)
    table, _ = aggregate_raters(full - 1, n_cat=5)
    assert row["fleiss_kappa"] == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)
    # one rater and the judge: two raters in all, Cohen's kappa's case: no Fleiss' kappa
    (two,) = agreement(j, h[h["rater"] == "r0"], bootstrap=0).to_dict(orient="records")
    assert np.isnan(two["fleiss_kappa"]) and not np.isnan(two["kappa_quadratic"])
