"""``rm.gate``: the regression gate of `reteco_measures.stats.gate` on a benchmark's own
measure, statistical unit and aggregation.

Both runs are scored by the benchmark's engine exactly as `leaderboard` scores submissions (its
contract, its official measure unless ``measure`` names another, its per-query weights, its unit
and strata: queries for 1a, queries after step averaging for 1b, turns — or conversations with
``average='conversation'`` — for 2a, requests within collection × condition cells for
Spoken-Query); the gate then resamples those units.
"""

from __future__ import annotations

from typing import Any

from ..stats.gate import MIN_UNITS, Gate, gate_frame
from .leaderboard import leaderboard

__all__ = ["gate"]


def gate(
    baseline: Any,
    candidate: Any,
    *,
    benchmark: Any,
    margin: float = 0.0,
    alpha: float = 0.05,
    data: Any = None,
    split: str | None = None,
    measure: str | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    min_units: int = MIN_UNITS,
    on_mismatch: str = "error",
    **options: Any,
) -> Gate:
    """Is ``candidate`` worse than ``baseline`` by more than ``margin`` on ``benchmark``?

    Args:
        baseline, candidate: the two runs (files or anything `Benchmark.score` takes).
        benchmark: the benchmark or its name (``"reteco-2a"``).
        margin: how much worse (in the measure's units) still passes (>= 0).
        alpha: the one-sided level of the test (0 < alpha < 0.5).
        data, split, options: as `Benchmark.score`. measure: the measure's printed name
            (default: the official one).
        n_resamples, seed: the paired bootstrap. min_units: fewest units for a verdict.
        on_mismatch: as `leaderboard`: a run whose query ids do not meet the benchmark's raises
            `InputMismatchError` (``'error'``) or warns (``'warn'``).

    Returns:
        a `Gate`: ``verdict`` ``"not_worse"`` / ``"worse"`` / ``"cannot_tell"``, ``delta``,
        ``ci_low``, ``ci_high``, ``p_value``, ``n`` (`reteco_measures.stats.gate`).
    """
    board = leaderboard(benchmark, {"baseline": baseline, "candidate": candidate}, data=data, split=split,
                        measure=measure, correction=None, n_resamples=200, seed=seed, ties=False,
                        on_mismatch=on_mismatch, workers=1, **options)
    pq = board.per_query
    if "measure" in pq.columns:
        pq = pq[pq["measure"] == board.measure]
    unit = board.design["unit"].iloc[0] if hasattr(board, "design") and "unit" in getattr(board.design, "columns", []) \
        else "query"
    result = gate_frame(pq, baseline="baseline", candidate="candidate", margin=margin, alpha=alpha,
                        n_resamples=n_resamples, seed=seed, min_units=min_units, measure=board.measure,
                        unit=str(unit))
    result.params["benchmark"] = board.benchmark
    return result
