"""Kernel of ``SpokenMacroNDCG@k`` (Spoken-Query Document Search).

Per request: graded nDCG@k with trec_eval gains (`.ndcg.ndcg_at_k`, verified against
pytrec_eval); the requests evaluated are the qrels' queries (a request missing from the run
scores 0). Each request gets the weight ``1 / (|cell| · n_cells)`` where its cell is its
(``collection``, ``condition``) from the topics, so the weighted mean over requests is the mean
of the cell means. The grid, its completeness check and the parameters are described in
`reteco_measures.measures.spoken_macro_ndcg`.
"""

from __future__ import annotations

import warnings

import ir_measures
import numpy as np
import pandas as pd

from ..errors import user_stacklevel
from ..measures.params import param
from ..measures.spoken_macro_ndcg import IncompleteGridWarning
from .context import EvalContext, implements
from .ndcg import ndcg_at_k

__all__ = ["spoken_macro_ndcg", "cell_frame", "missing_cells"]

CELL_COLUMNS = ("collection", "condition")


def _names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [v.strip() for v in str(value).split(",") if v.strip()]
    return names or None


def cell_frame(topics: pd.DataFrame | None, query_ids: pd.Index, what: str = "SpokenMacroNDCG") -> pd.DataFrame:
    """``collection, condition`` (str) of each evaluated request, indexed by ``query_id``.

    Raises ValueError when the topics lack the columns or a request has no cell."""
    if topics is None:
        raise ValueError(f"{what} needs topics with 'collection' and 'condition' per request "
                         "(topics=... or rm.side_info(topics=...); see rm.benchmarks.spoken.data.topics)")
    absent = [c for c in CELL_COLUMNS if c not in topics.columns]
    if absent:
        raise ValueError(f"{what}: the topics lack column(s) {absent} (found {list(topics.columns)})")
    meta = topics.drop_duplicates("query_id").set_index("query_id")[list(CELL_COLUMNS)]
    meta.index = meta.index.astype(str)
    cells = meta.reindex(query_ids)
    unplaced = cells.isna().any(axis=1).to_numpy()
    if unplaced.any():
        bad = query_ids[unplaced].tolist()
        raise ValueError(f"{what}: {len(bad)} evaluated request(s) have no collection/condition in the topics "
                         f"(e.g. {bad[:5]}); every judged request must belong to a cell")
    return cells.astype(str)


def missing_cells(
    present: pd.DataFrame, topics: pd.DataFrame, collections: list[str] | None, conditions: list[str] | None
) -> list[tuple[str, str]]:
    """Grid cells (collection, condition) with no evaluated request."""
    all_coll = collections or sorted(pd.unique(topics["collection"].dropna().astype(str)).tolist())
    all_cond = conditions or sorted(pd.unique(topics["condition"].dropna().astype(str)).tolist())
    have = set(zip(present["collection"].tolist(), present["condition"].tolist(), strict=True))
    return [(c, x) for c in all_coll for x in all_cond if (c, x) not in have]


@implements("SpokenMacroNDCG")
def spoken_macro_ndcg(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    """Per-request graded nDCG@k with weights 1/(|cell| · n_cells)."""
    name = str(measure)
    topics = ctx.topics_for(measure)
    qids = ctx.query_ids
    cells = cell_frame(topics, qids, name)
    collections = _names(param(measure, "collections"))
    conditions = _names(param(measure, "conditions"))
    for col, declared in (("collection", collections), ("condition", conditions)):
        if declared is not None:
            outside = sorted(set(cells[col].tolist()) - set(declared))
            if outside:
                raise ValueError(f"{name}: request {col}(s) {outside} are not in the declared grid {declared}")
    policy = param(measure, "missing_cells") or "warn"
    if policy not in ("warn", "error"):
        raise ValueError(f"{name}: missing_cells must be 'warn' or 'error', not {policy!r}")
    gaps = missing_cells(cells, topics, collections, conditions)  # type: ignore[arg-type]
    if gaps:
        n_grid = len(gaps) + cells.drop_duplicates().shape[0]
        shown = ", ".join(f"({c}, {x})" for c, x in gaps[:24]) + (" ..." if len(gaps) > 24 else "")
        message = (f"{name}: the collection x condition grid is incomplete: {len(gaps)} of {n_grid} cells have "
                   f"no evaluated request: {shown}. The value is the mean over the "
                   f"{n_grid - len(gaps)} cells present (each weighs 1/{n_grid - len(gaps)}), not over the "
                   "full grid.")
        if policy == "error":
            raise ValueError(message)
        warnings.warn(message, IncompleteGridWarning, stacklevel=user_stacklevel())
    values = ndcg_at_k(ctx.ranked_for(measure), ctx.gains(binary=False), param(measure, "cutoff"), qids)
    cell_id = cells.groupby(list(CELL_COLUMNS), sort=False).ngroup().to_numpy()
    counts = np.bincount(cell_id) if len(cell_id) else np.zeros(0, dtype=np.int64)
    weight = 1.0 / (counts[cell_id].astype(np.float64) * len(counts))
    return pd.DataFrame({"query_id": qids.to_numpy(dtype=object), "value": values.to_numpy(), "weight": weight})
