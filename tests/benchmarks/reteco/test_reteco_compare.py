"""``rm.compare(runs, benchmark=...)`` and ``compare --benchmark``: runs scored as the benchmark's
leaderboard scores them, compared on its own unit.

Expected values are computed here without reteco_measures, the way
tests/benchmarks/test_benchmarks_reteco_kit.py computes them: plain Python reading, the starter
kit's (or the evaluation page's) rules by hand, pytrec_eval's ``ndcg_cut_10``, the kit's rounding
(per-domain mean to 5 decimals) and macro average written out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats as scipy_stats
from tempo_tree import write_v11_release
from test_reteco_rules import RUN_1A, _corpus, _kit_expected, _ndcg, _page_expected, _qrels

import reteco_measures as rm
from reteco_measures.cli.main import main as cli_main

# b: the first two topics only (100_1, 101_2); c: 100_1 with its order reversed, and 200_3
RUN_B = "".join(RUN_1A.splitlines(keepends=True)[:9])
RUN_C = """\
100_1 Q0 bitcoin/a.txt 1 9 r
100_1 Q0 bitcoin/b.txt 2 8 r
200_3 Q0 law/x.txt 1 2 r
200_3 Q0 law/y.txt 2 1 r
"""


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return write_v11_release(tmp_path_factory.mktemp("v11"))


@pytest.fixture()
def runs(tmp_path) -> dict[str, Path]:
    out = {}
    for name, text in (("a", RUN_1A), ("b", RUN_B), ("c", RUN_C)):
        out[name] = tmp_path / f"{name}.txt"
        out[name].write_text(text, encoding="utf-8")
    return out


def test_kit_rules_values_and_deltas_are_the_kits(release, runs):
    expected = {n: _kit_expected(release, "qrels_dev.txt", p.read_text(encoding="utf-8")) for n, p in runs.items()}
    comp = rm.compare(runs, benchmark="reteco-1a", data=release, split="dev", rules="kit", n_resamples=200)
    assert comp.measures == ["nDCG@10"] and comp.runs == ["a", "b", "c"]
    got = dict(zip(comp.summary["run"], comp.summary["value"], strict=True))
    assert got == pytest.approx(expected, abs=1e-12)
    for row in comp.pairwise.itertuples(index=False):
        assert row.delta == pytest.approx(expected[row.run] - expected[row.other], abs=1e-12)
    assert comp.params["rules"] == "kit" and comp.params["benchmark"] == "reteco-1a"
    assert comp.summary["ci_low"].isna().all()  # intervals of the mean over topics: not of this number
    assert "starter-kit rules" in comp.params["value"]


def test_kit_rules_tests_are_on_the_per_topic_values(release, runs):
    """The paired t test runs on the kit's evaluated topics (per-topic nDCG@10 by pytrec_eval;
    a topic a run skipped has no value for that run, so the pair uses the topics both have)."""
    comp = rm.compare(runs, benchmark="reteco-1a", data=release, split="dev", rules="kit", n_resamples=200,
                      correction=None)
    pq = comp.per_query
    a = pq[pq["run"] == "a"].set_index("query_id")["value"]
    assert sorted(a.index) == ["100_1", "101_2", "200_3"]  # the kit's topic count for a
    qrels, domain = _qrels(release, "qrels_dev.txt")
    corpus = _corpus(release)  # the kit drops gold outside the corpus
    qrels = {q: {d: r for d, r in g.items() if d in corpus[domain[q]]} for q, g in qrels.items()}
    run_a: dict[str, dict[str, float]] = {}
    for line in RUN_1A.splitlines():
        q, _, d, _, s, _ = line.split()
        run_a.setdefault(q, {})[d] = float(s)
    by_hand = _ndcg({q: g for q, g in qrels.items() if q in a.index}, run_a)
    assert sorted(by_hand) == sorted(a.index)
    for q, v in by_hand.items():
        assert a[q] == pytest.approx(v, abs=1e-12)
    c = pq[pq["run"] == "c"].set_index("query_id")["value"]
    both = sorted(set(a.index) & set(c.index))
    row = comp.pairwise[(comp.pairwise["run"] == "a") & (comp.pairwise["other"] == "c")].iloc[0]
    assert row.p_value == pytest.approx(scipy_stats.ttest_rel(a[both], c[both]).pvalue, rel=1e-9)


def test_page_rules_compare_equals_the_page(release, runs):
    comp = rm.compare(runs, benchmark="reteco-1a", data=release, split="dev", n_resamples=200, correction=None)
    expected = {n: _page_expected(release, "qrels_dev.txt", p.read_text(encoding="utf-8")) for n, p in runs.items()}
    got = dict(zip(comp.summary["run"], comp.summary["value"], strict=True))
    assert got == pytest.approx(expected, abs=1e-12)
    assert comp.summary["ci_low"].notna().all()
    # the paired t test on the topics (missing topics score 0 under the page's rules), by scipy
    pq = comp.per_query.pivot(index="query_id", columns="run", values="value")
    row = comp.pairwise[(comp.pairwise["run"] == "a") & (comp.pairwise["other"] == "c")].iloc[0]
    assert row.delta == pytest.approx(expected["a"] - expected["c"], abs=1e-12)
    assert row.p_value == pytest.approx(scipy_stats.ttest_rel(pq["a"], pq["c"]).pvalue, rel=1e-9)


def test_plain_compare_unchanged_and_benchmark_arguments_checked(release, runs):
    with pytest.raises(TypeError, match="benchmark"):
        rm.compare(runs, data=release)
    with pytest.raises(TypeError, match="qrels"):
        rm.compare(runs, "qrels.txt", benchmark="reteco-1a", data=release)
    qrels = {"q1": {"d1": 1}}
    plain = rm.compare({"x": {"q1": {"d1": 1.0}}, "y": {"q1": {"d2": 1.0}}}, qrels, ["P@1"], n_resamples=10)
    assert list(plain.summary["value"]) == [1.0, 0.0]


def test_cli_compare_benchmark_rules_kit(release, runs, capsys):
    runs = {n: runs[n] for n in ("a", "c")}
    expected = {n: _kit_expected(release, "qrels_dev.txt", p.read_text(encoding="utf-8")) for n, p in runs.items()}
    code = cli_main(["compare", "--benchmark", "reteco-1a", "--data", str(release), "--split", "dev",
                     "--rules", "kit", *map(str, runs.values()), "--resamples", "200", "--format", "json"])
    captured = capsys.readouterr()
    # a's top 10 is judged far less than c's: the leaderboard's Judged@10 warning, an input warning (exit 1)
    assert code == 1 and "run 'a': Judged@k" in captured.err, captured.err
    out = json.loads(captured.out)
    got = {r["run"]: r["value"] for r in out["summary"]}
    assert got == pytest.approx(expected, abs=1e-12)
    assert "rules: kit" in captured.err
    # --data without --benchmark is a usage error (exit 2), not silently ignored
    assert cli_main(["compare", str(runs["a"]), str(runs["c"]), "nDCG@10",
                     "--data", str(release)]) == 2
