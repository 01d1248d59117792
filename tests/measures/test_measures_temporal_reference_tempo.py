"""TEMPO reference mode (``reference='tempo'``): cases built from the rules of TEMPO's
``temporal_metrics.py``, values computed by hand in the comments.

TEMPO's rules: required periods exist only for cross-period queries and are the first two time
anchors (baseline, comparison) — duplicates kept; TC = (baseline covered + comparison covered) / 2;
TP (position-weighted: the 'ap' form) and TR are dropped for queries its judge calls non-temporal;
nDCG|FC is nDCG where TC = 1; ranking is Python's stable sort by score.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

import reteco_measures as rm

QRELS = pd.DataFrame([("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d5", 1), ("q3", "d7", 1), ("q4", "d9", 1)],
                     columns=["query_id", "doc_id", "relevance"])
RUN = pd.DataFrame([("q1", "d1", 2.0), ("q1", "d2", 1.0), ("q2", "d5", 1.0),
                    ("q3", "d6", 3.0), ("q3", "d7", 3.0), ("q3", "d8", 1.0),
                    ("q4", "d9", 2.0), ("q4", "d10", 1.0)], columns=["query_id", "doc_id", "score"])
TOPICS = pd.DataFrame([
    # cross-period by its guidance class; anchors ['2017', '2017'] (RETECO's default dedupes them)
    {"query_id": "q1", "query": "Bitcoin fees", "has_temporal_intent": True, "required_periods": ["2017", "2017"],
     "query_guidance": {"temporal_reasoning_class_primary": "trends_changes_and_cross_period",
                        "key_time_anchors": ["2017", "2017"], "is_temporal_query": True}},
    # non-temporal for the judge and the guidance
    {"query_id": "q2", "query": "What is a wallet?", "has_temporal_intent": False,
     "query_guidance": {"is_temporal_query": False}},
    # temporal, not cross-period
    {"query_id": "q3", "query": "How long does a block take?", "has_temporal_intent": True,
     "temporal_focus": "duration"},
    # cross-period by TEMPO's words ("changed", "since"); no anchors → '2015' and 'later / recent period'
    {"query_id": "q4", "query": "How have fees changed since 2015?", "has_temporal_intent": True},
])
LABELS = pd.DataFrame([
    {"query_id": "q1", "doc_id": "d1", "temporal": 1, "periods": ["2017"], "covers_baseline": True,
     "covers_comparison": False},
    {"query_id": "q1", "doc_id": "d2", "temporal": 0, "periods": [], "covers_baseline": False,
     "covers_comparison": False},
    {"query_id": "q2", "doc_id": "d5", "temporal": 1, "periods": []},
    {"query_id": "q3", "doc_id": "d7", "temporal": 1, "periods": []},
])


def _per_query(measures, labels=LABELS, **kw):
    """{(measure as written, query_id): value}."""
    written = {str(rm.parse_measures([m])[0]): m for m in measures}
    out = {}
    for m in rm.iter_calc(measures, QRELS, RUN, topics=TOPICS, labels=labels, **kw):
        out[(written[str(m.measure)], m.query_id)] = float(m.value)
    return out


def _eq(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


def test_tempo_reference_per_query():
    ms = ["TP(reference='tempo')@10", "TR(reference='tempo')@10", "TC(reference='tempo')@10",
          "nDCG_FC(reference='tempo')@10"]
    got = _per_query(ms, tie_break="stable")
    tp, tr, tc, fc = ms
    want = {
        # q1: verdicts [1, 0] → TP = 1/1 = 1.0, TR = 1/2; baseline covered, comparison not → TC = 0.5
        (tp, "q1"): 1.0, (tr, "q1"): 0.5, (tc, "q1"): 0.5, (fc, "q1"): math.nan,
        # q2: non-temporal → TP, TR, TC, nDCG|FC all dropped
        (tp, "q2"): math.nan, (tr, "q2"): math.nan, (tc, "q2"): math.nan, (fc, "q2"): math.nan,
        # q3: stable order d6, d7 (tie, file order), d8 → verdicts [0, 1, 0] → TP = (1/2)/1, TR = 1/3;
        # not cross-period → TC, nDCG|FC not defined
        (tp, "q3"): 0.5, (tr, "q3"): 1 / 3, (tc, "q3"): math.nan, (fc, "q3"): math.nan,
        # q4: no label → verdicts [0, 0]; nothing covered → TC = 0
        (tp, "q4"): 0.0, (tr, "q4"): 0.0, (tc, "q4"): 0.0, (fc, "q4"): math.nan,
    }
    for key, value in want.items():
        assert _eq(got[key], value), (key, got[key], value)


def test_differences_from_the_reteco_default():
    got = _per_query(["TP@10", "TR@10", "TC@10"], tie_break="stable")
    # RETECO default: required periods from the topics, duplicates merged: {'2017'}, covered by d1 → 1.0
    assert got[("TC@10", "q1")] == 1.0
    # TP's default form is 'dcg': q1 verdicts [1, 0] → 1 / (1 + 1/log2(3)) = 0.61315...
    assert got[("TP@10", "q1")] == pytest.approx(1 / (1 + 1 / math.log2(3)))
    # non-temporal queries keep their TP/TR (d5 is temporal in the labels → 1.0)
    assert got[("TR@10", "q2")] == 1.0
    # trec_eval's tie order (d7 before d6: doc id descending) instead of the stable sort
    tp = _per_query(["TP(reference='tempo')@10"])
    assert tp[("TP(reference='tempo')@10", "q3")] == 1.0


def test_periods_name_roles_or_anchors_and_full_coverage():
    labels = pd.DataFrame([
        {"query_id": "q4", "doc_id": "d9", "temporal": 1, "periods": ["2015"]},  # TEMPO's fallback baseline
        {"query_id": "q4", "doc_id": "d10", "temporal": 1, "periods": ["comparison"]},
        {"query_id": "q1", "doc_id": "d1", "temporal": 1, "periods": ["2017"]},  # anchor of both roles
    ])
    got = _per_query(["TC(reference='tempo')@10", "nDCG_FC(reference='tempo')@10", "TC(reference='tempo')@1"],
                     labels=labels, tie_break="stable")
    assert got[("TC(reference='tempo')@10", "q4")] == 1.0  # both roles covered in the top 10
    assert got[("nDCG_FC(reference='tempo')@10", "q4")] == 1.0  # full coverage: nDCG@10 (d9 at rank 1)
    assert got[("TC(reference='tempo')@1", "q4")] == 0.5  # only d9 (baseline) in the top 1
    assert got[("TC(reference='tempo')@10", "q1")] == 1.0  # '2017' is both anchors: both roles


def test_side_info_switch_equals_the_parameter():
    with rm.side_info(temporal_reference="tempo"):
        a = _per_query(["TC@10"], tie_break="stable")
    b = _per_query(["TC(reference='tempo')@10"], tie_break="stable")
    assert a[("TC@10", "q1")] == b[("TC(reference='tempo')@10", "q1")] == 0.5
