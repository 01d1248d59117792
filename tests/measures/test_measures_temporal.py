"""TEMPO / RETECO Track 1 temporal diagnostics: TP, TR, TC, nDCG|FC.

Every expected number is computed by hand in the test (the arithmetic is written out), taken
from SPEC §2's golden vectors, or comes from pytrec_eval run side by side.
"""

from __future__ import annotations

import json
import math
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_measures import nDCG

import reteco_measures as rm

L2, L3, L4, L5, L6 = (math.log2(i) for i in (2, 3, 4, 5, 6))  # discount denominators log2(i+1), i = 1..5
D5 = 1 / L2 + 1 / L3 + 1 / L4 + 1 / L5 + 1 / L6  # Σ w_i over five returned ranks = 2.948459...


def run_of(rankings: dict[str, list[str]]) -> pd.DataFrame:
    """A run whose trec_eval order is the listed order (strictly decreasing scores)."""
    rows = [(q, d, float(100 - i)) for q, docs in rankings.items() for i, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def qrels_of(judged: dict[str, dict[str, int]]) -> pd.DataFrame:
    rows = [(q, d, r) for q, docs in judged.items() for d, r in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def verdict_case(verdicts: list[int], qid: str = "q"):
    """Docs d1..dn ranked in order; the oracle verdict of d_i is verdicts[i-1] (qrels grade)."""
    docs = [f"d{i}" for i in range(1, len(verdicts) + 1)]
    # every doc is judged (0 or 1) so the query is in the qrels even when no verdict is 1
    qrels = qrels_of({qid: dict(zip(docs, verdicts, strict=True))})
    return qrels, run_of({qid: docs})


def one(measure: str, qrels, run, **kw) -> float:
    return rm.calc_aggregate([measure], qrels, run, **kw)[rm.parse_measures(measure)[0]]


def per_query(measure: str, qrels, run, **kw) -> dict[str, float]:
    return {m.query_id: float(m.value) for m in rm.iter_calc([measure], qrels, run, **kw)}


# ------------------------------------------------------------------------------------------------
# SPEC §2 golden vectors


@pytest.mark.parametrize(
    "verdicts, dcg, ap",
    [
        ([1, 0, 0, 0, 0], 0.33916, 1.0),
        ([0, 0, 0, 0, 1], 0.13121, 0.2),
        ([1, 1, 0, 0, 0], 0.55315, 1.0),
    ],
)
def test_tp_golden_vectors(verdicts, dcg, ap):
    qrels, run = verdict_case(verdicts)
    assert one("TP@5", qrels, run) == pytest.approx(dcg, abs=5e-6)
    assert one("TP(form='ap')@5", qrels, run) == pytest.approx(ap, abs=5e-6)


def test_tp_golden_vectors_exact_arithmetic():
    # [1,0,0,0,0]: w1 / Σw = 1 / 2.948459 = 0.339160
    qrels, run = verdict_case([1, 0, 0, 0, 0])
    assert one("TP@5", qrels, run) == pytest.approx((1 / L2) / D5, abs=1e-12)
    # [0,0,0,0,1]: w5 / Σw = (1/log2 6) / 2.948459 = 0.386853 / 2.948459 = 0.131205
    qrels, run = verdict_case([0, 0, 0, 0, 1])
    assert one("TP@5", qrels, run) == pytest.approx((1 / L6) / D5, abs=1e-12)
    # [1,1,0,0,0]: (1 + 1/log2 3) / Σw = 1.630930 / 2.948459 = 0.553146
    qrels, run = verdict_case([1, 1, 0, 0, 0])
    assert one("TP@5", qrels, run) == pytest.approx((1 / L2 + 1 / L3) / D5, abs=1e-12)


def test_tc_golden_two_periods():
    topics = pd.DataFrame({"query_id": ["q"], "steps": [[{"step_id": "q_step1", "gold_ids": ["a"]},
                                                         {"step_id": "q_step2", "gold_ids": ["b"]}]]})
    qrels = qrels_of({"q": {"a": 1, "b": 1}})
    # one of the two periods covered: 1/2
    assert one("TC@5", qrels, run_of({"q": ["a", "x", "y"]}), topics=topics) == 0.5
    # both covered: 2/2
    assert one("TC@5", qrels, run_of({"q": ["x", "b", "a"]}), topics=topics) == 1.0


# ------------------------------------------------------------------------------------------------
# TemporalPrecision: more hand-computed cases


def test_tp_short_ranking_uses_returned_ranks_only():
    # 4 returned docs at k=5, verdicts [0,1,0,1]
    # dcg: (1/log2 3 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4 + 1/log2 5) = 1.061606 / 2.561606 = 0.414430
    qrels, run = verdict_case([0, 1, 0, 1])
    expected = (1 / L3 + 1 / L5) / (1 / L2 + 1 / L3 + 1 / L4 + 1 / L5)
    assert one("TP@5", qrels, run) == pytest.approx(expected, abs=1e-12)
    assert expected == pytest.approx(0.414430, abs=1e-6)
    # ap: relevant ranks 2 and 4: (1/2 + 2/4) / 2 = 0.5
    assert one("TP(form='ap')@5", qrels, run) == pytest.approx(0.5, abs=1e-12)


def test_tp_cutoff_truncates():
    # [0,1,1,1,1] at k=3 -> top three [0,1,1]
    # dcg: (1/log2 3 + 1/log2 4) / (1 + 1/log2 3 + 1/log2 4) = 1.130930 / 2.130930 = 0.530721
    qrels, run = verdict_case([0, 1, 1, 1, 1])
    assert one("TP@3", qrels, run) == pytest.approx((1 / L3 + 1 / L4) / (1 / L2 + 1 / L3 + 1 / L4), abs=1e-12)
    # ap: ranks 2, 3: (1/2 + 2/3) / 2 = 7/12 = 0.583333
    assert one("TP(form='ap')@3", qrels, run) == pytest.approx(7 / 12, abs=1e-12)


def test_tp_all_and_none_relevant():
    qrels, run = verdict_case([1, 1, 1, 1, 1])
    assert one("TP@5", qrels, run) == pytest.approx(1.0)  # Σ w v / Σ w with every v = 1
    assert one("TP(form='ap')@5", qrels, run) == pytest.approx(1.0)  # (1/1+2/2+3/3+4/4+5/5)/5
    qrels, run = verdict_case([0, 0, 0])
    assert one("TP@5", qrels, run) == 0.0
    assert one("TP(form='ap')@5", qrels, run) == 0.0  # no relevant rank -> 0 by definition


def test_tp_missing_query_scores_zero_and_counts_in_mean():
    # q1 = [1,0,0,0,0] -> 1/2.948459 = 0.339160; q2 judged but absent from the run -> 0
    qrels = qrels_of({"q1": {"d1": 1}, "q2": {"z": 1}})
    run = run_of({"q1": ["d1", "d2", "d3", "d4", "d5"]})
    assert per_query("TP@5", qrels, run) == pytest.approx({"q1": 1 / D5, "q2": 0.0})
    assert one("TP@5", qrels, run) == pytest.approx((1 / D5 + 0.0) / 2, abs=1e-12)
    assert one("TP(form='ap')@5", qrels, run) == pytest.approx((1.0 + 0.0) / 2)


def test_tp_ties_follow_trec_eval_order():
    # equal scores: trec_eval puts the larger doc id first -> ranking [b, a] = verdicts [0, 1]
    qrels = qrels_of({"q": {"a": 1, "b": 0}})
    run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 1.0]})
    # dcg: (1/log2 3) / (1 + 1/log2 3) = 0.630930 / 1.630930 = 0.386853
    assert one("TP@2", qrels, run) == pytest.approx((1 / L3) / (1 / L2 + 1 / L3), abs=1e-12)
    # run_order keeps the file order [a, b] = [1, 0] -> 1 / 1.630930 = 0.613147
    assert one("TP@2", qrels, run, tie_break="run_order") == pytest.approx(1 / (1 / L2 + 1 / L3), abs=1e-12)


def test_tp_graded_qrels_oracle_threshold():
    # oracle verdict = grade >= 1: grades [2, 0, -1, 1] -> verdicts [1, 0, 0, 1]
    qrels = qrels_of({"q": {"d1": 2, "d2": 0, "d3": -1, "d4": 1}})
    run = run_of({"q": ["d1", "d2", "d3", "d4"]})
    # ap: ranks 1 and 4: (1/1 + 2/4) / 2 = 0.75
    assert one("TP(form='ap')@4", qrels, run) == pytest.approx(0.75)
    # dcg: (1 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4 + 1/log2 5) = 1.430677 / 2.561606 = 0.558508
    assert one("TP@4", qrels, run) == pytest.approx((1 + 1 / L5) / (1 / L2 + 1 / L3 + 1 / L4 + 1 / L5))


def test_tp_frozen_labels_replace_qrels_verdicts():
    # qrels call d1 relevant, but the frozen judge says only d2 is temporally relevant
    qrels = qrels_of({"q": {"d1": 1}})
    run = run_of({"q": ["d1", "d2", "d3"]})
    labels = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"], "temporal": [0, 1],
                           "periods": [[], []]})
    # [0,1,0] at k=2: dcg (1/log2 3)/(1 + 1/log2 3) = 0.386853; ap 1/2
    assert one("TP@2", qrels, run, labels=labels) == pytest.approx((1 / L3) / (1 / L2 + 1 / L3))
    assert one("TP(form='ap')@2", qrels, run, labels=labels) == pytest.approx(0.5)
    # d3 is missing from the labels -> verdict 0: [0,1,0] at k=3, ap still (1/2)/1 = 0.5
    assert one("TP(form='ap')@3", qrels, run, labels=labels) == pytest.approx(0.5)


def test_tp_without_cutoff_uses_whole_ranking():
    # six docs, verdict only at rank 6: ap = (1/6)/1; dcg = (1/log2 7) / Σ_{i=1..6} 1/log2(i+1)
    qrels, run = verdict_case([0, 0, 0, 0, 0, 1])
    assert one("TP(form='ap')", qrels, run) == pytest.approx(1 / 6)
    assert one("TP", qrels, run) == pytest.approx((1 / math.log2(7)) / (D5 + 1 / math.log2(7)))


# ------------------------------------------------------------------------------------------------
# TemporalRelevance


def test_tr_returned_vs_k():
    # [1,0,1] returned at k=5: over='returned' 2/3, over='k' 2/5
    qrels, run = verdict_case([1, 0, 1])
    assert one("TR@5", qrels, run) == pytest.approx(2 / 3)
    assert one("TR(over='k')@5", qrels, run) == pytest.approx(2 / 5)


def test_tr_cutoff_and_no_cutoff():
    qrels, run = verdict_case([1, 0, 1, 0])
    assert one("TR@2", qrels, run) == pytest.approx(1 / 2)  # top two [1,0]
    assert one("TR", qrels, run) == pytest.approx(2 / 4)  # whole ranking
    assert one("TR@1", qrels, run) == 1.0


def test_tr_empty_ranking_is_zero():
    qrels = qrels_of({"q1": {"a": 1}, "q2": {"b": 1}})
    run = run_of({"q1": ["a", "x"]})  # q2 missing: 0 for both denominators
    assert per_query("TR@10", qrels, run) == {"q1": 0.5, "q2": 0.0}
    assert per_query("TR(over='k')@10", qrels, run) == {"q1": 0.1, "q2": 0.0}
    assert one("TR@10", qrels, run) == pytest.approx(0.25)  # (1/2 + 0) / 2


def test_tr_over_k_needs_cutoff():
    qrels, run = verdict_case([1])
    with pytest.raises(ValueError, match="needs a cutoff"):
        one("TR(over='k')", qrels, run)


def test_tr_labels_missing_doc_is_zero():
    qrels = qrels_of({"q": {"a": 1, "b": 1, "c": 1}})
    run = run_of({"q": ["a", "b", "c", "d"]})
    labels = pd.DataFrame({"query_id": ["q"], "doc_id": ["b"], "temporal": [1], "periods": [["p"]]})
    assert one("TR@4", qrels, run, labels=labels) == pytest.approx(1 / 4)  # only b is temporal


# ------------------------------------------------------------------------------------------------
# TemporalCoverage


def steps_topics(spec: dict[str, list[list[str]]]) -> pd.DataFrame:
    """topics with a steps column: {query: [gold ids of step 1, gold ids of step 2, ...]}."""
    rows = [{"query_id": q, "steps": [{"step_id": f"{q}_step{i}", "gold_ids": g} for i, g in enumerate(steps, 1)]}
            for q, steps in spec.items()]
    return pd.DataFrame(rows)


def test_tc_period_beyond_cutoff_is_not_covered():
    topics = steps_topics({"q": [["a"]]})
    qrels = qrels_of({"q": {"a": 1}})
    run = run_of({"q": ["x", "y", "a"]})
    assert one("TC@2", qrels, run, topics=topics) == 0.0  # a is at rank 3
    assert one("TC@3", qrels, run, topics=topics) == 1.0
    assert one("TC", qrels, run, topics=topics) == 1.0  # no cutoff: whole ranking


def test_tc_overlapping_gold_sets():
    # P1 = {a, b}, P2 = {b}, P3 = {c}; top-k = {b}: P1 and P2 covered -> 2/3
    topics = steps_topics({"q": [["a", "b"], ["b"], ["c"]]})
    qrels = qrels_of({"q": {"a": 1, "b": 1, "c": 1}})
    assert one("TC@10", qrels, run_of({"q": ["b", "z"]}), topics=topics) == pytest.approx(2 / 3)


def test_tc_query_without_periods_is_excluded_not_zero():
    # q1: 2 periods, 1 covered -> 0.5; q2: no steps -> NaN, excluded; q3 has steps but is missing -> 0
    topics = steps_topics({"q1": [["a"], ["b"]], "q3": [["c"]]})
    qrels = qrels_of({"q1": {"a": 1, "b": 1}, "q2": {"x": 1}, "q3": {"c": 1}})
    run = run_of({"q1": ["a"], "q2": ["x"]})
    values = per_query("TC@10", qrels, run, topics=topics)
    assert values["q1"] == 0.5 and values["q3"] == 0.0 and math.isnan(values["q2"])
    assert one("TC@10", qrels, run, topics=topics) == pytest.approx((0.5 + 0.0) / 2)


def test_tc_step_without_gold_is_an_uncoverable_period():
    topics = steps_topics({"q": [["a"], []]})
    qrels = qrels_of({"q": {"a": 1}})
    assert one("TC@10", qrels, run_of({"q": ["a"]}), topics=topics) == 0.5  # 1 of 2 periods


def test_tc_plain_gold_lists_and_release_steps_file(tmp_path):
    # steps given as plain lists of gold ids; and the same from the release's steps file as topics=path
    topics = pd.DataFrame({"query_id": ["q"], "steps": [[["a"], ["b"], ["c", "d"]]]})
    qrels = qrels_of({"q": {"a": 1, "b": 1, "c": 1, "d": 1}})
    run = run_of({"q": ["d", "b", "x"]})
    assert one("TC@10", qrels, run, topics=topics) == pytest.approx(2 / 3)  # periods 2 and 3
    path = tmp_path / "steps_dev.jsonl"
    path.write_text(json.dumps({"id": "q", "query": "text", "steps": [
        {"step_id": "q_step1", "step": 1, "step_instruction": "i1", "gold_ids": ["a"]},
        {"step_id": "q_step2", "step": 2, "step_instruction": "i2", "gold_ids": ["b"]},
        {"step_id": "q_step3", "step": 3, "step_instruction": "i3", "gold_ids": ["c", "d"]}]}) + "\n")
    assert one("TC@10", qrels, run, topics=str(path)) == pytest.approx(2 / 3)
    # the measure-parameter channel, usable from a plain ir_measures call
    measure = ir_measures.parse_measure(f"TC(topics='{path}')@1")
    assert ir_measures.calc_aggregate([measure], qrels, run)[measure] == pytest.approx(1 / 3)  # only d


def test_tc_frozen_labels_with_required_periods():
    # required periods 2017 and 2024; d1 covers 2017, d2 covers 2017 + 2030 (not required),
    # d3 is temporally relevant but covers nothing, d4 covers 2024
    topics = pd.DataFrame({"query_id": ["q"], "required_periods": [["2017", "2024"]]})
    labels = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": ["d1", "d2", "d3", "d4"], "temporal": [1, 1, 1, 0],
                           "periods": [["2017"], ["2017", "2030"], [], ["2024"]]})
    qrels = qrels_of({"q": {"d1": 1}})
    run = run_of({"q": ["d1", "d2", "d3", "d4"]})
    assert one("TC@3", qrels, run, topics=topics, labels=labels) == 0.5  # only 2017 in the top 3
    # d4 covers 2024 although its verdict is 0: coverage is judged separately from the verdict
    assert one("TC@4", qrels, run, topics=topics, labels=labels) == 1.0


def test_tc_frozen_labels_fall_back_to_step_ids():
    topics = steps_topics({"q": [["a"], ["b"]]})  # no required_periods column: periods q_step1, q_step2
    labels = pd.DataFrame({"query_id": ["q"], "doc_id": ["z"], "temporal": [1], "periods": [["q_step2"]]})
    qrels = qrels_of({"q": {"a": 1, "b": 1}})
    # the labels decide: z covers q_step2; a (a gold doc of step 1) is not in the labels -> covers nothing
    assert one("TC@10", qrels, run_of({"q": ["a", "z"]}), topics=topics, labels=labels) == 0.5


def test_tc_labels_file_and_explicit_empty_required_periods(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"query_id": "q1", "doc_id": "a", "temporal": 1, "periods": ["P1"]},
        {"query_id": "q2", "doc_id": "b", "temporal": 1, "periods": ["P1"]},
    ]) + "\n")
    topics = pd.DataFrame({"query_id": ["q1", "q2"], "required_periods": [["P1", "P2"], []]})
    qrels = qrels_of({"q1": {"a": 1}, "q2": {"b": 1}})
    run = run_of({"q1": ["a"], "q2": ["b"]})
    values = per_query("TC@10", qrels, run, topics=topics, labels=str(path))
    assert values["q1"] == 0.5 and math.isnan(values["q2"])  # q2: explicit empty list = no periods


def test_tc_without_any_periods_warns_and_is_nan():
    qrels, run = verdict_case([1, 0])
    with pytest.warns(UserWarning, match="required period"):
        assert math.isnan(one("TC@10", qrels, run))


# ------------------------------------------------------------------------------------------------
# nDCG|FC


def test_ndcg_fc_only_fully_covered_queries():
    # q1: gold {d1, d2}, steps {d1}, {d2}; ranking [x, d1, d2] -> TC = 1
    #     DCG@3 = 1/log2 3 + 1/log2 4 = 1.130930; IDCG@3 = 1 + 1/log2 3 = 1.630930 -> 0.693426
    # q2: gold {e1}, steps {e1}, {e2}; ranking [e1] -> TC = 1/2 -> excluded (NaN)
    topics = steps_topics({"q1": [["d1"], ["d2"]], "q2": [["e1"], ["e2"]]})
    qrels = qrels_of({"q1": {"d1": 1, "d2": 1}, "q2": {"e1": 1, "e2": 1}})
    run = run_of({"q1": ["x", "d1", "d2"], "q2": ["e1"]})
    expected_q1 = (1 / L3 + 1 / L4) / (1 / L2 + 1 / L3)
    values = per_query("nDCG_FC@3", qrels, run, topics=topics)
    assert values["q1"] == pytest.approx(expected_q1, abs=1e-12) and math.isnan(values["q2"])
    assert one("nDCG|FC@3", qrels, run, topics=topics) == pytest.approx(expected_q1, abs=1e-12)
    # the same per-query number as pytrec_eval's ndcg_cut_3 for q1
    ev = pytrec_eval.RelevanceEvaluator({"q1": {"d1": 1, "d2": 1}}, {"ndcg_cut.3"})
    scored = ev.evaluate({"q1": {"x": 3.0, "d1": 2.0, "d2": 1.0}})
    assert values["q1"] == pytest.approx(scored["q1"]["ndcg_cut_3"], abs=1e-9)


def test_ndcg_fc_empty_subset_nan_or_zero():
    topics = steps_topics({"q": [["a"], ["b"]]})
    qrels = qrels_of({"q": {"a": 1, "b": 1}})
    run = run_of({"q": ["a"]})  # TC = 1/2, nobody fully covered
    assert math.isnan(one("nDCG_FC@10", qrels, run, topics=topics))
    assert one("nDCG_FC(empty=0)@10", qrels, run, topics=topics) == 0.0  # starter-kit scorer


def test_ndcg_fc_average_over_subset_and_missing_queries():
    # q1 and q2 fully covered, q3 missing from the run (TC = 0, excluded), q4 without steps (excluded)
    # q1: ranking [a] with gold {a}: nDCG = 1; q2: ranking [y, b] with gold {b}: (1/log2 3)/1 = 0.630930
    topics = steps_topics({"q1": [["a"]], "q2": [["b"]], "q3": [["c"]]})
    qrels = qrels_of({"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 1}})
    run = run_of({"q1": ["a"], "q2": ["y", "b"], "q4": ["d"]})
    assert one("nDCG|FC@10", qrels, run, topics=topics) == pytest.approx((1.0 + 1 / L3) / 2, abs=1e-12)
    assert one("TC@10", qrels, run, topics=topics) == pytest.approx((1 + 1 + 0) / 3)


def test_ndcg_fc_rel_threshold_binarises_graded_qrels():
    # grades a:2, b:1; rel=2 -> only a is relevant. ranking [b, a]: DCG = 1/log2 3; IDCG = 1 -> 0.630930
    # rel=1 (default): both relevant: DCG = 1 + 1/log2 3 = IDCG -> 1.0
    topics = steps_topics({"q": [["a"]]})
    qrels = qrels_of({"q": {"a": 2, "b": 1}})
    run = run_of({"q": ["b", "a"]})
    assert one("nDCG_FC(rel=2)@10", qrels, run, topics=topics) == pytest.approx(1 / L3)
    assert one("nDCG_FC@10", qrels, run, topics=topics) == pytest.approx(1.0)


def test_ndcg_fc_with_frozen_labels_coverage():
    # coverage from labels: required {P1}; d2 covers it. nDCG from qrels: gold {d1}; ranking [d2, d1]
    # -> TC@2 = 1, nDCG@2 = (1/log2 3) / 1 = 0.630930; at k=1 the top doc d2 still covers P1 but d1 is cut:
    # nDCG@1 = 0 / 1 = 0 (defined, since TC@1 = 1)
    topics = pd.DataFrame({"query_id": ["q"], "required_periods": [["P1"]]})
    labels = pd.DataFrame({"query_id": ["q"], "doc_id": ["d2"], "temporal": [1], "periods": [["P1"]]})
    qrels = qrels_of({"q": {"d1": 1}})
    run = run_of({"q": ["d2", "d1"]})
    assert one("nDCG|FC@2", qrels, run, topics=topics, labels=labels) == pytest.approx(1 / L3)
    assert one("nDCG|FC@1", qrels, run, topics=topics, labels=labels) == 0.0


# ------------------------------------------------------------------------------------------------
# integration with ir_measures, side_info and evaluate(by=...)


def _mixed_case():
    # q1: gold {a, b}; steps {a}, {b}; ranking [a, x, b]
    # q2: gold {c};    steps {c}, {d}; ranking [y, c]
    topics = steps_topics({"q1": [["a"], ["b"]], "q2": [["c"], ["d"]]})
    topics["domain"] = ["alpha", "beta"]
    qrels = qrels_of({"q1": {"a": 1, "b": 1}, "q2": {"c": 1}})
    run = run_of({"q1": ["a", "x", "b"], "q2": ["y", "c"]})
    return topics, qrels, run


def test_plain_ir_measures_call_mixes_standard_and_ours():
    topics, qrels, run = _mixed_case()
    with rm.side_info(topics=topics):
        result = ir_measures.calc_aggregate([nDCG @ 10, rm.TC @ 10, rm.TP @ 10, ir_measures.AP @ 10], qrels, run)
    # TC: q1 2/2, q2 1/2 -> 0.75
    assert result[rm.TC @ 10] == pytest.approx(0.75)
    # TP: q1 [1,0,1] -> (1 + 1/2) / (1 + 1/log2 3 + 1/2) = 1.5 / 2.130930; q2 [0,1] -> 0.630930 / 1.630930
    tp1 = (1 / L2 + 1 / L4) / (1 / L2 + 1 / L3 + 1 / L4)
    tp2 = (1 / L3) / (1 / L2 + 1 / L3)
    assert result[rm.TP @ 10] == pytest.approx((tp1 + tp2) / 2, abs=1e-12)
    # nDCG@10 and AP@10 are pytrec_eval's: compare side by side
    ev = pytrec_eval.RelevanceEvaluator({"q1": {"a": 1, "b": 1}, "q2": {"c": 1}}, {"ndcg_cut.10", "map_cut.10"})
    scored = ev.evaluate({"q1": {"a": 3.0, "x": 2.0, "b": 1.0}, "q2": {"y": 2.0, "c": 1.0}})
    assert result[nDCG @ 10] == pytest.approx(np.mean([s["ndcg_cut_10"] for s in scored.values()]), abs=1e-12)
    assert result[ir_measures.AP @ 10] == pytest.approx(np.mean([s["map_cut_10"] for s in scored.values()]))
    # the same numbers through the keyword form
    again = rm.calc_aggregate(["nDCG@10", "TC@10", "TP@10"], qrels, run, topics=topics)
    assert again[rm.TC @ 10] == result[rm.TC @ 10] and again[nDCG @ 10] == result[nDCG @ 10]


def test_parse_names_and_aliases():
    assert ir_measures.parse_measure("TemporalCoverage@10") == ir_measures.parse_measure("TC@10")
    assert rm.parse_measures("nDCG|FC@10")[0] == rm.nDCG_FC @ 10
    assert rm.measure_label(rm.nDCG_FC(empty=0) @ 10) == "nDCG|FC(empty=0)@10"
    assert str(rm.TP(form="ap") @ 5) == "TemporalPrecision(form='ap')@5"


def test_evaluate_by_domain_macro_and_all():
    # alpha: q1 TC 1.0, q3 TC 0.0 (missing from the run) -> 0.5; beta: q2 TC 0.5, q4 no steps (excluded)
    # (macro) = (0.5 + 0.5) / 2 = 0.5; (all) = (1 + 0 + 0.5) / 3 = 0.5
    # TR@10 (returned): q1 2/3, q3 0, q2 1/2, q4 1/1 -> alpha (2/3 + 0)/2 = 1/3, beta (1/2 + 1)/2 = 3/4
    # (macro) = (1/3 + 3/4) / 2 = 13/24; (all) = (2/3 + 0 + 1/2 + 1) / 4 = 13/24 as well (equal sizes)
    topics = steps_topics({"q1": [["a"], ["b"]], "q2": [["c"], ["d"]], "q3": [["e"]]})
    topics = pd.concat([topics, pd.DataFrame({"query_id": ["q4"], "steps": [None]})], ignore_index=True)
    topics["domain"] = ["alpha", "beta", "alpha", "beta"]
    qrels = qrels_of({"q1": {"a": 1, "b": 1}, "q2": {"c": 1}, "q3": {"e": 1}, "q4": {"f": 1}})
    run = run_of({"q1": ["a", "x", "b"], "q2": ["y", "c"], "q4": ["f"]})
    frame = rm.evaluate(["TC@10", "TR@10"], qrels, run, topics=topics, by="domain")
    got = {(r.domain, r.measure): (r.value, r.n) for r in frame.itertuples()}
    assert got[("alpha", "TC@10")] == (pytest.approx(0.5), 2)
    assert got[("beta", "TC@10")] == (pytest.approx(0.5), 1)
    assert got[("(macro)", "TC@10")] == (pytest.approx(0.5), 2)
    assert got[("(all)", "TC@10")] == (pytest.approx(0.5), 3)
    assert got[("alpha", "TR@10")][0] == pytest.approx(1 / 3)
    assert got[("beta", "TR@10")][0] == pytest.approx(3 / 4)
    assert got[("(macro)", "TR@10")][0] == pytest.approx(13 / 24)
    assert got[("(all)", "TR@10")] == (pytest.approx(13 / 24), 4)


def test_evaluate_by_domain_macro_differs_from_all():
    # alpha: q1 TC 1, q2 TC 0 -> 0.5; beta: q3 TC 1 -> 1.0. (macro) = 0.75, (all) = 2/3
    topics = steps_topics({"q1": [["a"]], "q2": [["b"]], "q3": [["c"]]})
    topics["domain"] = ["alpha", "alpha", "beta"]
    qrels = qrels_of({"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}})
    run = run_of({"q1": ["a"], "q2": ["x"], "q3": ["c"]})
    frame = rm.evaluate(["TC@10"], qrels, run, topics=topics, by="domain").set_index("domain")
    assert frame.loc["alpha", "value"] == 0.5 and frame.loc["beta", "value"] == 1.0
    assert frame.loc["(macro)", "value"] == pytest.approx(0.75)
    assert frame.loc["(all)", "value"] == pytest.approx(2 / 3)


# ------------------------------------------------------------------------------------------------
# property tests against a direct transcription of the SPEC definitions


def _reference(ranking: list[str], rel: set[str], periods: list[set[str]], k: int) -> dict[str, float]:
    top = ranking[:k]
    v = [1 if d in rel else 0 for d in top]
    w = [1 / math.log2(i + 1) for i in range(1, len(top) + 1)]
    tp = sum(wi * vi for wi, vi in zip(w, v, strict=True)) / sum(w) if top else 0.0
    ranks = [i for i, vi in enumerate(v, start=1) if vi]
    ap = sum(sum(v[:r]) / r for r in ranks) / len(ranks) if ranks else 0.0
    tr = sum(v) / len(top) if top else 0.0
    tc = sum(1 for p in periods if p & set(top)) / len(periods) if periods else float("nan")
    return {"tp": tp, "ap": ap, "tr": tr, "tc": tc}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.lists(
        st.tuples(
            st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8),  # ranking
            st.sets(st.sampled_from("abcdefghij"), min_size=1, max_size=5),  # relevant docs
            st.lists(st.sets(st.sampled_from("abcdefghij"), min_size=1, max_size=3), max_size=3),  # periods
        ),
        min_size=1,
        max_size=5,
    ),
    k=st.integers(min_value=1, max_value=9),
)
@pytest.mark.slow
def test_property_kernels_match_definitions(data, k):
    rankings, judged, steps = {}, {}, {}
    for i, (ranking, rel, periods) in enumerate(data):
        q = f"q{i}"
        if ranking:
            rankings[q] = ranking
        judged[q] = {d: 1 for d in rel}
        steps[q] = [sorted(p) for p in periods]
    qrels = qrels_of(judged)
    run = run_of(rankings) if rankings else pd.DataFrame({"query_id": [], "doc_id": [], "score": []})
    topics = steps_topics(steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        metrics = list(rm.iter_calc([f"TP@{k}", f"TP(form='ap')@{k}", f"TR@{k}", f"TC@{k}"], qrels, run,
                                    topics=topics))
    got = {(m.query_id, str(m.measure)): float(m.value) for m in metrics}
    for i, (ranking, rel, periods) in enumerate(data):
        q = f"q{i}"
        ref = _reference(ranking, rel, periods, k)
        assert got[(q, f"TemporalPrecision@{k}")] == pytest.approx(ref["tp"], abs=1e-12)
        assert got[(q, f"TemporalPrecision(form='ap')@{k}")] == pytest.approx(ref["ap"], abs=1e-12)
        assert got[(q, f"TemporalRelevance@{k}")] == pytest.approx(ref["tr"], abs=1e-12)
        tc = got[(q, f"TemporalCoverage@{k}")]
        assert (math.isnan(tc) and math.isnan(ref["tc"])) or tc == pytest.approx(ref["tc"], abs=1e-12)
