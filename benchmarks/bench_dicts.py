"""Dicts in: the six measures pytrec_eval computes natively, from ``{query: {doc: value}}`` dicts
(what ir_measures and pytrec_eval users hold), ours (conversion included) against pytrec_eval
with its own dict input, ir_measures and ranx (where installed), in one process, rounds interleaved.

    python benchmarks/bench_dicts.py [--queries 1000] [--docs 1000] [--rounds 3] [--md out.md]

Prints the median seconds, the ratio to pytrec_eval and the peak memory of each path, and checks
that our aggregates equal pytrec_eval's (mean over its per-query values) to 1e-9. Not part of the
test suite.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _interleave import interleaved, peak_mib, report, size_parser  # noqa: E402

MEASURES = ["nDCG@10", "nDCG@1000", "AP", "RR", "R@100", "P@10"]
PYTREC = {"ndcg_cut.10,1000", "map", "recip_rank", "recall.100", "P.10"}
PYTREC_KEYS = ["ndcg_cut_10", "ndcg_cut_1000", "map", "recip_rank", "recall_100", "P_10"]
RANX = ["ndcg@10", "ndcg@1000", "map", "mrr", "recall@100", "precision@10"]


def build(n_queries: int, n_docs: int, seed: int = 0) -> tuple[dict, dict]:
    """(qrels, run) as dicts; scores rounded to 4 decimals (some ties), 50 judged docs a query."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random((n_queries, n_docs)), 4).tolist()
    run = {f"q{i}": {f"d{j}": s for j, s in enumerate(row)} for i, row in enumerate(scores)}
    qrels = {}
    for i in range(n_queries):
        picks = rng.choice(2 * n_docs, 50, replace=False)
        grades = rng.integers(0, 4, 50)
        qrels[f"q{i}"] = {f"d{j}": int(g) for j, g in zip(picks.tolist(), grades.tolist())}
    return qrels, run


def main(argv: list[str] | None = None) -> int:
    ap = size_parser(__doc__, queries=1000, docs=1000)
    args = ap.parse_args(argv)

    import ir_measures
    import pytrec_eval

    import reteco_measures as rm

    qrels, run = build(args.queries, args.docs)

    def pytrec() -> dict:
        per_query = pytrec_eval.RelevanceEvaluator(qrels, PYTREC).evaluate(run)
        return {k: sum(v[k] for v in per_query.values()) / len(per_query) for k in PYTREC_KEYS}

    def ours() -> dict:
        return rm.calc_aggregate(MEASURES, qrels, run)

    def irm() -> dict:
        return ir_measures.calc_aggregate([ir_measures.parse_measure(m) for m in MEASURES], qrels, run)

    paths = {"reteco-measures": ours, "pytrec_eval": pytrec, "ir_measures": irm}
    try:
        import ranx

        def ranx_path() -> dict:
            return ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), RANX)

        paths["ranx"] = ranx_path
    except ImportError:
        pass

    if args.peak:
        print(peak_mib(paths[args.peak]))
        return 0
    got, ref = ours(), pytrec()
    by_name = {rm.measure_label(m): v for m, v in got.items()}
    for name, key in zip(MEASURES, PYTREC_KEYS):
        if not math.isclose(by_name[name], ref[key], rel_tol=0, abs_tol=1e-9):
            raise SystemExit(f"{name}: ours {by_name[name]!r} != pytrec_eval {ref[key]!r}")

    times = interleaved(paths, args.rounds)
    sizes = ["--queries", str(args.queries), "--docs", str(args.docs)]
    title = (f"Dicts in: {', '.join(MEASURES)}; {args.queries} queries x {args.docs} documents = "
             f"{args.queries * args.docs:,} run rows; median of {args.rounds} interleaved rounds; values equal "
             f"pytrec_eval's to 1e-9")
    report(__file__, paths, times, "pytrec_eval", sizes, title, "ratio to pytrec_eval", args.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
