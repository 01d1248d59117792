"""Judge panels: how far several judges agree, how their errors correlate, how many independent
judges the panel is worth, and the panel's calibrated mean.

Several judges (models or prompts) score the same items; some items also have human ratings.
`panel` gives, per dimension:

* ``agreement`` — every pair of judges over the items both scored: quadratic-weighted Cohen's
  κ (Cohen 1968) and ordinal Krippendorff's α (Krippendorff, *Content Analysis*, ch. 12), the
  same functions as `reteco_measures.judge.agreement`; ``Panel.matrix(dimension, "kappa_quadratic")``
  lays a statistic out as a judge × judge matrix (1 on the diagonal);
* ``errors`` — each judge against the human value of an item (the mean of its raters' scores):
  ``n, bias`` (mean of judge − human), ``mae``, ``rmse``;
* ``error_correlation`` — for every pair of judges, Pearson's r of their errors ``judge − human``
  over the human-rated items both scored;
* ``effective`` — the effective committee size ``k / (1 + (k − 1)·ρ̄)`` (the design effect of
  equicorrelated errors: ``k`` judges whose errors correlate on average ``ρ̄`` average away as much
  error variance as that many independent ones; Kish 1965, *Survey Sampling*, for the design
  effect; the panel form is that of the jury theorem with correlated votes, Ladha 1992), with
  ``ρ̄`` the mean of the off-diagonal error correlations and a percentile bootstrap interval over
  the human-rated items (items resampled, ``ρ̄`` and the size recomputed). ``ρ̄ ≤ 0`` gives a size
  of at least ``k``; it is reported as computed;
* ``aggregate`` — the panel's score of each item by ``mean``, ``median`` (of the judges' scores;
  a half point with an even number of judges) or ``majority`` (the most frequent score; a tie goes
  to the lowest of the tied scores), its mean over all panel-scored items (``panel_mean``), and
  its prediction-powered mean against the human values (``calibrated, ci_low, ci_high``; PPI++ of
  Angelopoulos, Duchi & Zrnic 2023 through `reteco_measures.stats.calibrate.ppi_mean`: the
  human-rated items are the labelled part, the other panel-scored items the unlabelled part).

Judges' repeats of an item are combined by the lower median first (as `agreement` does).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import Problem
from ..io.ratings import read_ratings, scale_bounds
from ..stats.calibrate import ppi_mean
from .agreement import alpha_ordinal, judge_consensus, judge_scores, kappa_quadratic
from .prompts import canonical

__all__ = ["Panel", "panel", "PANEL_AGGREGATES", "effective_size"]

#: the panel aggregations
PANEL_AGGREGATES = ("mean", "median", "majority")


@dataclass
class Panel:
    """The statistics of a judge panel (module docs): DataFrames ``agreement, errors,
    error_correlation, effective, aggregate``; ``judges``; ``params``."""

    judges: list[str]
    agreement: pd.DataFrame
    errors: pd.DataFrame
    error_correlation: pd.DataFrame
    effective: pd.DataFrame
    aggregate: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)

    def matrix(self, dimension: str, statistic: str = "kappa_quadratic") -> pd.DataFrame:
        """A judge × judge matrix of ``statistic`` (``kappa_quadratic``, ``alpha_ordinal``, ``n``
        or, from ``error_correlation``, ``r``) for one dimension; 1 on the diagonal (``n``: items
        the judge scored)."""
        source = self.error_correlation if statistic == "r" else self.agreement
        part = source[source["dimension"] == canonical(dimension)]
        m = pd.DataFrame(np.nan, index=self.judges, columns=self.judges)
        for a, b, v in zip(part["judge_a"], part["judge_b"], part[statistic], strict=True):
            m.loc[a, b] = m.loc[b, a] = v
        for j in self.judges:
            m.loc[j, j] = 1.0
        return m


def effective_size(k: int, rho_bar: float | np.ndarray) -> float | np.ndarray:
    """``k / (1 + (k − 1)·ρ̄)``: the number of independent judges ``k`` judges with mean error
    correlation ``ρ̄`` are worth (NaN where the denominator is not positive)."""
    rho = np.asarray(rho_bar, dtype=np.float64)
    den = 1.0 + (k - 1) * rho
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, k / np.where(den > 0, den, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out


def _judge_tables(judgments: Any, scale: Any, problems: list[Problem] | None) -> dict[str, pd.DataFrame]:
    """{judge: turn_id, dimension, score} (repeats combined) from a mapping or a frame with ``judge``."""
    if isinstance(judgments, Mapping):
        parts = {str(k): v for k, v in judgments.items()}
    elif isinstance(judgments, pd.DataFrame):
        if "judge" not in judgments.columns:
            raise ValueError("panel judgments need a 'judge' column (or pass a {judge: judgments} mapping)")
        parts = {str(k): g.drop(columns=["judge"]).reset_index(drop=True)
                 for k, g in judgments.groupby(judgments["judge"].astype(str), sort=False)}
    elif isinstance(judgments, (str, os.PathLike)):
        raise ValueError("panel judgments: pass a {judge: file} mapping or a DataFrame with a 'judge' column")
    else:
        raise TypeError(f"panel judgments: expected a mapping or a DataFrame, not {type(judgments).__name__}")
    if len(parts) < 2:
        raise ValueError(f"a panel needs at least two judges; got {list(parts)}")
    return {k: judge_consensus(judge_scores(v, problems, scale=scale)) for k, v in parts.items()}


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 2:
        return float("nan")
    x, y = x - x.mean(), y - y.mean()
    den = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / den) if den > 0 else float("nan")


def _rho_bar(E: np.ndarray) -> np.ndarray:
    """Mean off-diagonal Pearson correlation of the columns of ``E`` (..., items, judges)."""
    E = E - E.mean(axis=-2, keepdims=True)
    cov = np.einsum("...ij,...ik->...jk", E, E)
    sd = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov / (sd[..., :, None] * sd[..., None, :])
    k = E.shape[-1]
    off = ~np.eye(k, dtype=bool)
    return r[..., off].mean(axis=-1)


def _majority(S: np.ndarray, low: int, high: int) -> np.ndarray:
    """Most frequent score per row of ``S`` (items × judges, no NaN); ties to the lowest."""
    cats = np.arange(low, high + 1)
    counts = (S[:, :, None] == cats[None, None, :]).sum(axis=1)
    return cats[np.argmax(counts, axis=1)].astype(np.float64)


def panel(
    judgments: Any,
    human: Any = None,
    *,
    dimensions: Sequence[str] | None = None,
    scale: str | tuple[int, int] | None = None,
    method: str = "ppi++",
    ci: float = 0.95,
    n_resamples: int = 1_000,
    seed: int = 0,
    problems: list[Problem] | None = None,
) -> Panel:
    """The statistics of a judge panel (module docs).

    Args:
        judgments: ``{judge: judgments}`` (each what `agreement` takes as the judge: a DataFrame
            ``turn_id, dimension, score`` or judgments JSONL file(s)), or one DataFrame with a
            ``judge`` column.
        human: human ratings ``turn_id, dimension, rater, score`` (see `read_ratings`), or None
            (then only the agreement matrix and the uncalibrated panel means).
        dimensions: the dimensions to report (default: every judged one, first seen first).
        scale: as `agreement` (default: each dimension's own).
        method, ci: the calibration (``"ppi++"`` or ``"ppi"``) and the level of every interval.
        n_resamples, seed: the bootstrap of the effective committee size.
        problems: receives rows left out (default: a `DataFormatWarning`).

    Returns:
        a `Panel`.
    """
    tables = _judge_tables(judgments, scale, problems)
    judges = list(tables)
    h = read_ratings(human, problems) if human is not None else None
    dims = [canonical(d) for d in dimensions] if dimensions else list(dict.fromkeys(
        d for t in tables.values() for d in t["dimension"]))
    agree, errs, corr, eff, agg = [], [], [], [], []
    q = (1 - ci) / 2
    for dim in dims:
        low, high = scale_bounds(dim, scale)
        wide = pd.concat({j: t[t["dimension"] == dim].set_index("turn_id")["score"] for j, t in tables.items()},
                         axis=1).reindex(columns=judges).astype(np.float64)
        for a, b in itertools.combinations(judges, 2):
            both = wide[[a, b]].dropna()
            x, y = both[a].to_numpy(), both[b].to_numpy()
            agree.append({"dimension": dim, "judge_a": a, "judge_b": b, "n": len(both),
                          "kappa_quadratic": kappa_quadratic(x, y, low, high) if len(both) else np.nan,
                          "alpha_ordinal": alpha_ordinal(both.to_numpy(), low, high) if len(both) else np.nan})
        hv = None
        if h is not None:
            hd = h[h["dimension"] == dim]
            hv = hd.groupby("turn_id")["score"].mean()
            for j in judges:
                common = wide[j].dropna().index.intersection(hv.index)
                e = wide.loc[common, j].to_numpy() - hv.reindex(common).to_numpy()
                errs.append({"dimension": dim, "judge": j, "n": len(e),
                             "bias": float(e.mean()) if len(e) else np.nan,
                             "mae": float(np.abs(e).mean()) if len(e) else np.nan,
                             "rmse": float(np.sqrt((e * e).mean())) if len(e) else np.nan})
            for a, b in itertools.combinations(judges, 2):
                common = wide[[a, b]].dropna().index.intersection(hv.index)
                ea = wide.loc[common, a].to_numpy() - hv.reindex(common).to_numpy()
                eb = wide.loc[common, b].to_numpy() - hv.reindex(common).to_numpy()
                corr.append({"dimension": dim, "judge_a": a, "judge_b": b, "n": len(common), "r": _pearson(ea, eb)})
            full = wide.dropna().index.intersection(hv.index)  # rated items every judge scored
            E = wide.loc[full, judges].to_numpy() - hv.reindex(full).to_numpy()[:, None]
            k = len(judges)
            rho = float(_rho_bar(E)) if len(full) >= 2 else np.nan
            lo = hi = np.nan
            if len(full) >= 2 and n_resamples > 0:
                rng = np.random.default_rng([int(seed), len(eff)])
                draws = _rho_bar(E[rng.integers(0, len(full), (n_resamples, len(full)))])
                sizes = effective_size(k, draws)
                sizes = np.asarray(sizes)[~np.isnan(sizes)]
                if len(sizes):
                    lo, hi = (float(v) for v in np.quantile(sizes, [q, 1 - q]))
            eff.append({"dimension": dim, "k": k, "n": len(full), "rho_bar": rho,
                        "effective_size": effective_size(k, rho) if not np.isnan(rho) else np.nan,
                        "ci_low": lo, "ci_high": hi})
        scored = wide.dropna()
        S = scored.to_numpy()
        values = {"mean": S.mean(axis=1), "median": np.median(S, axis=1),
                  "majority": _majority(S, low, high) if len(S) else np.empty(0)}
        for name in PANEL_AGGREGATES:
            v = pd.Series(values[name], index=scored.index)
            row = {"dimension": dim, "aggregate": name, "n": len(v), "n_human": 0,
                   "panel_mean": float(v.mean()) if len(v) else np.nan,
                   "calibrated": np.nan, "ci_low": np.nan, "ci_high": np.nan}
            if hv is not None:
                lab = v.index.intersection(hv.index)
                unl = v.index.difference(hv.index)
                res = ppi_mean(hv.reindex(lab).to_numpy(), v.reindex(lab).to_numpy(), v.reindex(unl).to_numpy(),
                               method=method, ci=ci)
                row.update({"n_human": len(lab), "calibrated": float(res.estimate), "ci_low": float(res.ci_low),
                            "ci_high": float(res.ci_high)})
            agg.append(row)
    return Panel(
        judges=judges,
        agreement=pd.DataFrame(agree, columns=["dimension", "judge_a", "judge_b", "n", "kappa_quadratic",
                                               "alpha_ordinal"]),
        errors=pd.DataFrame(errs, columns=["dimension", "judge", "n", "bias", "mae", "rmse"]),
        error_correlation=pd.DataFrame(corr, columns=["dimension", "judge_a", "judge_b", "n", "r"]),
        effective=pd.DataFrame(eff, columns=["dimension", "k", "n", "rho_bar", "effective_size", "ci_low",
                                             "ci_high"]),
        aggregate=pd.DataFrame(agg, columns=["dimension", "aggregate", "n", "n_human", "panel_mean", "calibrated",
                                             "ci_low", "ci_high"]),
        params={"method": method, "ci": ci, "n_resamples": n_resamples, "seed": seed, "scale": scale},
    )
