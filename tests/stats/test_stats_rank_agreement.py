"""``rm.stats.rank_agreement``: Kendall's tau-b against ``scipy.stats.kendalltau``, Spearman's rho
against ``scipy.stats.spearmanr``, tau_AP against hand computations (and, with ties, against the
mean over every tie order enumerated here), significant swaps counted by hand, the bootstrap on
leaderboards of the bundled sample, and the ``compare-leaderboards`` command."""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import reteco_measures as rm
from reteco_measures.cli.main import main as cli_main
from reteco_measures.errors import DataFormatWarning
from reteco_measures.sample import sample_path, sample_root
from reteco_measures.stats import rank_agreement
from reteco_measures.stats.rank_agreement import kendall_tau_b, spearman, tau_ap

RUNS = ["A", "B", "C", "D", "E"]
REFERENCE = dict(zip(RUNS, [5.0, 4.0, 3.0, 2.0, 1.0], strict=True))  # A > B > C > D > E


def _by_order(order: str) -> dict[str, float]:
    """Values that rank the runs in ``order`` (best first)."""
    return {r: float(len(order) - i) for i, r in enumerate(order)}


# ------------------------------------------------------------------------------------------------
# tau_AP by hand (Yilmaz, Aslam & Robertson 2008: walk b's ranking; the run at position i scores
# C(i)/(i-1), the share of the runs above it in b that the reference also puts above it;
# tau_AP = 2/(n-1) * sum_{i=2..n} C(i)/(i-1) - 1)


def test_tau_ap_by_hand_a_swap_at_the_top_costs_more():
    # b = B, A, C, D, E: position 2 (A): B above it, the reference puts B below A -> 0/1;
    # positions 3, 4, 5: every run above is above in the reference too -> 1 + 1 + 1
    top = rank_agreement(REFERENCE, _by_order("BACDE"))
    assert top.tau_ap == pytest.approx(2 / 4 * (0 / 1 + 2 / 2 + 3 / 3 + 4 / 4) - 1)  # 0.5
    # b = A, B, C, E, D: position 5 (D): A, B, C right, E wrong -> 3/4
    bottom = rank_agreement(REFERENCE, _by_order("ABCED"))
    assert bottom.tau_ap == pytest.approx(2 / 4 * (1 / 1 + 2 / 2 + 3 / 3 + 3 / 4) - 1)  # 0.875
    # Kendall's tau sees one discordant pair of ten in both: (9 - 1) / 10
    assert top.kendall_tau_b == bottom.kendall_tau_b == pytest.approx(0.8)
    # both swaps: B, A, C, E, D -> 0/1 + 2/2 + 3/3 + 3/4
    both = rank_agreement(REFERENCE, _by_order("BACED"))
    assert both.tau_ap == pytest.approx(2 / 4 * (0 + 1 + 1 + 0.75) - 1)  # 0.375
    assert rank_agreement(REFERENCE, REFERENCE).tau_ap == 1.0
    assert rank_agreement(REFERENCE, _by_order("EDCBA")).tau_ap == pytest.approx(-1.0)


def test_tau_ap_is_not_symmetric():
    # b = C, A, B, D, E walked against A > B > C > D > E: A: 0/1, B: 1/2, D: 3/3, E: 4/4
    x = rank_agreement(REFERENCE, _by_order("CABDE")).tau_ap
    assert x == pytest.approx(2 / 4 * (0 + 0.5 + 1 + 1) - 1)  # 0.25
    # reversed roles: walk A, B, C, D, E against C > A > B > D > E: B: 1/1, C: 0/2, D: 1, E: 1
    y = rank_agreement(_by_order("CABDE"), REFERENCE).tau_ap
    assert y == pytest.approx(2 / 4 * (1 + 0 + 1 + 1) - 1)  # 0.5


def test_tau_ap_with_ties_by_hand():
    # b ties A and B at the top, the reference does not: order A, B, ... gives 1; B, A, ... gives 0.5
    b = {"A": 5.0, "B": 5.0, "C": 3.0, "D": 2.0, "E": 1.0}
    assert rank_agreement(REFERENCE, b).tau_ap == pytest.approx(0.75)
    # the reference ties A and B, b does not: the pair counts half right -> 2/4 * (1/2 + 1 + 1 + 1) - 1
    assert rank_agreement(b, REFERENCE).tau_ap == pytest.approx(0.75)
    # both tie it: right whichever order b's tie takes -> identical rankings agree fully
    assert rank_agreement(b, b).tau_ap == 1.0
    # b ties everything: each pair half right at every position -> 0
    assert rank_agreement(REFERENCE, dict.fromkeys(RUNS, 1.0)).tau_ap == pytest.approx(0.0, abs=1e-15)


def _tau_ap_plain(a, b):
    """The definition, for rankings without ties (positions of b walked top down)."""
    order = sorted(range(len(b)), key=lambda k: -b[k])
    total = sum(sum(a[order[j]] > a[order[i]] for j in range(i)) / i for i in range(1, len(b)))
    return 2 * total / (len(b) - 1) - 1


def _tau_ap_enumerated(a, b):
    """The tie rule written out: every order of b's tie groups (equally likely), walked top down;
    a pair earns 1 when a puts it in the same order (or both sides tie it), 1/2 when only a ties it,
    0 when a reverses it."""
    n = len(a)
    values = []
    for perm in itertools.permutations(range(n)):
        order = sorted(range(n), key=lambda k: (-b[k], perm[k]))
        total = 0.0
        for i in range(1, n):
            lo = order[i]
            credit = 0.0
            for hi in order[:i]:
                tied_a, tied_b = a[hi] == a[lo], b[hi] == b[lo]
                credit += 1.0 if (tied_a and tied_b) or (not tied_a and a[hi] > a[lo]) else 0.5 if tied_a else 0.0
            total += credit / i
        values.append(2 * total / (n - 1) - 1)
    return float(np.mean(values))


def test_tau_ap_with_ties_equals_the_enumerated_orders():
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(2, 7))
        a = rng.integers(0, 3, n).astype(float)
        b = rng.integers(0, 3, n).astype(float)
        assert tau_ap(a, b) == pytest.approx(_tau_ap_enumerated(a, b), abs=1e-12), (a, b)
    for _ in range(100):  # no ties: the definition itself
        n = int(rng.integers(2, 12))
        a, b = rng.random(n), rng.random(n)
        assert tau_ap(a, b) == pytest.approx(_tau_ap_plain(a, b), abs=1e-12)


# ------------------------------------------------------------------------------------------------
# tau-b and rho against scipy


def test_kendall_and_spearman_match_scipy_with_and_without_ties():
    rng = np.random.default_rng(1)
    for k in range(200):
        n = int(rng.integers(2, 30))
        if k % 2:
            a, b = rng.integers(0, 4, n).astype(float), rng.integers(0, 4, n).astype(float)
        else:
            a, b = rng.random(n), rng.random(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns on constant input (and returns NaN, as we do)
            want_tau = sps.kendalltau(a, b).statistic
            want_rho = sps.spearmanr(a, b).statistic
        if np.isnan(want_tau):
            assert np.isnan(kendall_tau_b(a, b))
        else:
            assert kendall_tau_b(a, b) == pytest.approx(want_tau, abs=1e-12)
        if np.isnan(want_rho):
            assert np.isnan(spearman(a, b))
        else:
            assert spearman(a, b) == pytest.approx(want_rho, abs=1e-12)
        runs = [f"r{i}" for i in range(n)]
        if n >= 2 and not np.isnan(want_tau):
            res = rank_agreement(dict(zip(runs, a, strict=True)), pd.Series(b, index=runs))
            assert res.kendall_tau_b == pytest.approx(want_tau, abs=1e-12) and res.n == n


def test_batched_statistics_equal_one_at_a_time():
    rng = np.random.default_rng(2)
    a, b = rng.random((6, 9)), rng.integers(0, 3, (6, 9)).astype(float)
    for f in (kendall_tau_b, spearman, tau_ap):
        batch = f(a, b)
        assert batch == pytest.approx([f(a[i], b[i]) for i in range(6)], abs=1e-14, nan_ok=True)


# ------------------------------------------------------------------------------------------------
# top-1, top k, mismatched runs, swaps


def test_top1_top_k_and_mismatched_runs():
    assert rank_agreement(REFERENCE, _by_order("ABDCE")).top1_same
    assert not rank_agreement(REFERENCE, _by_order("BACDE")).top1_same
    # ties (exact equality) count as first: A is first on both sides, b ties B with it; the tie is counted
    tied = rank_agreement({"A": 5, "B": 4, "C": 3}, {"A": 5, "B": 5, "C": 1})
    assert tied.top1_same and (tied.top1_tied_a, tied.top1_tied_b) == (1, 2)
    # nothing first on both sides, ties or not
    assert not rank_agreement({"A": 5, "B": 5, "C": 3}, {"A": 1, "B": 2, "C": 3}).top1_same
    res = rank_agreement(REFERENCE, _by_order("BACED"), top=3)  # the reference's A, B, C only
    assert res.runs == ["A", "B", "C"] and res.n == 3
    assert res.kendall_tau_b == pytest.approx(sps.kendalltau([3, 2, 1], [2, 3, 1]).statistic)
    with pytest.warns(DataFormatWarning, match=r"a only \['E'\], b only \['F'\]; 4 run\(s\) compared"):
        res = rank_agreement(REFERENCE, {"A": 1, "B": 2, "C": 3, "D": 4, "F": 0})
    assert res.only_a == ["E"] and res.only_b == ["F"] and res.n == 4
    with pytest.raises(ValueError, match="at least two runs"), pytest.warns(DataFormatWarning):
        rank_agreement({"A": 1, "B": 2}, {"A": 1, "C": 2})
    with pytest.raises(ValueError, match="top must be an integer >= 2"):
        rank_agreement(REFERENCE, REFERENCE, top=1)
    with pytest.raises(TypeError, match="expected a"):
        rank_agreement(REFERENCE, [1, 2, 3])


def _board_doc(values: dict[str, float], significant: list[tuple[str, str]]) -> dict:
    runs = sorted(values, key=lambda r: -values[r])
    pairs = [{"run": x, "other": y, "significant": frozenset((x, y)) in {frozenset(p) for p in significant}}
             for x, y in itertools.combinations(runs, 2)]
    return {"benchmark": "x", "ranking": [{"rank": i + 1, "run": r, "value": values[r]} for i, r in enumerate(runs)],
            "pairwise": pairs}


def test_swaps_are_significant_pairs_of_a_reversed_in_b():
    a = _board_doc(REFERENCE, significant=[("A", "C"), ("A", "E"), ("B", "C"), ("D", "E")])
    # b: C, A, B, E, D. Reversed pairs: (A, C), (B, C), (D, E); of them A-C, B-C and D-E are
    # significant in a; A-E is significant but b keeps its order -> 3 swaps
    b = _board_doc(_by_order("CABED"), significant=[("B", "C")])
    res = rank_agreement(a, b)
    assert res.swaps == 3
    assert sorted(res.swapped) == [("A", "C"), ("B", "C"), ("D", "E")]
    assert res.swaps_significant == 1  # only B-C is significant in b too
    assert rank_agreement(REFERENCE, b).swaps is None  # a gives no significance
    assert rank_agreement(a, _by_order("CABED")).swaps_significant is None


# ------------------------------------------------------------------------------------------------
# leaderboards of the bundled sample: values, paired bootstrap, JSON and the command line


def _runs(folder):
    lines = [ln.split() for ln in sample_path("runs", "reteco_track1a_dev.txt").read_text().splitlines() if ln]
    by_query: dict[str, list[str]] = {}
    for q, _, d, *_ in lines:
        by_query.setdefault(q, []).append(d)
    variants = {"sample": lambda d: d, "reversed": lambda d: d[::-1], "rotate1": lambda d: d[1:] + d[:1],
                "rotate3": lambda d: d[3:] + d[:3], "swap12": lambda d: [d[1], d[0], *d[2:]]}
    paths = []
    for name, f in variants.items():
        p = folder / f"{name}.txt"
        p.write_text("".join(f"{q} Q0 {d} {i + 1} {100 - i} {name}\n" for q, docs in by_query.items()
                             for i, d in enumerate(f(docs))), encoding="utf-8")
        paths.append(p)
    return paths


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    paths = _runs(folder)
    bench = rm.benchmark("reteco-1a")
    official = bench.leaderboard(paths, data=sample_root(), split="dev", n_resamples=200, workers=1)
    filtered = bench.leaderboard(paths, data=sample_root(), split="dev", n_resamples=200, workers=1,
                                 measure="nDCG|FC@10")
    return folder, paths, official, filtered


def test_leaderboards_give_their_ranking_values_and_paired_intervals(boards):
    _, _, official, filtered = boards
    res = rank_agreement(official, filtered, n_resamples=300)
    x = official.ranking.set_index("run")["value"]
    y = filtered.ranking.set_index("run")["value"].reindex(x.index)
    assert res.runs == list(x.index)
    assert res.kendall_tau_b == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)
    assert res.spearman == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)
    assert res.tau_ap == pytest.approx(_tau_ap_plain(x.to_numpy(), y.to_numpy()), abs=1e-12)
    assert res.swaps == 0 and res.swapped == []  # no pair of the official board is significant here
    assert set(res.intervals) == {"kendall_tau_b", "tau_ap", "spearman", "tau_gap"}
    for s, (lo, hi) in res.intervals.items():
        assert -1 <= lo <= hi <= 1, s
    # paired: a board against itself agrees perfectly in every resample (same units drawn for both sides)
    same = rank_agreement(official, official, n_resamples=100)
    assert same.intervals["kendall_tau_b"] == (1.0, 1.0) and same.intervals["tau_ap"] == (1.0, 1.0)
    # the same numbers from the per-query frames
    pq = lambda b: b.per_query[b.per_query["measure"] == b.measure]  # noqa: E731
    again = rank_agreement(pq(official), pq(filtered), n_resamples=300)
    assert again.intervals == res.intervals and again.tau_ap == pytest.approx(res.tau_ap, abs=1e-15)
    # one side fixed (a dict): only b is resampled
    fixed = rank_agreement(x.to_dict(), filtered, n_resamples=50)
    assert fixed.kendall_tau_b == pytest.approx(res.kendall_tau_b) and "spearman" in fixed.intervals


def test_compare_leaderboards_command_on_leaderboard_json(boards, tmp_path, capsys):
    folder, paths, *_ = boards
    files = {}
    for name, extra in (("A", []), ("B", ["--measure", "nDCG|FC@10"])):
        out = tmp_path / f"{name}.json"
        assert cli_main(["leaderboard", "reteco-1a", *map(str, paths), "--data", str(sample_root()), "--split", "dev",
                         "--resamples", "100", "--workers", "1", "--format", "json", "--out", str(out),
                         *extra]) == 0
        files[name] = out
    capsys.readouterr()
    assert cli_main(["compare-leaderboards", str(files["A"]), str(files["B"]), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    a = {r["run"]: r["value"] for r in json.loads(files["A"].read_text())["ranking"]}
    b = {r["run"]: r["value"] for r in json.loads(files["B"].read_text())["ranking"]}
    runs = list(a)
    assert got["n"] == 5 and got["runs"] == runs
    assert got["kendall_tau_b"] == pytest.approx(sps.kendalltau([a[r] for r in runs], [b[r] for r in runs])
                                                 .statistic, abs=1e-12)
    assert got["spearman"] == pytest.approx(sps.spearmanr([a[r] for r in runs], [b[r] for r in runs]).statistic,
                                            abs=1e-12)
    assert "kendall_tau_b_ci_low" not in got  # no per-query values in the JSON: no intervals
    assert got["swaps"] == 0
    # the table form, and runs that do not match: exit 1 with a warning
    assert cli_main(["compare-leaderboards", str(files["A"]), str(files["B"])]) == 0
    assert "tau_ap" in capsys.readouterr().out
    doc = json.loads(files["B"].read_text())
    doc["ranking"] = doc["ranking"][:-1]
    short = tmp_path / "short.json"
    short.write_text(json.dumps(doc), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli_main(["compare-leaderboards", str(files["A"]), str(short)]) == 1
    assert "left out" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    assert cli_main(["compare-leaderboards", str(files["A"]), str(bad)]) == 2
    assert "not a leaderboard JSON file" in capsys.readouterr().err


def test_compare_leaderboards_counts_ties_at_the_top(tmp_path, capsys):
    """Board A ties x and y for first (it prints x at rank 1); board B puts x first alone: the same
    run is first on both sides, and the tie is counted."""
    a = {"ranking": [{"rank": 1, "run": "x", "value": 0.5}, {"rank": 2, "run": "y", "value": 0.5},
                     {"rank": 3, "run": "z", "value": 0.1}]}
    b = {"ranking": [{"rank": 1, "run": "x", "value": 0.6}, {"rank": 2, "run": "y", "value": 0.4},
                     {"rank": 3, "run": "z", "value": 0.2}]}
    pa, pb = tmp_path / "A.json", tmp_path / "B.json"
    pa.write_text(json.dumps(a), encoding="utf-8")
    pb.write_text(json.dumps(b), encoding="utf-8")
    assert cli_main(["compare-leaderboards", str(pa), str(pb), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["top1_same"] is True and (got["top1_tied_a"], got["top1_tied_b"]) == (2, 1)
    assert cli_main(["compare-leaderboards", str(pa), str(pb)]) == 0
    table = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert table["top1_same"] == "1.0000" and table["top1_tied_a"] == "2.0000"
    # y first in B: also first (tied) in A
    b["ranking"][0]["value"], b["ranking"][1]["value"] = 0.4, 0.6
    pb.write_text(json.dumps(b), encoding="utf-8")
    assert cli_main(["compare-leaderboards", str(pa), str(pb), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["top1_same"] is True
    # z first in B: nobody first on both sides
    b["ranking"][2]["value"] = 0.9
    pb.write_text(json.dumps(b), encoding="utf-8")
    assert cli_main(["compare-leaderboards", str(pa), str(pb), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["top1_same"] is False


def test_the_worked_example_of_the_docs_prints_what_the_page_shows(worked_example):
    page = worked_example("statistics.md")
    assert page["printed"] == page["text"][0]
