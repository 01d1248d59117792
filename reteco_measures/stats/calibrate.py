"""Prediction-powered judge means: an LLM judge's mean score corrected by a human spot-check.

The judge scores every item; people rate a random subset. `calibrate` combines the two into
an estimate of the mean *human* score over all judged items, with a confidence interval that
accounts for the judge's bias and for the size of the human sample — prediction-powered inference
(Angelopoulos, Bates, Fannjiang, Jordan, Zrnic 2023, "Prediction-powered inference", *Science*
382) and its power-tuned form PPI++ (Angelopoulos, Duchi, Zrnic 2023, "PPI++: Efficient
Prediction-Powered Inference", arXiv:2311.01453).

Notation, per dimension (and per ``by`` group), on the normalised 0-1 scale of
`aggregate` ((s - 1)/4 on RETECO's 1-5, s/4 on iKAT's 0-4, 0/1 for
TEMPO verdicts):

* the *labelled* items: the n judged items that also have a human rating (column ``n_human``; column ``n`` counts every judged item, n + N); ``Y_i`` is the mean
  of the item's raters, ``f_i`` the judge's value (its repeats combined, by default by the mean,
  as ``judge aggregate`` combines them);
* the *unlabelled* items: the ``N`` judged items without a human rating, judge values ``f~_j``.

The estimate and its normal interval are (PPI++ eq. for the mean; λ = 1 is classic PPI)::

    θ̂(λ) = mean_j(λ f~_j) + mean_i(Y_i − λ f_i)
    se²  = var(λ f~) / N + var(Y − λ f) / n          (variances with divisor N, n)
    CI   = θ̂ ± z_{1−(1−ci)/2} · se

``method="ppi"`` uses λ = 1. ``method="ppi++"`` uses the variance-minimising
``λ̂ = Cov(Y, f) / ((1 + n/N) · Var(f ∪ f~))`` (the covariance over the labelled items with
divisor n, the variance over all judged items with divisor n + N − 1), clipped to [0, 1]: λ̂ = 0
falls back to the classical mean of the human ratings, λ̂ = 1 is PPI. These are the formulas of
the ``ppi-python`` package's ``ppi_mean_pointestimate`` / ``ppi_mean_ci`` (which the tests run
side by side); λ̂ is estimated from the same data, which leaves the interval's asymptotic coverage
unchanged (PPI++, Theorem 1).

Degenerate cases (where ``ppi-python`` returns NaN or a zero-width interval):

* no unlabelled item (every judged item is rated): λ = 0, the classical CLT interval of the human
  mean;
* a constant judge (Var(f) = 0): the judge carries no information and λ = 0;
* one labelled item: the rectifier's variance cannot be estimated; the estimate uses λ = 1 and
  the interval is NaN (with a warning);
* no labelled item: no calibrated value, NaN interval, a warning.

``bias`` is the judge's mean minus the human mean *on the labelled items* (the paired difference
``mean_i(f_i − Y_i)``, positive when the judge scores above the raters); classic PPI subtracts
exactly this from the judge's mean over the unlabelled items. ``judge_mean`` is the judge's mean
over all ``n + N`` items (what ``judge aggregate`` reports), ``human_mean`` the raters' mean over
the labelled items.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataFormatWarning, Problem, user_stacklevel
from ..io.judgments import AGGREGATES, DIM_SCALE, SCALES, canonical, collapse_repeats, read_judgments
from ..io.ratings import out_of_scale, read_ratings, read_table, report_problems, scale_bounds
from ..report.text import frame_records
from ..stats.compare import file_run_name

__all__ = ["METHODS", "CALIBRATION_COLUMNS", "PPIResult", "ppi_mean", "calibrate", "calibration_section"]

#: the estimators `calibrate` offers
METHODS = ("ppi", "ppi++")

#: the columns of `calibrate` (after the ``by`` column, when given)
CALIBRATION_COLUMNS = ["dimension", "n", "n_human", "judge_mean", "human_mean", "calibrated", "ci_low", "ci_high",
                       "bias", "lam"]

Frame = pd.DataFrame | str | os.PathLike


# ------------------------------------------------------------------------------------------------
# the estimator, on arrays


@dataclass(frozen=True)
class PPIResult:
    """Prediction-powered estimates (arrays of the batch shape, or floats for 1-D inputs)."""

    estimate: Any
    ci_low: Any
    ci_high: Any
    se: Any
    lam: Any


def _check_method(method: str, ci: float) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if not (isinstance(ci, (int, float)) and 0 < ci < 1):
        raise ValueError(f"ci must be a confidence level in (0, 1), not {ci!r}")


def ppi_mean(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_unlabelled: np.ndarray,
    *,
    method: str = "ppi++",
    ci: float = 0.95,
) -> PPIResult:
    """The prediction-powered mean and its normal confidence interval (module docs).

    Args:
        y: human values of the labelled items, shape ``(..., n)``.
        yhat: the judge's values of the same items, shape ``(..., n)``.
        yhat_unlabelled: the judge's values of the unlabelled items, shape ``(..., N)``.
        method: ``"ppi"`` (λ = 1) or ``"ppi++"`` (power-tuned λ̂, clipped to [0, 1]).
        ci: confidence level.

    Leading axes are a batch: every estimate is computed at once (vectorised), e.g. for the
    repetitions of a simulation. No value may be NaN.

    Returns:
        `PPIResult` with ``estimate, ci_low, ci_high, se, lam``.
    """
    _check_method(method, ci)
    y = np.asarray(y, dtype=np.float64)
    f = np.asarray(yhat, dtype=np.float64)
    fu = np.asarray(yhat_unlabelled, dtype=np.float64)
    if y.shape != f.shape:
        raise ValueError(f"y and yhat must have the same shape, not {y.shape} and {f.shape}")
    if fu.shape[:-1] != y.shape[:-1]:
        raise ValueError(f"yhat_unlabelled's batch shape {fu.shape[:-1]} differs from y's {y.shape[:-1]}")
    n, N = y.shape[-1], fu.shape[-1]
    if n == 0:
        nan = np.full(y.shape[:-1], np.nan)
        return _result(nan, nan, nan, nan, nan)
    if method == "ppi" or n == 1:
        lam = np.ones(y.shape[:-1])
    else:
        lam = _power_tuned_lambda(y, f, fu)
    if N == 0:
        lam = np.zeros(y.shape[:-1])
    lam_ = lam[..., None]
    rect = y - lam_ * f
    imputed = lam_ * fu
    estimate = rect.mean(axis=-1) + (imputed.mean(axis=-1) if N else 0.0)
    var = rect.var(axis=-1) / n + (imputed.var(axis=-1) / N if N else 0.0)
    se = np.sqrt(var)
    if n == 1:
        se = np.full(y.shape[:-1], np.nan)
    z = NormalDist().inv_cdf(1.0 - (1.0 - ci) / 2.0)
    return _result(estimate, estimate - z * se, estimate + z * se, se, lam)


def _power_tuned_lambda(y: np.ndarray, f: np.ndarray, fu: np.ndarray) -> np.ndarray:
    n, N = y.shape[-1], fu.shape[-1]
    cov = ((y - y.mean(axis=-1, keepdims=True)) * (f - f.mean(axis=-1, keepdims=True))).mean(axis=-1)
    if N == 0:
        return np.zeros(y.shape[:-1])
    both = np.concatenate([f, fu], axis=-1)
    var = both.var(axis=-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = cov / ((1.0 + n / N) * var)
    lam = np.where(var > 0, lam, 0.0)  # a constant judge carries no information
    return np.clip(lam, 0.0, 1.0)


def _result(estimate, lo, hi, se, lam) -> PPIResult:
    def out(a):
        a = np.asarray(a, dtype=np.float64)
        return float(a) if a.ndim == 0 else a

    return PPIResult(out(estimate), out(lo), out(hi), out(se), out(lam))


# ------------------------------------------------------------------------------------------------
# inputs


def _check_scale(scale: str | tuple[int, int] | None) -> None:
    if scale is None:
        return
    if isinstance(scale, tuple):
        if len(scale) != 2 or not all(isinstance(v, (int, np.integer)) for v in scale) or scale[1] <= scale[0]:
            raise ValueError(f"a scale (low, high) needs two integers with low < high, not {scale!r}")
        return
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(sorted(SCALES))} or give (low, high)")


def _is_source(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike, pd.DataFrame))


def _judge_groups(judge: Any, by: str | None) -> list[tuple[Any, Any, np.ndarray | None]]:
    """``[(group value, judgment source, original row positions of a split DataFrame or None)]``
    (one group ``None`` without ``by``)."""
    if by is None:
        if isinstance(judge, Mapping):
            raise ValueError("a {group: judgments} mapping needs by= (the name of its keys' column, e.g. by='run')")
        return [(None, judge, None)]
    if isinstance(judge, Mapping):
        return [(k, v, None) for k, v in judge.items()]
    if isinstance(judge, pd.DataFrame):
        if by not in judge.columns:
            raise ValueError(f"by={by!r}: the judgment frame has no {by!r} column")
        frame = judge.reset_index(drop=True)
        return [(k, part.drop(columns=[by]).reset_index(drop=True), part.index.to_numpy())
                for k, part in frame.groupby(by, sort=False, dropna=False)]
    paths = [judge] if _is_source(judge) else list(judge)
    if by == "run" and all(isinstance(p, (str, os.PathLike)) for p in paths):
        names = [file_run_name(p) for p in paths]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"two judgment files have the run name {dup}: pass a {{run: file}} mapping instead")
        return [(name, p, None) for name, p in zip(names, paths, strict=True)]
    raise ValueError(f"by={by!r} with judgment files: give a {{{by}: judgments}} mapping, a DataFrame with a "
                     f"{by!r} column, or by='run' with one judgments file per run (named by its file name)")


def _human_groups(human: Any, by: str | None, keys: list[Any],
                  problems: list[Problem]) -> tuple[dict[Any, pd.DataFrame], bool]:
    """Ratings per group (``read_ratings`` frames) and whether one set of ratings serves every group."""
    if by is None:
        return {None: read_ratings(human, problems, keep_lines=True)}, True
    if isinstance(human, Mapping):
        return {k: read_ratings(v, problems, keep_lines=True) for k, v in human.items()}, False
    frame = human if isinstance(human, pd.DataFrame) else None
    path = None
    if frame is None:
        path = str(human)
        frame = read_table(human)
    if by not in frame.columns:
        return {None: read_ratings(human if path is None else path, problems, keep_lines=True)}, True
    out = {}
    frame = frame.reset_index(drop=True)
    for k, part in frame.groupby(by, sort=False, dropna=False):
        found: list[Problem] = []
        # the part keeps the file's row positions as its index: problems name the file and line
        out[_key_like(k, keys)] = read_ratings(part.drop(columns=[by]), found, keep_lines=True, path=path)
        problems.extend(replace(p, message=f"{by} {k}: {p.message}") for p in found)
    return out, False


def _key_like(k: Any, keys: list[Any]) -> Any:
    """A group value read from a text file ("3") matched to the judgments' group value (3)."""
    if k in keys:
        return k
    for key in keys:
        if str(key) == str(k):
            return key
    return k


def _judge_values(source: Any, scale, aggregate: str, problems: list[Problem], rows: np.ndarray | None = None,
                  label: str = "") -> pd.DataFrame:
    """``turn_id, dimension, value`` (normalised, repeats combined) of the valid judgments;
    ``rows``: the original row positions of a DataFrame split by group (for the problems)."""
    frame, found = read_judgments(source, scale=scale, keep_invalid=False)
    if rows is not None:
        found = [replace(p, line=int(rows[p.line - 1]) + 1 if p.line and 1 <= p.line <= len(rows) else p.line,
                         message=f"{label}: {p.message}") for p in found]
    problems.extend(found)
    for dim in dict.fromkeys(frame["dimension"].tolist()):
        scale_bounds(dim, scale)  # a dimension without a known scale is an error here: no normalised value
    items = collapse_repeats(frame, aggregate)
    return items.loc[items["valid"], ["turn_id", "dimension", "value"]]


def _human_values(ratings: pd.DataFrame, scale, found: list[Problem]) -> pd.DataFrame:
    """``turn_id, dimension, value`` (the normalised mean of the raters) of rated items; a rating
    off its dimension's scale is left out, with a problem in ``found`` naming its file and line."""
    if ratings.empty:
        return pd.DataFrame({"turn_id": [], "dimension": [], "value": []})
    bounds = {d: scale_bounds(d, scale) for d in dict.fromkeys(ratings["dimension"].tolist())}
    ratings, off = out_of_scale(ratings, bounds, hint=" (ratings on another scale? give their scale: --scale on "
                                                      "the command line, scale= in Python)")
    found.extend(off)
    low = ratings["dimension"].map(lambda d: bounds[d][0]).to_numpy(dtype=np.float64)
    high = ratings["dimension"].map(lambda d: bounds[d][1]).to_numpy(dtype=np.float64)
    score = ratings["score"].to_numpy(dtype=np.float64)
    value = (score - low) / (high - low)
    out = pd.DataFrame({"turn_id": ratings["turn_id"].to_numpy(), "dimension": ratings["dimension"].to_numpy(),
                        "value": value})
    return out.groupby(["turn_id", "dimension"], sort=False)["value"].mean().reset_index()


# ------------------------------------------------------------------------------------------------
# calibrate


def calibrate(
    judge: Frame | Sequence[Frame] | Mapping[Any, Frame | Sequence[Frame]],
    human: Frame | Mapping[Any, Frame],
    *,
    method: str = "ppi++",
    ci: float = 0.95,
    scale: str | tuple[int, int] | None = None,
    dimensions: Sequence[str] | None = None,
    by: str | None = None,
    aggregate: str = "mean",
    problems: list[Problem] | None = None,
) -> pd.DataFrame:
    """Judge means calibrated by human ratings (prediction-powered inference; module docs).

    Args:
        judge: judge scores as `agreement` takes them: a
            DataFrame ``turn_id, dimension, score`` (repeats allowed), judgments / labels JSONL
            file(s) read by `read_judgments` (its rules
            decide which judgments are valid), or, with ``by``, a ``{group: judgments}`` mapping.
        human: human ratings ``turn_id, dimension, rater, score`` (DataFrame, CSV/TSV/JSONL or a
            filled-in rating sheet; see `read_ratings`),
            or, with ``by``, a ``{group: ratings}`` mapping or ratings with a ``by`` column. An
            item's human value is the mean of its raters' scores.
        method: ``"ppi++"`` (power-tuned, the default) or ``"ppi"`` (λ = 1).
        ci: confidence level of the normal intervals.
        scale: ``"reteco"`` (1-5), ``"ikat"`` (0-4), ``"binary"`` (0-1) or ``(low, high)``, for
            judge and human scores alike; default: each dimension's own.
        dimensions: the dimensions to report (default: the judged ones in first-seen order, then
            rated dimensions that were not judged).
        by: one row per group (e.g. ``"run"``): the groups are the keys of a ``judge`` mapping,
            the values of a ``by`` column of a judgment DataFrame, or — ``by="run"`` with a list of
            judgment files — the files, named by their file names as ``compare`` names runs.
            Human ratings without a ``by`` column serve every group.
        aggregate: how an item's judge repeats are combined (``mean``, ``median``, ``mode``; see
            `collapse_repeats`).
        problems: receives rows left out (invalid judgments, malformed rows, human ratings of
            items without a valid judge score); default: one
            `DataFormatWarning`.

    Returns:
        DataFrame ``[by,] dimension, n, n_human, judge_mean, human_mean, calibrated, ci_low,
        ci_high, bias, lam`` on the normalised 0-1 scale: ``n`` judged items, ``n_human`` of
        them with a human rating; ``judge_mean`` over the ``n`` items; ``human_mean`` and
        ``bias`` (judge − human) over the ``n_human``; ``calibrated`` the prediction-powered
        mean with its interval ``ci_low, ci_high``; ``lam`` the λ used.

    The estimate and its interval are clipped to the normalised scale [0, 1] (the normal
    interval of a mean near 0 or 1 can reach past it, e.g. ``ci_high`` 1.0074): a mean of scores on
    the scale cannot leave it. A clipped value is named in the calibration warning.

    A human score outside its dimension's scale (ratings on another scale?) is left out with a
    problem naming its file and line (in ``problems``, else a `DataFormatWarning`).

    Raises:
        ValueError: an unknown method, scale or confidence level; a dimension without a known
            scale.
    """
    _check_method(method, ci)
    _check_scale(scale)
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, not {aggregate!r}")
    if by is not None and not isinstance(by, str):
        raise ValueError(f"by must be one column name (e.g. 'run'), not {by!r}")
    found: list[Problem] = []
    groups = _judge_groups(judge, by)
    keys = [k for k, _, _ in groups]
    ratings, shared = _human_groups(human, by, keys, found)
    judged = {k: _judge_values(src, scale, aggregate, found, rows, f"{by} {k}") for k, src, rows in groups}
    rated = {k: _human_values(r, scale, found) for k, r in ratings.items()}
    if dimensions is not None:
        dims = list(dict.fromkeys(canonical(d) for d in dimensions))
    else:
        dims = list(dict.fromkeys([d for j in judged.values() for d in j["dimension"]]
                                  + [d for h in rated.values() for d in h["dimension"]]))
    notes: list[str] = []
    rows = []
    for k in keys:
        j = judged[k]
        h = rated[None] if shared else rated.get(k, _human_values(pd.DataFrame(), scale, found))
        where = f" ({by} {k})" if by is not None else ""
        for dim in dims:
            scale_bounds(dim, scale)
            row, note = _one(j[j["dimension"] == dim], h[h["dimension"] == dim], method, ci, found, dim, where)
            rows.append(({by: k} if by is not None else {}) | row)
            if note:
                notes.append(note)
    unknown = [k for k in ratings if not shared and k not in judged]
    if unknown:
        notes.append(f"human ratings for {by} {', '.join(map(str, unknown[:5]))} without judgments; not used")
    if shared and by is not None and len(keys) > 1:
        _warn_shared(judged, rated[None], by, notes)
    report_problems(found, problems)
    if notes:
        warnings.warn("calibration: " + "; ".join(notes[:20]) + (f"; and {len(notes) - 20} more" if len(notes) > 20
                                                                   else ""), DataFormatWarning, stacklevel=user_stacklevel())
    return pd.DataFrame(rows, columns=([by] if by is not None else []) + CALIBRATION_COLUMNS)


def _one(j: pd.DataFrame, h: pd.DataFrame, method: str, ci: float, found: list[Problem], dim: str,
         where: str) -> tuple[dict[str, Any], str | None]:
    fvals = j.set_index("turn_id")["value"]
    hvals = h.set_index("turn_id")["value"]
    labelled = fvals.index.isin(hvals.index)
    orphans = hvals.index[~hvals.index.isin(fvals.index)]
    for t in orphans:
        found.append(Problem(f"human rating of {dim!r}{where} for an item without a valid judge score; left out",
                             query_id=str(t), kind="unknown_query", severity="warning"))
    f_l = fvals[labelled].to_numpy(dtype=np.float64)
    y = hvals.reindex(fvals.index[labelled]).to_numpy(dtype=np.float64)
    f_u = fvals[~labelled].to_numpy(dtype=np.float64)
    n, n_h = len(fvals), int(labelled.sum())
    nan = float("nan")
    row = {"dimension": dim, "n": n, "n_human": n_h,
           "judge_mean": float(fvals.mean()) if n else nan,
           "human_mean": float(y.mean()) if n_h else nan,
           "bias": float((f_l - y).mean()) if n_h else nan}
    note = None
    if n_h == 0:
        row.update(calibrated=nan, ci_low=nan, ci_high=nan, lam=nan)
        note = (f"{dim}{where}: no judged item has a human rating: no calibrated mean" if n
                else f"{dim}{where}: no valid judgment: no calibrated mean")
        return row, note
    res = ppi_mean(y, f_l, f_u, method=method, ci=ci)
    row.update(calibrated=res.estimate, ci_low=res.ci_low, ci_high=res.ci_high, lam=res.lam)
    notes = []
    if n_h == 1:
        notes.append(f"{dim}{where}: one human-rated item cannot estimate the correction's variance: no interval")
    clipped = _clip_to_scale(row)
    if clipped:
        notes.append(f"{dim}{where}: {clipped} clipped to the 0-1 scale")
    return row, "; ".join(notes) or None


def _clip_to_scale(row: dict[str, Any]) -> str:
    """Clip ``calibrated``, ``ci_low`` and ``ci_high`` of ``row`` to [0, 1] (a mean of scores on
    the normalised scale cannot leave it; the normal interval can); returns what was clipped, in
    words (empty when nothing was)."""
    said = []
    for name in ("calibrated", "ci_low", "ci_high"):
        v = row[name]
        if v == v and not 0.0 <= v <= 1.0:
            said.append(f"{name} {v:.4f}")
            row[name] = min(1.0, max(0.0, v))
    return ", ".join(said)


def _warn_shared(judged: dict[Any, pd.DataFrame], ratings: pd.DataFrame, by: str, notes: list[str]) -> None:
    """Human ratings without a ``by`` column used for items that several groups judged."""
    rated = set(zip(ratings["turn_id"], ratings["dimension"], strict=True))
    seen: dict[tuple[str, str], int] = {}
    for j in judged.values():
        for key in set(zip(j["turn_id"], j["dimension"], strict=True)) & rated:
            seen[key] = seen.get(key, 0) + 1
    multi = sorted(k for k, c in seen.items() if c > 1)
    if multi:
        notes.append(f"{len(multi)} rated item(s) were judged in several {by} groups (e.g. {multi[0][0]!r}, "
                     f"{multi[0][1]!r}) and the ratings have no {by!r} column: the same human rating is used in each "
                     "group; give the ratings per group when the groups judged different answers")


# ------------------------------------------------------------------------------------------------
# the disclosure report's section


def calibration_section(
    judge: Frame | Sequence[Frame],
    human: Frame,
    *,
    method: str = "ppi++",
    ci: float = 0.95,
    aggregate: str = "mean",
    problems: list[Problem] | None = None,
) -> dict[str, Any]:
    """The calibrated means and the judge's bias for the judge disclosure report, as a JSON-ready
    dict: ``method``, ``level``, ``definition`` (words for the report) and ``table`` (the records
    of `calibrate`). Warnings about dimensions that cannot be calibrated are kept in
    ``notes`` instead of being raised."""

    dims, skipped = None, []
    if isinstance(judge, pd.DataFrame) and "dimension" in judge.columns:  # custom prompts have no known scale
        present = [canonical(str(d)) for d in dict.fromkeys(judge["dimension"].tolist())]
        dims = [d for d in present if d in DIM_SCALE]
        skipped = [d for d in present if d not in DIM_SCALE]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataFormatWarning)
        table = calibrate(judge, human, method=method, ci=ci, aggregate=aggregate, dimensions=dims,
                          problems=problems)
    name = "PPI++ (power-tuned, Angelopoulos, Duchi & Zrnic 2023)" if method == "ppi++" else \
        "PPI (Angelopoulos et al. 2023)"
    return {
        "method": method,
        "level": ci,
        "definition": (f"{name}: the mean human score over all judged items, estimated from the judge's scores "
                       "of every item and the human ratings of the rated ones; normal interval. bias = judge mean "
                       "- human mean on the rated items (positive: the judge scores higher). All on the normalised "
                       "0-1 scale."),
        "table": frame_records(table),
        "notes": [str(w.message) for w in caught if issubclass(w.category, DataFormatWarning)]
        + [f"{d}: no known scale (a custom prompt's dimension): not calibrated" for d in skipped],
    }
