"""The result of scoring one submission: `Score`, and its JSON form.

A `Score` is made by the scoring engine (`reteco_measures.benchmarks.scoring`) and
read by reports (`reteco_measures.report.score`), leaderboards and platforms. Every attribute
is declared here: the fields, the ``scores`` view of the summary, the benchmark's group tables
(``by_domain``, ``grid``, ...) and the descriptive facts benchmarks record (``n_turns``,
``run_name``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..contracts.base import ValidationReport
from ..errors import Problem
from ..report.text import frame_records, json_number, machine_name, machine_names, metric_key

__all__ = ["Score"]


class _GroupTable:
    """A table of `Score.by_group` read as an attribute (``score.by_domain``); a benchmark
    without that table has no such attribute (``AttributeError``, ``hasattr`` is False)."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, score: Score | None, owner: type | None = None) -> pd.DataFrame:
        if score is None:
            return self  # type: ignore[return-value]  (the class attribute: this descriptor)
        try:
            return score.by_group[self.name]
        except KeyError:
            raise AttributeError(f"Score of {score.benchmark!r} has no table {self.name!r}; its tables: "
                                 f"{sorted(score.by_group)}") from None


class _Fact:
    """An entry of `Score.meta` read as an attribute (``score.n_turns``); a benchmark that
    does not record it has no such attribute."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, score: Score | None, owner: type | None = None) -> Any:
        if score is None:
            return self
        try:
            return score.meta[self.name]
        except KeyError:
            raise AttributeError(f"Score of {score.benchmark!r} records no {self.name!r}; it records: "
                                 f"{sorted(k for k in score.meta if not k.startswith('_'))}") from None


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
        removed: what the contract removed or rejected, counted (see
            `removed_counts`).
        reward: the benchmark's reward (None when it has none), after validity / audit gates.
        notes: remarks on the data (unlabelled queries, an incomplete grid, ...).
        data_problems: problems in the reference data.
        meta: descriptive facts (domains, counts, labels source, run name, ...).
        options: the options used.
        unit: the statistical unit of the official measure.
        aggregation: a sentence saying how the official number aggregates.
        summary_columns: the columns of the printed summary table (`scores`).
        keys: extra key columns of the summary (iKAT: ``task``, ``qrels``).
        groupings: the benchmark's group tables, declared.
        strata / cluster: how the statistical unit is resampled.

    The benchmarks' group tables and facts are also attributes (``score.by_domain``,
    ``score.n_turns``), declared below; a benchmark without one has no such attribute.
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
    groupings: tuple[Any, ...] = ()  # the benchmark's `Grouping` declarations
    strata: tuple[str, ...] = ()
    cluster: str | None = None

    # -- the benchmarks' group tables (``by_group[name]``) ------------------------------------
    by_domain = _GroupTable("Per domain (RETECO 1a, 1b, 2a): ``domain, n`` and a column per measure.")
    by_depth = _GroupTable("Per conversation depth (RETECO 2a): ``depth, n`` and a column per measure.")
    grid = _GroupTable("Spoken-Query's collection x condition grid of the official measure (tidy).")
    by_collection = _GroupTable("Spoken-Query per collection: ``collection, n`` and a column per measure.")
    by_condition = _GroupTable("Spoken-Query per condition: ``condition, n`` and a column per measure.")

    # -- the benchmarks' facts (``meta[name]``) -----------------------------------------------
    domains = _Fact("The domains scored (RETECO).")
    labels = _Fact("Where the temporal labels came from (RETECO 1a/1b: ``oracle`` or a file).")
    queries = _Fact("Queries scored (RETECO 1a/1b, ChunQiu).")
    n_queries = _Fact("Queries scored (RETECO 1a/1b).")
    steps = _Fact("Steps scored (RETECO 1b; None for 1a).")
    n_steps = _Fact("Steps scored (RETECO 1b; 0 for 1a).")
    turns = _Fact("Turns scored (RETECO 2a).")
    n_turns = _Fact("Turns scored (RETECO 2a).")
    run_name = _Fact("The run's name as its file gives it (iKAT).")
    run_type = _Fact("The run's type as its file gives it (iKAT).")
    passage_score = _Fact("How passage scores were assigned (iKAT ``passage_score`` option).")
    quality = _Fact("The official quality before the reward (Spoken-Query).")
    requests = _Fact("Requests scored (Spoken-Query).")
    invalid_queries = _Fact("Requests the contract found invalid (Spoken-Query).")
    missing_queries = _Fact("Expected requests absent from the run (Spoken-Query).")
    problems = _Fact("The contract's problems as dicts (Spoken-Query).")
    violations = _Fact("The contract's violations as dicts (ChunQiu).")

    @property
    def scores(self) -> pd.DataFrame:
        """The summary with its printed columns (`summary_columns`)."""
        return self.summary[[c for c in self.summary_columns if c in self.summary.columns]]

    @property
    def official_key(self) -> str:
        """The official measure's key in `metrics` (``ndcg_10``; iKAT: ``passage_nist_ndcg_5``)."""
        rows = [r for r in self.summary.to_dict("records") if r["role"] == "official"]
        return self._key(rows[0]) if rows else metric_key(self.official_measure)

    def metrics(self) -> dict[str, float | None]:
        """Every summary value under a stable key (see `metric_key`): ``{"ndcg_10": ...,
        "tp_10": ..., "reward": ...}``; iKAT keys carry their task and qrels (``ptkb_org_p_3``).
        NaN becomes None."""
        out: dict[str, float | None] = {}
        for rec in self.summary.to_dict("records"):
            out[self._key(rec)] = json_number(rec["value"])
        return out

    def _key(self, rec: Mapping[str, Any]) -> str:
        if rec["role"] == "reward":
            return "reward"
        prefix = "_".join(str(rec[k]) for k in self.keys if rec.get(k) is not None)
        key = metric_key(rec["measure"])
        return f"{metric_key(prefix)}_{key}" if prefix else key

    def records(self) -> list[dict[str, Any]]:
        """The summary as JSON-ready records (``[*keys,] measure, key, value, n, role``); ``measure``
        in machine form (`machine_name`), ``key`` from the printed name (`metric_key`)."""
        rows = []
        for rec in self.summary.to_dict("records"):
            rows.append({**{k: rec.get(k) for k in self.keys}, "measure": machine_name(rec["measure"]),
                         "key": self._key(rec),
                         "value": json_number(rec["value"]), "n": json_number(rec["n"]), "role": rec["role"]})
        return rows

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        """The score as a JSON-ready dict with stable keys (``score NAME --format json``).

        Keys present for every benchmark: ``benchmark``, ``split``, ``valid``, ``official``
        (``measure``, ``key``, ``value``, ``aggregation``, ``unit``), ``metrics`` (stable key →
        value, see `metrics`), ``reward`` (null without one), ``scores`` (the summary rows),
        ``validation`` (the contract's report), ``removed`` (counts, see
        `removed_counts`),
        ``data_problems``, ``notes``, and one key per group table (``by_domain``, ``grid``, ...);
        ``per_query`` with ``per_query=True``. Benchmark-specific facts (``domains``,
        ``queries``, ``turns``, ``run_name``, ...) are added at the top level.

        Every measure name (``official.measure``, each row's ``measure``, the measure columns of
        the group tables and of ``per_query``) is one ``ir_measures.parse_measure`` reads back
        (``nDCG_FC@10``; see `machine_name`); the printed tables keep ``nDCG|FC@10``. The
        ``key`` fields and ``metrics`` keys do not change with the spelling (``ndcg_fc_10``,
        ``map_10``). The ``scores`` row of role ``reward`` carries ``measure: "reward"``: the
        reward is not an ir_measures measure.
        """
        out: dict[str, Any] = {
            "benchmark": self.benchmark,
            "split": self.split,
            "valid": self.valid,
            "official": {"measure": machine_name(self.official_measure), "key": self.official_key,
                         "value": json_number(self.official), "aggregation": self.aggregation,
                         "unit": self.unit},
            "metrics": self.metrics(),
            "reward": json_number(self.reward) if self.reward is not None else None,
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


