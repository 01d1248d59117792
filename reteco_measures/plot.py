"""Plots of grouped results and comparisons (optional extra ``plot``: matplotlib, imported lazily).

>>> frame = rm.evaluate(["nDCG@10", "TC@10"], qrels, run, topics=topics, by="domain")
>>> rm.plot.plot_groups(frame)          # one panel per measure, bars per domain
>>> rm.plot.plot_groups(score.table("by_domain"))  # a preset's wide table (a column per measure) works too
>>> rm.compare(runs, qrels, ["nDCG@10"]).plot("runs")   # runs with confidence intervals

The drawing code lives in `reteco_measures.report.plots`; this module keeps the short names.
"""

from __future__ import annotations

from .report.plots import plot_comparison, plot_delta, plot_depth, plot_groups, plot_heatmap, plot_runs

__all__ = ["plot_groups", "plot_comparison", "plot_runs", "plot_delta", "plot_heatmap", "plot_depth"]
