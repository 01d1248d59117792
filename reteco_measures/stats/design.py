"""The statistical unit of each measure: what a test or a confidence interval resamples.

A measure's aggregate is a NaN-skipping weighted mean of its per-query values (the ``weight``
every value carries). Resampling must draw the *unit the measure aggregates over*, or the
uncertainty is wrong (too narrow when correlated turns are treated as independent, wrong weights
when cells of a macro average are redrawn with the wrong sizes). Each per-query row therefore gets
two columns:

* ``unit`` — the resampled unit (a cluster of rows that is drawn, or sign-flipped, as one);
* ``stratum`` — resampling keeps the number of units of each stratum fixed ("" = one stratum).

The rules (see the statistics page of the documentation):

| measure | unit | stratum |
|---|---|---|
| ``TurnNDCG(average='conversation')`` | conversation (cluster) | — |
| ``SpokenMacroNDCG`` | request | collection × condition |
| ``StepNDCG(average='step')`` | step topic | — |
| everything else (TP, TR, TC, nDCG_FC, nDCG, AP, ..., ``StepNDCG(average='query')``, ``TurnNDCG``) | the query of the row | — |

A row whose value is NaN (not defined: ``nDCG|FC`` on a query that is not fully covered, ``TC`` on
a query without required periods) stays in its unit but contributes nothing, exactly as in the
aggregate; resampled aggregates are recomputed as the same ratio ``Σ w·v / Σ w`` over the defined
rows of the resample.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ir_measures
import numpy as np
import pandas as pd

from ..kernels.conversational import turn_parts
from ..kernels.spoken import cell_frame

__all__ = ["UNIT_COLUMNS", "unit_columns", "unit_kind"]

#: columns a per-query frame may carry to say how it is resampled
UNIT_COLUMNS = ("unit", "stratum")


def unit_kind(measure: ir_measures.Measure | None) -> tuple[str, str | None]:
    """``(unit name, stratum name or None)`` of a measure, for reports."""
    name = getattr(measure, "NAME", None)
    params = getattr(measure, "params", {}) or {}
    if name == "TurnNDCG" and params.get("average") == "conversation":
        return "conversation", None
    if name == "SpokenMacroNDCG":
        return "request", "collection x condition"
    if name == "StepNDCG" and params.get("average") == "step":
        return "step", None
    if name == "TurnNDCG":
        return "turn", None
    return "query", None


def unit_columns(
    measure: ir_measures.Measure | None,
    query_ids: Sequence[Any] | pd.Series | pd.Index,
    topics: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``query_id, unit, stratum`` for the per-query rows of one measure.

    Args:
        measure: the measure (an ``ir_measures.Measure``); ``None`` = plain per-query resampling.
        query_ids: the ``query_id`` values of its per-query rows (any order, repeats allowed).
        topics: the topics table the measure was evaluated with (``conversation_id`` for
            conversations, ``collection`` / ``condition`` for Spoken-Query cells). Without
            topics, conversations come from the id form ``<conversation_id>_turn_<t>``.

    Returns:
        A DataFrame aligned with ``query_ids`` (same length and order).
    """
    kind, strata = unit_kind(measure)
    if kind != "conversation" and strata is None:  # the query of the row, one stratum
        given = query_ids if isinstance(query_ids, pd.Series) else pd.Series(list(query_ids), dtype=object)
        ids = given.astype("str").to_numpy(dtype=object)
        return pd.DataFrame({"query_id": ids, "unit": ids.copy(), "stratum": np.full(len(ids), "", dtype=object)})
    qids = pd.Series(list(query_ids), dtype="str").reset_index(drop=True)
    unit = qids.copy()
    stratum = pd.Series(np.full(len(qids), "", dtype=object))
    if kind == "conversation":
        unit = pd.Series(turn_parts(qids, topics)["conversation_id"].to_numpy(dtype=object))
    elif strata is not None:
        uniq = pd.Index(pd.unique(qids.to_numpy(dtype=object)), dtype="str")
        cells = cell_frame(topics, uniq, str(measure))
        label = (cells["collection"] + " x " + cells["condition"]).reindex(qids.to_numpy(dtype=object))
        stratum = pd.Series(label.to_numpy(dtype=object))
    return pd.DataFrame({"query_id": qids.to_numpy(dtype=object), "unit": unit.astype(str).to_numpy(dtype=object),
                         "stratum": stratum.astype(str).to_numpy(dtype=object)})
