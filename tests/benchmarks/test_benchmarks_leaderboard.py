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
from tempo_tree import write_domain

import reteco_measures as rm
from reteco_measures.benchmarks.leaderboard import clusters
from reteco_measures.benchmarks.tempo.data import load_tempo
from reteco_measures.cli.main import main
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
    # rank intervals: the two identical perfect runs tie in every resample, so each spans 1-2
    assert ranking.loc["copy", ["rank_low", "rank_high"]].tolist() == [1, 2]
    assert ranking.loc["perfect", ["rank_low", "rank_high"]].tolist() == [1, 2]
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
        assert [(r["rank_low"], r["rank_high"]) for r in doc["ranking"]][:2] == [(1, 2), (1, 2)]
        assert doc["design"][0]["unit"] == "query"
    elif fmt == "csv":
        assert out.splitlines()[0].startswith("rank,run,value,ci_low,ci_high,rank_low,rank_high,n,cluster,valid,"
                                              "problems")
        assert len(out.splitlines()) == 5
    elif fmt == "markdown":
        assert out.startswith("**reteco-1a**") and "| rank | 95% rank interval | cluster | run |" in out
        assert "nDCG\\|FC@10" in out and "| 1–2 |" in out  # the two identical perfect runs
    elif fmt == "latex":
        assert "\\toprule" in out and "\\bottomrule" in out and "nDCG\\textbar{}FC@10" in out and " 1--2 " in out
    else:
        assert "ranked by nDCG@10" in out and "== by_domain" in out and "rank interval" in out
        assert out.count(" 1–2 ") == 2


def test_cli_plot_and_unreadable_submission(constructed, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    folder, _ = constructed
    (tmp_path / "broken.txt").write_text("", encoding="utf-8")
    png = tmp_path / "board.png"
    rc = main(["leaderboard", "reteco-1a", str(folder / "perfect.txt"), str(folder / "noisy.txt"),
               str(tmp_path / "broken.txt"), "--data", str(SAMPLE), "--plot", str(png), "--resamples", "100"])
    captured = capsys.readouterr()
    assert png.stat().st_size > 1000
    # an empty submission is not ranked on zeros: listed under "not scored" with its reason, exit 1
    assert not [line for line in captured.out.splitlines() if line.split()[3:4] == ["broken"]]
    assert "not scored (not ranked): broken: no row: the file is empty" in captured.out
    assert "not scored: broken: no row: the file is empty" in captured.err and rc == 1


@pytest.mark.slow
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


@pytest.mark.slow
def test_worker_processes_give_the_same_board(constructed):
    folder, _ = constructed
    runs = sorted(folder.iterdir())
    one = rm.benchmark("reteco-1a").leaderboard(runs, data=SAMPLE, n_resamples=200, workers=1)
    two = rm.benchmark("reteco-1a").leaderboard(runs, data=SAMPLE, n_resamples=200, workers=2)
    pd.testing.assert_frame_equal(one.ranking, two.ranking)
    pd.testing.assert_frame_equal(one.pairwise, two.pairwise)
    assert list(two.scores) == [p.stem for p in runs]


# ------------------------------------------------------------------------------------------------
# rank intervals on a tiny board, computed here from the board's resample indices


def _judgments(scores: dict[str, int], dimension: str = "correctness") -> pd.DataFrame:
    return pd.DataFrame({"turn_id": list(scores), "dimension": dimension, "score": list(scores.values())})


def _draws(seed: int, n_units: int, n_resamples: int) -> np.ndarray:
    """The bootstrap indices of a board with one stratum, as the statistics module documents its
    draws: numpy's PCG64 seeded with ``[seed, measure index, group index]``, one uniform per
    (resample, unit), ``floor(u * U)``; units in sorted order."""
    rng = np.random.default_rng([seed, 0, 0])
    return np.floor(rng.random((n_resamples, n_units)) * n_units).astype(int)


def test_rank_intervals_by_hand_on_a_tiny_board():
    # 3 runs x 4 turns (RETECO 1-5 scores, normalised (s-1)/4); b is a, one point lower on one turn
    a = {"t1": 5, "t2": 3, "t3": 4, "t4": 2}
    b = {"t1": 5, "t2": 3, "t3": 4, "t4": 1}
    c = {"t1": 1, "t2": 5, "t3": 3, "t4": 4}
    runs = {"a": _judgments(a), "b": _judgments(b), "c": _judgments(c)}
    B, seed = 300, 3
    board = rm.leaderboard("reteco-2b", runs, n_resamples=B, seed=seed)
    idx = _draws(seed, 4, B)
    units = sorted(a)
    values = np.array([[(r[u] - 1) / 4 for u in units] for r in (a, b, c)])  # (R, U)
    agg = values[:, idx].mean(axis=2).T  # (B, R): each run's mean over the resampled turns
    # the same draws as the board's confidence intervals
    r = board.ranking.set_index("run")
    for i, name in enumerate("abc"):
        lo, hi = np.quantile(agg[:, i], [0.025, 0.975])
        assert r.loc[name, "ci_low"] == pytest.approx(lo, abs=1e-12)
        assert r.loc[name, "ci_high"] == pytest.approx(hi, abs=1e-12)
    # places: best = competition ("min") rank, worst = "max" rank (scipy), of the negated values
    best = np.vstack([sps.rankdata(-row, method="min") for row in agg])
    worst = np.vstack([sps.rankdata(-row, method="max") for row in agg])
    for i, name in enumerate("abc"):
        want_low = np.sort(best[:, i])[int(np.floor(0.025 * (B - 1)))]   # numpy "lower"
        want_high = np.sort(worst[:, i])[int(np.ceil(0.975 * (B - 1)))]  # numpy "higher"
        assert (r.loc[name, "rank_low"], r.loc[name, "rank_high"]) == (want_low, want_high), name
    # a and b tie in the resamples without t4 (then each takes 1-2 or 2-3); b is never above a
    assert r.loc["a", "rank_low"] == 1 and r.loc["b", "rank_low"] >= r.loc["a", "rank_low"]
    assert r.loc["c", "rank_low"] < r.loc["c", "rank_high"]


def test_identical_runs_span_one_to_two_and_a_dominant_run_one_to_one():
    rng = np.random.default_rng(5)
    turns = [f"t{i}" for i in range(30)]
    mid = dict(zip(turns, rng.integers(2, 4, len(turns)).tolist(), strict=True))
    runs = {"top": _judgments({t: 5 for t in turns}), "x": _judgments(mid), "x_copy": _judgments(mid),
            "low": _judgments({t: 1 for t in turns})}
    board = rm.leaderboard("reteco-2b", runs, n_resamples=500)
    r = board.ranking.set_index("run")
    assert r.loc["top", ["rank_low", "rank_high"]].tolist() == [1, 1]
    assert r.loc["x", ["rank_low", "rank_high"]].tolist() == [2, 3]
    assert r.loc["x_copy", ["rank_low", "rank_high"]].tolist() == [2, 3]
    assert r.loc["low", ["rank_low", "rank_high"]].tolist() == [4, 4]
    two = rm.leaderboard("reteco-2b", {"x": _judgments(mid), "x_copy": _judgments(mid)}, n_resamples=200)
    assert two.ranking[["rank_low", "rank_high"]].values.tolist() == [[1, 2], [1, 2]]


def test_resample_ranks_count_every_tied_place():
    from reteco_measures.benchmarks.leaderboard import resample_ranks

    agg = np.array([[0.5, 0.5, 0.1], [0.3, 0.5, 0.5], [np.nan, 0.2, 0.2]])
    best, worst = resample_ranks(agg)
    assert best.tolist() == [[1, 1, 3], [3, 1, 1], [3, 1, 1]]  # NaN: the last place
    assert worst.tolist() == [[2, 2, 3], [3, 2, 2], [3, 2, 2]]


# ------------------------------------------------------------------------------------------------
# calibrated leaderboards (generation tracks)


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> tuple[Path, list[Path], Path, dict]:
    """Three runs judged on 60 turns by a judge that is lenient to ``beta``: the raw judge means rank
    beta first, the raters (the truth) alpha; 20 turns of each run rated by one or two raters."""
    folder = tmp_path_factory.mktemp("judged")
    rng = np.random.default_rng(3)
    turns = [f"c{i // 4}_turn_{i % 4 + 1}" for i in range(60)]
    rows, truth = [], {}
    for run, quality, lenient in (("alpha", 3.8, 0), ("beta", 3.0, 2), ("gamma", 2.4, 0)):
        t = np.clip(np.round(rng.normal(quality, 0.9, len(turns))), 1, 5).astype(int)
        j = np.clip(t + lenient * (rng.random(len(turns)) < 0.8), 1, 5)
        truth[run] = (t, j)
        _judgments(dict(zip(turns, j.tolist(), strict=True))).to_json(folder / f"{run}.jsonl", orient="records",
                                                                     lines=True)
        for i in rng.choice(len(turns), 20, replace=False):
            rows.append({"run": run, "turn_id": turns[i], "dimension": "correctness", "rater": "ann",
                         "score": int(t[i])})
            if i % 2:
                rows.append({"run": run, "turn_id": turns[i], "dimension": "correctness", "rater": "bob",
                             "score": int(np.clip(t[i] + rng.integers(-1, 2), 1, 5))})
    human = folder / "ratings.csv"
    pd.DataFrame(rows).to_csv(human, index=False)
    return folder, [folder / f"{r}.jsonl" for r in ("alpha", "beta", "gamma")], human, {"turns": turns, "rows": rows}


@pytest.mark.parametrize("method", ["ppi++", "ppi"])
def test_calibrated_board_equals_calibrate_and_ppi_py(judged, method):
    from reteco_measures.judge import calibrate

    ppi_py = pytest.importorskip("ppi_py")
    folder, runs, human, info = judged
    raw = rm.leaderboard("reteco-2b", runs, n_resamples=300)
    board = rm.leaderboard("reteco-2b", runs, human=human, calibration=method, n_resamples=300)
    r = board.ranking.set_index("run")
    want = calibrate({p.stem: p for p in runs}, human, method=method, by="run", dimensions=["correctness"])
    want = want.set_index("run")
    for run in ("alpha", "beta", "gamma"):
        for col, mine in (("calibrated", "value"), ("ci_low", "ci_low"), ("ci_high", "ci_high"), ("bias", "bias"),
                          ("lam", "lam"), ("n_human", "n_human"), ("judge_mean", "judge_mean")):
            assert r.loc[run, mine] == pytest.approx(want.loc[run, col], abs=1e-12), (run, col)
        # the raw judge mean and its bootstrap interval are the uncalibrated board's
        assert r.loc[run, "judge_ci_low"] == raw.ranking.set_index("run").loc[run, "ci_low"]
    # one run straight from ppi-python: the human value of an item is the mean of its raters
    ratings = pd.DataFrame(info["rows"])
    ratings = ratings[ratings["run"] == "alpha"]
    y_item = ((ratings["score"] - 1) / 4).groupby(ratings["turn_id"]).mean()
    judge = pd.read_json(runs[0], lines=True).set_index("turn_id")["score"]
    f = (judge - 1) / 4
    labelled = f.index.isin(y_item.index)
    y = y_item.reindex(f.index[labelled]).to_numpy()
    lam = 1.0 if method == "ppi" else None
    est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f[labelled].to_numpy(), f[~labelled].to_numpy(),
                                                         lam=lam)))
    lo, hi = ppi_py.ppi_mean_ci(y, f[labelled].to_numpy(), f[~labelled].to_numpy(), alpha=0.05, lam=lam)
    assert r.loc["alpha", "value"] == pytest.approx(est, abs=1e-12)
    assert (r.loc["alpha", "ci_low"], r.loc["alpha", "ci_high"]) == (pytest.approx(float(np.squeeze(lo)), abs=1e-12),
                                                                     pytest.approx(float(np.squeeze(hi)), abs=1e-12))
    # the ranking follows the calibrated means (the lenient judge put beta first on its raw means)
    assert raw.ranking["run"].iloc[0] == "beta"
    assert board.ranking["run"].tolist() == want["calibrated"].sort_values(ascending=False).index.tolist()
    assert board.ranking["run"].iloc[0] == "alpha"


def test_calibrated_rank_intervals_from_the_board_resamples(judged):
    """With PPI (lambda = 1) each resample's calibrated mean is, over the resampled turns, the mean
    judge value of the unrated ones plus the mean (human - judge) of the rated ones."""
    folder, runs, human, info = judged
    B, seed = 400, 9
    board = rm.leaderboard("reteco-2b", runs, human=human, calibration="ppi", n_resamples=B, seed=seed)
    units = sorted(info["turns"])
    idx = _draws(seed, len(units), B)
    ratings = pd.DataFrame(info["rows"])
    est = np.empty((B, 3))
    for k, path in enumerate(runs):
        f = ((pd.read_json(path, lines=True).set_index("turn_id")["score"] - 1) / 4).reindex(units).to_numpy()
        mine = ratings[ratings["run"] == path.stem]
        y = ((mine["score"] - 1) / 4).groupby(mine["turn_id"]).mean().reindex(units).to_numpy()
        for b in range(B):
            pick = idx[b]
            rated = ~np.isnan(y[pick])
            est[b, k] = f[pick][~rated].mean() + (y[pick][rated] - f[pick][rated]).mean()
    best = np.vstack([sps.rankdata(-row, method="min") for row in est])
    worst = np.vstack([sps.rankdata(-row, method="max") for row in est])
    r = board.ranking.set_index("run")
    for k, path in enumerate(runs):
        want = (np.sort(best[:, k])[int(np.floor(0.025 * (B - 1)))], np.sort(worst[:, k])[int(np.ceil(0.975 * (B - 1)))])
        assert (r.loc[path.stem, "rank_low"], r.loc[path.stem, "rank_high"]) == want, path.stem
    # clusters: the calibrated pairwise table (paired bootstrap on those resamples), Holm over the 3 pairs
    pw = board.calibrated_pairwise.set_index(["run", "other"])
    names = [p.stem for p in runs]
    p_raw = []
    for i, j in itertools.combinations(range(3), 2):
        delta = r.loc[names[i], "value"] - r.loc[names[j], "value"]
        star = est[:, i] - est[:, j]
        p_raw.append((1 + np.sum(np.abs(star - delta) >= np.abs(delta) - 1e-12 * max(1, abs(delta)))) / (1 + B))
    holm = multipletests(np.array(p_raw), method="holm")[1]
    for (i, j), want in zip(itertools.combinations(range(3), 2), holm, strict=True):
        assert pw.loc[(names[i], names[j]), "p_adjusted"] == pytest.approx(want, rel=1e-9)


def test_a_run_without_human_ratings_is_nan_with_a_warning(judged, tmp_path, capsys):
    from reteco_measures.errors import DataFormatWarning

    folder, runs, human, info = judged
    ratings = pd.read_csv(human)
    partial = tmp_path / "partial.csv"
    ratings[ratings["run"] != "gamma"].to_csv(partial, index=False)
    with pytest.warns(DataFormatWarning, match="run gamma.*no judged item has a human rating"):
        board = rm.leaderboard("reteco-2b", runs, human=partial, n_resamples=200)
    last = board.ranking.iloc[-1]
    assert last["run"] == "gamma" and np.isnan(last["value"]) and np.isnan(last["ci_low"])
    assert last["n_human"] == 0 and not np.isnan(last["judge_mean"])
    rc = main(["leaderboard", "reteco-2b", *map(str, runs), "--human", str(partial), "--resamples", "100"])
    err = capsys.readouterr().err
    assert rc == 1 and "no calibrated mean for gamma" in err and "warning" in err


def test_calibrated_board_on_the_command_line(judged, capsys):
    folder, runs, human, info = judged
    assert main(["leaderboard", "reteco-2b", str(folder / "alpha.jsonl"), str(folder / "beta.jsonl"),
                 str(folder / "gamma.jsonl"), "--human", str(human), "--resamples", "200", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["params"]["calibration"] == "ppi++" and doc["ranking"][0]["run"] == "alpha"
    assert {"judge_mean", "rank_low", "rank_high", "n_human", "bias"} <= set(doc["ranking"][0])
    assert len(doc["calibration"]) == 3 and len(doc["calibrated_pairwise"]) == 3
    assert main(["leaderboard", "reteco-2b", *map(str, runs), "--human", str(human), "--resamples", "200",
                 "--calibration", "ppi"]) == 0
    out = capsys.readouterr().out
    assert "PPI-calibrated mean" in out and "judge mean" in out and "rank interval" in out
    # --human on a retrieval benchmark is a usage error (argparse: the flag does not exist there)
    with pytest.raises(SystemExit) as exc:
        main(["leaderboard", "reteco-1a", *map(str, runs), "--human", str(human)])
    assert exc.value.code == 2
    with pytest.raises(ValueError, match="generation tracks"):
        rm.leaderboard("reteco-1a", runs, human=human)


def test_a_rating_off_the_scale_is_named_by_file_and_line_on_the_board(judged, tmp_path, capsys):
    folder, runs, human, info = judged
    bad = tmp_path / "ratings.csv"
    frame = pd.read_csv(human)
    frame.loc[len(frame)] = {"run": "alpha", "turn_id": info["turns"][0], "dimension": "correctness", "rater": "zz",
                             "score": 9}
    frame.to_csv(bad, index=False)
    assert main(["leaderboard", "reteco-2b", *map(str, runs), "--human", str(bad), "--resamples", "50"]) == 0
    err = capsys.readouterr().err
    line = len(frame) + 1  # the last row, after the header
    assert f"ratings.csv:{line}: {info['turns'][0]}: human score 9" in err and "<data>" not in err, err


def test_the_worked_example_of_the_docs_prints_what_the_page_shows(worked_example, capsys):
    page = worked_example("leaderboard.md")
    assert page["printed"] == page["text"][0]
    argv = page["bash"][0].split()
    assert argv[0] == "reteco-measures"
    assert main(argv[1:]) == 0
    assert capsys.readouterr().out == page["text"][1]


# ------------------------------------------------------------------------------------------------
# submissions that cannot be scored are never ranked; a valid 0 and an invalid-by-the-rules run are


@pytest.fixture(scope="module")
def mixed(constructed, tmp_path_factory) -> dict[str, Path]:
    """Two good runs, a valid run that scores 0 (only non-relevant documents of the right domain),
    a RECOR run (no query id in common with TEMPO) and an empty file."""
    folder, _ = constructed
    tmp = tmp_path_factory.mktemp("mixed")
    data = load_tempo("dev", root=SAMPLE)
    gold = set(zip(data.qrels.loc[data.qrels["relevance"] >= 1, "query_id"],
                   data.qrels.loc[data.qrels["relevance"] >= 1, "doc_id"], strict=True))
    domain = data.topics.drop_duplicates("query_id").set_index("query_id")["domain"]
    corpus = data.corpus.groupby("domain")["doc_id"].apply(list).to_dict()
    zero = {q: [d for d in corpus[domain[q]] if (q, d) not in gold][:10] for q in domain.index}
    _write(tmp / "zero.txt", zero)
    (tmp / "empty.txt").write_text("", encoding="utf-8")
    return {"perfect": folder / "perfect.txt", "noisy": folder / "noisy.txt", "zero": tmp / "zero.txt",
            "recor": SAMPLE / "runs" / "reteco_track2.txt", "empty": tmp / "empty.txt"}


def test_unscorable_submissions_are_listed_not_ranked(mixed):
    with pytest.warns(rm.benchmarks.leaderboard.UnscorableSubmissionWarning, match="recor.*empty"):
        board = rm.leaderboard("reteco-1a", mixed, data=SAMPLE, split="dev", n_resamples=100)
    assert board.ranking["run"].tolist() == ["perfect", "noisy", "zero"]
    # a valid 0 is ranked as what it is: valid, no reason, value 0 (pytrec_eval agrees: no relevant doc)
    zero = board.ranking.set_index("run").loc["zero"]
    assert zero["value"] == 0.0 and bool(zero["valid"]) and zero["reason"] == ""
    assert list(board.failed) == ["recor", "empty"]
    assert "no query id in common with the reteco-1a topics" in board.failed["recor"]
    assert "'biology/3_turn_1'" in board.failed["recor"]
    assert board.failed["empty"] == "no row: the file is empty"
    from reteco_measures.report.html import leaderboard_html
    from reteco_measures.report.leaderboard import format_leaderboard

    for fmt in ("table", "markdown", "latex"):
        text = format_leaderboard(board, fmt)
        assert "not scored (not ranked): recor: no query id in common" in text, fmt
        assert "not scored (not ranked): empty: no row: the file is empty" in text, fmt
    doc = json.loads(format_leaderboard(board, "json"))
    assert doc["not_scored"] == [{"run": "recor", "reason": board.failed["recor"]},
                                 {"run": "empty", "reason": "no row: the file is empty"}]
    assert [r["run"] for r in doc["ranking"]] == ["perfect", "noisy", "zero"]
    html = leaderboard_html(board, plots=False)
    assert "Not scored (not ranked)" in html and "no row: the file is empty" in html


def test_only_unscorable_submissions_make_no_board(mixed):
    from reteco_measures.benchmarks.leaderboard import TooFewScoredError

    runs = {"a": mixed["recor"], "b": mixed["recor"], "c": mixed["empty"]}
    with pytest.warns(rm.benchmarks.leaderboard.UnscorableSubmissionWarning), \
            pytest.raises(TooFewScoredError, match="scored: none") as info:
        rm.leaderboard("reteco-1a", runs, data=SAMPLE, split="dev", n_resamples=100)
    assert sorted(info.value.failed) == ["a", "b", "c"]


def test_cli_unscorable_submission_exit_1_with_reason(mixed, capsys):
    rc = main(["leaderboard", "reteco-1a", str(mixed["perfect"]), str(mixed["noisy"]), str(mixed["recor"]),
               "--data", str(SAMPLE), "--split", "dev", "--resamples", "100", "--format", "markdown", "--no-ties"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "not scored (not ranked): reteco_track2: no query id in common" in out
    assert "reteco-measures: error: not scored: reteco_track2: no query id in common" in err
    assert "| reteco_track2 |" not in out
    # one good run and a wrong-benchmark one: no board, the reason, exit 1
    rc = main(["leaderboard", "reteco-1a", str(mixed["perfect"]), str(mixed["recor"]),
               "--data", str(SAMPLE), "--split", "dev", "--resamples", "100"])
    out, err = capsys.readouterr()
    assert rc == 1 and out == ""
    assert err.splitlines()[0].startswith("reteco-measures: error: not scored: reteco_track2: no query id")


def test_cli_score_of_a_wrong_benchmark_run_prints_the_reason_first(capsys):
    rc = main(["score", "reteco-1a", str(SAMPLE / "runs" / "reteco_track2.txt"), "--data", str(SAMPLE),
               "--split", "dev", "--limit", "2"])
    out, err = capsys.readouterr()
    assert rc == 1 and out == ""  # no table of zeros
    assert err.splitlines()[0].endswith("reteco_track2.txt: not scored: no query id in common with the reteco-1a "
                                        "topics (455 row(s) of unknown queries, e.g. 'biology/3_turn_1'): a "
                                        "submission for another benchmark?")
    assert "0.0000" not in err


def test_invalid_chunqiu_batch_is_ranked_with_its_reason():
    runs = {"good": SAMPLE / "runs" / "chunqiu.jsonl", "bad": SAMPLE / "runs" / "chunqiu_invalid.jsonl"}
    board = rm.leaderboard("chunqiu", runs, data=SAMPLE, n_resamples=100)
    assert not board.failed
    bad = board.ranking.set_index("run").loc["bad"]
    assert bad["value"] == 0.0 and not bool(bad["valid"])  # the batch rule's official 0, ranked
    first = rm.benchmark("chunqiu").score(runs["bad"], data=SAMPLE).report.problems_of("error")[0]
    assert bad["reason"].startswith(f"line {first.line}: {first.message}") and "more error(s)" in bad["reason"]
    from reteco_measures.report.leaderboard import format_leaderboard

    assert f"INVALID (ranked with its official value): bad: line {first.line}:" in format_leaderboard(board, "table")


def test_html_runs_plot_follows_the_ranking(constructed, monkeypatch):
    """The HTML page's runs plot orders runs as the ranking does (by score), not alphabetically."""
    pytest.importorskip("matplotlib")
    import reteco_measures.report.plots as plots
    from reteco_measures.report.html import leaderboard_html

    folder, _ = constructed
    runs = {"aa_worst": folder / "noisy.txt", "zz_best": folder / "perfect.txt", "mm_mid": folder / "two_decoys.txt"}
    board = rm.leaderboard("reteco-1a", runs, data=SAMPLE, split="dev", n_resamples=100, ties=False)
    seen = []
    real = plots.plot_comparison

    def spy(comparison, kind="runs", **kwargs):
        fig = real(comparison, kind, **kwargs)
        seen.append((kind, [t.get_text() for t in fig.axes[0].get_xticklabels()]))
        return fig

    monkeypatch.setattr(plots, "plot_comparison", spy)
    leaderboard_html(board)
    assert ("runs", board.ranking["run"].tolist()) in seen
    assert board.ranking["run"].tolist() != sorted(board.ranking["run"].tolist())
