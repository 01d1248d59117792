"""Agreement between the LLM judge and human raters, and between repeated judgments.

The RETECO evaluation plan asks that judge outputs be "spot-validated against independent human
ratings" and that the report disclose the agreement. `agreement` gives, per dimension:

* ``n``: items with a valid judge score and at least one human score;
* ``kappa_quadratic``: quadratic-weighted Cohen's kappa between the judge and the human
  *consensus* (the lower median of the raters' scores), over the categories of the whole scale
  (Cohen 1968);
* ``alpha_ordinal``: Krippendorff's alpha with the ordinal difference function, raters and judge
  as coders (Krippendorff, *Content Analysis*, ch. 12; Hayes & Krippendorff 2007);
  ``alpha_humans``: the same over the raters alone, the ceiling the judge is held to;
* ``spearman``, ``kendall`` (tau-b): the judge against the mean of the raters' scores;
* ``exact``, ``within_1``: the share of items where the judge equals the consensus / is at most
  one point from it;
* ``fleiss_kappa``: Fleiss' kappa (Fleiss 1971, "Measuring nominal scale agreement among many
  raters", Psychological Bulletin 76(5)) of the judge and the raters as nominal raters, over the
  items *every one of them* rated (the statistic needs the same number of ratings per item); NaN
  with fewer than three raters in all (judge included) or no such item;
* percentile bootstrap confidence intervals (items resampled) for kappa and alpha, given only
  when at least `MIN_INTERVAL_ITEMS` items are compared (``note`` says so otherwise);
* a *pooled* row per scale shared by several dimensions (``dimension`` = ``(pooled 1-5)`` ...):
  the same statistics over the (dimension, item) pairs of those dimensions, for small rating
  sheets where each dimension alone has too few items.

Every statistic is computed here (numpy); the test suite checks them against scikit-learn's
``cohen_kappa_score(weights="quadratic")``, the ``krippendorff`` package and scipy.

Items are ``turn_id`` values; for TEMPO labels (``query_id``, ``doc_id``) the item is
``"<query_id> <doc_id>"`` and, for period coverage, ``"<query_id> <doc_id> <period>"``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import Problem
from ..io.judgments import int_score, read_judgments
from ..io.ratings import out_of_scale, read_ratings, report_problems, scale_bounds
from .prompts import canonical

__all__ = [
    "AGREEMENT_COLUMNS",
    "agreement",
    "agreement_and_confusion",
    "confusion_matrices",
    "kappa_quadratic",
    "alpha_ordinal",
    "fleiss_kappa",
    "self_consistency",
    "judge_scores",
    "JUDGE_SCORE_COLUMNS",
    "read_ratings",
    "lower_median",
    "MIN_INTERVAL_ITEMS",
]

#: the columns of `agreement`, in order
AGREEMENT_COLUMNS = [
    "dimension", "n", "kappa_quadratic", "kappa_ci_low", "kappa_ci_high", "alpha_ordinal",
    "alpha_ci_low", "alpha_ci_high", "alpha_humans", "spearman", "kendall", "exact", "within_1", "fleiss_kappa",
    "note",
]

#: fewest compared items for a bootstrap interval: with fewer, the resamples take a handful of
#: distinct values and a percentile interval is not a meaningful 95% interval
MIN_INTERVAL_ITEMS = 10

Frame = pd.DataFrame | str | os.PathLike


# ------------------------------------------------------------------------------------------------
# the statistics


def kappa_quadratic(a: np.ndarray, b: np.ndarray, low: int, high: int) -> float:
    """Quadratic-weighted Cohen's kappa of two integer ratings on the scale ``low..high`` (all
    categories of the scale, observed or not). NaN when it is undefined (no items, or both raters
    put every item in one and the same category)."""
    a = np.asarray(a, dtype=np.int64) - low
    b = np.asarray(b, dtype=np.int64) - low
    k = high - low + 1
    if len(a) == 0:
        return float("nan")
    observed = np.bincount(a * k + b, minlength=k * k).reshape(k, k).astype(np.float64)
    return _kappa_from_confusion(observed)


def _kappa_from_confusion(observed: np.ndarray) -> float:
    k = observed.shape[0]
    idx = np.arange(k)
    w = (idx[:, None] - idx[None, :]) ** 2 / max(1, (k - 1) ** 2)
    n = observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    denom = float((w * expected).sum())
    if denom == 0:
        return float("nan")
    return 1.0 - float((w * observed).sum()) / denom


def _unit_counts(matrix: np.ndarray, low: int, high: int) -> np.ndarray:
    """units x categories counts from a units x coders matrix (NaN = no value)."""
    k = high - low + 1
    m = np.asarray(matrix, dtype=np.float64)
    present = ~np.isnan(m)
    codes = np.where(present, m - low, 0).astype(np.int64)
    rows = np.repeat(np.arange(m.shape[0]), m.shape[1])
    counts = np.zeros((m.shape[0], k), dtype=np.float64)
    np.add.at(counts, (rows[present.ravel()], codes.ravel()[present.ravel()]), 1.0)
    return counts


def _alpha_from_counts(counts: np.ndarray) -> float:
    m_u = counts.sum(axis=1)
    keep = m_u >= 2
    counts, m_u = counts[keep], m_u[keep]
    if len(counts) == 0:
        return float("nan")
    w = 1.0 / (m_u - 1.0)
    # coincidence matrix: o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)
    o = (counts * w[:, None]).T @ counts - np.diag((counts * w[:, None]).sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    # ordinal metric: (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    i = np.arange(len(n_c))
    lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
    delta2 = (cum[hi + 1] - cum[lo] - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2
    d_e = float((np.outer(n_c, n_c) * delta2).sum())
    if d_e == 0 or n <= 1:
        return float("nan")
    return 1.0 - (n - 1.0) * float((o * delta2).sum()) / d_e


def alpha_ordinal(matrix: np.ndarray, low: int, high: int) -> float:
    """Krippendorff's alpha, ordinal metric, of a units x coders matrix of integer values in
    ``low..high`` (NaN where a coder gave no value). Units with fewer than two values are not
    pairable and are left out. NaN when there is no variation at all."""
    return _alpha_from_counts(_unit_counts(matrix, low, high))


def _ranks(x: np.ndarray) -> np.ndarray:
    return pd.Series(x).rank(method="average").to_numpy()


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    x = x - x.mean()
    y = y - y.mean()
    denom = math.sqrt(float((x * x).sum()) * float((y * y).sum()))
    return float((x * y).sum()) / denom if denom > 0 else float("nan")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the average ranks (NaN for constant input)."""
    if len(x) < 2:
        return float("nan")
    return _pearson(_ranks(np.asarray(x, float)), _ranks(np.asarray(y, float)))


def kendall_tau_b(x: np.ndarray, y: np.ndarray, block: int = 2048) -> float:
    """Kendall's tau-b (ties corrected), by pair counting in blocks (NaN for constant input)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = len(x)
    if n < 2:
        return float("nan")
    s = 0.0
    tx = ty = 0.0  # pairs not tied in x / in y
    for start in range(0, n, block):
        xs, ys = x[start:start + block, None], y[start:start + block, None]
        dx = np.sign(xs - x[None, :])
        dy = np.sign(ys - y[None, :])
        s += float((dx * dy).sum())
        tx += float((dx != 0).sum())
        ty += float((dy != 0).sum())
    denom = math.sqrt(tx * ty)
    return s / denom if denom > 0 else float("nan")


def lower_median(values: Sequence[int]) -> int:
    """The lower median (an observed value: the ``(m - 1) // 2``-th of the sorted values)."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


# ------------------------------------------------------------------------------------------------
# inputs


def judge_scores(
    source: Frame | Sequence[Frame],
    problems: list[Problem] | None = None,
    *,
    scale: str | tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Valid judge scores as ``turn_id, dimension, repeat, score`` (integer scores).

    ``source`` is anything `read_judgments` reads
    (judgments JSONL written by ``judge generation`` / ``judge ikat`` / ``judge temporal
    --judgments-out``, TEMPO labels JSONL, DataFrames, or a list of them), read by its rules with
    ``keep_invalid=False``: invalid judgments (an ``error``, a score that is not an integer on
    ``scale`` — default: the dimension's own — or a disagreeing ``normalized``) are left out, and so
    are malformed lines, rows without an item or dimension, bad repeats and duplicates (the first
    one is kept). Every problem found is appended to ``problems``, or, when it is None, shown as
    one `DataFormatWarning`.
    """
    frame, found = read_judgments(source, scale=scale, keep_invalid=False)
    report_problems(found, problems)
    return pd.DataFrame({"turn_id": frame["turn_id"].astype(str), "dimension": frame["dimension"].astype(str),
                         "repeat": frame["repeat"].astype(np.int64),
                         "score": np.array([int_score(v) for v in frame["score"]], dtype=np.int64)},
                        columns=JUDGE_SCORE_COLUMNS)


#: the columns of `judge_scores`
JUDGE_SCORE_COLUMNS = ["turn_id", "dimension", "repeat", "score"]


def judge_consensus(judge: pd.DataFrame) -> pd.DataFrame:
    """One judge score per item: repeats combined by the lower median (an integer on the scale)."""
    if judge.duplicated(["turn_id", "dimension"]).any():
        return (judge.groupby(["turn_id", "dimension"], sort=False)["score"]
                .agg(lambda s: lower_median(s.tolist())).reset_index())
    return judge[["turn_id", "dimension", "score"]]


# ------------------------------------------------------------------------------------------------
# agreement


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa of a subjects × categories table of counts (every row sums to the same number
    of raters ``m >= 2``): ``(P̄ − P̄_e) / (1 − P̄_e)`` with ``P_i = (Σ_j n_ij² − m) / (m(m − 1))`` the
    agreement on subject ``i`` and ``P̄_e = Σ_j p_j²`` over the category shares ``p_j`` (Fleiss
    1971). NaN for an empty table, fewer than two raters or chance agreement 1.

    Raises:
        ValueError: rows with different totals.
    """
    t = np.asarray(counts, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] == 0:
        return float("nan")
    m = t.sum(axis=1)
    if not np.all(m == m[0]):
        raise ValueError("Fleiss' kappa needs the same number of ratings on every subject")
    m0 = float(m[0])
    if m0 < 2:
        return float("nan")
    p_i = ((t * t).sum(axis=1) - m0) / (m0 * (m0 - 1))
    p_j = t.sum(axis=0) / t.sum()
    p_e = float((p_j * p_j).sum())
    return float("nan") if p_e >= 1 else float((p_i.mean() - p_e) / (1 - p_e))


def _bootstrap(stat, n_items: int, B: int, rng: np.random.Generator, ci: float) -> tuple[float, float]:
    if n_items < 2 or B <= 0:
        return float("nan"), float("nan")
    values = np.array([stat(rng.integers(0, n_items, n_items)) for _ in range(B)])
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return float("nan"), float("nan")
    tail = (1 - ci) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def _dimensions(judge, human, scale, dimensions, problems):
    """Per dimension to report: (dimension, low, high, items, judge scores, human matrix, human
    consensus) over the compared items whose scores are on the scale."""
    j = judge_consensus(judge_scores(judge, problems, scale=scale))
    h = read_ratings(human, problems, keep_lines=True)
    dims = [canonical(d) for d in dimensions] if dimensions else list(dict.fromkeys(h["dimension"]))
    for dim in dims:
        low, high = scale_bounds(dim, scale)
        jd, hd = _in_scale(j[j["dimension"] == dim], h[h["dimension"] == dim], low, high, dim, problems)
        items, js, hm, raters = _matrices(jd, hd)
        cons = np.array([lower_median(r[~np.isnan(r)].tolist()) for r in hm], dtype=np.float64)
        yield dim, low, high, items, js, hm, cons, raters


def agreement(
    judge: Frame | Sequence[Frame],
    human: Frame,
    *,
    scale: str | tuple[int, int] | None = None,
    bootstrap: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    dimensions: Sequence[str] | None = None,
    problems: list[Problem] | None = None,
    pooled: bool = True,
) -> pd.DataFrame:
    """Agreement of the judge with human raters, one row per dimension (and pooled rows).

    Args:
        judge: judge scores: a DataFrame ``turn_id, dimension, score`` (repeats allowed: they are
            combined by the lower median), or judgments / labels JSONL file(s).
        human: human ratings ``turn_id, dimension, rater, score`` (DataFrame, CSV/TSV/JSONL, or a
            filled-in rating sheet; see `read_ratings`).
        scale: ``"reteco"`` (1-5), ``"ikat"`` (0-4), ``"binary"`` (0-1) or ``(low, high)``; default
            from each dimension's name.
        bootstrap: resamples of the items for the confidence intervals (0: none).
        ci: confidence level of the intervals.
        seed: random seed of the bootstrap.
        dimensions: the dimensions to report (default: those with human ratings, in first-seen order).
        problems: receives rows left out (non-integer or out-of-scale scores); default: a
            `DataFormatWarning`.
        pooled: add one ``(pooled <low>-<high>)`` row per scale that two or more reported
            dimensions share: the statistics over all their (dimension, item) pairs, the raters
            matched by name; its bootstrap draws from numpy seeded with ``[seed, number of dimensions + its index]``.

    Returns:
        DataFrame with `AGREEMENT_COLUMNS`: ``dimension, n, kappa_quadratic,
        kappa_ci_low, kappa_ci_high, alpha_ordinal, alpha_ci_low, alpha_ci_high, alpha_humans,
        spearman, kendall, exact, within_1, fleiss_kappa, note``; ``note`` says when there is nothing to compare,
        when ``n`` is below `MIN_INTERVAL_ITEMS` (no interval is given) and what a pooled
        row pools.
    """
    return _agreement_table(list(_dimensions(judge, human, scale, dimensions, problems)), bootstrap, ci, seed, pooled)


def agreement_and_confusion(
    judge: Frame | Sequence[Frame],
    human: Frame,
    *,
    scale: str | tuple[int, int] | None = None,
    bootstrap: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    dimensions: Sequence[str] | None = None,
    problems: list[Problem] | None = None,
    pooled: bool = True,
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """`agreement` and `confusion_matrices` from one reading of the inputs.

    The judge and human inputs are read (and their left-out rows reported, to ``problems`` or
    as one `DataFormatWarning` each) once; both tables are
    derived from the same compared items. The arguments are those of `agreement`.

    Returns:
        ``(agreement table, {dimension: confusion matrix})``, each equal to what
        `agreement` and `confusion_matrices` return for the same arguments.
    """
    dims = list(_dimensions(judge, human, scale, dimensions, problems))
    return _agreement_table(dims, bootstrap, ci, seed, pooled), _confusion_tables(dims)


def _pool(group: list) -> tuple:
    """One (items, judge scores, human matrix, consensus) over several dimensions of one scale:
    items ``"<dimension> <item>"``, the human matrix over the union of the raters (by name)."""
    raters = sorted({r for g in group for r in g[7]})
    col = {r: i for i, r in enumerate(raters)}
    blocks = []
    for g in group:
        m = np.full((len(g[3]), len(raters)), np.nan)
        m[:, [col[r] for r in g[7]]] = g[5]
        blocks.append(m)
    items = pd.Index([f"{g[0]} {i}" for g in group for i in g[3]])
    return (items, np.concatenate([g[4] for g in group]), np.vstack(blocks), np.concatenate([g[6] for g in group]))


def _agreement_table(dims: list, bootstrap: int, ci: float, seed: int, pooled: bool = True) -> pd.DataFrame:
    rows = [_agreement_one(dim, low, high, items, js, hm, cons, bootstrap, ci, np.random.default_rng([seed, d_i]))
            for d_i, (dim, low, high, items, js, hm, cons, _raters) in enumerate(dims)]
    if pooled:
        scales: dict[tuple[int, int], list] = {}
        for d in dims:
            if len(d[3]):
                scales.setdefault((d[1], d[2]), []).append(d)
        groups = [(k, g) for k, g in scales.items() if len(g) >= 2]
        for g_i, ((low, high), group) in enumerate(groups):
            items, js, hm, cons = _pool(group)
            row = _agreement_one(f"(pooled {low}-{high})", low, high, items, js, hm, cons, bootstrap, ci,
                                 np.random.default_rng([seed, len(dims) + g_i]))
            pooled_note = f"pooled over {', '.join(g[0] for g in group)} (items = dimension x item)"
            row["note"] = pooled_note + (f"; {row['note']}" if row["note"] else "")
            rows.append(row)
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _in_scale(jd, hd, low, high, dim, problems):
    found: list[Problem] = []
    out = []
    for name, f in (("judge", jd), ("human", hd)):
        kept, bad = out_of_scale(f.assign(dimension=dim) if len(f) else f, {dim: (low, high)}, who=name)
        out.append(kept if len(f) else f)
        found += bad
    report_problems(found, problems)
    return out[0], out[1]


def _matrices(jd: pd.DataFrame, hd: pd.DataFrame):
    """(items, judge scores, human matrix items x raters with NaN) over the compared items."""
    items = pd.Index(sorted(set(jd["turn_id"]) & set(hd["turn_id"])))
    jscore = jd.drop_duplicates("turn_id").set_index("turn_id")["score"].reindex(items).to_numpy(np.float64)
    wide = hd[hd["turn_id"].isin(items)].pivot(index="turn_id", columns="rater", values="score").reindex(items)
    return items, jscore, wide.to_numpy(np.float64), [str(c) for c in wide.columns]


def _agreement_one(dim, low, high, items, js, hm, cons, B, ci, rng) -> dict[str, Any]:
    n = len(items)
    row: dict[str, Any] = {"dimension": dim, "n": n}
    if n == 0:
        return {**row, **{c: float("nan") for c in AGREEMENT_COLUMNS[2:-1]},
                "note": "no item has both a valid judge score and a human rating"}
    row["note"] = None if n >= MIN_INTERVAL_ITEMS or B <= 0 else (
        f"n = {n} is too small for an interval (at least {MIN_INTERVAL_ITEMS} items)")
    mean = np.nanmean(hm, axis=1)
    k = high - low + 1
    jcode = (js - low).astype(np.int64)
    ccode = (cons - low).astype(np.int64)
    pair = jcode * k + ccode
    all_counts = _unit_counts(np.column_stack([js, hm]), low, high)
    h_counts = _unit_counts(hm, low, high)

    def kappa_of(idx: np.ndarray) -> float:
        return _kappa_from_confusion(np.bincount(pair[idx], minlength=k * k).reshape(k, k).astype(np.float64))

    def alpha_of(idx: np.ndarray) -> float:
        return _alpha_from_counts(all_counts[idx])

    everything = np.arange(n)
    row["kappa_quadratic"] = kappa_of(everything)
    small = n < MIN_INTERVAL_ITEMS
    row["kappa_ci_low"], row["kappa_ci_high"] = _bootstrap(kappa_of, n, 0 if small else B, rng, ci)
    row["alpha_ordinal"] = alpha_of(everything)
    row["alpha_ci_low"], row["alpha_ci_high"] = _bootstrap(alpha_of, n, 0 if small else B, rng, ci)
    row["alpha_humans"] = _alpha_from_counts(h_counts)
    row["spearman"] = spearman(js, mean)
    row["kendall"] = kendall_tau_b(js, mean)
    row["exact"] = float(np.mean(js == cons))
    row["within_1"] = float(np.mean(np.abs(js - cons) <= 1))
    complete = ~np.isnan(hm).any(axis=1)
    row["fleiss_kappa"] = fleiss_kappa(all_counts[complete]) if hm.shape[1] >= 2 and complete.any() \
        else float("nan")
    return row


def confusion_matrices(
    judge: Frame | Sequence[Frame],
    human: Frame,
    *,
    scale: str | tuple[int, int] | None = None,
    dimensions: Sequence[str] | None = None,
    problems: list[Problem] | None = None,
) -> dict[str, pd.DataFrame]:
    """Per dimension, the counts of (judge score, human consensus) over the compared items: rows
    are the judge's scores, columns the consensus, both over the whole scale."""
    return _confusion_tables(_dimensions(judge, human, scale, dimensions, problems))


def _confusion_tables(dims) -> dict[str, pd.DataFrame]:
    out = {}
    for dim, low, high, _items, js, _hm, cons, _raters in dims:
        cats = list(range(low, high + 1))
        table = pd.crosstab(pd.Categorical(js.astype(int), categories=cats),
                            pd.Categorical(cons.astype(int), categories=cats), dropna=False)
        table.index.name, table.columns.name = "judge", "human consensus"
        out[dim] = table
    return out


def self_consistency(
    judge: Frame | Sequence[Frame],
    *,
    scale: str | tuple[int, int] | None = None,
    problems: list[Problem] | None = None,
) -> pd.DataFrame:
    """Krippendorff's ordinal alpha across repeated judgments (repeats as coders), per dimension:
    ``dimension, items`` (items with at least two valid repeats), ``repeats`` (the number of
    distinct repeats with a valid score), ``alpha_repeats``, ``identical`` (share of those items whose valid repeats all agree)."""
    j = judge_scores(judge, problems, scale=scale)
    rows = []
    for dim, part in j.groupby("dimension", sort=False):
        low, high = scale_bounds(str(dim), scale)
        part = part[(part["score"] >= low) & (part["score"] <= high)]
        m = part.pivot_table(index="turn_id", columns="repeat", values="score", aggfunc="first")
        arr = m.to_numpy(np.float64)
        multi = (~np.isnan(arr)).sum(axis=1) >= 2
        same = [len(set(r[~np.isnan(r)].tolist())) == 1 for r in arr[multi]]
        rows.append({"dimension": dim, "items": int(multi.sum()), "repeats": int(arr.shape[1]),
                     "alpha_repeats": alpha_ordinal(arr[multi], low, high) if multi.any() else float("nan"),
                     "identical": float(np.mean(same)) if same else float("nan")})
    return pd.DataFrame(rows, columns=["dimension", "items", "repeats", "alpha_repeats", "identical"])

