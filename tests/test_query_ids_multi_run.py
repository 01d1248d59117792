"""The multi-run entry points (``rm.compare``, ``rm.leaderboard``, ``compare``, ``leaderboard``)
share the single-run query-id checks and the ``query_ids`` switch, and refuse a number from inputs
that do not match (issue 22 item 1).

Expected values come from pytrec_eval on runs whose ids were renamed by hand (``_turn_<t>`` →
``#turn<t>``, the organisers' RECOR sample qrels form), and from the depth rule as the RECOR
paper's tables group turns (T1..T4, T5+), written out in the test."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.cli.main import main
from reteco_measures.errors import (
    EmptyInputWarning,
    GroupMismatchWarning,
    InputMismatchError,
    QueryIdMismatchWarning,
)
from reteco_measures.sample import sample_root


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _, d, r = line.split()
        qrels.setdefault(q, {})[d] = int(r)
    return qrels


def _write_run(path: Path, run: dict[str, dict[str, float]]) -> None:
    lines = []
    for q, docs in run.items():
        for i, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1])):
            lines.append(f"{q} Q0 {d} {i + 1} {s} r\n")
    path.write_text("".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def recor(recor_sample_dir: Path, tmp_path_factory) -> dict:
    """The organisers' RECOR qrels (``ex_3025#turn1``) and two correct runs written with the
    release / run form ``ex_3025_turn_1``; ``hand`` holds the same runs with the qrels' ids
    (renamed by hand), ``expected`` pytrec_eval's mean nDCG@10 of them."""
    qrels_path = recor_sample_dir / "qrels.txt"
    qrels = _read_qrels(qrels_path)
    folder = tmp_path_factory.mktemp("recor_runs")
    hand: dict[str, dict] = {"good": {}, "worse": {}}
    for i, (q, judged) in enumerate(qrels.items()):
        docs = sorted(judged)
        hand["good"][q] = {d: 10.0 - k for k, d in enumerate(docs)} | {"decoy_doc": 0.5}
        hand["worse"][q] = {"decoy_doc": 20.0, **{d: 10.0 - k for k, d in enumerate(reversed(docs))}}
        if i % 3 == 0:  # not every query the same: the runs differ by query
            hand["worse"][q] = {d: 10.0 - k for k, d in enumerate(docs)}
    paths = {}
    for name, run in hand.items():
        renamed = {q.replace("#turn", "_turn_"): docs for q, docs in run.items()}
        assert not set(renamed) & set(qrels)  # the ids really differ in form
        paths[name] = folder / f"{name}.txt"
        _write_run(paths[name], renamed)
    expected = {}
    for name, run in hand.items():
        per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
        expected[name] = float(np.mean([per_query[q]["ndcg_cut_10"] for q in qrels]))
    return {"qrels": qrels_path, "runs": paths, "hand": hand, "expected": expected, "ids": list(qrels)}


# -- rm.compare ----------------------------------------------------------------------------------


def test_compare_refuses_runs_whose_ids_only_meet_in_another_form(recor):
    runs = [recor["runs"]["good"], recor["runs"]["worse"]]
    with pytest.raises(InputMismatchError, match=r"run 'good' and qrels share no query id.*normalize") as info:
        rm.compare(runs, recor["qrels"], ["nDCG@10"], n_resamples=50)
    assert issubclass(type(info.value.warning), QueryIdMismatchWarning)
    assert "ex_3025" in str(info.value) or "#turn" in str(info.value)  # one id of each side shown


def test_compare_normalize_equals_pytrec_eval_and_calc_aggregate(recor):
    runs = {name: path for name, path in recor["runs"].items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about once the forms are mapped
        comp = rm.compare(runs, recor["qrels"], ["nDCG@10"], query_ids="normalize", n_resamples=50)
    values = comp.summary.set_index("run")["value"]
    for name, path in runs.items():
        assert values[name] == pytest.approx(recor["expected"][name], abs=1e-12)
        single = rm.calc_aggregate(["nDCG@10"], recor["qrels"], path, query_ids="normalize")
        assert values[name] == pytest.approx(single[ir_measures.parse_measure("nDCG@10")], abs=1e-15)
    assert recor["expected"]["good"] > recor["expected"]["worse"] > 0
    assert set(comp.per_query["query_id"]) == set(recor["ids"])  # the qrels' form


def test_compare_on_mismatch_warn_computes_anyway(recor):
    runs = [recor["runs"]["good"], recor["runs"]["worse"]]
    with pytest.warns(QueryIdMismatchWarning, match="share no query id"):
        comp = rm.compare(runs, recor["qrels"], ["nDCG@10"], on_mismatch="warn", n_resamples=50)
    # the number the refusal protects against: every value 0
    assert (comp.summary["value"] == 0).all()


def test_compare_rejects_unknown_modes_with_value_errors(recor):
    runs = [recor["runs"]["good"], recor["runs"]["worse"]]
    with pytest.raises(ValueError, match="query_ids must be one of"):
        rm.compare(runs, recor["qrels"], ["nDCG@10"], query_ids="loose")
    with pytest.raises(ValueError, match="on_mismatch must be one of"):
        rm.compare(runs, recor["qrels"], ["nDCG@10"], on_mismatch="ignore")


def test_compare_refuses_an_empty_run(recor, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reader's own note about an empty file
        with pytest.raises(InputMismatchError, match="run 'empty' has no usable row") as info:
            rm.compare([recor["runs"]["good"], empty], recor["qrels"], ["nDCG@10"], query_ids="normalize")
    assert isinstance(info.value.warning, EmptyInputWarning)


def _depth(turn: int) -> str:  # the RECOR tables' depth groups, by hand
    return f"T{turn}" if turn < 5 else "T5+"


def test_compare_by_depth_reads_the_qrels_turn_form(recor):
    runs = {name: path for name, path in recor["runs"].items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroupMismatchWarning)
        comp = rm.compare(runs, recor["qrels"], ["nDCG@10"], query_ids="normalize", by="depth", n_resamples=50)
    got = comp.summary[(comp.summary["run"] == "good") & (comp.summary["depth"] != "(all)")].set_index("depth")
    qrels = _read_qrels(recor["qrels"])
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(recor["hand"]["good"])
    frame = pd.DataFrame({"q": list(per_query), "v": [per_query[q]["ndcg_cut_10"] for q in per_query]})
    frame["depth"] = [_depth(int(q.rsplit("#turn", 1)[1])) for q in frame["q"]]
    expected = frame.groupby("depth")["v"].agg(["mean", "size"])
    assert "(none)" not in set(comp.summary["depth"])
    assert sorted(got.index) == sorted(expected.index)
    for depth, row in expected.iterrows():
        assert got.loc[depth, "value"] == pytest.approx(row["mean"], abs=1e-12)
        assert got.loc[depth, "n"] == row["size"]


def test_compare_by_depth_warns_for_queries_without_a_turn(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n", encoding="utf-8")
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("q1 Q0 d1 1 2 a\nq2 Q0 d2 1 2 a\n", encoding="utf-8")
    b.write_text("q1 Q0 d9 1 2 b\nq2 Q0 d2 1 2 b\n", encoding="utf-8")
    with pytest.warns(GroupMismatchWarning, match=r"2 of 2 evaluated queries are grouped as '\(none\)'"):
        rm.compare([a, b], qrels, ["nDCG@10"], by="depth", n_resamples=50)


# -- the command line ------------------------------------------------------------------------------


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = main([*map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_compare_refuses_with_one_line_and_exit_1(recor, capsys):
    code, out, err = _cli(capsys, "compare", recor["qrels"], recor["runs"]["good"], recor["runs"]["worse"],
                          "nDCG@10", "--resamples", "50")
    assert code == 1 and out == ""  # no table of zeros
    assert err.count("\n") == 1 and err.startswith("reteco-measures: error: run 'good'")
    assert err.rstrip().endswith("pass --normalize-ids")  # the flag compare accepts, not a parameter


def test_cli_compare_normalize_ids_gives_pytrec_eval(recor, capsys):
    code, out, err = _cli(capsys, "compare", recor["qrels"], recor["runs"]["good"], recor["runs"]["worse"],
                          "nDCG@10", "--resamples", "50", "--normalize-ids", "--format", "json")
    assert code == 0 and err == ""
    summary = pd.DataFrame(json.loads(out)["summary"])
    values = summary[summary["measure"] == "nDCG@10"].set_index("run")["value"]
    for name in ("good", "worse"):
        assert float(values[name]) == pytest.approx(recor["expected"][name], abs=1e-4)


def test_cli_compare_by_depth_without_turns_warns(tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n", encoding="utf-8")
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("q1 Q0 d1 1 2 a\nq2 Q0 d2 1 2 a\n", encoding="utf-8")
    b.write_text("q1 Q0 d9 1 2 b\nq2 Q0 d2 1 2 b\n", encoding="utf-8")
    code, out, err = _cli(capsys, "compare", qrels, a, b, "nDCG@10", "--by", "depth", "--resamples", "50")
    assert code == 1 and "grouped as '(none)'" in err


# -- rm.leaderboard / leaderboard --------------------------------------------------------------------


@pytest.fixture(scope="module")
def tempo_runs(tmp_path_factory) -> dict:
    """Two runs of the bundled TEMPO sample written with ``<domain>/<id>`` query ids (the
    all-domains form) where the benchmark's topics use ``<id>``; pytrec_eval's nDCG@10 of the
    same runs with the plain ids."""
    from reteco_measures.benchmarks.tempo.data import load_tempo

    sample = sample_root()
    data = load_tempo("dev", root=sample)
    gold = data.qrels[data.qrels["relevance"] >= 1].groupby("query_id")["doc_id"].apply(list).to_dict()
    domain = data.topics.drop_duplicates("query_id").set_index("query_id")["domain"]
    corpus = data.corpus.groupby("domain")["doc_id"].apply(list).to_dict()
    folder = tmp_path_factory.mktemp("tempo_runs")
    plain = {
        "perfect": {q: {d: float(len(g) - i) for i, d in enumerate(g)} for q, g in gold.items()},
        "decoys": {},
    }
    for q, g in gold.items():
        docs = [d for d in corpus[domain[q]] if d not in set(g)][:2] + g
        plain["decoys"][q] = {d: float(len(docs) - i) for i, d in enumerate(docs)}
    paths = {}
    for name, run in plain.items():
        paths[name] = folder / f"{name}.txt"
        _write_run(paths[name], {f"{domain[q]}/{q}": docs for q, docs in run.items()})
    qrels = {q: {d: 1 for d in g} for q, g in gold.items()}
    expected = {}
    for name, run in plain.items():
        per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
        expected[name] = float(np.mean([per_query.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels]))
    return {"root": sample, "paths": paths, "expected": expected}


def test_leaderboard_refuses_then_normalizes(tempo_runs):
    runs = [tempo_runs["paths"]["perfect"], tempo_runs["paths"]["decoys"]]
    kw = {"data": tempo_runs["root"], "split": "dev", "n_resamples": 50, "ties": False, "workers": 1}
    with pytest.raises(InputMismatchError, match=r"submission 'perfect'.*query_ids='normalize'"):
        rm.leaderboard("reteco-1a", runs, **kw)
    board = rm.leaderboard("reteco-1a", runs, query_ids="normalize", **kw)
    values = board.ranking.set_index("run")["value"]
    for name in ("perfect", "decoys"):
        assert values[name] == pytest.approx(tempo_runs["expected"][name], abs=1e-12)
    assert tempo_runs["expected"]["perfect"] > tempo_runs["expected"]["decoys"]


def test_leaderboard_on_mismatch_warn(tempo_runs):
    runs = [tempo_runs["paths"]["perfect"], tempo_runs["paths"]["decoys"]]
    # on_mismatch='warn' lets the runs through with a warning; sharing no query id with the topics,
    # neither can be scored, and a board needs two scored submissions
    from reteco_measures.benchmarks.leaderboard import TooFewScoredError

    with pytest.warns(QueryIdMismatchWarning), pytest.raises(TooFewScoredError, match="not scored: perfect"):
        rm.leaderboard("reteco-1a", runs, data=tempo_runs["root"], split="dev", n_resamples=50,
                       ties=False, workers=1, on_mismatch="warn")


def test_cli_leaderboard_refuses_with_one_line_and_exit_1(tempo_runs, capsys):
    args = ["leaderboard", "reteco-1a", tempo_runs["paths"]["perfect"], tempo_runs["paths"]["decoys"],
            "--data", tempo_runs["root"], "--split", "dev", "--resamples", "50", "--no-ties", "--workers", "1"]
    code, out, err = _cli(capsys, *args)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "submission 'perfect'" in err and "--normalize-ids" in err
    code, out, err = _cli(capsys, *args, "--normalize-ids")
    assert code == 0 and "perfect" in out


# -- the single-run functions: the same check, refusal on request -----------------------------------


def test_calc_aggregate_refuses_on_request_with_the_organiser_loaders_ids(recor, recor_sample_dir):
    from reteco_measures.benchmarks.recor.data import load_organiser_sample

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader reports the '#turn' rows it normalised
        data = load_organiser_sample(recor_sample_dir)
    run = recor["runs"]["good"]  # ex_3025_turn_1: the loader's qrels say law/ex_3025_turn_1
    # by default a number that the id forms would make 0 is refused; on_mismatch='warn' is the
    # ir_measures-style call: a loud warning and the 0
    with pytest.raises(InputMismatchError, match="query_ids='normalize'"):
        rm.calc_aggregate(["TurnNDCG@10"], data.qrels, run)
    with pytest.warns(QueryIdMismatchWarning):
        plain = rm.calc_aggregate(["TurnNDCG@10"], data.qrels, run, on_mismatch="warn")
    assert list(plain.values()) == [0.0]
    with pytest.raises(InputMismatchError, match="share no query id.*law/"):
        rm.calc_aggregate(["TurnNDCG@10"], data.qrels, run, on_mismatch="error")
    with pytest.raises(InputMismatchError):
        rm.evaluate(["TurnNDCG@10"], data.qrels, run, topics=data.topics, by="domain", on_mismatch="error")
    with pytest.raises(InputMismatchError):
        list(rm.iter_calc(["TurnNDCG@10"], data.qrels, run, on_mismatch="error"))
    with pytest.raises(InputMismatchError, match="share no query id"):
        rm.calc_aggregate(["nDCG@10"], recor["qrels"], run, on_mismatch="error", stream=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = rm.calc_aggregate(["nDCG@10"], data.qrels, run, query_ids="normalize", on_mismatch="error")
    assert list(got.values()) == [pytest.approx(recor["expected"]["good"], abs=1e-12)]
    with pytest.raises(ValueError, match="on_mismatch must be one of"):
        rm.calc_aggregate(["nDCG@10"], data.qrels, run, on_mismatch="raise")
