"""Aggregation-aware statistics: every interval and test resamples the unit the measure averages
over. Checked on constructed cases whose answer is known (identical conversations, fixed cell
means, exact enumeration over conversations, normal-theory variances written out in the test), and
point estimates against ``rm.calc_aggregate``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import reteco_measures as rm
from reteco_measures.measures import REGISTERED
from reteco_measures.sample import sample_path, sample_root
from reteco_measures.stats import compare_frame, unit_columns


def _ranking(qid: str, rel_rank: int | None, n: int = 5, tag: str = "") -> list[tuple[str, str, float]]:
    """n documents for a query; the relevant one 'rel' at rel_rank (1-based) or absent."""
    docs = [f"{tag}n{i}" for i in range(n)]
    if rel_rank is not None:
        docs[rel_rank - 1] = "rel"
    return [(qid, d, float(n - i)) for i, d in enumerate(docs)]


# -- conversations ------------------------------------------------------------------------------


def conversations(sizes: list[int], ranks: dict[str, list[int | None]]):
    """qrels (one relevant doc per turn) and runs where turn t of *every* conversation puts the
    relevant doc at ranks[run][t-1]: all conversations of the same size are identical."""
    qids = [f"c{c}_turn_{t}" for c, size in enumerate(sizes) for t in range(1, size + 1)]
    qrels = pd.DataFrame({"query_id": qids, "doc_id": "rel", "relevance": 1})
    runs = {}
    for name, pattern in ranks.items():
        rows = []
        for q in qids:
            t = int(q.rsplit("_", 1)[1])
            rows += _ranking(q, pattern[t - 1])
        runs[name] = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    return qrels, runs


def test_identical_conversations_give_a_zero_width_cluster_interval() -> None:
    qrels, runs = conversations([3] * 12, {"A": [1, 3, None], "B": [2, 2, 5]})
    c = rm.compare(runs, qrels, ["TurnNDCG(average='conversation')@10", "TurnNDCG@10"], n_resamples=2000)
    conv = c.summary[c.summary["measure"] == "TurnNDCG(average='conversation')@10"]
    for row in conv.itertuples():
        assert row.ci_low == pytest.approx(row.value, abs=1e-12)
        assert row.ci_high == pytest.approx(row.value, abs=1e-12)
    # the same turns resampled one by one (average='turn') vary: the interval is wide
    turn = c.summary[c.summary["measure"] == "TurnNDCG@10"]
    assert (turn["ci_high"] - turn["ci_low"]).min() > 0.03
    design = c.design.set_index("measure")
    assert design.loc["TurnNDCG(average='conversation')@10", "unit"] == "conversation"
    assert design.loc["TurnNDCG(average='conversation')@10", "n_units"] == 12
    assert design.loc["TurnNDCG@10", "n_units"] == 36


def test_conversation_point_estimates_equal_calc_aggregate_exactly() -> None:
    qrels, runs = conversations([1, 2, 5, 3, 4], {"A": [1, 3, None, 2, 1], "B": [2, None, 1, 1, 4]})
    measures = ["TurnNDCG(average='conversation')@10", "TurnNDCG@3", "nDCG@10"]
    c = rm.compare(runs, qrels, measures, n_resamples=200)
    for name, run in runs.items():
        agg = rm.calc_aggregate(measures, qrels, run)
        got = c.summary[c.summary["run"] == name].set_index("measure")["value"]
        for m, v in agg.items():
            if m.NAME in REGISTERED:
                assert got[rm.measure_label(m)] == v  # exactly, not approximately
            else:  # a standard measure's backend may sum pairwise (numpy) instead of left to right
                assert got[rm.measure_label(m)] == pytest.approx(v, rel=4 * np.finfo(float).eps)


def test_cluster_bootstrap_variance_is_that_of_the_mean_of_conversation_means() -> None:
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 7, 40)
    rows, conv_means = [], []
    for c, size in enumerate(sizes):
        vals = np.clip(rng.normal(rng.random(), 0.1, size), 0, 1)
        conv_means.append(vals.mean())
        for t, v in enumerate(vals):
            for run, shift in (("A", 0.0), ("B", 0.05)):
                rows.append((run, "m", f"c{c}_turn_{t + 1}", v + shift, 1.0 / size, f"c{c}"))
    f = pd.DataFrame(rows, columns=["run", "measure", "query_id", "value", "weight", "unit"])
    c = compare_frame(f, n_resamples=20_000, seed=1)
    row = c.summary[c.summary["run"] == "A"].iloc[0]
    assert row["value"] == pytest.approx(np.mean(conv_means), abs=1e-12)
    half = sps.norm.ppf(0.975) * np.std(conv_means) / math.sqrt(len(sizes))
    assert (row["ci_high"] - row["ci_low"]) / 2 == pytest.approx(half, rel=0.1)


def test_sign_flips_act_on_whole_conversations() -> None:
    rng = np.random.default_rng(8)
    sizes = [1, 2, 3, 4, 2, 1, 3, 5, 2, 1]
    rows, diffs = [], []
    for c, size in enumerate(sizes):
        a = rng.random(size)
        b = a - 0.1 + rng.normal(0, 0.25, size)
        diffs.append(a.mean() - b.mean())
        for t in range(size):
            rows += [("A", "m", f"c{c}_turn_{t}", a[t], 1 / size, f"c{c}"),
                     ("B", "m", f"c{c}_turn_{t}", b[t], 1 / size, f"c{c}")]
    f = pd.DataFrame(rows, columns=["run", "measure", "query_id", "value", "weight", "unit"])
    d = np.array(diffs)
    exact = np.mean([abs(np.dot(s, d)) >= abs(d.sum()) - 1e-12 for s in itertools.product((1, -1), repeat=len(d))])
    B = 20_000
    p = compare_frame(f, test="randomization", n_resamples=B, seed=2).pairwise["p_value"].iloc[0]
    assert abs(p - exact) <= 4 * math.sqrt(exact * (1 - exact) / B) + 2 / B
    # t on conversation means (one unit = one conversation), as scipy on the conversation differences
    t = compare_frame(f, test="t", n_resamples=100).pairwise["p_value"].iloc[0]
    assert t == pytest.approx(sps.ttest_1samp(d, 0).pvalue, rel=1e-10)


# -- collection x condition cells --------------------------------------------------------------

CELLS = {("c1", "clean"): 5, ("c1", "noisy"): 2, ("c2", "clean"): 3, ("c2", "noisy"): 7}


def spoken_case(rank_of_cell: dict[str, dict[tuple[str, str], int | None]]):
    topics, qrels_rows = [], []
    for (coll, cond), n in CELLS.items():
        for i in range(n):
            q = f"{coll}-{cond}-{i}"
            topics.append({"query_id": q, "collection": coll, "condition": cond})
            qrels_rows.append((q, "rel", 2))
    topics = pd.DataFrame(topics)
    qrels = pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"])
    runs = {}
    for name, ranks in rank_of_cell.items():
        rows = []
        for t in topics.itertuples():
            rows += _ranking(t.query_id, ranks[(t.collection, t.condition)])
        runs[name] = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    return topics, qrels, runs


def test_fixed_cell_means_give_a_zero_width_stratified_interval() -> None:
    topics, qrels, runs = spoken_case({
        "A": {("c1", "clean"): 1, ("c1", "noisy"): 2, ("c2", "clean"): None, ("c2", "noisy"): 4},
        "B": {("c1", "clean"): 3, ("c1", "noisy"): 1, ("c2", "clean"): 2, ("c2", "noisy"): None},
    })
    c = rm.compare(runs, qrels, ["SpokenMacroNDCG@10", "nDCG@10"], topics=topics, n_resamples=2000)
    spoken = c.summary[c.summary["measure"] == "SpokenMacroNDCG@10"]
    assert np.allclose(spoken["ci_low"], spoken["value"], atol=1e-12)
    assert np.allclose(spoken["ci_high"], spoken["value"], atol=1e-12)
    plain = c.summary[c.summary["measure"] == "nDCG@10"]  # resampled over requests: cells reweighted
    assert (plain["ci_high"] - plain["ci_low"]).min() > 0.05
    for name, run in runs.items():
        agg = rm.calc_aggregate(["SpokenMacroNDCG@10"], qrels, run, topics=topics)
        assert spoken.set_index("run").loc[name, "value"] == list(agg.values())[0]
    design = c.design.set_index("measure").loc["SpokenMacroNDCG@10"]
    assert (design["unit"], design["strata"], design["n_units"]) == ("request", "collection x condition", 17)
    cols = unit_columns(rm.SpokenMacroNDCG @ 10, ["c1-clean-0", "c2-noisy-3"], topics)
    assert cols["stratum"].tolist() == ["c1 x clean", "c2 x noisy"]


def stratified_frame(seed: int = 4):
    rng = np.random.default_rng(seed)
    rows, cells = [], []
    n_cells = len(CELLS)
    for h, ((coll, cond), n) in enumerate(CELLS.items()):
        n = n * 6
        a = np.clip(rng.normal(0.2 + 0.15 * h, 0.2, n), 0, 1)
        b = np.clip(a + rng.normal(0.05, 0.1, n), 0, 1)
        cells.append((a, b))
        for i in range(n):
            q = f"{coll}-{cond}-{i}"
            w = 1.0 / (n * n_cells)
            rows += [("A", "m", q, a[i], w, q, f"{coll} x {cond}"), ("B", "m", q, b[i], w, q, f"{coll} x {cond}")]
    return pd.DataFrame(rows, columns=["run", "measure", "query_id", "value", "weight", "unit", "stratum"]), cells


def test_stratified_bootstrap_variance_is_the_stratified_variance() -> None:
    f, cells = stratified_frame()
    c = compare_frame(f, n_resamples=20_000, seed=5)
    row = c.summary[c.summary["run"] == "A"].iloc[0]
    H = len(cells)
    assert row["value"] == pytest.approx(np.mean([a.mean() for a, _ in cells]), abs=1e-12)
    var = sum((1 / H) ** 2 * a.var() / len(a) for a, _ in cells)  # Σ π_h² σ_h² / n_h, σ with ddof=0
    half = sps.norm.ppf(0.975) * math.sqrt(var)
    assert (row["ci_high"] - row["ci_low"]) / 2 == pytest.approx(half, rel=0.1)


def test_stratified_t_test_by_hand() -> None:
    f, cells = stratified_frame()
    p = compare_frame(f, test="t", n_resamples=100).pairwise["p_value"].iloc[0]
    H = len(cells)
    d = [a - b for a, b in cells]
    est = sum(x.mean() / H for x in d)
    se = math.sqrt(sum((1 / H) ** 2 * x.var(ddof=1) / len(x) for x in d))
    df = sum(len(x) - 1 for x in d)
    assert p == pytest.approx(2 * sps.t.sf(abs(est / se), df), rel=1e-10)


# -- defined subsets (nDCG|FC, TC) and steps ---------------------------------------------------

TEMPO = sample_root() / "reteco" / "track1_tempo"


def tempo_inputs():
    qrels = pd.concat([rm.read_qrels(p) for p in sorted(TEMPO.glob("*/qrels_dev.txt"))], ignore_index=True)
    topics = pd.concat([rm.load_topics(p) for p in sorted(TEMPO.glob("*/steps_dev.jsonl"))], ignore_index=True)
    run = rm.read_run(sample_path("runs", "reteco_track1a_dev.txt"))
    rng = np.random.default_rng(0)
    noisy = run.assign(score=run["score"] + rng.normal(0, 4, len(run)))
    tied = run.assign(score=np.round(run["score"] / 4))
    return qrels, topics, {"base": run, "noisy": noisy, "tied": tied}


def test_tempo_point_estimates_equal_calc_aggregate_exactly() -> None:
    qrels, topics, runs = tempo_inputs()
    measures = ["nDCG@10", "TP@10", "TR@10", "TC@10", "nDCG|FC@10", "nDCG_FC(empty=0)@5", "AP@10"]
    c = rm.compare(runs, qrels, measures, topics=topics, n_resamples=300)
    for name, run in runs.items():
        agg = rm.calc_aggregate(measures, qrels, run, topics=topics)
        got = c.summary[c.summary["run"] == name].set_index("measure")
        for m, v in agg.items():
            value = got.loc[rm.measure_label(m), "value"]
            if m.NAME in REGISTERED:  # our aggregator: the same left-to-right sum, bit for bit
                assert value == v or (math.isnan(v) and math.isnan(value)), (name, m)
            else:  # standard measures: the backend may sum pairwise (numpy) instead of left to right
                assert value == pytest.approx(v, rel=4 * np.finfo(float).eps), (name, m)
    fc = c.per_query[(c.per_query["measure"] == "nDCG|FC@10")]
    n_defined = fc.groupby("run")["value"].count()
    assert (c.summary[c.summary["measure"] == "nDCG|FC@10"].set_index("run")["n"] == n_defined).all()


def test_undefined_queries_do_not_widen_the_interval() -> None:
    # nDCG|FC is 0.5 on every defined query; the others are NaN (not fully covered)
    q = [f"q{i}" for i in range(30)]
    defined = np.arange(30) % 3 == 0
    rows = []
    for run, shift in (("A", 0.0), ("B", 0.25)):
        rows.append(pd.DataFrame({"run": run, "measure": "nDCG|FC@10", "query_id": q,
                                  "value": np.where(defined, 0.5 + shift, np.nan), "weight": 1.0}))
    c = compare_frame(pd.concat(rows), n_resamples=2000)
    assert c.summary["ci_low"].tolist() == pytest.approx([0.5, 0.75])
    assert c.summary["ci_high"].tolist() == pytest.approx([0.5, 0.75])
    assert c.summary["n"].tolist() == [10, 10]
    assert c.pairwise["wins"].iloc[0] + c.pairwise["ties"].iloc[0] + c.pairwise["losses"].iloc[0] == 10


def test_empty_subset_uses_the_measure_empty_value() -> None:
    qrels, topics, runs = tempo_inputs()
    nothing = runs["base"].assign(doc_id="unjudged-" + runs["base"]["doc_id"])
    c = rm.compare({"base": runs["base"], "nothing": nothing}, qrels, ["nDCG_FC(empty=0)@10", "nDCG|FC@10"],
                   topics=topics, n_resamples=200)
    s = c.summary.set_index(["run", "measure"])["value"]
    assert s[("nothing", "nDCG|FC(empty=0)@10")] == 0.0
    assert math.isnan(s[("nothing", "nDCG|FC@10")])


def test_step_units() -> None:
    assert unit_columns(rm.StepNDCG(average="step") @ 10, ["1_step1"])["unit"].tolist() == ["1_step1"]
    assert rm.stats.unit_kind(rm.StepNDCG @ 10) == ("query", None)
    assert rm.stats.unit_kind(rm.StepNDCG(average="step") @ 10) == ("step", None)
    qrels = pd.DataFrame({"query_id": ["q1_step1", "q1_step2", "q2_step1"], "doc_id": "rel", "relevance": 1})
    runs = {"A": pd.DataFrame(_ranking("q1_step1", 1) + _ranking("q1_step2", 3) + _ranking("q2_step1", 2),
                              columns=["query_id", "doc_id", "score"]),
            "B": pd.DataFrame(_ranking("q1_step1", 2) + _ranking("q2_step1", 1),
                              columns=["query_id", "doc_id", "score"])}
    c = rm.compare(runs, qrels, ["StepNDCG@10", "StepNDCG(average='step')@10"], n_resamples=100)
    for name, run in runs.items():
        agg = rm.calc_aggregate(["StepNDCG@10", "StepNDCG(average='step')@10"], qrels, run)
        got = c.summary[c.summary["run"] == name].set_index("measure")["value"]
        assert [got[rm.measure_label(m)] for m in agg] == list(agg.values())
    assert c.design.set_index("measure")["n_units"].tolist() == [2, 3]  # queries, then steps


def test_groups_equal_evaluate_by() -> None:
    qrels, runs = conversations([1, 2, 5, 3, 7], {"A": [1, 3, None, 2, 1, 4, 1], "B": [2, None, 1, 1, 4, 2, 2]})
    c = rm.compare(runs, qrels, ["TurnNDCG@10", "TurnNDCG(average='conversation')@10"], by="depth",
                   n_resamples=200)
    for name, run in runs.items():
        ev = rm.evaluate(["TurnNDCG@10", "TurnNDCG(average='conversation')@10"], qrels, run, by="depth")
        ev = ev[ev["depth"] != "(macro)"].set_index(["depth", "measure"])
        got = c.summary[c.summary["run"] == name].set_index(["depth", "measure"])
        for key, row in ev.iterrows():
            assert got.loc[key, "value"] == pytest.approx(row["value"], abs=1e-15), key
            assert got.loc[key, "n"] == row["n"]
    assert set(c.pairwise["depth"]) == {"T1", "T2", "T3", "T4", "T5+", "(all)"}


def test_weighted_t_by_hand() -> None:
    # one stratum, unequal unit weights: the linearised variance of the weighted mean difference
    rng = np.random.default_rng(12)
    n = 25
    w = rng.integers(1, 5, n) / 4.0
    a = rng.random(n)
    b = a - 0.05 + rng.normal(0, 0.2, n)
    f = pd.DataFrame({"run": np.repeat(["A", "B"], n), "measure": "m", "query_id": np.tile([f"q{i}" for i in range(n)], 2),
                      "value": np.r_[a, b], "weight": np.r_[w, w]})
    c = compare_frame(f, test="t", n_resamples=100)
    d = a - b
    est = np.sum(w * d) / np.sum(w)
    var = n / (n - 1) * np.sum((w * (d - est)) ** 2) / np.sum(w) ** 2
    assert c.pairwise["delta"].iloc[0] == pytest.approx(est, abs=1e-14)
    assert c.pairwise["p_value"].iloc[0] == pytest.approx(2 * sps.t.sf(abs(est) / math.sqrt(var), n - 1), rel=1e-10)
    assert c.design["unit"].iloc[0] == "query"
