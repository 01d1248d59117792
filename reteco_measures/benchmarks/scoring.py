"""The scoring engine: one path from a submission to its :class:`~reteco_measures.benchmarks.Score`.

:func:`score_submission` (what :meth:`Benchmark.score <reteco_measures.benchmarks.Benchmark.score>`
runs) does the work, in this order:

1. ``load``: the reference data (qrels, topics, corpus, labels), once;
2. ``validate``: the benchmark's run contract → a :class:`~reteco_measures.contracts.base.ValidationReport`
   (what was removed, what is invalid);
3. ``per_query``: every measure's per-query value, computed **once** into a long frame
   ``query_id, measure, value, weight`` (:func:`long_per_query`; ``weight`` is the query's share
   of an aggregate that is not a plain mean, e.g. Spoken-Query's cell weights);
4. everything else — the summary, every group table, the reward, the JSON keys, the leaderboard's
   tests and confidence intervals — is derived from that frame (:func:`aggregate`); nothing is
   evaluated twice and nothing is printed (presentation lives in :mod:`reteco_measures.report.score`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..api import group_frame, iter_calc, measure_label
from ..contracts.base import ValidationReport
from ..errors import DataFormatWarning, EmptyInputWarning, QueryIdMismatchWarning
from .score import Score

if TYPE_CHECKING:  # annotations only: the declarations call this engine, it never needs them at run time
    from .declaration import Benchmark, Inputs

__all__ = ["score_submission", "long_per_query", "aggregate", "removed_counts"]

#: warnings of inputs the benchmark's contract has already reported (as errors of its report)
_CHECKED_BEFORE: tuple[type[Warning], ...] = (EmptyInputWarning, QueryIdMismatchWarning)


# ------------------------------------------------------------------------------------------------
# the engine


def score_submission(bench: Benchmark, run: Any, data: Any = None, split: str | None = None, *,
                     inputs: Inputs | None = None, options: Mapping[str, Any] | None = None) -> Score:
    """Score one submission to ``bench`` (see :meth:`~reteco_measures.benchmarks.Benchmark.score`)."""
    opts = bench.resolve_options(options)
    split = split if split is not None else bench.default_split
    if inputs is None:
        inputs = bench.load(data, split, opts)
    report = bench.validate(run, inputs, opts)
    measures = list(bench.measures(opts))
    long, extra = bench.per_query(measures, inputs, report, opts)
    empties = dict(long.attrs.get("empty", {}))
    eval_notes = list(long.attrs.get("notes", []))
    labels = list(dict.fromkeys(long["measure"].tolist())) if len(long) else [bench.display(m) for m in measures]
    if bench.invalid_scores_zero and not report.valid:
        long = long.assign(value=0.0)
    stat = bench.statistical_unit(opts)
    columns = [c for g in bench.groupings for c in g.by] + list(stat["strata"]) \
        + ([stat["cluster"]] if stat["cluster"] else [])
    long = with_groups(long, inputs.topics, columns)
    official = bench.display(measures[0])
    summary = summary_table(long, labels, official, empties, keys=bench.keys, official_key=bench.official_key)
    value = official_value(summary, official)
    if bench.summary_names:
        summary["measure"] = summary["measure"].map(bench.summary_names)
    valid = bool(report.valid)
    reward = float(bench.reward(value, valid, opts)) if bench.reward is not None else None
    if reward is not None:
        row = {c: None for c in summary.columns}
        row.update({"measure": "reward", "value": reward, "n": int(summary["n"].iloc[0]) if len(summary) else 0,
                    "role": "reward"})
        summary = pd.concat([summary, pd.DataFrame([row])], ignore_index=True)
    by_group = {g.name: group_table(long, g.by, [official] if g.official_only else labels, empties, layout=g.layout)
                for g in bench.groupings}
    notes = list(bench.notes(inputs, report, long, opts)) if bench.notes is not None else []
    notes += [n for n in eval_notes if n not in notes]
    long.attrs = {"empty": empties}
    score = Score(
        benchmark=bench.name,
        split=split,
        official_measure=official,
        official=value,
        valid=valid,
        summary=summary,
        by_group=by_group,
        per_query=wide_table(long, labels, extra, inputs.topics, keys=bench.keys,
                             columns=bench.per_query_columns, sort=bench.per_query_sort),
        per_query_long=long,
        report=report,
        removed=removed_counts(report),
        reward=reward,
        notes=notes,
        data_problems=list(inputs.problems),
        meta=dict(inputs.meta),
        options=opts,
        unit=stat["unit"],
        aggregation=bench.aggregation,
        summary_columns=bench.summary_columns,
        keys=bench.keys,
        groupings=bench.groupings,
        strata=tuple(stat["strata"]),
        cluster=stat["cluster"],
    )
    if bench.describe is not None:
        score.meta.update(bench.describe(score))
    return score


# ------------------------------------------------------------------------------------------------
# derivations from the per-query frame


def with_groups(long: pd.DataFrame, topics: pd.DataFrame | None, columns: Sequence[str]) -> pd.DataFrame:
    """``long`` with the grouping / strata ``columns`` it lacks, from ``topics`` (or ``depth``)."""
    cols = [c for c in dict.fromkeys(columns) if c not in long.columns]
    if not cols or not len(long):
        for c in cols:
            long[c] = pd.Series(dtype=object)
        return long
    groups = group_frame(long["query_id"], topics, cols)
    return pd.concat([long.reset_index(drop=True), groups[cols].reset_index(drop=True)], axis=1)


def summary_table(long: pd.DataFrame, labels: list[str], official: str, empties: Mapping[str, float], *,
                  keys: Sequence[str] = (), official_key: Sequence[tuple[str, str]] = ()) -> pd.DataFrame:
    """``[*keys,] measure, value, n, role``: every measure's aggregate; ``role`` is ``official`` for
    the official measure under ``official_key`` and ``diagnostic`` otherwise."""
    keys = list(keys)
    tidy = aggregate(long, keys, labels, empties)
    official_keys = dict(official_key)

    def role(row) -> str:
        if row["measure"] != official:
            return "diagnostic"
        return "official" if all(row.get(k) == v for k, v in official_keys.items()) else "diagnostic"

    tidy["role"] = [role(r) for r in tidy.to_dict("records")] if len(tidy) else []
    if keys and len(tidy):
        # rows in the order the per-query frame lists its key combinations, then measures
        cols = [*keys, "measure"]
        combos = {tuple(k): i for i, k in enumerate(long[cols].drop_duplicates().itertuples(index=False))}
        pos = [combos.get(tuple(r), len(combos)) for r in tidy[cols].itertuples(index=False)]
        tidy = tidy.assign(_k=pos).sort_values("_k", kind="stable").drop(columns="_k").reset_index(drop=True)
    return tidy[[*keys, "measure", "value", "n", "role"]]


def official_value(summary: pd.DataFrame, official: str) -> float:
    """The official row's value (the first row of the official measure when no row is official)."""
    rows = summary[summary["role"] == "official"]
    if not len(rows):
        rows = summary[summary["measure"] == official]
    return float(rows["value"].iloc[0]) if len(rows) else float("nan")


def group_table(long: pd.DataFrame, by: Sequence[str], measures: list[str], empties: Mapping[str, float], *,
                layout: str = "wide") -> pd.DataFrame:
    """One breakdown table: :func:`aggregate` by ``by`` with the ``(macro)`` / ``(all)`` rows;
    ``layout='wide'``: one row per group, ``n`` and a column per measure."""
    tidy = aggregate(long, list(by), measures, empties, margins=True)
    if layout == "tidy":
        return tidy
    col = by[0]
    order = list(dict.fromkeys(tidy[col].tolist()))
    wide = tidy.pivot_table(index=col, columns="measure", values="value", aggfunc="first", dropna=False)
    wide = wide.reindex(index=order, columns=measures)
    n = tidy[tidy["measure"] == measures[0]].set_index(col)["n"].reindex(order)
    wide.insert(0, "n", n.to_numpy(dtype=np.int64))
    wide.columns.name = None
    return wide.reset_index()


def wide_table(long: pd.DataFrame, labels: list[str], extra: pd.DataFrame | None, topics: pd.DataFrame | None, *,
               keys: Sequence[str] = (), columns: Sequence[str] = (), sort: Sequence[str] = ()) -> pd.DataFrame:
    """The per-query table: one row per ``[*keys, query_id]``, the topics ``columns`` and ``extra``
    columns, then a column per measure; sorted by ``sort``."""
    index = [*keys, "query_id"]
    if not len(long):
        return pd.DataFrame(columns=[*index, *columns, *labels])
    order = long[index].drop_duplicates()
    wide = long.pivot_table(index=index, columns="measure", values="value", aggfunc="first", dropna=False)
    wide = wide.reindex(columns=labels)
    wide.columns.name = None
    wide = order.join(wide, on=index).reset_index(drop=True)
    front = []
    if columns:
        meta = group_frame(wide["query_id"], topics, [c for c in columns
                                                     if c == "depth" or (topics is not None and c in topics)])
        for c in columns:
            if c in meta.columns:
                wide[c] = meta[c].to_numpy()
                front.append(c)
    if extra is not None:
        for c in extra.columns:
            wide[c] = wide["query_id"].map(extra[c]).to_numpy()
            front.append(c)
    if "turn" in front:
        wide["turn"] = pd.to_numeric(wide["turn"], errors="coerce").astype("Int64")
    wide = wide[[*index, *front, *labels]]
    if sort:
        wide = wide.sort_values(list(sort), kind="stable").reset_index(drop=True)
    return wide


def removed_counts(report: ValidationReport) -> dict[str, int]:
    """What the contract removed or rejected, by problem kind, plus ``rows_kept``.

    Kinds: ``duplicate`` (repeated documents removed after their first occurrence),
    ``unknown_doc`` (documents in no corpus), ``other_domain_doc`` (documents of another domain's
    corpus), ``unknown_query`` (rows of topics that are not expected), ``missing_query``
    (expected topics absent: they score 0), ``format`` (unreadable lines) and the contract's own
    kinds."""
    counts = dict(report.problem_counts())
    other = int(report.extra.get("other_domain_doc", 0))
    if other and "other_domain_doc" not in counts:  # a report that counted them as unknown_doc
        counts["unknown_doc"] = counts.get("unknown_doc", 0) - other
        if not counts["unknown_doc"]:
            del counts["unknown_doc"]
        counts["other_domain_doc"] = other
    counts["rows_kept"] = int(len(report.run))
    return counts


# ------------------------------------------------------------------------------------------------
# per-query values and their aggregation


def long_per_query(
    measures: Sequence,
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    *,
    display: Callable[[Any], str] = measure_label,
    units: Sequence[str] | None = None,
    fill: float | None = 0.0,
    **kwargs: Any,
) -> pd.DataFrame:
    """Every measure's per-query value in one :func:`reteco_measures.iter_calc` pass, as a long
    frame ``query_id, measure, value, weight`` (``measure`` = printed name).

    ``units``: the evaluated query ids; a (query, measure) pair the evaluation did not yield is
    added with ``fill`` (0: a missing query scores 0), and rows of other ids are dropped.
    ``kwargs`` go to ``iter_calc`` (``topics``, ``labels``, ``tie_break``, ``corpus``). The
    frame's ``attrs["empty"]`` holds each measure's value on an empty set (NaN or its ``empty``),
    ``attrs["notes"]`` the evaluation's warnings (as text, once each).
    """
    labels = [display(m) for m in measures]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metrics = list(iter_calc(list(measures), qrels, run, **kwargs))
    notes: list[str] = []
    for w in caught:
        # the benchmark's contract has already reported an empty or mismatched run (as an error
        # of its report); the evaluation's remarks become the Score's notes (printed once)
        if issubclass(w.category, _CHECKED_BEFORE):
            continue
        if issubclass(w.category, (DataFormatWarning, UserWarning)):
            text = str(w.message)
            if text not in notes:
                notes.append(text)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    by_id = {id(m): lab for m, lab in zip(measures, labels, strict=True)}
    by_text: dict[str, str] = {str(m): lab for m, lab in zip(measures, labels, strict=True)}

    def label_of(measure: Any) -> str:  # providers usually hand back the very measure objects
        lab = by_id.get(id(measure))
        if lab is None:
            text = str(measure)
            lab = by_text.get(text)
            if lab is None:
                lab = by_text[text] = display(measure)
            by_id[id(measure)] = lab
        return lab

    frame = pd.DataFrame({
        "query_id": pd.array([str(m.query_id) for m in metrics], dtype=object),
        "measure": [label_of(m.measure) for m in metrics],
        "value": np.array([float(m.value) for m in metrics], dtype=np.float64),
        "weight": np.array([getattr(m.value, "weight", 1.0) for m in metrics], dtype=np.float64),
    })
    if units is not None:
        units = [str(u) for u in units]
        frame = frame[pd.Index(units).get_indexer(frame["query_id"]) >= 0] if len(units) else frame.iloc[0:0]
        full = pd.MultiIndex.from_product([units, labels], names=["query_id", "measure"])
        have = pd.MultiIndex.from_frame(frame[["query_id", "measure"]])
        missing = full.difference(have, sort=False)
        if len(missing) and fill is not None:
            add = missing.to_frame(index=False)
            add["value"] = float(fill)
            add["weight"] = 1.0
            frame = pd.concat([frame, add], ignore_index=True)
        pos = {q: i for i, q in enumerate(units)}
        mpos = {m: i for i, m in enumerate(labels)}
        frame = frame.assign(_q=frame["query_id"].map(pos), _m=frame["measure"].map(mpos))
        frame = frame.sort_values(["_m", "_q"], kind="stable").drop(columns=["_q", "_m"])
    frame = frame.reset_index(drop=True)
    frame.attrs["notes"] = notes
    frame.attrs["empty"] = {lab: (m.empty_value() if hasattr(m, "empty_value") else float("nan"))
                            for m, lab in zip(measures, labels, strict=True)}
    return frame


def aggregate(
    long: pd.DataFrame,
    by: Sequence[str],
    measures: Sequence[str] | None = None,
    empty: Mapping[str, float] | None = None,
    *,
    margins: bool = False,
) -> pd.DataFrame:
    """Aggregate a long per-query frame: the NaN-skipping weighted mean of every measure per group.

    Args:
        long: ``query_id, measure, value, weight`` + the ``by`` columns.
        by: grouping columns (may be empty: one row per measure).
        measures: the measures, in output order (default: as they appear).
        empty: a measure's value when no query defines it (default NaN).
        margins: add the rows ``(macro)`` (mean of the group values, undefined groups skipped)
            and ``(all)`` (the aggregate over every query), as :func:`reteco_measures.evaluate`.

    Returns:
        ``[*by, measure, value, n]``; ``n`` counts the queries whose value is defined
        (``(macro)``: the groups whose value is defined). Groups are sorted (as ``evaluate``).
    """
    by = list(by)
    empty = dict(empty or {})
    measures = list(measures) if measures is not None else list(dict.fromkeys(long["measure"].tolist()))
    n_m = len(measures)
    codes = long["measure"].map({m: i for i, m in enumerate(measures)}).to_numpy(dtype=np.float64)
    keep = ~np.isnan(codes)
    mcode = codes[keep].astype(np.int64)
    v = long["value"].to_numpy(dtype=np.float64)[keep]
    w = long["weight"].to_numpy(dtype=np.float64)[keep] if "weight" in long.columns else np.ones(len(mcode))
    ok = ~np.isnan(v)
    vw, w, n = np.where(ok, v * w, 0.0), np.where(ok, w, 0.0), ok.astype(np.float64)
    empties = np.array([empty.get(m, float("nan")) for m in measures], dtype=np.float64)

    def finish(s_vw: np.ndarray, s_w: np.ndarray, s_n: np.ndarray, m: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            value = s_vw / s_w
        return np.where((s_n == 0) | (s_w == 0), empties[m], value)

    columns: dict[str, list] = {c: [] for c in by}
    out_m, out_o, out_g, out_v, out_n = [], [], [], [], []
    if by:
        sub = long.loc[keep, by]
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
        out_m.append(mi[sel])
        out_o.append(np.zeros(len(sel), dtype=np.int64))
        out_g.append(gi[sel])
        out_v.append(value[sel])
        out_n.append(s_n[sel])
        for j, c in enumerate(by):
            columns[c] += [keys[g][j] for g in gi[sel]]
        if margins:
            defined = present & ~np.isnan(value)
            d_sum = np.bincount(mi[defined], weights=value[defined], minlength=n_m)
            d_n = np.bincount(mi[defined], minlength=n_m)
            with np.errstate(invalid="ignore", divide="ignore"):
                macro = np.where(d_n > 0, d_sum / np.maximum(d_n, 1), empties)
            out_m.append(np.arange(n_m))
            out_o.append(np.ones(n_m, dtype=np.int64))
            out_g.append(np.zeros(n_m, dtype=np.int64))
            out_v.append(macro)
            out_n.append(d_n.astype(np.float64))
            for c in by:
                columns[c] += ["(macro)"] * n_m
    if not by or margins:
        a_vw = np.bincount(mcode, weights=vw, minlength=n_m)
        a_w = np.bincount(mcode, weights=w, minlength=n_m)
        a_n = np.bincount(mcode, weights=n, minlength=n_m)
        out_m.append(np.arange(n_m))
        out_o.append(np.full(n_m, 2, dtype=np.int64))
        out_g.append(np.zeros(n_m, dtype=np.int64))
        out_v.append(finish(a_vw, a_w, a_n, np.arange(n_m)))
        out_n.append(a_n)
        for c in by:
            columns[c] += ["(all)"] * n_m
    m_all, o_all, g_all = np.concatenate(out_m), np.concatenate(out_o), np.concatenate(out_g)
    order = np.lexsort((g_all, o_all, m_all))
    out = pd.DataFrame({c: np.asarray(columns[c], dtype=object)[order] for c in by})
    out["measure"] = np.asarray(measures, dtype=object)[m_all[order]] if n_m else np.array([], dtype=object)
    out["value"] = np.concatenate(out_v)[order].astype(np.float64)
    out["n"] = np.concatenate(out_n)[order].astype(np.int64)
    return out
