"""TurnNDCG@k (RETECO 2a/2c) and rm.evaluate(by=domain/depth) on hand-built cases.

Every expected number is computed by hand in the comments (binary gains, discount
1/log2(rank+1)) or by pytrec_eval run side by side.
"""

from __future__ import annotations

import math

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.kernels.conversational import turn_parts

L2 = math.log2

# Conversation c1 has 3 turns, c2 has 1 turn (all ids in the RECOR form).
QRELS = pd.DataFrame(
    [
        ("c1_turn_1", "a", 1),
        ("c1_turn_2", "b", 1),
        ("c1_turn_2", "c", 1),
        ("c1_turn_3", "d", 1),
        ("c2_turn_1", "e", 1),
        ("c2_turn_1", "x", 0),
    ],
    columns=["query_id", "doc_id", "relevance"],
)
RUN = pd.DataFrame(
    [
        # c1_turn_1: relevant a at rank 2 -> DCG 1/log2(3), IDCG 1 -> 1/log2(3)
        ("c1_turn_1", "z", 3.0),
        ("c1_turn_1", "a", 2.0),
        # c1_turn_2: b at rank 1, c at rank 3 -> (1 + 1/log2(4)) / (1 + 1/log2(3))
        ("c1_turn_2", "b", 3.0),
        ("c1_turn_2", "y", 2.0),
        ("c1_turn_2", "c", 1.0),
        # c1_turn_3: missing from the run -> 0
        # c2_turn_1: e at rank 1 -> 1
        ("c2_turn_1", "e", 5.0),
        ("c2_turn_1", "x", 4.0),
    ],
    columns=["query_id", "doc_id", "score"],
)
T11 = 1 / L2(3)
T12 = (1 + 1 / L2(4)) / (1 + 1 / L2(3))
T13 = 0.0
T21 = 1.0


def per_query(measures, qrels=QRELS, run=RUN, **kw) -> dict[tuple[str, str], float]:
    return {(m.query_id, str(m.measure)): float(m.value) for m in rm.iter_calc(measures, qrels, run, **kw)}


def test_per_turn_values_and_turn_average():
    values = per_query(["TurnNDCG@10"])
    assert values[("c1_turn_1", "TurnNDCG@10")] == pytest.approx(T11, abs=1e-12)
    assert values[("c1_turn_2", "TurnNDCG@10")] == pytest.approx(T12, abs=1e-12)
    assert values[("c1_turn_3", "TurnNDCG@10")] == 0.0  # missing turn
    assert values[("c2_turn_1", "TurnNDCG@10")] == 1.0
    agg = rm.calc_aggregate(["TurnNDCG@10"], QRELS, RUN)
    assert list(agg.values())[0] == pytest.approx((T11 + T12 + T13 + T21) / 4, abs=1e-12)


def test_conversation_average_inside_plain_ir_measures():
    # mean per conversation, then over conversations: ((T11+T12+T13)/3 + T21) / 2
    expected = ((T11 + T12 + T13) / 3 + T21) / 2
    measure = rm.TurnNDCG(average="conversation") @ 10
    assert ir_measures.calc_aggregate([measure], QRELS, RUN)[measure] == pytest.approx(expected, abs=1e-12)
    assert rm.calc_aggregate([measure], QRELS, RUN)[measure] == pytest.approx(expected, abs=1e-12)
    # per-turn values are the same as with average='turn'
    a = per_query([measure])
    b = per_query(["TurnNDCG@10"])
    assert sorted(a.values()) == pytest.approx(sorted(b.values()))
    # and the parsed form works too
    parsed = ir_measures.parse_measure("TurnNDCG(average='conversation')@10")
    assert ir_measures.calc_aggregate([parsed], QRELS, RUN)[parsed] == pytest.approx(expected, abs=1e-12)


def test_conversation_from_topics_overrides_id_form():
    # topics put c2_turn_1 into conversation c1: one conversation of 4 turns -> plain mean
    topics = pd.DataFrame({"query_id": ["c2_turn_1"], "conversation_id": ["c1"], "turn": [4]})
    measure = rm.TurnNDCG(average="conversation") @ 10
    got = rm.calc_aggregate([measure], QRELS, RUN, topics=topics)[measure]
    assert got == pytest.approx((T11 + T12 + T13 + T21) / 4, abs=1e-12)


def test_turn_parts_forms():
    parts = turn_parts(["law/ex_3025_turn_12", "ex_3025#turn2", "plain", "2_turn_1"])
    assert parts["conversation_id"].tolist() == ["law/ex_3025", "ex_3025", "plain", "2"]
    assert parts["turn"].tolist()[:2] == [12, 2]
    assert pd.isna(parts["turn"].iloc[2])
    assert parts["turn"].iloc[3] == 1


def test_ids_without_turn_form_are_their_own_conversation():
    qrels = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "doc_id": ["a", "a", "a"], "relevance": [1, 1, 1]})
    run = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "score": [1.0]})
    measure = rm.TurnNDCG(average="conversation") @ 10
    # three one-turn conversations: (1 + 0 + 0) / 3
    assert rm.calc_aggregate([measure], qrels, run)[measure] == pytest.approx(1 / 3)


def test_graded_qrels_are_binarised_with_rel():
    qrels = pd.DataFrame({"query_id": ["c_turn_1"] * 2, "doc_id": ["a", "b"], "relevance": [1, 3]})
    run = pd.DataFrame({"query_id": ["c_turn_1"] * 2, "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    # rel=1: both gain 1 -> ideal order, nDCG 1
    assert rm.calc_aggregate(["TurnNDCG@10"], qrels, run)[rm.TurnNDCG @ 10] == pytest.approx(1.0)
    # rel=2: only b relevant, at rank 2 -> 1/log2(3)
    m = rm.TurnNDCG(rel=2) @ 10
    assert rm.calc_aggregate([m], qrels, run)[m] == pytest.approx(1 / L2(3))


def test_cutoff():
    # c1_turn_2 at k=2: b at 1 counts, c at 3 does not; IDCG@2 = 1 + 1/log2(3)
    values = per_query(["TurnNDCG@2"])
    assert values[("c1_turn_2", "TurnNDCG@2")] == pytest.approx(1 / (1 + 1 / L2(3)))


# --------------------------------------------------------------------------------------------
# pytrec_eval side by side (binary qrels: TurnNDCG@k == ndcg_cut_k per turn)


@st.composite
def _case(draw):
    n_turns = draw(st.integers(1, 6))
    docs = [f"d{i}" for i in range(12)]
    qrels, run = [], []
    for t in range(1, n_turns + 1):
        qid = f"c{draw(st.integers(0, 2))}_turn_{t}"
        rel = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=5, unique=True))
        qrels += [(qid, d, 1) for d in rel]
        if draw(st.booleans()):
            ret = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=12, unique=True))
            # scores with ties (small integer set) exercise the doc-id tie break
            run += [(qid, d, float(draw(st.integers(0, 3)))) for d in ret]
    q = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]).drop_duplicates(["query_id", "doc_id"])
    r = pd.DataFrame(run, columns=["query_id", "doc_id", "score"]).drop_duplicates(["query_id", "doc_id"])
    return q, r


@settings(max_examples=60, deadline=None)
@given(_case(), st.sampled_from([1, 3, 5, 10]))
def test_matches_pytrec_eval_ndcg_cut(case, k):
    qrels, run = case
    qd: dict = {}
    for r in qrels.itertuples():
        qd.setdefault(r.query_id, {})[r.doc_id] = int(r.relevance)
    rd: dict = {}
    for r in run.itertuples():
        rd.setdefault(r.query_id, {})[r.doc_id] = float(r.score)
    expected = pytrec_eval.RelevanceEvaluator(qd, {f"ndcg_cut.{k}"}).evaluate(rd)
    got = per_query([f"TurnNDCG@{k}"], qrels, run)
    for qid in qd:
        want = expected.get(qid, {}).get(f"ndcg_cut_{k}", 0.0)  # missing turn -> 0
        assert got[(qid, f"TurnNDCG@{k}")] == pytest.approx(want, abs=1e-9)


# --------------------------------------------------------------------------------------------
# rm.evaluate(by=...) on hand-built cases

TOPICS = pd.DataFrame(
    {
        "query_id": ["c1_turn_1", "c1_turn_2", "c1_turn_3", "c2_turn_1"],
        "domain": ["law", "law", "law", "drones"],
        "conversation_id": ["c1", "c1", "c1", "c2"],
        "turn": [1, 2, 3, 1],
    }
)


def _rows(frame: pd.DataFrame, cols: list[str]) -> dict[tuple, tuple[float, int]]:
    return {tuple(r[c] for c in cols): (r["value"], r["n"]) for _, r in frame.iterrows()}


def test_evaluate_by_domain():
    out = rm.evaluate(["TurnNDCG@10"], QRELS, RUN, topics=TOPICS, by="domain")
    rows = _rows(out, ["domain"])
    assert rows[("law",)][0] == pytest.approx((T11 + T12 + T13) / 3)
    assert rows[("law",)][1] == 3
    assert rows[("drones",)] == (pytest.approx(1.0), 1)
    assert rows[("(macro)",)][0] == pytest.approx(((T11 + T12 + T13) / 3 + 1.0) / 2)
    assert rows[("(macro)",)][1] == 2
    assert rows[("(all)",)][0] == pytest.approx((T11 + T12 + T13 + T21) / 4)
    assert list(out.columns) == ["domain", "measure", "value", "n"]


def test_evaluate_by_depth_from_ids_and_from_topics():
    expected = {
        ("T1",): ((T11 + T21) / 2, 2),
        ("T2",): (T12, 1),
        ("T3",): (T13, 1),
        ("(macro)",): (((T11 + T21) / 2 + T12 + T13) / 3, 3),
        ("(all)",): ((T11 + T12 + T13 + T21) / 4, 4),
    }
    for topics in (None, TOPICS):
        rows = _rows(rm.evaluate(["TurnNDCG@10"], QRELS, RUN, topics=topics, by="depth"), ["depth"])
        assert set(rows) == set(expected)
        for key, (value, n) in expected.items():
            assert rows[key][0] == pytest.approx(value, abs=1e-12)
            assert rows[key][1] == n


def test_depth_groups_t5_plus():
    qids = [f"c_turn_{t}" for t in range(1, 9)]
    qrels = pd.DataFrame({"query_id": qids, "doc_id": ["a"] * 8, "relevance": [1] * 8})
    # turns 1, 5 and 7 retrieve the relevant doc at rank 1; others miss
    run = pd.DataFrame({"query_id": ["c_turn_1", "c_turn_5", "c_turn_7"], "doc_id": ["a"] * 3, "score": [1.0] * 3})
    rows = _rows(rm.evaluate(["TurnNDCG@10"], qrels, run, by="depth"), ["depth"])
    assert rows[("T1",)] == (1.0, 1)
    assert rows[("T4",)] == (0.0, 1)
    # T5+ holds turns 5, 6, 7, 8: (1 + 0 + 1 + 0) / 4
    assert rows[("T5+",)] == (pytest.approx(0.5), 4)
    assert rm.depth_group(5) == "T5+" and rm.depth_group(12) == "T5+" and rm.depth_group(4) == "T4"


def test_evaluate_by_domain_and_depth_with_standard_measures():
    out = rm.evaluate(["TurnNDCG@10", "RR"], QRELS, RUN, topics=TOPICS, by=["domain", "depth"])
    rr = out[out["measure"] == "RR"]
    rows = _rows(rr, ["domain", "depth"])
    # RR by hand: c1_turn_1 1/2, c1_turn_2 1, c1_turn_3 0 (missing), c2_turn_1 1
    assert rows[("law", "T1")] == (pytest.approx(0.5), 1)
    assert rows[("law", "T2")] == (pytest.approx(1.0), 1)
    assert rows[("law", "T3")] == (pytest.approx(0.0), 1)
    assert rows[("drones", "T1")] == (pytest.approx(1.0), 1)
    assert rows[("(macro)", "(macro)")] == (pytest.approx((0.5 + 1 + 0 + 1) / 4), 4)
    assert rows[("(all)", "(all)")] == (pytest.approx(2.5 / 4), 4)
    nd = _rows(out[out["measure"] == "TurnNDCG@10"], ["domain", "depth"])
    assert nd[("law", "T2")][0] == pytest.approx(T12)


def test_conversation_weights_inside_domain_groups():
    # law has one conversation (c1), drones one (c2): per-domain value = that conversation's mean
    measure = rm.TurnNDCG(average="conversation") @ 10
    rows = _rows(rm.evaluate([measure], QRELS, RUN, topics=TOPICS, by="domain"), ["domain"])
    assert rows[("law",)][0] == pytest.approx((T11 + T12 + T13) / 3)
    assert rows[("(all)",)][0] == pytest.approx(((T11 + T12 + T13) / 3 + 1.0) / 2)


def test_values_are_finite_numpy():
    values = np.array(list(per_query(["TurnNDCG@10"]).values()))
    assert np.isfinite(values).all()
