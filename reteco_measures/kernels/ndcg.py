"""nDCG@k per unit (query, turn, step, request) under any tie policy, through the native nDCG.

One nDCG in the package: the DCG and ideal DCG are those of the native ``nDCG@k`` kernel
(`reteco_measures.kernels.standard`, verified per query against pytrec_eval's ``ndcg_cut_k`` to
1e-9, ties included). This module only feeds it: a run already ranked under the tie policy of
`.ranking` (a ``rank`` column) becomes the scores ``-rank``, so that trec_eval's order *is* that
ranking, and the qrels grades become the measure's gains.

trec_eval's ``ndcg_cut_k``: gain of a document = its qrels grade (0 for unjudged or negative
grades), discount 1/log₂(rank+1) for 1-based ranks, ideal DCG from *all* judged documents of the
query with a positive grade sorted by grade, cut at k; a query whose ideal DCG is 0 scores 0.
With ``binary=True`` every grade ≥ ``rel`` has gain 1 (RETECO/ChunQiu "binary nDCG"; identical to
``ndcg_cut_k`` on binary qrels).
"""

from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd

from .ranking import TieBreak, duplicate_pairs, rank_run, top_k
from .standard import per_query

__all__ = ["gains_frame", "ndcg_at_k", "ndcg"]


def gains_frame(qrels: pd.DataFrame, *, binary: bool = False, rel: int = 1) -> pd.DataFrame:
    """``query_id, doc_id, gain`` from qrels (last judgment of a repeated pair wins)."""
    q = qrels[["query_id", "doc_id", "relevance"]].drop_duplicates(["query_id", "doc_id"], keep="last")
    grades = q["relevance"].to_numpy(dtype=np.int64)
    gain = (grades >= rel).astype(np.float64) if binary else np.maximum(grades, 0).astype(np.float64)
    return pd.DataFrame({"query_id": q["query_id"].to_numpy(), "doc_id": q["doc_id"].to_numpy(), "gain": gain})


def ndcg_at_k(
    ranked: pd.DataFrame,
    gains: pd.DataFrame,
    k: int | None,
    query_ids: pd.Index | np.ndarray | list | None = None,
) -> pd.Series:
    """nDCG@k per query for an already ranked run (``query_id, doc_id, rank``; ranks unique
    within a query) and a gains frame (`gains_frame`): the native ``nDCG@k`` of the top ``k``
    rows scored ``-rank`` against the gains as grades.

    ``query_ids``: the queries to report (default: every query of the gains frame); a query
    absent from the run scores 0, a query without a positive gain scores 0 (trec_eval).
    """
    if query_ids is None:
        query_ids = pd.unique(gains["query_id"].to_numpy())
    index = pd.Index(query_ids, dtype="str", name="query_id")
    top = top_k(ranked, k)
    # scores -rank: exact in trec_eval's float32 for ranks below 2**24
    run = pd.DataFrame({"query_id": top["query_id"].to_numpy(), "doc_id": top["doc_id"].to_numpy(),
                        "score": -top["rank"].to_numpy(dtype=np.float64)})
    grades = pd.DataFrame({"query_id": gains["query_id"].to_numpy(), "doc_id": gains["doc_id"].to_numpy(),
                           "relevance": gains["gain"].to_numpy(dtype=np.int64)})
    measure = ir_measures.nDCG @ k if k is not None else ir_measures.nDCG
    qids, values = per_query([measure], grades, run)
    found = pd.Series(values[measure], index=pd.Index(qids.to_numpy(zero_copy_only=False), dtype="str"))
    return pd.Series(found.reindex(index, fill_value=0.0).to_numpy(dtype=np.float64), index=index, name="ndcg")


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
