"""Piecewise reward mapping of the Spoken-Query benchmark (SPEC §5).

.. math::

   \\mathrm{reward}(q; a, b) =
   \\begin{cases}
     \\frac{a}{100}\\,\\frac{q}{b} & 0 \\le q \\le b \\\\
     \\frac{a}{100} + \\left(1 - \\frac{a}{100}\\right)\\frac{q - b}{1 - b} & b < q \\le 1
   \\end{cases}

with the fixed reference quality ``b = 0.4530094614433184`` and the integer score anchor
``a = 15`` (0–100 scale): raw quality 0, b and 1 map to rewards 0, a/100 and 1. The map is
continuous and strictly increasing. A quality outside [0, 1] or non-finite is an error (never
clamped). Validity or audit failure gates the reward to 0 *before* mapping (``gate=False``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["reward", "DEFAULT_A", "DEFAULT_B"]

DEFAULT_A = 15.0
DEFAULT_B = 0.4530094614433184


def reward(q: Any, a: float = DEFAULT_A, b: float = DEFAULT_B, *, gate: Any = True) -> Any:
    """Map raw quality ``q`` ∈ [0, 1] to the reward.

    Args:
        q: a scalar, a sequence, a numpy array or a pandas Series of raw qualities.
        a: score anchor on the 0–100 scale (reward at ``q = b`` is ``a/100``); 0 ≤ a ≤ 100.
        b: reference quality, 0 < b < 1.
        gate: validity/audit gate, scalar or array broadcastable to ``q``; where False the
            reward is 0 whatever ``q`` is (checked before the range check: a failed batch has
            no meaningful quality).

    Returns:
        The same shape and type family as ``q`` (float for a scalar, ndarray for an array,
        Series with the same index for a Series).

    Raises:
        ValueError: if a (non-gated) ``q`` is outside [0, 1] or not finite, or ``a``/``b`` are
            out of range.
    """
    if not (0.0 < float(b) < 1.0):
        raise ValueError(f"b must be in (0, 1), got {b!r}")
    if not (0.0 <= float(a) <= 100.0):
        raise ValueError(f"a must be in [0, 100], got {a!r}")
    series_index = getattr(q, "index", None) if hasattr(q, "to_numpy") else None
    values = np.asarray(q.to_numpy() if hasattr(q, "to_numpy") else q, dtype=np.float64)
    gates = np.broadcast_to(np.asarray(gate, dtype=bool), values.shape)
    checked = values[gates]
    bad = ~np.isfinite(checked) | (checked < 0.0) | (checked > 1.0)
    if bad.any():
        raise ValueError(
            f"raw quality must be a finite number in [0, 1]; got {checked[bad][:5].tolist()}"
        )
    anchor = float(a) / 100.0
    low = anchor * values / b
    high = anchor + (1.0 - anchor) * (values - b) / (1.0 - b)
    out = np.where(values <= b, low, high)
    out = np.where(gates, out, 0.0)
    if series_index is not None:
        import pandas as pd

        return pd.Series(out, index=series_index, name=getattr(q, "name", None))
    if out.ndim == 0:
        return float(out)
    return out
