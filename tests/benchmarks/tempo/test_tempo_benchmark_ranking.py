"""``reteco-1a`` ranks a run once: the contract's trec_eval ranking of the rows it keeps is the one
the temporal and the standard measures read (no second sort, no second duplicate check), its
``report.run`` ranks are those of the scored rows, and every number is what it was when the
evaluation ranked the run itself (and, for nDCG@10, pytrec_eval's ``ndcg_cut_10``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from tempo_tree import write_domain

import reteco_measures as rm
from reteco_measures.benchmarks import scoring
from reteco_measures.benchmarks.tempo import benchmark as tempo_benchmark
from reteco_measures.kernels import context, standard
from reteco_measures.providers import evaluator

DOMAINS = ("bitcoin", "law")


@pytest.fixture
def release(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """Two domains of 40 documents, 6 queries each with 3 gold documents, and a run of 30 rows
    per query with tied scores, a repeated document, a document outside every corpus and one of
    the other domain's corpus ranked first."""
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))
    monkeypatch.delenv("RETECO_DATA", raising=False)
    rng = np.random.default_rng(7)
    root = tmp_path / "data"
    lines = []
    for d, dom in enumerate(DOMAINS):
        docs = [f"{dom}/{i:03d}.txt" for i in range(40)]
        queries = []
        for j in range(6):
            qid = f"{9 - 8 * d}{5 - j}0_{d * 6 + j}"  # the run's query order is not their byte order
            picks = [docs[i] for i in rng.choice(40, 30, replace=False)]
            queries.append((qid, [picks[:2], [docs[int(rng.integers(0, 40))]]]))
            other = f"{DOMAINS[1 - d]}/{int(rng.integers(0, 40)):03d}.txt"
            ranked = [other, *picks[:27], f"{dom}/missing_{j}.txt", picks[3]]  # another domain's, unknown, repeat
            scores = np.round(rng.random(len(ranked)) * 3, 1)  # ties
            scores[0] = 9.0
            lines += [f"{qid} Q0 {doc} {r} {s} run\n" for r, (doc, s) in enumerate(zip(ranked, scores), start=1)]
        write_domain(root, dom, queries, docs)
    run = tmp_path / "run.txt"
    run.write_text("".join(lines), encoding="utf-8")
    return root, run


def trec_eval_ranks(run: pd.DataFrame) -> list[int]:
    """trec_eval's rank of every row, by hand: per query, score descending as a C float, then
    doc id descending (strcmp)."""
    rank = {}
    for _, rows in run.groupby("query_id", sort=False):
        key = sorted(((-float(np.float32(s)), [-b for b in d.encode()] + [1], i)
                      for i, d, s in zip(rows.index, rows["doc_id"], rows["score"], strict=True)))
        rank.update({i: r for r, (_, _, i) in enumerate(key, start=1)})
    return [rank[i] for i in run.index]


def test_the_run_is_ranked_once(release, monkeypatch):
    root, run = release
    calls = []

    def spy(name, real):
        def call(*args, **kwargs):
            run = args[0]
            calls.append((name, run.n if isinstance(run, standard.PreparedRun) else len(run)))
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(context, "rank_run", spy("rank_run", context.rank_run))
    monkeypatch.setattr(evaluator, "duplicate_pairs", spy("duplicate_pairs", evaluator.duplicate_pairs))
    monkeypatch.setattr(standard.PreparedRun, "duplicate_rows",
                        spy("duplicate_rows", standard.PreparedRun.duplicate_rows))
    score = rm.benchmark("reteco-1a").score(str(run), data=root, split="dev")
    assert score.removed["other_domain_doc"] == 12 and score.removed["duplicate"] == 12
    # the contract ranked the kept rows: the evaluation neither sorts the run nor looks for repeats
    # in it again (nDCG|FC's kernel prepares each query's top 10 rows only)
    n = len(score.report.run)
    assert n == 12 * 27 and [c for c in calls if c[1] >= n] == [] and calls
    assert all(c == ("duplicate_rows", 12 * 10) for c in calls)
    monkeypatch.undo()
    # another tie policy: the evaluation ranks the run itself
    rm.benchmark("reteco-1a").score(str(run), data=root, split="dev", tie_break="stable")


def test_report_ranks_are_the_scored_rows_trec_eval_ranks(release):
    root, run = release
    score = rm.benchmark("reteco-1a").score(str(run), data=root, split="dev")
    cleaned = score.report.run
    # the other domain's document ranked first was removed after the contract ranked the rows:
    # the ranks are those of the rows scored (1..n per query), not of the rows read
    assert cleaned["rank"].tolist() == trec_eval_ranks(cleaned)
    assert cleaned.groupby("query_id")["rank"].min().eq(1).all()


@pytest.mark.parametrize("options", [{}, {"rules": "kit"}, {"tie_break": "stable"}, {"corpus_scope": "all"}])
def test_values_equal_the_evaluation_that_ranks_the_run_itself(release, monkeypatch, options):
    root, run = release
    bench = rm.benchmark("reteco-1a")
    shared = bench.score(str(run), data=root, split="dev", **options)
    # the same score with the contract's ranking withheld from the evaluation
    monkeypatch.setattr(tempo_benchmark, "ranked_by_contract", lambda frame: None)
    alone = bench.score(str(run), data=root, split="dev", **options)
    assert json.dumps(shared.to_dict(per_query=True), sort_keys=True) == \
        json.dumps(alone.to_dict(per_query=True), sort_keys=True)
    a, b = shared.per_query_long, alone.per_query_long
    assert a["value"].to_numpy().tobytes() == b["value"].to_numpy().tobytes()


def test_official_ndcg_is_pytrec_eval_per_query(release):
    root, run = release
    score = rm.benchmark("reteco-1a").score(str(run), data=root, split="dev")
    qrels: dict[str, dict[str, int]] = {}
    for dom in DOMAINS:
        for line in (root / "reteco" / "track1_tempo" / dom / "qrels_dev.txt").read_text().splitlines():
            q, _, d, r = line.split()
            qrels.setdefault(q, {})[d] = int(r)
    cleaned: dict[str, dict[str, float]] = {}
    for q, d, s in score.report.run[["query_id", "doc_id", "score"]].itertuples(index=False):
        cleaned.setdefault(q, {})[d] = float(s)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(cleaned)
    per_query = score.per_query.set_index("query_id")["nDCG@10"]
    for q in qrels:
        assert per_query[q] == pytest.approx(ref[q]["ndcg_cut_10"] if q in ref else 0.0, abs=1e-9)


def test_scoring_hands_the_ranking_over_only_for_this_run(release):
    root, run = release
    bench = rm.benchmark("reteco-1a")
    score = bench.score(str(run), data=root, split="dev")
    shared = tempo_benchmark.ranked_by_contract(score.report.run)
    qrels = bench.load(root, "dev", bench.resolve_options({})).qrels[["query_id", "doc_id", "relevance"]]
    measures = ["nDCG@10", "TP@10", "RR"]
    given = scoring.long_per_query(measures, qrels, shared.run, ranked=shared)
    # a copy of the run is another run: the ranking is not used, and the values are the same
    other = scoring.long_per_query(measures, qrels, shared.run.copy(), ranked=shared)
    plain = scoring.long_per_query(measures, qrels, shared.run)
    for frame in (other, plain):
        assert given["value"].to_numpy().tobytes() == frame["value"].to_numpy().tobytes()
