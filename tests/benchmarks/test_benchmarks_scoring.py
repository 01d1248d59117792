"""The benchmark engine: ``rm.benchmark(name).score(...)`` against independent paths.

Expected values come from ``rm.calc_aggregate`` / ``rm.evaluate`` (the one-line API, a different
path from the engine's single per-query pass), from pytrec_eval run side by side, and from hand
computations written here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from tempo_tree import write_domain

import reteco_measures as rm
from reteco_measures.benchmarks import BENCHMARKS, aggregate, metric_key
from reteco_measures.benchmarks import scoring as engine
from reteco_measures.benchmarks.recor.data import load_recor
from reteco_measures.benchmarks.spoken import data as sp
from reteco_measures.benchmarks.tempo.data import load_tempo
from reteco_measures.cli.main import main
from reteco_measures.sample import sample_root

SAMPLE = sample_root()
RUNS = SAMPLE / "runs"
NAMES = ["chunqiu", "ikat-2023", "reteco-1a", "reteco-1b", "reteco-2a", "spoken"]
#: the judged generation tracks: a submission is a judgments file, the sample has none (no demo)
GENERATION = ["ikat-2023-generation", "reteco-2b", "reteco-2c"]


def test_every_benchmark_is_declared():
    for name in NAMES:
        bench = rm.benchmark(name)
        assert bench.name == name and bench.cli.demo is not None
    assert sorted(BENCHMARKS) == sorted(NAMES + GENERATION)
    with pytest.raises(ValueError, match="unknown benchmark"):
        rm.benchmark("nope")
    with pytest.raises(TypeError, match="no option"):
        rm.benchmark("reteco-1a").score(RUNS / "reteco_track1a_dev.txt", data=SAMPLE, bogus=1)


# ---- the engine equals the one-line API on the same inputs -------------------------------------


def test_reteco_2a_equals_calc_aggregate_and_evaluate():
    score = rm.benchmark("reteco-2a").score(RUNS / "reteco_track2.txt", data=SAMPLE, split="dev")
    data = load_recor("dev", root=SAMPLE, qualified=True)
    run = score.report.run[["query_id", "doc_id", "score"]]  # what the contract kept
    qrels = data.qrels[["query_id", "doc_id", "relevance"]]
    measures = ["TurnNDCG@10", "AP@10", "R@10", "RR"]
    want = rm.calc_aggregate(measures, qrels, run, topics=data.topics)
    got = score.summary.set_index("measure")["value"]
    for (m, value), label in zip(want.items(), ["TurnNDCG@10", "MAP@10", "R@10", "MRR"], strict=True):
        assert got[label] == pytest.approx(value, abs=1e-12), m
    for by, table in (("domain", score.table("by_domain")), ("depth", score.table("by_depth"))):
        tidy = rm.evaluate(measures, qrels, run, topics=data.topics, by=by)
        official = tidy[tidy["measure"] == "TurnNDCG@10"].set_index(by)
        mine = table.set_index(by)
        assert list(mine.index) == list(official.index)
        for key, row in official.iterrows():
            assert mine.loc[key, "TurnNDCG@10"] == pytest.approx(row["value"], abs=1e-12)
            assert mine.loc[key, "n"] == row["n"]


def test_reteco_1a_with_labels_equals_evaluate():
    labels = RUNS / "reteco_track1a_labels_dev.jsonl"
    score = rm.benchmark("reteco-1a").score(RUNS / "reteco_track1a_dev.txt", data=SAMPLE, labels=labels)
    data = load_tempo("dev", root=SAMPLE)
    run = score.report.run[["query_id", "doc_id", "score"]]
    measures = ["nDCG@10", "TP@10", "TR@10", "TC@10", "nDCG|FC@10", "AP@10", "R@10", "RR"]
    tidy = rm.evaluate(measures, data.qrels[["query_id", "doc_id", "relevance"]], run, topics=data.topics,
                       labels=labels, by="domain")
    overall = tidy[tidy["domain"] == "(all)"].set_index("measure")
    got = score.summary.set_index("measure")
    for m, label in zip(measures, ["nDCG@10", "TP@10", "TR@10", "TC@10", "nDCG|FC@10", "MAP@10", "R@10", "MRR"],
                        strict=True):
        assert got.loc[label, "value"] == pytest.approx(overall.loc[m, "value"], abs=1e-12, nan_ok=True), m
        assert got.loc[label, "n"] == overall.loc[m, "n"]
    macro = tidy[tidy["domain"] == "(macro)"].set_index("measure")
    assert score.table("by_domain").set_index("domain").loc["(macro)", "TC@10"] == pytest.approx(macro.loc["TC@10", "value"])


def test_spoken_equals_calc_aggregate_with_cell_weights():
    score = rm.benchmark("spoken").score(RUNS / "spoken.jsonl", data=SAMPLE)
    topics, qrels = sp.topics(root=SAMPLE), sp.load_qrels(root=SAMPLE)
    run = score.report.run[["query_id", "doc_id", "score"]]
    want = rm.calc_aggregate(["SpokenMacroNDCG@10"], qrels, run, topics=topics, tie_break="run_order")
    assert score.official == pytest.approx(list(want.values())[0], abs=1e-12)
    grid = rm.evaluate(["SpokenMacroNDCG@10"], qrels, run, topics=topics, by=["collection", "condition"],
                       tie_break="run_order")
    pd.testing.assert_frame_equal(score.table("grid").reset_index(drop=True), grid.reset_index(drop=True), atol=1e-12)
    # the statistical unit: every request carries its cell and weight 1/(|cell| * cells)
    long = score.per_query_long[score.per_query_long["measure"] == "SpokenMacroNDCG@10"]
    assert score.strata == ("collection", "condition") and {"collection", "condition"} <= set(long.columns)
    assert long["weight"].sum() == pytest.approx(1.0)


# ---- per-query values are computed once -------------------------------------------------------


@pytest.mark.parametrize("name, passes", [("reteco-1a", 1), ("reteco-1b", 1), ("reteco-2a", 1), ("chunqiu", 1),
                                          ("spoken", 1), ("ikat-2023", 3)])
def test_per_query_values_are_computed_once(name, passes, monkeypatch):
    calls = []

    def counting(real):
        def call(*args, **kwargs):
            calls.append(args[0])
            return real(*args, **kwargs)
        return call

    # an evaluation pass: iter_calc, or iter_prepared on a run the contract ranked already
    monkeypatch.setattr(engine, "iter_calc", counting(engine.iter_calc))
    monkeypatch.setattr(engine, "iter_prepared", counting(engine.iter_prepared))
    bench = rm.benchmark(name)
    kw = dict(bench.cli.demo(SAMPLE))
    score = bench.score(kw.pop("run"), data=kw.pop("data", None), split=kw.pop("split", None), **kw)
    # one pass over the run (iKAT: one per task and qrels file: passages, PTKB org, PTKB nist)
    assert len(calls) == passes
    assert len(score.per_query) and len(score.summary)


# ---- aggregation, keys, JSON ---------------------------------------------------------------


def test_aggregate_by_hand():
    long = pd.DataFrame({
        "query_id": ["a", "b", "c", "d", "a", "b", "c", "d"],
        "measure": ["m"] * 4 + ["f"] * 4,
        "value": [1.0, 0.0, 0.5, 0.25, np.nan, 1.0, np.nan, np.nan],
        "weight": [1.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        "g": ["x", "x", "y", "y", "x", "x", "y", "y"],
    })
    out = aggregate(long, ["g"], ["m", "f"], {"f": 0.0}, margins=True).set_index(["measure", "g"])
    # x: (1*1 + 0*3) / 4 = 0.25; y: (0.5 + 0.25) / 2 = 0.375; all: (1 + 0 + 0.5 + 0.25) / 6
    assert out.loc[("m", "x"), "value"] == pytest.approx(0.25)
    assert out.loc[("m", "y"), "value"] == pytest.approx(0.375)
    assert out.loc[("m", "(macro)"), "value"] == pytest.approx((0.25 + 0.375) / 2)
    assert out.loc[("m", "(all)"), "value"] == pytest.approx(1.75 / 6)
    # f is defined on b only: y has no defined value -> the measure's empty value (0), n = 0
    assert out.loc[("f", "x"), "value"] == 1.0 and out.loc[("f", "x"), "n"] == 1
    assert out.loc[("f", "y"), "value"] == 0.0 and out.loc[("f", "y"), "n"] == 0
    assert out.loc[("f", "(macro)"), "n"] == 2


def test_long_per_query_by_hand_with_measure_names():
    """Measures given by name: one row per (unit, measure), measure-major in units order, a unit
    without a value filled with 0, rows of other ids dropped (hand values)."""
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q9"], "doc_id": ["d1", "d2", "d3", "d4"],
                          "relevance": [1, 0, 1, 1]})
    run = pd.DataFrame({"query_id": ["q1", "q1", "q9"], "doc_id": ["d2", "d1", "d4"], "score": [2.0, 1.0, 1.0]})
    long = engine.long_per_query(["RR", "P@2"], qrels, run, units=["q1", "q2", "q3"])
    # q1: the relevant d1 at rank 2 -> RR 1/2, P@2 1/2; q2 not retrieved, q3 not judged -> 0; q9 not a unit
    assert long[["query_id", "measure", "value", "weight"]].values.tolist() == [
        ["q1", "RR", 0.5, 1.0], ["q2", "RR", 0.0, 1.0], ["q3", "RR", 0.0, 1.0],
        ["q1", "P@2", 0.5, 1.0], ["q2", "P@2", 0.0, 1.0], ["q3", "P@2", 0.0, 1.0]]
    table = aggregate(long, [], ["RR", "P@2"], long.attrs["empty"])
    assert table[["measure", "value", "n"]].values.tolist() == [["RR", 0.5 / 3, 3], ["P@2", 0.5 / 3, 3]]


def test_metric_keys():
    assert metric_key("nDCG@10") == "ndcg_10"
    assert metric_key("nDCG|FC@10") == "ndcg_fc_10"
    assert metric_key("MAP@10") == "map_10"
    assert metric_key("AP(rel=2)@1000") == "ap_rel_2_1000"
    assert metric_key("TurnNDCG(average='conversation')@10") == "turnndcg_average_conversation_10"


@pytest.mark.parametrize("name", NAMES)
def test_cli_json_is_score_to_dict(name, capsys):
    from reteco_measures.cli.score_cmd import demo_argv

    argv = demo_argv(name, SAMPLE)
    code = main(["score", name, *argv, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    bench = rm.benchmark(name)
    kw = dict(bench.cli.demo(SAMPLE))
    score = bench.score(kw.pop("run"), data=kw.pop("data", None), split=kw.pop("split", None), **kw)
    assert code == (0 if score.valid else 1)
    assert doc == json.loads(json.dumps(score.to_dict(), default=str))
    for key in ("benchmark", "split", "valid", "official", "metrics", "reward", "scores", "validation", "removed",
                "data_problems", "notes"):
        assert key in doc, key
    assert doc["official"]["key"].endswith(metric_key(doc["official"]["measure"]))
    assert doc["metrics"][doc["official"]["key"]] == doc["official"]["value"]
    assert (doc["reward"] is None) == (name not in ("chunqiu", "spoken"))


# ---- what the contract removed, counted ----------------------------------------------------


RUN_1A = """\
100_1 Q0 bitcoin/a.txt 1 5 r
100_1 Q0 bitcoin/a.txt 2 4.5 r
100_1 Q0 bitcoin/nope.txt 3 4 r
100_1 Q0 law/x.txt 4 3.5 r
100_1 Q0 bitcoin/e.txt 5 3 r
200_3 Q0 law/y.txt 1 2 r
"""


@pytest.fixture
def release(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "data"
    write_domain(root, "bitcoin", [("100_1", [["bitcoin/a.txt"], ["bitcoin/b.txt"]]), ("101_2", [["bitcoin/d.txt"]])],
                 ["bitcoin/a.txt", "bitcoin/b.txt", "bitcoin/d.txt", "bitcoin/e.txt"])
    write_domain(root, "law", [("200_3", [["law/x.txt"], ["law/y.txt"]])], ["law/x.txt", "law/y.txt"])
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    (tmp_path / "run.txt").write_text(RUN_1A, encoding="utf-8")
    return root


def test_removed_counts_duplicates_unknown_and_other_domain(release, capsys):
    run = release.parent / "run.txt"
    score = rm.benchmark("reteco-1a").score(run, data=release)
    # line 2 repeats a.txt; line 3 names no document of any corpus; line 4 a law document for a
    # bitcoin query; 101_2 is missing
    assert score.removed == {"duplicate": 1, "unknown_doc": 1, "other_domain_doc": 1, "missing_query": 1,
                             "rows_kept": 3}
    assert main(["score", "reteco-1a", str(run), "--data", str(release)]) == 0
    out = capsys.readouterr().out
    assert ("removed by the contract: 1 duplicate document(s), 1 unknown document(s), 1 document(s) of another "
            "domain, 1 missing topic(s) (score 0); 3 row(s) kept") in out
    assert main(["score", "reteco-1a", str(run), "--data", str(release), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"]["other_domain_doc"] == 1


def test_id_form_mismatch_is_refused_then_normalised(release, capsys):
    # the same run with domain-qualified query ids: only the id form differs from the topics
    text = RUN_1A.replace("100_1 ", "bitcoin/100_1 ").replace("200_3 ", "law/200_3 ")
    run = release.parent / "qualified.txt"
    run.write_text(text, encoding="utf-8")
    assert main(["score", "reteco-1a", str(run), "--data", str(release), "--format", "json"]) == 1
    err = capsys.readouterr().err
    assert "--normalize-ids" in err and "'bitcoin/100_1'" in err
    assert main(["score", "reteco-1a", str(run), "--data", str(release), "--format", "json",
                 "--normalize-ids"]) == 0
    normalised = json.loads(capsys.readouterr().out)
    plain = rm.benchmark("reteco-1a").score(release.parent / "run.txt", data=release)
    assert normalised["official"]["value"] == pytest.approx(plain.official, abs=1e-12)


# ---- the organisers' public samples, scored through explicit files ------------------------------


def _pytrec(qrels: dict, run: dict, measure: str) -> dict:
    return pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)


def test_organiser_tempo_sample_scores_with_explicit_files(tempo_sample_dir: Path, tmp_path: Path, capsys):
    qrels: dict[str, dict[str, int]] = {}
    for line in (tempo_sample_dir / "qrels.txt").read_text(encoding="utf-8").splitlines():
        q, _, d, r = line.split()
        qrels.setdefault(q, {})[d] = int(r)
    docs = [json.loads(x)["id"] for x in (tempo_sample_dir / "documents.jsonl").read_text().splitlines()]
    # every document of the sample is gold for its query: a run that returns every other gold
    # document (and a document of the query's domain that is not gold first, where there is one)
    lines, run = [], {}
    for q, gold in qrels.items():
        dom = next(iter(gold)).split("/")[0]
        other = [d for d in docs if d.startswith(dom + "/") and d not in gold][:1]
        ranking = [*other, *list(gold)[1::2]]
        run[q] = {d: float(len(ranking) - i) for i, d in enumerate(ranking)}
        lines += [f"{q} Q0 {d} {i + 1} {len(ranking) - i} r\n" for i, d in enumerate(ranking)]
    path = tmp_path / "run.txt"
    path.write_text("".join(lines), encoding="utf-8")
    ref = _pytrec(qrels, run, "ndcg_cut.10")
    expected = sum(v["ndcg_cut_10"] for v in ref.values()) / len(qrels)
    assert 0.3 < expected < 0.9
    files = ["--qrels", str(tempo_sample_dir / "qrels.txt"), "--topics", str(tempo_sample_dir / "examples.jsonl"),
             "--corpus", str(tempo_sample_dir / "documents.jsonl"), "--steps", str(tempo_sample_dir / "steps.jsonl")]
    assert main(["score", "reteco-1a", str(path), *files, "--format", "json", "--per-query"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["official"]["value"] == pytest.approx(expected, abs=1e-12)
    assert doc["queries"] == 5 and len(doc["domains"]) == 5
    for row in doc["per_query"]:
        assert row["nDCG@10"] == pytest.approx(ref[row["query_id"]]["ndcg_cut_10"], abs=1e-12)
    # the organisers' folder itself as --data
    assert main(["score", "reteco-1a", str(path), "--data", str(tempo_sample_dir), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["official"]["value"] == pytest.approx(expected, abs=1e-12)


def test_organiser_recor_sample_scores_with_explicit_files(recor_sample_dir: Path, tmp_path: Path, capsys):
    qrels: dict[str, dict[str, int]] = {}
    for line in (recor_sample_dir / "qrels.txt").read_text(encoding="utf-8").splitlines():
        q, _, d, r = line.split()
        qrels.setdefault(q.replace("#turn", "_turn_"), {})[d] = int(r)  # the release's id form, by hand
    # every turn: its gold documents in reverse order behind the first gold document of another turn
    lines, run = [], {}
    turns = list(qrels)
    for i, q in enumerate(turns):
        decoy = next(d for t in turns[i + 1:] + turns[:i] for d in qrels[t] if d not in qrels[q])
        ranking = [decoy, *reversed(list(qrels[q]))]
        run[q] = {d: float(len(ranking) - j) for j, d in enumerate(ranking)}
        lines += [f"{q} Q0 {d} {j + 1} {len(ranking) - j} r\n" for j, d in enumerate(ranking)]
    path = tmp_path / "run.txt"
    path.write_text("".join(lines), encoding="utf-8")
    ref = _pytrec(qrels, run, "ndcg_cut.10")
    files = ["--topics", str(recor_sample_dir / "benchmark.jsonl"), "--qrels", str(recor_sample_dir / "qrels.txt"),
             "--corpus-scope", "all", "--corpus", str(recor_sample_dir / "documents.jsonl")]
    assert main(["score", "reteco-2a", str(path), *files, "--format", "json", "--per-query"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["turns"] == len(qrels) == 13
    assert doc["official"]["value"] == pytest.approx(sum(v["ndcg_cut_10"] for v in ref.values()) / 13, abs=1e-12)
    got = {r["query_id"].split("/", 1)[1]: r["TurnNDCG@10"] for r in doc["per_query"]}
    for q, values in ref.items():
        assert got[q] == pytest.approx(values["ndcg_cut_10"], abs=1e-12)
    assert main(["score", "reteco-2a", str(path), "--data", str(recor_sample_dir), "--corpus-scope", "all",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["official"]["value"] == pytest.approx(doc["official"]["value"])


def test_demo_calls_the_engine_and_prints_every_benchmark():
    import io

    from reteco_measures.sample.demo import run_demo

    out = io.StringIO()
    assert run_demo(out=out, err=out) == 0
    text = out.getvalue()
    for name in NAMES:
        assert f"{name}: " in text
    assert "Traceback" not in text and not math.isnan(len(text))


def test_organiser_modes_are_score_options():
    """TEMPO's reference rules, the stable tie policy and iKAT's conversion modes reach the engine."""
    labels = RUNS / "reteco_track1a_labels_dev.jsonl"
    bench = rm.benchmark("reteco-1a")
    score = bench.score(RUNS / "reteco_track1a_dev.txt", data=SAMPLE, labels=labels, temporal_reference="tempo",
                        tie_break="stable")
    data = load_tempo("dev", root=SAMPLE)
    run = score.report.run[["query_id", "doc_id", "score"]]
    measures = ["nDCG@10", "TP(reference='tempo')@10", "TR(reference='tempo')@10"]
    want = rm.calc_aggregate(measures, data.qrels[["query_id", "doc_id", "relevance"]], run, topics=data.topics,
                             labels=labels, tie_break="stable")
    got = score.summary.set_index("measure")["value"]
    for m, value in zip(["nDCG@10", "TP(reference='tempo')@10", "TR(reference='tempo')@10"], want.values(),
                        strict=True):
        assert got[m] == pytest.approx(value, abs=1e-12, nan_ok=True), m
    names = {o.name: o for o in rm.benchmark("ikat-2023").cli.options}
    assert {"organisers", "position", "provenance"} <= set(names["passage_score"].choices)
    assert "stable" in {o.name: o for o in bench.cli.options}["tie_break"].choices
