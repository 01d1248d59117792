"""``Benchmark.score(..., stream=True)`` / ``rm.leaderboard(..., stream=True)``: a run file scored in
blocks of whole queries gives the in-memory Score, value for value (benchmarks/streaming.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks import BENCHMARKS
from reteco_measures.benchmarks import streaming as streaming_module
from reteco_measures.benchmarks.streaming import reachable_rows, stream_score
from reteco_measures.errors import DataFormatError
from reteco_measures.sample import sample_root

#: a few hundred bytes per block: the bundled sample runs are cut into many blocks
SMALL = 300


def _demo(name: str) -> tuple:
    kw = dict(BENCHMARKS[name].cli.demo(sample_root()))
    run, data, split = kw.pop("run"), kw.pop("data"), kw.pop("split", None)
    return run, data, split, kw


def _problems(score) -> list[str]:
    return sorted(json.dumps(p.as_dict(), sort_keys=True) for p in score.report.errors)


def _same_score(memory, streamed) -> None:
    """Every number and table of the two Scores equal (bit for bit); the same problems."""
    pd.testing.assert_frame_equal(memory.per_query_long, streamed.per_query_long, check_exact=True)
    assert json.dumps(memory.per_query_long.attrs, sort_keys=True, default=str) == \
        json.dumps(streamed.per_query_long.attrs, sort_keys=True, default=str)  # NaN == NaN here
    pd.testing.assert_frame_equal(memory.summary, streamed.summary, check_exact=True)
    pd.testing.assert_frame_equal(memory.per_query, streamed.per_query, check_exact=True)
    assert memory.by_group.keys() == streamed.by_group.keys()
    for key in memory.by_group:
        pd.testing.assert_frame_equal(memory.by_group[key], streamed.by_group[key], check_exact=True)
    assert memory.official == streamed.official or (np.isnan(memory.official) and np.isnan(streamed.official))
    assert (memory.valid, memory.reward, memory.notes, memory.removed) == \
        (streamed.valid, streamed.reward, streamed.notes, streamed.removed)
    assert _problems(memory) == _problems(streamed)
    assert memory.report.missing_queries == streamed.report.missing_queries
    assert memory.report.rows_kept == streamed.report.rows_kept
    a, b = memory.to_dict(), streamed.to_dict()
    for d in (a, b):
        d["validation"]["problems"] = sorted(json.dumps(p, sort_keys=True) for p in d["validation"]["problems"])
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


class _Blocks:
    """Counts the blocks a streamed score validates."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.n = 0
        original = streaming_module._Merged.add

        def add(merged, *args, **kwargs):
            self.n += 1
            return original(merged, *args, **kwargs)

        monkeypatch.setattr(streaming_module._Merged, "add", add)


@pytest.mark.parametrize(("name", "options"), [
    ("reteco-1a", {}),
    # the option variants take 2-3 s each: slow (CI runs them; the inner loop keeps one per benchmark)
    pytest.param("reteco-1a", {"corpus_scope": "all"}, marks=pytest.mark.slow),
    ("reteco-1b", {}),  # averaged per query: a query's step topics are one unit
    pytest.param("reteco-1b", {"average": "step"}, marks=pytest.mark.slow),
    ("reteco-2a", {}),
    pytest.param("reteco-2a", {"average": "conversation"}, marks=pytest.mark.slow),
])
def test_bundled_sample_streamed_equals_in_memory(name: str, options: dict, monkeypatch) -> None:
    run, data, split, kw = _demo(name)
    kw.update(options)
    bench = BENCHMARKS[name]
    memory = bench.score(run, data=data, split=split, **kw)
    blocks = _Blocks(monkeypatch)
    streamed = stream_score(bench, run, data, split, options=kw, block_bytes=SMALL)
    assert blocks.n >= 5  # really cut into blocks
    assert memory.removed.get("duplicate", 0) > 0  # the sample holds problems the contract reports
    _same_score(memory, streamed)
    # the public keyword (default blocks: the whole sample in one)
    _same_score(memory, bench.score(run, data=data, split=split, stream=True, **kw))


def _bigger_run(tmp_path: Path, name: str) -> Path:
    """The bundled run with 40 more documents per query (from the corpus, some of them other
    domains' or repeated, scores tied around the 10th), so that a query's rows go far past the
    cutoff and the rows kept by a streamed Score are fewer than those scored."""
    run, data, split, kw = _demo(name)
    inputs = BENCHMARKS[name].load_inputs(data, split, **kw)
    docs = inputs.corpus["doc_id"].astype(str).to_numpy()
    rows = rm.read_run(run)
    rng = np.random.default_rng(7)
    extra = []
    for qid in pd.unique(rows["query_id"]):
        pick = rng.choice(docs, size=40, replace=True)
        score = np.round(rng.uniform(0, 2, size=40), 1)  # one decimal: many ties
        extra.append(pd.DataFrame({"query_id": qid, "doc_id": pick, "score": score}))
    big = pd.concat([rows[["query_id", "doc_id", "score"]], *extra], ignore_index=True)
    big = big.sort_values("query_id", kind="stable").reset_index(drop=True)
    big["rank"] = big.groupby("query_id").cumcount() + 1
    path = tmp_path / f"{name}.txt"
    lines = big["query_id"] + " Q0 " + big["doc_id"] + " " + big["rank"].astype(str) + " " + \
        big["score"].map(repr) + " big\n"
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.slow  # 4-6 s each; the bundled-sample cases cover every option in the inner loop
@pytest.mark.parametrize("name", ["reteco-1a", "reteco-1b", "reteco-2a"])
def test_deep_run_streamed_equals_in_memory(name: str, tmp_path: Path) -> None:
    run = _bigger_run(tmp_path, name)
    _, data, split, kw = _demo(name)
    bench = BENCHMARKS[name]
    memory = bench.score(run, data=data, split=split, **kw)
    streamed = stream_score(bench, run, data, split, options=kw, block_bytes=2000)
    _same_score(memory, streamed)
    # only the rows that can reach the top 10 are held, and every one of them is
    assert len(streamed.report.run) < memory.report.rows_kept
    pd.testing.assert_frame_equal(reachable_rows(memory.report.run, 10), streamed.report.run)


def test_reachable_rows_by_hand() -> None:
    run = pd.DataFrame({"query_id": ["a"] * 5 + ["b"] * 2,
                        "doc_id": ["d1", "d2", "d3", "d4", "d5", "e1", "e2"],
                        "score": [5.0, 3.0, 3.0, 1.0, 3.0000001, 1.0, 2.0]})
    # a, k=2: scores 5, 3.0000001 (== 3 at single precision), 3, 3, 1 -> the 2nd best is 3: d1,d2,d3,d5
    # b has fewer than 2 rows: both
    got = reachable_rows(run, 2)
    assert got["doc_id"].tolist() == ["d1", "d2", "d3", "d5", "e1", "e2"]
    assert reachable_rows(run, 1)["doc_id"].tolist() == ["d1", "e2"]


def test_problem_lines_are_the_files(tmp_path: Path) -> None:
    """A duplicate and a bad line in a late block keep their file line numbers."""
    run, data, split, kw = _demo("reteco-1a")
    text = Path(run).read_text(encoding="utf-8").splitlines()
    last = text[-1].split()
    text += [" ".join(last), "not a run line", " ".join([last[0], "Q0", last[2], "99", "0.5", "x"])]
    path = tmp_path / "late.txt"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    bench = BENCHMARKS["reteco-1a"]
    streamed = stream_score(bench, path, data, split, options=kw, block_bytes=SMALL)
    n = len(text)
    dup = [p for p in streamed.report.errors if p.kind == "duplicate" and p.line in (n - 2, n)]
    assert [p.line for p in dup] == [n - 2, n]
    assert f"(first at line {n - 3})" in dup[0].message
    assert [p.line for p in streamed.report.errors if p.kind == "format"] == [n - 1]
    _same_score(bench.score(path, data=data, split=split, **kw), streamed)


def test_query_split_over_blocks_is_refused(tmp_path: Path) -> None:
    run, data, split, kw = _demo("reteco-1a")
    lines = Path(run).read_text(encoding="utf-8").splitlines()
    first = lines[0].split()[0]
    moved = [i for i, line in enumerate(lines) if line.split()[0] == first][-1]
    text = lines[:moved] + lines[moved + 1:] + [lines[moved]]  # one row of the first query, last
    path = tmp_path / "ungrouped.txt"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    bench = BENCHMARKS["reteco-1a"]
    bench.score(path, data=data, split=split, **kw)  # in memory: scored
    with pytest.raises(DataFormatError) as err:
        stream_score(bench, path, data, split, options=kw, block_bytes=SMALL)
    problem = err.value.problems[0]
    assert (problem.query_id, problem.line, problem.kind) == (first, len(text), "order")
    assert "sort the run by query" in str(err.value)


@pytest.mark.slow  # 4 s; test_query_split_over_blocks_is_refused keeps the refusal in the inner loop
def test_steps_of_a_query_split_over_blocks_are_refused(tmp_path: Path) -> None:
    """1b averaged per query: a query's step topics must be together (StepNDCG averages them)."""
    run, data, split, kw = _demo("reteco-1b")
    lines = Path(run).read_text(encoding="utf-8").splitlines()
    first = lines[0].split()[0]
    rest = [line for line in lines if line.split()[0] != first]
    own = [line for line in lines if line.split()[0] == first]
    path = tmp_path / "steps.txt"
    path.write_text("\n".join(rest + own) + "\n", encoding="utf-8")  # still grouped by step topic
    bench = BENCHMARKS["reteco-1b"]
    memory = bench.score(path, data=data, split=split, **kw)
    # the first step topic is now last, away from its query's other steps
    with pytest.raises(DataFormatError, match="are not together"):
        stream_score(bench, path, data, split, options=kw, block_bytes=SMALL)
    # averaged per step, each step topic is its own unit: streamed
    _same_score(bench.score(path, data=data, split=split, average="step", **kw),
                stream_score(bench, path, data, split, options={**kw, "average": "step"}, block_bytes=SMALL))
    assert memory.official == memory.official


@pytest.mark.parametrize(("name", "options", "why"), [
    ("chunqiu", {}, "valid or invalid as a whole"),
    ("spoken", {}, "checks the whole results file"),
    ("reteco-1a", {"rules": "kit"}, "--rules kit"),
    ("reteco-2a", {"rules": "kit"}, "--rules kit"),
])
def test_benchmarks_that_cannot_stream_say_why(name: str, options: dict, why: str) -> None:
    run, data, split, kw = _demo(name)
    with pytest.raises(ValueError, match="cannot be scored in blocks") as err:
        BENCHMARKS[name].score(run, data=data, split=split, stream=True, **{**kw, **options})
    assert why in str(err.value) and "without --stream" in str(err.value)


def test_stream_needs_a_file() -> None:
    run, data, split, kw = _demo("reteco-1a")
    with pytest.raises(ValueError, match="reads a run \\*file\\*"):
        BENCHMARKS["reteco-1a"].score(rm.read_run(run), data=data, split=split, stream=True, **kw)


def test_empty_file_as_in_memory(tmp_path: Path) -> None:
    run, data, split, kw = _demo("reteco-1a")
    for text in ("", "garbage line\n"):
        path = tmp_path / "empty.txt"
        path.write_text(text, encoding="utf-8")
        bench = BENCHMARKS["reteco-1a"]
        _same_score(bench.score(path, data=data, split=split, **kw),
                    stream_score(bench, path, data, split, options=kw, block_bytes=SMALL))


def test_leaderboard_streamed_equals_in_memory(tmp_path: Path) -> None:
    run, data, split, kw = _demo("reteco-1a")
    big = _bigger_run(tmp_path, "reteco-1a")
    lines = Path(run).read_text(encoding="utf-8").splitlines()
    worse = tmp_path / "worse.txt"
    worse.write_text("\n".join(" ".join(line.split()[:4] + [str(-float(line.split()[4]))] + line.split()[5:])
                               for line in lines) + "\n", encoding="utf-8")
    runs = {"sample": Path(run), "big": big, "worse": worse}
    memory = rm.leaderboard("reteco-1a", runs, data=data, split=split, n_resamples=200, workers=1, **kw)
    streamed = rm.leaderboard("reteco-1a", runs, data=data, split=split, n_resamples=200, workers=1, stream=True,
                              **kw)
    pd.testing.assert_frame_equal(memory.ranking, streamed.ranking, check_exact=True)
    pd.testing.assert_frame_equal(memory.pairwise, streamed.pairwise, check_exact=True)
    assert memory.to_records() == streamed.to_records()
    with pytest.raises(ValueError, match="cannot be scored in blocks"):
        c_run, c_data, _, c_kw = _demo("chunqiu")
        rm.leaderboard("chunqiu", [c_run, c_run], data=c_data, stream=True, **c_kw)


def test_deep_run_streamed_official_by_pytrec_eval(tmp_path: Path) -> None:
    """The streamed 1a number against pytrec_eval: the RETECO rules written out here (first
    occurrence of a repeated document kept, documents outside the corpus dropped, corpus scope
    'all'), ``ndcg_cut_10`` per query of the qrels (0 for a query without rows), averaged."""
    import pytrec_eval

    run = _bigger_run(tmp_path, "reteco-1a")
    _, data, split, kw = _demo("reteco-1a")
    bench = BENCHMARKS["reteco-1a"]
    inputs = bench.load_inputs(data, split, **kw)
    corpus = set(inputs.corpus["doc_id"].astype(str))
    qrels: dict[str, dict[str, int]] = {}
    for q, d, r in inputs.qrels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
        qrels.setdefault(str(q), {})[str(d)] = int(r)
    rows: dict[str, dict[str, float]] = {}
    for line in run.read_text(encoding="utf-8").splitlines():
        q, _, d, _, s, _ = line.split()
        if d in corpus and d not in rows.get(q, {}):
            rows.setdefault(q, {})[d] = float(s)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(
        {q: r for q, r in rows.items() if q in qrels})
    expected = sum(per_query.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"] for q in qrels) / len(qrels)
    streamed = stream_score(bench, run, data, split, options={**kw, "corpus_scope": "all"}, block_bytes=2000)
    assert streamed.official == pytest.approx(expected, abs=1e-12)
    by_query = streamed.per_query.set_index("query_id")["nDCG@10"]
    for q in qrels:
        assert by_query[q] == pytest.approx(per_query.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"], abs=1e-9)


@pytest.mark.slow
def test_streamed_score_peaks_lower_on_a_large_run(tmp_path: Path) -> None:
    """benchmarks/bench_stream.py score: a 600,000-row run of a synthetic RETECO release, each mode
    in a fresh process; the streamed Score's tables equal the in-memory ones (the script checks
    their SHA-256) and its peak resident-set growth is well below (0.27x measured at 1M rows)."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_stream.py"
    done = subprocess.run([sys.executable, str(script), "score", "--queries", "600", "--depth", "1000",
                           "--docs", "50000", "--block-mb", "2", "--keep", str(tmp_path / "release")],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout[done.stdout.index("{"):])
    assert result["memory"]["tables_sha256"] == result["stream"]["tables_sha256"]
    assert result["memory"]["growth_mb"] > 50
    assert result["growth_ratio"] < 0.6, result
