"""The ``stable`` tie policy: score descending, equal scores in file order.

Expected orders come from Python's own stable ``sorted(..., key=score, reverse=True)`` (what
TEMPO's reference script ranks by); expected measure values come from pytrec_eval on the same
run re-scored by hand so that trec_eval's order is the stable order.
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
from reteco_measures.kernels.ranking import TIE_BREAKS, rank_run

# few distinct scores so that ties are frequent; doc ids chosen so that doc-id order and file
# order disagree
_scores = st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, 1e-12])
_rows = st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3"]), _scores), min_size=1, max_size=40)


def _frame(rows: list[tuple[str, float]]) -> pd.DataFrame:
    # doc ids unique per run, numbered against file order (d39 first ... d00 last)
    n = len(rows)
    return pd.DataFrame({"query_id": [q for q, _ in rows],
                         "doc_id": [f"d{n - i:02d}" for i in range(n)],
                         "score": [s for _, s in rows]})


@settings(max_examples=150, deadline=None)
@given(_rows)
def test_stable_equals_python_sorted(rows):
    run = _frame(rows)
    ranked = rank_run(run, "stable")
    for qid, group in run.groupby("query_id", sort=False):
        records = list(zip(group["doc_id"], group["score"], strict=True))
        expected = [d for d, _ in sorted(records, key=lambda r: r[1], reverse=True)]
        got = ranked[ranked["query_id"] == qid].sort_values("rank")["doc_id"].tolist()
        assert got == expected


def test_stable_differs_from_run_order_and_trec_eval():
    run = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "score": [1.0, 3.0, 3.0, 2.0]})
    order = {tb: rank_run(run, tb).sort_values("rank")["doc_id"].tolist()
             for tb in ("stable", "run_order", "trec_eval")}
    assert order["stable"] == ["b", "c", "d", "a"]  # 3, 3 (file order), 2, 1
    assert order["run_order"] == ["a", "b", "c", "d"]  # scores ignored
    assert order["trec_eval"] == ["c", "b", "d", "a"]  # 3, 3 (doc id descending), 2, 1


def test_stable_compares_double_precision_and_puts_nan_last():
    # 1.0 and 1.0 + 1e-9 tie for trec_eval (single precision) but not for Python's sorted
    run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["z", "a", "m"], "score": [1.0, 1.0 + 1e-9, math.nan]})
    assert rank_run(run, "stable").sort_values("rank")["doc_id"].tolist() == ["a", "z", "m"]
    assert rank_run(run, "trec_eval").sort_values("rank")["doc_id"].tolist()[:2] == ["z", "a"]


def test_every_listed_policy_is_accepted_by_measures_and_cli():
    from reteco_measures.cli.main import build_parser  # noqa: PLC0415

    assert "stable" in TIE_BREAKS
    for tb in TIE_BREAKS:
        rm.TP(tie_break=tb)  # measure parameter accepts every policy
    args = build_parser().parse_args(["eval", "q", "r", "P@1", "--tie-break", "stable"])
    assert args.tie_break == "stable"


_QRELS = {"q1": {"d1": 2, "d3": 1, "d6": 1}, "q2": {"d2": 1, "d5": 3}, "q3": {"d9": 1}}


def test_standard_measures_with_stable_equal_pytrec_eval_on_hand_rescored_run():
    # file order within each query; many ties
    rows = [("q1", "d1", 1.0), ("q1", "d2", 2.0), ("q1", "d3", 2.0), ("q1", "d4", 1.0), ("q1", "d5", 0.5),
            ("q1", "d6", 2.0), ("q2", "d5", 0.1), ("q2", "d1", 0.1), ("q2", "d2", 0.1), ("q2", "d3", 0.3),
            ("q3", "d8", 4.0), ("q3", "d9", 4.0)]
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    # by hand: stable order q1: d2, d3, d6 (2.0 in file order), d1, d4 (1.0), d5;
    # q2: d3 (0.3), d5, d1, d2 (0.1 in file order); q3: d8, d9
    stable_order = {"q1": ["d2", "d3", "d6", "d1", "d4", "d5"], "q2": ["d3", "d5", "d1", "d2"], "q3": ["d8", "d9"]}
    rescored = {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in stable_order.items()}
    names = {"ndcg_cut_3": "nDCG@3", "map": "AP", "P_2": "P@2", "recip_rank": "RR", "ndcg": "nDCG"}
    per_query = pytrec_eval.RelevanceEvaluator(_QRELS, {"ndcg_cut.3", "map", "P.2", "recip_rank", "ndcg"}).evaluate(
        rescored)
    qrels = pd.DataFrame([(q, d, r) for q, ds in _QRELS.items() for d, r in ds.items()],
                         columns=["query_id", "doc_id", "relevance"])
    got = rm.calc_aggregate(list(names.values()), qrels, run, tie_break="stable")
    for trec_name, ours in names.items():
        expected = np.mean([per_query[q][trec_name] for q in per_query])
        assert got[ir_measures.parse_measure(ours)] == pytest.approx(expected, abs=1e-12), ours
    # and the policy matters on this run: trec_eval's own order gives another nDCG@3
    default = rm.calc_aggregate(["nDCG@3"], qrels, run)
    assert default[ir_measures.parse_measure("nDCG@3")] != pytest.approx(got[ir_measures.parse_measure("nDCG@3")])
