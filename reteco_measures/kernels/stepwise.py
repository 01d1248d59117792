"""Kernel of StepNDCG (RETECO sub-track 1b, step-wise retrieval).

Each step topic (a query id of the step qrels, e.g. ``124973_5_step2``) is scored with binary
nDCG@k (grade ≥ ``rel``; trec_eval's ``ndcg_cut_k`` on binary qrels; a step missing from the run
scores 0). Steps are mapped to their query:

1. by the topics column ``parent_id`` (``rm.topics("reteco/tempo/<domain>/<split>/steps")``
   carries it), else
2. by the release id form ``<query_id>_step<n>``, else
3. the step is its own query (a warning names how many ids could not be mapped).

``average='query'`` (default, RETECO): one value per query = mean over its supplied steps (the
steps of the qrels), reported under the *query* id; the aggregate is the mean over queries.
``average='step'`` (upstream TEMPO code): one value per step, reported under the step id.
"""

from __future__ import annotations

import re
import warnings

import ir_measures
import numpy as np
import pandas as pd

from ..errors import user_stacklevel
from ..measures.params import param
from .context import EvalContext, implements
from .ndcg import ndcg_at_k

__all__ = ["STEP_ID", "step_parents", "step_ndcg"]

#: the release's step id form ``<query_id>_step<n>``
STEP_ID = re.compile(r"^(?P<query>.+)_step(?P<step>\d+)$")


def step_parents(step_ids: pd.Index | list, topics: pd.DataFrame | None = None) -> tuple[pd.Series, int]:
    """Query id of every step id (see the module docs for the order of the rules).

    Returns:
        ``(parents, unmapped)``: a str Series indexed by step id, and how many ids fell back to
        being their own query.
    """
    index = pd.Index(pd.Series(list(step_ids), dtype="str"), name="query_id")
    parents = pd.Series(np.full(len(index), None, dtype=object), index=index)
    if topics is not None and "parent_id" in topics.columns:
        t = topics.drop_duplicates("query_id", keep="first")
        t = t[t["parent_id"].notna()]
        mapping = pd.Series(t["parent_id"].astype(str).to_numpy(), index=t["query_id"].astype(str).to_numpy())
        parents = mapping.reindex(index).astype(object)
        parents = parents.where(parents.notna(), None)
    need = parents.isna().to_numpy()
    if need.any():
        by_form = pd.Series(index.to_numpy(dtype=object)[need]).str.extract(STEP_ID)["query"].to_numpy(dtype=object)
        parents.iloc[np.flatnonzero(need)] = by_form
    left = parents.isna().to_numpy()
    unmapped = int(left.sum())
    if unmapped:
        parents.iloc[np.flatnonzero(left)] = index.to_numpy(dtype=object)[left]
    return parents.astype(str), unmapped


@implements("StepNDCG")
def step_ndcg(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    """Per-query (``average='query'``) or per-step (``average='step'``) binary nDCG@k."""
    rel = int(param(measure, "rel", 1))
    average = param(measure, "average", "query")
    steps = ctx.query_ids
    values = ndcg_at_k(ctx.ranked_for(measure), ctx.gains(binary=True, rel=rel), param(measure, "cutoff"), steps)
    if average == "step":
        return pd.DataFrame({"query_id": values.index.to_numpy(dtype=object), "value": values.to_numpy()})
    parents, unmapped = step_parents(steps, ctx.topics_for(measure))
    if unmapped:
        example = parents.index[parents.to_numpy(dtype=object) == parents.index.to_numpy(dtype=object)][0]
        warnings.warn(f"{measure}: {unmapped} step id(s) have no parent query (no topics parent_id and not of the "
                      f"form '<query_id>_step<n>', e.g. {example!r}); each is counted as its own query",
                      UserWarning, stacklevel=user_stacklevel())
    per_query = pd.Series(values.to_numpy(), index=parents.to_numpy(dtype=object)).groupby(level=0, sort=False).mean()
    return pd.DataFrame({"query_id": per_query.index.to_numpy(dtype=object), "value": per_query.to_numpy()})
