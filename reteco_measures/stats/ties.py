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
from ..kernels.bounds import JudgedQrels, bound_measure, tie_order_values
from ..kernels.ranking import duplicate_pairs, rank_run
from ..kernels.standard import per_query, supports
from ..kernels.stepwise import step_parents
from ..measures.names import parse_measures
from ..measures.params import param
from ..side import load_labels, load_topics

__all__ = ["tie_sensitivity", "tie_bounds", "has_ties", "tie_groups"]

_TEMPORAL = {"TemporalPrecision", "TemporalRelevance", "TemporalCoverage", "nDCG_FC"}


def _codes(*columns: Any) -> list[np.ndarray]:
    """Integer codes of string columns over one shared vocabulary (pandas' factorize: a hash of
    the Arrow strings, no Python string per row), one array per column."""
    sizes = [len(c) for c in columns]
    joined = pd.concat([pd.Series(np.asarray(c, dtype=object)) if not isinstance(c, pd.Series)
                        else c.reset_index(drop=True) for c in columns], ignore_index=True)
    codes, _ = pd.factorize(joined.astype("str"))
    return np.split(codes.astype(np.int64), np.cumsum(sizes)[:-1])


def _pair_keys(q: np.ndarray, d: np.ndarray) -> np.ndarray:
    """One int64 per (query code, doc code) pair."""
    return q * (int(d.max(initial=0)) + 1) + d


def has_ties(run: pd.DataFrame) -> bool:
    """True when two documents of one query have the same score at single precision."""
    if len(run) < 2:
        return False
    (q,) = _codes(run["query_id"])
    bits = np.asarray(run["score"], dtype=np.float64).astype(np.float32)
    bits = np.where(bits == 0, np.float32(0), bits).view(np.uint32).astype(np.int64)  # -0.0 ties 0.0
    key = np.sort((q << 32) | bits)
    return bool(np.any(key[1:] == key[:-1]))


def tie_groups(ranked: pd.DataFrame, query_codes: np.ndarray | None = None) -> np.ndarray:
    """Id of the tie group of every row of a run ranked with ``tie_break='trec_eval'``
    (consecutive rows of one query with equal float32 scores share an id); ``query_codes``: the
    rows' query codes when already known."""
    n = len(ranked)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    (q,) = _codes(ranked["query_id"]) if query_codes is None else (query_codes,)
    s = np.asarray(ranked["score"], dtype=np.float64).astype(np.float32)
    new = np.r_[True, (q[1:] != q[:-1]) | (s[1:] != s[:-1])]
    return np.cumsum(new) - 1


def _lookup(ranked: pd.DataFrame, table: pd.DataFrame, column: str) -> np.ndarray:
    """``table[column]`` of each row of ``ranked`` by (query_id, doc_id), the table's last row
    of a repeated pair; 0 where the pair is absent or the value is not a number."""
    n = len(ranked)
    q, d = _codes(ranked["query_id"], table["query_id"]), _codes(ranked["doc_id"], table["doc_id"])
    keys = _pair_keys(np.concatenate(q), np.concatenate(d))
    run_keys, table_keys = keys[:n], keys[n:]
    values = pd.to_numeric(pd.Series(np.asarray(table[column], dtype=object)), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    # the last row of a repeated pair wins: a stable sort, then the last of each run of equal keys
    order = np.argsort(table_keys, kind="stable")
    sorted_keys = table_keys[order]
    last = np.r_[sorted_keys[1:] != sorted_keys[:-1], True] if len(sorted_keys) else np.zeros(0, dtype=bool)
    sorted_keys, sorted_values = sorted_keys[last], values[order][last]
    at = np.searchsorted(sorted_keys, run_keys)
    at_ok = np.minimum(at, max(len(sorted_keys) - 1, 0))
    found = (at < len(sorted_keys)) & (sorted_keys[at_ok] == run_keys) if len(sorted_keys) else np.zeros(n, bool)
    out = np.where(found, sorted_values[at_ok] if len(sorted_keys) else 0.0, np.nan)
    return np.nan_to_num(out, nan=0.0)


def _keys(ranked: pd.DataFrame, qrels: pd.DataFrame, measure: Any, labels: pd.DataFrame | None) -> np.ndarray:
    """The relevance key of every row of ``ranked`` (grade; temporal verdict first with labels)."""
    key = _lookup(ranked, qrels, "relevance")
    if labels is not None and getattr(measure, "NAME", None) in _TEMPORAL and "temporal" in labels.columns:
        v = _lookup(ranked, labels, "temporal")
        key = v * (np.abs(key).max() + 1.0) + key
    return key


def _reordered(ranked: pd.DataFrame, groups: np.ndarray, key: np.ndarray, best: bool) -> pd.DataFrame:
    """The run re-scored (score = −new rank) so that trec_eval's order is the worst/best order.
    ``ranked`` is sorted by query and rank; the new order keeps each query's rows together."""
    order = np.lexsort((ranked["rank"].to_numpy(), -key if best else key, groups))
    out = ranked.iloc[order][["query_id", "doc_id"]].reset_index(drop=True)
    rank = ranked["rank"].to_numpy()  # the rows of a query keep their positions: rank k at row start + k - 1
    out["score"] = -rank.astype(np.float64)
    return out


def _per_query(measure: Any, qrels: pd.DataFrame, run: pd.DataFrame, **kw: Any) -> pd.Series:
    metrics = list(iter_calc([measure], qrels, run, tie_break="trec_eval", on_mismatch="warn", **kw))
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
    judged: JudgedQrels | None = None,
) -> pd.DataFrame | None:
    """Per-query values of several measures under the worst and the best order of tied scores:
    ``measure`` (the measure object), ``query_id``, ``worst``, ``best``; None when the run has no
    tie. Measures sharing a relevance key are evaluated together (one call per order and key), so
    the run is re-ranked at most four times whatever the number of measures. A query whose tie
    groups each hold documents of one relevance only has worst = best = trec_eval's order: for
    the standard measures (whose per-query value reads that query's rows only) it is not
    re-evaluated and has no row here (its bounds are its value); reteco-measures' own measures,
    whose units may span queries, re-evaluate the whole run when any query has such a group.

    When every measure is `reteco_measures.kernels.bounds.bound_measure` (nDCG without ``gains``,
    AP, P, R, RR; no ``judged_only``) and ``corpus`` is None, the two orders are not evaluated
    as runs: the ranks of the judged documents in each order are computed from the tie groups
    (`reteco_measures.kernels.bounds.tie_order_values`), at a cost that grows with the judged
    rows. ``judged``: the qrels already read by `JudgedQrels` (to share it between the runs of
    a comparison); built here when None."""

    if corpus is None and measures and all(bound_measure(m) for m in measures) and len(qrels):
        sparse = _sparse_bounds(qrels, run, measures, judged)
        if sparse is not None:
            return sparse if len(sparse) else None
    if corpus is None:
        coded = _coded_bounds(qrels, run, measures)
        if coded is not None:
            return coded if len(coded) else None
    dup = duplicate_pairs(run, keep="last")
    if dup.any():  # pytrec_eval keeps the last score of a repeated (query, doc) pair
        run = run[~dup].reset_index(drop=True)
    ranked = rank_run(run[["query_id", "doc_id", "score"]], "trec_eval")
    qcodes = _codes(ranked["query_id"])[0] if len(ranked) else np.zeros(0, dtype=np.int64)
    groups = tie_groups(ranked, qcodes)
    if not len(ranked) or int(groups[-1]) + 1 == len(ranked):
        return None
    by_key: dict[bool, list[Any]] = {}
    for m in measures:
        temporal = labels is not None and getattr(m, "NAME", None) in _TEMPORAL and "temporal" in labels.columns
        by_key.setdefault(temporal, []).append(m)
    parts = []
    for _temporal, ms in by_key.items():
        key = _keys(ranked, qrels, ms[0], labels)
        mixed_rows = _mixed_rows(groups, key)
        if not mixed_rows.any():
            continue  # every tie group is all of one relevance: worst = best = trec_eval's order
        sub_ranked, sub_groups, sub_key, sub_qrels = ranked, groups, key, qrels
        if not any(getattr(m, "_RETECO", False) for m in ms):
            # standard measures: a query's value depends on its own rows only, so only the queries
            # with a tie group of mixed relevance are re-evaluated (the others: worst = best = value)
            hit = np.zeros(int(qcodes.max()) + 1, dtype=bool)
            hit[qcodes[mixed_rows]] = True
            rows = hit[qcodes]
            sub_ranked = ranked[rows].reset_index(drop=True)
            sub_groups, sub_key = groups[rows], key[rows]
            wanted = pd.unique(sub_ranked["query_id"].astype(str).to_numpy(dtype=object))
            sub_qrels = qrels[qrels["query_id"].astype(str).isin(wanted).to_numpy()].reset_index(drop=True)
        fast = _native_bounds(ms, sub_qrels, sub_ranked, sub_groups, sub_key) if corpus is None else None
        if fast is not None:
            parts.append(fast)
            continue
        out = {}
        for name, best in (("worst", False), ("best", True)):
            metrics = list(iter_calc(ms, sub_qrels, _reordered(sub_ranked, sub_groups, sub_key, best=best),
                                     topics=topics, labels=labels, corpus=corpus, tie_break="trec_eval",
                                     on_mismatch="warn"))
            out[name] = pd.DataFrame({"measure": [m.measure for m in metrics],
                                      "query_id": [str(m.query_id) for m in metrics],
                                      name: np.array([float(m.value) for m in metrics], dtype=np.float64)})
        worst, best_frame = out["worst"], out["best"]
        same_rows = len(worst) == len(best_frame) and all(
            a is b for a, b in zip(worst["measure"], best_frame["measure"])) and (
            worst["query_id"].to_numpy() == best_frame["query_id"].to_numpy()).all()
        if same_rows:  # both orders evaluate the same queries: rows in the same order
            parts.append(worst.assign(best=best_frame["best"].to_numpy()))
        else:
            parts.append(worst.merge(best_frame, on=["measure", "query_id"], how="left", sort=False))
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True)


def _sparse_bounds(qrels: pd.DataFrame, run: pd.DataFrame, measures: Sequence[Any],
                   judged: JudgedQrels | None) -> pd.DataFrame | None:
    """`tie_bounds`' rows from `tie_order_values` (None: NaN scores, the general path runs)."""
    values = tie_order_values(measures, judged if judged is not None else JudgedQrels(qrels), run)
    if values is None:
        return None
    qv = np.asarray(values.query_ids.to_numpy(zero_copy_only=False), dtype=object)
    k = len(qv)
    return pd.DataFrame({
        "measure": np.repeat(np.array(list(measures) + [None], dtype=object)[:-1], k),
        "query_id": np.tile(qv, len(measures)),
        "worst": np.concatenate([values.worst[m] for m in measures]) if k else np.zeros(0),
        "best": np.concatenate([values.best[m] for m in measures]) if k else np.zeros(0),
    })


def _coded_bounds(qrels: pd.DataFrame, run: pd.DataFrame, measures: Sequence[Any]) -> pd.DataFrame | None:
    """`tie_bounds` for standard measures the native kernels compute and that read only the grades
    of the ranked documents (nDCG, AP, P, R, RR, ``RR@k``; not ``Judged@k`` nor ``judged_only``,
    which tell a judged 0 from an unjudged document), on integer codes: no string sort. Within
    a tie group the documents of one grade are interchangeable for these measures, so the worst
    (best) order only sorts each group by grade, ascending (descending); the groups themselves
    are (query, score at single precision), as trec_eval ties them. An empty frame: no query
    has a tie group of mixed grades. None: not applicable (the general path runs)."""

    if not measures or not all(supports(m) and m.NAME != "Judged" and param(m, "judged_only") is not True
                               for m in measures):
        return None
    n = len(run)
    if n < 2 or not len(qrels):
        return None
    q, qq = _codes(run["query_id"], qrels["query_id"])
    d, qd = _codes(run["doc_id"], qrels["doc_id"])
    width = int(max(d.max(initial=0), qd.max(initial=0))) + 1
    run_keys, qrels_keys = q * width + d, qq * width + qd
    keep = ~pd.Series(run_keys).duplicated(keep="last").to_numpy()  # a repeated pair keeps its last score
    idx = np.flatnonzero(keep)
    q, run_keys = q[idx], run_keys[idx]
    s32 = np.asarray(run["score"], dtype=np.float64)[idx].astype(np.float32)
    s32 = np.where(s32 == 0, np.float32(0), s32)  # -0.0 ties 0.0
    order = np.lexsort((-s32, q))
    q, s32, run_keys, idx = q[order], s32[order], run_keys[order], idx[order]
    groups = np.cumsum(np.r_[True, (q[1:] != q[:-1]) | (s32[1:] != s32[:-1])]) - 1
    if int(groups[-1]) + 1 == len(groups):
        return pd.DataFrame(columns=["measure", "query_id", "worst", "best"])
    # the grade of every row: the qrels' last row of a repeated pair, 0 when unjudged or not a number
    grades = pd.to_numeric(pd.Series(np.asarray(qrels["relevance"], dtype=object)), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    qorder = np.argsort(qrels_keys, kind="stable")
    sorted_keys = qrels_keys[qorder]
    last = np.r_[sorted_keys[1:] != sorted_keys[:-1], True]
    sorted_keys, sorted_grades = sorted_keys[last], grades[qorder][last]
    at = np.minimum(np.searchsorted(sorted_keys, run_keys), len(sorted_keys) - 1)
    key = np.nan_to_num(np.where(sorted_keys[at] == run_keys, sorted_grades[at], 0.0), nan=0.0)
    mixed_rows = _mixed_rows(groups, key)
    if not mixed_rows.any():
        return pd.DataFrame(columns=["measure", "query_id", "worst", "best"])
    hit = np.zeros(int(max(q.max(), qq.max())) + 1, dtype=bool)
    hit[q[mixed_rows]] = True
    rows = hit[q]
    q, groups, key, idx = q[rows], groups[rows], key[rows], idx[rows]
    sub_qrels = qrels[hit[qq]].reset_index(drop=True)
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    rank = np.arange(len(q)) - np.repeat(starts, np.diff(np.r_[starts, len(q)])) + 1
    ids = run[["query_id", "doc_id"]]
    values = {}
    for name, best in (("worst", False), ("best", True)):
        new = np.lexsort((-key if best else key, groups))
        reordered = ids.iloc[idx[new]].reset_index(drop=True)
        reordered["score"] = -rank.astype(np.float64)
        qids, values[name] = per_query(measures, sub_qrels, reordered)
    qv = np.asarray(qids.to_numpy(zero_copy_only=False), dtype=object)
    k = len(qv)
    return pd.DataFrame({
        "measure": np.repeat(np.array(list(measures) + [None], dtype=object)[:-1], k),
        "query_id": np.tile(qv, len(measures)),
        "worst": np.concatenate([values["worst"][m] for m in measures]) if k else np.zeros(0),
        "best": np.concatenate([values["best"][m] for m in measures]) if k else np.zeros(0),
    })


def _native_bounds(measures: Sequence[Any], qrels: pd.DataFrame, ranked: pd.DataFrame, groups: np.ndarray,
                   key: np.ndarray) -> pd.DataFrame | None:
    """`tie_bounds`' rows for standard measures that the native kernels compute (None otherwise):
    the worst and the best order evaluated by `reteco_measures.kernels.standard.per_query`, the
    function ``rm.iter_calc`` reaches for them on a run without NaN scores (the re-scored orders
    have none), without the engine's checks and per-value objects."""

    if not measures or not all(supports(m) for m in measures):
        return None
    values = {}
    for name, best in (("worst", False), ("best", True)):
        qids, values[name] = per_query(measures, qrels, _reordered(ranked, groups, key, best=best))
    q = np.asarray(qids.to_numpy(zero_copy_only=False), dtype=object)
    n = len(q)
    return pd.DataFrame({
        "measure": np.repeat(np.array(list(measures) + [None], dtype=object)[:-1], n),
        "query_id": np.tile(q, len(measures)),
        "worst": np.concatenate([values["worst"][m] for m in measures]) if n else np.zeros(0),
        "best": np.concatenate([values["best"][m] for m in measures]) if n else np.zeros(0),
    })


def tie_range(value: Any, worst: Any, best: Any) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise ``min`` / ``max`` of ``value``, ``worst`` and ``best``, NaN ignored (NaN where all three
    are NaN): the bounds a value takes over trec_eval's, the worst and the best order of ties."""
    stacked = np.vstack([np.asarray(value, dtype=np.float64), np.asarray(worst, dtype=np.float64),
                         np.asarray(best, dtype=np.float64)])
    all_nan = np.all(np.isnan(stacked), axis=0)
    lo = np.where(all_nan, np.nan, np.min(np.where(np.isnan(stacked), np.inf, stacked), axis=0))
    hi = np.where(all_nan, np.nan, np.max(np.where(np.isnan(stacked), -np.inf, stacked), axis=0))
    return lo, hi


def _mixed_rows(groups: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Rows (sorted by group) whose tie group holds documents of different relevance."""
    if not len(key):
        return np.zeros(0, dtype=bool)
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    mixed = np.minimum.reduceat(key, starts) != np.maximum.reduceat(key, starts)
    return np.repeat(mixed, np.diff(np.r_[starts, len(key)]))


def _mixed(groups: np.ndarray, key: np.ndarray) -> bool:
    """True when some tie group holds documents of different relevance (rows sorted by group)."""
    return bool(_mixed_rows(groups, key).any())


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
    if len(ranked) and int(groups[-1]) + 1 < len(ranked) and _mixed(groups, key):
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
