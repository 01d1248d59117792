"""The six measures people mix, with MS MARCO's ``RR@10``, from DataFrames: ours against
pytrec_eval (``recip_rank``: pytrec_eval has no cutoff on RR), ir_measures and ranx (where
installed), in one process, rounds interleaved.

    python benchmarks/bench_rr10.py [--queries 1000] [--docs 1000] [--rounds 3] [--md out.md]

Every path starts from the same two pandas DataFrames (``query_id, doc_id, relevance`` and
``query_id, doc_id, score``): pytrec_eval is timed twice, on dicts built beforehand (not timed,
its own speed) and with the dict building counted (what a DataFrame costs it); ir_measures
takes the DataFrames itself; ranx builds its ``Qrels``/``Run`` with ``from_df`` (counted; numba
warmed up once before the rounds). Checks that our five pytrec_eval measures equal pytrec_eval's
to 1e-9 and our ``RR@10`` equals ir_measures' (MS MARCO's definition) on a run without ties in the
top 10. Prints the median seconds, the ratio to pytrec_eval on prebuilt dicts and the peak memory
of each path (each in its own interpreter). Not part of the test suite.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _interleave import interleaved, peak_mib, report, size_parser  # noqa: E402

MEASURES = ["nDCG@10", "nDCG@1000", "AP", "RR@10", "R@100", "P@10"]
PYTREC = {"ndcg_cut.10,1000", "map", "recip_rank", "recall.100", "P.10"}
PYTREC_KEYS = ["ndcg_cut_10", "ndcg_cut_1000", "map", "recip_rank", "recall_100", "P_10"]
RANX = ["ndcg@10", "ndcg@1000", "map", "mrr@10", "recall@100", "precision@10"]


def build(n_queries: int, n_docs: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(qrels, run) DataFrames with Arrow string ids: each query's documents with distinct scores
    (best first, as a system writes its run), 50 judged documents a query, grades 0-3."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), n_docs)
    d = np.tile(np.array([f"d{j}" for j in range(n_docs)], dtype=object), n_queries)
    perm = np.argsort(rng.random((n_queries, n_docs)), axis=1)
    score = (n_docs - np.argsort(perm, axis=1)).astype(np.float64).ravel() / n_docs
    order = np.lexsort((-score, np.repeat(np.arange(n_queries), n_docs)))
    run = pd.DataFrame({"query_id": pd.array(q[order], dtype="str"), "doc_id": pd.array(d[order], dtype="str"),
                        "score": score[order]})
    picks = np.argsort(rng.random((n_queries, 2 * n_docs)), axis=1)[:, :50]
    qrels = pd.DataFrame({
        "query_id": pd.array(np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), 50), dtype="str"),
        "doc_id": pd.array(np.array([f"d{j}" for j in picks.ravel()], dtype=object), dtype="str"),
        "relevance": rng.integers(0, 4, n_queries * 50),
    })
    return qrels, run


def to_dicts(qrels: pd.DataFrame, run: pd.DataFrame) -> tuple[dict, dict]:
    """pytrec_eval's input from the DataFrames (the usual groupby idiom)."""
    qd: dict = {}
    for qid, doc, rel in zip(qrels["query_id"].tolist(), qrels["doc_id"].tolist(), qrels["relevance"].tolist()):
        qd.setdefault(qid, {})[doc] = int(rel)
    rd: dict = {}
    for qid, doc, s in zip(run["query_id"].tolist(), run["doc_id"].tolist(), run["score"].tolist()):
        rd.setdefault(qid, {})[doc] = float(s)
    return qd, rd


def main(argv: list[str] | None = None) -> int:
    ap = size_parser(__doc__, queries=1000, docs=1000)
    args = ap.parse_args(argv)

    import ir_measures
    import pytrec_eval

    import reteco_measures as rm

    qrels, run = build(args.queries, args.docs)
    qrels_d, run_d = to_dicts(qrels, run)
    parsed = [ir_measures.parse_measure(m) for m in MEASURES]

    def ours() -> dict:
        return rm.calc_aggregate(MEASURES, qrels, run)

    def pytrec_prebuilt() -> dict:
        per_query = pytrec_eval.RelevanceEvaluator(qrels_d, PYTREC).evaluate(run_d)
        return {k: sum(v[k] for v in per_query.values()) / len(per_query) for k in PYTREC_KEYS}

    def pytrec_from_frames() -> dict:
        qd, rd = to_dicts(qrels, run)
        per_query = pytrec_eval.RelevanceEvaluator(qd, PYTREC).evaluate(rd)
        return {k: sum(v[k] for v in per_query.values()) / len(per_query) for k in PYTREC_KEYS}

    def irm() -> dict:
        return ir_measures.calc_aggregate(parsed, qrels, run)

    paths = {"reteco-measures (DataFrames)": ours, "pytrec_eval, dicts prebuilt": pytrec_prebuilt,
             "pytrec_eval, dicts built from the DataFrames": pytrec_from_frames,
             "ir_measures (DataFrames)": irm}
    try:
        import ranx

        qrels_o = qrels.astype({"query_id": object, "doc_id": object})
        run_o = run.astype({"query_id": object, "doc_id": object})

        def ranx_path() -> dict:
            return ranx.evaluate(ranx.Qrels.from_df(qrels_o, q_id_col="query_id", doc_id_col="doc_id",
                                                    score_col="relevance"),
                                 ranx.Run.from_df(run_o, q_id_col="query_id", doc_id_col="doc_id",
                                                  score_col="score"), RANX)

        paths["ranx (from_df, after numba warm-up)"] = ranx_path
    except ImportError:
        pass

    if args.peak:
        print(peak_mib(paths[args.peak]))
        return 0
    got = {rm.measure_label(m): v for m, v in ours().items()}
    ref = pytrec_prebuilt()
    for name, key in zip(MEASURES, PYTREC_KEYS):
        if name == "RR@10":
            continue
        if not math.isclose(got[name], ref[key], rel_tol=0, abs_tol=1e-9):
            raise SystemExit(f"{name}: ours {got[name]!r} != pytrec_eval {ref[key]!r}")
    rr10 = irm()[ir_measures.parse_measure("RR@10")]
    if not math.isclose(got["RR@10"], rr10, rel_tol=0, abs_tol=1e-9):
        raise SystemExit(f"RR@10: ours {got['RR@10']!r} != ir_measures {rr10!r}")

    times = interleaved(paths, args.rounds)
    sizes = ["--queries", str(args.queries), "--docs", str(args.docs)]
    title = (f"Six measures with RR@10 from DataFrames: {', '.join(MEASURES)} (pytrec_eval: recip_rank for RR@10); "
             f"{args.queries} queries x {args.docs} documents = {args.queries * args.docs:,} run rows; median of "
             f"{args.rounds} interleaved rounds; values equal pytrec_eval's (RR@10: ir_measures') to 1e-9")
    report(__file__, paths, times, "pytrec_eval, dicts prebuilt", sizes, title, "ratio to pytrec_eval (dicts prebuilt)",
           args.md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
