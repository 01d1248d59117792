"""How far two rankings of the same runs agree: one leaderboard against a reference.

`rank_agreement` compares the order a *reference* ``a`` gives to a set of runs with the order
``b`` gives them — human labels against an LLM judge, two judges, two qrels sets (iKAT 2023 PTKB
``org`` against ``nist``), a full and a reduced topic set. Higher values rank first. Over the
``n`` runs both sides rank (optionally only the reference's best ``top``):

* ``kendall_tau_b`` — Kendall's τ-b, ``(C − D) / √((n₀ − n₁)(n₀ − n₂))`` over the ``n₀ = n(n−1)/2``
  pairs (C concordant, D discordant, n₁ / n₂ pairs tied in a / in b) (Kendall 1945);
* ``tau_ap`` — the AP rank correlation of Yilmaz, Aslam & Robertson (2008, "A new rank correlation
  coefficient for information retrieval", SIGIR): going down ``b``'s ranking, the run at position
  ``i`` scores ``C(i)/(i − 1)``, the share of the ``i − 1`` runs above it in ``b`` that ``a`` also
  ranks above it; ``τ_AP = 2/(n − 1) · Σ_{i=2..n} C(i)/(i − 1) − 1``. A swap near the top costs
  more than one near the bottom; it is not symmetric (``a`` is the truth, ``b``'s order is walked).
  The definition has no ties. **Ties**: a pair that ``b`` orders is right when ``a`` orders it
  the same way, half right when ``a`` ties it; a pair that ``b`` ties is right when ``a`` ties it
  too and half right otherwise; the positions of ``b``'s tied runs are averaged over every order
  of each tie group (all equally likely). This equals the original without ties, is 1 for
  identical rankings (ties included), and is 0 when ``b`` ties every run of an untied ``a``. It is
  computed in closed form (harmonic numbers), not by enumerating orders;
* ``spearman`` — Spearman's ρ, Pearson's r of the average ranks;
* ``tau_gap`` — the head-weighted, gap-sensitive correlation τ_GAP of Gao & Oard (2015, "A
  head-weighted gap-sensitive correlation coefficient", SIGIR): going down ``b``'s ranking, the
  run at position ``i`` scores the share of the reference gap mass ``Σ_{j<i} |a_j − a_i|`` of the
  runs above it that ``b`` orders as ``a`` does (``a_j > a_i``);
  ``τ_GAP = 2/N' · Σ_i share(i) − 1`` over the ``N'`` positions whose gap mass is not zero
  (``N' = n − 1`` when ``a`` has no ties; a pair ``a`` ties weighs nothing). A swap near the top
  or across a large gap of ``a`` costs more than a swap near the bottom across a small one. Not
  symmetric: ``a`` gives the gaps, ``b`` only the order. **Ties in b** are ordered by run name
  (neither side's values decide them), the convention of the TREC AutoJudge meta-evaluation
  (``autojudge-evaluate``, which walks runs sorted by id); NaN when every pair of ``a`` is tied;
* ``topk_kendall`` — the Kendall distance ``K^(p)`` between the top-``k`` lists of the two sides
  (Fagin, Kumar & Sivakumar 2003, "Comparing top k lists", SIAM J. Discrete Math.), over the
  union of both lists: a pair both lists order costs 1 when they order it oppositely (a run in a
  list is ahead of one it leaves out), a pair that both runs of one list hold and the other list
  holds neither of costs ``p`` (default ½, the "neutral" choice), normalised by its maximum
  ``k² + p·k(k − 1)`` (two disjoint lists): 0 = the same top ``k`` in the same order, 1 = disjoint.
  ``k`` is ``top`` (default: every run both sides rank). With fewer than ``2k`` runs the lists
  cannot be disjoint and the distance stays below 1 (the normalisation does not depend on the
  number of runs, so values at one ``k`` compare across leaderboards). Ties are ordered by run name;
* ``top1_same`` — whether some run is first on both sides, a run tied for first counting as
  first: the sets of runs tied for first share a run. **Ties** are exact equality of the values as
  given (a leaderboard JSON holds them at full precision), whatever order a board prints tied runs
  in. ``top1_tied_a`` / ``top1_tied_b`` count the runs tied for first on each side (1: no tie),
  so a top-1 agreement that rests on a tie is visible;
* ``swaps`` — the pairs of runs significantly different in ``a`` (its paired tests after
  correction, a leaderboard's ``pairwise.significant``) that ``b`` puts in the opposite order;
  ``swaps_significant`` counts those that ``b`` also finds significant. None when the side gives
  no significance.

**Intervals.** When per-query values are available (a
`Leaderboard` or
`Comparison` object, or a per-query frame ``run, query_id, value``
[+ ``weight, unit, stratum``]), the statistical units are resampled with replacement (stratified
as the leaderboard resamples them, `reteco_measures.stats.design`), every run's aggregate is
recomputed on each side from the same resample (paired: one draw of the units shared by both
sides), and the 2.5/97.5 percentiles of each statistic over the resamples are reported
(percentile bootstrap). A leaderboard's JSON file has no per-query values: no intervals.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataFormatWarning, user_stacklevel
from .tests import bootstrap_counts, build_paired

__all__ = ["RankAgreement", "rank_agreement", "STATISTICS", "kendall_tau_b", "tau_ap", "spearman", "tau_gap",
           "topk_kendall"]

#: the statistics that get bootstrap intervals
STATISTICS = ("kendall_tau_b", "tau_ap", "spearman", "tau_gap")
_ALL = "(all)"


@dataclass
class RankAgreement:
    """The agreement of ranking ``b`` with the reference ``a`` (see the module docs).

    Attributes:
        n: runs compared. kendall_tau_b, tau_ap, spearman, tau_gap: the correlations (NaN when
            undefined). topk_kendall: the normalised top-``k`` Kendall distance (0 = same lists).
        top1_same: some run is first on both sides (ties counting as first; module docs).
            top1_tied_a, top1_tied_b: runs tied for first on each side (1: no tie). swaps: pairs significant in ``a`` that
            ``b`` reverses (None without significance in ``a``); swaps_significant: those also
            significant in ``b`` (None without significance in ``b``). swapped: the reversed pairs
            ``(better in a, better in b)``. intervals: ``{statistic: (low, high)}`` (empty without
            per-query values). runs: the runs compared, in ``a``'s order; only_a / only_b: runs
            left out because one side lacks them. params: ``top, ci, n_resamples, seed``.
    """

    n: int
    kendall_tau_b: float
    tau_ap: float
    spearman: float
    top1_same: bool
    swaps: int | None
    swaps_significant: int | None
    swapped: list[tuple[str, str]] = field(default_factory=list)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    top1_tied_a: int = 1
    top1_tied_b: int = 1
    tau_gap: float = float("nan")
    topk_kendall: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the statistics, ``<statistic>_ci_low/_ci_high`` when intervals exist, the
        swapped pairs, runs and parameters (NaN as None)."""
        out: dict[str, Any] = {"n": self.n}
        for s in STATISTICS:
            out[s] = _none(getattr(self, s))
            if s in self.intervals:
                out[f"{s}_ci_low"], out[f"{s}_ci_high"] = (_none(v) for v in self.intervals[s])
        out["topk_kendall"] = _none(self.topk_kendall)
        out.update({"top1_same": self.top1_same, "top1_tied_a": self.top1_tied_a, "top1_tied_b": self.top1_tied_b,
                    "swaps": self.swaps, "swaps_significant": self.swaps_significant,
                    "swapped": [list(p) for p in self.swapped], "runs": list(self.runs),
                    "only_a": list(self.only_a), "only_b": list(self.only_b), "params": dict(self.params)})
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per statistic: ``statistic, value, ci_low, ci_high``."""
        rows = [{"statistic": s, "value": getattr(self, s), "ci_low": self.intervals.get(s, (np.nan, np.nan))[0],
                 "ci_high": self.intervals.get(s, (np.nan, np.nan))[1]} for s in STATISTICS]
        for s in ("topk_kendall", "top1_same", "top1_tied_a", "top1_tied_b", "n", "swaps", "swaps_significant"):
            v = getattr(self, s)
            rows.append({"statistic": s, "value": np.nan if v is None else float(v), "ci_low": np.nan,
                         "ci_high": np.nan})
        return pd.DataFrame(rows, columns=["statistic", "value", "ci_low", "ci_high"])


def _none(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


# ------------------------------------------------------------------------------------------------
# the statistics, batched: x, y have shape (..., n)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray | float:
    """Kendall's τ-b of paired values (ties corrected), over the last axis; NaN when a side is constant."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    dx = np.sign(x[..., :, None] - x[..., None, :])
    dy = np.sign(y[..., :, None] - y[..., None, :])
    s = (dx * dy).sum(axis=(-1, -2))
    tx = (dx != 0).sum(axis=(-1, -2)).astype(np.float64)
    ty = (dy != 0).sum(axis=(-1, -2)).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where((tx > 0) & (ty > 0), s / np.sqrt(tx * ty), np.nan)
    return _scalar(out)


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """Average ranks (1 = smallest) over the last axis, ties sharing the mean of their ranks."""
    less = (v[..., None, :] < v[..., :, None]).sum(axis=-1)
    equal = (v[..., None, :] == v[..., :, None]).sum(axis=-1)
    return less + (equal + 1) / 2.0


def spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray | float:
    """Spearman's ρ (Pearson's r of the average ranks) over the last axis; NaN for constant input."""
    rx = _average_ranks(np.asarray(x, np.float64))
    ry = _average_ranks(np.asarray(y, np.float64))
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, (rx * ry).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)
    return _scalar(out)


def tau_ap(a: np.ndarray, b: np.ndarray) -> np.ndarray | float:
    """AP rank correlation of ranking ``b`` against the reference ``a`` (higher values first), ties
    treated as in the module docs; over the last axis. NaN for fewer than two runs."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    n = a.shape[-1]
    if n < 2:
        return _scalar(np.full(a.shape[:-1], np.nan))
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])  # H(k), k = 0..n

    def H(k):  # noqa: N802  (H(k) for k >= -1, H(-1) = H(0) = 0: only reached with zero weight)
        return harmonic[np.maximum(k, 0)]

    above = b[..., None, :] > b[..., :, None]          # [i, j]: j above i in b
    m = (b[..., None, :] == b[..., :, None]).sum(axis=-1)  # size of i's tie group in b
    s = above.sum(axis=-1) + 1                          # first position of i's group (1-based)
    # expected 1/(pos(i) - 1) with pos(i) uniform on s..s+m-1 (only used when some run is above: s >= 2)
    with np.errstate(invalid="ignore", divide="ignore"):  # exact 1/(s - 1) for an untied run
        h = np.where(s >= 2, np.where(m == 1, 1.0 / (s - 1), (H(s + m - 2) - H(s - 2)) / m), 0.0)
    right = np.where(a[..., None, :] > a[..., :, None], 1.0, np.where(a[..., None, :] == a[..., :, None], 0.5, 0.0))
    between = (above * right).sum(axis=-1) * h           # pairs in different tie groups of b
    # within a tie group of size m starting at s: the later run of a pair sits at q with probability
    # (q - s)/C(m, 2), so the group's pairs share L = sum_{q=s}^{s+m-1} (q - s)/(q - 1); a pair earns 1 when
    # the reference ties it too, else 1/2 (either order, one right): run i's share is L/C(m,2) * (m - 1 + t_i)/4
    # with t_i the runs of its group that the reference ties with it
    tied_a = ((a[..., None, :] == a[..., :, None]) & (b[..., None, :] == b[..., :, None])).sum(axis=-1) - 1
    L = np.where(s >= 2, m - (s - 1) * (H(s + m - 2) - H(s - 2)), m - 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(m == 1, 0.0, L / (m * (m - 1) / 2.0) * (m - 1 + tied_a) / 4.0)
    total = (between + within).sum(axis=-1)
    return _scalar(2.0 * total / (n - 1) - 1.0)


def tau_gap(a: np.ndarray, b: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray | float:
    """τ_GAP (Gao & Oard 2015) of ranking ``b`` against the reference values ``a`` (higher first),
    over the last axis (module docs). ``tiebreak``: a rank per run (shape ``(n,)``) ordering the
    runs ``b`` ties (lower first; default: their position). NaN for fewer than two runs or when
    every pair of ``a`` is tied."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    n = a.shape[-1]
    if n < 2:
        return _scalar(np.full(a.shape[:-1], np.nan))
    tb = np.arange(n) if tiebreak is None else np.asarray(tiebreak)
    order = np.lexsort((np.broadcast_to(tb, b.shape), -b), axis=-1)  # b best first, ties by tiebreak
    t = np.take_along_axis(a, order, axis=-1)                          # the reference walked in b's order
    above = np.tril(np.ones((n, n), dtype=bool), k=-1)                 # [i, j]: j above i
    gap = np.abs(t[..., None, :] - t[..., :, None]) * above
    right = np.where(t[..., None, :] > t[..., :, None], gap, 0.0)
    mass, ok = gap.sum(axis=-1), right.sum(axis=-1)
    used = (mass > 0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(mass > 0, ok / np.where(mass > 0, mass, 1.0), 0.0).sum(axis=-1)
        out = np.where(used > 0, 2.0 * share / np.maximum(used, 1) - 1.0, np.nan)
    return _scalar(out)


def topk_kendall(a: np.ndarray, b: np.ndarray, k: int | None = None, *, p: float = 0.5,
                 tiebreak: np.ndarray | None = None) -> float:
    """Normalised Kendall distance ``K^(p)`` of the top-``k`` lists of ``a`` and ``b`` (Fagin,
    Kumar & Sivakumar 2003; module docs): 0 = the same top ``k`` in the same order, 1 = disjoint
    lists. ``a``, ``b``: values of the same runs (higher first); ``k`` default: every run;
    ``tiebreak``: a rank per run ordering tied values (default: position). NaN for ``k < 1``."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    n = a.shape[-1]
    k = n if k is None else min(int(k), n)
    if not 0 <= p <= 1:
        raise ValueError(f"p must be in [0, 1], not {p!r}")
    if k < 1:
        return float("nan")
    tb = np.arange(n) if tiebreak is None else np.asarray(tiebreak)

    def positions(v: np.ndarray) -> np.ndarray:  # place in the top k (0 = first), k = not in it
        pos = np.empty(n, dtype=np.int64)
        pos[np.lexsort((tb, -v))] = np.arange(n)
        return np.minimum(pos, k)

    pa, pb = positions(a), positions(b)
    keep = (pa < k) | (pb < k)                       # the union of the two lists
    pa, pb = pa[keep], pb[keep]
    da = np.sign(pa[None, :] - pa[:, None])          # 0: neither run in a's list
    db = np.sign(pb[None, :] - pb[:, None])
    pair = np.triu(np.ones((len(pa), len(pa)), dtype=bool), k=1)
    distance = ((da * db < 0) & pair).sum() + p * ((da * db == 0) & pair).sum()
    return float(distance / (k * k + p * k * (k - 1)))


def _scalar(v: np.ndarray) -> np.ndarray | float:
    v = np.asarray(v, dtype=np.float64)
    return float(v) if v.ndim == 0 else v


# ------------------------------------------------------------------------------------------------
# the two sides


@dataclass
class _Side:
    values: pd.Series                     # run -> aggregate
    per_query: pd.DataFrame | None = None  # run, query_id, value, weight [, unit, stratum]
    significant: set[frozenset] | None = None
    name: str = ""


def _from_doc(doc: Mapping[str, Any], name: str) -> _Side:
    """A leaderboard JSON document (``leaderboard --format json``) or a Comparison's ``to_json()``."""
    if isinstance(doc.get("ranking"), list):
        rows = pd.DataFrame(doc["ranking"])
    elif isinstance(doc.get("summary"), list):
        rows = pd.DataFrame(doc["summary"])
        if "measure" in rows and rows["measure"].nunique() > 1:
            raise ValueError(f"{name}: a comparison of several measures ({sorted(rows['measure'].unique())}); "
                             "give one measure's leaderboard")
    else:
        raise ValueError(f"{name}: not a leaderboard (expected the JSON of `leaderboard --format json`, with a "
                         "'ranking' list)")
    if not {"run", "value"} <= set(rows.columns):
        raise ValueError(f"{name}: the ranking rows need 'run' and 'value'")
    pairs = pd.DataFrame(doc.get("pairwise") or [])
    return _Side(_values(rows["run"], rows["value"], name), None, _significant(pairs), name)


def _values(runs: Any, values: Any, name: str) -> pd.Series:
    s = pd.Series(pd.to_numeric(pd.Series(list(values)), errors="coerce").to_numpy(dtype=np.float64),
                  index=pd.Index([str(r) for r in runs], name="run"))
    if s.index.has_duplicates:
        raise ValueError(f"{name}: run(s) given twice: {sorted(set(s.index[s.index.duplicated()]))}")
    return s


def _significant(pairs: pd.DataFrame) -> set[frozenset] | None:
    if pairs.empty or not {"run", "other", "significant"} <= set(pairs.columns):
        return None
    for col in [c for c in pairs.columns if c not in {"run", "other", "measure", "delta", "p_value", "p_adjusted",
                                                       "significant", "effect_size", "wins", "ties", "losses"}]:
        pairs = pairs[pairs[col] == _ALL]  # a grouped comparison: its (all) rows
    sig = pairs["significant"].astype(bool).to_numpy()
    return {frozenset((str(r), str(o))) for r, o in zip(pairs["run"][sig], pairs["other"][sig], strict=True)}


def _side(x: Any, name: str) -> _Side:
    if isinstance(x, (str, os.PathLike)):
        path = Path(x)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such leaderboard file")
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a leaderboard JSON file ({exc})") from None
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: not a leaderboard JSON file (expected an object with a 'ranking' list)")
        return _from_doc(doc, str(path))
    if hasattr(x, "ranking") and hasattr(x, "pairwise"):  # a Leaderboard
        per_query = getattr(x, "per_query", None)
        if per_query is not None and "measure" in per_query.columns:
            per_query = per_query[per_query["measure"] == x.measure]
        return _Side(_values(x.ranking["run"], x.ranking["value"], name), _usable(per_query),
                     _significant(x.pairwise), name)
    if hasattr(x, "summary") and hasattr(x, "per_query") and hasattr(x, "pairwise"):  # a Comparison
        summary = x.summary
        for col in getattr(x, "by", []) or []:
            summary = summary[summary[col] == _ALL]
        if summary["measure"].nunique() != 1:
            raise ValueError(f"{name}: a comparison of several measures ({list(summary['measure'].unique())}); "
                             "compare one measure")
        measure = summary["measure"].iloc[0]
        pq = x.per_query[x.per_query["measure"] == measure]
        return _Side(_values(summary["run"], summary["value"], name), _usable(pq), _significant(x.pairwise), name)
    if isinstance(x, Mapping):
        if isinstance(x.get("ranking"), list) or isinstance(x.get("summary"), list):
            return _from_doc(x, name)
        return _Side(_values(list(x.keys()), list(x.values()), name), name=name)
    if isinstance(x, pd.Series):
        return _Side(_values(x.index, x.to_numpy(), name), name=name)
    if isinstance(x, pd.DataFrame):
        if {"run", "query_id", "value"} <= set(x.columns):
            pq = _usable(x)
            assert pq is not None
            runs = list(dict.fromkeys(pq["run"].astype(str)))
            P = build_paired(pq.assign(run=pq["run"].astype(str)), runs)
            return _Side(pd.Series(P.estimate, index=pd.Index(runs, name="run")), pq, None, name)
        if {"run", "value"} <= set(x.columns):
            return _Side(_values(x["run"], x["value"], name), name=name)
        raise ValueError(f"{name}: a DataFrame needs 'run' and 'value' (a ranking) or 'run', 'query_id' and 'value' "
                         "(per-query values)")
    raise TypeError(f"{name}: expected a {{run: value}} dict, a Series, a DataFrame, a Leaderboard or Comparison, "
                    f"or a leaderboard JSON file; got {type(x).__name__}")


def _usable(pq: pd.DataFrame | None) -> pd.DataFrame | None:
    if pq is None or pq.empty or not {"run", "query_id", "value"} <= set(pq.columns):
        return None
    cols = [c for c in ("run", "query_id", "value", "weight", "unit", "stratum") if c in pq.columns]
    return pq[cols].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------


def rank_agreement(
    a: Any,
    b: Any,
    *,
    top: int | None = None,
    ci: float = 0.95,
    n_resamples: int = 1_000,
    seed: int = 0,
) -> RankAgreement:
    """How far ranking ``b`` agrees with the reference ranking ``a`` (module docs).

    Args:
        a, b: each a ``{run: value}`` dict, a Series indexed by run, a DataFrame ``run, value``
            or per-query ``run, query_id, value`` [+ ``weight, unit, stratum``], a
            `Leaderboard` or a one-measure
            `Comparison`, or the path of a leaderboard JSON file
            (``leaderboard --format json``) / its parsed dict. Higher values rank first.
        top: compare only the reference's best ``top`` runs (of those both sides rank).
        ci, n_resamples, seed: level, resamples and seed of the bootstrap intervals (only when
            per-query values are available).

    Returns:
        `RankAgreement`. Runs that only one side ranks (or whose value is NaN) are left
        out with a `DataFormatWarning`.

    Raises:
        ValueError: fewer than two runs in common, a bad ``top`` / ``ci`` / ``n_resamples``, an
            input that is not a ranking.
    """
    if top is not None and (not isinstance(top, (int, np.integer)) or isinstance(top, bool) or top < 2):
        raise ValueError(f"top must be an integer >= 2, not {top!r}")
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), not {ci!r}")
    if n_resamples < 0:
        raise ValueError("n_resamples must be >= 0")
    A, B = _side(a, "a"), _side(b, "b")
    va, vb = A.values.dropna(), B.values.dropna()
    common = [r for r in _order(va) if r in vb.index]
    only_a = [r for r in A.values.index if r not in common]
    only_b = [r for r in B.values.index if r not in common]
    if only_a or only_b:
        warnings.warn(f"rank agreement: runs ranked by one side only (or with no value) are left out: "
                      f"a only {only_a[:10]}, b only {only_b[:10]}; {len(common)} run(s) compared",
                      DataFormatWarning, stacklevel=user_stacklevel())
    names = np.argsort(np.argsort(np.array(common, dtype=object)))  # ties of b by run name (docs)
    topk = topk_kendall(va.reindex(common).to_numpy(), vb.reindex(common).to_numpy(), top, tiebreak=names)
    if top is not None:
        common = common[:top]
    if len(common) < 2:
        raise ValueError(f"rank agreement needs at least two runs both sides rank; common: {common}")
    x, y = va.reindex(common).to_numpy(), vb.reindex(common).to_numpy()
    top_a = {r for r, v in zip(common, x, strict=True) if v == x.max()}
    top_b = {r for r, v in zip(common, y, strict=True) if v == y.max()}
    swapped = _swapped(common, x, y, A.significant)
    sw_both = None
    if A.significant is not None and B.significant is not None:
        sw_both = sum(frozenset(p) in B.significant for p in swapped)
    intervals = {}
    if n_resamples and (A.per_query is not None or B.per_query is not None):
        intervals = _bootstrap(A, B, common, x, y, ci, n_resamples, seed)
    return RankAgreement(
        n=len(common), kendall_tau_b=kendall_tau_b(x, y), tau_ap=tau_ap(x, y), spearman=spearman(x, y),
        top1_same=bool(top_a & top_b), top1_tied_a=len(top_a), top1_tied_b=len(top_b), swaps=None if A.significant is None else len(swapped),
        swaps_significant=sw_both, swapped=swapped, intervals=intervals, runs=common, only_a=only_a,
        only_b=only_b, tau_gap=tau_gap(x, y, np.argsort(np.argsort(np.array(common, dtype=object)))),
        topk_kendall=topk, params={"top": top, "ci": ci, "n_resamples": n_resamples if intervals else 0, "seed": seed})


def _order(values: pd.Series) -> list[str]:
    """Runs best first (stable for ties)."""
    return list(values.sort_values(ascending=False, kind="stable").index)


def _swapped(runs: list[str], x: np.ndarray, y: np.ndarray, significant: set[frozenset] | None
             ) -> list[tuple[str, str]]:
    if significant is None:
        return []
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    i, j = np.nonzero((dx > 0) & (dy < 0))  # i better in a, j better in b
    return [(runs[p], runs[q]) for p, q in zip(i, j, strict=True) if frozenset((runs[p], runs[q])) in significant]


def _bootstrap(A: _Side, B: _Side, runs: list[str], x: np.ndarray, y: np.ndarray, ci: float, n_resamples: int,
               seed: int) -> dict[str, tuple[float, float]]:
    """Percentile intervals of the statistics over paired resamples of the units (module docs)."""
    parts, names = [], []
    for tag, side in (("a", A), ("b", B)):
        if side.per_query is not None:
            pq = side.per_query.assign(run=side.per_query["run"].astype(str))
            pq = pq[pq["run"].isin(runs)]
            parts.append(pq.assign(run=tag + "\x00" + pq["run"]))
            names += [tag + "\x00" + r for r in runs]
    frame = pd.concat(parts, ignore_index=True)
    P = build_paired(frame, names)
    rng = np.random.default_rng([int(seed), 20080720])
    stats: dict[str, list[np.ndarray]] = {s: [] for s in STATISTICS}
    chunk = max(1, min(n_resamples, 2_000_000 // max(1, len(runs) ** 2 + P.n_units)))
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        C = bootstrap_counts(rng, P.strata, size)
        agg = P.ratio(C @ P.S.T, C @ P.W.T)  # (size, sides * runs)
        k = 0
        xs = np.broadcast_to(x, (size, len(runs)))
        ys = np.broadcast_to(y, (size, len(runs)))
        if A.per_query is not None:
            xs, k = agg[:, :len(runs)], len(runs)
        if B.per_query is not None:
            ys = agg[:, k:k + len(runs)]
        ok = ~(np.isnan(xs).any(axis=1) | np.isnan(ys).any(axis=1))
        xs, ys = xs[ok], ys[ok]
        stats["kendall_tau_b"].append(np.atleast_1d(kendall_tau_b(xs, ys)))
        stats["tau_ap"].append(np.atleast_1d(tau_ap(xs, ys)))
        stats["spearman"].append(np.atleast_1d(spearman(xs, ys)))
        stats["tau_gap"].append(np.atleast_1d(tau_gap(xs, ys, np.argsort(np.argsort(np.array(runs, dtype=object))))))
        done += size
    q = (1.0 - ci) / 2.0
    out = {}
    for s, chunks in stats.items():
        v = np.concatenate(chunks)
        v = v[~np.isnan(v)]
        out[s] = (float(np.quantile(v, q)), float(np.quantile(v, 1 - q))) if len(v) else (np.nan, np.nan)
    return out
