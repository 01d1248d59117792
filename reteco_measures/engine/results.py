"""The per-query results frame, and the one aggregation every number above it comes from.

* `metrics_frame` turns per-query values (``ir_measures.Metric`` values, weighted or not,
  or a frame of them) into the *long frame*: ``query_id, measure, value, weight`` plus grouping
  columns, in one canonical row order.
* `aggregate` turns a long frame into aggregates: per measure, per group of ``by`` columns,
  with the ``(macro)`` and ``(all)`` margins.

``rm.calc_aggregate`` / ``rm.evaluate`` (in memory, ``stream=True`` and on Dask) all aggregate
through `aggregate` over a frame of `metrics_frame`, so they give the same number to
the last bit.

**Summation.** In every (group, measure) cell, ``Σ weight·value`` and ``Σ weight`` are summed
*left to right in the frame's row order* (``np.bincount`` adds its input in order; no pairwise
summation), NaN values ("not defined for this query") skipped, and the value is their quotient.
That is exactly what ir_measures' ``MeanAgg`` and our
`WeightedMeanAgg` compute when fed the same values in the
same order. The canonical row order of `metrics_frame` is: measures in the order asked,
then queries in the order of ``order`` (the qrels' first appearance, as the native kernels and
our kernels report them), units outside it after, in the order met. A measure whose ir_measures
aggregator is a sum (``NumQ``, ``NumRet``, ``NumRel``, ``NumRelRet``) is summed, not averaged.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from ir_measures import Metric

from .grouping import group_frame

__all__ = ["FRAME_COLUMNS", "MACRO", "ALL", "metrics_frame", "aggregate", "aggregates", "empty_value", "is_sum"]

#: the columns of a long frame (grouping columns follow)
FRAME_COLUMNS = ["query_id", "measure", "value", "weight"]
#: group value of the mean of the group values
MACRO = "(macro)"
#: group value of the aggregate over every query
ALL = "(all)"


def empty_value(measure: Any) -> float:
    """A measure's aggregate over no defined value: its ``empty_value()``, 0 for a summed
    measure (ir_measures' ``SumAgg`` starts at 0), else NaN."""
    if hasattr(measure, "empty_value"):
        return measure.empty_value()
    return 0.0 if is_sum(measure) else float("nan")


def is_sum(measure: Any) -> bool:
    """Whether ir_measures aggregates ``measure`` by a sum (``SumAgg``: NumQ, NumRet, ...)."""
    try:
        return type(measure.aggregator()).__name__ == "SumAgg"
    except Exception:  # noqa: BLE001 - a string label or a measure without an aggregator
        return False


class _Index:
    """Position of measure objects (or labels) in a list: by identity first, then by equality."""

    def __init__(self, items: Sequence[Any]):
        self.by_id = {id(m): i for i, m in enumerate(items)}
        self.by_eq: dict[Any, int] = {}
        for i, m in enumerate(items):
            self.by_eq.setdefault(m, i)

    def get(self, item: Any) -> int:
        pos = self.by_id.get(id(item))
        if pos is None:
            pos = self.by_eq.get(item, -1)
        return pos


def _codes(column: pd.Series | np.ndarray, keys: list[Any]) -> np.ndarray:
    """Position in ``keys`` of every value of ``column`` (-1 when absent); one lookup per distinct value."""
    values = np.asarray(column, dtype=object)
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    index = _Index(keys)
    # distinct values by identity (the providers hand back the very measure objects)
    ids = np.fromiter((id(v) for v in values), dtype=np.int64, count=len(values))
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    pos = np.array([index.get(values[i]) for i in first], dtype=np.int64)
    return pos[inverse]


def metrics_frame(
    metrics: Iterable[Metric] | pd.DataFrame,
    *,
    measures: Sequence[Any] | None = None,
    label: Callable[[Any], str] | None = None,
    order: Sequence[str] | pd.Index | None = None,
    units: Sequence[str] | None = None,
    fill: float | None = None,
    topics: pd.DataFrame | None = None,
    by: Sequence[str] = (),
) -> pd.DataFrame:
    """The long per-query frame of an evaluation: ``query_id, measure, value, weight, *by``.

    Args:
        metrics: ``ir_measures.Metric`` values (a value's ``weight`` attribute, as our
            `WeightedValue` carries, is its weight; 1
            otherwise), or a frame with ``query_id, measure, value`` and optionally ``weight``.
        measures: the measures (objects), in output order; rows of other measures go last.
        label: how the ``measure`` column names a measure (e.g.
            `measure_label`); default: the measure objects.
        order: query ids in canonical order (the qrels' first appearance); rows are sorted by it
            within each measure (ids outside it after, in the order met). See the module doc.
        units: the evaluated query ids (in canonical order): rows of other ids are dropped and,
            with ``fill`` not None, a (unit, measure) pair without a value is added with ``fill``
            (weight 1), as a query missing from the run scores 0.
        topics, by: grouping columns (topics columns, ``depth``) added by
            `group_frame`.

    Returns:
        The frame; ``attrs["empty"]`` holds each measure's value on an empty set (NaN or its
        ``empty``) and ``attrs["sum"]`` the measures aggregated by a sum, both keyed as the
        ``measure`` column.
    """
    if isinstance(metrics, pd.DataFrame):
        qids = metrics["query_id"].to_numpy(dtype=object)
        if len(qids) and not isinstance(qids[0], str):
            qids = metrics["query_id"].astype(str).to_numpy(dtype=object)
        measure_col = metrics["measure"].to_numpy(dtype=object)
        values = metrics["value"].to_numpy(dtype=np.float64)
        weights = np.ones(len(values))
        if "weight" in metrics.columns:  # a frame of unweighted values joined to weighted ones: NaN = 1
            given = metrics["weight"].to_numpy(dtype=np.float64)
            weights = np.where(np.isnan(given), 1.0, given)
    else:
        metrics = metrics if isinstance(metrics, list) else list(metrics)
        qids = np.array([str(m.query_id) for m in metrics], dtype=object)
        measure_col = np.empty(len(metrics), dtype=object)
        measure_col[:] = [m.measure for m in metrics]
        values = np.array([float(m.value) for m in metrics], dtype=np.float64)
        weights = np.array([getattr(m.value, "weight", 1.0) for m in metrics], dtype=np.float64)
    listed = list(measures) if measures is not None else []
    mcode = _codes(measure_col, listed) if listed else np.zeros(len(values), dtype=np.int64)
    if listed:  # measures not asked for keep the order they were met, after the others
        mcode = np.where(mcode < 0, len(listed), mcode)
    keys_of: dict[int, str] = {}
    if label is not None:
        # a row of a listed measure is named by that measure (as asked: an alias keeps its spelling)
        listed_labels = [_label_of(m, label, keys_of) for m in listed]
        out_col = np.empty(len(measure_col), dtype=object)
        out_col[:] = [listed_labels[c] if c < len(listed) else _label_of(m, label, keys_of)
                      for c, m in zip(mcode.tolist(), measure_col)]
    else:
        out_col = measure_col
    frame = pd.DataFrame({"query_id": qids, "measure": out_col, "value": values, "weight": weights})
    canon = units if units is not None else order
    if canon is not None:
        canon_index = pd.Index(np.asarray([str(q) for q in canon], dtype=object))
        qpos = canon_index.get_indexer(frame["query_id"])
        if units is not None:
            keep = qpos >= 0
            frame, qpos, mcode = frame[keep], qpos[keep], mcode[keep]
            if fill is not None and listed:
                frame, qpos, mcode = _fill(frame, qpos, mcode, listed, canon_index, label, keys_of, fill)
        qpos = np.where(qpos < 0, len(canon_index), qpos)
        sort = np.lexsort((qpos, mcode))
    else:
        sort = np.argsort(mcode, kind="stable")
    frame = frame.iloc[sort].reset_index(drop=True)
    if by:
        groups = group_frame(frame["query_id"], topics, list(by))
        for col in by:
            frame[col] = groups[col].to_numpy()
    listed_index = _Index(listed)
    seen = listed + [m for m in _distinct(measure_col) if listed_index.get(m) < 0]
    key = (lambda m: _label_of(m, label, keys_of)) if label is not None else (lambda m: m)
    frame.attrs["empty"] = {key(m): empty_value(m) for m in seen}
    frame.attrs["sum"] = [key(m) for m in seen if is_sum(m)]
    return frame


def _distinct(values: np.ndarray) -> list[Any]:
    """The distinct objects of ``values`` (by identity, then equality), in the order met; hashing
    measure objects (by their ``repr``) once per distinct object, not once per row."""
    if len(values) == 0:
        return []
    ids = np.fromiter((id(v) for v in values), dtype=np.int64, count=len(values))
    _, first = np.unique(ids, return_index=True)
    out: list[Any] = []
    for i in np.sort(first).tolist():
        if values[i] not in out:
            out.append(values[i])
    return out


def _label_of(measure: Any, label: Callable[[Any], str], cache: dict[int, str]) -> str:
    out = cache.get(id(measure))
    if out is None:
        out = cache[id(measure)] = label(measure)
    return out


def _fill(frame, qpos, mcode, listed, canon_index, label, keys_of, fill):
    """Add a ``fill`` row for every (unit, listed measure) pair the frame lacks."""
    n_u = len(canon_index)
    have = np.zeros(n_u * len(listed), dtype=bool)
    ok = mcode < len(listed)
    have[mcode[ok] * n_u + qpos[ok]] = True
    miss = np.flatnonzero(~have)
    if len(miss) == 0:
        return frame, qpos, mcode
    m_add, q_add = np.divmod(miss, n_u)
    names = [listed[i] if label is None else _label_of(listed[i], label, keys_of) for i in m_add.tolist()]
    col = np.empty(len(names), dtype=object)
    col[:] = names
    add = pd.DataFrame({"query_id": canon_index.to_numpy(dtype=object)[q_add], "measure": col,
                        "value": float(fill), "weight": 1.0})
    return (pd.concat([frame, add], ignore_index=True), np.r_[qpos, q_add], np.r_[mcode, m_add])


def aggregate(
    long: pd.DataFrame,
    by: Sequence[str] = (),
    measures: Sequence[Any] | None = None,
    empty: Mapping[Any, float] | None = None,
    *,
    margins: bool = False,
    sums: Collection[Any] | None = None,
    counts: Sequence[str] = (),
) -> pd.DataFrame:
    """Aggregate a long per-query frame: the NaN-skipping weighted mean of every measure per group.

    Args:
        long: ``query_id, measure, value`` (+ ``weight``, default 1) + the ``by`` columns, e.g.
            from `metrics_frame`; ``measure`` holds labels or measure objects.
        by: grouping columns (may be empty: one row per measure).
        measures: the measures (as in the ``measure`` column), in output order (default: as they
            appear); rows of other measures are left out.
        empty: a measure's value when no query defines it (default ``long.attrs["empty"]``, else NaN).
        margins: add the rows ``(macro)`` (mean of the group values, undefined groups skipped)
            and ``(all)`` (the aggregate over every query), as `reteco_measures.evaluate`.
        sums: measures aggregated by their (NaN-skipping) sum instead of the mean (default
            ``long.attrs["sum"]``): ir_measures' ``SumAgg`` measures such as ``NumRet``.
        counts: further integer (or boolean) columns of ``long`` to total per cell over *every*
            row of the cell, defined value or not (e.g. the judge aggregation's ``n_invalid`` /
            ``n_missing``); the ``(macro)`` and ``(all)`` rows get the measure's total.

    Returns:
        ``[*by, measure, value, n, *counts]``; ``n`` counts the queries whose value is defined
        (``(macro)``: the groups whose value is defined). Groups are sorted; for each measure
        the group rows come first, then ``(macro)``, then ``(all)``. Sums are left to right in
        row order (see the module doc).
    """
    by = list(by)
    empty = dict(empty if empty is not None else long.attrs.get("empty", {}))
    sums = list(sums if sums is not None else long.attrs.get("sum", ()))
    measures = list(measures) if measures is not None else _distinct(long["measure"].to_numpy(dtype=object))
    n_m = len(measures)
    mcode_all = _codes(long["measure"], measures)
    keep = mcode_all >= 0
    mcode = mcode_all[keep]
    v = long["value"].to_numpy(dtype=np.float64)[keep]
    w = long["weight"].to_numpy(dtype=np.float64)[keep] if "weight" in long.columns else np.ones(len(mcode))
    ok = ~np.isnan(v)
    vw, w, n = np.where(ok, v * w, 0.0), np.where(ok, w, 0.0), ok.astype(np.float64)
    counts = list(counts)
    extra = {c: long[c].to_numpy(dtype=np.float64)[keep] for c in counts}
    totals = {c: np.bincount(mcode, weights=x, minlength=n_m) for c, x in extra.items()}
    index = _Index(measures)
    empties = np.array([_lookup(empty, m, float("nan")) for m in measures], dtype=np.float64)
    summed = np.zeros(n_m, dtype=bool)
    for m in sums:
        pos = index.get(m)
        if pos >= 0:
            summed[pos] = True

    def finish(s_vw: np.ndarray, s_w: np.ndarray, s_n: np.ndarray, m: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(summed[m], s_vw, s_vw / s_w)
        return np.where((s_n == 0) | ((s_w == 0) & ~summed[m]), empties[m], value)

    rows = _Rows(by, counts)
    if by:
        _group_rows(rows, long.loc[keep, by], mcode, vw, w, n, extra, totals, finish, empties, margins=margins)
    if not by or margins:
        a_vw = np.bincount(mcode, weights=vw, minlength=n_m)
        a_w = np.bincount(mcode, weights=w, minlength=n_m)
        a_n = np.bincount(mcode, weights=n, minlength=n_m)
        rows.add(np.arange(n_m), np.full(n_m, 2, dtype=np.int64), np.zeros(n_m, dtype=np.int64),
                 finish(a_vw, a_w, a_n, np.arange(n_m)), a_n, totals, [[ALL] * n_m for _ in by])
    return rows.frame(measures)


class _Rows:
    """The rows of `aggregate`, gathered block by block: each row's measure, block (0 groups,
    1 ``(macro)``, 2 ``(all)``), group, value, n, counts and grouping-column values."""

    def __init__(self, by: list[str], counts: list[str]):
        self.by, self.counts = by, counts
        self.m: list[np.ndarray] = []
        self.o: list[np.ndarray] = []
        self.g: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.n: list[np.ndarray] = []
        self.c: dict[str, list[np.ndarray]] = {c: [] for c in counts}
        self.columns: dict[str, list] = {c: [] for c in by}

    def add(self, m: np.ndarray, o: np.ndarray, g: np.ndarray, v: np.ndarray, n: np.ndarray,
            counts: Mapping[str, np.ndarray], labels: Sequence[list]) -> None:
        self.m.append(m)
        self.o.append(o)
        self.g.append(g)
        self.v.append(v)
        self.n.append(n)
        for c in self.counts:
            self.c[c].append(counts[c])
        for c, values in zip(self.by, labels):
            self.columns[c] += values

    def frame(self, measures: list) -> pd.DataFrame:
        """The rows sorted by measure, block and group: ``[*by, measure, value, n, *counts]``."""
        n_m = len(measures)
        m_all, o_all, g_all = np.concatenate(self.m), np.concatenate(self.o), np.concatenate(self.g)
        order = np.lexsort((g_all, o_all, m_all))
        out = pd.DataFrame({c: np.asarray(self.columns[c], dtype=object)[order] for c in self.by})
        names = np.empty(n_m, dtype=object)
        names[:] = measures
        out["measure"] = names[m_all[order]] if n_m else np.array([], dtype=object)
        out["value"] = np.concatenate(self.v)[order].astype(np.float64)
        out["n"] = np.concatenate(self.n)[order].astype(np.int64)
        for c in self.counts:
            out[c] = np.concatenate(self.c[c])[order].astype(np.int64)
        return out


def _group_rows(rows: _Rows, sub: pd.DataFrame, mcode: np.ndarray, vw: np.ndarray, w: np.ndarray, n: np.ndarray,
                extra: Mapping[str, np.ndarray], totals: Mapping[str, np.ndarray], finish: Any,
                empties: np.ndarray, *, margins: bool) -> None:
    """`aggregate`'s rows of every (group, measure) cell with a row, then (``margins``) the
    ``(macro)`` row of each measure: the mean of its defined group values."""
    by, n_m = rows.by, len(empties)
    if len(by) == 1:
        gcode, uniques = pd.factorize(sub[by[0]].astype(str), sort=True)
        keys = [(u,) for u in uniques]
    else:
        gcode, uniques = pd.MultiIndex.from_arrays([sub[c].astype(str) for c in by]).factorize(sort=True)
        keys = list(uniques)
    n_g = len(keys)
    cell = gcode * n_m + mcode
    size = n_g * n_m
    s_vw = np.bincount(cell, weights=vw, minlength=size)
    s_w = np.bincount(cell, weights=w, minlength=size)
    s_n = np.bincount(cell, weights=n, minlength=size)
    present = np.bincount(cell, minlength=size) > 0
    gi, mi = np.divmod(np.arange(size), n_m)
    value = finish(s_vw, s_w, s_n, mi)
    sel = np.flatnonzero(present)
    rows.add(mi[sel], np.zeros(len(sel), dtype=np.int64), gi[sel], value[sel], s_n[sel],
             {c: np.bincount(cell, weights=x, minlength=size)[sel] for c, x in extra.items()},
             [[keys[g][j] for g in gi[sel]] for j in range(len(by))])
    if margins:
        # group values in sorted group order, left to right (cells are group-major)
        defined = present & ~np.isnan(value)
        d_sum = np.bincount(mi[defined], weights=value[defined], minlength=n_m)
        d_n = np.bincount(mi[defined], minlength=n_m)
        with np.errstate(invalid="ignore", divide="ignore"):
            macro = np.where(d_n > 0, d_sum / np.maximum(d_n, 1), empties)
        rows.add(np.arange(n_m), np.ones(n_m, dtype=np.int64), np.zeros(n_m, dtype=np.int64), macro,
                 d_n.astype(np.float64), totals, [[MACRO] * n_m for _ in by])


def _lookup(mapping: Mapping[Any, float], key: Any, default: float) -> float:
    try:
        return mapping.get(key, default)
    except TypeError:  # an unhashable key
        return default


def aggregates(long: pd.DataFrame, measures: Sequence[Any]) -> dict[Any, float]:
    """``{measure: aggregate}`` over every query of a long frame (`aggregate` with no groups)."""
    table = aggregate(long, measures=measures)
    return dict(zip(measures, table["value"].tolist()))
