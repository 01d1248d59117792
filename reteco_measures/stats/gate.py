"""A regression gate: is a candidate worse than a baseline by more than a margin?

`gate_frame` decides from the per-query frame of one measure for two runs (``run, query_id,
value, weight`` [+ ``unit, stratum``], as `reteco_measures.stats.design` describes), so it
resamples the benchmark's own statistical unit and recomputes the benchmark's own aggregate (a
weighted mean over the defined rows: queries, turns, conversations, cells of a macro average).

* ``delta = candidate − baseline`` of the two aggregates (higher is better);
* a paired percentile bootstrap over the units (one draw of units for both runs, stratified where
  the measure has strata) gives the resampled deltas ``δ*``;
* ``ci_low, ci_high`` are their ``alpha`` and ``1 − alpha`` percentiles: a two-sided
  ``1 − 2·alpha`` interval whose upper end is the one-sided ``1 − alpha`` upper confidence bound
  of the delta;
* ``p_value = (1 + #{δ* ≥ −margin}) / (1 + B)`` is the one-sided bootstrap p-value of the null
  "the candidate is at most ``margin`` worse" (``delta ≥ −margin``) against "it is worse by more";
* the verdict: ``"worse"`` (exit 1) when ``p_value < alpha`` — the upper bound of the delta lies
  below ``−margin``; ``"cannot_tell"`` (exit 2) when fewer than ``min_units`` units carry both
  runs (default `MIN_UNITS`: with fewer, the resamples take a handful of distinct values) or a
  delta is undefined; ``"not_worse"`` (exit 0) otherwise. The gate fails a change only on evidence
  that it is worse: a noisy equal candidate passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .tests import bootstrap_aggregates, build_paired

__all__ = ["Gate", "gate_frame", "MIN_UNITS", "VERDICTS", "EXIT_CODES"]

#: fewest units carrying both runs for a verdict other than ``cannot_tell``
MIN_UNITS = 10
#: the verdicts, in exit-code order
VERDICTS = ("not_worse", "worse", "cannot_tell")
#: exit code of each verdict
EXIT_CODES = {v: i for i, v in enumerate(VERDICTS)}


@dataclass
class Gate:
    """The decision of a regression gate (module docs).

    Attributes:
        verdict: ``"not_worse"`` | ``"worse"`` | ``"cannot_tell"``; ``exit_code`` 0 / 1 / 2.
        delta: candidate − baseline. ci_low, ci_high: the ``1 − 2·alpha`` percentile interval
            of the delta (``ci_high``: the one-sided ``1 − alpha`` upper bound). p_value: the
            one-sided bootstrap p-value of "not worse beyond the margin". n: units carrying both
            runs. baseline_value, candidate_value: the aggregates. reason: why, in words.
        params: measure, unit, margin, alpha, n_resamples, seed, min_units.
    """

    verdict: str
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int
    baseline_value: float = float("nan")
    candidate_value: float = float("nan")
    reason: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 = not worse beyond the margin, 1 = worse, 2 = cannot tell."""
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as None), with ``exit_code``."""
        def clean(v: Any) -> Any:
            return None if isinstance(v, float) and math.isnan(v) else v
        return {"verdict": self.verdict, "exit_code": self.exit_code,
                **{k: clean(getattr(self, k)) for k in ("delta", "ci_low", "ci_high", "p_value", "n",
                                                        "baseline_value", "candidate_value")},
                "reason": self.reason, "params": dict(self.params)}


def gate_frame(
    per_query: pd.DataFrame,
    *,
    baseline: str = "baseline",
    candidate: str = "candidate",
    margin: float = 0.0,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    min_units: int = MIN_UNITS,
    measure: str = "",
    unit: str = "query",
) -> Gate:
    """The gate on the per-query rows of one measure for two runs (module docs).

    Args:
        per_query: ``run, query_id, value`` [+ ``weight, unit, stratum``]; other runs are ignored.
        baseline, candidate: the two runs' names in the ``run`` column.
        margin: how much worse (in the measure's units) still counts as not worse (>= 0).
        alpha: the one-sided level (0 < alpha < 0.5).
        n_resamples, seed: the paired bootstrap. min_units: fewest shared units for a verdict.
        measure, unit: names recorded in ``params`` for reports.

    Raises:
        ValueError: a bad margin / alpha / n_resamples, a run missing from the frame.
    """
    if not (isinstance(margin, (int, float)) and margin >= 0 and math.isfinite(margin)):
        raise ValueError(f"margin must be a finite number >= 0, not {margin!r}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), not {alpha!r}")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    params = {"measure": measure, "unit": unit, "margin": float(margin), "alpha": float(alpha),
              "n_resamples": int(n_resamples), "seed": int(seed), "min_units": int(min_units)}
    frame = per_query[per_query["run"].astype(str).isin([baseline, candidate])]
    frame = frame.assign(run=frame["run"].astype(str))
    if "weight" not in frame.columns:
        frame = frame.assign(weight=1.0)
    for r in (baseline, candidate):
        if not (frame["run"] == r).any():
            raise ValueError(f"the per-query frame has no rows of run {r!r}")
    P = build_paired(frame, [baseline, candidate])
    both = (P.W > 0).all(axis=0)
    P = P.on_units(both)
    n = int(both.sum())
    base, cand = (float(v) for v in P.ratio(P.S.sum(axis=1), P.W.sum(axis=1)))
    delta = cand - base
    if n < min_units or math.isnan(delta):
        why = (f"only {n} {unit}(s) carry both runs (at least {min_units} needed)" if n < min_units
               else "the delta is undefined")
        return Gate("cannot_tell", delta, float("nan"), float("nan"), float("nan"), n, base, cand, why, params)
    agg = bootstrap_aggregates(P, int(n_resamples), np.random.default_rng([int(seed), 20150809]))
    d = agg[:, 1] - agg[:, 0]
    d = d[~np.isnan(d)]
    low, high = (float(v) for v in np.quantile(d, [alpha, 1 - alpha]))
    p = float((1 + np.sum(d >= -margin - 1e-12)) / (1 + len(d)))
    if p < alpha:
        verdict = "worse"
        why = (f"worse by more than the margin {margin:g}: the {1 - alpha:.0%} upper bound of the delta "
               f"{high:.4f} < {-margin:g}")
    else:
        verdict = "not_worse"
        why = (f"no evidence of a loss beyond the margin {margin:g}: the {1 - alpha:.0%} upper bound of the "
               f"delta {high:.4f} >= {-margin:g}")
    return Gate(verdict, delta, low, high, p, n, base, cand, why, params)
