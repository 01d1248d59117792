"""p-values print in one fixed format in every text table (`compare`, leaderboards' pairwise)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd

from reteco_measures.report.tables import format_p, to_text


def test_format_p_by_hand():
    assert format_p(9.999e-05) == "<0.0001"  # was 9.999e-05 beside 0.0004
    assert format_p(0.0004) == "0.0004"
    assert format_p(0.0001) == "0.0001"
    assert format_p(0.04) == "0.0400"
    assert format_p(1.0) == "1.0000"
    assert format_p(0.0) == "<0.0001"
    assert format_p(np.nan) == "–" and format_p(None) == "–"
    assert format_p(0.004, 2) == "<0.01" and format_p(0.012, 2) == "0.01"


def test_compare_text_prints_one_p_format():
    pairwise = pd.DataFrame({"measure": ["nDCG@10"] * 3, "run": ["a", "a", "b"], "other": ["b", "c", "c"],
                             "delta": [0.1, 0.2, 0.1], "p_value": [9.999e-05, 0.0004, np.nan],
                             "p_adjusted": [0.00029997, 0.0008, np.nan], "significant": [True, True, False]})
    summary = pd.DataFrame({"run": ["a", "b", "c"], "measure": ["nDCG@10"] * 3, "value": [0.5, 0.4, 0.3]})
    text = to_text(SimpleNamespace(summary=summary, pairwise=pairwise), places=4)
    rows = text.split("pairwise\n")[1].splitlines()[1:]
    cells = [row.split()[4:6] for row in rows]
    assert cells == [["<0.0001", "0.0003"], ["0.0004", "0.0008"], ["–", "–"]]
    assert not re.search(r"\de-\d", text)
