"""Worst and best orders of tied scores for trec_eval's rank-and-grade measures, from the judged
rows alone.

For nDCG (``nDCG@k``, ``nDCG``; no ``gains`` mapping), AP (``AP@k``, ``AP``), ``P@k``, ``R@k`` and
RR (``RR``, ``RR@k``) a query's value depends only on the ranks and grades of its *relevant*
documents (grade > 0 for nDCG, grade ≥ ``rel`` ≥ 1 for the others; trec_eval's definitions, see
`reteco_measures.kernels.standard`). Reordering tied scores only moves documents inside their tie
group — a maximal stretch of one query's rows with equal scores at single precision, as trec_eval
compares them. In the *worst* order each group is sorted by grade ascending, in the *best* order
descending (unjudged documents count as grade 0; among equal grades trec_eval's doc-id order, which
no measure here can tell apart). So a relevant document's rank in either order is

    (rows of its query with a strictly higher score) + (its offset in its group sorted by grade) + 1,

and in the worst order every non-relevant document of the group (grade ≤ 0 or unjudged) comes
before the relevant ones. `tie_order_values` computes these ranks for the judged rows only and
evaluates the measures on the sparse ``(query, rank, grade)`` rows with the same arithmetic, in
the same summation order, as the native kernels: the values are those of the kernels run on the
reordered run, bit for bit, at a cost that grows with the judged rows rather than with the run.
When the run has just been evaluated by the native kernels, their preparation of it (grouping,
score order, tie groups, the qrels lookups of its rows) can be handed over
(`reteco_measures.kernels.standard.HandedRun`) instead of being made again.

The ideal DCG and the number of relevant documents come from the qrels (a repeated (query, doc)
judgment keeps its last grade), as trec_eval computes them; a repeated (query, doc) pair of the
run keeps its last score, as pytrec_eval's dictionaries do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ir_measures
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from ir_measures.providers.base import NOT_PROVIDED

from ..errors import NativeFallback
from ..measures.params import param
from .standard import HandedRun, PreparedRun, ideal_dcg, prepare_run, rows_with_keys, string_key, supports

__all__ = ["BOUND_MEASURES", "bound_measure", "JudgedQrels", "TieOrderValues", "tie_order_values"]

#: measure names `tie_order_values` computes (parameters: `bound_measure`)
BOUND_MEASURES = ("nDCG", "AP", "P", "R", "RR")

_MULT = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing of the 64-bit keys into the filter


def bound_measure(measure: ir_measures.Measure) -> bool:
    """True when `tie_order_values` computes ``measure``: a native standard measure
    (`reteco_measures.kernels.standard.supports`) named in `BOUND_MEASURES`, without
    ``judged_only`` (which tells a judged 0 from an unjudged document) and, for nDCG, without a
    ``gains`` mapping (which may give a gain to a grade ≤ 0)."""
    if getattr(measure, "NAME", None) not in BOUND_MEASURES or not supports(measure):
        return False
    if param(measure, "judged_only", NOT_PROVIDED) is True:
        return False
    return not (measure.NAME == "nDCG" and isinstance(param(measure, "gains", NOT_PROVIDED), dict))


def _strings(values: Any) -> pa.Array:
    """A contiguous ``large_string`` arrow array of a column's values."""
    series = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object))
    if not (pd.api.types.is_string_dtype(series.dtype) and not pd.api.types.is_object_dtype(series.dtype)):
        series = series.astype(str)
    arr = pa.array(series, from_pandas=True)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    return pc.fill_null(arr, "") if arr.null_count else arr


class JudgedQrels:
    """Qrels read once for any number of runs: the queries in first-appearance order, and one row
    per (query, doc) pair (the last judgment of a repeated pair) with its grade."""

    def __init__(self, qrels: pd.DataFrame):
        qcode, uniques = pd.factorize(pd.Series(qrels["query_id"]).astype(str).to_numpy(dtype=object), sort=False)
        self.query_ids = pa.array(np.asarray(uniques, dtype=object), type=pa.large_string())
        doc = _strings(qrels["doc_id"])
        rel = np.asarray(qrels["relevance"], dtype=np.int64)
        # a repeated (query, doc) judgment keeps its last row: pairs with equal 64-bit keys are
        # the candidates, confirmed by their strings
        bq = max(1, int(len(uniques)).bit_length())
        keys = (qcode.astype(np.uint64) << np.uint64(64 - bq)) | (string_key(doc) >> np.uint64(bq))
        sk = np.sort(keys)
        last = np.ones(len(keys), dtype=bool)
        if len(sk) > 1 and bool(np.any(sk[1:] == sk[:-1])):
            suspects = rows_with_keys(keys, sk[1:][sk[1:] == sk[:-1]])
            pairs = pd.DataFrame({"q": qcode[suspects],
                                  "d": doc.take(pa.array(suspects, type=pa.int64())).to_numpy(zero_copy_only=False)})
            last[suspects[pairs.duplicated(keep="last").to_numpy()]] = False
        rows = np.flatnonzero(last)
        self.qcode = qcode[rows].astype(np.int64)
        self.doc = doc.take(pa.array(rows, type=pa.int64()))
        self.hash = string_key(self.doc)
        self.rel = rel[rows]


class TieOrderValues:
    """`tie_order_values`' result: ``query_ids`` (the qrels' queries that have a tie group of
    documents with different grades, in the qrels' order) and, per measure, their values under
    the ``worst`` and the ``best`` order."""

    def __init__(self, query_ids: pa.Array, worst: dict, best: dict):
        self.query_ids = query_ids
        self.worst = worst
        self.best = best


def _match(prepared: PreparedRun, judged: JudgedQrels, run_code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(run rows, judged rows)``: every input row of the prepared run whose (query, doc) pair the
    qrels judge, with the judged row; keys compared first, then the doc id strings."""
    rc = run_code[judged.qcode]
    on = np.flatnonzero(rc >= 0)
    empty = np.zeros(0, dtype=np.int64)
    if not len(on) or not prepared.n:
        return empty, empty
    bq = max(1, int(prepared.nq).bit_length())
    keys = (rc[on].astype(np.uint64) << np.uint64(64 - bq)) | (judged.hash[on] >> np.uint64(bq))
    order = np.argsort(keys, kind="stable")
    keys, on = keys[order], on[order]
    # a one-bit-per-slot filter of the judged keys rejects most run rows with one gather
    bits = max(16, int(8 * len(keys)).bit_length())
    shift = np.uint64(64 - bits)
    table = np.zeros(1 << bits, dtype=bool)
    all_keys = prepared.keys  # made at each access: once here
    with np.errstate(over="ignore"):
        table[(keys * _MULT) >> shift] = True
        maybe = np.flatnonzero(table[(all_keys * _MULT) >> shift])
    run_keys = all_keys[maybe]
    del all_keys
    lo = np.searchsorted(keys, run_keys, side="left")
    if len(keys) > 1 and bool(np.any(keys[1:] == keys[:-1])):  # two docs of a query share a key
        cnt = np.searchsorted(keys, run_keys, side="right") - lo
        cand = np.flatnonzero(cnt > 0)
        rows = maybe[np.repeat(cand, cnt[cand])]
        offs = np.cumsum(cnt[cand]) - cnt[cand]
        jrows = on[np.repeat(lo[cand] - offs, cnt[cand]) + np.arange(len(rows))]
    else:
        hit = np.flatnonzero(keys[np.minimum(lo, len(keys) - 1)] == run_keys)
        rows = maybe[hit]
        jrows = on[lo[hit]]
    if not len(rows):
        return empty, empty
    same = np.asarray(pc.equal(prepared.doc.take(pa.array(rows, type=pa.int64())),
                               judged.doc.take(pa.array(jrows, type=pa.int64()))), dtype=bool)
    return rows[same].astype(np.int64), jrows[same].astype(np.int64)


def _ranked_rows(codes: np.ndarray, ranks: np.ndarray, grades: np.ndarray, keep: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows ``keep`` selects (the arrays are sorted by (query, rank): so are these)."""
    return codes[keep], ranks[keep], grades[keep]


def _measure_values(measure: ir_measures.Measure, nq: int, codes: np.ndarray, ranks: np.ndarray,
                    grades: np.ndarray, ideal: Any, num_rel: Any) -> np.ndarray:
    """One measure per run query from the relevant rows ``(codes, ranks, grades)`` (sorted by
    query and rank), with the
    arithmetic of `reteco_measures.kernels.standard` (same operations, same summation order)."""
    name = measure.NAME
    c = param(measure, "cutoff")
    k = None if c is None else int(c)
    inside = np.ones(len(ranks), dtype=bool) if k is None else ranks <= k
    if name == "nDCG":
        cs, rs, gs = _ranked_rows(codes, ranks, grades, inside & (grades > 0))
        dcg = np.bincount(cs, weights=gs / np.log2(rs + 1.0), minlength=nq)
        idcg = ideal(k)
        return np.divide(dcg, idcg, out=np.zeros(nq), where=idcg > 0)
    level = int(param(measure, "rel", NOT_PROVIDED))
    cs, rs, gs = _ranked_rows(codes, ranks, grades, inside & (grades >= max(level, 0)))
    if name == "RR":
        first = np.zeros(nq, dtype=np.int64)
        if len(cs):
            head = np.r_[True, cs[1:] != cs[:-1]]
            first[cs[head]] = rs[head]
        return np.divide(1.0, first, out=np.zeros(nq), where=first > 0)
    if name == "P":
        return np.bincount(cs, minlength=nq) / float(k)
    nrel = num_rel(level)
    if name == "R":
        found = np.bincount(cs, minlength=nq).astype(np.float64)
        return np.divide(found, nrel, out=np.zeros(nq), where=nrel > 0)
    if len(cs):  # AP
        head = np.r_[True, cs[1:] != cs[:-1]]
        start = np.maximum.accumulate(np.where(head, np.arange(len(cs)), 0))
        so_far = np.arange(len(cs)) - start + 1
        total = np.bincount(cs, weights=so_far / rs.astype(np.float64), minlength=nq)
    else:
        total = np.zeros(nq)
    return np.divide(total, nrel, out=np.zeros(nq), where=nrel > 0)


def _graded_rows(prepared: PreparedRun, judged: JudgedQrels, run_code: np.ndarray, handed: HandedRun | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(input rows, score-order positions, grades)`` of the run's rows that the qrels judge with a
    grade other than 0: from the evaluation's qrels lookups when ``handed`` has them, else matched
    here."""
    if handed is not None and handed.judged_rows is not None:
        pos, grade = handed.judged_rows()
        nonzero = grade != 0
        pos, grade = pos[nonzero], grade[nonzero]
        return prepared.orig(pos), pos, grade
    rows, jrows = _match(prepared, judged, run_code)
    grade = judged.rel[jrows]
    nonzero = grade != 0
    rows, grade = rows[nonzero], grade[nonzero]
    if prepared.perm is None:
        return rows, rows, grade
    inverse = np.empty(prepared.n, dtype=np.int64)
    inverse[prepared.perm] = np.arange(prepared.n, dtype=np.int64)
    return rows, inverse[rows], grade


def tie_order_values(measures: Sequence[ir_measures.Measure], judged: JudgedQrels,
                     run: pd.DataFrame, *, handed: HandedRun | None = None) -> TieOrderValues | None:
    """Per-query values of ``measures`` (each `bound_measure`) under the worst and the best order of
    the run's tied scores, for the qrels' queries that have a tie group of documents with
    different grades (see the module docs); the others' values do not depend on the order of ties.

    Args:
        measures: the measures (`bound_measure` true for each).
        judged: the qrels, as `JudgedQrels`.
        run: ``query_id, doc_id, score`` columns.
        handed: what the native kernels prepared for this very run and these qrels
            (`reteco_measures.kernels.standard.HandedRun`, handed over through
            ``PREPARED_RUNS`` by `reteco_measures.kernels.standard.per_query`): its
            `PreparedRun` (repeated pairs dropped, the last score kept) and its qrels lookups
            are used instead of being made again, and ``run`` is not read. The values are the
            same, bit for bit. None: everything is made here.

    Returns:
        `TieOrderValues`, or None when the input cannot be computed here (NaN scores: the caller
        takes the general path).
    """
    measures = list(measures)
    if not all(bound_measure(m) for m in measures):
        raise ValueError(f"not every measure has tie bounds from the judged rows: {measures}")
    if handed is not None:
        prepared = handed.prepared
    else:
        try:
            prepared, _ = prepare_run(run)
        except NativeFallback:
            return None
    none = TieOrderValues(pa.array([], pa.large_string()), {m: np.zeros(0) for m in measures},
                          {m: np.zeros(0) for m in measures})
    nq = prepared.nq
    if not prepared.has_ties or not len(judged.rel) or not nq:
        return none
    run_code = np.asarray(pc.fill_null(pc.index_in(judged.query_ids, value_set=prepared.query_ids), -1),
                          dtype=np.int64)
    rows, pos, grade = _graded_rows(prepared, judged, run_code, handed)
    if not len(rows):
        return none
    # each judged row's query, its tie group's first row and size
    code = prepared.qcode[rows]
    first = prepared.group_start(pos)
    size = prepared.group_end(pos) - first
    # a tie group is mixed unless all its rows have one grade (unjudged: 0)
    by_group = np.argsort(first, kind="stable")
    g_sorted = first[by_group]
    heads = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    counts = np.diff(np.r_[heads, len(g_sorted)])
    gr = grade[by_group]
    mixed = (np.minimum.reduceat(gr, heads) != np.maximum.reduceat(gr, heads)) | (counts < size[by_group][heads])
    hit = np.zeros(nq, dtype=bool)
    hit[code[by_group][heads][mixed]] = True
    present = run_code >= 0
    reported = np.flatnonzero(present & hit[np.maximum(run_code, 0)])
    if not len(reported):
        return none
    # the relevant rows (grade > 0) of the hit queries, ranked in both orders
    rel = (grade > 0) & hit[code]
    code, grade, first, size = code[rel], grade[rel], first[rel], size[rel]
    above = first - prepared.seg_start[code]  # rows of the query with a strictly higher score
    # each relevant row's offset among its group's relevant rows sorted by grade ascending; read
    # backwards it is an order by grade descending (equal grades are interchangeable here)
    by = np.argsort(first * (int(grade.max(initial=0)) + 1) + grade, kind="stable")  # by (group, grade)
    g = first[by]
    head = np.r_[True, g[1:] != g[:-1]] if len(g) else np.zeros(0, dtype=bool)
    heads = np.flatnonzero(head)
    npos = np.empty(len(g), dtype=np.int64)
    npos[by] = np.repeat(np.diff(np.r_[heads, len(g)]), np.diff(np.r_[heads, len(g)]))
    within = np.empty(len(g), dtype=np.int64)
    within[by] = np.arange(len(g)) - np.repeat(heads, np.diff(np.r_[heads, len(g)]))
    worst_rank = above + (size - npos) + within + 1
    best_rank = above + (npos - 1 - within) + 1
    # from the qrels: ideal DCG and number of relevant documents per run query (kernels' formulas)
    jcode = run_code[judged.qcode]
    kept = jcode >= 0
    kcode, krel = jcode[kept], judged.rel[kept]
    cache: dict[Any, np.ndarray] = {}

    def ideal(k: int | None) -> np.ndarray:
        if ("ideal", k) not in cache:
            cache["ideal", k] = ideal_dcg(kcode, krel, k, nq)
        return cache["ideal", k]

    def num_rel(level: int) -> np.ndarray:
        if ("rel", level) not in cache:
            ok = krel >= max(level, 0)
            cache["rel", level] = np.bincount(kcode[ok], minlength=nq).astype(np.float64)
        return cache["rel", level]

    at = run_code[reported]
    out: dict[str, dict] = {"worst": {}, "best": {}}
    for name, ranks in (("worst", worst_rank), ("best", best_rank)):
        order = np.argsort(code * (int(ranks.max(initial=0)) + 1) + ranks)  # by (query, rank), as the kernels sum
        c, r, g = code[order], ranks[order], grade[order]
        for m in measures:
            out[name][m] = _measure_values(m, nq, c, r, g, ideal, num_rel)[at]
    return TieOrderValues(judged.query_ids.take(pa.array(reported, type=pa.int64())), out["worst"], out["best"])
