"""Read judgment files into one tidy frame, and aggregate them into per-dimension macro scores
with invalid / missing counts.

`read_judgments` (the judgment-row format of the core, `reteco_measures.io.judgments`
and re-exported here) is the one reader of judgment rows: `aggregate_judgments`, the
``Likert`` measure, the disclosure report (`read_judgment_rows`)
and the agreement statistics (`judge_scores`) all read
through it, so they keep the same rows and report the same problems at the same lines.

The score of a judgment is re-normalised from its integer ``score`` and the dimension's scale
(RETECO 1-5: (s-1)/4; iKAT 0-4: s/4; TEMPO 0/1) rather than trusted from the file's
``normalized`` field; a row whose ``normalized`` disagrees, or whose score is not an integer on the
scale, is reported as a problem and counted invalid. The value of a dimension is the mean over its
valid judgments (macro over turns: one judgment per turn); ``n_invalid`` counts rows with an error,
``n_missing`` counts target turns with no row at all. Nothing is silently dropped. The grouping
and the aggregation are `reteco_measures.evaluate`'s (`group_frame`,
`aggregate`): sums left to right in target order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..engine.grouping import group_frame
from ..engine.results import ALL, MACRO
from ..engine.results import aggregate as aggregate_frame
from ..errors import Problem
from ..io.judgments import (  # noqa: F401  (the reader and scales live with the Likert measure)  # noqa: F401  (re-exported: the judge's public names)
    AGGREGATES,
    DIM_SCALE,
    JUDGMENT_COLUMNS,
    SCALES,
    JudgmentSource,
    ScaleArg,
    canonical,
    collapse_repeats,
    int_score,
    normalize_scores,
    read_judgments,
    scale_for,
)
from ..side import load_topics

__all__ = ["SCALES", "AGGREGATES", "JUDGMENT_COLUMNS", "read_judgments", "aggregate_judgments", "normalize_scores",
           "collapse_repeats"]

def aggregate_judgments(
    judgments: JudgmentSource | Sequence[JudgmentSource],
    *,
    targets: Sequence[str] | None = None,
    dimensions: Sequence[str] | None = None,
    scale: str | None = None,
    topics: pd.DataFrame | str | None = None,
    by: str | Sequence[str] | None = None,
    problems: list[Problem] | None = None,
    aggregate: str = "mean",
) -> pd.DataFrame:
    """Per-dimension macro scores of judgment files, in the style of `reteco_measures.evaluate`.

    Args:
        judgments: JSONL path(s) written by ``reteco-measures judge`` or DataFrames with the same
            columns, read by `read_judgments` (its rules decide which rows are kept, which
            are invalid and which are problems).
        targets: the turns that should have been judged; target turns without a row count as
            ``n_missing``, rows of other turns are left out (and reported in ``problems``).
            Default: every turn that has a row for some dimension in the files.
        dimensions: dimensions to report (default: those present, in the order first seen).
        scale: force a scale (``reteco`` 1-5, ``ikat`` 0-4) on every row read; default from the
            dimension name.
        topics: topics metadata (DataFrame or file) for ``by``.
        by: a topics column, ``"depth"`` (T1..T4, T5+ from the turn number or the
            ``<conversation>_turn_<t>`` id) or a list of them: one row per group, then
            ``"(macro)"`` (mean of group means) and ``"(all)"`` (mean over turns) rows.
        problems: a list that receives the problems found (malformed rows, bad scores, ...).
        aggregate: how repeated judgments of a turn are combined (``mean``, ``median``, ``mode``;
            see `collapse_repeats`); a turn is invalid only when all its repeats are.

    Returns:
        DataFrame ``[*by, "dimension", "value", "n", "n_invalid", "n_missing"]``: ``value`` is the
        mean normalised score over the ``n`` valid judgments (NaN if none).
    """
    found: list[Problem] = []
    frame, p = read_judgments(judgments, scale=scale)
    found.extend(p)
    if dimensions is not None:
        dims = [canonical(d) for d in dimensions]
    else:
        dims = list(dict.fromkeys(frame["dimension"].tolist()))
    # default targets: every turn with a row for any dimension in the files
    all_turns = list(dict.fromkeys(frame["turn_id"].tolist()))
    frame = frame[frame["dimension"].isin(dims)]
    for dim in dict.fromkeys(frame["dimension"].tolist()):
        scale_for(dim, scale)  # a reported dimension needs a scale
    if targets is None:
        target_ids = all_turns
    else:
        target_ids = list(dict.fromkeys(str(t) for t in targets))
        extra = frame[~frame["turn_id"].isin(set(target_ids))]
        for tid in dict.fromkeys(extra["turn_id"].tolist()):
            found.append(Problem("judgment for a turn that is not a target; left out", query_id=tid,
                                 kind="unknown_query"))
        frame = frame[frame["turn_id"].isin(set(target_ids))]
    frame = collapse_repeats(frame, aggregate)
    # complete grid of (target, dimension): rows without a judgment are "missing"
    grid = pd.MultiIndex.from_product([target_ids, dims], names=["turn_id", "dimension"]).to_frame(index=False)
    full = grid.merge(frame[["turn_id", "dimension", "valid", "value"]], on=["turn_id", "dimension"], how="left",
                      indicator=True)
    full["missing"] = full["_merge"] == "left_only"
    full["valid"] = full["valid"].fillna(False).astype(bool)
    full["invalid"] = ~full["valid"] & ~full["missing"]
    full["value"] = full["value"].astype("float64")
    if problems is not None:
        problems.extend(found)

    by_cols = [by] if isinstance(by, str) else list(by or [])
    topics_df = load_topics(topics) if topics is not None and by_cols else None
    long = pd.DataFrame({"query_id": full["turn_id"].to_numpy(dtype=object),
                         "measure": full["dimension"].to_numpy(dtype=object),
                         "value": full["value"].to_numpy(dtype=np.float64),
                         "invalid": full["invalid"].to_numpy(), "missing": full["missing"].to_numpy()})
    if by_cols:
        groups = group_frame(long["query_id"], topics_df, by_cols)
        for col in by_cols:
            long[col] = groups[col].to_numpy()
    # the one aggregation (engine.results): the mean over valid turns, summed left to right in
    # target order; (macro) = mean of the group means, (all) = mean over turns
    table = aggregate_frame(long, by_cols, measures=dims, empty={}, sums=(), margins=bool(by_cols),
                      counts=("invalid", "missing"))
    if by_cols:  # the (macro) row counts the turns, as the (all) row does (not the groups)
        macro = table[by_cols[0]].to_numpy(dtype=object) == MACRO
        every = table[by_cols[0]].to_numpy(dtype=object) == ALL
        table.loc[macro, "n"] = table.loc[every, "n"].to_numpy()
    table = table.rename(columns={"measure": "dimension", "invalid": "n_invalid", "missing": "n_missing"})
    return table[[*by_cols, "dimension", "value", "n", "n_invalid", "n_missing"]]
