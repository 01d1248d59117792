"""Vectorised nDCG@k with trec_eval semantics (binary or graded).

trec_eval's ``ndcg_cut_k``: gain of a document = its qrels grade (0 for unjudged or negative
grades), discount 1/log₂(rank+1) for 1-based ranks, ideal DCG from *all* judged documents of
the query with a positive grade sorted by grade, cut at k; a query whose ideal DCG is 0 scores
0. The ranking follows the tie policy of `.ranking`. With ``binary=True`` every grade
≥ ``rel`` has gain 1 (RETECO/ChunQiu "binary nDCG"; identical to ``ndcg_cut_k`` on binary
qrels). Verified per query against pytrec_eval to 1e-9 in the test suite.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .ranking import TieBreak, duplicate_pairs, rank_run, top_k

__all__ = ["gains_frame", "dcg_at_k", "ideal_dcg_at_k", "ndcg_at_k", "ndcg"]


def gains_frame(qrels: pd.DataFrame, *, binary: bool = False, rel: int = 1) -> pd.DataFrame:
    """``query_id, doc_id, gain`` from qrels (last judgment of a repeated pair wins)."""
    q = qrels[["query_id", "doc_id", "relevance"]].drop_duplicates(["query_id", "doc_id"], keep="last")
    grades = q["relevance"].to_numpy(dtype=np.int64)
    gain = (grades >= rel).astype(np.float64) if binary else np.maximum(grades, 0).astype(np.float64)
    return pd.DataFrame({"query_id": q["query_id"].to_numpy(), "doc_id": q["doc_id"].to_numpy(), "gain": gain})


def dcg_at_k(ranked: pd.DataFrame, gains: pd.DataFrame, k: int | None) -> pd.Series:
    """DCG@k per query of a ranked run (``query_id, doc_id, rank``); queries without a
    retrieved gain are absent from the result."""
    top = top_k(ranked, k)[["query_id", "doc_id", "rank"]]
    joined = top.merge(gains[gains["gain"] > 0], on=["query_id", "doc_id"], how="inner")
    if joined.empty:
        return pd.Series(dtype=np.float64)
    contrib = joined["gain"].to_numpy() / np.log2(joined["rank"].to_numpy(dtype=np.float64) + 1.0)
    return pd.Series(contrib).groupby(joined["query_id"].to_numpy(), sort=False).sum()


def ideal_dcg_at_k(gains: pd.DataFrame, k: int | None) -> pd.Series:
    """Ideal DCG@k per query from the qrels gains."""
    pos = gains[gains["gain"] > 0].sort_values(["query_id", "gain"], ascending=[True, False], kind="stable")
    if pos.empty:
        return pd.Series(dtype=np.float64)
    qids = pos["query_id"].to_numpy()
    starts = np.r_[True, qids[1:] != qids[:-1]]
    start_idx = np.flatnonzero(starts)
    rank = np.arange(len(qids)) - np.repeat(start_idx, np.diff(np.r_[start_idx, len(qids)])) + 1
    keep = rank <= k if k is not None else np.ones(len(rank), dtype=bool)
    contrib = pos["gain"].to_numpy()[keep] / np.log2(rank[keep] + 1.0)
    return pd.Series(contrib).groupby(qids[keep], sort=False).sum()


def ndcg_at_k(
    ranked: pd.DataFrame,
    gains: pd.DataFrame,
    k: int | None,
    query_ids: pd.Index | np.ndarray | list | None = None,
) -> pd.Series:
    """nDCG@k per query for an already ranked run and a gains frame.

    ``query_ids``: the queries to report (default: every query of the gains frame); a query
    absent from the run scores 0, a query without a positive gain scores 0 (trec_eval).
    """
    if query_ids is None:
        query_ids = pd.unique(gains["query_id"].to_numpy())
    index = pd.Index(query_ids, dtype="str", name="query_id")
    dcg = dcg_at_k(ranked, gains, k).reindex(index, fill_value=0.0)
    idcg = ideal_dcg_at_k(gains, k).reindex(index, fill_value=0.0)
    values = np.divide(dcg.to_numpy(), idcg.to_numpy(), out=np.zeros(len(index)), where=idcg.to_numpy() > 0)
    return pd.Series(values, index=index, name="ndcg")


def ndcg(
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    k: int | None = 10,
    *,
    binary: bool = False,
    rel: int = 1,
    tie_break: TieBreak = "trec_eval",
    corpus=None,
    query_ids=None,
) -> pd.Series:
    """nDCG@k per query (a plain function over DataFrames, scikit-learn style).

    Args:
        qrels: ``query_id, doc_id, relevance``.
        run: ``query_id, doc_id, score``.
        k: cutoff (None = whole ranking, trec_eval's ``ndcg``).
        binary: gains 1 for grade ≥ ``rel`` instead of the grade itself.
        tie_break: tie policy (see `reteco_measures.kernels.ranking`).
        query_ids: queries to report (default: the qrels' queries; missing ones score 0).

    A (query, document) pair repeated in ``run`` counts once, with its last score, as in
    pytrec_eval's ``{query: {doc: score}}`` dictionaries (a document cannot earn its gain twice).
    """
    dup = duplicate_pairs(run, keep="last")
    if dup.any():
        run = run[~dup]
    ranked = rank_run(run, tie_break, corpus=corpus)
    return ndcg_at_k(ranked, gains_frame(qrels, binary=binary, rel=rel), k, query_ids)
