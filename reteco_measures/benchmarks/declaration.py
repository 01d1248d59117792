"""What a benchmark is, declared: `Option`, `Grouping`, `Inputs`, `Benchmark` and its specs
(`CliSpec`, `TableSpec`, `StatsSpec`, `RewardSpec`).

A `Benchmark` declares *what* a benchmark is — how its data is loaded, which contract
validates a submission, the official measure and the diagnostics, the groupings of its tables,
the statistical unit, the reward and its gates. It does no work itself: `Benchmark.score`
runs the one scoring engine (`reteco_measures.benchmarks.scoring.score_submission`) and
`Benchmark.leaderboard` the leaderboard builder
(`reteco_measures.benchmarks.leaderboard.leaderboard`). Those two modules sit above this one
(they import it); each installs its function in `ENGINE` when imported, and
``reteco_measures.benchmarks`` imports both, so this module never imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..contracts.base import ValidationReport
from ..errors import Problem
from ..measures.names import measure_label
from .score import Score

__all__ = ["Option", "Grouping", "Inputs", "Benchmark", "CliSpec", "TableSpec", "StatsSpec", "RewardSpec", "Loader",
           "Validator", "PerQuery", "ENGINE"]

#: the engine behind `Benchmark.score` (``"score"``: `reteco_measures.benchmarks.scoring.score_submission`;
#: ``"stream"``: `reteco_measures.benchmarks.streaming.stream_score`) and `Benchmark.leaderboard`
#: (``"leaderboard"``: `reteco_measures.benchmarks.leaderboard.leaderboard`), installed by those
#: modules when they are imported
ENGINE: dict[str, Callable[..., Any]] = {}


@dataclass(frozen=True)
class Option:
    """A benchmark option: a keyword of `Benchmark.score` and a flag of ``score NAME``.

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
        name: the table's key in `Score.by_group` and in the JSON output (``by_domain``).
        by: the grouping columns (topics columns or ``depth``).
        title: a heading for reports.
        layout: ``'wide'`` (one row per group, ``n`` and a column per measure) or ``'tidy'``
            (``[*by, measure, value, n]`` as `reteco_measures.evaluate` returns).
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
        meta: descriptive facts copied into `Score.meta` (``domains``, ``labels``, ...).
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


Describe = Callable[[Score], dict[str, Any]]
Notes = Callable[[Inputs, ValidationReport, pd.DataFrame, Mapping[str, Any]], list[str]]


@dataclass(frozen=True)
class CliSpec:
    """How a benchmark meets its user: the options and the ``score NAME`` command line.

    Attributes:
        help: one line for ``score --help`` (and the Codabench overview).
        options: the benchmark's options: keywords of `Benchmark.score` and flags of
            ``score NAME``.
        run_arg / run_help: the positional argument of ``score NAME`` and its help.
        demo: ``sample_root -> {"run", "data", "split", **options}``: the keywords of
            `Benchmark.score` that score the bundled sample (``reteco-measures demo``).
    """

    help: str = ""
    options: tuple[Option, ...] = ()
    run_arg: str = "run"
    run_help: str = "the submission"
    demo: Callable[[Path], dict[str, Any]] | None = None


@dataclass(frozen=True)
class TableSpec:
    """How a benchmark's `Score` is laid out: its tables, printed names and remarks.

    Attributes:
        groupings: the breakdown tables (`Grouping`; `Score.table` by name).
        keys: extra key columns of the per-query and summary frames (iKAT: ``task``, ``qrels``).
        official_key: the key values of the official measure's rows (iKAT: passage, nist).
        per_query_columns: topics columns shown beside the per-query values.
        per_query_sort: columns the per-query table is sorted by.
        display: measure → printed name (``AP@10`` → ``MAP@10``).
        summary_columns: the columns of the printed summary table.
        summary_names: ``printed name -> name in the summary`` only (ChunQiu prints ``MAP@10`` in
            its summary and keeps ir_measures' ``AP@10`` per query).
        aggregation: a sentence saying how the official number aggregates.
        notes: ``(inputs, report, per_query long, options) -> [str]``: remarks on the data.
        describe: ``(score) -> dict``: the benchmark's facts (`Score.fact`), also top-level
            fields of the JSON.
    """

    groupings: tuple[Grouping, ...] = ()
    keys: tuple[str, ...] = ()
    official_key: tuple[tuple[str, str], ...] = ()
    per_query_columns: tuple[str, ...] = ()
    per_query_sort: tuple[str, ...] = ()
    display: Callable[[Any], str] = measure_label
    summary_columns: tuple[str, ...] = ("measure", "value", "n", "role")
    summary_names: Callable[[str], str] | None = None
    aggregation: str = "mean over queries"
    notes: Notes | None = None
    describe: Describe | None = None


@dataclass(frozen=True)
class StatsSpec:
    """The statistical unit of the official measure (what tests and intervals resample).

    Attributes:
        unit: the unit the official measure aggregates over (``query``, ``turn``, ...).
        strata: per-query columns whose cells the aggregate weighs (stratified resampling).
        cluster: the per-query column whose groups are resampled together, if any.
        statistics: ``options -> {"unit", "cluster", "strata"}`` overriding the above for some
            options (RECOR's conversation average resamples whole conversations).
    """

    unit: str = "query"
    strata: tuple[str, ...] = ()
    cluster: str | None = None
    statistics: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None


@dataclass(frozen=True)
class RewardSpec:
    """A benchmark's reward (the number an agent-evaluation platform records).

    Attributes:
        compute: ``(official value, valid, options) -> reward``, with the benchmark's gates
            (an invalid submission, a failed trajectory audit) inside.
    """

    compute: Callable[[float, bool, Mapping[str, Any]], float]


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, declared. Score a submission with `score`, rank several with
    `leaderboard`.

    The core fields say what is scored and how; four small specs say the rest:
    ``cli`` (options and command line, `CliSpec`), ``tables`` (layout of the `Score`,
    `TableSpec`), ``stats`` (statistical unit, `StatsSpec`) and ``reward`` (`RewardSpec`,
    None without a reward).

    Attributes:
        name: the preset name (``reteco-1a``).
        title: a human title for report headers.
        measures: ``options -> [official, *diagnostics]`` (ir_measures objects or strings).
        load: ``(data_root, split, options) -> Inputs``.
        validate: ``(run, inputs, options) -> ValidationReport`` (the run contract).
        per_query: ``(measures, inputs, report, options) -> (long, extra)``: the per-query values
            (see `long_per_query`) and optional extra per-query columns indexed by query id.
        contract: the contract's name (``reteco``, ``chunqiu``, ...).
        default_split: the default split (None: the benchmark has no splits).
        invalid_scores_zero: an invalid submission scores 0 on every measure (ChunQiu).
        cli: options and the command line (`CliSpec`).
        tables: the layout of the Score (`TableSpec`).
        stats: the statistical unit (`StatsSpec`).
        reward: the reward (`RewardSpec`), None when there is none.
        stream_unit: how a run *file* is scored in blocks (``score(..., stream=True)``):
            ``(inputs, options) ->`` None when each block holds whole run queries, a function
            mapping run query ids (a Series) to the units one block must hold whole (1b: a step
            topic's query), or a ``str`` saying why a run cannot be streamed under these
            options. None (the default): the benchmark does not stream (its contract judges the
            whole submission at once).
    """

    name: str
    title: str
    measures: Callable[[Mapping[str, Any]], list]
    load: Loader
    validate: Validator
    per_query: PerQuery
    contract: str
    default_split: str | None = "dev"
    invalid_scores_zero: bool = False
    cli: CliSpec = CliSpec()
    tables: TableSpec = TableSpec()
    stats: StatsSpec = StatsSpec()
    reward: RewardSpec | None = None
    stream_unit: Callable[[Inputs, Mapping[str, Any]], Any] | None = None

    def statistical_unit(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``{"unit", "cluster", "strata"}`` of the official measure under ``options`` (e.g. RECOR's
        conversation average resamples whole conversations)."""
        st = self.stats
        out = {"unit": st.unit, "cluster": st.cluster, "strata": tuple(st.strata)}
        if st.statistics is not None:
            out.update(st.statistics(self.resolve_options(options)))
        return out

    # -- options ------------------------------------------------------------------------------

    def resolve_options(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The benchmark's options with defaults filled in; an unknown option is a TypeError."""
        known = {o.name: o for o in self.cli.options}
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
        stream: bool = False,
        **options: Any,
    ) -> Score:
        """Score one submission officially (the engine: `reteco_measures.benchmarks.scoring`).

        Args:
            run: the submission (path, text or DataFrame; the benchmark's format).
            data: the data root (default ``$RETECO_DATA``); ignored when ``inputs`` is given.
            split: the split (default: the benchmark's ``default_split``).
            inputs: reference data already loaded with `load_inputs`.
            stream: read the run *file* in blocks of whole queries (out of core; the same
                values: `reteco_measures.benchmarks.streaming`); a benchmark that cannot
                stream says why (``ValueError``).
            **options: the benchmark's options (see ``CliSpec.options``).

        Returns:
            a `Score`.
        """
        if stream:
            return ENGINE["stream"](self, run, data, split, inputs=inputs, options=options)
        return ENGINE["score"](self, run, data, split, inputs=inputs, options=options)

    def leaderboard(self, runs: Any, data: Any = None, split: str | None = None, **kwargs: Any) -> Any:
        """Rank several submissions: ``rm.leaderboard(self, runs, ...)``, see
        `reteco_measures.benchmarks.leaderboard.leaderboard`; returns its `Leaderboard`."""
        return ENGINE["leaderboard"](self, runs, data=data, split=split, **kwargs)
