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
