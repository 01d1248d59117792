"""providers/native: the native kernels against pytrec_eval, on the cases a side-by-side audit found
(empty qrels, NaN / infinite scores, ``nDCG(gains=...)`` on all-negative queries) and on random runs.

The expected values come from the peer: ir_measures' own pytrec_eval provider (plain pytrec_eval,
the native kernels switched off), ir_measures' own ``test_empty`` rule, and TREC's definition of
nDCG for the hand-computed case.
"""

from __future__ import annotations

import math

import ir_measures
import numpy as np
import pandas as pd
import pytest
from ir_measures import AP, RR, P, R, ScoredDoc, nDCG

import reteco_measures as rm
from reteco_measures.errors import DataFormatError
from reteco_measures.kernels import standard
from reteco_measures.providers.native import NATIVE_PROVIDER, trec_eval_safe_qrels

PYTREC = ir_measures.providers.registry["pytrec_eval"]


def _pytrec_values(measures, qrels, run) -> dict:
    """Per-query values of plain pytrec_eval (through ir_measures' own provider)."""
    return {(m.query_id, str(m.measure)): float(m.value) for m in PYTREC.iter_calc(measures, qrels, run)}


def _values(metrics) -> dict:
    return {(m.query_id, str(m.measure)): float(m.value) for m in metrics}


# ------------------------------------------------------------------------------------------------
# issue 24, item 1: empty qrels


def test_native_provider_on_empty_qrels_gives_no_value() -> None:
    # ir_measures' test_empty: no qrels query, nothing to report
    with rm.use_native_kernels():
        assert list(ir_measures.iter_calc([P @ 5], [], [ScoredDoc("0", "D1", 0.8)])) == []
        assert list(ir_measures.iter_calc([nDCG @ 10, AP, RR], [], [ScoredDoc("0", "D1", 0.8)])) == []
    assert list(PYTREC.iter_calc([P @ 5], [], [ScoredDoc("0", "D1", 0.8)])) == []


def test_kernels_on_empty_qrels() -> None:
    qrels = pd.DataFrame({"query_id": pd.Series([], dtype="str"), "doc_id": pd.Series([], dtype="str"),
                          "relevance": pd.Series([], dtype="int64")})
    run = pd.DataFrame({"query_id": ["0"], "doc_id": ["D1"], "score": [0.8]})
    qids, values = standard.per_query([P @ 5, nDCG @ 10, RR, AP @ 10, R @ 10], qrels, run)
    assert len(qids) == 0 and all(len(v) == 0 for v in values.values())


# ------------------------------------------------------------------------------------------------
# issue 24, item 2: NaN and infinite scores


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_native_provider_hands_non_finite_scores_to_pytrec_eval(bad: float) -> None:
    qrels = {"1": {"a": 1, "b": 0}}
    run = {"1": {"a": bad, "b": 1.0}}
    expected = ir_measures.calc_aggregate([nDCG @ 10], qrels, run)  # native kernels off: pytrec_eval
    with rm.use_native_kernels():
        got = ir_measures.calc_aggregate([nDCG @ 10], qrels, run)
    assert got == expected
    if math.isnan(bad):  # the audit's case: pytrec_eval ranks b first, a (relevant) second
        assert got[nDCG @ 10] == pytest.approx(1 / math.log2(3), abs=1e-12)


def test_rm_refuses_non_finite_scores_naming_the_row() -> None:
    # docs/performance.md: rm.* refuses such a run (a NaN has no place in a ranking)
    with pytest.raises(DataFormatError, match="not a finite number"):
        rm.calc_aggregate(["nDCG@10"], {"1": {"a": 1, "b": 0}}, {"1": {"a": math.nan, "b": 1.0}})


# ------------------------------------------------------------------------------------------------
# issue 24, item 3: nDCG(gains=...) on all-negative queries


def _all_negative() -> tuple[pd.DataFrame, pd.DataFrame]:
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": [-1, -2]})
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [1.0, 0.5]})
    return qrels, run


def test_gains_mapping_comes_before_the_all_negative_rule() -> None:
    qrels, run = _all_negative()
    measure = nDCG(gains={-2: 5, -1: 2, 0: 1}) @ 10
    # TREC nDCG of the mapped labels: d1 (gain 2) at rank 1, d2 (gain 5) at rank 2; ideal 5, 2
    dcg = 2 / math.log2(2) + 5 / math.log2(3)
    ideal = 5 / math.log2(2) + 2 / math.log2(3)
    assert ideal > 0 and dcg / ideal == pytest.approx(0.8231817979910551, abs=1e-15)
    expected = ir_measures.calc_aggregate([measure], qrels, run)[measure]  # ir_measures / pytrec_eval
    assert expected == pytest.approx(dcg / ideal, abs=1e-15)
    assert rm.calc_aggregate([measure], qrels, run)[measure] == pytest.approx(expected, abs=1e-15)
    with rm.use_native_kernels(False, scope="api"):  # the pytrec_eval route of rm.* too
        assert rm.calc_aggregate([measure], qrels, run)[measure] == pytest.approx(expected, abs=1e-15)
    with rm.use_native_kernels():
        assert ir_measures.calc_aggregate([measure], qrels, run)[measure] == pytest.approx(expected, abs=1e-15)


def test_safe_qrels_follow_the_gains_mapping() -> None:
    qrels, _ = _all_negative()
    assert len(trec_eval_safe_qrels(qrels, {-2: 5, -1: 2, 0: 1})) == 2  # mapped labels are positive
    safe = trec_eval_safe_qrels(qrels)  # no mapping: one extra label-0 judgment
    assert len(safe) == 3 and safe["relevance"].iloc[-1] == 0
    mapped = trec_eval_safe_qrels(qrels, {-2: -3, 0: 4, 7: 0})  # 0 maps to 4: the extra label must map to 0
    assert mapped["relevance"].iloc[-1] == 7


def test_all_negative_query_scores_zero_without_gains() -> None:
    qrels, run = _all_negative()
    values = rm.calc_aggregate(["nDCG@10", "AP", "P@1", "R@2", "RR"], qrels, run)
    assert all(v == 0.0 for v in values.values())  # trec_eval: no relevant document


# ------------------------------------------------------------------------------------------------
# differential: random runs, native kernels (rm.* and the opt-in provider) vs plain pytrec_eval

MEASURES = [nDCG @ 5, nDCG, nDCG(gains={0: 0, 1: 1, 2: 3, 3: 7}) @ 10, nDCG(judged_only=True) @ 10, AP, AP @ 10,
            AP(rel=2), P @ 3, P(rel=2) @ 10, P(judged_only=True) @ 5, R @ 10, R(rel=2) @ 5, RR, RR(rel=2)]


def _random_case(seed: int, all_negative: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n_q = int(rng.integers(1, 8))
    q_rows, r_rows = [], []
    for q in range(n_q):
        docs = [f"d{i}" for i in rng.choice(40, int(rng.integers(1, 25)), replace=False)]
        judged = rng.choice(len(docs) + 5, min(len(docs) + 5, int(rng.integers(1, 12))), replace=False)
        for j in judged:
            doc = docs[j] if j < len(docs) else f"u{j}"  # some judged documents are not retrieved
            q_rows.append((f"q{q}", doc, int(rng.integers(-1, 4))))  # -1: in the pool, not judged
        scores = np.round(rng.random(len(docs)), 1)  # ties
        r_rows += [(f"q{q}", d, float(s)) for d, s in zip(docs, scores)]
    if rng.random() < 0.3:  # a run query without qrels
        r_rows.append(("extra", "d1", 0.5))
    qrels = pd.DataFrame(q_rows, columns=["query_id", "doc_id", "relevance"])
    if not all_negative:
        top = qrels.groupby("query_id")["relevance"].transform("max")
        qrels = qrels[top >= 0]  # plain pytrec_eval crashes on all-negative queries (see above)
    return qrels.reset_index(drop=True), pd.DataFrame(r_rows, columns=["query_id", "doc_id", "score"])


@pytest.mark.parametrize("seed", range(40))
def test_random_runs_native_equal_pytrec_eval(seed: int) -> None:
    qrels, run = _random_case(seed)
    if qrels.empty:
        pytest.skip("no query left")
    assert all(standard.supports(m) for m in MEASURES)
    expected = _pytrec_values(MEASURES, qrels, run)
    ours = _values(rm.iter_calc(MEASURES, qrels, run))
    with rm.use_native_kernels():
        assert NATIVE_PROVIDER.supports(MEASURES[0])
        provider = _values(ir_measures.iter_calc(MEASURES, qrels, run))
    assert ours.keys() == expected.keys() == provider.keys()
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, abs=1e-9), key
        assert provider[key] == pytest.approx(value, abs=1e-9), key


@pytest.mark.parametrize("seed", range(10))
def test_random_runs_with_nan_scores_fall_back_to_pytrec_eval(seed: int) -> None:
    qrels, run = _random_case(100 + seed)
    if qrels.empty:
        pytest.skip("no query left")
    run.loc[run.index[:: 3], "score"] = math.nan
    as_dict = {q: dict(zip(g["doc_id"], g["score"])) for q, g in run.groupby("query_id")}
    expected = _values(ir_measures.iter_calc(MEASURES, qrels, as_dict))
    with rm.use_native_kernels():
        got = _values(ir_measures.iter_calc(MEASURES, qrels, as_dict))
    assert got == expected


@pytest.mark.parametrize("seed", range(15))
def test_random_gains_on_negative_labels_equal_pytrec_eval(seed: int) -> None:
    # ir_measures maps the gains before pytrec_eval sees the labels: -1 becomes relevant, and a
    # query whose labels are all -1 is an ordinary one (the audit's item 3, on random runs)
    qrels, run = _random_case(200 + seed, all_negative=True)
    qrels.loc[qrels.index[::2], "relevance"] = -1
    qrels.loc[qrels["query_id"] == qrels["query_id"].iloc[0], "relevance"] = -1  # one all-negative query
    measures = [nDCG(gains={-1: 2, 0: 1, 1: 1, 2: 3, 3: 4}) @ 10, nDCG(gains={-1: 1, 0: 0, 1: 1, 2: 2, 3: 3})]
    expected = _pytrec_values(measures, qrels, run)
    for got in (_values(rm.iter_calc(measures, qrels, run)), rm.calc_aggregate(measures, qrels, run)):
        if isinstance(got, dict) and got and not isinstance(next(iter(got)), tuple):
            for m in measures:
                mean = np.mean([v for (q, name), v in expected.items() if name == str(m)])
                assert got[m] == pytest.approx(mean, abs=1e-9)
        else:
            assert got.keys() == expected.keys()
            for key, value in expected.items():
                assert got[key] == pytest.approx(value, abs=1e-9), key
