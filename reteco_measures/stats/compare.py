"""``rm.compare`` and `Comparison`: several runs, several measures, with statistics.

Per-query values are computed once (`reteco_measures.api.iter_calc`); aggregates, confidence
intervals, tests, tables and plots all derive from that one per-query frame.
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..engine.evaluate import check_modes, prepare, qrels_order, values_prepared
from ..engine.grouping import group_frame, warn_unmatched_groups
from ..engine.results import ALL as RESULTS_ALL
from ..engine.results import empty_value, is_sum, metrics_frame
from ..errors import EmptyInputWarning, QueryIdMismatchWarning, display
from ..io.convert import as_qrels_frame, as_run_frame
from ..io.lines import COMPRESSION_SUFFIXES
from ..kernels.bounds import JudgedQrels, bound_measure, tie_order_values
from ..kernels.standard import PREPARED_RUNS, HandedRun
from ..measures.names import measure_label, measure_name, parse_measures
from ..query_ids import align_runs, check_on_mismatch, mismatch_policy
from ..report.plots import plot_comparison
from ..report.tables import to_html, to_json, to_latex, to_markdown, to_text, wide_frame
from ..side import load_labels, load_topics, side_info
from .design import unit_columns, unit_kind
from .options import KeywordDefaults, StatOptions
from .tests import (
    Paired,
    adjust,
    bootstrap_counts,
    effect_size,
    paired_rows,
    pairwise_pvalues,
    row_estimates,
    unit_codes,
    win_tie_loss,
)
from .ties import has_ties, tie_bounds, tie_range

__all__ = ["Comparison", "Resamples", "compare", "compare_frame", "per_query_frame", "ALL"]

#: the statistical settings of a call that gives none (`StatOptions`' defaults)
_STATS = KeywordDefaults(StatOptions())

#: group value of the rows computed over all queries when ``by=`` is given (engine.results' ``ALL``)
ALL = RESULTS_ALL

SUMMARY_COLUMNS = ["run", "measure", "value", "ci_low", "ci_high", "n"]
PAIRWISE_COLUMNS = ["run", "other", "measure", "delta", "p_value", "p_adjusted", "significant", "effect_size",
                    "wins", "ties", "losses"]


@dataclass
class Comparison:
    """Runs compared on several measures: aggregates with confidence intervals and paired tests.

    Attributes:
        summary: one row per (run, measure) [per group]: ``run, measure, value, ci_low, ci_high, n``
            (+ the ``by`` columns first; + ``tie_min, tie_max`` — the aggregate under the worst
            and best order of tied scores — when ties change some value).
        pairwise: ``run, other, measure, delta, p_value, p_adjusted, significant, effect_size,
            wins, ties, losses`` (+ ``by`` columns): ``delta = value(run) − value(other)``;
            against ``baseline`` (``other`` is the baseline) when given, else every pair.
        per_query: ``run, measure, query_id, value, weight, unit, stratum`` (+ ``by`` columns,
            ``tie_min``/``tie_max`` where computed).
        design: one row per measure: the resampled ``unit``, the ``strata`` and ``n_units``.
        runs / measures: their order; names: report label → name ``ir_measures.parse_measure``
            accepts (``nDCG|FC@10`` → ``nDCG_FC@10``).
        params: the statistical settings used (test, correction, alpha, ci, n_resamples, seed,
            baseline, by).
        resamples: with ``compare_frame(..., keep_resamples=True)``: per ``(measure, *group
            values)`` the `Resamples` the intervals were computed from; else empty.
    """

    summary: pd.DataFrame
    pairwise: pd.DataFrame
    per_query: pd.DataFrame
    design: pd.DataFrame
    runs: list[str]
    measures: list[str]
    names: dict[str, str]
    params: dict[str, Any] = field(default_factory=dict)
    resamples: dict[tuple, Resamples] = field(default_factory=dict, repr=False)

    @classmethod
    def from_per_query(cls, per_query: pd.DataFrame, **kwargs: Any) -> Comparison:
        """Build a Comparison from an already computed per-query frame (see `compare_frame`)."""
        return compare_frame(per_query, **kwargs)

    @property
    def by(self) -> list[str]:
        return list(self.params.get("by") or [])

    # -- presentation (reteco_measures.report) ----------------------------------------------------
    def to_frame(self, *, ci: bool = False) -> pd.DataFrame:
        """Wide table: one row per run (per group), one column per measure (+ CI columns)."""

        return wide_frame(self, ci=ci)

    def to_markdown(self, places: int = 4) -> str:
        """Markdown table, runs × measures, with significance superscripts (see `to_latex`)."""

        return to_markdown(self, places=places)

    def to_latex(self, places: int = 4, caption: str | None = None, label: str | None = None) -> str:
        """LaTeX (booktabs) table as ranx prints it: runs labelled a, b, c, ...; a value carries the
        superscript letters of the runs it is significantly better than; best value in bold."""

        return to_latex(self, places=places, caption=caption, label=label)

    def to_html(self, places: int = 4) -> str:
        """HTML table with significance superscripts and confidence intervals (notebooks show it)."""

        return to_html(self, places=places)

    def _repr_html_(self) -> str:
        return self.to_html()

    def to_json(self) -> str:
        """JSON with ``summary``, ``pairwise`` and ``params`` (measure names parseable by ir_measures)."""

        return to_json(self)

    def to_text(self, places: int = 4) -> str:
        """Plain-text summary and pairwise tables."""

        return to_text(self, places=places)

    def plot(self, kind: str = "runs", **kwargs: Any):
        """Draw the comparison (matplotlib): ``kind='runs'`` (values with CI bars), ``'delta'``
        (sorted per-query differences to the baseline), ``'heatmap'`` (a two-column ``by`` grid,
        e.g. domain × depth or collection × condition), ``'depth'`` (curves T1..T5+ per run).
        See `reteco_measures.report.plots`."""

        return plot_comparison(self, kind=kind, **kwargs)

    def __repr__(self) -> str:
        head = f"Comparison({len(self.runs)} runs, measures={self.measures}, test={self.params.get('test')!r})\n"
        if len(self.pairwise) <= 50:
            return head + to_text(self)
        return head + to_text(self).split("\npairwise\n")[0] + f"\n({len(self.pairwise)} pairwise rows: .pairwise)\n"


# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resamples:
    """The bootstrap resamples behind one (measure, group)'s confidence intervals, kept for the
    statistics built on the same draws (a leaderboard's rank intervals).

    Attributes:
        paired: the unit-level sums the resamples act on (`Paired`:
            its ``units`` are the resampled units, in the column order of `counts`).
        aggregates: ``(B, R)`` the aggregate of every run (``paired.runs`` order) in each resample.
        generator: the random generator in the state it had before the draws.
    """

    paired: Paired
    aggregates: np.ndarray
    generator: np.random.Generator

    def counts(self) -> np.ndarray:
        """``(B, U)`` the multiplicity of each unit in each resample: the very draws behind
        `aggregates` (drawn again from the saved generator state, so
        ``paired.ratio(counts() @ S.T, counts() @ W.T)`` is `aggregates`)."""
        return bootstrap_counts(copy.deepcopy(self.generator), self.paired.strata, len(self.aggregates))


def _pairs(runs: list[str], baseline: str | None) -> tuple[np.ndarray, np.ndarray]:
    if baseline is not None:
        if baseline not in runs:
            raise ValueError(f"baseline {baseline!r} is not one of the runs {runs}")
        bi = runs.index(baseline)
        a = np.array([i for i in range(len(runs)) if i != bi], dtype=np.int64)
        return a, np.full(len(a), bi, dtype=np.int64)
    ii, jj = np.triu_indices(len(runs), k=1)
    return ii.astype(np.int64), jj.astype(np.int64)


def _given_units(part: pd.DataFrame) -> tuple[str, str | None]:
    """Describe the resampling of a per-query frame that carries no unit names."""
    unit = "query"
    if "unit" in part.columns and (part["unit"].astype(str) != part["query_id"].astype(str)).any():
        unit = "cluster (unit column)"
    strata = "stratum column" if "stratum" in part.columns and part["stratum"].nunique() > 1 else None
    return unit, strata


def _label_to_name(label: str) -> str:
    return label.replace("nDCG|FC", "nDCG_FC")


def _analyse(P: Paired, *, baseline: str | None, test: str, ci: float, n_resamples: int,
             rng: np.random.Generator, keep: bool = False
             ) -> tuple[dict[str, Any], dict[str, Any], Resamples | None]:
    """The summary and pairwise columns of one (measure, group), and its resamples if kept."""
    a, b = _pairs(P.runs, baseline)
    start = copy.deepcopy(rng) if keep else None
    # each pair's p-value is the one its two runs get alone (see stats.tests.pairwise_pvalues)
    aggregates, p = pairwise_pvalues(P, a, b, test, n_resamples, rng)
    q = (1.0 - ci) / 2.0
    ok = ~np.all(np.isnan(aggregates), axis=0)
    lo = np.full(len(P.runs), np.nan)
    hi = np.full(len(P.runs), np.nan)
    if ok.any():
        lo[ok], hi[ok] = np.nanquantile(aggregates[:, ok], [q, 1.0 - q], axis=0)
    summary = {"run": P.runs, "value": P.estimate, "ci_low": lo, "ci_high": hi, "n": P.n}
    wins, ties, losses = win_tie_loss(P, a, b)
    runs = np.asarray(P.runs, dtype=object)
    pairwise = {
        "run": runs[a], "other": runs[b], "delta": P.estimate[a] - P.estimate[b], "p_value": p,
        "effect_size": effect_size(P, a, b), "wins": wins, "ties": ties, "losses": losses,
    }
    kept = Resamples(P, aggregates, start) if start is not None else None
    return summary, pairwise, kept


def _groups(frame: pd.DataFrame, rows: np.ndarray, by: list[str]) -> list[tuple[tuple, np.ndarray]]:
    """The (group key, row positions) of ``frame``'s ``rows`` per value of the ``by`` columns (sorted),
    then all of them under the key `ALL`; one group ``()`` without ``by``."""
    if not by:
        return [((), rows)]
    groups = [(key if isinstance(key, tuple) else (key,), part.index.to_numpy())
              for key, part in frame.iloc[rows].groupby(by, sort=True)]
    return [*groups, (tuple(ALL for _ in by), rows)]


def _positions(column: pd.Series, names: list[str]) -> np.ndarray:
    """The position in ``names`` of each value of ``column`` (-1 when absent)."""
    codes, uniques = pd.factorize(column, sort=False)
    return pd.Index(names).get_indexer(pd.Index(np.asarray(uniques, dtype=object)))[codes]


def compare_frame(
    per_query: pd.DataFrame,
    *,
    measures: Sequence[str] | None = None,
    runs: Sequence[str] | None = None,
    names: Mapping[str, str] | None = None,
    empties: Mapping[str, float] | None = None,
    units: Mapping[str, tuple[str, str | None]] | None = None,
    baseline: str | None = None,
    test: str = _STATS.test,
    correction: str | None = _STATS.correction,
    alpha: float = _STATS.alpha,
    ci: float = _STATS.ci,
    n_resamples: int = _STATS.n_resamples,
    seed: int = _STATS.seed,
    stats: StatOptions | None = None,
    by: str | Sequence[str] | None = None,
    keep_resamples: bool = False,
) -> Comparison:
    """A `Comparison` from an already computed per-query frame (no evaluation happens).

    Args:
        per_query: long frame with ``run, measure, query_id, value, weight`` (``measure`` = report
            label, e.g. ``nDCG|FC@10``; ``weight`` = the weight of the value in the measure's
            aggregate; NaN ``value`` = not defined for that query) and optionally ``unit`` /
            ``stratum`` (what resampling draws; default: the query, one stratum; see
            `reteco_measures.stats.unit_columns`), the ``by`` columns, and ``tie_min`` /
            ``tie_max`` (per-query value under the worst / best order of tied scores).
        measures: measure labels in report order (default: order of appearance).
        runs: run names in report order (default: order of appearance).
        names: label → name ``ir_measures.parse_measure`` accepts (default: ``|`` → ``_``).
        empties: label → aggregate when no query is defined (default NaN).
        units: label → ``(unit name, strata name or None)`` for `Comparison.design`.
        baseline, test, correction, alpha, ci, n_resamples, seed, stats, by: as `compare`.
        keep_resamples: keep the bootstrap resamples in `Comparison.resamples` (memory:
            ``n_resamples`` × runs floats per measure and group).

    Returns:
        The `Comparison`. Point estimates are the NaN-skipping weighted means of the
        per-query values summed left to right in row order, as ir_measures' and our aggregators
        do (so they equal ``rm.calc_aggregate``).
    """
    st = _STATS.resolve(stats, test=test, correction=correction, alpha=alpha, ci=ci, n_resamples=n_resamples,
                        seed=seed)
    test, correction, alpha, ci, n_resamples, seed = (st.test, st.correction, st.alpha, st.ci, st.n_resamples,
                                                      st.seed)
    by_cols = [by] if isinstance(by, str) else list(by or [])
    need = ["run", "measure", "query_id", "value"]
    absent = [c for c in need + by_cols if c not in per_query.columns]
    if absent:
        raise ValueError(f"the per-query frame lacks column(s) {absent}")
    frame = per_query.reset_index(drop=True)
    if "weight" not in frame.columns:
        frame = frame.assign(weight=1.0)
    frame = frame.assign(run=frame["run"].astype(str), measure=frame["measure"].astype(str))
    run_order = list(runs) if runs is not None else list(dict.fromkeys(frame["run"]))
    if len(run_order) < 2:
        raise ValueError("a comparison needs at least two runs")
    if len(set(run_order)) != len(run_order):
        raise ValueError(f"run names must be distinct: {run_order}")
    measure_order = list(measures) if measures is not None else list(dict.fromkeys(frame["measure"]))
    names = {m: (names or {}).get(m, _label_to_name(m)) for m in measure_order}
    empties = dict(empties or {})
    corr = None if correction in (None, "none") else correction
    ties = {"tie_min", "tie_max"} <= set(frame.columns)

    summaries, pairs, design = [], [], []
    kept: dict[tuple, Resamples] = {}
    # the columns as arrays, once for every measure and group (rows are addressed by position)
    rcode_all, mcode_all = _positions(frame["run"], run_order), _positions(frame["measure"], measure_order)
    values_all = frame["value"].to_numpy(dtype=np.float64)
    weights_all = frame["weight"].to_numpy(dtype=np.float64)
    ucode_all, unit_names, scode_all, stratum_names = unit_codes(frame)
    if ties:
        tie_lo, tie_hi = frame["tie_min"].to_numpy(dtype=np.float64), frame["tie_max"].to_numpy(dtype=np.float64)
    for mi, label in enumerate(measure_order):
        rows_m = np.flatnonzero(mcode_all == mi)
        empty = float(empties.get(label, float("nan")))
        groups = _groups(frame, rows_m, by_cols)
        for gi, (key, rows) in enumerate(groups):
            rng = np.random.default_rng([int(seed), mi, gi])
            rcode = rcode_all[rows]
            if (rcode < 0).any():
                unknown = sorted(set(frame["run"].to_numpy(dtype=object)[rows[rcode < 0]].tolist()))
                raise ValueError(f"per-query rows of runs not in the comparison: {unknown[:5]}")
            P = paired_rows(run_order, rcode, values_all[rows], weights_all[rows], ucode_all[rows], unit_names,
                            scode_all[rows], stratum_names, empty)
            if gi == len(groups) - 1:
                unit, strata = (units or {}).get(label) or _given_units(frame.iloc[rows])
                design.append({"measure": label, "unit": unit, "strata": strata or "", "n_units": P.n_units})
            s, pw, resamples = _analyse(P, baseline=baseline, test=test, ci=ci, n_resamples=n_resamples, rng=rng,
                                        keep=keep_resamples)
            if resamples is not None:
                kept[(label, *key)] = resamples
            if ties:
                s["tie_min"] = row_estimates(rcode, tie_lo[rows], weights_all[rows], len(run_order), empty)
                s["tie_max"] = row_estimates(rcode, tie_hi[rows], weights_all[rows], len(run_order), empty)
            # 'tukey' is already adjusted for every pair of runs
            pw["p_adjusted"] = pw["p_value"] if test == "tukey" else adjust(pw["p_value"], corr)
            pw["significant"] = pw["p_adjusted"] < alpha
            for col, value in zip(by_cols, key):
                s[col] = value
                pw[col] = value
            s["measure"] = label
            pw["measure"] = label
            summaries.append(pd.DataFrame(s))  # one frame per (measure, group), scalars broadcast
            pairs.append(pd.DataFrame(pw))
    sum_cols = [*by_cols, *SUMMARY_COLUMNS]
    summary = pd.concat(summaries, ignore_index=True)
    if ties:
        changed = (summary["tie_min"] != summary["value"]) | (summary["tie_max"] != summary["value"])
        if (changed & summary["tie_min"].notna()).any():
            sum_cols += ["tie_min", "tie_max"]
    summary = summary[sum_cols]
    pairwise = pd.concat(pairs, ignore_index=True)[[*by_cols, *PAIRWISE_COLUMNS]]
    pairwise["significant"] = pairwise["significant"].astype(bool)
    params = {"test": test, "correction": corr, "alpha": alpha, "ci": ci, "n_resamples": n_resamples,
              "seed": seed, "baseline": baseline, "by": by_cols}
    return Comparison(summary=summary, pairwise=pairwise, per_query=frame, design=pd.DataFrame(design),
                      runs=run_order, measures=measure_order, names=names, params=params, resamples=kept)


# ------------------------------------------------------------------------------------------------


#: compression suffixes of run files (read transparently by the readers), stripped first
COMPRESSION_FILE_SUFFIXES: tuple[str, ...] = tuple(COMPRESSION_SUFFIXES)
#: format suffixes of run files (TREC text and JSON / JSONL), stripped after a compression suffix
RUN_FORMAT_SUFFIXES: tuple[str, ...] = (".txt", ".trec", ".run", ".res", ".tsv", ".jsonl", ".ndjson", ".json")
#: every file-name ending that marks a run file: `file_run_name` strips them, ``rm.compare``,
#: leaderboards and the ``compare`` command name runs with it (the command also tells a run-file
#: argument from a measure by it)
RUN_FILE_SUFFIXES: tuple[str, ...] = RUN_FORMAT_SUFFIXES + COMPRESSION_FILE_SUFFIXES


def _strip_one(name: str, suffixes: Sequence[str]) -> str:
    lowered = name.lower()
    for suffix in suffixes:
        if lowered.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def file_run_name(path: str | os.PathLike) -> str:
    """A run's name from its file name: at most one compression suffix (``.gz``, ``.bz2``,
    ``.xz``) is stripped, then at most one format suffix (``.txt``, ``.trec``, ``.run``,
    ``.res``, ``.tsv``, ``.jsonl``, ``.ndjson``, ``.json``), either matched regardless of
    case; the rest keeps its case. ``bm25.run.gz`` → ``bm25``, ``bm25.txt`` → ``bm25``,
    ``dense.v2.jsonl`` → ``dense.v2``, ``bm25.trec.txt`` → ``bm25.trec``. A name that is only a
    suffix stays as it is (``.txt`` → ``.txt``). Control characters in the file name are written
    as escapes (``run\\x1b[2J``, see `reteco_measures.errors.display`): the name is printed in
    tables and pages."""
    return display(_strip_one(_strip_one(Path(path).name, COMPRESSION_FILE_SUFFIXES), RUN_FORMAT_SUFFIXES), None)


def _run_items(runs: Any) -> list[tuple[str, Any]]:
    if isinstance(runs, Mapping):
        return [(str(k), v) for k, v in runs.items()]
    if isinstance(runs, (str, os.PathLike)):
        raise TypeError("runs must be a {name: run} mapping or a list of run files, not a single path")
    items: list[tuple[str, Any]] = []
    for i, run in enumerate(runs):
        if isinstance(run, (str, os.PathLike)):
            items.append((file_run_name(run), run))
        else:
            items.append((f"run{i + 1}", run))
    names = [n for n, _ in items]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"two runs have the same name {dup}: pass a {{name: run}} mapping instead")
    return items


def _canonical_part(values: pd.DataFrame, measures: list, labels: list[str], order: pd.Index,
                    run: str) -> pd.DataFrame | None:
    """The run's rows ``run, measure, query_id, value, weight`` as `metrics_frame` orders and names
    them, for values already in that order (the native kernels': one block per measure, in the
    order asked, each with the qrels' queries in ``order``), without sorting or looking anything
    up; None when they are not (the caller then calls `metrics_frame`)."""
    n_q, n_m = len(order), len(measures)
    if not n_q or len(values) != n_q * n_m or ("weight" in values.columns and values["weight"].notna().any()):
        return None
    col = values["measure"].to_numpy(dtype=object)
    ids = np.fromiter(map(id, col), dtype=np.int64, count=len(col)).reshape(n_m, n_q)
    if not (ids == np.array([id(m) for m in measures], dtype=np.int64)[:, None]).all():
        return None
    qids = values["query_id"]
    if not pd.api.types.is_string_dtype(qids.dtype) or pd.api.types.is_object_dtype(qids.dtype):
        return None
    expected = pa.array(order.to_numpy(dtype=object), type=pa.large_string()).take(
        pa.array(np.tile(np.arange(n_q, dtype=np.int64), n_m)))
    same = pc.equal(pa.array(qids).cast(pa.large_string()), expected)
    if same.null_count or not pc.all(same).as_py():
        return None
    frame = pd.DataFrame({"run": run, "measure": np.repeat(np.array(labels, dtype=object), n_q),
                          "query_id": qids.reset_index(drop=True),
                          "value": values["value"].to_numpy(dtype=np.float64), "weight": np.ones(len(qids))})
    frame.attrs["empty"] = {label: empty_value(m) for m, label in zip(measures, labels)}
    frame.attrs["sum"] = [label for m, label in zip(measures, labels) if is_sum(m)]
    return frame


def _with_tie_bounds(part: pd.DataFrame, run: pd.DataFrame, qrels: pd.DataFrame, measures: list,
                     label_of: dict, order: pd.Index, judged: JudgedQrels | None,
                     handed: HandedRun | None = None, **side: Any) -> pd.DataFrame:
    """``part`` (one run's rows) with ``tie_min`` / ``tie_max`` where ties change a value: with
    ``judged`` (every measure a `bound_measure`, ``part`` in canonical order) from the judged rows
    (`tie_order_values`, on ``handed``: the run as the evaluation prepared it, when given),
    written at their rows; else from `tie_bounds`, joined on (measure, query_id). No columns when
    no query has a tie group of mixed relevance."""
    tv = tie_order_values(measures, judged, run, handed=handed) if judged is not None else None
    if tv is not None:
        if len(tv.query_ids):  # measure blocks of the qrels' queries in `order`
            qpos = order.get_indexer(pd.Index(tv.query_ids.to_numpy(zero_copy_only=False), dtype=object))
            worst, best = np.full(len(part), np.nan), np.full(len(part), np.nan)
            for i, m in enumerate(measures):
                worst[i * len(order) + qpos] = tv.worst[m]
                best[i * len(order) + qpos] = tv.best[m]
            part["tie_min"], part["tie_max"] = tie_range(part["value"], worst, best)
        return part
    if judged is None and not has_ties(run):
        return part
    bounds = tie_bounds(qrels, run, measures, judged=judged, **side)
    if bounds is None or not len(bounds):
        return part
    label_by_id = {id(m): label for m, label in label_of.items()}
    bounds["measure"] = [label_by_id.get(id(m)) or label_of.get(m) or measure_label(m) for m in bounds["measure"]]
    bounds = bounds.drop_duplicates(["measure", "query_id"])
    # each row's bounds (NaN where it has none): a left join on (measure, query_id)
    at = pd.MultiIndex.from_arrays([bounds["measure"], bounds["query_id"].astype(str)]).get_indexer(
        pd.MultiIndex.from_arrays([part["measure"], part["query_id"].astype(str)]))
    found = at >= 0
    worst = np.where(found, bounds["worst"].to_numpy(dtype=np.float64)[np.maximum(at, 0)], np.nan)
    best = np.where(found, bounds["best"].to_numpy(dtype=np.float64)[np.maximum(at, 0)], np.nan)
    part["tie_min"], part["tie_max"] = tie_range(part["value"], worst, best)
    return part


def _with_units(frame: pd.DataFrame, measures: list, labels: list[str], topics: pd.DataFrame | None) -> pd.DataFrame:
    """``frame`` with the ``unit`` and ``stratum`` columns of every row (`unit_columns`)."""
    if measures and all(unit_kind(m)[0] != "conversation" and unit_kind(m)[1] is None for m in measures):
        # every measure resamples the query of the row, in one stratum (`unit_columns`' rule)
        ids = frame["query_id"].astype("str").to_numpy(dtype=object)
        return frame.join(pd.DataFrame({"unit": ids.copy(), "stratum": np.full(len(ids), "", dtype=object)},
                                       index=frame.index))
    design = []
    for m, label in zip(measures, labels):
        rows = frame["measure"] == label
        cols = unit_columns(m, frame.loc[rows, "query_id"], topics)
        design.append(cols.set_index(frame.index[rows])[["unit", "stratum"]])
    return frame.join(pd.concat(design)) if design else frame


def per_query_frame(
    runs: Any,
    qrels: Any,
    measures: Any,
    *,
    topics: pd.DataFrame | str | None = None,
    labels: pd.DataFrame | str | None = None,
    by: str | Sequence[str] | None = None,
    corpus: Sequence[str] | None = None,
    tie_break: str = "trec_eval",
    ties: bool = True,
    ids_checked: bool = False,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Evaluate every run once: the long per-query frame `compare_frame` takes, and the
    keyword arguments (``measures, runs, names, empties, units``) that describe it.

    Each run's rows are `metrics_frame`'s (measures in the
    order given, queries in the qrels' order of first appearance), so the point estimates, summed
    in row order, are ``rm.calc_aggregate``'s to the last bit.

    With ``ties=True`` (and ``tie_break='trec_eval'``), runs with tied scores get ``tie_min`` /
    ``tie_max`` per query (`reteco_measures.stats.tie_sensitivity`).

    ``ids_checked=True``: the runs', topics' and labels' query ids were already checked against
    the qrels (`reteco_measures.query_ids.align_runs`, as `compare` does first): each run's
    evaluation does not check them again (else it does, and warns)."""

    measure_objs = parse_measures(measures)
    labels_list = [measure_label(m) for m in measure_objs]
    label_of = dict(zip(measure_objs, labels_list))
    if len(set(labels_list)) != len(labels_list):
        raise ValueError(f"a measure is given twice: {labels_list}")
    topics_df = load_topics(topics) if topics is not None else None
    labels_df = load_labels(labels) if labels is not None else None
    qrels_df = as_qrels_frame(qrels)
    items = _run_items(runs)
    if len(items) < 2:
        raise ValueError("a comparison needs at least two runs")
    order = qrels_order(qrels_df)  # the canonical row order of engine.results.metrics_frame
    by_cols = [by] if isinstance(by, str) else list(by or [])
    parts = []
    tie_step = ties and tie_break == "trec_eval"
    # measures whose bounds come from the judged rows (kernels.bounds): the qrels read once for all runs
    judged = (JudgedQrels(qrels_df) if tie_step and corpus is None and len(qrels_df) and measure_objs
              and all(bound_measure(m) for m in measure_objs) else None)
    for name, run in items:
        if hasattr(run, "npartitions") and hasattr(run, "compute"):  # a Dask DataFrame: collected first
            run = run.compute()
        run_df = as_run_frame(run)
        # the native kernels' preparation of the run (grouped, ordered, hashed, looked up in the
        # qrels), kept for the tie bounds from the judged rows, which then do not make it again
        handed: list[HandedRun] = []
        sink = {PREPARED_RUNS: handed} if judged is not None else {}
        with mismatch_policy("warn"), side_info(**sink):
            # rm.iter_calc's values, as one frame (no Metric object per value)
            prepared = prepare(measure_objs, qrels_df, run_df, topics=topics_df, labels=labels_df, corpus=corpus,
                               tie_break=tie_break, ids_checked=ids_checked)
            values = values_prepared(prepared)
        # this very run's preparation: prepare passes the run's rows on as they are (trec_eval's
        # order, ids as given), and the kernels were handed that frame
        reuse = next((h for h in handed if h.run is prepared.run_standard and h.run is prepared.run), None)
        del handed
        part = _canonical_part(values, measure_objs, labels_list, order, name)
        canonical = part is not None
        if part is None:
            part = metrics_frame(values, measures=measure_objs, label=measure_label, order=order)
            part.insert(0, "run", name)
            part = part[["run", "measure", "query_id", "value", "weight"]]
        if tie_step:
            part = _with_tie_bounds(part, run_df, qrels_df, measure_objs, label_of, order, judged if canonical else None,
                                    handed=reuse, topics=topics_df, labels=labels_df, corpus=corpus)
        reuse = None  # freed before the next run is evaluated (peak memory)
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True)
    if ties and {"tie_min", "tie_max"} & set(frame.columns):
        for col in ("tie_min", "tie_max"):
            frame[col] = frame[col].where(frame[col].notna(), frame["value"]) if col in frame else frame["value"]
    frame = _with_units(frame, measure_objs, labels_list, topics_df)
    if by_cols:
        groups = group_frame(frame["query_id"], topics_df, by_cols)
        for col in by_cols:
            frame[col] = groups[col].to_numpy()
    kwargs = {
        "measures": labels_list,
        "runs": [n for n, _ in items],
        "names": {label: measure_name(m) for m, label in zip(measure_objs, labels_list)},
        "empties": {label: empty_value(m) for m, label in zip(measure_objs, labels_list)},
        "units": {label: unit_kind(m) for m, label in zip(measure_objs, labels_list)},
    }
    return frame, kwargs


def compare(
    runs: Any,
    qrels: Any,
    measures: Any,
    *,
    baseline: str | None = None,
    test: str = _STATS.test,
    correction: str | None = _STATS.correction,
    alpha: float = _STATS.alpha,
    ci: float = _STATS.ci,
    n_resamples: int = _STATS.n_resamples,
    seed: int = _STATS.seed,
    stats: StatOptions | None = None,
    topics: pd.DataFrame | str | None = None,
    labels: pd.DataFrame | str | None = None,
    by: str | Sequence[str] | None = None,
    tie_break: str = "trec_eval",
    ties: bool = True,
    corpus: Sequence[str] | None = None,
    query_ids: str = "exact",
    on_mismatch: str = "error",
) -> Comparison:
    """Compare runs on measures with confidence intervals and paired significance tests.

    Args:
        runs: ``{name: run}`` (DataFrame, dict-of-dict or path; a Dask DataFrame is computed
            first) or a list of run files (named by `file_run_name`: ``bm25.run.gz`` →
            ``bm25``; two files of one name are an error).
        qrels: qrels (DataFrame, dict-of-dict or path).
        measures: measures or strings (``"nDCG@10"``, ``"TC@10"``, ``"nDCG|FC@10"``).
        baseline: a run name: compare every other run against it; None: every pair.
        test: ``'t'``, ``'wilcoxon'``, ``'randomization'``, ``'bootstrap'`` or ``'tukey'``.
        correction: ``'holm'``, ``'bonferroni'``, ``'bh'`` or None, applied per measure (and
            group) over its pairs; ``'tukey'`` is already adjusted for all pairs.
        alpha: significance level for ``significant`` (on the adjusted p-value).
        ci: confidence level of the percentile bootstrap intervals.
        n_resamples: bootstrap / randomization resamples.
        seed: seed of the resampling (results are reproducible).
        stats: the six settings above as one `StatOptions` value
            (``stats=StatOptions(test="wilcoxon")``); giving it and one of the six keywords is a
            ``TypeError``.
        topics, labels, corpus, tie_break: as `reteco_measures.calc_aggregate`.
        ties: with ``tie_break='trec_eval'``, add ``tie_min`` / ``tie_max`` (the aggregate under
            the worst and best order of tied scores) for runs with ties; ``False`` skips that
            step (as ``rm.leaderboard(ties=False)``).
        by: a topics column, a list of them, or ``"depth"``: statistics per group, plus
            ``"(all)"`` rows over all queries. Queries that land in ``"(none)"`` (no topics row,
            no value, an id without a turn number) are counted in a
            `GroupMismatchWarning`.
        query_ids: ``'exact'`` (default) or ``'normalize'``: as
            `reteco_measures.calc_aggregate` (``'normalize'`` maps every run's, the
            topics' and the labels' ids to the qrels' form of the same query).
        on_mismatch: ``'error'`` (default): a run (or topics, labels) whose query ids do not
            meet the qrels' (`QueryIdMismatchWarning`'s cases),
            or an empty run or qrels, raises
            `InputMismatchError` naming the run, instead of a
            table of zeros; ``'warn'``: the warning is given and the numbers are computed anyway.

    Raises:
        InputMismatchError: inputs that do not match, unless ``on_mismatch='warn'``
            (`reteco_measures.query_ids.align_runs`).
        ValueError: an unknown test, correction, tie policy, id mode or ``on_mismatch``.
        TypeError: ``stats`` together with one of the six keywords it replaces.

    Every test and interval resamples the unit the measure aggregates over (queries; whole
    conversations for ``TurnNDCG(average='conversation')``; requests within collection ×
    condition cells for ``SpokenMacroNDCG``): see `reteco_measures.stats`.
    """
    st = _STATS.resolve(stats, test=test, correction=correction, alpha=alpha, ci=ci, n_resamples=n_resamples,
                        seed=seed)
    check_modes(tie_break, query_ids)
    check_on_mismatch(on_mismatch)
    # the single-run checks for every run, before anything is computed: a number from inputs
    # that do not match is refused (or warned about, once per run, with on_mismatch='warn')
    qrels = as_qrels_frame(qrels)
    topics = load_topics(topics) if topics is not None else None
    labels = load_labels(labels) if labels is not None else None
    items = [(name, as_run_frame(run.compute() if hasattr(run, "npartitions") and hasattr(run, "compute") else run))
             for name, run in _run_items(runs)]
    items, topics, labels = align_runs(qrels, items, topics=topics, labels=labels, mode=query_ids,
                                       on_mismatch=on_mismatch)
    by_cols = [by] if isinstance(by, str) else list(by or [])
    if by_cols:  # the evaluated queries are the qrels'
        qids = pd.Series(pd.unique(qrels["query_id"].astype(str)), dtype=object)
        warn_unmatched_groups(group_frame(qids, topics, by_cols), by_cols, topics)
    with warnings.catch_warnings():
        # already reported above, once per run
        warnings.simplefilter("ignore", QueryIdMismatchWarning)
        warnings.simplefilter("ignore", EmptyInputWarning)
        frame, kwargs = per_query_frame(dict(items), qrels, measures, topics=topics, labels=labels, by=by,
                                        corpus=corpus, tie_break=tie_break, ties=ties, ids_checked=True)
    return compare_frame(frame, baseline=baseline, stats=st, by=by, **kwargs)
