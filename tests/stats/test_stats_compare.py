"""``stats/compare.py``: run names from file names are the same in ``compare``, leaderboards and the
``compare`` command (one naming rule, ``file_run_name``)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.leaderboard import _run_items as leaderboard_run_items
from reteco_measures.cli.compare_cmd import split_runs_and_measures
from reteco_measures.cli.main import main as cli_main
from reteco_measures.stats.compare import RUN_FILE_SUFFIXES, file_run_name

# ------------------------------------------------------------------------------------------------
# 1. one naming rule

#: file name -> run name, written by hand from the documented rule (one compression suffix, then
#: one format suffix, case-insensitive; the rest keeps its case)
NAMES = {
    "bm25.run.gz": "bm25",
    "dense.TSV": "dense",
    "hybrid.res": "hybrid",
    "splade.txt.bz2": "splade",
    "colbert.trec.xz": "colbert",
    "rerank.jsonl": "rerank",
    "mono.ndjson.gz": "mono",
    "duo.v2.json": "duo.v2",
    "plain": "plain",
}

_OPEN = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _write_runs(folder: Path) -> list[Path]:
    """Each file of NAMES holding a run (TREC text or JSONL by its format suffix, compressed by
    its compression suffix); run i ranks doc d{i % 3} first for both queries."""
    paths = []
    for i, name in enumerate(NAMES):
        docs = [f"d{(i + k) % 3}" for k in range(3)]
        is_json = any(s in name for s in (".jsonl", ".ndjson", ".json"))
        if is_json:
            text = "".join(json.dumps({"query_id": q, "results": [{"doc_id": d, "score": 3.0 - r}
                                                                   for r, d in enumerate(docs)]}) + "\n"
                           for q in ("q1", "q2"))
        else:
            text = "".join(f"{q} Q0 {d} {r + 1} {3.0 - r} x\n" for q in ("q1", "q2") for r, d in enumerate(docs))
        path = folder / name
        opener = _OPEN.get(Path(name).suffix, open)
        with opener(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
        paths.append(path)
    return paths


def test_file_run_name_rule():
    for name, expected in NAMES.items():
        assert file_run_name(f"some/dir/{name}") == expected, name
    assert file_run_name("bm25.trec.txt") == "bm25.trec"  # one format suffix only
    assert file_run_name("BM25.TXT.GZ") == "BM25"
    assert file_run_name("a.gz.txt") == "a.gz"  # a compression suffix is only stripped at the end
    assert file_run_name(".txt") == ".txt" and file_run_name(".txt.gz") == ".txt"  # never empty
    assert set(RUN_FILE_SUFFIXES) == {".gz", ".bz2", ".xz", ".txt", ".trec", ".run", ".res", ".tsv", ".jsonl",
                                      ".ndjson", ".json"}


def test_compare_leaderboard_and_cli_name_runs_alike(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "runs"
    folder.mkdir()
    paths = _write_runs(folder)
    expected = list(NAMES.values())
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d0 1\nq1 0 d1 0\nq2 0 d1 1\n")

    # rm.compare with a list of paths
    c = rm.compare(paths, str(qrels), ["P@1"], n_resamples=20)
    assert c.runs == expected
    # every file was read (P@1 by hand: run i puts d{i % 3} first; d0 is relevant for q1, d1 for q2)
    p1 = c.summary.set_index("run")["value"]
    for i, name in enumerate(expected):
        assert p1[name] == pytest.approx({0: 0.5, 1: 0.5, 2: 0.0}[i % 3]), name

    # leaderboards: a list of paths and the folder (sorted file names)
    assert [n for n, _ in leaderboard_run_items(paths)] == expected
    assert dict(leaderboard_run_items(folder)) == {NAMES[p.name]: p for p in paths}

    # the compare command: every file is a run, named alike
    assert split_runs_and_measures([str(p) for p in paths] + ["P@1"]) == ([str(p) for p in paths], ["P@1"])
    assert cli_main(["compare", str(qrels), *map(str, paths), "P@1", "--format", "json", "--resamples", "20"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == expected

    # ... and a missing file with any of these endings is an error, never a measure
    monkeypatch.chdir(tmp_path)
    for name in [*NAMES, "x.RES", "x.bz2", "x.xz", "x.ndjson"]:
        if name == "plain":
            continue
        with pytest.raises(FileNotFoundError, match="no such run file"):
            split_runs_and_measures([name])
    assert split_runs_and_measures(["plain", "nDCG@10"]) == ([], ["plain", "nDCG@10"])


# ------------------------------------------------------------------------------------------------
# the per-query frame of rm.compare is engine.results' (issue 18): point estimates equal
# rm.calc_aggregate on each run alone, to the last bit


MEASURES = ["nDCG@10", "AP", "RR", "P@5", "Rprec", "TurnNDCG@10", "ERR@10", "Judged@10"]


@pytest.mark.parametrize("seed", range(3))
def test_point_estimates_equal_calc_aggregate_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_q = 80
    qids = [f"c{q // 3}_turn_{q % 3 + 1}" for q in range(n_q)]
    # qrels and runs list the queries in different orders
    qrels = pd.DataFrame([(qids[q], f"d{d}", int(rng.integers(0, 4))) for q in rng.permutation(n_q)
                          for d in rng.choice(30, 6, replace=False)], columns=["query_id", "doc_id", "relevance"])
    runs = {f"r{r}": pd.DataFrame([(qids[q], f"d{d}", float(np.round(rng.random(), 3)))
                                   for q in rng.permutation(n_q)[: n_q - 5] for d in rng.choice(30, 15, replace=False)],
                                  columns=["query_id", "doc_id", "score"]) for r in range(2)}
    comparison = rm.compare(runs, qrels, MEASURES, n_resamples=10)
    for name, run in runs.items():
        want = list(rm.calc_aggregate(MEASURES, qrels, run).values())
        got = comparison.summary[comparison.summary["run"] == name]["value"].tolist()
        assert got == want, name
    per_query = comparison.per_query
    # rows: per run, measures in the order asked, queries in the qrels' order of first appearance
    first = per_query[per_query["run"] == "r0"]
    assert list(dict.fromkeys(first["measure"])) == comparison.measures
    order = list(dict.fromkeys(qrels["query_id"]))
    seen = first[first["measure"] == "nDCG@10"]["query_id"].tolist()
    assert seen == [q for q in order if q in set(seen)]


# ------------------------------------------------------------------------------------------------
# the per-query frame of a comparison: the engine's rows, the general path's tie bounds


@pytest.mark.parametrize("seed", [0, 1])
def test_per_query_frame_is_the_engine_frame_with_the_general_tie_bounds(monkeypatch, seed: int) -> None:
    """Each run's rows are `metrics_frame` of ``rm.iter_calc`` (canonical order, labels), and
    ``tie_min`` / ``tie_max`` are trec_eval's value bounded by the worst / best order that the
    general path computes (the run re-ranked in both orders and evaluated), to the last bit."""
    from reteco_measures.engine.evaluate import qrels_order
    from reteco_measures.engine.results import metrics_frame
    from reteco_measures.measures.names import measure_label, parse_measures
    from reteco_measures.stats import ties as ties_module
    from reteco_measures.stats.compare import per_query_frame

    rng = np.random.default_rng(seed)
    qrels = pd.DataFrame([(f"q{i}", f"d{j}", int(g)) for i in range(30) if i != 4
                          for j, g in zip(rng.choice(60, 15, replace=False), rng.integers(-1, 4, 15))],
                         columns=["query_id", "doc_id", "relevance"])
    runs = {}
    for r in range(3):
        rows = [(f"q{i}", f"d{j}", float(np.round(rng.random(), 1))) for i in range(30)
                for j in rng.choice(60, 40, replace=False)]
        runs[f"run{r}"] = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    names = ["nDCG@10", "AP", "RR", "R@20", "P@5"]
    frame, _ = per_query_frame(runs, qrels, names)
    measures = parse_measures(names)
    for name, run in runs.items():
        got = frame[frame["run"] == name].reset_index(drop=True)
        want = metrics_frame(list(rm.iter_calc(names, qrels, run)), measures=measures, label=measure_label,
                             order=qrels_order(qrels))
        pd.testing.assert_frame_equal(got[["query_id", "measure", "value", "weight"]], want, check_exact=True)
        with monkeypatch.context() as mp:
            for path in ("_sparse_bounds", "_coded_bounds", "_native_bounds"):
                mp.setattr(ties_module, path, lambda *a, **k: None)
            bounds = ties_module.tie_bounds(qrels, run, measures)
        bounds = bounds.assign(measure=[measure_label(m) for m in bounds["measure"]])
        merged = want.merge(bounds, on=["measure", "query_id"], how="left")
        lo, hi = ties_module.tie_range(merged["value"], merged["worst"], merged["best"])
        assert np.array_equal(got["tie_min"].to_numpy(), lo) and np.array_equal(got["tie_max"].to_numpy(), hi)
        assert (lo < hi).any()
