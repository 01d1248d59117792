"""Property tests: the ranking core + nDCG kernel equal pytrec_eval on random runs full of ties
(equal scores, scores equal only at single precision, non-ASCII doc ids)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.io.convert import qrels_to_dict, run_to_dict
from reteco_measures.kernels import ndcg

DOC_IDS = ["a", "b", "B", "a1", "a10", "a2", "é", "ß", "doc#1", "doc_1", "Z", "zz", "日本", "0", "00"]
SCORES = [0.0, 1.0, 1.0 + 1e-9, 1.0 + 1e-7, 0.5, -0.5, 2.0, 1e-30, 123456.789, 123456.7890001]


@st.composite
def qrels_and_run(draw):
    n_queries = draw(st.integers(1, 4))
    qrel_rows, run_rows = [], []
    for q in range(n_queries):
        qid = f"q{q}"
        judged = draw(st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=8))
        for d in judged:
            qrel_rows.append((qid, d, draw(st.integers(-1, 4))))
        retrieved = draw(st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=12))
        for d in retrieved:
            run_rows.append((qid, d, draw(st.sampled_from(SCORES))))
    qrels = pd.DataFrame(qrel_rows, columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame(run_rows, columns=["query_id", "doc_id", "score"])
    return qrels, run


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(data=qrels_and_run(), k=st.sampled_from([1, 2, 3, 5, 10]))
def test_graded_ndcg_equals_pytrec_eval(data, k):
    qrels, run = data
    if qrels.empty:
        return
    ref = pytrec_eval.RelevanceEvaluator(qrels_to_dict(qrels), {f"ndcg_cut.{k}"}).evaluate(run_to_dict(run))
    ours = ndcg(qrels, run, k)
    for qid, vals in ref.items():
        assert abs(ours[qid] - vals[f"ndcg_cut_{k}"]) < 1e-9


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(data=qrels_and_run(), k=st.sampled_from([1, 3, 10]))
def test_binary_ndcg_equals_pytrec_eval_on_binarised_qrels(data, k):
    qrels, run = data
    if qrels.empty:
        return
    binarised = qrels.assign(relevance=(qrels["relevance"] >= 1).astype(int))
    ref = pytrec_eval.RelevanceEvaluator(qrels_to_dict(binarised), {f"ndcg_cut.{k}"}).evaluate(run_to_dict(run))
    ours = ndcg(qrels, run, k, binary=True)
    for qid, vals in ref.items():
        assert abs(ours[qid] - vals[f"ndcg_cut_{k}"]) < 1e-9


@settings(max_examples=100, deadline=None)
@given(data=qrels_and_run())
def test_ranking_order_equals_pytrec_eval_at_every_depth(data):
    # A grade that is unique per position makes nDCG@1..n identify the exact order.
    _, run = data
    if run.empty:
        return
    ranked = rm.kernels.rank_run(run)
    for qid, group in ranked.groupby("query_id"):
        n = len(group)
        # give the doc at our rank r the grade n - r + 1 (distinct); any swap changes some nDCG@k
        grades = {d: n - r + 1 for d, r in zip(group["doc_id"], group["rank"])}
        ev = pytrec_eval.RelevanceEvaluator({qid: grades}, {"ndcg_cut." + ",".join(map(str, range(1, n + 1)))})
        res = ev.evaluate({qid: dict(zip(group["doc_id"], group["score"]))})[qid]
        for k in range(1, n + 1):
            assert abs(res[f"ndcg_cut_{k}"] - 1.0) < 1e-12, (qid, k)


def test_ranks_are_consecutive_per_query():
    rng = np.random.default_rng(1)
    run = pd.DataFrame(
        {
            "query_id": rng.choice(["x", "y", "z"], 200),
            "doc_id": [f"d{i}" for i in range(200)],
            "score": rng.integers(0, 5, 200).astype(float),
        }
    )
    ranked = rm.kernels.rank_run(run)
    for _, g in ranked.groupby("query_id"):
        assert g["rank"].tolist() == list(range(1, len(g) + 1))
        # scores non-increasing along the ranking
        assert (np.diff(g["score"].to_numpy()) <= 0).all()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2"]), st.sampled_from(DOC_IDS[:5])), max_size=25))
def test_duplicate_pairs_match_pandas(pairs):
    from reteco_measures.kernels.ranking import duplicate_pairs

    run = pd.DataFrame(pairs, columns=["query_id", "doc_id"]).assign(score=1.0)
    for keep in ("first", "last"):
        expected = run.duplicated(["query_id", "doc_id"], keep=keep).to_numpy()
        assert (duplicate_pairs(run, keep=keep) == expected).all()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.sampled_from(DOC_IDS[:6]),
                          st.sampled_from(SCORES)), max_size=30))
def test_run_to_dict_equals_naive_dict(rows):
    from reteco_measures.io.convert import run_to_dict

    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    naive: dict = {}
    for q, d, s in rows:  # later rows overwrite earlier ones, as in pytrec_eval's dicts
        naive.setdefault(q, {})[d] = s
    assert run_to_dict(run) == naive
