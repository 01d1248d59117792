"""StepNDCG (RETECO sub-track 1b): per-step values against pytrec_eval, hand-computed averages."""

from __future__ import annotations

import math
import random

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import reteco_measures as rm

L2, L3, L4 = math.log2(2), math.log2(3), math.log2(4)


def frame_qrels(judged: dict[str, dict[str, int]]) -> pd.DataFrame:
    return pd.DataFrame([(q, d, r) for q, docs in judged.items() for d, r in docs.items()],
                        columns=["query_id", "doc_id", "relevance"])


def frame_run(scored: dict[str, dict[str, float]]) -> pd.DataFrame:
    return pd.DataFrame([(q, d, s) for q, docs in scored.items() for d, s in docs.items()],
                        columns=["query_id", "doc_id", "score"])


def values(measure: str, qrels, run, **kw) -> dict[str, float]:
    return {m.query_id: float(m.value) for m in rm.iter_calc([measure], qrels, run, **kw)}


def aggregate(measure: str, qrels, run, **kw) -> float:
    return rm.calc_aggregate([measure], qrels, run, **kw)[rm.parse_measures(measure)[0]]


def test_per_step_values_equal_pytrec_eval_side_by_side():
    rng = random.Random(7)
    judged: dict[str, dict[str, int]] = {}
    scored: dict[str, dict[str, float]] = {}
    for q in range(6):
        for s in range(1, rng.randint(1, 4) + 1):
            sid = f"{1000 + q}_{q}_step{s}"
            docs = [f"doc{rng.randint(0, 30)}" for _ in range(rng.randint(1, 5))]
            judged[sid] = {d: 1 for d in docs}
            if rng.random() < 0.8:  # some steps are missing from the run
                # coarse scores make ties on purpose
                scored[sid] = {f"doc{rng.randint(0, 30)}": float(rng.randint(0, 5)) for _ in range(15)}
    qrels, run = frame_qrels(judged), frame_run(scored)
    for k in (1, 3, 10):
        ev = pytrec_eval.RelevanceEvaluator(judged, {f"ndcg_cut.{k}"})
        expected = ev.evaluate(scored)
        got = values(f"StepNDCG(average='step')@{k}", qrels, run)
        assert set(got) == set(judged)
        for sid in judged:
            ref = expected[sid][f"ndcg_cut_{k}"] if sid in expected else 0.0  # missing step -> 0
            assert got[sid] == pytest.approx(ref, abs=1e-9), (sid, k)


def test_query_average_vs_step_average():
    # q1 has steps q1_step1 (perfect: 1.0) and q1_step2 (nothing found: 0.0); q2 has one step found at rank 2
    #   q1_step2 gold {c}, ranking [z]: 0
    #   q2_step1 gold {d}, ranking [y, d]: (1/log2 3) / 1 = 0.630930
    # average='query': q1 = (1 + 0)/2 = 0.5, q2 = 0.630930 -> (0.5 + 0.630930) / 2 = 0.565465
    # average='step':  (1 + 0 + 0.630930) / 3 = 0.543643
    qrels = frame_qrels({"q1_step1": {"a": 1}, "q1_step2": {"c": 1}, "q2_step1": {"d": 1}})
    run = frame_run({"q1_step1": {"a": 2.0}, "q1_step2": {"z": 1.0}, "q2_step1": {"y": 2.0, "d": 1.0}})
    assert values("StepNDCG@10", qrels, run) == pytest.approx({"q1": 0.5, "q2": 1 / L3})
    assert aggregate("StepNDCG@10", qrels, run) == pytest.approx((0.5 + 1 / L3) / 2, abs=1e-12)
    assert values("StepNDCG(average='step')@10", qrels, run) == pytest.approx(
        {"q1_step1": 1.0, "q1_step2": 0.0, "q2_step1": 1 / L3})
    assert aggregate("StepNDCG(average='step')@10", qrels, run) == pytest.approx((1 + 0 + 1 / L3) / 3, abs=1e-12)


def test_missing_step_scores_zero_in_its_query_mean():
    # q has three supplied steps; the run answers only step 1 perfectly -> (1 + 0 + 0) / 3
    qrels = frame_qrels({"q_step1": {"a": 1}, "q_step2": {"b": 1}, "q_step3": {"c": 1}})
    run = frame_run({"q_step1": {"a": 1.0}})
    assert values("StepNDCG@10", qrels, run) == pytest.approx({"q": 1 / 3})


def test_cutoff_and_whole_ranking():
    # step gold {a, b}; ranking [x, a, y, b]
    # @1: 0; @2: (1/log2 3) / (1 + 1/log2 3) = 0.386853
    # no cutoff: (1/log2 3 + 1/log2 5) / (1 + 1/log2 3) = 1.061606 / 1.630930 = 0.650920
    qrels = frame_qrels({"q_step1": {"a": 1, "b": 1}})
    run = frame_run({"q_step1": {"x": 4.0, "a": 3.0, "y": 2.0, "b": 1.0}})
    assert aggregate("StepNDCG@1", qrels, run) == 0.0
    assert aggregate("StepNDCG@2", qrels, run) == pytest.approx((1 / L3) / (1 + 1 / L3))
    assert aggregate("StepNDCG", qrels, run) == pytest.approx((1 / L3 + 1 / math.log2(5)) / (1 + 1 / L3))


def test_parent_from_topics_parent_id():
    # step ids without the _step<n> form; topics say s1, s2 belong to Q and s3 to R
    # s1: 1.0, s2: 0.0, s3: [x, c] -> 1/log2 3. Q = 0.5, R = 0.630930
    qrels = frame_qrels({"s1": {"a": 1}, "s2": {"b": 1}, "s3": {"c": 1}})
    run = frame_run({"s1": {"a": 1.0}, "s2": {"z": 1.0}, "s3": {"x": 2.0, "c": 1.0}})
    topics = pd.DataFrame({"query_id": ["s1", "s2", "s3", "Q", "R"], "parent_id": ["Q", "Q", "R", None, None]})
    assert values("StepNDCG@10", qrels, run, topics=topics) == pytest.approx({"Q": 0.5, "R": 1 / L3})
    # parent_id wins over the id form: "R_step1" listed under parent "Q" counts for Q
    qrels2 = frame_qrels({"R_step1": {"a": 1}, "Q_step1": {"b": 1}})
    run2 = frame_run({"R_step1": {"a": 1.0}})
    topics2 = pd.DataFrame({"query_id": ["R_step1"], "parent_id": ["Q"]})
    assert values("StepNDCG@10", qrels2, run2, topics=topics2) == pytest.approx({"Q": 0.5})


def test_unmapped_step_is_own_query_with_warning():
    qrels = frame_qrels({"loner": {"a": 1}, "q_step1": {"b": 1}})
    run = frame_run({"loner": {"a": 1.0}, "q_step1": {"b": 1.0}})
    with pytest.warns(UserWarning, match="no parent query"):
        got = values("StepNDCG@10", qrels, run)
    assert got == {"loner": 1.0, "q": 1.0}


def test_rel_threshold_and_graded_step_qrels():
    # grades a:1, b:2; rel=2 keeps only b. ranking [a, b]: @10 = (1/log2 3)/1 = 0.630930; rel=1: 1.0
    qrels = frame_qrels({"q_step1": {"a": 1, "b": 2}})
    run = frame_run({"q_step1": {"a": 2.0, "b": 1.0}})
    assert aggregate("StepNDCG(rel=2)@10", qrels, run) == pytest.approx(1 / L3)
    assert aggregate("StepNDCG@10", qrels, run) == pytest.approx(1.0)


def test_evaluate_by_domain_with_parent_rows():
    # domain A: q1 (steps 1.0, 0.0 -> 0.5) and q2 (one step 1.0 -> 1.0) => A = 0.75
    # domain B: q3 (one step, missing -> 0.0) => B = 0.0
    # (macro) = (0.75 + 0) / 2 = 0.375; (all) = (0.5 + 1 + 0) / 3 = 0.5
    qrels = frame_qrels({"q1_step1": {"a": 1}, "q1_step2": {"b": 1}, "q2_step1": {"c": 1}, "q3_step1": {"d": 1}})
    run = frame_run({"q1_step1": {"a": 1.0}, "q1_step2": {"x": 1.0}, "q2_step1": {"c": 1.0}})
    topics = pd.DataFrame({
        "query_id": ["q1", "q2", "q3", "q1_step1", "q1_step2", "q2_step1", "q3_step1"],
        "parent_id": [None, None, None, "q1", "q1", "q2", "q3"],
        "domain": ["A", "A", "B", "A", "A", "A", "B"],
    })
    frame = rm.evaluate(["StepNDCG@10"], qrels, run, topics=topics, by="domain").set_index("domain")
    assert frame.loc["A", "value"] == pytest.approx(0.75) and frame.loc["A", "n"] == 2
    assert frame.loc["B", "value"] == 0.0
    assert frame.loc["(macro)", "value"] == pytest.approx(0.375)
    assert frame.loc["(all)", "value"] == pytest.approx(0.5) and frame.loc["(all)", "n"] == 3
    # average='step' reports steps: A = (1 + 0 + 1)/3, B = 0, (all) = 2/4
    frame = rm.evaluate(["StepNDCG(average='step')@10"], qrels, run, topics=topics, by="domain").set_index("domain")
    assert frame.loc["A", "value"] == pytest.approx(2 / 3) and frame.loc["(all)", "value"] == pytest.approx(0.5)
    assert frame.loc["(macro)", "value"] == pytest.approx((2 / 3 + 0) / 2)


def test_plain_ir_measures_call_mixed_with_pytrec_eval_measures():
    # q has two steps: step1 perfect (1.0), step2 gold {b} ranked 2nd: (1/log2 3)/1 = 0.630930
    # r has one step, missing from the run: 0
    # StepNDCG (query average) = ((1 + 0.630930)/2 + 0) / 2 = 0.407732
    # nDCG@10 by pytrec_eval averages over the three step topics: (1 + 0.630930 + 0) / 3 = 0.543643
    qrels = frame_qrels({"q_step1": {"a": 1}, "q_step2": {"b": 1}, "r_step1": {"c": 1}})
    run = frame_run({"q_step1": {"a": 1.0}, "q_step2": {"x": 2.0, "b": 1.0}})
    measure = ir_measures.parse_measure("StepNDCG@10")
    result = ir_measures.calc_aggregate([measure, ir_measures.nDCG @ 10], qrels, run)
    assert result[measure] == pytest.approx(((1 + 1 / L3) / 2 + 0) / 2, abs=1e-12)
    assert result[ir_measures.nDCG @ 10] == pytest.approx((1 + 1 / L3 + 0) / 3, abs=1e-12)
    # per query: the two query values, plus NaN filler rows ir_measures adds for the step topics
    rows = {(m.query_id, str(m.measure)): float(m.value) for m in ir_measures.iter_calc([measure, ir_measures.nDCG @ 10],
                                                                                       qrels, run)}
    assert rows[("q", "StepNDCG@10")] == pytest.approx((1 + 1 / L3) / 2) and rows[("r", "StepNDCG@10")] == 0.0
    assert all(math.isnan(rows[(s, "StepNDCG@10")]) for s in ("q_step1", "q_step2", "r_step1"))
    assert rm.calc_aggregate(["StepNDCG@10", "nDCG@10"], qrels, run)[measure] == result[measure]


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=3),  # parent query number
            st.sets(st.sampled_from("abcdef"), min_size=1, max_size=3),  # gold
            st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 3)), max_size=6),  # run (ties)
        ),
        min_size=1,
        max_size=8,
    )
)
def test_property_query_average_is_mean_of_pytrec_eval_steps(steps):
    judged, scored, parent = {}, {}, {}
    for i, (p, gold, ranking) in enumerate(steps):
        sid = f"Q{p}_step{i}"
        judged[sid] = {d: 1 for d in gold}
        parent[sid] = f"Q{p}"
        if ranking:
            scored[sid] = {d: float(s) for d, s in ranking}
    ev = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.5"})
    per_step = ev.evaluate(scored) if scored else {}
    by_query: dict[str, list[float]] = {}
    for sid in judged:
        by_query.setdefault(parent[sid], []).append(per_step[sid]["ndcg_cut_5"] if sid in per_step else 0.0)
    expected = {q: float(np.mean(v)) for q, v in by_query.items()}
    run = frame_run(scored) if scored else pd.DataFrame({"query_id": [], "doc_id": [], "score": []})
    got = values("StepNDCG@5", frame_qrels(judged), run)
    assert got == pytest.approx(expected, abs=1e-9)
