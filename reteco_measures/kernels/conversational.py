"""Conversational retrieval kernels: ``TurnNDCG`` (RETECO sub-tracks 2a / 2c, RECOR).

A *target turn* is one query. Its value is binary nDCG@k (trec_eval ``ndcg_cut_k`` on binary
gains, computed by `reteco_measures.kernels.ndcg.ndcg_at_k`); a turn of the qrels that is
missing from the run scores 0.

Aggregation (``average``):

* ``'turn'`` (default, RETECO official): every turn has weight 1, so the aggregate is the macro
  mean over turns;
* ``'conversation'`` (RECOR ablations): every turn has weight 1/|turns of its conversation in the
  qrels|, so the weighted mean that `WeightedMeanAgg`
  computes inside a plain ``ir_measures.calc_aggregate`` call *is* the mean over conversations of
  the per-conversation means. Per-turn values are unchanged; only the weights differ.

Conversation of a turn: the ``conversation_id`` column of the topics when the topics list the
turn, else the id form ``<conversation_id>_turn_<t>`` (also accepted: the organiser-sample form
``<conversation_id>#turn<t>``), else the turn is its own conversation.
"""

from __future__ import annotations

import re

import ir_measures
import numpy as np
import pandas as pd

from ..measures.params import param
from .context import EvalContext, implements
from .ndcg import ndcg_at_k

__all__ = ["turn_ndcg", "turn_parts", "TURN_ID_PATTERN"]

#: ``<conversation_id>_turn_<t>`` (RETECO/RECOR) or ``<conversation_id>#turn<t>`` (organiser sample)
TURN_ID_PATTERN = re.compile(r"^(?P<conversation_id>.+?)(?:_turn_|#turn)(?P<turn>\d+)$")


def turn_parts(query_ids: pd.Index | pd.Series | list, topics: pd.DataFrame | None = None) -> pd.DataFrame:
    """Conversation id and turn number of each query id.

    Topics columns ``conversation_id`` / ``turn`` win where the topics list the query; otherwise
    both come from the id form ``<conversation_id>_turn_<t>`` (or ``<conversation_id>#turn<t>``).
    An id matching neither is its own conversation with turn ``<NA>``.

    Returns:
        DataFrame with ``query_id`` (str), ``conversation_id`` (str) and ``turn`` (Int64), in the
        order of ``query_ids``.
    """
    qids = pd.Series(list(query_ids), dtype="str", name="query_id").reset_index(drop=True)
    parsed = qids.str.extract(TURN_ID_PATTERN)
    conv = (
        parsed["conversation_id"].astype(object).where(parsed["conversation_id"].notna(), qids.astype(object))
    )
    turn = pd.to_numeric(parsed["turn"], errors="coerce").astype("Int64")
    if topics is not None and len(topics) and "query_id" in topics.columns:
        meta = topics.drop_duplicates("query_id").set_index("query_id")
        if "conversation_id" in meta.columns:
            from_topics = qids.map(meta["conversation_id"])
            conv = from_topics.astype(object).where(from_topics.notna(), conv)
        if "turn" in meta.columns:
            from_topics = pd.to_numeric(qids.map(meta["turn"]), errors="coerce").astype("Int64")
            turn = from_topics.where(from_topics.notna(), turn)
    return pd.DataFrame({"query_id": qids, "conversation_id": conv.astype(str).to_numpy(), "turn": turn})


@implements("TurnNDCG")
def turn_ndcg(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    """Binary nDCG@k per target turn of the qrels, weighted for the requested ``average``."""
    k = param(measure, "cutoff")
    rel = int(param(measure, "rel", 1))
    average = param(measure, "average", "turn")
    qids = ctx.query_ids
    values = ndcg_at_k(ctx.ranked_for(measure), ctx.gains(binary=True, rel=rel), k, qids)
    frame = pd.DataFrame({"query_id": values.index.to_numpy(dtype=object), "value": values.to_numpy()})
    if average == "turn":
        frame["weight"] = 1.0
    elif average == "conversation":
        parts = turn_parts(qids, ctx.topics_for(measure))
        sizes = parts.groupby("conversation_id")["query_id"].transform("size").to_numpy(dtype=np.float64)
        frame["weight"] = 1.0 / sizes
    else:  # validate_params rejects this; kept for direct calls
        raise ValueError(f"TurnNDCG average must be 'turn' or 'conversation', not {average!r}")
    return frame
