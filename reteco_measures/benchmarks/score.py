"""The result of scoring one submission: `Score`, and its JSON form.

A `Score` is made by the scoring engine (`reteco_measures.benchmarks.scoring`) and
read by reports (`reteco_measures.report.score`), leaderboards and platforms. It is one class for
every benchmark: the benchmark's group tables (``by_domain``, ``grid``, ...) and the descriptive
facts it records (``n_turns``, ``run_name``, ``violations``, ...) are served by name
(`Score.table`, `Score.fact`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..contracts.base import ValidationReport
from ..errors import Problem
from ..report.text import frame_records, json_number, machine_name, machine_names, metric_key
from .registry import benchmark

__all__ = ["Score", "unscorable_reason"]


_MISSING: Any = object()


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

    A Score is the same class for every benchmark: the benchmark's breakdown tables and its
    descriptive facts are served by name, ``score.table("by_domain")`` and
    ``score.fact("n_turns")`` (`table_names` and `facts` list them), so a new benchmark adds
    tables and facts through its declaration (`TableSpec.groupings`, `TableSpec.describe`) and
    never edits this class. ``declaration`` is the registered `Benchmark` itself.
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

    # -- the benchmark's tables and facts, by name -----------------------------------------

    @property
    def declaration(self) -> Any:
        """The registered `Benchmark` this score is of (``rm.benchmark(score.benchmark)``)."""
        return benchmark(self.benchmark)

    @property
    def table_names(self) -> list[str]:
        """The names of the benchmark's breakdown tables, in declaration order (``by_domain``, ...)."""
        return list(self.by_group)

    def table(self, name: str) -> pd.DataFrame:
        """The breakdown table ``name`` (``score.table("by_domain")``; the same frame as
        ``score.by_group[name]``).

        Raises:
            KeyError: the benchmark has no such table (the message lists the ones it has).
        """
        try:
            return self.by_group[name]
        except KeyError:
            raise KeyError(f"Score of {self.benchmark!r} has no table {name!r}; its tables: "
                           f"{sorted(self.by_group)}") from None

    @property
    def facts(self) -> dict[str, Any]:
        """The benchmark's descriptive facts (``domains``, ``n_turns``, ``run_name``, ``quality``,
        ``violations``, ...; also top-level fields of `to_dict`), by name."""
        return {k: v for k, v in self.meta.items() if not k.startswith("_")}

    def fact(self, name: str, default: Any = _MISSING) -> Any:
        """The fact ``name`` the benchmark recorded (``score.fact("n_turns")``), or ``default``.

        Raises:
            KeyError: the benchmark records no such fact and no ``default`` is given (the message
                lists the facts it records).
        """
        facts = self.facts
        if name in facts:
            return facts[name]
        if default is not _MISSING:
            return default
        raise KeyError(f"Score of {self.benchmark!r} records no fact {name!r}; it records: {sorted(facts)}")

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
        out.update(self.facts)
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


def unscorable_reason(score: Score) -> str | None:
    """Why a scored submission cannot be ranked, or None when it can.

    A submission is *unscorable* when the rows its contract kept share no query (turn) id with the
    units the benchmark evaluates: an empty file, a file of another format, a run for another
    benchmark. Its zeros would say nothing about a system, so a leaderboard lists it under "not
    scored" instead of ranking it. This differs from a *valid* run that scores 0 (ranked) and from
    a run *invalid by the benchmark's rules* that still answers the benchmark's queries (a ChunQiu
    batch with a violation: ranked with its official 0, ``valid`` False and the reason).
    """
    run = score.report.run
    col = "query_id" if "query_id" in run.columns else "turn_id" if "turn_id" in run.columns else None
    long = score.per_query_long
    if len(run):
        if col is None or "query_id" not in long.columns or not len(long):
            return None  # rows, and no evaluated unit to compare them with
        units = set(long["query_id"].astype(str).tolist())
        ids = run[col].astype(str)
        # a sub-unit id counts for its unit: a 1b step topic (``100_1_step1``) for its query
        # (``100_1``) when the official value averages per query
        if ids.isin(units).any() or ids.str.rsplit("_", n=1).str[0].isin(units).any():
            return None
    unknown = [p for p in score.report.errors if p.kind == "unknown_query"]
    if len(run) or unknown:
        n = int(score.removed.get("unknown_query", len(unknown)))
        example = next((p.query_id for p in unknown if p.query_id), None)
        return (f"no query id in common with the {score.benchmark} topics ({n} row(s) of unknown queries"
                + (f", e.g. {example!r}" if example else "") + "): a submission for another benchmark?")
    read = [p for p in score.report.errors if p.kind not in ("empty", "missing_query")]
    if read:
        first = read[0]
        where = f" (line {first.line}: {first.message})" if first.line is not None else f" ({first.message})"
        return f"no readable row: every line was refused{where}"
    return "no row: the file is empty"
