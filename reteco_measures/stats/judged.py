"""A warning for runs whose top k is judged far less than the pool's (``Judged@k``).

Unjudged documents count as non-relevant, so a run that retrieves many documents the pool never
judged scores low for want of judgments, not of relevance (Buckley & Voorhees 2004, "Retrieval
evaluation with incomplete information", SIGIR). The leaderboard and `reteco_measures.judge.holes`
call `judged_warning` on each run's mean ``Judged@k``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..errors import DataFormatWarning, user_stacklevel

__all__ = ["JUDGED_RATIO", "JUDGED_MIN_GAP", "judged_warning"]

#: a run whose mean Judged@k is below this fraction of the mean over the pooled runs gets a warning
#: (0.8: a fifth fewer judged documents in its top k than the pool has on average)
JUDGED_RATIO = 0.8
#: ... and at least this far below it in absolute terms (no warning over trivial differences of
#: nearly unjudged pools)
JUDGED_MIN_GAP = 0.05


def judged_warning(judged: Mapping[str, float], ratio: float = JUDGED_RATIO,
                   min_gap: float = JUDGED_MIN_GAP) -> list[str]:
    """The runs whose mean Judged@k is below ``ratio`` times the mean over all runs (the pool) and
    at least ``min_gap`` below it, as messages; also given as one `DataFormatWarning`. Relative,
    so that it holds for pools that judge most of the top k and for shallow ones; the absolute
    floor keeps nearly unjudged pools (0.004 against 0.007) quiet."""
    values = pd.Series(judged, dtype=np.float64)
    pool = float(values.mean())
    low = values[(values < ratio * pool) & (values <= pool - min_gap)]
    out = [f"run {r!r}: Judged@k {v:.3f} is far below the pooled runs' {pool:.3f} (< {ratio:g} x): its unjudged "
           "documents count as non-relevant; fill the holes (judge holes) or read its score with care"
           for r, v in low.items()]
    if out:
        warnings.warn("; ".join(out), DataFormatWarning, stacklevel=user_stacklevel())
    return out
