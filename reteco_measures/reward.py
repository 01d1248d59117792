"""Piecewise reward mapping of the Spoken-Query benchmark (its task description's reward anchors).

```text
reward(q; a, b) = (a/100) * (q / b)                          for 0 <= q <= b
                = a/100 + (1 - a/100) * (q - b) / (1 - b)    for b < q <= 1
```

with the fixed reference quality ``b = 0.4530094614433184`` and the integer score anchor
``a = 15`` (0–100 scale): raw quality 0, b and 1 map to rewards 0, a/100 and 1. The map is
continuous and non-decreasing (strictly increasing in exact arithmetic). A quality outside
[0, 1] or non-finite is an error (never clamped). Validity or audit failure gates the reward to
0 *before* mapping (``gate=False``).

Floating point: the two branches are evaluated as ``(a/100) * (q / b)`` and
``a/100 + (1 - a/100) * ((q - b) / (1 - b))`` so that the anchors are *exact* in double
precision (``q = b`` gives ``q / b == 1``, ``q = 1`` gives a ratio of exactly 1), and the
result is capped at 1 and set to exactly 1 at ``q = 1`` (``a/100 + (1 - a/100)`` can be one
ulp below 1 for some ``a``). Every step is a correctly rounded monotone operation, so the
computed map stays non-decreasing, also across ``q = b``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["reward", "DEFAULT_A", "DEFAULT_B"]

#: integer score anchor on the 0–100 scale (Spoken-Query)
DEFAULT_A = 15.0
#: fixed reference quality (Spoken-Query)
DEFAULT_B = 0.4530094614433184


def _as_float_array(q: Any) -> np.ndarray:
    import numpy as np  # heavy: imported on first call, so that importing the package stays light
    import pandas as pd

    if isinstance(q, (str, bytes)):
        raise ValueError(f"raw quality must be a number, not the string {q!r}")
    raw = q.to_numpy() if isinstance(q, (pd.Series, pd.DataFrame, pd.Index)) else q
    arr = np.asarray(raw)
    if arr.dtype.kind in "USO":
        # object / string arrays: accept real numbers only (no "0.5" strings, no None)
        flat = arr.ravel().tolist()
        bad = [v for v in flat if isinstance(v, (str, bytes)) or v is None]
        if bad:
            raise ValueError(f"raw quality must be numbers; got {bad[:5]!r}")
    if arr.dtype.kind == "c":
        raise ValueError("raw quality must be real numbers, not complex")
    try:
        return np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"raw quality must be numbers ({exc})") from None


def reward(q: Any, a: float = DEFAULT_A, b: float = DEFAULT_B, *, gate: Any = True) -> Any:
    """Map raw quality ``q`` ∈ [0, 1] to the piecewise reward.

    ``reward(q) = (a/100)·q/b`` for ``0 ≤ q ≤ b`` and ``a/100 + (1 − a/100)·(q − b)/(1 − b)``
    for ``b < q ≤ 1``; so 0 → 0, b → a/100, 1 → 1 exactly.

    Args:
        q: a scalar, a sequence, a numpy array or a pandas Series/DataFrame of raw qualities.
        a: score anchor on the 0–100 scale (the reward at ``q = b`` is ``a/100``); 0 ≤ a ≤ 100.
        b: reference quality, 0 < b < 1.
        gate: validity/audit gate, a bool or an array of bools broadcastable with ``q``; where
            False the reward is 0 whatever ``q`` is. The gate is applied *before* the range
            check: a failed batch has no meaningful quality, so a gated-out ``q`` may be NaN.

    Returns:
        A float for a scalar, an ndarray for a sequence/array (the broadcast shape of ``q``
        and ``gate``), a Series/DataFrame with the same index for a pandas input.

    Raises:
        ValueError: if a non-gated ``q`` is outside [0, 1], not finite or not a number, or
            ``a``/``b`` are out of range.

    Examples:
        >>> reward(0.0), reward(0.4530094614433184), reward(1.0)
        (0.0, 0.15, 1.0)
        >>> reward(0.9, gate=False)
        0.0
    """
    try:
        a_f, b_f = float(a), float(b)
    except (TypeError, ValueError):
        raise ValueError(f"a and b must be numbers, got a={a!r}, b={b!r}") from None
    if not (0.0 < b_f < 1.0):
        raise ValueError(f"b must be in (0, 1), got {b!r}")
    if not (0.0 <= a_f <= 100.0):
        raise ValueError(f"a must be in [0, 100], got {a!r}")
    import numpy as np  # heavy: imported on first call
    import pandas as pd

    values = _as_float_array(q)
    gate_arr = np.asarray(gate.to_numpy() if isinstance(gate, (pd.Series, pd.DataFrame)) else gate)
    if gate_arr.dtype.kind not in "biuf":
        raise ValueError(f"gate must be a bool or an array of bools, got {gate!r}")
    try:
        values, gates = np.broadcast_arrays(values, gate_arr.astype(bool))
    except ValueError:
        raise ValueError(f"gate of shape {gate_arr.shape} does not broadcast with q of shape {values.shape}") from None
    checked = values[gates]
    bad = ~np.isfinite(checked) | (checked < 0.0) | (checked > 1.0)
    if bad.any():
        raise ValueError(f"raw quality must be a finite number in [0, 1]; got {checked[bad][:5].tolist()}")
    anchor = a_f / 100.0
    safe = np.where(gates, values, 0.0)  # gated-out entries may be NaN: keep them out of the arithmetic
    low = anchor * (safe / b_f)
    high = np.minimum(anchor + (1.0 - anchor) * ((safe - b_f) / (1.0 - b_f)), 1.0)
    high = np.where(safe == 1.0, 1.0, high)
    out = np.where(gates, np.where(safe <= b_f, low, high), 0.0)
    if isinstance(q, pd.Series):
        return pd.Series(out, index=q.index, name=q.name)
    if isinstance(q, pd.DataFrame):
        return pd.DataFrame(out, index=q.index, columns=q.columns)
    if out.ndim == 0:
        return float(out)
    return out
