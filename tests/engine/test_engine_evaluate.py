"""`reteco_measures.engine.evaluate.prepare` with a ranking made before the call (``ranked=``): our
measures read it instead of sorting the run, the native kernels skip their duplicate check, the
values are those of the call without it; a ranking of another run or another tie policy is not
used."""

from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
import pytest

from reteco_measures.engine import evaluate
from reteco_measures.kernels import context, standard
from reteco_measures.kernels.context import RankedRun
from reteco_measures.kernels.ranking import rank_run
from reteco_measures.side import side_info

MEASURES = ["nDCG@5", "AP", "RR", "TR@5", "TP@5"]


@pytest.fixture
def inputs():
    rng = np.random.default_rng(3)
    q = np.repeat([f"q{i}" for i in (3, 1, 12, 2)], 20)
    d = np.array([f"d{i}" for i in rng.choice(60, 80)])
    frame = pd.DataFrame({"query_id": q, "doc_id": d, "score": np.round(rng.random(80) * 2, 1)})
    run = frame.drop_duplicates(["query_id", "doc_id"], keep="last").reset_index(drop=True)
    qrels = pd.DataFrame({"query_id": np.repeat(["q1", "q2", "q3", "q12"], 6),
                          "doc_id": [f"d{i}" for i in rng.choice(60, 24)], "relevance": rng.integers(0, 3, 24)})
    return qrels, run


def values(p):
    frame = evaluate.values_prepared(p)
    return frame.sort_values(["measure", "query_id"], key=lambda c: c.astype(str)).reset_index(drop=True)


@pytest.mark.parametrize("tie_break", ["trec_eval", "stable"])
def test_a_given_ranking_is_read_not_made_again(inputs, monkeypatch, tie_break):
    qrels, run = inputs
    plain = values(evaluate.prepare(MEASURES, qrels, run, tie_break=tie_break))
    given = RankedRun(run, tie_break, rank_run(run, tie_break))
    calls = []
    monkeypatch.setattr(context, "rank_run", lambda *a, **k: calls.append("rank_run"))
    monkeypatch.setattr(evaluate, "rank_run", lambda *a, **k: calls.append("rank_run"))
    real = standard.PreparedRun.duplicate_rows

    def duplicate_rows(self):
        calls.append(("duplicate_rows", self.n))
        return real(self)

    monkeypatch.setattr(standard.PreparedRun, "duplicate_rows", duplicate_rows)
    p = evaluate.prepare(MEASURES, qrels, run, tie_break=tie_break, ranked=given)
    assert p.unique_pairs and p.ranked.ranked is given.ranked
    shared = values(p)
    assert [c for c in calls if c == "rank_run" or c[1] == len(run)] == []
    pd.testing.assert_frame_equal(shared, plain)
    assert shared["value"].to_numpy().tobytes() == plain["value"].to_numpy().tobytes()


def test_a_ranking_of_another_run_or_policy_is_not_used(inputs):
    qrels, run = inputs
    given = RankedRun(run, "trec_eval", rank_run(run, "trec_eval"))
    copy = evaluate.prepare(MEASURES, qrels, run.copy(), ranked=given)
    assert copy.ranked is None and not copy.unique_pairs
    other = evaluate.prepare(MEASURES, qrels, run, tie_break="stable", ranked=given)
    assert other.ranked is not given and other.ranked.ranked is not given.ranked


def test_unique_pairs_names_one_frame(inputs):
    """The native kernels skip the duplicate check only for the frame the engine names."""
    qrels, run = inputs
    doubled = pd.concat([run, run.iloc[:3].assign(score=9.0)], ignore_index=True)  # 3 repeated pairs
    ndcg = [ir_measures.nDCG @ 5]
    expected = standard.per_query_frame(ndcg, qrels, doubled)
    with side_info(**{standard.UNIQUE_PAIRS: run}):
        got = standard.per_query_frame(ndcg, qrels, doubled)
    pd.testing.assert_frame_equal(got, expected)


def test_unique_pairs_skips_the_duplicate_check_of_that_frame(inputs, monkeypatch):
    qrels, run = inputs
    calls = []
    real = standard.PreparedRun.duplicate_rows
    monkeypatch.setattr(standard.PreparedRun, "duplicate_rows", lambda self: calls.append(self.n) or real(self))
    ndcg = [ir_measures.nDCG @ 5]
    expected = standard.per_query_frame(ndcg, qrels, run)
    assert calls == [len(run)]
    with side_info(**{standard.UNIQUE_PAIRS: run}):
        got = standard.per_query_frame(ndcg, qrels, run)
    assert calls == [len(run)]  # not checked again
    pd.testing.assert_frame_equal(got, expected)
