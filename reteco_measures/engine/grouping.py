"""Grouping columns of evaluated queries: topics columns and the RECOR conversation depth.

`group_frame` is the grouping of `reteco_measures.evaluate` (``by=...``), of the
benchmarks' groupings and of the judge aggregation: the same rules everywhere.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import pandas as pd

from ..errors import GroupMismatchWarning, user_stacklevel

__all__ = ["NONE", "depth_group", "group_frame", "warn_unmatched_groups"]

#: the group of a query whose grouping value is unknown
NONE = "(none)"

#: a RECOR turn id: ``<conversation>_turn_<t>`` (release, runs) or ``<conversation>#turn<t>``
#: (the organisers' public sample qrels)
_TURN_ID = re.compile(r"^(?P<conv>.+)(?:_turn_|#turn_?)(?P<turn>\d+)$")


def depth_group(turn: Any) -> str:
    """RECOR conversation-depth group of a 1-based turn number: T1..T4, T5+."""
    try:
        t = int(turn)
    except (TypeError, ValueError):
        return NONE
    return f"T{t}" if t < 5 else "T5+"


def group_frame(query_ids: pd.Series, topics: pd.DataFrame | None, by: list[str]) -> pd.DataFrame:
    """The grouping columns ``by`` for each query id: topics columns joined on ``query_id``, and
    ``depth`` (T1..T4, T5+) from the topics' ``turn`` or the ``<conversation>_turn_<t>`` /
    ``<conversation>#turn<t>`` id form.
    Queries without a value land in ``"(none)"``; an unknown column is a ValueError. This is the
    grouping of `reteco_measures.evaluate` (and of the judge aggregation)."""
    frame = pd.DataFrame({"query_id": query_ids.astype(str)})
    if topics is not None:
        cols = [c for c in by if c in topics.columns and c != "query_id"]
        if "turn" in topics.columns and "depth" in by and "turn" not in cols:
            cols.append("turn")
        if cols:
            meta = topics.drop_duplicates("query_id").set_index("query_id")[cols]
            frame = frame.join(meta, on="query_id")
    for col in by:
        if col == "depth":
            # the topics' turn number where given, else the <conversation>_turn_<t> id form
            turns = pd.to_numeric(frame["query_id"].str.extract(_TURN_ID)["turn"], errors="coerce")
            if "turn" in frame.columns:
                turns = pd.to_numeric(frame["turn"], errors="coerce").fillna(turns)
            frame["depth"] = [depth_group(t) for t in turns]
        elif col not in frame.columns:
            raise ValueError(f"cannot group by {col!r}: not a topics column (give topics=... with that column)")
    for col in by:
        frame[col] = frame[col].astype(object).where(frame[col].notna(), NONE).astype(str)
    return frame


def warn_unmatched_groups(groups: pd.DataFrame, by: list[str], topics: pd.DataFrame | None) -> None:
    """Count the evaluated queries that landed in ``(none)`` and say why, once per call
    (`GroupMismatchWarning`)."""
    per_query = groups.drop_duplicates("query_id")
    none = (per_query[by] == NONE).any(axis=1).to_numpy()
    if not none.any():
        return
    lost = per_query["query_id"].to_numpy()[none]
    known = set(topics["query_id"].astype(str)) if topics is not None else set()
    missing = [q for q in lost if q not in known]
    parts = []
    if missing:
        parts.append(f"{len(missing)} have no row in the topics (e.g. {missing[0]!r})")
    if len(lost) > len(missing):
        parts.append(f"{len(lost) - len(missing)} have no value for {', '.join(by)}")
    warnings.warn(
        f"{len(lost)} of {len(per_query)} evaluated queries are grouped as '(none)': {'; '.join(parts)}",
        GroupMismatchWarning,
        stacklevel=user_stacklevel(),
    )
