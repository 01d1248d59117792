"""The benchmark engine: one declaration per benchmark, one scoring path for all of them.

A :class:`Benchmark` declares *what* a benchmark is — how its data is loaded, which contract
validates a submission, the official measure and the diagnostics, the groupings of its tables,
the statistical unit, the reward and its gates. :meth:`Benchmark.score` is the one engine that
does the work, in this order:

1. ``load``: the reference data (qrels, topics, corpus, labels), once;
2. ``validate``: the benchmark's run contract → a :class:`~reteco_measures.contracts.base.ValidationReport`
   (what was removed, what is invalid);
3. ``per_query``: every measure's per-query value, computed **once** into a long frame
   ``query_id, measure, value, weight`` (``weight`` is the query's share of an aggregate that is
   not a plain mean, e.g. Spoken-Query's cell weights);
4. everything else — the summary, every group table, the reward, the JSON keys, the leaderboard's
   tests and confidence intervals — is derived from that frame; nothing is evaluated twice and
   nothing is printed (presentation lives in :mod:`reteco_measures.report.score`).
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..api import group_frame, iter_calc, measure_label, measure_name
from ..contracts.base import ValidationReport
from ..errors import DataFormatWarning, Problem

try:  # the warnings of empty / mismatched inputs (present in newer versions of errors.py)
    from ..errors import EmptyInputWarning, QueryIdMismatchWarning

    _CHECKED_BEFORE: tuple[type[Warning], ...] = (EmptyInputWarning, QueryIdMismatchWarning)
except ImportError:  # pragma: no cover
    _CHECKED_BEFORE = (DataFormatWarning,)

__all__ = [
    "Option",
    "Grouping",
    "Inputs",
    "Benchmark",
    "Score",
    "aggregate",
    "metric_key",
    "long_per_query",
    "BENCHMARKS",
    "register",
    "benchmark",
]


# ------------------------------------------------------------------------------------------------
# declarations


@dataclass(frozen=True)
class Option:
    """A benchmark option: a keyword of :meth:`Benchmark.score` and a flag of ``score NAME``.

    Attributes:
        name: the Python keyword (``corpus_scope``); the flag is ``--corpus-scope`` unless ``flag``.
        default: the default value.
        help: one line for ``--help``.
        choices: allowed values, if restricted.
        type: converter for the command line (``int``, ``float``), if not a string.
        action: an argparse action (``store_true``, ``append``) instead of a value.
        flag: the command-line flag, when it differs from the name.
        data: True when the option changes the loaded reference data (the leaderboard loads the
            data once per distinct value).
        const: the value a ``store_const`` flag stores.
    """

    name: str
    default: Any = None
    help: str = ""
    choices: tuple | None = None
    type: Callable[[str], Any] | None = None
    action: str | None = None
    flag: str | None = None
    data: bool = False
    const: Any = None

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Grouping:
    """A breakdown table of a benchmark (``Score.by_group[name]``).

    Attributes:
        name: the table's key in :attr:`Score.by_group` and in the JSON output (``by_domain``).
        by: the grouping columns (topics columns or ``depth``).
        title: a heading for reports.
        layout: ``'wide'`` (one row per group, ``n`` and a column per measure) or ``'tidy'``
            (``[*by, measure, value, n]`` as :func:`reteco_measures.evaluate` returns).
        official_only: only the official measure (e.g. a collection × condition grid).
    """

    name: str
    by: tuple[str, ...]
    title: str
    layout: str = "wide"
    official_only: bool = False


@dataclass
class Inputs:
    """The reference data a submission is scored against, loaded once.

    Attributes:
        qrels: ``query_id, doc_id, relevance`` (+ ``domain``, ``line``).
        topics: query metadata keyed by ``query_id`` (grouping columns), or None.
        corpus: what the contract checks documents against (DataFrame / ids), or None.
        labels: frozen temporal labels, or None.
        query_ids: the evaluated units (default: the qrels' query ids, in order).
        problems: problems found in the reference data (reported, never fatal).
        meta: descriptive facts copied into :attr:`Score.meta` (``domains``, ``labels``, ...).
        extra: anything else the benchmark's functions pass to each other.
    """

    qrels: pd.DataFrame
    topics: pd.DataFrame | None = None
    corpus: Any = None
    labels: pd.DataFrame | None = None
    query_ids: list[str] | None = None
    problems: list[Problem] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def units(self) -> list[str]:
        """The evaluated query ids (``query_ids`` or the qrels' ids in first-seen order)."""
        if self.query_ids is not None:
            return list(self.query_ids)
        return pd.unique(self.qrels["query_id"].astype(str)).tolist()


Loader = Callable[[Any, "str | None", Mapping[str, Any]], Inputs]
Validator = Callable[[Any, Inputs, Mapping[str, Any]], ValidationReport]
PerQuery = Callable[[list, Inputs, ValidationReport, Mapping[str, Any]], "tuple[pd.DataFrame, pd.DataFrame | None]"]


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, declared. Score a submission with :meth:`score`, rank several with
    :meth:`leaderboard`.

    Attributes:
        name: the preset name (``reteco-1a``).
        title: a human title for report headers.
        help: one line for ``score --help``.
        measures: ``options -> [official, *diagnostics]`` (ir_measures objects or strings).
        load: ``(data_root, split, options) -> Inputs``.
        validate: ``(run, inputs, options) -> ValidationReport`` (the run contract).
        per_query: ``(measures, inputs, report, options) -> (long, extra)``: the per-query values
            (see :func:`long_per_query`) and optional extra per-query columns indexed by query id.
        contract: the contract's name (``reteco``, ``chunqiu``, ...).
        unit: the statistical unit the official measure aggregates over (for tests and CIs).
        strata: per-query columns whose cells the aggregate weighs (stratified resampling).
        cluster: the per-query column whose groups are resampled together, if any.
        groupings: the breakdown tables.
        keys: extra key columns of the per-query frame (iKAT: ``task``, ``qrels``).
        official_key: the key values of the official measure's rows (iKAT: passage, nist).
        per_query_columns: topics columns shown beside the per-query values.
        per_query_sort: columns the per-query table is sorted by.
        display: measure → printed name (``AP@10`` → ``MAP@10``).
        aggregation: a sentence saying how the official number aggregates.
        options: the benchmark's options (keywords of :meth:`score`, flags of ``score NAME``).
        run_arg / run_help: the positional argument of ``score NAME``.
        default_split: the default split (None: the benchmark has no splits).
        invalid_scores_zero: an invalid submission scores 0 on every measure (ChunQiu).
        reward: ``(official value, valid, options) -> reward``, None when there is no reward.
        notes: ``(inputs, report, per_query long, options) -> [str]``: remarks on the data.
        describe: ``(score) -> dict`` of benchmark-specific JSON fields.
        summary_columns: the columns of the printed summary table.
        demo: ``sample_root -> {"run", "data", "split", **options}``: the keywords of
            :meth:`score` that score the bundled sample (``reteco-measures demo``).
        statistics: ``options -> {"unit", "cluster", "strata"}`` overriding the statistical unit
            for some options.
        summary_names: ``printed name -> name in the summary`` only (ChunQiu prints ``MAP@10`` in its
            summary and keeps ir_measures' ``AP@10`` per query).
    """

    name: str
    title: str
    help: str
    measures: Callable[[Mapping[str, Any]], list]
    load: Loader
    validate: Validator
    per_query: PerQuery
    contract: str
    unit: str = "query"
    strata: tuple[str, ...] = ()
    cluster: str | None = None
    groupings: tuple[Grouping, ...] = ()
    keys: tuple[str, ...] = ()
    official_key: tuple[tuple[str, str], ...] = ()
    per_query_columns: tuple[str, ...] = ()
    per_query_sort: tuple[str, ...] = ()
    display: Callable[[Any], str] = measure_label
    aggregation: str = "mean over queries"
    options: tuple[Option, ...] = ()
    run_arg: str = "run"
    run_help: str = "the submission"
    default_split: str | None = "dev"
    invalid_scores_zero: bool = False
    reward: Callable[[float, bool, Mapping[str, Any]], float] | None = None
    notes: Callable[[Inputs, ValidationReport, pd.DataFrame, Mapping[str, Any]], list[str]] | None = None
    describe: Callable[[Score], dict[str, Any]] | None = None
    summary_columns: tuple[str, ...] = ("measure", "value", "n", "role")
    demo: Callable[[Path], dict[str, Any]] | None = None
    statistics: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    summary_names: Callable[[str], str] | None = None

    def statistical_unit(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``{"unit", "cluster", "strata"}`` of the official measure under ``options`` (e.g. RECOR's
        conversation average resamples whole conversations)."""
        out = {"unit": self.unit, "cluster": self.cluster, "strata": tuple(self.strata)}
        if self.statistics is not None:
            out.update(self.statistics(self.resolve_options(options)))
        return out

    # -- options ------------------------------------------------------------------------------

    def resolve_options(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The benchmark's options with defaults filled in; an unknown option is a TypeError."""
        known = {o.name: o for o in self.options}
        given = dict(options or {})
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise TypeError(f"benchmark {self.name!r} has no option(s) {unknown}; known: {sorted(known)}")
        out = {name: o.default for name, o in known.items()}
        for name, value in given.items():
            o = known[name]
            if value is not None and o.choices is not None and value not in o.choices:
                raise ValueError(f"{name} must be one of {list(o.choices)}, not {value!r}")
            out[name] = value
        return out

    # -- the engine ---------------------------------------------------------------------------

    def load_inputs(self, data: Any = None, split: str | None = None, **options: Any) -> Inputs:
        """Load the reference data once (to score many runs against it: ``score(..., inputs=)``)."""
        opts = self.resolve_options(options)
        return self.load(data, split if split is not None else self.default_split, opts)

    def score(
        self,
        run: Any,
        data: Any = None,
        split: str | None = None,
        *,
        inputs: Inputs | None = None,
        **options: Any,
    ) -> Score:
        """Score one submission officially.

        Args:
            run: the submission (path, text or DataFrame; the benchmark's format).
            data: the data root (default ``$RETECO_DATA``); ignored when ``inputs`` is given.
            split: the split (default: the benchmark's ``default_split``).
            inputs: reference data already loaded with :meth:`load_inputs`.
            **options: the benchmark's options (see ``Benchmark.options``).

        Returns:
            a :class:`Score`.
        """
        opts = self.resolve_options(options)
        split = split if split is not None else self.default_split
        if inputs is None:
            inputs = self.load(data, split, opts)
        report = self.validate(run, inputs, opts)
        measures = list(self.measures(opts))
        long, extra = self.per_query(measures, inputs, report, opts)
        empties = dict(long.attrs.get("empty", {}))
        eval_notes = list(long.attrs.get("notes", []))
        labels = list(dict.fromkeys(long["measure"].tolist())) if len(long) else [self.display(m) for m in measures]
        if self.invalid_scores_zero and not report.valid:
            long = long.assign(value=0.0)
        stat = self.statistical_unit(opts)
        long = self._with_groups(long, inputs, stat)
        official = self.display(measures[0])
        summary = self._summary(long, labels, official, empties)
        value = self._official_value(summary, official)
        if self.summary_names:
            summary["measure"] = summary["measure"].map(self.summary_names)
        valid = bool(report.valid)
        reward = float(self.reward(value, valid, opts)) if self.reward is not None else None
        if reward is not None:
            row = {c: None for c in summary.columns}
            row.update({"measure": "reward", "value": reward, "n": int(summary["n"].iloc[0]) if len(summary) else 0,
                        "role": "reward"})
            summary = pd.concat([summary, pd.DataFrame([row])], ignore_index=True)
        by_group = {g.name: self._group_table(long, g, labels, official, empties) for g in self.groupings}
        notes = list(self.notes(inputs, report, long, opts)) if self.notes is not None else []
        notes += [n for n in eval_notes if n not in notes]
        long.attrs = {"empty": empties}
        score = Score(
            benchmark=self.name,
            split=split,
            official_measure=official,
            official=value,
            valid=valid,
            summary=summary,
            by_group=by_group,
            per_query=self._wide(long, labels, extra, inputs),
            per_query_long=long,
            report=report,
            removed=removed_counts(report),
            reward=reward,
            notes=notes,
            data_problems=list(inputs.problems),
            meta=dict(inputs.meta),
            options=opts,
            unit=stat["unit"],
            aggregation=self.aggregation,
            summary_columns=self.summary_columns,
            keys=self.keys,
            groupings=self.groupings,
            strata=tuple(stat["strata"]),
            cluster=stat["cluster"],
        )
        if self.describe is not None:
            score.meta.update(self.describe(score))
        return score

    def leaderboard(self, runs: Any, data: Any = None, split: str | None = None, **kwargs: Any):
        """Rank several submissions: see :func:`reteco_measures.benchmarks.leaderboard.leaderboard`."""
        from .leaderboard import leaderboard

        return leaderboard(self, runs, data=data, split=split, **kwargs)

    # -- derivations from the per-query frame -------------------------------------------------

    def _with_groups(self, long: pd.DataFrame, inputs: Inputs, stat: Mapping[str, Any]) -> pd.DataFrame:
        cols = list(dict.fromkeys([c for g in self.groupings for c in g.by] + list(stat["strata"])
                                  + ([stat["cluster"]] if stat["cluster"] else [])))
        cols = [c for c in cols if c not in long.columns]
        if not cols or not len(long):
            for c in cols:
                long[c] = pd.Series(dtype=object)
            return long
        groups = group_frame(long["query_id"], inputs.topics, cols)
        return pd.concat([long.reset_index(drop=True), groups[cols].reset_index(drop=True)], axis=1)

    def _summary(self, long: pd.DataFrame, labels: list[str], official: str,
                 empties: Mapping[str, float]) -> pd.DataFrame:
        tidy = aggregate(long, list(self.keys), labels, empties)
        official_keys = dict(self.official_key)

        def role(row) -> str:
            if row["measure"] != official:
                return "diagnostic"
            return "official" if all(row.get(k) == v for k, v in official_keys.items()) else "diagnostic"

        tidy["role"] = [role(r) for r in tidy.to_dict("records")] if len(tidy) else []
        if self.keys and len(tidy):
            # rows in the order the per-query frame lists its key combinations, then measures
            cols = [*self.keys, "measure"]
            combos = {tuple(k): i for i, k in enumerate(long[cols].drop_duplicates().itertuples(index=False))}
            pos = [combos.get(tuple(r), len(combos)) for r in tidy[cols].itertuples(index=False)]
            tidy = tidy.assign(_k=pos).sort_values("_k", kind="stable").drop(columns="_k").reset_index(drop=True)
        return tidy[[*self.keys, "measure", "value", "n", "role"]]

    def _official_value(self, summary: pd.DataFrame, official: str) -> float:
        rows = summary[summary["role"] == "official"]
        if not len(rows):
            rows = summary[summary["measure"] == official]
        return float(rows["value"].iloc[0]) if len(rows) else float("nan")

    def _group_table(self, long: pd.DataFrame, g: Grouping, labels: list[str], official: str,
                     empties: Mapping[str, float]) -> pd.DataFrame:
        measures = [official] if g.official_only else labels
        tidy = aggregate(long, list(g.by), measures, empties, margins=True)
        if g.layout == "tidy":
            return tidy
        col = g.by[0]
        order = list(dict.fromkeys(tidy[col].tolist()))
        wide = tidy.pivot_table(index=col, columns="measure", values="value", aggfunc="first", dropna=False)
        wide = wide.reindex(index=order, columns=measures)
        n = tidy[tidy["measure"] == measures[0]].set_index(col)["n"].reindex(order)
        wide.insert(0, "n", n.to_numpy(dtype=np.int64))
        wide.columns.name = None
        return wide.reset_index()

    def _wide(self, long: pd.DataFrame, labels: list[str], extra: pd.DataFrame | None,
              inputs: Inputs) -> pd.DataFrame:
        index = [*self.keys, "query_id"]
        if not len(long):
            return pd.DataFrame(columns=[*index, *self.per_query_columns, *labels])
        order = long[index].drop_duplicates()
        wide = long.pivot_table(index=index, columns="measure", values="value", aggfunc="first", dropna=False)
        wide = wide.reindex(columns=labels)
        wide.columns.name = None
        wide = order.join(wide, on=index).reset_index(drop=True)
        front = []
        if self.per_query_columns:
            meta = group_frame(wide["query_id"], inputs.topics, [c for c in self.per_query_columns
                                                                 if c == "depth" or (inputs.topics is not None
                                                                                     and c in inputs.topics)])
            for c in self.per_query_columns:
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
        if self.per_query_sort:
            wide = wide.sort_values(list(self.per_query_sort), kind="stable").reset_index(drop=True)
        return wide


# ------------------------------------------------------------------------------------------------
# the result


_GROUP_ATTRS = ("by_group", "meta", "summary", "summary_columns")


@dataclass
class Score:
    """The official score of one submission on one benchmark.

    Attributes:
        benchmark: the benchmark's name.
        split: the split scored (None when the benchmark has none).
        official_measure: the official measure's printed name (``nDCG@10``).
        official: the official value (0 for an invalid submission where the rules say so).
        valid: the submission passed the contract (an invalid one may still have scores).
        summary: ``[*keys,] measure, value, n, role`` — official, diagnostics and ``reward``.
        by_group: the breakdown tables by name (``by_domain``, ``by_depth``, ``grid``, ...).
        per_query: one row per evaluated unit: ids, grouping columns and a column per measure.
        per_query_long: the long per-query frame every table derives from: ``query_id, measure,
            value, weight`` + grouping / strata columns (input of the leaderboard's statistics).
        report: the contract's validation report (``report.run`` = what was scored).
        removed: what the contract removed or rejected, counted (see :func:`removed_counts`).
        reward: the benchmark's reward (None when it has none), after validity / audit gates.
        notes: remarks on the data (unlabelled queries, an incomplete grid, ...).
        data_problems: problems in the reference data.
        meta: descriptive facts (domains, counts, labels source, run name, ...).
        options: the options used.
        unit: the statistical unit of the official measure.

    Benchmark-specific names stay readable as attributes: every ``by_group`` table by its name
    (``score.by_domain``), every ``meta`` entry (``score.n_turns``), ``scores`` (the summary's
    printed columns).
    """

    benchmark: str
    split: str | None
    official_measure: str
    official: float
    valid: bool
    summary: pd.DataFrame
    by_group: dict[str, pd.DataFrame]
    per_query: pd.DataFrame
    per_query_long: pd.DataFrame
    report: ValidationReport
    removed: dict[str, int]
    reward: float | None = None
    notes: list[str] = field(default_factory=list)
    data_problems: list[Problem] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    unit: str = "query"
    aggregation: str = "mean over queries"
    summary_columns: tuple[str, ...] = ("measure", "value", "n", "role")
    keys: tuple[str, ...] = ()
    groupings: tuple[Grouping, ...] = ()
    strata: tuple[str, ...] = ()
    cluster: str | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in _GROUP_ATTRS:
            raise AttributeError(name)
        if name == "scores":
            return self.summary[[c for c in self.summary_columns if c in self.summary.columns]]
        if name in self.by_group:
            return self.by_group[name]
        if name in self.meta:
            return self.meta[name]
        raise AttributeError(f"{type(self).__name__!s} of {self.benchmark!r} has no attribute {name!r}")

    @property
    def official_key(self) -> str:
        """The official measure's key in :meth:`metrics` (``ndcg_10``; iKAT: ``passage_nist_ndcg_5``)."""
        rows = [r for r in self.summary.to_dict("records") if r["role"] == "official"]
        return self._key(rows[0]) if rows else metric_key(self.official_measure)

    def metrics(self) -> dict[str, float | None]:
        """Every summary value under a stable key (see :func:`metric_key`): ``{"ndcg_10": ...,
        "tp_10": ..., "reward": ...}``; iKAT keys carry their task and qrels (``ptkb_org_p_3``).
        NaN becomes None."""
        out: dict[str, float | None] = {}
        for rec in self.summary.to_dict("records"):
            out[self._key(rec)] = _json_number(rec["value"])
        return out

    def _key(self, rec: Mapping[str, Any]) -> str:
        if rec["role"] == "reward":
            return "reward"
        prefix = "_".join(str(rec[k]) for k in self.keys if rec.get(k) is not None)
        key = metric_key(rec["measure"])
        return f"{metric_key(prefix)}_{key}" if prefix else key

    def records(self) -> list[dict[str, Any]]:
        """The summary as JSON-ready records (``[*keys,] measure, key, value, n, role``); ``measure``
        in machine form (:func:`machine_name`), ``key`` from the printed name (:func:`metric_key`)."""
        rows = []
        for rec in self.summary.to_dict("records"):
            rows.append({**{k: rec.get(k) for k in self.keys}, "measure": machine_name(rec["measure"]),
                         "key": self._key(rec),
                         "value": _json_number(rec["value"]), "n": _json_number(rec["n"]), "role": rec["role"]})
        return rows

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        """The score as a JSON-ready dict with stable keys (``score NAME --format json``).

        Keys present for every benchmark: ``benchmark``, ``split``, ``valid``, ``official``
        (``measure``, ``key``, ``value``, ``aggregation``, ``unit``), ``metrics`` (stable key →
        value, see :meth:`metrics`), ``reward`` (null without one), ``scores`` (the summary rows),
        ``validation`` (the contract's report), ``removed`` (counts, see :func:`removed_counts`),
        ``data_problems``, ``notes``, and one key per group table (``by_domain``, ``grid``, ...);
        ``per_query`` with ``per_query=True``. Benchmark-specific facts (``domains``,
        ``queries``, ``turns``, ``run_name``, ...) are added at the top level.

        Every measure name (``official.measure``, each row's ``measure``, the measure columns of
        the group tables and of ``per_query``) is one ``ir_measures.parse_measure`` reads back
        (``nDCG_FC@10``; see :func:`machine_name`); the printed tables keep ``nDCG|FC@10``. The
        ``key`` fields and ``metrics`` keys do not change with the spelling (``ndcg_fc_10``,
        ``map_10``). The ``scores`` row of role ``reward`` carries ``measure: "reward"``: the
        reward is not an ir_measures measure.
        """
        out: dict[str, Any] = {
            "benchmark": self.benchmark,
            "split": self.split,
            "valid": self.valid,
            "official": {"measure": machine_name(self.official_measure), "key": self.official_key,
                         "value": _json_number(self.official), "aggregation": self.aggregation,
                         "unit": self.unit},
            "metrics": self.metrics(),
            "reward": _json_number(self.reward) if self.reward is not None else None,
        }
        legacy = {k: v for k, v in self.meta.items() if not k.startswith("_")}
        out.update(legacy)
        out["scores"] = [{k: v for k, v in r.items() if k in (*self.keys, "key", *self.summary_columns)}
                         for r in self.records()]
        for name, table in self.by_group.items():
            out[name] = frame_records(machine_names(table))
        out["validation"] = self.report.as_dict(self.meta.get("_rows_key", "rows_kept"))
        out["removed"] = dict(self.removed)
        out["data_problems"] = [p.as_dict() for p in self.data_problems]
        out["notes"] = list(self.notes)
        if per_query:
            out["per_query"] = frame_records(machine_names(self.per_query))
        return out


def _json_number(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


def frame_records(frame: pd.DataFrame) -> list[dict]:
    """``frame`` as JSON-ready records: NaN / NA as None, numpy scalars as Python numbers."""
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return [{k: _json_number(v) for k, v in rec.items()} for rec in records]


@functools.lru_cache(maxsize=1024)
def machine_name(label: str) -> str:
    """A measure's printed name in the form programs read back with ``ir_measures.parse_measure``
    (``nDCG|FC@10`` → ``nDCG_FC@10``; ``MAP@10``, ``MRR`` and ``AP(rel=2)@1000`` stay, ir_measures
    parses them); a label that is not a measure (``reward``, ``domain``) is returned unchanged."""
    try:
        return measure_name(label, machine=True)
    except (ValueError, TypeError, KeyError):
        return label


def machine_names(frame: pd.DataFrame, column: str | None = "measure", headers: bool = True) -> pd.DataFrame:
    """``frame`` with measure names in machine form (see :func:`machine_name`): the values of
    ``column`` (a tidy table's ``measure``) and, with ``headers``, the column names that are
    measures (a wide table's ``nDCG|FC@10`` column). Other values and columns are kept."""
    if headers:
        renamed = {c: machine_name(c) for c in frame.columns if isinstance(c, str)}
        renamed = {c: n for c, n in renamed.items() if n != c}
        if renamed:
            frame = frame.rename(columns=renamed)
    if column is None or column not in frame.columns or frame.empty:
        return frame
    names = {v: machine_name(v) for v in pd.unique(frame[column].to_numpy(dtype=object)) if isinstance(v, str)}
    names = {v: n for v, n in names.items() if n != v}
    if not names:
        return frame
    return frame.assign(**{column: frame[column].map(lambda v: names.get(v, v))})


def metric_key(label: str) -> str:
    """A stable, lower-case key for a measure's printed name: ``nDCG@10`` → ``ndcg_10``,
    ``nDCG|FC@10`` → ``ndcg_fc_10``, ``MAP@10`` → ``map_10``, ``AP(rel=2)@1000`` →
    ``ap_rel_2_1000``, ``TurnNDCG(average='conversation')@10`` →
    ``turnndcg_average_conversation_10``. Used for JSON ``metrics`` and platform score files."""
    return re.sub(r"[^0-9a-z]+", "_", str(label).lower()).strip("_")


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


# ------------------------------------------------------------------------------------------------
# the registry


#: benchmark name -> declaration
BENCHMARKS: dict[str, Benchmark] = {}


def register(bench: Benchmark) -> Benchmark:
    """Add a declaration to :data:`BENCHMARKS` (each benchmark module calls this once)."""
    BENCHMARKS[bench.name] = bench
    return bench


def benchmark(name: str) -> Benchmark:
    """The benchmark ``name`` (``reteco-1a``, ``reteco-1b``, ``reteco-2a``, ``ikat-2023``,
    ``chunqiu``, ``spoken``)."""
    from . import _load_all

    _load_all()
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}") from None
