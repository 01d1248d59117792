"""Plots of grouped results (optional extra ``plot``: matplotlib, imported lazily).

>>> frame = rm.evaluate(["nDCG@10", "TC@10"], qrels, run, topics=topics, by="domain")
>>> rm.plot.plot_groups(frame)          # one panel per measure, bars per domain
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["plot_groups"]

_SUMMARY = ("(macro)", "(all)")


def plot_groups(frame: pd.DataFrame, measures: list[str] | None = None, *, ax: Any = None, sort: bool = False):
    """Bar chart of a grouped :func:`reteco_measures.evaluate` result.

    One bar per group (``by`` had one column; several columns are joined with " / "); the
    ``(macro)`` (mean of group means) and ``(all)`` (mean over queries) rows are drawn as dashed
    and dotted lines instead of bars. With several measures, one panel per measure.

    Args:
        frame: the DataFrame ``rm.evaluate(..., by=...)`` returned.
        measures: which measures to draw (default: all, in the frame's order).
        ax: a matplotlib Axes (one measure) or a sequence of Axes; created when None.
        sort: order bars by value (descending) instead of by group name.

    Returns:
        The matplotlib Figure.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise ImportError("plotting needs matplotlib: pip install 'reteco-measures[plot]'") from exc
    by = [c for c in frame.columns if c not in ("measure", "value", "n")]
    if not by:
        raise ValueError("plot_groups needs a grouped result: rm.evaluate(..., by='domain')")
    names = measures or list(dict.fromkeys(frame["measure"]))
    missing = [m for m in names if m not in set(frame["measure"])]
    if missing:
        raise ValueError(f"measures not in the frame: {missing}")
    label = frame[by].astype(str).agg(" / ".join, axis=1)
    if ax is None:
        fig, axes = plt.subplots(1, len(names), figsize=(max(4.0, 0.6 * label.nunique()) * len(names), 3.6),
                                 squeeze=False)
        axes = list(axes[0])
    else:
        axes = list(ax) if isinstance(ax, (list, tuple)) else [ax]
        fig = axes[0].figure
    if len(axes) != len(names):
        raise ValueError(f"{len(names)} measure(s) but {len(axes)} axes")
    for axis, name in zip(axes, names):
        rows = frame[frame["measure"] == name].assign(_label=label[frame["measure"] == name])
        summary = rows[rows[by[0]].isin(_SUMMARY)]
        groups = rows[~rows[by[0]].isin(_SUMMARY)]
        if sort:
            groups = groups.sort_values("value", ascending=False)
        axis.bar(groups["_label"], groups["value"], color="#4C72B0")
        for (kind, style) in (("(macro)", "--"), ("(all)", ":")):
            value = summary.loc[summary[by[0]] == kind, "value"]
            if len(value) and pd.notna(value.iloc[0]):
                axis.axhline(float(value.iloc[0]), color="#C44E52", linestyle=style,
                             label=f"{kind} {float(value.iloc[0]):.3f}")
        axis.set_title(name)
        axis.set_ylabel("value")
        axis.tick_params(axis="x", labelrotation=45)
        if len(summary):
            axis.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return fig
