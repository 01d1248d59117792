"""Tie sensitivity: how much a measure depends on the order of tied scores.

trec_eval (and pytrec_eval, and RETECO's official scoring) order documents with *equal scores*
by document id, descending — an arbitrary order, and scores are compared at single precision
(1.0 and 1.0 + 1e-9 tie). A run with many ties can move a query's value, and a leaderboard's
order, for no reason but its document ids (the classic case: Anserini's BM25 runs, issue
castorini/anserini#1523). `tie_sensitivity` evaluates a measure under three orders:

* ``value`` — trec_eval's order (score descending at float32, then doc id descending);
* ``min`` — the *worst* order: inside every group of tied scores, the least relevant documents
  first (then trec_eval's order);
* ``max`` — the *best* order: inside every tie group, the most relevant documents first.

"Relevance" is the qrels grade; for the temporal measures (TP, TR, TC, nDCG|FC) evaluated with a
labels table it is the temporal verdict first and the grade second. The orders are the exact
worst and best orders for measures that only reward relevant documents at higher ranks (nDCG, AP,
P, R, RR, TP, TR); for coverage-type measures (TC, nDCG|FC) they are the grade-sorted orders, which
bound the measure in practice but are not an exhaustive search. ``min``/``max`` are reported as
``min(value, worst, best)`` / ``max(value, worst, best)``.

``tied_at_cutoff`` is True when a tie group straddles the measure's cutoff k (some of its
documents are ranked ≤ k, others > k): there, *which* documents are scored at all is decided by
document ids.

Everything is vectorised: one sort of the whole run per order, then the ordinary evaluation of a
re-scored run (score = −rank), so the numbers are those of the same code path as ``rm.iter_calc``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..api import iter_calc
from ..io.convert import as_qrels_frame, as_run_frame
from ..kernels.ranking import duplicate_pairs, rank_run
from ..kernels.stepwise import step_parents
from ..measures.names import parse_measures
from ..side import load_labels, load_topics

__all__ = ["tie_sensitivity", "tie_bounds", "has_ties", "tie_groups"]

_TEMPORAL = {"TemporalPrecision", "TemporalRelevance", "TemporalCoverage", "nDCG_FC"}


def has_ties(run: pd.DataFrame) -> bool:
    """True when two documents of one query have the same score at single precision."""
    if len(run) < 2:
        return False
    frame = pd.DataFrame({"q": run["query_id"].astype(str).to_numpy(dtype=object),
                          "s": np.asarray(run["score"], dtype=np.float64).astype(np.float32)})
    return bool(frame.duplicated().any())


def tie_groups(ranked: pd.DataFrame) -> np.ndarray:
    """Id of the tie group of every row of a run ranked with ``tie_break='trec_eval'``
    (consecutive rows of one query with equal float32 scores share an id)."""
    n = len(ranked)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    q = ranked["query_id"].astype(str).to_numpy(dtype=object)
    s = np.asarray(ranked["score"], dtype=np.float64).astype(np.float32)
    new = np.r_[True, (q[1:] != q[:-1]) | (s[1:] != s[:-1])]
    return np.cumsum(new) - 1


def _keys(ranked: pd.DataFrame, qrels: pd.DataFrame, measure: Any, labels: pd.DataFrame | None) -> np.ndarray:
    grade = ranked[["query_id", "doc_id"]].astype(str).merge(
        qrels[["query_id", "doc_id", "relevance"]].astype({"query_id": str, "doc_id": str}).drop_duplicates(
            ["query_id", "doc_id"], keep="last"),
        on=["query_id", "doc_id"], how="left", sort=False)["relevance"]
    key = pd.to_numeric(grade, errors="coerce").fillna(0).to_numpy(dtype=np.float64)
    if labels is not None and getattr(measure, "NAME", None) in _TEMPORAL and "temporal" in labels.columns:
        lab = labels[["query_id", "doc_id", "temporal"]].astype({"query_id": str, "doc_id": str})
        verdict = ranked[["query_id", "doc_id"]].astype(str).merge(
            lab.drop_duplicates(["query_id", "doc_id"], keep="last"), on=["query_id", "doc_id"], how="left",
            sort=False)["temporal"]
        v = pd.to_numeric(verdict, errors="coerce").fillna(0).to_numpy(dtype=np.float64)
        key = v * (np.abs(key).max() + 1.0) + key
    return key


def _reordered(ranked: pd.DataFrame, groups: np.ndarray, key: np.ndarray, best: bool) -> pd.DataFrame:
    """The run re-scored (score = −new rank) so that trec_eval's order is the worst/best order."""
    order = np.lexsort((ranked["rank"].to_numpy(), -key if best else key, groups))
    out = ranked.iloc[order][["query_id", "doc_id"]].reset_index(drop=True)
    q = out["query_id"].astype(str).to_numpy(dtype=object)
    starts = np.r_[True, q[1:] != q[:-1]]
    start_idx = np.flatnonzero(starts)
    first = np.repeat(start_idx, np.diff(np.r_[start_idx, len(q)]))
    out["score"] = -(np.arange(len(q)) - first + 1).astype(np.float64)
    return out


def _per_query(measure: Any, qrels: pd.DataFrame, run: pd.DataFrame, **kw: Any) -> pd.Series:
    metrics = list(iter_calc([measure], qrels, run, tie_break="trec_eval", **kw))
    return pd.Series([float(m.value) for m in metrics], index=pd.Index([str(m.query_id) for m in metrics]),
                     dtype=np.float64)


def tie_bounds(
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    measures: Sequence[Any],
    *,
    topics: pd.DataFrame | None = None,
    labels: pd.DataFrame | None = None,
    corpus: Sequence[str] | None = None,
) -> pd.DataFrame | None:
    """Per-query values of several measures under the worst and the best order of tied scores:
    ``measure`` (the measure object), ``query_id``, ``worst``, ``best``; None when the run has no
    tie. Measures sharing a relevance key are evaluated together (one call per order and key), so
    the run is re-ranked at most four times whatever the number of measures. When every tie group
    holds documents of one relevance only, the orders coincide and nothing is re-evaluated."""

    dup = duplicate_pairs(run, keep="last")
    if dup.any():  # pytrec_eval keeps the last score of a repeated (query, doc) pair
        run = run[~dup].reset_index(drop=True)
    ranked = rank_run(run[["query_id", "doc_id", "score"]], "trec_eval")
    groups = tie_groups(ranked)
    if not len(ranked) or len(np.unique(groups)) == len(ranked):
        return None
    by_key: dict[bool, list[Any]] = {}
    for m in measures:
        temporal = labels is not None and getattr(m, "NAME", None) in _TEMPORAL and "temporal" in labels.columns
        by_key.setdefault(temporal, []).append(m)
    parts = []
    for _temporal, ms in by_key.items():
        key = _keys(ranked, qrels, ms[0], labels)
        if not _mixed(groups, key):
            continue  # every tie group is all of one relevance: worst = best = trec_eval's order
        out = {}
        for name, best in (("worst", False), ("best", True)):
            metrics = iter_calc(ms, qrels, _reordered(ranked, groups, key, best=best), topics=topics, labels=labels,
                                corpus=corpus, tie_break="trec_eval")
            out[name] = {(m.measure, str(m.query_id)): float(m.value) for m in metrics}
        keys = list(out["worst"])
        parts.append(pd.DataFrame({"measure": [k[0] for k in keys], "query_id": [k[1] for k in keys],
                                   "worst": [out["worst"][k] for k in keys],
                                   "best": [out["best"].get(k, np.nan) for k in keys]}))
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True)


def tie_range(value: Any, worst: Any, best: Any) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise ``min`` / ``max`` of ``value``, ``worst`` and ``best``, NaN ignored (NaN where all three
    are NaN): the bounds a value takes over trec_eval's, the worst and the best order of ties."""
    stacked = np.vstack([np.asarray(value, dtype=np.float64), np.asarray(worst, dtype=np.float64),
                         np.asarray(best, dtype=np.float64)])
    all_nan = np.all(np.isnan(stacked), axis=0)
    lo = np.where(all_nan, np.nan, np.min(np.where(np.isnan(stacked), np.inf, stacked), axis=0))
    hi = np.where(all_nan, np.nan, np.max(np.where(np.isnan(stacked), -np.inf, stacked), axis=0))
    return lo, hi


def _mixed(groups: np.ndarray, key: np.ndarray) -> bool:
    """True when some tie group holds documents of different relevance (rows sorted by group)."""
    if not len(key):
        return False
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    return bool(np.any(np.minimum.reduceat(key, starts) != np.maximum.reduceat(key, starts)))


def tie_sensitivity(
    qrels: Any,
    run: Any,
    measure: Any,
    *,
    topics: pd.DataFrame | str | None = None,
    labels: pd.DataFrame | str | None = None,
    corpus: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per query: the measure under trec_eval's order and under the worst / best order of ties.

    Args:
        qrels: qrels (DataFrame, dict-of-dict or path).
        run: run (DataFrame, dict-of-dict or path).
        measure: one measure or string (``"nDCG@10"``, ``"TC@10"``, ...).
        topics, labels, corpus: side information, as `reteco_measures.calc_aggregate`.

    Returns:
        DataFrame ``query_id, value, min, max, tied_at_cutoff`` in the order of
        `reteco_measures.iter_calc` (see the module docs for the definitions).
    """

    measures = parse_measures(measure)
    if len(measures) != 1:
        raise ValueError(f"tie_sensitivity takes one measure, not {len(measures)}")
    m = measures[0]
    qrels_df = as_qrels_frame(qrels)
    run_df = as_run_frame(run)
    dup = duplicate_pairs(run_df, keep="last")
    if dup.any():  # pytrec_eval keeps the last score of a repeated (query, doc) pair
        run_df = run_df[~dup].reset_index(drop=True)
    topics_df = load_topics(topics) if topics is not None else None
    labels_df = load_labels(labels) if labels is not None else None
    kw = {"topics": topics_df, "labels": labels_df, "corpus": corpus}
    value = _per_query(m, qrels_df, run_df, **kw)
    ranked = rank_run(run_df[["query_id", "doc_id", "score"]], "trec_eval")
    groups = tie_groups(ranked)
    key = _keys(ranked, qrels_df, m, labels_df) if len(ranked) else np.zeros(0)
    if len(ranked) and len(np.unique(groups)) < len(ranked) and _mixed(groups, key):
        worst = _per_query(m, qrels_df, _reordered(ranked, groups, key, best=False), **kw).reindex(value.index)
        best = _per_query(m, qrels_df, _reordered(ranked, groups, key, best=True), **kw).reindex(value.index)
    else:
        worst = best = value
    lo, hi = tie_range(value.to_numpy(), worst.to_numpy(), best.to_numpy())
    # tie groups straddling the cutoff
    k = m.params.get("cutoff") if hasattr(m, "params") else None
    straddle = pd.Series(False, index=value.index)
    if k is not None and len(ranked):
        rank = ranked["rank"].to_numpy()
        g = pd.DataFrame({"g": groups, "r": rank}).groupby("g")["r"].agg(["min", "max"])
        bad_groups = g.index[(g["min"] <= k) & (g["max"] > k)].to_numpy()
        qids = ranked["query_id"].astype(str)[np.isin(groups, bad_groups)]
        hit = set(qids.tolist())
        if getattr(m, "NAME", None) == "StepNDCG" and m.params.get("average", "query") == "query":
            parents, _ = step_parents(sorted(hit), topics_df)
            hit |= set(parents.tolist())
        straddle = pd.Series([q in hit for q in value.index], index=value.index)
    return pd.DataFrame({"query_id": value.index.to_numpy(dtype=object), "value": value.to_numpy(),
                         "min": lo, "max": hi, "tied_at_cutoff": straddle.to_numpy(dtype=bool)})
