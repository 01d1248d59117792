"""Plots of comparisons and grouped results (matplotlib, imported lazily: the ``plot`` extra).

* `plot_runs` — every run's value with its confidence interval (and, where ties change
  values, the range over tie orders), one panel per measure;
* `plot_delta` — per-query differences of each run to the baseline, sorted;
* `plot_heatmap` — a two-column grid (domain × depth, collection × condition), one panel
  per run;
* `plot_depth` — curves over the conversation depth groups T1..T4, T5+, one line per run;
* `plot_groups` — a grouped ``rm.evaluate`` table (or a preset's wide ``by_domain`` table):
  bars per group with ``(macro)``/``(all)`` lines; a heatmap when grouped by two columns.

Every function returns the matplotlib Figure and draws only numbers it is given.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["plot_comparison", "plot_runs", "plot_delta", "plot_heatmap", "plot_depth", "plot_groups", "KINDS"]

KINDS = ("runs", "delta", "heatmap", "depth")
_SUMMARY = ("(macro)", "(all)")
_DEPTHS = ["T1", "T2", "T3", "T4", "T5+"]


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise ImportError("plotting needs matplotlib: pip install 'reteco-measures[plot]'") from exc
    return plt


def _panels(n: int, ax: Any, width: float, height: float = 3.6):
    plt = _plt()
    if ax is None:
        fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
        return fig, list(axes[0])
    axes = list(ax) if isinstance(ax, (list, tuple, np.ndarray)) else [ax]
    if len(axes) != n:
        raise ValueError(f"{n} panel(s) needed but {len(axes)} axes given")
    return axes[0].figure, axes


def _measures(comparison: Any, measures: Any) -> list[str]:
    if measures is None:
        return list(comparison.measures)
    names = [measures] if isinstance(measures, str) else list(measures)
    unknown = [m for m in names if m not in comparison.measures]
    if unknown:
        raise ValueError(f"measures not in the comparison: {unknown} (have {comparison.measures})")
    return names


def _overall(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    for col in by:
        frame = frame[frame[col].astype(str) == "(all)"]
    return frame


def plot_runs(comparison: Any, measures: Any = None, *, ax: Any = None, sort: bool = False):
    """Each run's value with its bootstrap confidence interval, one panel per measure (over all
    queries when the comparison is grouped). ``sort=True``: best first (a leaderboard: in its
    ranking's order); else in the comparison's run order. A grey bar behind a point spans the aggregate under
    the worst and best order of tied scores, where ties change it."""
    names = _measures(comparison, measures)
    s = _overall(comparison.summary, comparison.by)
    fig, axes = _panels(len(names), ax, max(4.0, 0.55 * len(comparison.runs) + 1.5))
    for axis, m in zip(axes, names):
        part = s[s["measure"] == m].set_index("run").reindex(comparison.runs)
        if sort:
            ranking = getattr(comparison, "ranking", None)
            if ranking is not None and "run" in getattr(ranking, "columns", ()) and m == getattr(
                    comparison, "measure", None):
                part = part.reindex(ranking["run"].tolist())  # a leaderboard: exactly its ranking's order
            else:
                part = part.sort_values("value", ascending=False, kind="stable")
        x = np.arange(len(part))
        if "tie_min" in part.columns:
            lo, hi = part["tie_min"].to_numpy(), part["tie_max"].to_numpy()
            show = np.abs(hi - lo) > 0
            axis.bar(x[show], (hi - lo)[show], bottom=lo[show], width=0.5, color="#DDDDDD",
                     label="range over tie orders")
        err = np.vstack([part["value"] - part["ci_low"], part["ci_high"] - part["value"]]).clip(min=0)
        axis.errorbar(x, part["value"], yerr=err, fmt="o", color="#4C72B0", capsize=4,
                      label=f"{comparison.params.get('ci', 0.95):.0%} CI")
        axis.set_xticks(x, part.index.tolist(), rotation=45, ha="right")
        axis.set_title(m)
        axis.set_ylabel("value")
        axis.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return fig


def plot_delta(comparison: Any, measure: str | None = None, *, baseline: str | None = None, ax: Any = None):
    """Per-query difference ``run − baseline`` on one measure, sorted, one panel per run. The
    baseline defaults to the comparison's (else its first run); undefined queries are left out."""
    m = _measures(comparison, measure)[0] if measure else comparison.measures[0]
    base = baseline or comparison.params.get("baseline") or comparison.runs[0]
    if base not in comparison.runs:
        raise ValueError(f"baseline {base!r} is not one of the runs {comparison.runs}")
    others = [r for r in comparison.runs if r != base]
    pq = comparison.per_query[comparison.per_query["measure"] == m]
    wide = pq.drop_duplicates(["run", "query_id"]).pivot(index="query_id", columns="run", values="value")
    fig, axes = _panels(len(others), ax, 4.5)
    for axis, run in zip(axes, others):
        d = (wide[run] - wide[base]).dropna().sort_values(ascending=False)
        colors = np.where(d.to_numpy() > 0, "#55A868", np.where(d.to_numpy() < 0, "#C44E52", "#999999"))
        axis.bar(np.arange(len(d)), d.to_numpy(), color=colors, width=1.0)
        axis.axhline(0, color="black", linewidth=0.8)
        axis.set_title(f"{run} − {base}\n{m}")
        axis.set_xlabel(f"queries, sorted ({len(d)})")
        axis.set_ylabel("difference")
    fig.tight_layout()
    return fig


def _grid_axes(by: list[str], rows: str | None, cols: str | None) -> tuple[str, str]:
    cand = [c for c in by]
    if rows and cols:
        return rows, cols
    if len(cand) != 2:
        raise ValueError(f"a heatmap needs results grouped by two columns (by=['domain', 'depth']), not {by}")
    if "depth" in cand:  # depth along the columns reads left to right
        other = [c for c in cand if c != "depth"][0]
        return other, "depth"
    return cand[0], cand[1]


def _heat(axis: Any, grid: pd.DataFrame, title: str, vmin: float, vmax: float):
    image = axis.imshow(grid.to_numpy(dtype=float), cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto")
    axis.set_xticks(range(grid.shape[1]), grid.columns.tolist(), rotation=45, ha="right")
    axis.set_yticks(range(grid.shape[0]), grid.index.tolist())
    for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
        if np.isfinite(v):
            axis.text(j, i, f"{v:.3f}", ha="center", va="center", fontsize="small",
                      color="white" if v < (vmin + vmax) / 2 else "black")
    axis.set_title(title)
    return image


def _order(values: list[str], col: str) -> list[str]:
    if col == "depth":
        return [d for d in _DEPTHS if d in values] + sorted(v for v in values if v not in _DEPTHS)
    return sorted(values)


def plot_heatmap(comparison: Any, measure: str | None = None, *, rows: str | None = None,
                 cols: str | None = None, runs: list[str] | None = None, ax: Any = None):
    """The values of a comparison grouped by two columns (e.g. ``by=['domain', 'depth']`` or
    ``['collection', 'condition']``) as one heatmap per run, on a shared colour scale."""
    m = _measures(comparison, measure)[0] if measure else comparison.measures[0]
    r, c = _grid_axes(comparison.by, rows, cols)
    s = comparison.summary[comparison.summary["measure"] == m]
    s = s[(s[r] != "(all)") & (s[c] != "(all)")]
    if s.empty:
        raise ValueError(f"no grouped values for {m}")
    chosen = runs or comparison.runs
    vals = s["value"].to_numpy(dtype=float)
    vmin, vmax = (float(np.nanmin(vals)), float(np.nanmax(vals))) if np.isfinite(vals).any() else (0.0, 1.0)
    fig, axes = _panels(len(chosen), ax, 1.2 + 0.9 * s[c].nunique(), 1.2 + 0.6 * s[r].nunique())
    image = None
    for i, (axis, run) in enumerate(zip(axes, chosen)):
        grid = s[s["run"] == run].pivot(index=r, columns=c, values="value")
        grid = grid.reindex(index=_order(grid.index.tolist(), r), columns=_order(grid.columns.tolist(), c))
        image = _heat(axis, grid, f"{run}: {m}", vmin, vmax)
        if i:  # the rows are the same in every panel: label them once
            axis.set_yticklabels([])
        else:
            axis.set_ylabel(r)
        axis.set_xlabel(c)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8)
    return fig


def plot_depth(comparison: Any, measures: Any = None, *, ax: Any = None):
    """One line per run over the depth groups T1..T4, T5+ (``by='depth'``), with CI bars."""
    if "depth" not in comparison.by:
        raise ValueError("a depth plot needs a comparison grouped by='depth'")
    names = _measures(comparison, measures)
    others = [c for c in comparison.by if c != "depth"]
    s = _overall(comparison.summary, others) if others else comparison.summary
    fig, axes = _panels(len(names), ax, 5.0)
    for axis, m in zip(axes, names):
        part = s[(s["measure"] == m) & (s["depth"] != "(all)")]
        order = _order(part["depth"].unique().tolist(), "depth")
        x = np.arange(len(order))
        for i, run in enumerate(comparison.runs):
            line = part[part["run"] == run].set_index("depth").reindex(order)
            err = np.vstack([line["value"] - line["ci_low"], line["ci_high"] - line["value"]]).clip(min=0)
            axis.errorbar(x + (i - (len(comparison.runs) - 1) / 2) * 0.04, line["value"], yerr=err, marker="o",
                          capsize=3, label=run)
        axis.set_xticks(x, order)
        axis.set_xlabel("conversation depth")
        axis.set_title(m)
        axis.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return fig


def plot_comparison(comparison: Any, kind: str = "runs", **kwargs: Any):
    """Dispatch to `plot_runs` / `plot_delta` / `plot_heatmap` / `plot_depth`."""
    funcs = {"runs": plot_runs, "delta": plot_delta, "heatmap": plot_heatmap, "depth": plot_depth}
    if kind not in funcs:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    return funcs[kind](comparison, **kwargs)


# -- grouped rm.evaluate results -----------------------------------------------------------------


def _tidy(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A tidy ``[*by, measure, value, n]`` frame from an evaluate result or a preset's wide table
    (group column(s), ``n``, one column per measure)."""
    if "measure" in frame.columns and "value" in frame.columns:
        by = [c for c in frame.columns if c not in ("measure", "value", "n")]
        return frame, by
    numeric = [c for c in frame.columns if c != "n" and pd.api.types.is_numeric_dtype(frame[c])]
    by = [c for c in frame.columns if c not in numeric and c != "n"]
    if not numeric:
        raise ValueError("the frame has neither measure/value columns nor numeric measure columns")
    tidy = frame.melt(id_vars=by, value_vars=numeric, var_name="measure", value_name="value")
    return tidy, by


def plot_groups(frame: pd.DataFrame, measures: list[str] | None = None, *, ax: Any = None, sort: bool = False):
    """Grouped results: ``rm.evaluate(..., by=...)`` or a preset's wide ``by_domain`` table.

    One group column: one bar per group, the ``(macro)`` (mean of group means) and ``(all)``
    (mean over queries) rows as dashed / dotted lines. Two group columns (e.g. domain × depth,
    collection × condition): a heatmap per measure. One panel per measure.
    """
    tidy, by = _tidy(frame)
    if not by:
        raise ValueError("plot_groups needs a grouped result: rm.evaluate(..., by='domain')")
    names = measures or list(dict.fromkeys(tidy["measure"]))
    missing = [m for m in names if m not in set(tidy["measure"])]
    if missing:
        raise ValueError(f"measures not in the frame: {missing}")
    if len(by) == 2:
        r, c = _grid_axes(by, None, None)
        grid_rows = tidy[~tidy[r].isin(_SUMMARY) & ~tidy[c].isin(_SUMMARY)]
        fig, axes = _panels(len(names), ax, 1.2 + 0.9 * grid_rows[c].nunique(), 1.2 + 0.6 * grid_rows[r].nunique())
        for axis, name in zip(axes, names):
            part = grid_rows[grid_rows["measure"] == name]
            grid = part.pivot(index=r, columns=c, values="value")
            grid = grid.reindex(index=_order(grid.index.tolist(), r), columns=_order(grid.columns.tolist(), c))
            vals = grid.to_numpy(dtype=float)
            lo, hi = (np.nanmin(vals), np.nanmax(vals)) if np.isfinite(vals).any() else (0.0, 1.0)
            image = _heat(axis, grid, name, lo, hi)
            fig.colorbar(image, ax=axis, shrink=0.8)
        return fig
    label = tidy[by].astype(str).agg(" / ".join, axis=1)
    fig, axes = _panels(len(names), ax, max(4.0, 0.6 * label.nunique()))
    for axis, name in zip(axes, names):
        rows = tidy[tidy["measure"] == name].assign(_label=label[tidy["measure"] == name])
        summary = rows[rows[by[0]].isin(_SUMMARY)]
        groups = rows[~rows[by[0]].isin(_SUMMARY)]
        if sort:
            groups = groups.sort_values("value", ascending=False)
        axis.bar(groups["_label"], groups["value"], color="#4C72B0")
        for kind, style in (("(macro)", "--"), ("(all)", ":")):
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
