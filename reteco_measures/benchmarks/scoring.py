"""The scoring engine: one path from a submission to its `Score`.

`score_submission` (what `Benchmark.score`
runs) does the work, in this order:

1. ``load``: the reference data (qrels, topics, corpus, labels), once;
2. ``validate``: the benchmark's run contract → a `ValidationReport`
   (what was removed, what is invalid);
3. ``per_query``: every measure's per-query value, computed **once** into a long frame
   ``query_id, measure, value, weight`` (`long_per_query`; ``weight`` is the query's share
   of an aggregate that is not a plain mean, e.g. Spoken-Query's cell weights);
4. everything else — the summary, every group table, the reward, the JSON keys, the leaderboard's
   tests and confidence intervals — is derived from that frame (`aggregate`, i.e.
   `reteco_measures.engine.results.aggregate`); nothing is
   evaluated twice and nothing is printed (presentation lives in `reteco_measures.report.score`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..api import iter_calc
from ..contracts.base import ValidationReport
from ..engine.evaluate import iter_prepared, prepare, qrels_order
from ..engine.grouping import group_frame
from ..engine.results import aggregate, metrics_frame
from ..errors import DataFormatWarning, EmptyInputWarning, QueryIdMismatchWarning
from ..io.convert import as_qrels_frame
from ..kernels.context import RankedRun
from ..measures.names import measure_label, parse_measures
from .declaration import ENGINE, Benchmark, Inputs
from .score import Score

__all__ = ["score_submission", "long_per_query", "aggregate", "removed_counts"]

# ``aggregate`` is `reteco_measures.engine.results.aggregate` (the one aggregation of the
# package), re-exported here where the benchmarks have always imported it from

#: warnings of inputs the benchmark's contract has already reported (as errors of its report)
_CHECKED_BEFORE: tuple[type[Warning], ...] = (EmptyInputWarning, QueryIdMismatchWarning)


# ------------------------------------------------------------------------------------------------
# the engine


def score_submission(bench: Benchmark, run: Any, data: Any = None, split: str | None = None, *,
                     inputs: Inputs | None = None, options: Mapping[str, Any] | None = None,
                     evaluate: Callable[..., tuple[ValidationReport, pd.DataFrame, Any]] | None = None) -> Score:
    """Score one submission to ``bench`` (see `score`). ``evaluate``: ``(run, inputs, options,
    measures) -> (report, long, extra)`` instead of steps 2 and 3 (the streamed path,
    `reteco_measures.benchmarks.streaming`)."""
    opts = bench.resolve_options(options)
    tables = bench.tables
    split = split if split is not None else bench.default_split
    if inputs is None:
        inputs = bench.load(data, split, opts)
    measures = list(bench.measures(opts))
    if evaluate is not None:
        report, long, extra = evaluate(run, inputs, opts, measures)
    else:
        report = bench.validate(run, inputs, opts)
        long, extra = bench.per_query(measures, inputs, report, opts)
    empties = dict(long.attrs.get("empty", {}))
    eval_notes = list(long.attrs.get("notes", []))
    # a benchmark whose official number is not the mean of the per-query values (RETECO's
    # starter-kit rules: rounded per-domain means averaged over domains) gives it here
    override = long.attrs.get("official_value")
    aggregation = long.attrs.get("aggregation") or tables.aggregation
    labels = list(dict.fromkeys(long["measure"].tolist())) if len(long) else [tables.display(m) for m in measures]
    if bench.invalid_scores_zero and not report.valid:
        long = long.assign(value=0.0)
    stat = bench.statistical_unit(opts)
    columns = [c for g in tables.groupings for c in g.by] + list(stat["strata"]) \
        + ([stat["cluster"]] if stat["cluster"] else [])
    long = with_groups(long, inputs.topics, columns)
    official = tables.display(measures[0])
    summary = summary_table(long, labels, official, empties, keys=tables.keys, official_key=tables.official_key)
    if override is not None:
        summary.loc[summary["role"] == "official", "value"] = float(override)
    value = official_value(summary, official)
    if tables.summary_names:
        summary["measure"] = summary["measure"].map(tables.summary_names)
    valid = bool(report.valid)
    reward = float(bench.reward.compute(value, valid, opts)) if bench.reward is not None else None
    if reward is not None:
        row = {c: None for c in summary.columns}
        row.update({"measure": "reward", "value": reward, "n": int(summary["n"].iloc[0]) if len(summary) else 0,
                    "role": "reward"})
        summary = pd.concat([summary, pd.DataFrame([row])], ignore_index=True)
    by_group = {g.name: group_table(long, g.by, [official] if g.official_only else labels, empties, layout=g.layout)
                for g in tables.groupings}
    notes = list(tables.notes(inputs, report, long, opts)) if tables.notes is not None else []
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
        per_query=wide_table(long, labels, extra, inputs.topics, keys=tables.keys,
                             columns=tables.per_query_columns, sort=tables.per_query_sort),
        per_query_long=long,
        report=report,
        removed=removed_counts(report),
        reward=reward,
        notes=notes,
        data_problems=list(inputs.problems),
        meta=dict(inputs.meta),
        options=opts,
        unit=stat["unit"],
        aggregation=aggregation,
        summary_columns=tables.summary_columns,
        keys=tables.keys,
        groupings=tables.groupings,
        strata=tuple(stat["strata"]),
        cluster=stat["cluster"],
    )
    if tables.describe is not None:
        score.meta.update(tables.describe(score))
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
    """One breakdown table: `aggregate` by ``by`` with the ``(macro)`` / ``(all)`` rows;
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
    counts["rows_kept"] = report.rows_kept
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
    ranked: RankedRun | None = None,
    **kwargs: Any,
) -> pd.DataFrame:
    """Every measure's per-query value in one `reteco_measures.iter_calc` pass, as a long
    frame ``query_id, measure, value, weight`` (``measure`` = printed name): the frame of
    `metrics_frame`, in its canonical row order.

    ``units``: the evaluated query ids, in order; a (query, measure) pair the evaluation did not
    yield is added with ``fill`` (0: a missing query scores 0), and rows of other ids are
    dropped. Without ``units`` the rows follow the qrels' order of first appearance.
    ``ranked``: the contract's ranking of ``run`` (a `RankedRun` whose ``run`` is this very
    frame, see `reteco_measures.engine.evaluate.prepare`): the evaluation reuses it instead of
    ranking the run again.
    ``kwargs`` go to ``iter_calc`` (``topics``, ``labels``, ``tie_break``, ``corpus``). The
    frame's ``attrs["empty"]`` holds each measure's value on an empty set (NaN or its ``empty``),
    ``attrs["notes"]`` the evaluation's warnings (as text, once each).
    """
    measures = parse_measures(list(measures))  # names as the measure objects the evaluation reports
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if ranked is None:
            metrics = iter_calc(measures, qrels, run, on_mismatch="warn", **kwargs)  # checked by the contract
        else:  # (on_mismatch="warn" leaves the warnings as they are: nothing to set)
            metrics = iter_prepared(prepare(measures, qrels, run, ranked=ranked, **kwargs))
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
    order = None if units is not None else qrels_order(as_qrels_frame(qrels))
    frame = metrics_frame(metrics, measures=measures, label=display, order=order,
                          units=[str(u) for u in units] if units is not None else None, fill=fill)
    frame.attrs["notes"] = notes
    return frame


ENGINE["score"] = score_submission  # what `Benchmark.score` runs
