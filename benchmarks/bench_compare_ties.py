"""compare's tie sensitivity: ``rm.compare`` on tie-heavy runs (scores rounded to 2 decimals)
against the per-query evaluation of the same runs (``rm.iter_calc`` of each run) and against
``rm.compare(ties=False)``; ranx's ``compare`` where installed. One process, rounds interleaved.

    python benchmarks/bench_compare_ties.py [--runs 5] [--queries 1000] [--docs 200] [--rounds 3] [--md out.md]

Not part of the test suite.
"""

from __future__ import annotations

import statistics
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _interleave import interleaved, peak_mib, report, size_parser  # noqa: E402

MEASURES = ["nDCG@10", "AP", "RR", "R@100", "P@10"]


def build(n_runs: int, n_queries: int, n_docs: int, seed: int = 0) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Qrels (30 judged documents a query, grades 0-3) and ``n_runs`` runs whose scores have two
    decimals (about a hundred distinct scores a query: ties everywhere)."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), n_docs)
    d = np.tile(np.array([f"d{j}" for j in range(n_docs * 2)], dtype=object)[:n_docs], n_queries)
    runs = {}
    for r in range(n_runs):
        runs[f"run{r}"] = pd.DataFrame({"query_id": pd.array(q, dtype="str"), "doc_id": pd.array(d, dtype="str"),
                                        "score": np.round(rng.random(len(q)), 2)})
    rows = []
    for i in range(n_queries):
        for j, g in zip(rng.choice(n_docs * 2, 30, replace=False).tolist(), rng.integers(0, 4, 30).tolist()):
            rows.append((f"q{i}", f"d{j}", g))
    qrels = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    return qrels, runs


def main(argv: list[str] | None = None) -> int:
    ap = size_parser(__doc__, queries=1000, docs=200)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    import reteco_measures as rm

    qrels, runs = build(args.runs, args.queries, args.docs)

    def per_query() -> None:
        for run in runs.values():
            list(rm.iter_calc(MEASURES, qrels, run))

    def compare_ties() -> None:
        rm.compare(runs, qrels, MEASURES, n_resamples=1000)

    def compare_no_ties() -> None:
        rm.compare(runs, qrels, MEASURES, n_resamples=1000, ties=False)

    paths = {"rm.iter_calc per run": per_query, "rm.compare": compare_ties, "rm.compare(ties=False)": compare_no_ties}
    try:
        import ranx

        ranx_qrels = ranx.Qrels.from_df(qrels.astype({"query_id": object, "doc_id": object}), q_id_col="query_id",
                                        doc_id_col="doc_id", score_col="relevance")
        ranx_runs = [ranx.Run.from_df(r.astype({"query_id": object, "doc_id": object}), q_id_col="query_id",
                                      doc_id_col="doc_id", score_col="score", name=n) for n, r in runs.items()]

        def ranx_compare() -> None:
            ranx.compare(ranx_qrels, ranx_runs, ["ndcg@10", "map", "mrr", "recall@100", "precision@10"],
                         n_permutations=1000, max_p=0.05)

        paths["ranx.compare"] = ranx_compare
    except ImportError:
        pass
    if args.peak:
        print(peak_mib(paths[args.peak]))
        return 0
    times = interleaved(paths, args.rounds)
    sizes = ["--runs", str(args.runs), "--queries", str(args.queries), "--docs", str(args.docs)]
    title = (f"compare, tie sensitivity: {args.runs} runs x {args.queries} queries x {args.docs} documents "
             f"({args.runs * args.queries * args.docs:,} rows), scores with 2 decimals; {', '.join(MEASURES)}; "
             f"1000 resamples; median of {args.rounds} interleaved rounds")
    report(__file__, paths, times, "rm.iter_calc per run", sizes, title, "ratio to the per-query evaluation", args.md)
    # each round's time over the same round's per-query evaluation: the load hits both alike
    base = times["rm.iter_calc per run"]
    rounds = "\n".join(f"- {name}: " + ", ".join(f"{t / b:.2f}" for t, b in zip(times[name], base))
                       + f" (median {statistics.median(t / b for t, b in zip(times[name], base)):.2f})"
                       for name in paths if name != "rm.iter_calc per run")
    text = f"Ratio to the per-query evaluation in each round:\n\n{rounds}\n"
    print(text)
    if args.md:
        with open(args.md, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
