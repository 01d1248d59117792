"""Paired significance tests, resampling and multiple-testing corrections on unit-level sums.

Everything here works on a `Paired` table built once per (measure, group) from the
per-query frame: for every run *r* and statistical unit *u*

* ``S[r, u] = Σ w·v`` over the unit's defined rows (value not NaN), and
* ``W[r, u] = Σ w`` over the same rows,

so the aggregate of run *r* is the ratio ``Σ_u S[r, u] / Σ_u W[r, u]`` and every resample is a
matrix product: a bootstrap resample is a vector of unit multiplicities ``c`` (``c @ S.T``), a
randomization resample a vector of unit swaps ``f ∈ {0, 1}`` (run A gets B's unit where f = 1).
One matrix of resample indices (or swaps) is drawn per (measure, group) and shared by all runs and
pairs; nothing loops over resamples in Python except over fixed-size chunks of them.

Tests (``test=``):

* ``'t'``: paired t-test on unit-level differences ``d_u = S_a/W_a − S_b/W_b`` over the units where
  both runs are defined. With one stratum and equal unit weights this is exactly
  ``scipy.stats.ttest_rel``; with strata (collection × condition cells) it is the stratified
  t-test: estimate ``Σ_h π_h d̄_h`` (π_h the stratum's share of the weight, d̄_h its weighted mean
  difference), variance ``Σ_h π_h² V_h`` with ``V_h = n_h/(n_h−1) · Σ w²(d − d̄_h)² / (Σ w)²`` (the
  linearised variance of a weighted mean; ``s_h²/n_h`` for equal weights), ``n − H`` degrees of
  freedom.
* ``'wilcoxon'``: ``scipy.stats.wilcoxon`` (its defaults) on the same unit differences (rank test:
  unit weights and strata are not used). scipy chooses between its exact, permutation and
  normal-approximation p-values from the zeros and ties of the whole array it is given, so one
  call for all pairs would let one pair's zero difference change every pair's p-value: pairs go
  to scipy together only when they have the same units, the same number of zero differences and
  ties or none (`paired_wilcoxon`).
* ``'randomization'``: paired randomization (sign-flip) test, two-sided: each unit's pair of
  values is swapped with probability 1/2; statistic = difference of the two ratio aggregates;
  ``p = (1 + #{|δ*| ≥ |δ|}) / (1 + B)``.
* ``'bootstrap'``: paired bootstrap over units (stratified where the measure has strata); the
  bootstrap distribution of δ is shifted to the null: ``p = (1 + #{|δ* − δ| ≥ |δ|}) / (1 + B)``.
* ``'tukey'``: randomised Tukey HSD (Carterette 2012): within every unit the runs' values are
  permuted; the null distribution is that of max − min of the run aggregates; a pair's p-value is
  the share of resamples whose range reaches |δ|. It is already adjusted for all pairs.

Degenerate cases: when every unit difference is exactly 0 the p-value is 1 (scipy would give NaN).

**A pair's p-value does not depend on the other runs.** For ``'t'`` and ``'wilcoxon'`` it is computed
from the pair's own unit differences. The resampling tests draw one matrix for all pairs, over the
units of the comparison; when a pair's two runs have rows for fewer units than the comparison
(another run answers queries these two do not), `pairwise_pvalues` draws again, from the same
generator state, over the pair's own units, so the pair gets the p-value it gets when compared
alone (same seed). The exceptions are explicit: ``'tukey'`` is a multiple-comparison procedure over
all runs by definition, and a ``correction`` (`adjust`) acts on the family of pairs.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "TESTS",
    "CORRECTIONS",
    "TIE_TOLERANCE",
    "Paired",
    "build_paired",
    "paired_rows",
    "unit_codes",
    "row_estimates",
    "adjust",
    "paired_t",
    "paired_wilcoxon",
    "pairwise_pvalues",
    "effect_size",
    "win_tie_loss",
    "bootstrap_aggregates",
    "randomization_pvalues",
    "bootstrap_pvalues",
    "tukey_pvalues",
]

TESTS = ("t", "wilcoxon", "randomization", "bootstrap", "tukey")
CORRECTIONS = ("holm", "bonferroni", "bh", None)
#: two unit values closer than this count as a tie in wins / ties / losses
TIE_TOLERANCE = 1e-9
_CHUNK_CELLS = 4_000_000  # resamples per chunk x units (memory of one chunk ≈ 32 MB)


@dataclass
class Paired:
    """Unit-level sums of one measure (and group) for every run; see the module docs."""

    runs: list[str]
    units: np.ndarray  # unit labels, ordered by stratum
    strata: np.ndarray  # int stratum code of each unit (contiguous)
    S: np.ndarray  # (R, U) Σ w·v over defined rows
    W: np.ndarray  # (R, U) Σ w over defined rows
    estimate: np.ndarray  # (R,) the aggregate, summed in row order like the ir_measures aggregator
    n: np.ndarray  # (R,) number of defined rows
    empty: float = float("nan")
    #: (R, U) True where the run has a row for the unit (defined or not); None: wherever W > 0
    present: np.ndarray | None = None

    @property
    def n_units(self) -> int:
        return len(self.units)

    def unit_values(self) -> np.ndarray:
        """(R, U) value of each unit (NaN where the run defines none of its rows)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.W > 0, self.S / np.where(self.W > 0, self.W, 1.0), np.nan)

    def ratio(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), self.empty)

    def has_rows(self) -> np.ndarray:
        """(R, U) True where the run has a row for the unit (its value may be undefined)."""
        return self.present if self.present is not None else self.W > 0

    def on_units(self, keep: np.ndarray) -> Paired:
        """The same runs on the units where ``keep`` (a (U,) bool mask) is True: what
        `build_paired` gives for a frame holding only those units' rows."""
        return Paired(self.runs, self.units[keep], self.strata[keep], self.S[:, keep], self.W[:, keep],
                      self.estimate, self.n, self.empty, self.has_rows()[:, keep])


def _sequential_mean(values: np.ndarray, weights: np.ndarray, empty: float) -> tuple[float, int]:
    """NaN-skipping weighted mean summed left to right (as ir_measures' aggregators do)."""
    ok = ~(np.isnan(values) | np.isnan(weights))
    n = int(ok.sum())
    if n == 0:
        return empty, 0
    den = float(np.cumsum(weights[ok])[-1])
    if den == 0:
        return empty, n
    return float(np.cumsum(weights[ok] * values[ok])[-1]) / den, n


def build_paired(frame: pd.DataFrame, runs: Sequence[str], empty: float = float("nan")) -> Paired:
    """`Paired` sums from per-query rows (``run, query_id, value, weight`` [+ ``unit``,
    ``stratum``]) of one measure. Rows keep their order for the point estimate."""
    runs = list(runs)
    rcode, values, weights = _run_rows(frame, runs)
    ucode, units, scode, strata = unit_codes(frame)
    return paired_rows(runs, rcode, values, weights, ucode, units, scode, strata, empty)


def unit_codes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(unit code, unit names, stratum code, stratum names)`` of per-query rows: the ``unit``
    column (default: ``query_id``) and the ``stratum`` column (default: one stratum ``""``) as
    strings, each factorised in order of first appearance (names: object arrays)."""
    unit = frame["unit"] if "unit" in frame.columns else frame["query_id"]
    ucode, units = pd.factorize(_as_strings(unit), sort=False)
    if "stratum" in frame.columns:
        scode, strata = pd.factorize(_as_strings(frame["stratum"]), sort=False)
    else:
        scode, strata = np.zeros(len(frame), dtype=np.int64), np.array([""], dtype=object)
    return (ucode.astype(np.int64), np.asarray(units, dtype=object), np.asarray(scode, dtype=np.int64),
            np.asarray(strata, dtype=object))


def _as_strings(column: pd.Series) -> Any:
    """The column's values as strings (``astype(str)``), kept in its string dtype when it has one
    (factorised by arrow, not by Python objects)."""
    if pd.api.types.is_string_dtype(column.dtype) and not pd.api.types.is_object_dtype(column.dtype):
        return column.array
    return column.astype(str).to_numpy(dtype=object)


def paired_rows(runs: Sequence[str], rcode: np.ndarray, values: np.ndarray, weights: np.ndarray, ucode: np.ndarray,
                unit_names: np.ndarray, scode: np.ndarray, stratum_names: np.ndarray,
                empty: float = float("nan")) -> Paired:
    """`build_paired` on arrays: each row's run position in ``runs``, value, weight, unit code into
    ``unit_names`` and stratum code into ``stratum_names`` (as `unit_codes` gives them; the codes
    may index longer tables than these rows use). Units are ordered by (stratum name, unit name),
    a unit's stratum being that of its first row; strata are numbered in that order."""
    runs = list(runs)
    local, used = pd.factorize(ucode, sort=False)  # the units of these rows, in order of first appearance
    first_row = np.unique(local, return_index=True)[1]  # the first row of each unit
    names = unit_names[used]
    of_unit = stratum_names[scode[first_row]]
    by_unit = np.argsort(names, kind="stable")
    order = by_unit[np.argsort(of_unit[by_unit], kind="stable")] if len(stratum_names) > 1 else by_unit
    units = names[order]
    strata = pd.factorize(of_unit[order], sort=False)[0]
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order), dtype=np.int64)
    uc = position[local]
    ok = ~(np.isnan(values) | np.isnan(weights))
    R, U = len(runs), len(units)
    flat = rcode[ok] * U + uc[ok]
    S = np.bincount(flat, weights=weights[ok] * values[ok], minlength=R * U).reshape(R, U)
    W = np.bincount(flat, weights=weights[ok], minlength=R * U).reshape(R, U)
    present = np.bincount(rcode * U + uc, minlength=R * U).reshape(R, U) > 0
    estimate, n = _estimates(rcode, values, weights, R, empty)
    return Paired(runs, units, np.asarray(strata, dtype=np.int64), S, W, estimate, n, empty, present)


def _run_rows(frame: pd.DataFrame, runs: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's run position in ``runs``, value and weight."""
    rcode = pd.Index(runs).get_indexer(frame["run"].astype(str).to_numpy(dtype=object))
    if (rcode < 0).any():
        unknown = sorted(set(frame["run"].astype(str)) - set(runs))
        raise ValueError(f"per-query rows of runs not in the comparison: {unknown[:5]}")
    values = frame["value"].to_numpy(dtype=np.float64)
    weights = frame["weight"].to_numpy(dtype=np.float64) if "weight" in frame.columns else np.ones(len(frame))
    return rcode, values, weights


def _estimates(rcode: np.ndarray, values: np.ndarray, weights: np.ndarray, n_runs: int,
               empty: float) -> tuple[np.ndarray, np.ndarray]:
    """Per run: the point estimate (`_sequential_mean` over its rows in order) and ``n``."""
    estimate = np.full(n_runs, empty, dtype=np.float64)
    n = np.zeros(n_runs, dtype=np.int64)
    order = np.argsort(rcode, kind="stable")
    bounds = np.searchsorted(rcode[order], np.arange(n_runs + 1))
    for r in range(n_runs):
        rows = order[bounds[r]:bounds[r + 1]]
        estimate[r], n[r] = _sequential_mean(values[rows], weights[rows], empty)
    return estimate, n


def run_estimates(frame: pd.DataFrame, runs: Sequence[str], empty: float = float("nan")) -> np.ndarray:
    """The point estimate per run (in ``runs`` order) from per-query rows ``run, value[, weight]``:
    `Paired.estimate` of `build_paired` without the resampling sums."""
    runs = list(runs)
    rcode, values, weights = _run_rows(frame, runs)
    return _estimates(rcode, values, weights, len(runs), empty)[0]


def row_estimates(rcode: np.ndarray, values: np.ndarray, weights: np.ndarray, n_runs: int,
                  empty: float = float("nan")) -> np.ndarray:
    """`run_estimates` on arrays (each row's run position, value and weight)."""
    return _estimates(rcode, values, weights, n_runs, empty)[0]


# -- corrections ----------------------------------------------------------------------------------


def adjust(p_values: Sequence[float] | np.ndarray, method: str | None) -> np.ndarray:
    """Adjusted p-values of one family (NaNs are left out and stay NaN).

    ``'bonferroni'``: min(1, m·p). ``'holm'``: step-down, ``p̃_(i) = max_{j≤i} min(1, (m−j+1)·p_(j))``.
    ``'bh'``: Benjamini–Hochberg, ``p̃_(i) = min_{j≥i} min(1, m·p_(j)/j)``. ``None``: unchanged.
    (The same numbers as ``statsmodels.stats.multitest.multipletests`` with ``'bonferroni'``,
    ``'holm'``, ``'fdr_bh'``.)
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = p.copy()
    if method is None or method == "none":
        return out
    ok = ~np.isnan(p)
    q = p[ok]
    m = len(q)
    if m == 0:
        return out
    if method == "bonferroni":
        adj = np.minimum(1.0, q * m)
    elif method == "holm":
        order = np.argsort(q, kind="stable")
        stepped = np.maximum.accumulate((m - np.arange(m)) * q[order])
        adj = np.empty(m)
        adj[order] = np.minimum(1.0, stepped)
    elif method == "bh":
        order = np.argsort(q, kind="stable")
        scaled = q[order] * m / np.arange(1, m + 1)
        stepped = np.minimum.accumulate(scaled[::-1])[::-1]
        adj = np.empty(m)
        adj[order] = np.minimum(1.0, stepped)
    else:
        raise ValueError(f"correction must be one of {CORRECTIONS}, not {method!r}")
    out[ok] = adj
    return out


# -- unit-difference statistics ------------------------------------------------------------------


def _pair_arrays(P: Paired, a: np.ndarray, b: np.ndarray):
    X = P.unit_values()
    mask = (P.W[a] > 0) & (P.W[b] > 0)
    d = np.where(mask, X[a] - X[b], 0.0)
    w = np.where(mask, (P.W[a] + P.W[b]) / 2.0, 0.0)
    return d, w, mask


def _stratified(P: Paired, a: np.ndarray, b: np.ndarray):
    """(estimate, standard error, degrees of freedom, pooled sd) per pair."""
    d, w, mask = _pair_arrays(P, a, b)
    n_pairs = len(a)
    est = np.zeros(n_pairs)
    var = np.zeros(n_pairs)
    ss = np.zeros(n_pairs)
    df = np.zeros(n_pairs)
    wsum = w.sum(axis=1)
    for h in np.unique(P.strata):
        cols = P.strata == h
        dh, wh, mh = d[:, cols], w[:, cols], mask[:, cols]
        nh = mh.sum(axis=1)
        swh = wh.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_h = np.where(swh > 0, (wh * dh).sum(axis=1) / np.where(swh > 0, swh, 1.0), 0.0)
            pi = np.where(wsum > 0, swh / np.where(wsum > 0, wsum, 1.0), 0.0)
            dev = np.where(mh, dh - mean_h[:, None], 0.0)
            ssh = (dev ** 2).sum(axis=1)
            # variance of the weighted mean (ratio estimator, linearised):
            # n/(n-1) · Σ w²(d − m)² / (Σ w)²; equal weights give s²/n, i.e. ttest_rel
            wss = ((wh * dev) ** 2).sum(axis=1)
            var_mean_h = np.where(nh > 1, nh / np.maximum(nh - 1, 1) * wss / np.where(swh > 0, swh, 1.0) ** 2, 0.0)
            est += pi * mean_h
            var += np.where(nh > 0, pi ** 2 * var_mean_h, 0.0)
        ss += ssh
        df += np.maximum(nh - 1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.where(df > 0, ss / np.where(df > 0, df, 1.0), np.nan))
    return est, np.sqrt(var), df, sd, d, mask


def paired_t(P: Paired, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t statistic, two-sided p) of each pair (a[i], b[i]) of run indices; see the module docs."""
    from scipy import stats as _sps

    est, se, df, _sd, d, mask = _stratified(P, a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = est / se
    p = 2.0 * _sps.t.sf(np.abs(t), df)
    zero = np.all(np.where(mask, d == 0, True), axis=1) & (mask.sum(axis=1) > 0)
    p = np.where(zero, 1.0, np.where(df > 0, p, np.nan))
    return t, p


def effect_size(P: Paired, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cohen's d_z: mean unit difference / standard deviation of the unit differences (pooled
    within strata for stratified measures); NaN when the differences do not vary."""
    est, _se, _df, sd, _d, _m = _stratified(P, a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sd > 0, est / sd, np.nan)


def paired_wilcoxon(P: Paired, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two-sided p of ``scipy.stats.wilcoxon`` (defaults) on the unit differences of each pair:
    each p-value is scipy's for that pair alone (see the module docs). A pair whose differences
    are all 0 gets 1; one without a unit defined for both runs, NaN.

    scipy decides between its exact, permutation and normal-approximation p-values from the
    length of the array, its zeros and its ties, over the whole array it is given. So pairs are
    passed to scipy together only when they agree on all of these: the same units, the same
    number of zero differences, and ties among the absolute differences or not. Every pair then
    gets the method it gets alone.
    """
    from scipy import stats as _sps

    d, _w, mask = _pair_arrays(P, a, b)
    out = np.full(len(a), np.nan)
    n = mask.sum(axis=1)
    nonzero = mask & (d != 0)
    out[(n > 0) & ~nonzero.any(axis=1)] = 1.0
    todo = np.flatnonzero(nonzero.any(axis=1))
    if not len(todo):
        return out
    magnitudes = np.sort(np.where(nonzero[todo], np.abs(d[todo]), np.nan), axis=1)  # NaNs last
    tied = np.any(magnitudes[:, 1:] == magnitudes[:, :-1], axis=1)
    zeros = (mask[todo] & (d[todo] == 0)).sum(axis=1)
    packed = np.packbits(mask[todo], axis=1)
    pattern = pd.factorize(np.array([row.tobytes() for row in packed], dtype=object))[0]  # units of each pair
    which = pd.factorize(pd.MultiIndex.from_arrays([pattern, zeros, tied]))[0]
    for k in range(int(which.max()) + 1):  # one scipy call per group of alike pairs
        rows = todo[which == k]
        units = mask[rows[0]]
        block = d[rows][:, units]
        if len(rows) == 1:
            out[rows] = float(_sps.wilcoxon(block[0]).pvalue)
        else:
            out[rows] = np.asarray(_sps.wilcoxon(block, axis=1).pvalue, dtype=np.float64)
    return out


def win_tie_loss(P: Paired, a: np.ndarray, b: np.ndarray, tol: float = TIE_TOLERANCE):
    """Units where run a beats b by more than ``tol``, is within ``tol``, loses (both defined)."""
    d, _w, mask = _pair_arrays(P, a, b)
    wins = (mask & (d > tol)).sum(axis=1)
    losses = (mask & (d < -tol)).sum(axis=1)
    return wins, mask.sum(axis=1) - wins - losses, losses


# -- resampling ----------------------------------------------------------------------------------


def _chunks(n_resamples: int, n_units: int) -> list[int]:
    size = max(1, min(n_resamples, _CHUNK_CELLS // max(1, n_units)))
    full, rest = divmod(n_resamples, size)
    return [size] * full + ([rest] if rest else [])


#: resample cells counted at a time by `bootstrap_counts` (its temporaries stay in the CPU cache)
_COUNT_CELLS = 1 << 16


def bootstrap_counts(rng: np.random.Generator, strata: np.ndarray, size: int) -> np.ndarray:
    """(size, U) multiplicities of the units in ``size`` bootstrap resamples that draw, within
    each stratum, as many units as it has (with replacement): position j of a resample, in a
    stratum of n units starting at unit s, draws unit s + ⌊r·n⌋ (at most s + n − 1), r being the
    generator's next ``random()`` value, resample by resample. The draws are made a block of
    resamples at a time (the generator's stream is the same as in one call)."""
    U = len(strata)
    out = np.empty((size, U))
    if not U or not size:
        return out
    starts = np.r_[0, np.flatnonzero(np.diff(strata)) + 1]
    one = len(starts) == 1
    if not one:
        lengths = np.diff(np.r_[starts, U])
        pos_start = np.repeat(starts, lengths)
        pos_len = np.repeat(lengths, lengths)
        pos_last = pos_start + pos_len - 1
    rows = max(1, _COUNT_CELLS // U)
    offsets = (np.arange(min(rows, size), dtype=np.int64) * U)[:, None]
    for lo in range(0, size, rows):
        c = min(rows, size - lo)
        draws = rng.random((c, U))
        if one:
            draws *= U
            idx = draws.astype(np.int64)  # truncation = floor: the draws are ≥ 0
            np.minimum(idx, U - 1, out=idx)
        else:
            idx = pos_start + np.floor(draws * pos_len).astype(np.int64)
            np.minimum(idx, pos_last, out=idx)
        idx += offsets[:c]
        out[lo:lo + c] = np.bincount(idx.ravel(), minlength=c * U).reshape(c, U)
    return out


def bootstrap_aggregates(P: Paired, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(B, R) aggregate of every run in each bootstrap resample of the units."""
    out = np.empty((n_resamples, len(P.runs)))
    start = 0
    # every weight 1 (a value for every run and unit, unweighted): Σ_u c_u·W[r, u] is the number
    # of units drawn, an integer computed exactly whatever the order of the sum, so the product
    # C @ W.T is replaced by the row sums of C (the same numbers, one matrix product fewer)
    ones = bool(P.W.size) and bool(np.all(P.W == 1.0)) and P.n_units < 2 ** 50
    for size in _chunks(n_resamples, P.n_units):
        C = bootstrap_counts(rng, P.strata, size)
        if ones:
            den = np.broadcast_to(C.sum(axis=1)[:, None], (size, len(P.runs)))
        else:
            den = C @ P.W.T
        out[start:start + size] = P.ratio(C @ P.S.T, den)
        start += size
    return out


def _pvalue(extreme: np.ndarray, valid: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(valid > 0, (1.0 + extreme) / (1.0 + valid), np.nan)


def _tolerance(delta: np.ndarray) -> np.ndarray:
    return 1e-12 * np.maximum(1.0, np.abs(delta))


def randomization_pvalues(P: Paired, a: np.ndarray, b: np.ndarray, n_resamples: int,
                          rng: np.random.Generator) -> np.ndarray:
    """Two-sided paired randomization p of each pair; one swap matrix shared by all pairs."""
    TS, TW = P.S.sum(axis=1), P.W.sum(axis=1)
    delta = P.ratio(TS[a], TW[a]) - P.ratio(TS[b], TW[b])
    thresh = np.abs(delta) - _tolerance(delta)
    extreme = np.zeros(len(a))
    valid = np.zeros(len(a))
    pair_chunk = max(1, _CHUNK_CELLS // max(1, min(n_resamples, _CHUNK_CELLS // max(1, P.n_units))))
    for size in _chunks(n_resamples, P.n_units):
        F = rng.integers(0, 2, size=(size, P.n_units)).astype(np.float64)
        GS, GW = F @ P.S.T, F @ P.W.T
        for lo in range(0, len(a), pair_chunk):
            ai, bi = a[lo:lo + pair_chunk], b[lo:lo + pair_chunk]
            num_a = GS[:, ai] - GS[:, bi] + TS[bi]
            den_a = GW[:, ai] - GW[:, bi] + TW[bi]
            num_b = TS[ai] + TS[bi] - num_a
            den_b = TW[ai] + TW[bi] - den_a
            star = P.ratio(num_a, den_a) - P.ratio(num_b, den_b)
            ok = ~np.isnan(star)
            extreme[lo:lo + pair_chunk] += (ok & (np.abs(star) >= thresh[lo:lo + pair_chunk])).sum(axis=0)
            valid[lo:lo + pair_chunk] += ok.sum(axis=0)
    return _pvalue(extreme, valid)


def bootstrap_pvalues(P: Paired, a: np.ndarray, b: np.ndarray, aggregates: np.ndarray) -> np.ndarray:
    """Two-sided paired bootstrap p from the (B, R) resampled aggregates (shift to the null)."""
    delta = P.estimate[a] - P.estimate[b]
    star = aggregates[:, a] - aggregates[:, b]
    ok = ~np.isnan(star)
    extreme = (ok & (np.abs(star - delta) >= np.abs(delta) - _tolerance(delta))).sum(axis=0)
    return _pvalue(extreme, ok.sum(axis=0))


def tukey_pvalues(P: Paired, a: np.ndarray, b: np.ndarray, n_resamples: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Randomised Tukey HSD p of each pair (runs permuted within every unit)."""
    R, U = P.S.shape
    TS, TW = P.S.sum(axis=1), P.W.sum(axis=1)
    agg = P.ratio(TS, TW)
    delta = agg[a] - agg[b]
    thresh = np.abs(delta) - _tolerance(delta)
    ST, WT = P.S.T, P.W.T
    rows = np.arange(U)[None, :, None]
    same_weights = bool(np.all(P.W == P.W[:1]))  # then every permutation keeps the denominators
    extreme = np.zeros(len(a))
    valid = 0
    size = max(1, min(n_resamples, _CHUNK_CELLS // max(1, U * R)))
    done = 0
    while done < n_resamples:
        c = min(size, n_resamples - done)
        # a uniform random permutation of the runs within every unit: argsort of float32 keys
        # (twice as fast as float64; a tie among 2^24 key values is negligible)
        perm = rng.random((c, U, R), dtype=np.float32).argsort(axis=2)
        num = ST[rows, perm].sum(axis=1)
        den = np.broadcast_to(TW[0], num.shape) if same_weights else WT[rows, perm].sum(axis=1)
        star = P.ratio(num, den)
        rng_range = np.nanmax(star, axis=1) - np.nanmin(star, axis=1)
        ok = ~np.isnan(rng_range)
        extreme += (ok[:, None] & (rng_range[:, None] >= thresh[None, :])).sum(axis=0)
        valid += int(ok.sum())
        done += c
    return _pvalue(extreme, np.full(len(a), float(valid)))


def _pvalues(P: Paired, a: np.ndarray, b: np.ndarray, test: str, n_resamples: int, rng: np.random.Generator,
             aggregates: np.ndarray) -> np.ndarray:
    if test == "t":
        return paired_t(P, a, b)[1]
    if test == "wilcoxon":
        return paired_wilcoxon(P, a, b)
    if test == "randomization":
        return randomization_pvalues(P, a, b, n_resamples, rng)
    if test == "bootstrap":
        return bootstrap_pvalues(P, a, b, aggregates)
    if test == "tukey":
        return tukey_pvalues(P, a, b, n_resamples, rng)
    raise ValueError(f"test must be one of {TESTS}, not {test!r}")


def pairwise_pvalues(P: Paired, a: np.ndarray, b: np.ndarray, test: str, n_resamples: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The (B, R) bootstrap aggregates of every run (`bootstrap_aggregates`, drawn first)
    and the two-sided p-value of each pair (a[i], b[i]) under ``test``.

    Each pair's p-value is the one it gets in a comparison of its two runs alone with a generator
    in the same state: for ``'randomization'`` and ``'bootstrap'``, pairs whose runs have rows for
    fewer units than ``P`` are resampled again over their own units, from the state ``rng`` had on
    entry (one redraw per distinct set of units, shared by the pairs that have it). ``'tukey'``
    is joint over all runs by definition.
    """
    start = copy.deepcopy(rng) if test in ("randomization", "bootstrap") else None
    aggregates = bootstrap_aggregates(P, n_resamples, rng)
    p = _pvalues(P, a, b, test, n_resamples, rng, aggregates)
    if start is None or len(a) == 0:
        return aggregates, p
    rows = P.has_rows()
    own = rows[a] | rows[b]  # (pairs, U): the units of each pair's two runs
    partial = np.flatnonzero(~own.all(axis=1))
    if len(partial):
        patterns, which = np.unique(own[partial], axis=0, return_inverse=True)
        for k, keep in enumerate(patterns):
            idx = partial[np.asarray(which).ravel() == k]
            sub = P.on_units(keep)
            replay = copy.deepcopy(start)
            sub_aggregates = bootstrap_aggregates(sub, n_resamples, replay)
            p[idx] = _pvalues(sub, a[idx], b[idx], test, n_resamples, replay, sub_aggregates)
    return aggregates, p
