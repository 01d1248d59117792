"""Paired tests, corrections, effect sizes and W/T/L against independent references: scipy,
statsmodels, exact enumeration of the randomization distributions, and hand computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from reteco_measures.stats import adjust, compare_frame


def frame_of(values: dict[str, np.ndarray], measure: str = "nDCG@10") -> pd.DataFrame:
    rows = []
    for run, vals in values.items():
        rows.append(pd.DataFrame({"run": run, "measure": measure, "query_id": [f"q{i}" for i in range(len(vals))],
                                  "value": np.asarray(vals, dtype=float), "weight": 1.0}))
    return pd.concat(rows, ignore_index=True)


RNG = np.random.default_rng(7)
VALUES = {name: np.clip(RNG.random(40) * 0.6 + shift, 0, 1) for name, shift in (("A", 0.0), ("B", 0.1), ("C", 0.12))}
# rounding makes tied and zero differences, which the Wilcoxon test must treat as scipy does
VALUES = {k: np.round(v, 1) for k, v in VALUES.items()}


def pair(c, run, other):
    row = c.pairwise[(c.pairwise["run"] == run) & (c.pairwise["other"] == other)]
    assert len(row) == 1
    return row.iloc[0]


def test_t_equals_scipy_ttest_rel_for_every_pair() -> None:
    c = compare_frame(frame_of(VALUES), test="t", n_resamples=200)
    for a, b in itertools.combinations("ABC", 2):
        ref = sps.ttest_rel(VALUES[a], VALUES[b])
        assert pair(c, a, b)["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)
        assert pair(c, a, b)["delta"] == pytest.approx(VALUES[a].mean() - VALUES[b].mean(), abs=1e-15)


def test_wilcoxon_equals_scipy_defaults() -> None:
    c = compare_frame(frame_of(VALUES), test="wilcoxon", n_resamples=200)
    for a, b in itertools.combinations("ABC", 2):
        assert pair(c, a, b)["p_value"] == pytest.approx(sps.wilcoxon(VALUES[a], VALUES[b]).pvalue, rel=1e-10)


def test_identical_runs_have_p_one_not_nan() -> None:
    c = compare_frame(frame_of({"A": VALUES["A"], "B": VALUES["A"]}), test="t", n_resamples=100)
    assert c.pairwise["p_value"].iloc[0] == 1.0 and not c.pairwise["significant"].iloc[0]


def exact_sign_flip_p(d: np.ndarray) -> float:
    """Two-sided exact paired randomization p: all 2^n sign vectors (identity included)."""
    obs = abs(d.sum())
    count = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        count += abs(np.dot(signs, d)) >= obs - 1e-12
    return count / 2 ** len(d)


@pytest.mark.parametrize("n,seed", [(8, 1), (10, 2), (12, 3)])
def test_randomization_within_monte_carlo_error_of_exact_enumeration(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = a - 0.15 + rng.normal(0, 0.2, n)
    exact = exact_sign_flip_p(a - b)
    B = 20_000
    got = compare_frame(frame_of({"A": a, "B": b}), test="randomization", n_resamples=B, seed=seed).pairwise
    p = got["p_value"].iloc[0]
    tol = 4 * math.sqrt(exact * (1 - exact) / B) + 2 / B
    assert abs(p - exact) <= tol, (p, exact, tol)


def exact_tukey_p(values: np.ndarray, a: int, b: int) -> float:
    """Exact randomised Tukey HSD p for (runs x units) values: all permutations of runs per unit."""
    R, U = values.shape
    obs = abs(values[a].mean() - values[b].mean())
    perms = list(itertools.permutations(range(R)))
    count = total = 0
    for choice in itertools.product(range(len(perms)), repeat=U):
        means = np.mean([values[list(perms[c]), u] for u, c in enumerate(choice)], axis=0)
        count += means.max() - means.min() >= obs - 1e-12
        total += 1
    return count / total


def test_tukey_within_monte_carlo_error_of_exact_enumeration() -> None:
    rng = np.random.default_rng(11)
    vals = rng.random((3, 5)) + np.array([[0.0], [0.2], [0.45]])
    B = 20_000
    c = compare_frame(frame_of({"A": vals[0], "B": vals[1], "C": vals[2]}), test="tukey", n_resamples=B)
    for (i, a), (j, b) in itertools.combinations(enumerate("ABC"), 2):
        exact = exact_tukey_p(vals, i, j)
        got = pair(c, a, b)
        tol = 4 * math.sqrt(exact * (1 - exact) / B) + 2 / B
        assert abs(got["p_value"] - exact) <= tol, (a, b, got["p_value"], exact)
        assert got["p_adjusted"] == got["p_value"]  # Tukey HSD is already a family-wise test


def test_bootstrap_test_and_ci_agree_with_normal_theory_on_large_samples() -> None:
    rng = np.random.default_rng(5)
    n = 400
    a = rng.random(n)
    b = a - 0.03 + rng.normal(0, 0.25, n)
    c = compare_frame(frame_of({"A": a, "B": b}), test="bootstrap", n_resamples=20_000, seed=3)
    assert c.pairwise["p_value"].iloc[0] == pytest.approx(sps.ttest_rel(a, b).pvalue, abs=0.02)
    # percentile CI of a mean ≈ mean ± z·sd/√n (sd with ddof=0: the bootstrap's own variance)
    row = c.summary[c.summary["run"] == "A"].iloc[0]
    half = sps.norm.ppf(0.975) * a.std() / math.sqrt(n)
    assert row["ci_low"] == pytest.approx(a.mean() - half, abs=0.004)
    assert row["ci_high"] == pytest.approx(a.mean() + half, abs=0.004)


def test_results_are_reproducible_with_the_seed() -> None:
    f = frame_of(VALUES)
    one = compare_frame(f, test="randomization", n_resamples=500, seed=4)
    two = compare_frame(f, test="randomization", n_resamples=500, seed=4)
    pd.testing.assert_frame_equal(one.pairwise, two.pairwise)
    pd.testing.assert_frame_equal(one.summary, two.summary)


@pytest.mark.parametrize("ours,theirs", [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh")])
def test_corrections_equal_statsmodels(ours: str, theirs: str) -> None:
    p = np.array([0.001, 0.04, 0.03, 0.2, 0.0125, 0.5, 0.04, 0.9])
    np.testing.assert_allclose(adjust(p, ours), multipletests(p, method=theirs)[1], rtol=1e-12)


def test_holm_by_its_definition() -> None:
    p = [0.01, 0.04, 0.03]
    # sorted: 0.01 (x3) = 0.03, 0.03 (x2) = 0.06, 0.04 (x1) = 0.04 -> running max 0.06
    assert adjust(p, "holm").tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert adjust(p, None).tolist() == p


def test_correction_family_is_the_pairs_of_one_measure() -> None:
    f = pd.concat([frame_of(VALUES, "nDCG@10"), frame_of({k: v[::-1] for k, v in VALUES.items()}, "P@5")])
    c = compare_frame(f, test="t", correction="holm", n_resamples=100)
    for m in ("nDCG@10", "P@5"):
        part = c.pairwise[c.pairwise["measure"] == m]
        np.testing.assert_allclose(part["p_adjusted"], multipletests(part["p_value"], method="holm")[1])
        assert (part["significant"] == (part["p_adjusted"] < 0.05)).all()


def test_baseline_pairs_and_effect_size_and_wins_by_hand() -> None:
    a = np.array([0.5, 0.4, 0.3, 0.9, 0.2])
    base = np.array([0.4, 0.4, 0.5, 0.6, 0.2 + 1e-12])  # last: a tie within the 1e-9 tolerance
    c = compare_frame(frame_of({"base": base, "A": a}), baseline="base", n_resamples=100)
    row = c.pairwise.iloc[0]
    assert (row["run"], row["other"]) == ("A", "base")
    d = a - base
    assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)  # Cohen's d_z
    assert (row["wins"], row["ties"], row["losses"]) == (2, 2, 1)
    with pytest.raises(ValueError, match="baseline"):
        compare_frame(frame_of({"base": base, "A": a}), baseline="nope")


def test_bad_arguments_are_errors() -> None:
    f = frame_of(VALUES)
    for kwargs in ({"test": "z"}, {"correction": "sidak"}, {"alpha": 1.5}, {"n_resamples": 0}):
        with pytest.raises(ValueError):
            compare_frame(f, **kwargs)
    with pytest.raises(ValueError, match="at least two runs"):
        compare_frame(frame_of({"A": VALUES["A"]}))


def test_one_hundred_runs_by_one_thousand_queries_rank_quickly() -> None:
    import time

    rng = np.random.default_rng(0)
    R, Q = 100, 1000
    vals = np.clip(rng.random(Q)[None, :] + rng.normal(0, 0.1, (R, Q)), 0, 1)
    f = pd.DataFrame({"run": np.repeat([f"r{i:03d}" for i in range(R)], Q), "measure": "nDCG@10",
                      "query_id": np.tile([f"q{j}" for j in range(Q)], R), "value": vals.ravel(), "weight": 1.0})
    start = time.perf_counter()
    c = compare_frame(f, test="t", n_resamples=10_000)
    elapsed = time.perf_counter() - start
    assert len(c.pairwise) == R * (R - 1) // 2 and c.summary["ci_low"].notna().all()
    assert elapsed < 30, elapsed


def test_randomization_with_undefined_queries_matches_exact_swaps() -> None:
    # nDCG|FC-like: each run is defined on its own subset; a swap moves a query's (value or NaN)
    # from one run to the other and each run's mean is over its defined queries
    a = np.array([0.9, np.nan, 0.7, 0.8, np.nan, 0.6, 0.95, 0.85, np.nan, 0.75])
    b = np.array([0.4, 0.5, np.nan, 0.6, np.nan, 0.3, 0.5, np.nan, 0.2, 0.45])
    obs = np.nanmean(a) - np.nanmean(b)
    count = 0
    for swaps in itertools.product((False, True), repeat=len(a)):
        s = np.array(swaps)
        a_star, b_star = np.where(s, b, a), np.where(s, a, b)
        count += abs(np.nanmean(a_star) - np.nanmean(b_star)) >= abs(obs) - 1e-12
    exact = count / 2 ** len(a)
    B = 20_000
    c = compare_frame(frame_of({"A": a, "B": b}, "nDCG|FC@10"), test="randomization", n_resamples=B, seed=9)
    row = c.pairwise.iloc[0]
    assert row["delta"] == pytest.approx(obs, abs=1e-15)
    assert abs(row["p_value"] - exact) <= 4 * math.sqrt(exact * (1 - exact) / B) + 2 / B
    assert row["wins"] + row["ties"] + row["losses"] == 5  # queries defined for both runs


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30))
def test_corrections_equal_statsmodels_property(p: list[float]) -> None:
    p_arr = np.array(p)
    for ours, theirs in (("bonferroni", "bonferroni"), ("bh", "fdr_bh")):
        np.testing.assert_allclose(adjust(p_arr, ours), multipletests(p_arr, method=theirs)[1], rtol=1e-10,
                                   atol=1e-15)


# statsmodels' Holm takes ~0.07-0.2 s a call, so it gets fewer examples of its own
@settings(max_examples=6, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30))
def test_holm_equals_statsmodels_property(p: list[float]) -> None:
    p_arr = np.array(p)
    np.testing.assert_allclose(adjust(p_arr, "holm"), multipletests(p_arr, method="holm")[1], rtol=1e-10,
                               atol=1e-15)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=3, max_size=25))
def test_t_equals_scipy_property(pairs: list[tuple[float, float]]) -> None:
    a = np.array([x for x, _ in pairs])
    b = np.array([y for _, y in pairs])
    d = a - b
    c = compare_frame(frame_of({"A": a, "B": b}), test="t", n_resamples=20)
    p = c.pairwise["p_value"].iloc[0]
    if np.all(d == 0):
        assert p == 1.0
    elif np.ptp(d) == 0 or np.std(d) < 1e-12 * max(1.0, np.abs(d).max()):
        return  # constant non-zero differences: t is infinite (scipy gives 0 or NaN by rounding)
    else:
        assert p == pytest.approx(sps.ttest_rel(a, b).pvalue, rel=1e-7, abs=1e-12)


# -- a pair's p-value does not depend on the other runs (issue 24, item 4) -------------------------


def test_wilcoxon_pair_is_scipy_for_that_pair_even_when_another_pair_has_a_zero_difference() -> None:
    # b - a: 16 distinct non-zero differences, so scipy uses its exact distribution; c equals a on
    # q0, a zero difference that moves scipy to the normal approximation for any array holding it.
    # One scipy call for all pairs gave b vs a 0.0340 (normal approximation) instead of 0.0335.
    a = np.arange(16) / 20
    b = a + np.array([3, -1, 4, 1, -5, 9, 2, 6, -7, 8, 10, -11, 12, 13, 14, 15]) / 100
    c = a + np.r_[0.0, np.full(15, 0.05)]
    group = compare_frame(frame_of({"a": a, "b": b, "c": c}), test="wilcoxon", correction=None)
    alone = compare_frame(frame_of({"a": a, "b": b}), test="wilcoxon", correction=None)
    expected = sps.wilcoxon(b - a).pvalue
    assert pair(group, "a", "b")["p_value"] == pytest.approx(expected, rel=1e-12)
    assert pair(alone, "a", "b")["p_value"] == pytest.approx(expected, rel=1e-12)
    assert pair(group, "a", "c")["p_value"] == pytest.approx(sps.wilcoxon(c - a).pvalue, rel=1e-12)
    assert pair(group, "b", "c")["p_value"] == pytest.approx(sps.wilcoxon(c - b).pvalue, rel=1e-12)


def exact_bootstrap_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired bootstrap p, shifted to the null, over all n^n equally likely resamples."""
    d = a - b
    n = len(d)
    idx = np.indices((n,) * n).reshape(n, -1).T  # every resample: n^n rows of n unit indices
    star = d[idx].mean(axis=1)
    return float(np.mean(np.abs(star - d.mean()) >= abs(d.mean()) - 1e-12))


def random_group(n_runs: int, seed: int, n: int = 16, gaps: bool = True) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Per-query values of ``n_runs`` runs on ``n`` queries, with one run that equals another on
    some queries (zero differences: scipy's normal approximation for that pair, its exact test for
    the others); with ``gaps``, also one run that lacks two queries, one that answers two queries
    no other run has, and an undefined (NaN) value."""
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    values = {f"r{i}": np.round(base + rng.normal(0.04 * i, 0.15, n), 4) for i in range(n_runs)}
    values["r1"][:3] = values["r0"][:3]
    if not gaps:
        return frame_of(values), values
    values["r0"][5] = np.nan
    frame = frame_of(values)
    frame = frame[~((frame["run"] == "r2") & frame["query_id"].isin(["q0", "q1"]))]
    last = f"r{n_runs - 1}"
    extra = pd.DataFrame({"run": last, "measure": "nDCG@10", "query_id": [f"q{n}", f"q{n + 1}"],
                          "value": rng.random(2), "weight": 1.0})
    return pd.concat([frame, extra], ignore_index=True), values


def common(frame: pd.DataFrame, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    """The two runs' values on the queries both define (what the paired tests use)."""
    wide = frame.pivot_table(index="query_id", columns="run", values="value", dropna=False)[[a, b]].dropna()
    return wide[a].to_numpy(), wide[b].to_numpy()


@pytest.mark.parametrize("n_runs,seed,gaps", [(3, 0, True), (4, 1, True), (5, 2, True), (3, 3, False),
                                              (5, 4, False)])
@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization", "bootstrap"])
def test_every_pair_alone_equals_the_pair_in_the_group(n_runs: int, seed: int, gaps: bool, test: str) -> None:
    frame, _ = random_group(n_runs, seed, gaps=gaps)
    runs = [f"r{i}" for i in range(n_runs)]
    group = compare_frame(frame, runs=runs, test=test, correction=None, n_resamples=2_000, seed=5)
    for a, b in itertools.combinations(runs, 2):
        alone = compare_frame(frame[frame["run"].isin([a, b])], runs=[a, b], test=test, correction=None,
                              n_resamples=2_000, seed=5)
        got, ref = pair(group, a, b), pair(alone, a, b)
        if test == "t":  # the same arithmetic over more (masked) units: equal to rounding
            assert got["p_value"] == pytest.approx(ref["p_value"], rel=1e-12), (a, b)
        else:
            assert got["p_value"] == ref["p_value"], (a, b)
        x, y = common(frame, a, b)
        if test == "t":
            assert got["p_value"] == pytest.approx(sps.ttest_rel(x, y).pvalue, rel=1e-10), (a, b)
        elif test == "wilcoxon":
            assert got["p_value"] == pytest.approx(sps.wilcoxon(y - x).pvalue, rel=1e-12), (a, b)
        assert (got["wins"], got["ties"], got["losses"]) == (ref["wins"], ref["ties"], ref["losses"])


def test_resampling_pair_in_a_group_is_within_monte_carlo_error_of_scipy_and_enumeration() -> None:
    # every run answers the same 6 queries: scipy's exact sign-flip test and the exact bootstrap
    # enumeration (6^6 resamples) are the references; the pairs come from one 4-run comparison
    rng = np.random.default_rng(21)
    base = rng.random(6)
    values = {f"r{i}": base + rng.normal(0.06 * i, 0.1, 6) for i in range(4)}
    B = 20_000
    for test in ("randomization", "bootstrap"):
        c = compare_frame(frame_of(values), test=test, correction=None, n_resamples=B, seed=8)
        for a, b in itertools.combinations(values, 2):
            x, y = values[a], values[b]
            if test == "randomization":
                exact = sps.permutation_test((x - y,), np.mean, permutation_type="samples",
                                             n_resamples=np.inf).pvalue
            else:
                exact = exact_bootstrap_p(x, y)
            tol = 4 * math.sqrt(exact * (1 - exact) / B) + 2 / B
            assert abs(pair(c, a, b)["p_value"] - exact) <= tol, (test, a, b, exact)


@pytest.mark.parametrize("ours,theirs", [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh")])
def test_a_requested_correction_is_statsmodels_over_the_pairs_of_the_group(ours: str, theirs: str) -> None:
    frame, _ = random_group(5, 3)
    c = compare_frame(frame, test="t", correction=ours, n_resamples=100)
    uncorrected = compare_frame(frame, test="t", correction=None, n_resamples=100)
    np.testing.assert_array_equal(c.pairwise["p_value"], uncorrected.pairwise["p_value"])
    np.testing.assert_allclose(c.pairwise["p_adjusted"], multipletests(c.pairwise["p_value"], method=theirs)[1],
                               rtol=1e-12)


def test_wilcoxon_pairs_grouped_for_scipy_still_get_scipys_own_p_value() -> None:
    # pairs that share units, zero count and tie status go to scipy in one call: mixtures of tied,
    # zero and distinct differences over 20 random groups, every pair against scipy on its own array
    rng = np.random.default_rng(99)
    for trial in range(20):
        n = 20
        base = rng.random(n)
        values = {}
        for i in range(4):
            v = base + rng.normal(0.03 * i, 0.2, n)
            values[f"r{i}"] = np.round(v, 1) if (trial + i) % 2 else v  # coarse values: ties and zeros
        c = compare_frame(frame_of(values), test="wilcoxon", correction=None, n_resamples=10)
        for a, b in itertools.combinations(values, 2):
            d = values[b] - values[a]
            expected = 1.0 if np.all(d == 0) else sps.wilcoxon(d).pvalue
            assert pair(c, a, b)["p_value"] == pytest.approx(expected, rel=1e-12), (trial, a, b)


def _counts_by_rule(rng: np.random.Generator, strata: np.ndarray, size: int) -> np.ndarray:
    """The resampling rule written out: in each resample, each unit position of stratum h draws the
    unit start_h + floor(r·n_h) (r uniform in [0, 1), one draw per position, row by row)."""
    U = len(strata)
    out = np.zeros((size, U))
    r = rng.random((size, U))
    for b in range(size):
        for j in range(U):
            members = np.flatnonzero(strata == strata[j])
            pick = members[0] + min(math.floor(r[b, j] * len(members)), len(members) - 1)
            out[b, pick] += 1
    return out


@pytest.mark.parametrize("strata", [np.zeros(37, dtype=np.int64), np.repeat([0, 1, 2], [5, 20, 12])])
def test_bootstrap_counts_follow_the_draw_rule(strata: np.ndarray) -> None:
    from reteco_measures.stats.tests import bootstrap_counts

    got = bootstrap_counts(np.random.default_rng(11), strata, 40)
    want = _counts_by_rule(np.random.default_rng(11), strata, 40)
    assert np.array_equal(got, want)


def test_bootstrap_aggregates_are_the_ratio_of_the_resampled_sums() -> None:
    """With every weight 1 the denominators are the number of units drawn (no product needed);
    with weights and undefined units they are C @ W.T: both equal the ratio computed here."""
    from reteco_measures.stats.tests import bootstrap_aggregates, bootstrap_counts, build_paired

    rng = np.random.default_rng(5)
    rows = [(f"r{r}", f"q{q}", float(rng.random())) for r in range(3) for q in range(50)]
    frame = pd.DataFrame(rows, columns=["run", "query_id", "value"])
    for weights in (np.ones(len(frame)), rng.integers(1, 4, len(frame)).astype(float)):
        part = frame.assign(weight=weights)
        part.loc[part.index % 13 == 0, "value"] = np.nan
        for f in (frame.assign(weight=1.0), part):
            P = build_paired(f, ["r0", "r1", "r2"])
            got = bootstrap_aggregates(P, 200, np.random.default_rng(3))
            C = bootstrap_counts(np.random.default_rng(3), P.strata, 200)
            num, den = C @ P.S.T, C @ P.W.T
            want = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
            assert np.array_equal(got, want, equal_nan=True)
