"""Grouped-result plot: bars per group, (macro)/(all) as lines, clear errors."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from reteco_measures.plot import plot_groups  # noqa: E402

FRAME = pd.DataFrame(
    {
        "domain": ["bio", "law", "(macro)", "(all)"] * 2,
        "measure": ["nDCG@10"] * 4 + ["TC@10"] * 4,
        "value": [0.2, 0.6, 0.4, 0.5, 1.0, 0.5, 0.75, 0.7],
        "n": [2, 6, 2, 8, 2, 6, 2, 8],
    }
)


def test_bars_and_summary_lines() -> None:
    fig = plot_groups(FRAME)
    ax_ndcg, ax_tc = fig.axes
    assert [p.get_height() for p in ax_ndcg.patches] == [0.2, 0.6]
    assert sorted(line.get_ydata()[0] for line in ax_ndcg.lines) == [0.4, 0.5]
    assert ax_tc.get_title() == "TC@10"
    sorted_fig = plot_groups(FRAME, ["TC@10"], sort=True)
    assert [p.get_height() for p in sorted_fig.axes[0].patches] == [1.0, 0.5]


def test_errors() -> None:
    with pytest.raises(ValueError, match="grouped result"):
        plot_groups(FRAME.drop(columns="domain"))
    with pytest.raises(ValueError, match="not in the frame"):
        plot_groups(FRAME, ["P@5"])


# -- preset wide tables, two-column grids and comparisons ------------------------------------------

import numpy as np  # noqa: E402

import reteco_measures as rm  # noqa: E402
from reteco_measures.report import plots  # noqa: E402
from reteco_measures.stats import compare_frame  # noqa: E402

WIDE = pd.DataFrame({"domain": ["bio", "law", "(macro)", "(all)"], "n": [2, 6, 2, 8],
                     "nDCG@10": [0.2, 0.6, 0.4, 0.5], "TC@10": [1.0, 0.5, 0.75, 0.7]})


def test_plot_groups_takes_a_preset_wide_by_domain_table() -> None:
    fig = plot_groups(WIDE)  # used to raise KeyError 'measure'
    ax_ndcg, ax_tc = fig.axes
    assert [p.get_height() for p in ax_ndcg.patches] == [0.2, 0.6]
    assert ax_tc.get_title() == "TC@10"


GRID = pd.DataFrame({
    "domain": ["bio", "bio", "law", "law", "(macro)", "(all)"],
    "depth": ["T1", "T5+", "T1", "T5+", "(macro)", "(all)"],
    "measure": "TurnNDCG@10", "value": [0.1, 0.2, 0.3, 0.4, 0.25, 0.3], "n": [1, 1, 1, 1, 4, 4],
})


def test_plot_groups_draws_a_two_column_grid_as_a_heatmap() -> None:
    fig = plot_groups(GRID)
    image = fig.axes[0].images[0].get_array()
    assert np.asarray(image).tolist() == [[0.1, 0.2], [0.3, 0.4]]  # rows domain, columns depth


def comparison(by=None):
    rows = []
    for run, shift in (("base", 0.0), ("new", 0.1), ("other", -0.05)):
        for q, (dom, depth, v) in enumerate([("bio", "T1", 0.2), ("bio", "T5+", 0.4), ("law", "T1", 0.5),
                                             ("law", "T5+", 0.3), ("bio", "T1", 0.6), ("law", "T5+", 0.1)]):
            rows.append((run, "nDCG@10", f"q{q}", v + shift * (q % 3), 1.0, dom, depth))
    f = pd.DataFrame(rows, columns=["run", "measure", "query_id", "value", "weight", "domain", "depth"])
    return compare_frame(f, baseline="base", by=by, n_resamples=200)


def test_runs_plot_has_ci_bars_at_the_summary_values() -> None:
    c = comparison()
    fig = c.plot("runs")
    line = fig.axes[0].lines[0]
    assert np.allclose(line.get_ydata(), c.summary["value"])


def test_delta_plot_is_sorted_per_query_differences() -> None:
    c = comparison()
    fig = c.plot("delta")
    heights = [p.get_height() for p in fig.axes[0].patches]
    pq = c.per_query.pivot(index="query_id", columns="run", values="value")
    assert heights == sorted((pq["new"] - pq["base"]).tolist(), reverse=True)
    assert len(fig.axes) == 2  # new and other against base


def test_heatmap_and_depth_plots() -> None:
    c = comparison(by=["domain", "depth"])
    fig = c.plot("heatmap")
    s = c.summary.set_index(["run", "domain", "depth"])["value"]
    grid = np.asarray(fig.axes[0].images[0].get_array())
    assert grid[0, 0] == s[("base", "bio", "T1")] and grid[1, 1] == s[("base", "law", "T5+")]
    d = comparison(by="depth").plot("depth")
    assert [t.get_text() for t in d.axes[0].get_xticklabels()] == ["T1", "T5+"]
    assert len(d.axes[0].lines) >= 3
    with pytest.raises(ValueError, match="two columns"):
        comparison().plot("heatmap")
    with pytest.raises(ValueError, match="depth"):
        comparison().plot("depth")
    with pytest.raises(ValueError, match="kind"):
        comparison().plot("pie")


def test_every_plot_is_reachable_from_the_plot_module() -> None:
    for name in ("plot_groups", "plot_runs", "plot_delta", "plot_heatmap", "plot_depth", "plot_comparison"):
        assert getattr(rm.plot, name) is getattr(plots, name)
