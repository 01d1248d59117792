"""Speed of reteco-measures against pytrec_eval, ir_measures and ranx, side by side in one run.

    python benchmarks/bench_core.py [--queries 5000] [--docs 1000] [--repeat 3]

Builds a synthetic run of Q queries x D docs (with tied scores) and qrels, then times
nDCG@10, AP@10, R@10 and RR through each tool, and file reading. Prints seconds (best of
``--repeat``) and ratios against our path. Not part of the test suite. Needs the ``bench`` extra
(ranx).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable

import ir_measures
import numpy as np
import pandas as pd
import pytrec_eval
from ir_measures import AP, RR, R, nDCG

import reteco_measures as rm
from reteco_measures.io.convert import qrels_to_dict, run_to_dict
from reteco_measures.kernels import ndcg as ndcg_kernel


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def build(n_queries: int, n_docs: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    qids = np.array([f"q{i}" for i in range(n_queries)], dtype=object)
    pool = np.array([f"doc{i:07d}" for i in range(n_docs * 20)], dtype=object)
    docs = np.concatenate([rng.choice(pool, n_docs, replace=False) for _ in range(n_queries)])
    run = pd.DataFrame(
        {
            "query_id": np.repeat(qids, n_docs),
            "doc_id": docs,
            # rounded scores: many ties, as real systems produce
            "score": np.round(rng.random(n_queries * n_docs), 3),
        }
    ).astype({"query_id": "str", "doc_id": "str"})
    # qrels: 20 judged docs per query, half drawn from the run's top, grades 0-3
    top = run.groupby("query_id", sort=False).head(10)
    judged = pd.concat([top, run.sample(n=n_queries * 10, random_state=seed)])
    qrels = judged[["query_id", "doc_id"]].drop_duplicates().copy()
    qrels["relevance"] = rng.integers(0, 4, len(qrels))
    return qrels.reset_index(drop=True), run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    qrels, run = build(args.queries, args.docs)
    print(f"run: {len(run):,} rows ({args.queries} queries x {args.docs} docs); qrels: {len(qrels):,} rows")
    measures = [nDCG @ 10, AP @ 10, R @ 10, RR]
    results: dict[str, float] = {}

    t, ours = best_of(lambda: rm.calc_aggregate(measures, qrels, run), args.repeat)
    results["reteco_measures rm.calc_aggregate (DataFrames)"] = t
    t, _ = best_of(lambda: ndcg_kernel(qrels, run, 10).mean(), args.repeat)
    results["reteco_measures nDCG@10 kernel only (DataFrames)"] = t

    qd, rd = qrels_to_dict(qrels), run_to_dict(run)

    def pytrec() -> dict:
        ev = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut.10", "map_cut.10", "recall.10", "recip_rank"})
        return ev.evaluate(rd)

    t, ref = best_of(pytrec, args.repeat)
    results["pytrec_eval (dicts prebuilt)"] = t
    t, _ = best_of(lambda: ir_measures.calc_aggregate(measures, qd, rd), args.repeat)
    results["ir_measures.calc_aggregate (dicts)"] = t
    t, _ = best_of(lambda: ir_measures.calc_aggregate(measures, qrels, run), 1)
    results["ir_measures.calc_aggregate (DataFrames)"] = t
    try:
        import ranx

        def ranx_eval() -> dict:
            return ranx.evaluate(ranx.Qrels(qd), ranx.Run(rd), ["ndcg@10", "map@10", "recall@10", "mrr"])

        ranx_eval()  # numba compilation happens on the first call; not timed
        t, _ = best_of(ranx_eval, args.repeat)
        results["ranx.evaluate (dicts, after JIT warm-up)"] = t
    except ImportError:
        print("ranx not installed (pip install 'reteco-measures[bench]'); skipped")

    # agreement check on the way
    ref_ndcg = np.mean([v["ndcg_cut_10"] for v in ref.values()])
    assert abs(ours[nDCG @ 10] - ref_ndcg) < 1e-9, (ours[nDCG @ 10], ref_ndcg)

    base = results["reteco_measures rm.calc_aggregate (DataFrames)"]
    print(f"\nnDCG@10, AP@10, R@10, RR ({len(run):,} rows); best of {args.repeat}")
    print(f"{'path':55s} {'seconds':>8s} {'x ours':>8s}")
    for name, secs in results.items():
        print(f"{name:55s} {secs:8.2f} {secs / base:8.2f}")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.txt")
        with open(path, "w") as f:
            for q, d, r, s in zip(run["query_id"], run["doc_id"], np.tile(np.arange(1, args.docs + 1), args.queries),
                                  run["score"]):
                f.write(f"{q} Q0 {d} {r} {s} bench\n")
        reads = {}
        reads["reteco_measures rm.read_run"], _ = best_of(lambda: rm.read_run(path), args.repeat)
        reads["pandas.read_csv (C parser, sep=r'\\s+')"], _ = best_of(
            lambda: pd.read_csv(path, sep=r"\s+", header=None, dtype={0: str, 2: str}), args.repeat
        )
        reads["ir_measures.read_trec_run (list)"], _ = best_of(lambda: list(ir_measures.read_trec_run(path)), 1)
        base = reads["reteco_measures rm.read_run"]
        print(f"\nreading a {os.path.getsize(path) / 1e6:.0f} MB TREC run ({len(run):,} lines)")
        print(f"{'reader':55s} {'seconds':>8s} {'x ours':>8s}")
        for name, secs in reads.items():
            print(f"{name:55s} {secs:8.2f} {secs / base:8.2f}")


if __name__ == "__main__":
    main()
