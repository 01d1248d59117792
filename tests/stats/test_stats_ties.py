"""Tie sensitivity: worst and best orders of tied scores built by hand, scored by pytrec_eval on
re-scored runs side by side."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm

QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1, "d4": 0}, "q2": {"a": 1, "b": 0}, "q3": {"x": 1, "y": 0}}
RUN = {
    # d2, d3, d4 tie at the top: trec_eval's order is doc id descending: d4, d3, d2, then d1
    "q1": {"d1": 0.5, "d2": 1.0, "d3": 1.0, "d4": 1.0},
    # 1.0 and 1.0 + 1e-9 are equal at single precision: a tie; trec_eval order b, a
    "q2": {"a": 1.0, "b": 1.0 + 1e-9},
    # no tie
    "q3": {"x": 2.0, "y": 1.0},
}
# orders written by hand: worst = least relevant first within the tie group (then trec_eval order),
# best = most relevant first
WORST = {"q1": {"d4": 4, "d2": 3, "d3": 2, "d1": 1}, "q2": {"b": 2, "a": 1}, "q3": {"x": 2, "y": 1}}
BEST = {"q1": {"d3": 4, "d4": 3, "d2": 2, "d1": 1}, "q2": {"a": 2, "b": 1}, "q3": {"x": 2, "y": 1}}


def trec(measure: str, run: dict) -> dict[str, float]:
    ev = pytrec_eval.RelevanceEvaluator(QRELS, {measure})
    return {q: v[measure] for q, v in ev.evaluate(run).items()}


@pytest.mark.parametrize("ours,theirs", [("nDCG@2", "ndcg_cut_2"), ("nDCG@3", "ndcg_cut_3"), ("P@1", "P_1"),
                                         ("AP", "map"), ("RR", "recip_rank")])
def test_worst_and_best_orders_match_pytrec_eval_on_rescored_runs(ours: str, theirs: str) -> None:
    got = rm.tie_sensitivity(QRELS, RUN, ours).set_index("query_id")
    value, worst, best = trec(theirs, RUN), trec(theirs, WORST), trec(theirs, BEST)
    for q in QRELS:
        assert got.loc[q, "value"] == pytest.approx(value[q], abs=1e-12)
        assert got.loc[q, "min"] == pytest.approx(min(worst[q], value[q]), abs=1e-12)
        assert got.loc[q, "max"] == pytest.approx(max(best[q], value[q]), abs=1e-12)
    assert got.loc["q3", "min"] == got.loc["q3", "max"] == got.loc["q3", "value"]


def test_ties_change_values_here() -> None:
    got = rm.tie_sensitivity(QRELS, RUN, "P@1").set_index("query_id")
    assert (got.loc["q2", "value"], got.loc["q2", "min"], got.loc["q2", "max"]) == (0.0, 0.0, 1.0)


def test_tied_at_cutoff() -> None:
    # the tie group of q1 holds ranks 1..3: it straddles k = 1 and 2, not k = 3 or 5
    for k, expected in ((1, True), (2, True), (3, False), (5, False)):
        got = rm.tie_sensitivity(QRELS, RUN, f"nDCG@{k}").set_index("query_id")["tied_at_cutoff"]
        assert got["q1"] == expected, k
        assert not got["q3"]
    assert rm.tie_sensitivity(QRELS, RUN, "P@1").set_index("query_id").loc["q2", "tied_at_cutoff"]
    assert not rm.tie_sensitivity(QRELS, RUN, "AP").set_index("query_id")["tied_at_cutoff"].any()


def test_values_equal_iter_calc_and_columns() -> None:
    got = rm.tie_sensitivity(QRELS, RUN, "nDCG@10")
    assert list(got.columns) == ["query_id", "value", "min", "max", "tied_at_cutoff"]
    ref = {m.query_id: m.value for m in rm.iter_calc(["nDCG@10"], QRELS, RUN)}
    assert dict(zip(got["query_id"], got["value"])) == ref


def test_compare_shows_tie_bounds_only_when_ties_change_a_value() -> None:
    untied = {q: {d: float(i) for i, d in enumerate(docs)} for q, docs in RUN.items()}
    plain = rm.compare({"A": untied, "B": BEST}, QRELS, ["nDCG@3"], n_resamples=100)
    assert "tie_min" not in plain.summary.columns
    c = rm.compare({"tied": RUN, "B": BEST}, QRELS, ["nDCG@3", "P@1"], n_resamples=100)
    s = c.summary.set_index(["run", "measure"])
    ts = rm.tie_sensitivity(QRELS, RUN, "nDCG@3")
    assert s.loc[("tied", "nDCG@3"), "tie_min"] == pytest.approx(ts["min"].mean())
    assert s.loc[("tied", "nDCG@3"), "tie_max"] == pytest.approx(ts["max"].mean())
    assert s.loc[("B", "nDCG@3"), "tie_min"] == s.loc[("B", "nDCG@3"), "value"]  # B has no ties
    assert (s["tie_min"] <= s["value"] + 1e-12).all() and (s["value"] <= s["tie_max"] + 1e-12).all()


def test_compare_without_ties_skips_the_bounds(tmp_path, capsys) -> None:
    # ties=False (and --no-ties): the same point estimates, no tie_min / tie_max columns
    c = rm.compare({"tied": RUN, "B": BEST}, QRELS, ["nDCG@3"], n_resamples=100)
    off = rm.compare({"tied": RUN, "B": BEST}, QRELS, ["nDCG@3"], n_resamples=100, ties=False)
    assert "tie_min" in c.summary.columns and "tie_min" not in off.summary.columns
    assert off.summary["value"].tolist() == c.summary["value"].tolist()
    from reteco_measures.cli.main import main

    qrels, runs = tmp_path / "qrels.txt", []
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items()))
    for name, run in (("tied", RUN), ("best", BEST)):
        path = tmp_path / f"{name}.run"
        path.write_text("".join(f"{q} Q0 {d} 1 {s!r} x\n" for q, docs in run.items() for d, s in docs.items()))
        runs.append(str(path))
    printed = {}
    for flag in ([], ["--no-ties"]):
        assert main(["compare", str(qrels), *runs, "nDCG@3", "--resamples", "100", *flag]) == 0
        printed[bool(flag)] = capsys.readouterr().out
    assert "tie" in printed[False] and "tie_m" not in printed[True].replace("tie_break", "")


def test_temporal_measure_with_labels_orders_by_verdict() -> None:
    qrels = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1, 1, 1]})
    run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [1.0, 1.0, 1.0]})
    labels = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "temporal": [1, 0, 0],
                           "periods": [[], [], []]})
    # trec_eval order c, b, a: TR@1 = 0; best order puts the temporally relevant a first
    got = rm.tie_sensitivity(qrels, run, "TR@1", labels=labels).iloc[0]
    assert (got["value"], got["min"], got["max"], bool(got["tied_at_cutoff"])) == (0.0, 0.0, 1.0, True)
    assert np.isfinite(got["value"])


def test_ties_among_equally_relevant_documents_change_nothing() -> None:
    qrels = {"q": {"r": 1, "n1": 0}}
    run = {"q": {"r": 3.0, "n1": 1.0, "n2": 1.0, "n3": 1.0}}  # the tie holds non-relevant docs only
    got = rm.tie_sensitivity(qrels, run, "nDCG@2").iloc[0]
    assert got["min"] == got["max"] == got["value"] == 1.0
    assert got["tied_at_cutoff"]  # it straddles rank 2, but every order gives the same value
    c = rm.compare({"A": run, "B": BEST}, QRELS | qrels, ["nDCG@2"], n_resamples=50)
    assert "tie_min" not in c.summary.columns


def test_tie_bounds_re_evaluates_exactly_the_queries_whose_order_matters() -> None:
    """tie_bounds returns rows only for the queries it re-evaluates; brute force (every order of
    every tie group, scored by pytrec_eval) says which queries' nDCG depends on the order of ties:
    those must be exactly the re-evaluated ones, with the brute-force minimum and maximum."""
    import itertools

    import pytrec_eval

    from reteco_measures.stats.ties import tie_bounds

    rng = np.random.default_rng(7)
    qrels_rows, run_rows = [], []
    for i in range(12):
        q = f"q{i}"
        docs = [f"d{j}" for j in range(6)]
        scores = rng.integers(1, 4, len(docs)).astype(float)  # three score levels: ties everywhere
        for d, s in zip(docs, scores):
            run_rows.append((q, d, s))
        for d in rng.choice(docs, 3, replace=False):
            qrels_rows.append((q, d, int(rng.integers(0, 3))))
    qrels = pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame(run_rows, columns=["query_id", "doc_id", "score"])
    qrels_dict: dict = {}
    for q, d, g in qrels_rows:
        qrels_dict.setdefault(q, {})[d] = g
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_dict, {"ndcg"})
    lo, hi = {}, {}
    for q, rows in run.groupby("query_id"):
        by_score = [list(g["doc_id"]) for _, g in sorted(rows.groupby("score"), key=lambda t: -t[0])]
        values = []
        for perms in itertools.product(*(itertools.permutations(g) for g in by_score)):
            ranking = [d for group in perms for d in group]
            scored = {d: float(len(ranking) - r) for r, d in enumerate(ranking)}
            values.append(evaluator.evaluate({q: scored})[q]["ndcg"])
        lo[q], hi[q] = min(values), max(values)
    order_matters = {q for q in lo if hi[q] - lo[q] > 1e-12}
    assert order_matters and order_matters != set(lo)  # the case has both kinds of query

    bounds = tie_bounds(qrels, run, rm.parse_measures("nDCG"))
    assert set(bounds["query_id"]) == order_matters
    for q, worst, best in zip(bounds["query_id"], bounds["worst"], bounds["best"]):
        assert worst == pytest.approx(lo[q], abs=1e-12) and best == pytest.approx(hi[q], abs=1e-12)


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_native_tie_bounds_equal_the_engine_path(monkeypatch, seed):
    """The worst / best orders of standard measures go straight to the native kernels; their
    values are those of the engine's ``iter_calc`` path bit for bit (random tie-heavy runs, graded
    and negative labels, a query without judgments, a judged query absent from the run)."""
    import numpy as np
    import pandas as pd

    from reteco_measures.stats import ties as ties_module

    rng = np.random.default_rng(seed)
    q = np.repeat([f"q{i}" for i in range(40)], 60)
    d = np.array([f"d{j}" for j in rng.integers(0, 90, len(q))], dtype=object)
    run = pd.DataFrame({"query_id": q, "doc_id": d, "score": np.round(rng.random(len(q)), 1)})
    rows = [(f"q{i}", f"d{j}", int(g)) for i in range(41) if i != 3
            for j, g in zip(rng.choice(90, 20, replace=False), rng.integers(-1, 4, 20))]
    qrels = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    measures = rm_parse(["nDCG@10", "AP", "RR", "R@100", "P@5", "nDCG", "RR@10"])
    fast = ties_module.tie_bounds(qrels, run, measures)  # from the judged rows (kernels/bounds.py)
    monkeypatch.setattr(ties_module, "_sparse_bounds", lambda *a, **k: None)
    coded = ties_module.tie_bounds(qrels, run, measures)  # both orders on integer codes, to the kernels
    monkeypatch.setattr(ties_module, "_coded_bounds", lambda *a, **k: None)
    middle = ties_module.tie_bounds(qrels, run, measures)  # the ranked run, straight to the kernels
    monkeypatch.setattr(ties_module, "_native_bounds", lambda *a, **k: None)
    slow = ties_module.tie_bounds(qrels, run, measures)
    assert fast is not None and len(fast) == len(slow) > 0
    key = ["measure", "query_id"]
    slow = slow.assign(measure=slow["measure"].map(str)).sort_values(key).reset_index(drop=True)
    for other in (fast, coded, middle):
        other = other.assign(measure=other["measure"].map(str)).sort_values(key).reset_index(drop=True)
        pd.testing.assert_frame_equal(other, slow, check_exact=True)


def rm_parse(names):
    from reteco_measures.api import parse_measures

    return parse_measures(names)


def _tie_heavy_runs(n_runs: int, seed: int, repeated: bool = False) -> tuple[pd.DataFrame, dict]:
    """Qrels (grades -1..3) and runs with one-decimal scores (ties everywhere); ``repeated``: the
    last run repeats some (query, doc) pairs (the last score counts)."""
    rng = np.random.default_rng(seed)
    rows = [(f"q{i}", f"d{j}", int(g)) for i in range(30)
            for j, g in zip(rng.choice(60, 15, replace=False), rng.integers(-1, 4, 15))]
    qrels = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    runs = {}
    for r in range(n_runs):
        parts = [pd.DataFrame({"query_id": f"q{i}", "doc_id": [f"d{j}" for j in rng.choice(60, 40, replace=False)],
                               "score": np.round(rng.random(40), 1)}) for i in range(30)]
        run = pd.concat(parts, ignore_index=True)
        if repeated and r == n_runs - 1:
            again = run.sample(50, random_state=seed).assign(score=lambda f: np.round(f["score"] + 0.3, 1))
            run = pd.concat([run, again], ignore_index=True)
        runs[f"run{r}"] = run
    return qrels, runs


BOUND = ["nDCG@10", "AP", "RR", "R@20", "P@5", "nDCG", "RR@3"]


def test_compare_prepares_each_run_once_and_checks_its_ids_once(monkeypatch) -> None:
    """rm.compare groups, orders and hashes each run once (the evaluation's PreparedRun serves the
    tie bounds) and checks each run's query ids once (align_runs; the evaluation does not again)."""
    from reteco_measures import query_ids
    from reteco_measures.kernels import standard

    qrels, runs = _tie_heavy_runs(3, 11)
    built: list = []
    checked: list = []
    init, check = standard.PreparedRun.__init__, query_ids.check_query_ids

    def counting_init(self, *args, **kwargs):
        built.append(1)
        init(self, *args, **kwargs)

    def counting_check(ids, reference, **kwargs):
        checked.append(kwargs.get("what"))
        return check(ids, reference, **kwargs)

    monkeypatch.setattr(standard.PreparedRun, "__init__", counting_init)
    monkeypatch.setattr(query_ids, "check_query_ids", counting_check)
    comparison = rm.compare(runs, qrels, BOUND, n_resamples=20)
    assert {"tie_min", "tie_max"} <= set(comparison.summary.columns)  # the tie step ran
    assert len(built) == len(runs)
    assert checked == [f"run {name!r}" for name in runs]


def test_compare_on_the_handed_over_preparation_equals_the_general_path_bit_for_bit(monkeypatch) -> None:
    """compare's per-query frame (tie_min / tie_max included) is the same to the last bit with the
    evaluation's preparation handed to the tie bounds, without it, and on the general path (both
    orders re-ranked and evaluated); one run repeats (query, doc) pairs."""
    from reteco_measures.stats import ties as ties_module

    compare_module = __import__("sys").modules["reteco_measures.stats.compare"]
    qrels, runs = _tie_heavy_runs(3, 12, repeated=True)
    handed = rm.compare(runs, qrels, BOUND, n_resamples=20).per_query
    assert handed["tie_min"].lt(handed["value"]).any() and handed["tie_max"].gt(handed["value"]).any()
    monkeypatch.setattr(compare_module, "PREPARED_RUNS", "_not_the_kernels_key")  # nothing handed over
    built = rm.compare(runs, qrels, BOUND, n_resamples=20).per_query
    monkeypatch.setattr(compare_module, "bound_measure", lambda m: False)  # not from the judged rows
    for path in ("_sparse_bounds", "_coded_bounds", "_native_bounds"):
        monkeypatch.setattr(ties_module, path, lambda *a, **k: None)
    general = rm.compare(runs, qrels, BOUND, n_resamples=20).per_query
    pd.testing.assert_frame_equal(handed, built, check_exact=True)
    pd.testing.assert_frame_equal(handed, general, check_exact=True)
