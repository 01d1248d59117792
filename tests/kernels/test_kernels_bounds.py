"""Tie bounds from the judged rows (kernels/bounds.py) against pytrec_eval run on the worst and
best orders built here by a plain sort, on random tie-heavy runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from reteco_measures.api import parse_measures
from reteco_measures.kernels.bounds import JudgedQrels, bound_measure, tie_order_values
from reteco_measures.stats import ties as ties_module

# our measure -> (pytrec_eval measure, relevance level); None: computed by hand below (RR@k)
MEASURES = {
    "nDCG@10": ("ndcg_cut_10", 1), "nDCG@3": ("ndcg_cut_3", 1), "nDCG": ("ndcg", 1), "AP": ("map", 1),
    "AP@5": ("map_cut_5", 1), "AP(rel=2)": ("map", 2), "P@5": ("P_5", 1), "P(rel=2)@10": ("P_10", 2),
    "R@20": ("recall_20", 1), "RR": ("recip_rank", 1), "RR(rel=2)": ("recip_rank", 2), "RR@3": None,
}


def tie_heavy(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run with one-decimal scores (ties everywhere, some equal only at single precision), repeated
    (query, doc) pairs, and qrels with grades -1..3, repeated judgments, a query judged only on a
    document the run lacks, a run query without qrels and two qrels queries absent from the run."""
    rng = np.random.default_rng(seed)
    run_rows, qrels_rows = [], []
    for i in range(60):
        q = f"q{i}"
        n = int(rng.integers(5, 40))
        docs = rng.choice(80, n, replace=False)
        scores = np.round(rng.random(n), 1)
        scores[rng.random(n) < 0.1] = 1.0 + 1e-9  # ties 1.0 at single precision
        run_rows += [(q, f"d{d}", float(s)) for d, s in zip(docs, scores)]
        for d in rng.choice(docs, min(3, n), replace=False):  # repeated pairs: the last score counts
            run_rows.append((q, f"d{d}", float(np.round(rng.random(), 1))))
        if i == 5:
            continue  # a run query without qrels
        qrels_rows.append((q, "unretrieved", 0))  # every query has a label >= 0 (pytrec_eval's safety)
        if i == 7:
            continue  # no judged document retrieved
        for d in rng.choice(80, 25, replace=False):
            qrels_rows.append((q, f"d{d}", int(rng.integers(-1, 4))))
        for d in rng.choice(80, 2, replace=False):  # repeated judgments: the last grade counts
            qrels_rows.append((q, f"d{d}", int(rng.integers(0, 4))))
    qrels_rows += [("q60", "d1", 2), ("q61", "d3", 1)]  # judged, not in the run
    perm = rng.permutation(len(run_rows))
    run = pd.DataFrame([run_rows[j] for j in sorted(perm[: len(perm) // 2])] + [run_rows[j] for j in sorted(perm[len(perm) // 2:])],
                       columns=["query_id", "doc_id", "score"])
    return pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"]), run


def as_dicts(qrels: pd.DataFrame, run: pd.DataFrame) -> tuple[dict, dict]:
    qd: dict = {}
    for q, d, g in qrels.itertuples(index=False):
        qd.setdefault(q, {})[d] = int(g)  # the last judgment of a pair wins
    rd: dict = {}
    for q, d, s in run.itertuples(index=False):
        rd.setdefault(q, {})[d] = float(s)  # the last score of a pair wins
    return qd, rd


def order(qd: dict, rd: dict, best: bool) -> dict:
    """Each query's documents sorted by (score at single precision desc, grade asc / desc, doc id
    desc), re-scored so that pytrec_eval keeps that order; unjudged documents have grade 0."""
    out = {}
    for q, docs in rd.items():
        grade = qd.get(q, {})
        items = sorted(docs, key=lambda d: (-np.float32(docs[d]), -grade.get(d, 0) if best else grade.get(d, 0),
                                            tuple(-b for b in d.encode())))
        out[q] = {d: float(len(items) - r) for r, d in enumerate(items)}
    return out


def mixed_queries(qd: dict, rd: dict) -> set[str]:
    """Queries of both the qrels and the run with a tie group of documents of different grades."""
    hit = set()
    for q, docs in rd.items():
        if q not in qd:
            continue
        groups: dict = {}
        for d, s in docs.items():
            groups.setdefault(np.float32(s), set()).add(qd[q].get(d, 0))
        if any(len(g) > 1 for g in groups.values()):
            hit.add(q)
    return hit


def reference(name: str, qd: dict, ordered: dict) -> dict[str, float]:
    spec = MEASURES[name]
    if spec is None:  # RR@3: 1/rank of the first document with grade >= 1 if that rank is <= 3
        out = {}
        for q, docs in ordered.items():
            ranked = sorted(docs, key=lambda d: -docs[d])
            first = next((r + 1 for r, d in enumerate(ranked) if qd.get(q, {}).get(d, 0) >= 1), 0)
            out[q] = 1.0 / first if 0 < first <= 3 else 0.0
        return out
    measure, level = spec
    ev = pytrec_eval.RelevanceEvaluator(qd, {measure}, relevance_level=level)
    return {q: v[measure] for q, v in ev.evaluate(ordered).items()}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_bounds_equal_pytrec_eval_on_the_worst_and_best_orders(seed: int) -> None:
    qrels, run = tie_heavy(seed)
    qd, rd = as_dicts(qrels, run)
    measures = parse_measures(list(MEASURES))
    assert all(bound_measure(m) for m in measures)
    got = tie_order_values(measures, JudgedQrels(qrels), run)
    qids = got.query_ids.to_pylist()
    expected = mixed_queries(qd, rd)
    assert set(qids) == expected and len(qids) == len(expected) and "q5" not in expected
    assert qids == [q for q in dict.fromkeys(qrels["query_id"]) if q in expected]  # the qrels' order
    worst_run, best_run = order(qd, rd, best=False), order(qd, rd, best=True)
    moved = 0
    for name, m in zip(MEASURES, measures):
        worst, best = reference(name, qd, worst_run), reference(name, qd, best_run)
        for q, w, b in zip(qids, got.worst[m], got.best[m]):
            assert w == pytest.approx(worst[q], abs=1e-9), (name, q)
            assert b == pytest.approx(best[q], abs=1e-9), (name, q)
            moved += worst[q] != best[q]
    assert moved > 50  # the case has ties that change values


@pytest.mark.parametrize("seed", [1, 2])
def test_bounds_equal_the_general_path_bit_for_bit(monkeypatch, seed: int) -> None:
    """The same frame as the general path (the run re-ranked in both orders and evaluated by
    ``iter_calc``), to the last bit."""
    qrels, run = tie_heavy(seed)
    measures = parse_measures(list(MEASURES))
    fast = ties_module.tie_bounds(qrels, run, measures)
    monkeypatch.setattr(ties_module, "_sparse_bounds", lambda *a, **k: None)
    monkeypatch.setattr(ties_module, "_coded_bounds", lambda *a, **k: None)
    monkeypatch.setattr(ties_module, "_native_bounds", lambda *a, **k: None)
    slow = ties_module.tie_bounds(qrels, run, measures)
    key = ["measure", "query_id"]
    fast = fast.assign(measure=fast["measure"].map(str)).sort_values(key).reset_index(drop=True)
    slow = slow.assign(measure=slow["measure"].map(str)).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)


def test_not_bound_measures_take_the_other_paths() -> None:
    assert not any(bound_measure(m) for m in parse_measures(["Judged@10", "nDCG(judged_only=True)@10",
                                                             "nDCG(gains={0:1,1:2})@10", "Rprec"]))
    qrels, run = tie_heavy(1)
    with pytest.raises(ValueError):
        tie_order_values(parse_measures(["Judged@10"]), JudgedQrels(qrels), run)


def test_nan_scores_and_runs_without_ties() -> None:
    qrels, run = tie_heavy(1)
    m = parse_measures(["nDCG@10"])
    assert tie_order_values(m, JudgedQrels(qrels), run.assign(score=np.nan)) is None  # the general path
    distinct = run.drop_duplicates(["query_id", "doc_id"], keep="last").reset_index(drop=True)
    distinct["score"] = np.arange(len(distinct), dtype=np.float64)
    assert len(tie_order_values(m, JudgedQrels(qrels), distinct).query_ids) == 0


def handed_over(measures: list, qrels: pd.DataFrame, run: pd.DataFrame) -> list:
    """What the native kernels hand over (kernels.standard.PREPARED_RUNS) when they evaluate ``run``."""
    from reteco_measures.kernels.standard import PREPARED_RUNS, per_query
    from reteco_measures.side import side_info

    sink: list = []
    with side_info(**{PREPARED_RUNS: sink}):
        per_query(measures, qrels, run)
    return sink


def same_values(a, b, measures) -> None:
    assert a.query_ids.to_pylist() == b.query_ids.to_pylist()
    for m in measures:
        np.testing.assert_array_equal(a.worst[m], b.worst[m])  # bit for bit
        np.testing.assert_array_equal(a.best[m], b.best[m])


@pytest.mark.parametrize("layout", ["as_given", "sorted", "one_width"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_handed_over_preparation_gives_the_same_values_bit_for_bit(monkeypatch, seed: int, layout: str) -> None:
    """The tie bounds on the evaluation's own PreparedRun and qrels lookups (handed over by
    ``per_query``) equal those built from the run here and the general path's (the orders re-ranked
    and evaluated), to the last bit; the run is neither prepared nor matched again. Layouts: rows
    as generated (repeated pairs, queries split), sorted by query and score (no permutation),
    every query with the same number of rows (the kernels' per-query matrix sort)."""
    from reteco_measures.kernels import bounds as bounds_module

    qrels, run = tie_heavy(seed)
    if layout == "sorted":
        run = run.drop_duplicates(["query_id", "doc_id"], keep="last").sort_values(
            ["query_id", "score"], ascending=[True, False], kind="stable").reset_index(drop=True)
    elif layout == "one_width":
        run = run.drop_duplicates(["query_id", "doc_id"], keep="last")
        run = run[run.groupby("query_id").cumcount() < 5]
        run = run[run.groupby("query_id")["doc_id"].transform("size") == 5]
        run = run.sort_values("query_id", kind="stable").reset_index(drop=True)  # grouped, scores unsorted
    measures = parse_measures(list(MEASURES))
    sink = handed_over(measures, qrels, run)
    assert len(sink) == 1 and sink[0].run is run and sink[0].judged_rows is not None
    if layout == "sorted":
        assert sink[0].prepared.perm is None
    elif layout == "one_width":
        assert sink[0].prepared.width == 5 and sink[0].prepared.perm is not None
    else:
        assert len(sink[0].frame) < len(run)  # the repeated pairs dropped
    built = tie_order_values(measures, JudgedQrels(qrels), run)

    def fail(*a, **k):
        raise AssertionError("the run is prepared or matched again")

    monkeypatch.setattr(bounds_module, "prepare_run", fail)
    monkeypatch.setattr(bounds_module, "_match", fail)
    reused = tie_order_values(measures, JudgedQrels(qrels), run, handed=sink[0])
    monkeypatch.undo()
    assert len(reused.query_ids) > 0
    same_values(reused, built, measures)
    # and the general path's frame (ties.tie_bounds without the judged-rows paths)
    monkeypatch.setattr(ties_module, "_sparse_bounds", lambda *a, **k: None)
    monkeypatch.setattr(ties_module, "_coded_bounds", lambda *a, **k: None)
    monkeypatch.setattr(ties_module, "_native_bounds", lambda *a, **k: None)
    slow = ties_module.tie_bounds(qrels, run, measures)
    slow = slow.assign(measure=slow["measure"].map(str)).set_index(["measure", "query_id"])
    for m in measures:
        for q, w, b in zip(reused.query_ids.to_pylist(), reused.worst[m], reused.best[m]):
            assert (w, b) == (slow.loc[(str(m), q), "worst"], slow.loc[(str(m), q), "best"]), (m, q)


def test_handed_over_preparation_without_lookups_matches_the_qrels_itself(monkeypatch) -> None:
    """When every measure of the evaluation maps grades (``gains``) or keeps judged documents only,
    the kernels hand over the PreparedRun without qrels lookups: the bounds match the judged rows
    themselves on it (and still do not prepare the run again), with the same values."""
    from reteco_measures.kernels import bounds as bounds_module

    qrels, run = tie_heavy(4)
    sink = handed_over(parse_measures(["nDCG(gains={0:0,1:1,2:3,3:7})@10", "AP(judged_only=True)"]), qrels, run)
    assert len(sink) == 1 and sink[0].judged_rows is None
    measures = parse_measures(list(MEASURES))
    built = tie_order_values(measures, JudgedQrels(qrels), run)
    monkeypatch.setattr(bounds_module, "prepare_run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("again")))
    same_values(tie_order_values(measures, JudgedQrels(qrels), run, handed=sink[0]), built, measures)


def test_nothing_is_handed_over_without_a_sink_or_with_nan_scores() -> None:
    from reteco_measures.kernels.standard import NativeFallback, per_query

    qrels, run = tie_heavy(1)
    m = parse_measures(["nDCG@10"])
    per_query(m, qrels, run)  # no sink: nothing to fill, nothing fails
    sink: list = []
    with pytest.raises(NativeFallback):
        from reteco_measures.kernels.standard import PREPARED_RUNS
        from reteco_measures.side import side_info

        with side_info(**{PREPARED_RUNS: sink}):
            per_query(m, qrels, run.assign(score=np.nan))
    assert sink == []


def test_handed_over_lookups_of_a_shallow_evaluation_are_completed() -> None:
    """An evaluation that read only the top rows (``P@5``) hands over lookups of those rows: the
    bounds look up the rest and give the same values as without the hand-over."""
    qrels, run = tie_heavy(2)
    sink = handed_over(parse_measures(["P@5"]), qrels, run)
    assert sink[0].judged_rows is not None
    measures = parse_measures(list(MEASURES))
    same_values(tie_order_values(measures, JudgedQrels(qrels), run, handed=sink[0]),
                tie_order_values(measures, JudgedQrels(qrels), run), measures)
