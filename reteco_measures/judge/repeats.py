"""Repeated stochastic judge runs: how much of a judge mean is the judge's own noise.

Given ``k`` repeats of the judge on the same items (the ``repeat`` column of judgments, as
``judge generation --repeats K`` writes them), `repeats` gives per dimension:

* ``mean`` — the mean over items of each item's mean over its repeats;
* ``replicate_ci_low, replicate_ci_high`` — the replicate-level interval: each repeat ``r`` gives a
  judge mean ``m_r`` over the items it scored, and the Student-t interval
  ``m̄ ± t_{k−1}·s/√k`` over the ``k`` replicate means says how far another run of the same
  judge on the same items may land (run-to-run noise only; NaN for ``k < 2``);
* ``ci_low, ci_high`` — a percentile bootstrap over the items of their repeat means (items and
  judge noise together: what a new sample of items judged the same way may give);
* ``flip_share`` — the share of items whose repeats do not all agree; ``flip_rate`` (per item in
  ``items``, its mean here) — the share of pairs of an item's repeats that disagree,
  ``1 − Σ_c n_c(n_c − 1) / (n(n − 1))`` over its ``n`` repeats, ``n_c`` of them scoring ``c``;
* ``pass_k`` — pass^k for pass/fail dimensions (Yao et al. 2024, "τ-bench", arXiv:2406.12045):
  the chance that all of ``k`` independent repeats pass, estimated without bias per item by
  ``C(c, k) / C(n, k)`` (``c`` passes of ``n`` repeats) and averaged over the items; ``k`` is the
  smallest number of repeats of an item (`pass_hat_k` gives any ``k``). A score passes when it is
  1 on the binary scale, or at least ``pass_threshold`` when one is given; NaN otherwise.

`gate_repeats` is the regression gate of `reteco_measures.stats.gate` on two judged systems: each
item's value is its mean over the repeats, the item is the resampled unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np
import pandas as pd

from ..errors import Problem
from ..io.ratings import scale_bounds
from ..stats.gate import MIN_UNITS, Gate, gate_frame
from .agreement import judge_scores
from .prompts import canonical

__all__ = ["Repeats", "repeats", "pass_hat_k", "gate_repeats", "REPEAT_COLUMNS"]

#: the columns of `Repeats.summary`
REPEAT_COLUMNS = ["dimension", "n_items", "k", "mean", "replicate_ci_low", "replicate_ci_high", "ci_low", "ci_high",
                  "flip_share", "flip_rate", "pass_k"]


@dataclass
class Repeats:
    """``summary`` (one row per dimension, `REPEAT_COLUMNS`) and ``items`` (``dimension,
    turn_id, n_repeats, mean, flip_rate, passes``)."""

    summary: pd.DataFrame
    items: pd.DataFrame


def pass_hat_k(passes: np.ndarray, n: np.ndarray, k: int) -> float:
    """Unbiased pass^k over items: the mean of ``C(c, k) / C(n, k)`` (``c = passes``, ``n``
    repeats per item); items with fewer than ``k`` repeats are left out (NaN when none is left)."""
    c, n = np.asarray(passes, dtype=np.int64), np.asarray(n, dtype=np.int64)
    keep = n >= k
    if not keep.any() or k < 1:
        return float("nan")
    return float(np.mean([comb(int(ci), k) / comb(int(ni), k) for ci, ni in zip(c[keep], n[keep], strict=True)]))


def _item_table(j: pd.DataFrame, dim: str, pass_threshold: float | None, low: int, high: int) -> pd.DataFrame:
    g = j.groupby("turn_id", sort=False)["score"]
    n = g.size()
    counts = j.groupby(["turn_id", "score"]).size()
    same = (counts * (counts - 1)).groupby(level=0).sum().reindex(n.index)
    with np.errstate(invalid="ignore", divide="ignore"):
        flip = np.where(n > 1, 1.0 - same / (n * (n - 1)), np.nan)
    if pass_threshold is not None:
        passed = j["score"] >= pass_threshold
    elif (low, high) == (0, 1):
        passed = j["score"] == 1
    else:
        passed = None
    out = pd.DataFrame({"dimension": dim, "turn_id": n.index, "n_repeats": n.to_numpy(),
                        "mean": g.mean().reindex(n.index).to_numpy(), "flip_rate": flip})
    out["passes"] = (passed.groupby(j["turn_id"]).sum().reindex(n.index).to_numpy()
                     if passed is not None else np.nan)
    return out.reset_index(drop=True)


def repeats(
    judgments: Any,
    *,
    dimensions: Sequence[str] | None = None,
    scale: str | tuple[int, int] | None = None,
    pass_threshold: float | None = None,
    ci: float = 0.95,
    n_resamples: int = 1_000,
    seed: int = 0,
    problems: list[Problem] | None = None,
) -> Repeats:
    """Replicate-level intervals, flip rates and pass^k of repeated judge runs (module docs).

    Args:
        judgments: what `agreement` takes as the judge (a DataFrame ``turn_id, dimension,
            repeat, score`` or judgments JSONL file(s)), with several repeats per item.
        dimensions: the dimensions to report (default: every judged one).
        scale: as `agreement`. pass_threshold: a score at or above it passes (default: the
            binary scale's 1; other scales have no pass^k without it).
        ci, n_resamples, seed: the level of both intervals and the item bootstrap.
        problems: receives rows left out (default: a `DataFormatWarning`).
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), not {ci!r}")
    from scipy import stats as sps

    j = judge_scores(judgments, problems, scale=scale)
    dims = [canonical(d) for d in dimensions] if dimensions else list(dict.fromkeys(j["dimension"]))
    rows, tables = [], []
    for d_i, dim in enumerate(dims):
        low, high = scale_bounds(dim, scale)
        part = j[j["dimension"] == dim]
        items = _item_table(part, dim, pass_threshold, low, high)
        tables.append(items)
        rep = part.groupby("repeat")["score"].mean().to_numpy(np.float64)
        k = len(rep)
        r_lo = r_hi = np.nan
        if k >= 2:
            half = sps.t.ppf(1 - (1 - ci) / 2, k - 1) * rep.std(ddof=1) / np.sqrt(k)
            r_lo, r_hi = rep.mean() - half, rep.mean() + half
        m = items["mean"].to_numpy(np.float64)
        lo = hi = np.nan
        if len(m) >= 2 and n_resamples > 0:
            rng = np.random.default_rng([int(seed), d_i])
            boot = m[rng.integers(0, len(m), (n_resamples, len(m)))].mean(axis=1)
            lo, hi = (float(v) for v in np.quantile(boot, [(1 - ci) / 2, 1 - (1 - ci) / 2]))
        kmin = int(items["n_repeats"].min()) if len(items) else 0
        pk = (pass_hat_k(items["passes"].to_numpy(), items["n_repeats"].to_numpy(), kmin)
              if len(items) and items["passes"].notna().all() else np.nan)
        rows.append({"dimension": dim, "n_items": len(items), "k": k, "mean": float(m.mean()) if len(m) else np.nan,
                     "replicate_ci_low": r_lo, "replicate_ci_high": r_hi, "ci_low": lo, "ci_high": hi,
                     "flip_share": float(np.mean(items["flip_rate"] > 0)) if len(items) else np.nan,
                     "flip_rate": float(np.nanmean(items["flip_rate"])) if items["flip_rate"].notna().any() else np.nan,
                     "pass_k": pk})
    items = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(
        columns=["dimension", "turn_id", "n_repeats", "mean", "flip_rate", "passes"])
    return Repeats(pd.DataFrame(rows, columns=REPEAT_COLUMNS), items)


def gate_repeats(
    baseline: Any,
    candidate: Any,
    *,
    dimension: str,
    margin: float = 0.0,
    alpha: float = 0.05,
    scale: str | tuple[int, int] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    min_units: int = MIN_UNITS,
    problems: list[Problem] | None = None,
) -> Gate:
    """The regression gate between two judged systems' repeated judgments on one dimension: each
    item's value is its mean over the repeats, the items are the resampled units (module docs).
    Items judged for one system only are left out (``n`` counts the shared ones)."""
    dim = canonical(dimension)
    parts = []
    for name, source in (("baseline", baseline), ("candidate", candidate)):
        j = judge_scores(source, problems, scale=scale)
        j = j[j["dimension"] == dim]
        means = j.groupby("turn_id")["score"].mean()
        parts.append(pd.DataFrame({"run": name, "query_id": means.index.astype(str), "value": means.to_numpy(),
                                   "weight": 1.0}))
    frame = pd.concat(parts, ignore_index=True)
    shared = set(parts[0]["query_id"]) & set(parts[1]["query_id"])
    frame = frame[frame["query_id"].isin(shared)]
    if frame.empty:
        raise ValueError(f"no item judged on {dim!r} for both systems")
    return gate_frame(frame, margin=margin, alpha=alpha, n_resamples=n_resamples, seed=seed, min_units=min_units,
                      measure=dim, unit="item")
