"""The ir_measures plugin: names parse, registration is idempotent, our provider is routed to
inside plain ir_measures calls, side information reaches it, and the rm.* functions agree with
ir_measures on standard measures."""

from __future__ import annotations

import importlib
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from ir_measures import AP, RR, R, nDCG

import reteco_measures as rm
from reteco_measures.kernels.context import IMPLEMENTATIONS, implements
from reteco_measures.measures.base import RetecoMeasure, common_params, register

SPEC_NAMES = {
    "TemporalPrecision": "TP",
    "TemporalRelevance": "TR",
    "TemporalCoverage": "TC",
    "nDCG_FC": None,
    "StepNDCG": None,
    "TurnNDCG": None,
    "SpokenMacroNDCG": None,
    "Likert": None,
}


@pytest.mark.parametrize("name,alias", SPEC_NAMES.items())
def test_every_spec_name_parses(name: str, alias: str | None) -> None:
    m = ir_measures.parse_measure(f"{name}@10")
    assert m.NAME == name and m["cutoff"] == 10
    if alias:
        assert ir_measures.parse_measure(f"{alias}@10") == m


def test_display_names_and_params_parse() -> None:
    assert rm.parse_measures("nDCG|FC@10") == [rm.nDCG_FC @ 10]
    assert rm.measure_label(rm.nDCG_FC(empty=0) @ 10) == "nDCG|FC(empty=0)@10"
    m = ir_measures.parse_measure("TP(form='ap')@5")
    assert m == rm.TP(form="ap") @ 5
    assert rm.parse_measures("MAP@10 MRR nDCG@10") == [AP @ 10, RR, nDCG @ 10]
    with pytest.raises(ValueError, match="unknown measure"):
        rm.parse_measures("NoSuchMeasure@3")


def test_import_and_reload_are_idempotent() -> None:
    import reteco_measures.measures.temporal_coverage as tc_mod

    importlib.reload(tc_mod)
    importlib.reload(rm)
    importlib.reload(rm)
    names = [p.NAME for p in ir_measures.DefaultPipeline.providers]
    assert names.count("reteco") == 1 and names[0] == "reteco"
    assert ir_measures.parse_measure("TC@10").NAME == "TemporalCoverage"


def test_foreign_name_collision_is_refused() -> None:
    class _Clash(RetecoMeasure):
        __name__ = "nDCG"
        NAME = "nDCG"

    with pytest.raises(ValueError, match="already registered"):
        register(_Clash())


# --- a probe measure lets us test routing without depending on any benchmark kernel -----------


class _Probe(RetecoMeasure):
    """Value = number of retrieved docs of the query within the cutoff (weight 1)."""

    __name__ = "ProbeCount"
    NAME = "ProbeCount"
    SUPPORTED_PARAMS = common_params()


Probe = register(_Probe())


@implements("ProbeCount")
def _probe_kernel(measure, ctx):
    top = ctx.top(measure)
    counts = top.groupby("query_id").size().reindex(ctx.query_ids, fill_value=0)
    topics = ctx.topics_for(measure)
    values = counts.to_numpy(dtype=float)
    if topics is not None and "skip" in topics.columns:  # "not defined" for flagged queries
        skip = topics.set_index("query_id")["skip"].reindex(ctx.query_ids).fillna(False).to_numpy(bool)
        values = np.where(skip, np.nan, values)
    return pd.DataFrame({"query_id": ctx.query_ids, "value": values})


QRELS = pd.DataFrame(
    {"query_id": ["q1", "q1", "q2", "q3"], "doc_id": ["a", "b", "c", "z"], "relevance": [1, 0, 2, 1]}
)
RUN = pd.DataFrame(
    {"query_id": ["q1", "q1", "q1", "q2", "q2"], "doc_id": ["a", "b", "x", "c", "y"],
     "score": [3.0, 2.0, 1.0, 0.5, 0.7]}
)


def test_plain_ir_measures_call_mixes_providers() -> None:
    res = ir_measures.calc_aggregate([nDCG @ 10, Probe @ 2, RR], QRELS, RUN)
    # Probe@2: q1 -> 2, q2 -> 2, q3 (missing from the run) -> 0; mean 4/3
    assert res[Probe @ 2] == pytest.approx(4 / 3)
    ref = ir_measures.pytrec_eval.calc_aggregate([nDCG @ 10, RR], QRELS, RUN)
    assert res[nDCG @ 10] == pytest.approx(ref[nDCG @ 10]) and res[RR] == pytest.approx(ref[RR])
    per_query = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc([Probe @ 10], QRELS, RUN)}
    assert per_query == {("q1", "ProbeCount@10"): 3, ("q2", "ProbeCount@10"): 2, ("q3", "ProbeCount@10"): 0}
    ev = ir_measures.evaluator([Probe @ 1, nDCG @ 3], QRELS)
    assert ev.calc_aggregate(RUN)[Probe @ 1] == pytest.approx(2 / 3)


def test_side_info_context_and_keyword_form() -> None:
    topics = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "skip": [False, True, False]})
    with rm.side_info(topics=topics):
        res = ir_measures.calc_aggregate([Probe @ 10], QRELS, RUN)
    assert res[Probe @ 10] == pytest.approx((3 + 0) / 2)  # q2 undefined -> skipped
    assert rm.calc_aggregate([Probe @ 10], QRELS, RUN, topics=topics)[Probe @ 10] == pytest.approx(1.5)
    # outside the context the topics are gone
    assert ir_measures.calc_aggregate([Probe @ 10], QRELS, RUN)[Probe @ 10] == pytest.approx(5 / 3)
    per_query = {m.query_id: m.value for m in rm.iter_calc(["ProbeCount@10"], QRELS, RUN, topics=topics)}
    assert np.isnan(per_query["q2"]) and per_query["q1"] == 3


def test_topics_path_as_measure_parameter(tmp_path: Path) -> None:
    path = tmp_path / "topics.jsonl"
    path.write_text('{"query_id": "q1", "skip": true}\n{"query_id": "q2", "skip": false}\n')
    m = ir_measures.parse_measure(f"ProbeCount(topics='{path}')@10")
    # q1 undefined; q2 -> 2, q3 -> 0
    assert ir_measures.calc_aggregate([m], QRELS, RUN)[m] == pytest.approx(1.0)


def test_unimplemented_measure_raises_clearly() -> None:
    class _Later(RetecoMeasure):
        __name__ = "NotYetMeasure"
        NAME = "NotYetMeasure"
        SUPPORTED_PARAMS = common_params()

    later = register(_Later())
    IMPLEMENTATIONS.pop("NotYetMeasure", None)
    with pytest.raises(NotImplementedError, match="not landed"):
        ir_measures.calc_aggregate([later @ 10], QRELS, RUN)


def test_rm_functions_match_ir_measures_on_standard_measures(trec_eval_dir: Path) -> None:
    qrels_path = trec_eval_dir / "qrels.test"
    run_path = trec_eval_dir / "results.test"
    ours = rm.calc_aggregate(["nDCG@10", "AP@10", "R@10", "RR", "P@10"], qrels_path, run_path)
    ref = ir_measures.calc_aggregate(
        [nDCG @ 10, AP @ 10, R @ 10, RR, ir_measures.P @ 10],
        ir_measures.read_trec_qrels(str(qrels_path)),
        ir_measures.read_trec_run(str(run_path)),
    )
    assert ours.keys() == ref.keys()
    for m in ref:
        assert ours[m] == pytest.approx(ref[m], abs=1e-12)
    # trec_eval's own printed values (out.test.aq): ndcg_cut_10 0.3016, map_cut_10 0.0259, recip_rank 0.4064
    assert round(ours[nDCG @ 10], 4) == 0.3016
    assert round(ours[AP @ 10], 4) == 0.0259
    assert round(ours[RR], 4) == 0.4064


def test_tie_break_applies_to_standard_measures() -> None:
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["second"], "relevance": [1]})
    # file order: 'second' listed second but with the higher score
    run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["first", "second"], "score": [0.1, 0.9]})
    assert rm.calc_aggregate(["RR"], qrels, run)[RR] == 1.0  # by score
    assert rm.calc_aggregate(["RR"], qrels, run, tie_break="run_order")[RR] == 0.5  # by file order
    tied = run.assign(score=[0.5, 0.5])
    # corpus order: 'second' comes first in the corpus -> rank 1
    assert rm.calc_aggregate(["RR"], qrels, tied, tie_break="corpus_order", corpus=["second", "first"])[RR] == 1.0
    # trec_eval: tie broken by doc id descending: 'second' > 'first' -> rank 1
    assert rm.calc_aggregate(["RR"], qrels, tied)[RR] == 1.0
    assert rm.calc_aggregate(["RR"], qrels, tied, tie_break="corpus_order", corpus=["first", "second"])[RR] == 0.5


def test_evaluate_by_group_macro_and_all() -> None:
    topics = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "domain": ["law", "law", "bio"]})
    frame = rm.evaluate([Probe @ 10], QRELS, RUN, topics=topics, by="domain")
    got = {(r.domain, r.measure): (r.value, r.n) for r in frame.itertuples()}
    # per query: q1 3, q2 2 (law), q3 0 (bio); law mean 2.5, bio 0; macro (2.5+0)/2; all 5/3
    assert got[("law", "ProbeCount@10")] == (2.5, 2)
    assert got[("bio", "ProbeCount@10")] == (0.0, 1)
    assert got[("(macro)", "ProbeCount@10")] == (1.25, 2)
    assert got[("(all)", "ProbeCount@10")][0] == pytest.approx(5 / 3)
    assert list(frame.columns) == ["domain", "measure", "value", "n"]
    flat = rm.evaluate([Probe @ 10, "RR"], QRELS, RUN)
    assert list(flat.columns) == ["measure", "value", "n"] and len(flat) == 2


def test_evaluate_by_depth_from_turn_ids() -> None:
    qrels = pd.DataFrame({"query_id": ["c_turn_1", "c_turn_2", "c_turn_7"], "doc_id": ["a", "b", "c"],
                          "relevance": [1, 1, 1]})
    run = pd.DataFrame({"query_id": ["c_turn_1", "c_turn_7"], "doc_id": ["a", "x"], "score": [1.0, 1.0]})
    frame = rm.evaluate([Probe @ 10], qrels, run, by="depth")
    got = {r.depth: r.value for r in frame.itertuples()}
    assert got == {"T1": 1.0, "T2": 0.0, "T5+": 1.0, "(macro)": pytest.approx(2 / 3), "(all)": pytest.approx(2 / 3)}
    with pytest.raises(ValueError, match="cannot group by"):
        rm.evaluate([Probe @ 10], qrels, run, by="domain")


def test_labels_normalisation_warns_on_bad_values() -> None:
    from reteco_measures.errors import DataFormatWarning

    frame = pd.DataFrame(
        {"query_id": ["q", "q", "q", "q"], "doc_id": ["a", "b", "c", "d"],
         "temporal": [1, "yes", None, 3], "periods": [["p1"], "p2", None, ("p3",)]}
    )
    with pytest.warns(DataFormatWarning, match="2 verdict\\(s\\) not 0/1 read as 0 and 1 'periods'"):
        labels = rm.load_labels(frame)
    assert labels["temporal"].tolist() == [1, 0, 0, 0]
    assert labels["periods"].tolist() == [["p1"], [], [], ["p3"]]


def test_depth_falls_back_to_turn_ids_when_topics_lack_a_query() -> None:
    qrels = pd.DataFrame({"query_id": ["c_turn_1", "c_turn_6"], "doc_id": ["a", "b"], "relevance": [1, 1]})
    run = pd.DataFrame({"query_id": ["c_turn_1"], "doc_id": ["a"], "score": [1.0]})
    topics = pd.DataFrame({"query_id": ["c_turn_1"], "turn": [2]})  # topics turn wins; c_turn_6 from its id
    frame = rm.evaluate([Probe @ 10], qrels, run, topics=topics, by="depth")
    assert {r.depth: r.value for r in frame.itertuples()} == {"T2": 1.0, "T5+": 0.0, "(macro)": 0.5, "(all)": 0.5}
