"""Plain ``pt.Experiment`` gives the same numbers as ``rm.calc_aggregate`` for our measures.

PyTerrier (1.x) evaluates per query through ``ir_measures.iter_calc`` and then takes a plain mean of
the per-query values; our conditional (nDCG|FC, TC) and weighted (TurnNDCG by conversation,
SpokenMacroNDCG) aggregates need their own aggregator (see ``reteco_measures.providers.pyterrier``).
Expected values: per-query nDCG from pytrec_eval run side by side, coverage worked out by hand,
then aggregated by the written rule; and equality with ``rm.calc_aggregate``.
No Java is needed: the systems are result frames (``pt.Transformer.from_df``).
The wrapper is opt-in: ``patch_pyterrier()`` is called once below (after the test that nothing
changes without it).
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import warnings

import pandas as pd
import pyterrier as pt
import pytest
import pytrec_eval
from ir_measures import nDCG

import reteco_measures as rm
from reteco_measures.providers.pyterrier import patch_pyterrier

QIDS = ["c1_turn_1", "c1_turn_2", "c1_turn_3", "c2_turn_1"]
JUDGED = {
    "c1_turn_1": {"d1": 1, "d3": 1},
    "c1_turn_2": {"d2": 1},
    "c1_turn_3": {"d4": 2, "d1": 0},
    "c2_turn_1": {"d1": 1},
}
RANKING = {
    "c1_turn_1": ["d2", "d1", "d3", "d4"],
    "c1_turn_2": ["d1", "d2", "d3", "d4"],
    "c1_turn_3": ["d1", "d2", "d3", "d4"],
    "c2_turn_1": ["d1", "d2", "d3", "d4"],
}
# required periods 2017 and 2018 everywhere; covered by the top 5:
# c1_turn_1 both (d1) -> TC 1; c1_turn_2 2017 only -> 0.5; c1_turn_3 2017 (d2) + 2018 (d3) -> 1; c2_turn_1 none -> 0
COVERS = {
    ("c1_turn_1", "d1"): ["2017", "2018"],
    ("c1_turn_2", "d1"): ["2017"],
    ("c1_turn_3", "d2"): ["2017"],
    ("c1_turn_3", "d3"): ["2018"],
}
TC_BY_HAND = {"c1_turn_1": 1.0, "c1_turn_2": 0.5, "c1_turn_3": 1.0, "c2_turn_1": 0.0}
# SpokenMacroNDCG cells: (A, clean) holds c2_turn_1 only, (B, clean) the other three
COLLECTION = {"c1_turn_1": "B", "c1_turn_2": "B", "c1_turn_3": "B", "c2_turn_1": "A"}


def _qrels() -> pd.DataFrame:
    rows = [(q, d, r) for q, docs in JUDGED.items() for d, r in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def _run() -> pd.DataFrame:
    rows = [(q, d, float(10 - i)) for q, docs in RANKING.items() for i, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def _topics() -> pd.DataFrame:
    return pd.DataFrame({
        "query_id": QIDS,
        "required_periods": [["2017", "2018"]] * len(QIDS),
        "collection": [COLLECTION[q] for q in QIDS],
        "condition": ["clean"] * len(QIDS),
    })


def _labels() -> pd.DataFrame:
    rows = [(q, d, int((q, d) in COVERS), COVERS.get((q, d), [])) for q in QIDS for d in RANKING[q]]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "temporal", "periods"])


def _pytrec(measure: str, binary: bool) -> dict[str, float]:
    qrels = {q: {d: int(r >= 1) if binary else int(r) for d, r in docs.items()} for q, docs in JUDGED.items()}
    run = {q: {d: float(10 - i) for i, d in enumerate(docs)} for q, docs in RANKING.items()}
    out = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    return {q: v[measure] for q, v in out.items()}


def _experiment(measures, qrels: pd.DataFrame, run: pd.DataFrame, **kw) -> pd.DataFrame:
    res = run.rename(columns={"query_id": "qid", "doc_id": "docno"})
    pt_qrels = qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    topics = pd.DataFrame({"qid": sorted(set(run["query_id"]) | set(qrels["query_id"])), "query": "q"})
    return pt.Experiment([pt.Transformer.from_df(res)], topics, pt_qrels, eval_metrics=measures, **kw)


MEASURES = [
    rm.TP @ 5,
    rm.TR @ 5,
    rm.TC @ 5,
    rm.nDCG_FC @ 5,
    rm.nDCG_FC(empty=0) @ 5,
    rm.TurnNDCG @ 5,
    rm.TurnNDCG(average="conversation") @ 5,
    rm.SpokenMacroNDCG @ 5,
    nDCG @ 5,
]


def test_pyterrier_is_unchanged_until_patch_pyterrier_is_called() -> None:
    # a fresh interpreter: this session has patched PyTerrier already (the fixture below)
    code = textwrap.dedent("""
        import pyterrier._evaluation._rendering as rendering
        import ir_measures
        import reteco_measures as rm
        original = rendering._mean_of_measures
        list(ir_measures.iter_calc([rm.TC @ 5], {"q": {"a": 1}}, {"q": {"a": 1.0}}))
        assert rendering._mean_of_measures is original
        from reteco_measures.providers.pyterrier import patch_pyterrier
        assert patch_pyterrier() and patch_pyterrier()
        assert rendering._mean_of_measures is not original
        assert rendering._mean_of_measures.__wrapped__ is original
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.fixture(autouse=True)
def _patched() -> None:
    assert patch_pyterrier()


def test_experiment_equals_calc_aggregate_for_every_measure():
    qrels, run, topics, labels = _qrels(), _run(), _topics(), _labels()
    expected = rm.calc_aggregate(MEASURES, qrels, run, topics=topics, labels=labels)
    with rm.side_info(topics=topics, labels=labels):
        got = _experiment(MEASURES, qrels, run).iloc[0]
    for m in MEASURES:
        assert got[str(m)] == pytest.approx(expected[m], abs=1e-12), str(m)


def test_experiment_values_by_hand_and_pytrec_eval():
    qrels, run, topics, labels = _qrels(), _run(), _topics(), _labels()
    with rm.side_info(topics=topics, labels=labels):
        got = _experiment(MEASURES, qrels, run).iloc[0]
    binary = _pytrec("ndcg_cut_5", binary=True)
    graded = _pytrec("ndcg_cut_5", binary=False)
    # TC: (1 + 0.5 + 1 + 0) / 4
    assert got[str(rm.TC @ 5)] == pytest.approx(sum(TC_BY_HAND.values()) / 4)
    # nDCG|FC: binary nDCG over the fully covered queries c1_turn_1 and c1_turn_3 only
    full = [q for q, tc in TC_BY_HAND.items() if tc == 1.0]
    assert got[str(rm.nDCG_FC @ 5)] == pytest.approx(sum(binary[q] for q in full) / len(full), abs=1e-12)
    # TurnNDCG by conversation: mean of c1's three turns, then the mean of c1 and c2
    c1 = sum(binary[q] for q in QIDS[:3]) / 3
    conversation_mean = (c1 + binary["c2_turn_1"]) / 2
    turn_mean = sum(binary.values()) / 4
    assert abs(conversation_mean - turn_mean) > 0.01  # the case tells the two rules apart
    assert got[str(rm.TurnNDCG(average="conversation") @ 5)] == pytest.approx(conversation_mean, abs=1e-12)
    assert got[str(rm.TurnNDCG @ 5)] == pytest.approx(turn_mean, abs=1e-12)
    # SpokenMacroNDCG: graded nDCG, mean per (collection, condition) cell, then mean of the two cells
    cell_b = [q for q in QIDS if COLLECTION[q] == "B"]
    macro = (graded["c2_turn_1"] + sum(graded[q] for q in cell_b) / len(cell_b)) / 2
    assert abs(macro - sum(graded.values()) / 4) > 0.01
    assert got[str(rm.SpokenMacroNDCG @ 5)] == pytest.approx(macro, abs=1e-12)
    assert got[str(nDCG @ 5)] == pytest.approx(sum(graded.values()) / 4, abs=1e-12)


def test_experiment_step_ndcg_and_likert():
    # StepNDCG: steps q1_step1, q1_step2 (query q1) and q2_step1 (query q2); query mean, then mean
    qrels = pd.DataFrame({"query_id": ["q1_step1", "q1_step2", "q2_step1"], "doc_id": ["a", "b", "c"],
                          "relevance": [1, 1, 1]})
    run = pd.DataFrame({"query_id": ["q1_step1", "q1_step1", "q1_step2", "q2_step1", "q2_step1"],
                        "doc_id": ["x", "a", "b", "y", "c"], "score": [2.0, 1.0, 1.0, 2.0, 1.0]})
    # q1_step1: a at rank 2 -> 1/log2(3); q1_step2: b at rank 1 -> 1; q2_step1: c at rank 2 -> 1/log2(3)
    q1 = (1 / math.log2(3) + 1.0) / 2
    by_hand = (q1 + 1 / math.log2(3)) / 2
    m = rm.StepNDCG @ 10
    assert rm.calc_aggregate([m], qrels, run)[m] == pytest.approx(by_hand, abs=1e-12)
    assert _experiment([m], qrels, run).iloc[0][str(m)] == pytest.approx(by_hand, abs=1e-12)
    # Likert from judgments given through side_info; invalid / missing judgments are left out
    from reteco_measures.kernels.likert import LikertWarning

    judgments = pd.DataFrame({
        "turn_id": ["q1_step1", "q1_step2", "q2_step1"], "dimension": ["correctness"] * 3,
        "score": [5, 3, None], "normalized": [1.0, 0.5, None], "error": [None, None, "timeout"],
    })
    lk = rm.Likert(dimension="correctness")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LikertWarning)
        with rm.side_info(judgments=judgments):
            got = _experiment([lk], qrels, run).iloc[0][str(lk)]
    assert got == pytest.approx(0.75)  # (1.0 + 0.5) / 2: the invalid judgment does not count as 0


def test_perquery_and_baseline_limits_are_documented_behaviour():
    # per query, PyTerrier shows our values as they are: NaN where nDCG|FC is not defined
    qrels, run, topics, labels = _qrels(), _run(), _topics(), _labels()
    m = rm.nDCG_FC @ 5
    with rm.side_info(topics=topics, labels=labels):
        per_query = _experiment([m], qrels, run, perquery=True)
    values = per_query.set_index("qid")["value"]
    assert math.isnan(values["c1_turn_2"]) and math.isnan(values["c2_turn_1"])
    assert not math.isnan(values["c1_turn_1"])
    # with a baseline the averages are still ours; the tests run on per-query values
    res = run.rename(columns={"query_id": "qid", "doc_id": "docno"})
    pt_qrels = qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    ptt = pd.DataFrame({"qid": QIDS, "query": "q"})
    with rm.side_info(topics=topics, labels=labels), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns about NaN per-query values
        table = pt.Experiment([pt.Transformer.from_df(res), pt.Transformer.from_df(res)], ptt, pt_qrels,
                              eval_metrics=[m], baseline=0, names=["a", "b"])
    expected = rm.calc_aggregate([m], qrels, run, topics=topics, labels=labels)[m]
    assert table[str(m)].tolist() == pytest.approx([expected, expected])


def test_standard_measures_keep_pytrec_eval_values_and_cutoff_zero_is_refused():
    qrels, run = _qrels(), _run()
    with rm.side_info(topics=_topics(), labels=_labels()):
        got = _experiment([nDCG @ 5, rm.TC @ 5], qrels, run).iloc[0]
    assert got[str(nDCG @ 5)] == pytest.approx(sum(_pytrec("ndcg_cut_5", False).values()) / 4, abs=1e-12)
    # a cutoff below 1 would abort the interpreter inside pytrec_eval; our provider refuses it first
    with pytest.raises(ValueError, match="cutoff"):
        _experiment([nDCG @ 0], qrels, run)


def test_batched_experiment_uses_the_same_aggregates():
    # batch_size=3 keeps conversation c1 (3 turns) in one batch: the conversation weights, computed
    # from the qrels PyTerrier hands over per batch, are those of the whole evaluation
    qrels, run, topics, labels = _qrels(), _run(), _topics(), _labels()
    measures = [rm.nDCG_FC @ 5, rm.TurnNDCG(average="conversation") @ 5, rm.TC @ 5]
    expected = rm.calc_aggregate(measures, qrels, run, topics=topics, labels=labels)
    with rm.side_info(topics=topics, labels=labels):
        got = _experiment(measures, qrels, run, batch_size=3).iloc[0]
        split = _experiment(measures, qrels, run, batch_size=2).iloc[0]
    for m in measures:
        assert got[str(m)] == pytest.approx(expected[m], abs=1e-12), str(m)
    # batches that split a conversation: NaN-skipping still right, the conversation weights are not
    # (documented on the PyTerrier page)
    assert split[str(rm.nDCG_FC @ 5)] == pytest.approx(expected[rm.nDCG_FC @ 5], abs=1e-12)
    assert split[str(rm.TC @ 5)] == pytest.approx(expected[rm.TC @ 5], abs=1e-12)
