"""``stats/options.py``: `StatOptions`, one value for the statistical settings of ``rm.compare``,
``compare_frame`` and ``rm.leaderboard``; the keyword forms fold into it, both at once is a TypeError."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps

import reteco_measures as rm
from reteco_measures.sample import sample_root
from reteco_measures.stats import StatOptions, compare_frame

SETTINGS = {"test": "randomization", "correction": "bonferroni", "alpha": 0.1, "ci": 0.9, "n_resamples": 300,
            "seed": 7}


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    rng = np.random.default_rng(11)
    queries = [f"q{i}" for i in range(15)]
    docs = [f"d{j}" for j in range(12)]
    qrels = pd.DataFrame([{"query_id": q, "doc_id": d, "relevance": int(rng.integers(0, 3))}
                          for q in queries for d in docs[:6]])
    runs = {name: pd.DataFrame([{"query_id": q, "doc_id": d, "score": float(rng.random())}
                                for q in queries for d in docs])
            for name in ("a", "b", "c")}
    return qrels, runs


def _same(one: rm.Comparison, two: rm.Comparison) -> None:
    pd.testing.assert_frame_equal(one.summary, two.summary, check_exact=True)
    pd.testing.assert_frame_equal(one.pairwise, two.pairwise, check_exact=True)
    assert one.params == two.params


def test_keywords_and_value_give_the_same_comparison(data) -> None:
    qrels, runs = data
    by_keywords = rm.compare(runs, qrels, ["nDCG@10", "P@5"], **SETTINGS)
    by_value = rm.compare(runs, qrels, ["nDCG@10", "P@5"], stats=StatOptions(**SETTINGS))
    _same(by_keywords, by_value)
    assert {k: by_value.params[k] for k in SETTINGS} == SETTINGS
    # the defaults: no keyword, no value, and StatOptions() are one setting
    _same(rm.compare(runs, qrels, ["P@5"], n_resamples=200),
          rm.compare(runs, qrels, ["P@5"], stats=StatOptions(n_resamples=200)))
    assert StatOptions() == StatOptions(test="t", correction="holm", alpha=0.05, ci=0.95, n_resamples=10_000, seed=0)


def test_the_value_is_the_test_it_names(data) -> None:
    # an uncorrected paired t-test is scipy's ttest_rel on the per-query values
    qrels, runs = data
    comp = rm.compare({k: runs[k] for k in ("a", "b")}, qrels, ["P@5"],
                      stats=StatOptions(test="t", correction=None, n_resamples=100))
    pq = comp.per_query.pivot(index="query_id", columns="run", values="value")
    want = sps.ttest_rel(pq["a"], pq["b"]).pvalue
    row = comp.pairwise.iloc[0]
    assert row["p_value"] == pytest.approx(want, rel=1e-9) and row["p_adjusted"] == row["p_value"]


def test_compare_frame_takes_the_value(data) -> None:
    qrels, runs = data
    comp = rm.compare(runs, qrels, ["P@5"], n_resamples=100)
    frame = comp.per_query
    _same(compare_frame(frame, **SETTINGS), compare_frame(frame, stats=StatOptions(**SETTINGS)))
    with pytest.raises(TypeError, match="not both.*seed"):
        compare_frame(frame, stats=StatOptions(), seed=1)


@pytest.mark.parametrize("keyword", sorted(SETTINGS))
def test_value_and_keyword_together_is_a_type_error(data, keyword: str) -> None:
    qrels, runs = data
    with pytest.raises(TypeError, match=f"not both.*{keyword}"):
        rm.compare(runs, qrels, ["P@5"], stats=StatOptions(), **{keyword: SETTINGS[keyword]})
    # also when the keyword repeats a default value: one call, one way of giving the settings
    with pytest.raises(TypeError, match="not both"):
        rm.compare(runs, qrels, ["P@5"], stats=StatOptions(), test="t")


def test_not_a_stat_options_is_a_type_error(data) -> None:
    qrels, runs = data
    with pytest.raises(TypeError, match="StatOptions, not dict"):
        rm.compare(runs, qrels, ["P@5"], stats={"test": "t"})


@pytest.mark.parametrize("bad, message", [({"test": "z"}, "test must be one of"),
                                          ({"correction": "sidak"}, "correction must be one of"),
                                          ({"alpha": 1.0}, r"alpha and ci must be in \(0, 1\)"),
                                          ({"ci": 0.0}, r"alpha and ci must be in \(0, 1\)"),
                                          ({"n_resamples": 0}, "at least 1")])
def test_invalid_settings_are_refused_where_the_value_is_made(bad, message) -> None:
    with pytest.raises(ValueError, match=message):
        StatOptions(**bad)


def test_value_is_frozen_and_the_signature_shows_the_defaults() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        StatOptions().test = "wilcoxon"  # type: ignore[misc]
    params = inspect.signature(rm.compare).parameters
    shown = {k: repr(params[k].default) for k in SETTINGS}
    assert shown == {"test": "'t'", "correction": "'holm'", "alpha": "0.05", "ci": "0.95", "n_resamples": "10000",
                     "seed": "0"}
    assert repr(inspect.signature(rm.leaderboard).parameters["n_resamples"].default) == "2000"


def test_leaderboard_keywords_and_value_give_the_same_board() -> None:
    sample = sample_root()
    runs = {"a": sample / "runs" / "spoken.jsonl", "b": sample / "runs" / "spoken.jsonl"}
    settings = {"test": "bootstrap", "n_resamples": 150, "seed": 5, "alpha": 0.2}
    by_keywords = rm.leaderboard("spoken", runs, data=sample, **settings)
    by_value = rm.leaderboard("spoken", runs, data=sample, stats=StatOptions(**settings))
    pd.testing.assert_frame_equal(by_keywords.ranking, by_value.ranking, check_exact=True)
    pd.testing.assert_frame_equal(by_keywords.pairwise, by_value.pairwise, check_exact=True)
    assert by_keywords.params == by_value.params and by_value.params["n_resamples"] == 150
    # a board given no settings keeps its own default of 2,000 resamples
    assert rm.leaderboard("spoken", runs, data=sample, seed=1).params["n_resamples"] == 2_000
    with pytest.raises(TypeError, match="not both.*n_resamples"):
        rm.leaderboard("spoken", runs, data=sample, stats=StatOptions(), n_resamples=100)
