"""Leaderboards: ranking, CIs, paired tests and clusters on constructed runs whose answer is known
(pytrec_eval per query, scipy's paired t-test, statsmodels' Holm correction, the cluster rule
applied by hand), ChunQiu's invalid batch, the command line's formats and a timing check."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from test_tempo_datasets import write_domain

import reteco_measures as rm
from reteco_measures.benchmarks.leaderboard import clusters
from reteco_measures.cli.main import main
from reteco_measures.datasets.reteco_tempo import load_tempo
from reteco_measures.sample import sample_root

SAMPLE = sample_root()


def test_cluster_rule_by_hand():
    pw = pd.DataFrame({"run": ["a", "a", "a", "b", "b", "c"], "other": ["b", "c", "d", "c", "d", "d"],
                       "p_adjusted": [0.5, 0.01, 0.001, 0.01, 0.04, 0.2]})
    # a leads cluster 1; b is not different from a; c is (0.01) -> c leads cluster 2; d vs c 0.2 -> 2
    assert clusters(["a", "b", "c", "d"], pw, 0.05) == {"a": 1, "b": 1, "c": 2, "d": 2}
    # NaN p (no test possible) counts as "not different": c joins a; d differs from the leader a
    pw.loc[1, "p_adjusted"] = np.nan
    assert clusters(["a", "b", "c", "d"], pw, 0.05) == {"a": 1, "b": 1, "c": 1, "d": 2}


def _write(path: Path, rankings: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    lines, run = [], {}
    for q, docs in rankings.items():
        run[q] = {d: float(len(docs) - i) for i, d in enumerate(docs)}
        lines += [f"{q} Q0 {d} {i + 1} {len(docs) - i} r\n" for i, d in enumerate(docs)]
    path.write_text("".join(lines), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def constructed(tmp_path_factory) -> tuple[Path, dict[str, dict]]:
    """Four runs over the bundled TEMPO sample: perfect, gold behind two decoys, gold behind five,
    and a copy of the perfect run."""
    folder = tmp_path_factory.mktemp("runs")
    data = load_tempo("dev", root=SAMPLE)
    gold = data.qrels[data.qrels["relevance"] >= 1].groupby("query_id")["doc_id"].apply(list).to_dict()
    domain = data.topics.drop_duplicates("query_id").set_index("query_id")["domain"]
    corpus = data.corpus.groupby("domain")["doc_id"].apply(list).to_dict()
    rng = np.random.default_rng(7)
    runs = {}
    decoys = {q: [d for d in corpus[domain[q]] if d not in set(g)] for q, g in gold.items()}
    runs["perfect"] = _write(folder / "perfect.txt", {q: g for q, g in gold.items()})
    runs["two_decoys"] = _write(folder / "two_decoys.txt", {q: decoys[q][:2] + g for q, g in gold.items()})
    runs["noisy"] = _write(folder / "noisy.txt", {
        q: list(rng.permutation(decoys[q][:5] + g)) for q, g in gold.items()})
    runs["copy"] = _write(folder / "copy.txt", {q: g for q, g in gold.items()})
    qrels = {q: {d: 1 for d in g} for q, g in gold.items()}
    per_query = {}
    for name, run in runs.items():
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
        per_query[name] = {q: ref.get(q, {}).get("ndcg_cut_10", 0.0) for q in sorted(qrels)}
    return folder, per_query


def test_ranking_tests_and_clusters_have_the_known_answer(constructed):
    folder, per_query = constructed
    board = rm.benchmark("reteco-1a").leaderboard(sorted(folder.iterdir()), data=SAMPLE, split="dev",
                                                  n_resamples=500)
    names = sorted(per_query)
    means = {n: np.mean(list(per_query[n].values())) for n in names}
    ranking = board.ranking.set_index("run")
    for n in names:
        assert ranking.loc[n, "value"] == pytest.approx(means[n], abs=1e-12)
        assert ranking.loc[n, "ci_low"] <= means[n] + 1e-12 and ranking.loc[n, "ci_high"] >= means[n] - 1e-12
        assert ranking.loc[n, "n"] == 15 and ranking.loc[n, "valid"]
    # order: best first; the two perfect runs tie (file order keeps copy before perfect)
    assert board.ranking["run"].tolist()[2:] == sorted(["two_decoys", "noisy"], key=lambda n: -means[n])
    assert set(board.ranking["run"].tolist()[:2]) == {"copy", "perfect"}
    # p-values: scipy's paired t-test on the per-query values, Holm over every pair (statsmodels)
    pairs = list(itertools.combinations(board.runs, 2))
    p = []
    for a, b in pairs:
        x, y = np.array(list(per_query[a].values())), np.array(list(per_query[b].values()))
        # identical runs: scipy gives NaN; the statistics module documents p = 1 (no difference)
        p.append(sps.ttest_rel(x, y).pvalue if np.any(x != y) else 1.0)
    adjusted = multipletests(np.array(p), method="holm")[1]
    got = board.pairwise.set_index(["run", "other"])
    for (a, b), want in zip(pairs, adjusted, strict=True):
        value = got.loc[(a, b), "p_adjusted"]
        assert value == pytest.approx(want, rel=1e-9), (a, b)
    # clusters by the leader rule, applied by hand
    order = board.ranking["run"].tolist()
    padj = {frozenset(pair): v for pair, v in zip(pairs, adjusted, strict=True)}
    expected, leader, number = {}, None, 0
    for run in order:
        if leader is None or padj[frozenset((leader, run))] < 0.05:
            leader, number = run, number + 1
        expected[run] = number
    assert dict(zip(board.ranking["run"], board.ranking["cluster"], strict=True)) == expected
    assert expected["copy"] == expected["perfect"] == 1 and max(expected.values()) >= 2
    # the group breakdown: one row per run, the domains and the margins
    assert list(board.groups["by_domain"].columns) == ["run", "bitcoin", "history", "law", "(macro)", "(all)"]
    # no ties in these runs: no tie columns
    assert "tie_min" not in board.ranking.columns


def test_rm_leaderboard_takes_a_benchmark_or_its_name(constructed):
    folder, per_query = constructed
    runs = sorted(folder.iterdir())
    by_name = rm.leaderboard("reteco-1a", runs, data=SAMPLE, split="dev", n_resamples=200, ties=False)
    by_object = rm.leaderboard(rm.benchmark("reteco-1a"), runs, data=SAMPLE, split="dev", n_resamples=200,
                               ties=False)
    for board in (by_name, by_object):
        assert board.benchmark == "reteco-1a"
        values = board.ranking.set_index("run")["value"]
        for name, values_by_query in per_query.items():  # pytrec_eval's nDCG@10, averaged
            assert values[name] == pytest.approx(np.mean(list(values_by_query.values())), abs=1e-12)
    pd.testing.assert_frame_equal(by_name.ranking, by_object.ranking)
    with pytest.raises(ValueError, match="unknown benchmark"):
        rm.leaderboard("no-such-benchmark", runs)


def test_ties_that_change_values_add_the_tie_columns(tmp_path):
    runs = sorted((SAMPLE / "runs").glob("reteco_track1a_dev.txt"))
    text = runs[0].read_text(encoding="utf-8")
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    # every score of b set to 1: all documents of a query tie
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    (tmp_path / "b.txt").write_text("".join(f"{q} Q0 {d} {r} 1 b\n" for q, _, d, r, _, _ in lines), encoding="utf-8")
    board = rm.benchmark("reteco-1a").leaderboard([tmp_path / "a.txt", tmp_path / "b.txt"], data=SAMPLE,
                                                  n_resamples=200)
    r = board.ranking.set_index("run")
    assert {"tie_min", "tie_max"} <= set(r.columns)
    assert r.loc["b", "tie_min"] <= r.loc["b", "value"] <= r.loc["b", "tie_max"]
    assert r.loc["b", "tie_min"] < r.loc["b", "tie_max"]


def test_invalid_chunqiu_batch_scores_zero_and_ranks_last():
    runs = [SAMPLE / "runs" / "chunqiu.jsonl", SAMPLE / "runs" / "chunqiu_invalid.jsonl"]
    board = rm.benchmark("chunqiu").leaderboard(runs, data=SAMPLE, n_resamples=200)
    last = board.ranking.iloc[-1]
    assert last["run"] == "chunqiu_invalid" and not last["valid"] and last["value"] == 0.0
    assert last["reward"] == 0.0 and last["problems"] > 0
    assert board.ranking.iloc[0]["value"] > 0


def test_spoken_leaderboard_resamples_within_cells():
    runs = {"a": SAMPLE / "runs" / "spoken.jsonl", "b": SAMPLE / "runs" / "spoken.jsonl"}
    board = rm.benchmark("spoken").leaderboard(runs, data=SAMPLE, n_resamples=200)
    assert board.design["strata"].iloc[0] == "collection x condition"
    assert board.ranking["value"].nunique() == 1 and set(board.ranking["cluster"]) == {1}


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex", "csv", "json"])
def test_cli_formats(constructed, fmt, capsys):
    folder, _ = constructed
    assert main(["leaderboard", "reteco-1a", str(folder), "--data", str(SAMPLE), "--format", fmt,
                 "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        doc = json.loads(out)
        assert doc["benchmark"] == "reteco-1a" and doc["measure"] == "nDCG@10" and doc["key"] == "ndcg_10"
        assert [r["rank"] for r in doc["ranking"]] == [1, 2, 3, 4] and "by_domain" in doc["groups"]
        assert doc["design"][0]["unit"] == "query"
    elif fmt == "csv":
        assert out.splitlines()[0].startswith("rank,run,value,ci_low,ci_high,n,cluster,valid,problems")
        assert len(out.splitlines()) == 5
    elif fmt == "markdown":
        assert out.startswith("**reteco-1a**") and "| rank | cluster | run |" in out and "nDCG\\|FC@10" in out
    elif fmt == "latex":
        assert "\\toprule" in out and "\\bottomrule" in out and "nDCG\\textbar{}FC@10" in out
    else:
        assert "ranked by nDCG@10" in out and "== by_domain" in out


def test_cli_plot_and_unreadable_submission(constructed, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    folder, _ = constructed
    (tmp_path / "broken.txt").write_text("", encoding="utf-8")
    png = tmp_path / "board.png"
    rc = main(["leaderboard", "reteco-1a", str(folder / "perfect.txt"), str(folder / "noisy.txt"),
               str(tmp_path / "broken.txt"), "--data", str(SAMPLE), "--plot", str(png), "--resamples", "100"])
    captured = capsys.readouterr()
    assert png.stat().st_size > 1000
    # an empty submission is scored as what it is (invalid, 0) and listed, never silently dropped
    row = next(line for line in captured.out.splitlines() if " broken " in f" {line} ")
    assert "INVALID" in row and rc == 0


def test_many_runs_rank_quickly(tmp_path, monkeypatch):
    """20 runs x 200 queries (the full 100 x 1,000 is timed in benchmarks/bench_leaderboard.py)."""
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    root = tmp_path / "data"
    rng = np.random.default_rng(1)
    docs = [f"d/{i}.txt" for i in range(400)]
    queries = [(f"{i}_1", [[docs[j] for j in rng.choice(400, 3, replace=False)]]) for i in range(200)]
    write_domain(root, "d", queries, docs)
    folder = tmp_path / "runs"
    folder.mkdir()
    for r in range(20):
        lines = []
        for q, _ in queries:
            for rank, j in enumerate(rng.choice(400, 10, replace=False)):
                lines.append(f"{q} Q0 {docs[j]} {rank + 1} {10 - rank} run{r}\n")
        (folder / f"run{r:02d}.txt").write_text("".join(lines), encoding="utf-8")
    start = time.perf_counter()
    board = rm.benchmark("reteco-1a").leaderboard(folder, data=root, n_resamples=1000)
    elapsed = time.perf_counter() - start
    assert len(board.ranking) == 20 and board.ranking["n"].eq(200).all()
    assert elapsed < 60, elapsed


def test_worker_processes_give_the_same_board(constructed):
    folder, _ = constructed
    runs = sorted(folder.iterdir())
    one = rm.benchmark("reteco-1a").leaderboard(runs, data=SAMPLE, n_resamples=200, workers=1)
    two = rm.benchmark("reteco-1a").leaderboard(runs, data=SAMPLE, n_resamples=200, workers=2)
    pd.testing.assert_frame_equal(one.ranking, two.ranking)
    pd.testing.assert_frame_equal(one.pairwise, two.pairwise)
    assert list(two.scores) == [p.stem for p in runs]
