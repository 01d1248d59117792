"""SpokenMacroNDCG@k: graded nDCG per request, mean within collection x condition cells, mean of cells."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import ir_measures
import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.benchmarks.spoken import data as sp
from reteco_measures.measures.spoken_macro_ndcg import IncompleteGridWarning

LOG2 = math.log2
SAMPLE = Path(rm.__file__).resolve().parent / "sample" / "data"

# four requests in a 2 x 2 grid; cell (c1, clean) has two requests, the others one
QRELS = pd.DataFrame({
    "query_id": ["a", "a", "a", "b", "c", "d"],
    "doc_id": ["x", "y", "z", "x", "w", "v"],
    "relevance": [2, 1, 0, 3, 1, 2],
})
RUN = pd.DataFrame({
    "query_id": ["a", "a", "a", "b", "b", "c"],
    "doc_id": ["y", "z", "x", "q", "x", "w"],
    "score": [3.0, 2.0, 1.0, 2.0, 1.0, 5.0],
})
TOPICS = pd.DataFrame({
    "query_id": ["a", "b", "c", "d"],
    "collection": ["c1", "c1", "c2", "c2"],
    "condition": ["clean", "clean", "clean", "noisy"],
})
TOPICS_FULL = pd.concat([TOPICS, pd.DataFrame({"query_id": ["e"], "collection": ["c1"], "condition": ["noisy"]})])
QRELS_FULL = pd.concat([QRELS, pd.DataFrame({"query_id": ["e"], "doc_id": ["x"], "relevance": [1]})])

# by hand (trec_eval gains = grades):
#   a: y(1) z(0) x(2) at ranks 1..3: DCG = 1 + 0 + 2/log2(4) = 2; ideal x(2), y(1): 2 + 1/log2(3)
A = 2 / (2 + 1 / LOG2(3))
#   b: q unjudged at 1, x(3) at 2: DCG = 3/log2(3); ideal 3
B = (3 / LOG2(3)) / 3
C = 1.0  # w at rank 1
D = 0.0  # missing from the run
E = 0.0  # missing from the run


def single(measure, qrels, run, topics):
    return list(rm.calc_aggregate([measure], qrels, run, topics=topics).values())[0]


def test_hand_computed_full_grid():
    # cells: (c1, clean) = (A + B)/2, (c1, noisy) = E, (c2, clean) = C, (c2, noisy) = D
    expected = ((A + B) / 2 + E + C + D) / 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a complete grid must not warn
        assert single("SpokenMacroNDCG@10", QRELS_FULL, RUN, TOPICS_FULL) == pytest.approx(expected, abs=1e-12)
    per = {m.query_id: float(m.value) for m in rm.iter_calc(["SpokenMacroNDCG@10"], QRELS_FULL, RUN,
                                                            topics=TOPICS_FULL)}
    assert per == pytest.approx({"a": A, "b": B, "c": C, "d": D, "e": E}, abs=1e-12)
    weights = {m.query_id: m.value.weight for m in rm.iter_calc(["SpokenMacroNDCG@10"], QRELS_FULL, RUN,
                                                                topics=TOPICS_FULL)}
    assert weights == pytest.approx({"a": 1 / 8, "b": 1 / 8, "c": 1 / 4, "d": 1 / 4, "e": 1 / 4})
    # the plain mean over requests differs (the cells are unequal)
    assert single("nDCG@10", QRELS_FULL, RUN, TOPICS_FULL) == pytest.approx((A + B + C + D + E) / 5, abs=1e-12)


def test_per_request_values_equal_pytrec_eval_graded_ndcg():
    qrels = sp.load_qrels(root=SAMPLE)
    topics = sp.topics(root=SAMPLE)
    run = rm.read_run(SAMPLE / "runs" / "spoken.jsonl")
    ours = {m.query_id: float(m.value) for m in rm.iter_calc(["SpokenMacroNDCG@10"], qrels, run, topics=topics)}
    qd: dict = {}
    for q, d, r in qrels.itertuples(index=False):
        qd.setdefault(q, {})[d] = int(r)
    rd: dict = {}
    for q, d, s in run[["query_id", "doc_id", "score"]].itertuples(index=False):
        rd.setdefault(q, {})[d] = float(s)
    ref = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10"}).evaluate(rd)
    assert len(ours) == len(qd) == 72
    for q in qd:
        assert ours[q] == pytest.approx(ref.get(q, {}).get("ndcg_cut_10", 0.0), abs=1e-9)
    # and the aggregate is the mean of cell means computed here with pandas
    frame = topics.set_index("query_id")[["collection", "condition"]].assign(
        v=[ref.get(q, {}).get("ndcg_cut_10", 0.0) for q in topics["query_id"]])
    expected = frame.groupby(["collection", "condition"])["v"].mean().mean()
    assert single("SpokenMacroNDCG@10", qrels, run, topics) == pytest.approx(expected, abs=1e-12)


def test_plain_ir_measures_call_with_side_info():
    measure = ir_measures.parse_measure("SpokenMacroNDCG@10")
    expected = ((A + B) / 2 + E + C + D) / 4
    with rm.side_info(topics=TOPICS_FULL):
        got = ir_measures.calc_aggregate([measure], QRELS_FULL, RUN)
    assert got[measure] == pytest.approx(expected, abs=1e-12)


def test_topics_as_a_measure_parameter(tmp_path):
    path = tmp_path / "topics.jsonl"
    TOPICS_FULL.to_json(path, orient="records", lines=True)
    measure = ir_measures.parse_measure(f"SpokenMacroNDCG(topics='{path}')@10")
    got = ir_measures.calc_aggregate([measure], QRELS_FULL, RUN)
    assert got[measure] == pytest.approx(((A + B) / 2 + E + C + D) / 4, abs=1e-12)


def test_incomplete_grid_warns_and_names_the_cells():
    # (c1, noisy) has no request: mean over the three cells present, with a warning
    with pytest.warns(IncompleteGridWarning, match=r"1 of 4 cells .*\(c1, noisy\).*mean over the 3 cells"):
        got = single("SpokenMacroNDCG@10", QRELS, RUN, TOPICS)
    assert got == pytest.approx(((A + B) / 2 + C + D) / 3, abs=1e-12)
    assert issubclass(IncompleteGridWarning, UserWarning)


def test_incomplete_grid_error_mode_and_declared_grid():
    with pytest.raises(ValueError, match=r"\(c1, noisy\)"):
        rm.calc_aggregate(["SpokenMacroNDCG(missing_cells='error')@10"], QRELS, RUN, topics=TOPICS)
    # the full grid declared explicitly: a third condition nobody has is missing everywhere
    with pytest.warns(IncompleteGridWarning, match=r"2 of 6 cells.*\(c1, far\), \(c2, far\)"):
        rm.calc_aggregate(["SpokenMacroNDCG(conditions='clean,noisy,far')@10"], QRELS_FULL, RUN, topics=TOPICS_FULL)
    with pytest.raises(ValueError, match="missing_cells must be"):
        rm.calc_aggregate(["SpokenMacroNDCG(missing_cells='zero')@10"], QRELS_FULL, RUN, topics=TOPICS_FULL)
    # a request outside the declared grid cannot be placed
    with pytest.raises(ValueError, match="not in the declared grid"):
        rm.calc_aggregate(["SpokenMacroNDCG(collections='c1')@10"], QRELS_FULL, RUN, topics=TOPICS_FULL)


def test_grid_counts_cells_of_unlabelled_topics_as_missing():
    # a request in the topics but without labels cannot be evaluated: its cell is missing
    topics = pd.concat([TOPICS_FULL, pd.DataFrame({"query_id": ["f"], "collection": ["c3"], "condition": ["clean"]})])
    with pytest.warns(IncompleteGridWarning, match=r"\(c3, clean\), \(c3, noisy\)"):
        rm.calc_aggregate(["SpokenMacroNDCG@10"], QRELS_FULL, RUN, topics=topics)


def test_needs_topics_with_cells():
    with pytest.raises(ValueError, match="needs topics"):
        rm.calc_aggregate(["SpokenMacroNDCG@10"], QRELS_FULL, RUN)
    with pytest.raises(ValueError, match="lack column"):
        rm.calc_aggregate(["SpokenMacroNDCG@10"], QRELS_FULL, RUN, topics=TOPICS_FULL.drop(columns="condition"))
    with pytest.raises(ValueError, match=r"no collection/condition.*\['e'\]"):
        rm.calc_aggregate(["SpokenMacroNDCG@10"], QRELS_FULL, RUN, topics=TOPICS)


def test_evaluate_shows_the_grid():
    table = rm.evaluate(["SpokenMacroNDCG@10"], QRELS_FULL, RUN, topics=TOPICS_FULL, by=["collection", "condition"])
    cells = table.set_index(["collection", "condition"])["value"]
    assert cells[("c1", "clean")] == pytest.approx((A + B) / 2, abs=1e-12)
    assert cells[("c1", "noisy")] == pytest.approx(E)
    assert cells[("c2", "clean")] == pytest.approx(C)
    assert cells[("c2", "noisy")] == pytest.approx(D)
    official = ((A + B) / 2 + E + C + D) / 4
    assert cells[("(macro)", "(macro)")] == pytest.approx(official, abs=1e-12)
    assert cells[("(all)", "(all)")] == pytest.approx(official, abs=1e-12)
    ns = table.set_index(["collection", "condition"])["n"]
    assert ns[("c1", "clean")] == 2 and ns[("(all)", "(all)")] == 5
    # per collection = mean of its cells (conditions weigh the same)
    by_coll = rm.evaluate(["SpokenMacroNDCG@10"], QRELS_FULL, RUN, topics=TOPICS_FULL, by="collection")
    coll = by_coll.set_index("collection")["value"]
    assert coll["c1"] == pytest.approx(((A + B) / 2 + E) / 2, abs=1e-12)
    assert coll["c2"] == pytest.approx((C + D) / 2, abs=1e-12)
    assert coll["(macro)"] == pytest.approx(official, abs=1e-12)


def test_cutoff_and_tie_policy():
    # all three of a's documents tie: trec_eval order is doc id descending z, y, x
    run = pd.DataFrame({"query_id": ["a"] * 3, "doc_id": ["x", "y", "z"], "score": [1.0, 1.0, 1.0]})
    qrels = QRELS[QRELS["query_id"] == "a"]
    topics = TOPICS[TOPICS["query_id"] == "a"]
    ideal = 2 + 1 / LOG2(3)
    trec = single("SpokenMacroNDCG@10", qrels, run, topics)
    assert trec == pytest.approx((1 / LOG2(3) + 2 / LOG2(4)) / ideal, abs=1e-12)  # z, y(1), x(2)
    run_order = list(rm.calc_aggregate(["SpokenMacroNDCG@10"], qrels, run, topics=topics,
                                       tie_break="run_order").values())[0]
    assert run_order == pytest.approx((2 + 1 / LOG2(3)) / ideal, abs=1e-12)  # x(2), y(1): ideal
    cut1 = single("SpokenMacroNDCG@1", qrels, run, topics)
    assert cut1 == pytest.approx(0.0)  # z first, gain 0
