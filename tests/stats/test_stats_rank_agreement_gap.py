"""τ_GAP (Gao & Oard 2015) and the top-k Kendall distance (Fagin, Kumar & Sivakumar 2003) of
``rm.stats.rank_agreement``: hand computations written out here, and τ_GAP side by side with the
``tau_gap`` of ``autojudge-evaluate`` 1.1.0 (TREC AutoJudge) on the same two leaderboards."""

from __future__ import annotations

import importlib.util
import os
import warnings

import numpy as np
import pytest

from reteco_measures.stats import rank_agreement
from reteco_measures.stats.rank_agreement import tau_gap, topk_kendall

REFERENCE = {"A": 5.0, "B": 4.0, "C": 3.0, "D": 2.0, "E": 1.0}


def _by_order(order: str) -> dict[str, float]:
    return {r: float(len(order) - i) for i, r in enumerate(order)}


def _autojudge_tau_gap():
    """autojudge-evaluate's tau_gap module, loaded from its file: the package's ``__init__`` loads
    NLTK data from the network, which this machine may not reach."""
    spec = importlib.util.find_spec("autojudge_evaluate")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("autojudge-evaluate is not installed")
    path = os.path.join(list(spec.submodule_search_locations)[0], "tau_gap.py")
    if not os.path.isfile(path):
        pytest.skip("autojudge-evaluate has no tau_gap module")
    mod_spec = importlib.util.spec_from_file_location("_autojudge_tau_gap", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module.tau_gap


def test_tau_gap_by_hand():
    # b = B, A, C, D, E: position 2 (A): B above, gap 1, wrong -> 0; C, D, E: every run above right -> 1
    assert rank_agreement(REFERENCE, _by_order("BACDE")).tau_gap == pytest.approx(2 / 4 * (0 + 1 + 1 + 1) - 1)
    # b = A, B, C, E, D: D at position 5: gaps to A, B, C, E = 3, 2, 1, 1; E is wrong -> 6/7
    assert rank_agreement(REFERENCE, _by_order("ABCED")).tau_gap == pytest.approx(2 / 4 * (3 + 6 / 7) - 1)
    assert rank_agreement(REFERENCE, REFERENCE).tau_gap == 1.0
    assert rank_agreement(REFERENCE, _by_order("EDCBA")).tau_gap == pytest.approx(-1.0)


def test_tau_gap_weighs_the_gap_of_the_reference():
    b = {"A": 3.0, "C": 2.0, "B": 1.0}  # b swaps B and C
    # B, C far apart in the reference: position 2 (C): A above, right -> 1; position 3 (B): A right
    # (gap 1), C wrong (gap 8) -> 1/9; tau_GAP = 2/2 * (1 + 1/9) - 1
    far = {"A": 10.0, "B": 9.0, "C": 1.0}
    assert rank_agreement(far, b).tau_gap == pytest.approx(1 / 9)
    # B, C close: position 3 (B): A right (gap 8), C wrong (gap 1) -> 8/9
    close = {"A": 10.0, "B": 2.0, "C": 1.0}
    assert rank_agreement(close, b).tau_gap == pytest.approx(8 / 9)
    # Kendall's tau cannot tell these two swaps apart
    assert rank_agreement(far, b).kendall_tau_b == rank_agreement(close, b).kendall_tau_b


def test_tau_gap_reference_ties_weigh_nothing_and_b_ties_go_by_run_name():
    # the reference ties A and B: that pair has gap 0 and counts in neither sum
    a = {"A": 2.0, "B": 2.0, "C": 1.0}
    assert rank_agreement(a, {"B": 3.0, "A": 2.0, "C": 1.0}).tau_gap == pytest.approx(1.0)  # position 2 unused
    # b ties Z and A: walked by name (A, Z): the reference puts Z above A -> position 2 wrong
    a2 = {"Z": 3.0, "A": 2.0, "C": 1.0}
    assert rank_agreement(a2, {"Z": 1.0, "A": 1.0, "C": 0.0}).tau_gap == pytest.approx(1 * (0 + 1) - 1)
    assert np.isnan(tau_gap(np.array([1.0, 1.0, 1.0]), np.array([3.0, 2.0, 1.0])))


def test_tau_gap_equals_autojudge_evaluate_on_the_same_leaderboards():
    reference = _autojudge_tau_gap()
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(2, 10))
        runs = [f"run{i:02d}" for i in range(n)]  # autojudge walks runs sorted by id: names sort as listed
        a = rng.integers(0, 5, n).astype(float) / 4
        b = rng.integers(0, 5, n).astype(float) / 4
        theirs = reference(list(a), list(b))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if len(set(a)) < 2:
                assert np.isnan(theirs)
                continue
            ours = rank_agreement(dict(zip(runs, a, strict=True)), dict(zip(runs, b, strict=True)),
                                  n_resamples=0).tau_gap
        assert ours == pytest.approx(theirs, abs=1e-12), (a, b)


def test_topk_kendall_by_hand():
    # a's top 3: A, B, C; b's: A, D, B. Pairs of the union {A, B, C, D}: (B, D) opposite -> 1;
    # (C, D) one in each list only -> 1; the rest agree -> K = 2 of a maximum 3*3 + 1/2*3*2 = 12
    b = {"A": 5.0, "D": 4.0, "B": 3.0, "C": 2.0, "E": 1.0}
    assert rank_agreement(REFERENCE, b, top=3).topk_kendall == pytest.approx(2 / 12)
    # a: A, B, C; b: D, E, A -> A-D, A-E, B-D, B-E, C-D, C-E cost 1; (B, C), (D, E) cost p = 1/2 -> 7/12
    b = {"D": 5.0, "E": 4.0, "A": 3.0, "B": 2.0, "C": 1.0}
    assert rank_agreement(REFERENCE, b, top=3).topk_kendall == pytest.approx(7 / 12)
    x, y = np.array([5.0, 4.0, 3.0, 2.0, 1.0]), np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    assert topk_kendall(x, y, 2) == 0.0
    assert topk_kendall(x, y[::-1], 2) == 1.0  # disjoint top 2
    # lists (0, 1, 2) and (3, 4, 2): (0,2), (1,2), (0,3), (0,4), (1,3), (1,4), (2,3), (2,4) cost 1;
    # (0, 1) and (3, 4) are held by one list only and cost p: with p = 0, 8 of a maximum 9
    assert topk_kendall(np.array([5.0, 4, 3, 2, 1]), np.array([1.0, 2, 3, 5, 4]), 3, p=0.0) == \
        pytest.approx(8 / 9)
    assert topk_kendall(np.array([5.0, 4, 3, 2, 1]), np.array([1.0, 2, 3, 5, 4]), 3, p=1.0) == \
        pytest.approx(10 / 15)
    # without top, k = n: two discordant pairs over Fagin's maximum 5*5 + 1/2*5*4 (fewer than 2k runs:
    # the lists cannot be disjoint, so the distance stays below 1)
    assert rank_agreement(REFERENCE, _by_order("BACED")).topk_kendall == pytest.approx(2 / 35)


def test_the_new_statistics_get_intervals_and_appear_in_the_outputs():
    rng = np.random.default_rng(0)
    import pandas as pd

    rows = [{"run": r, "query_id": str(q), "value": float(v + rng.normal(0, 0.1))}
            for r, v in zip("ABCD", [0.8, 0.6, 0.5, 0.2], strict=True) for q in range(20)]
    pq = pd.DataFrame(rows)
    res = rank_agreement(pq, pq, n_resamples=100)
    low, high = res.intervals["tau_gap"]
    assert low <= res.tau_gap <= high
    d = res.to_dict()
    assert "tau_gap_ci_low" in d and d["topk_kendall"] == 0.0
    assert set(res.to_frame()["statistic"]) >= {"tau_gap", "topk_kendall"}
