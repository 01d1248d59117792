"""Leaderboards: several submissions to one benchmark, ranked with uncertainty.

`leaderboard` (``rm.leaderboard(bench, runs)``, also ``Benchmark.leaderboard``) loads the reference data once, scores every
submission with the benchmark's engine (its contract first: an invalid ChunQiu batch scores 0 on
every query, as the task rules say), and builds a `Leaderboard` — a
`Comparison` of the ranking measure (the official one by default)
over the submissions' per-query values, which are not evaluated again. The confidence intervals
and paired tests resample the benchmark's statistical unit (queries for 1a, queries after step
averaging for 1b, turns — or conversations with ``average='conversation'`` — for 2a, requests
within collection × condition cells for Spoken-Query; see `reteco_measures.stats.design`).

**Clusters** (the ``cluster`` column). Runs are taken in rank order. The best run opens cluster 1
and is its *leader*; each following run joins the current cluster when its difference from the
leader is not significant (the paired test after the multiple-testing correction over all pairs,
``p_adjusted >= alpha``), and otherwise opens the next cluster as its leader. So every run of a
cluster is statistically indistinguishable from the cluster's best run, and each leader is
significantly worse than the leader above it. (Clusters are not equivalence classes: two runs of
one cluster may differ significantly from each other; the ``pairwise`` table has every pair.)

**Rank intervals** (``rank_low, rank_high``). The bootstrap resamples behind the confidence
intervals (the very draws: `resamples`) each give every
run an aggregate and so a place. A run tied with others in a resample could take any of the tied
places: its *best* place there is ``1 +`` the number of runs strictly above it (competition
ranking, "min"), its *worst* place the number of runs at or above it ("max"). ``rank_low`` is the
lower ``(1 − ci)/2`` percentile of the best places, ``rank_high`` the upper one of the worst places
(the order statistics just outside the percentiles, so both are integers and the interval holds at
least ``ci`` of the resamples). Two identical runs tie in every resample, so each spans 1–2: the
data cannot tell which of them is first. (Min ranks alone would put both at 1–1, average ranks at
1.5–1.5; both would claim a certainty the data does not give.) A run whose aggregate is undefined
in a resample takes the last places there. Ties are exact equality of the resampled aggregates.

**Calibrated leaderboards** (the generation tracks, ``human=`` / ``--human``). The board ranks by
the prediction-powered mean of each run's human-equivalent score
(`reteco_measures.stats.calibrate`, ``calibration="ppi++"`` or ``"ppi"``, ``by="run"``):
``value, ci_low, ci_high`` are the calibrated mean and its normal interval, beside the raw judge
mean ``judge_mean`` with its bootstrap interval ``judge_ci_low, judge_ci_high``, and ``n_human``,
``bias``, ``lam``. The ratings are per run: a ``run`` column (or a ``{run: ratings}`` mapping);
ratings without one serve every run, with calibrate's warning. A run without a rated turn has a
NaN calibrated mean (a warning says so) and ranks last. Rank intervals and clusters of a calibrated
board come from the same turn resamples: in each resample a run's calibrated mean is recomputed
with its λ held at the full-sample value (λ̂'s own estimation error is of smaller order; PPI++,
Angelopoulos, Duchi & Zrnic 2023, Theorem 1); clusters use the paired bootstrap test of the
calibrated differences on those resamples (``calibrated_pairwise``, with the board's correction),
while ``pairwise`` keeps the board's test of the raw judge scores.

**Judged@k**: where the benchmark reports ``Judged@k`` (the share of a run's top ``k`` the qrels
judge), a run whose mean is below ``reteco_measures.stats.judged.JUDGED_RATIO`` (0.8) times the
mean over the ranked runs, and at least ``JUDGED_MIN_GAP`` (0.05) below it, gets a
`DataFormatWarning`: its unjudged documents count as
non-relevant, so its score is a lower bound (``judge holes`` fills them).

**The steps of a board**: every submission scored, the unscorable ones set aside
(``_score_board``); the per-query values of the ranking measure (``_board_frame``); the
comparison (`compare_frame`); the ranking of the plain (``_plain_ranking``) or the calibrated
(``_calibrated_ranking``) board; the table in its documented column order (``_ranking_table``).

**Tie sensitivity**: where the ranking measure breaks ties trec_eval's way and a run has tied
scores, ``tie_min`` / ``tie_max`` give its aggregate under the worst and best order of the tied
documents (`reteco_measures.stats.tie_sensitivity`); the columns appear only when ties
change some value.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ir_measures
import numpy as np
import pandas as pd

from ..errors import (
    EmptyInputWarning,
    InputMismatchError,
    QueryIdMismatchWarning,
    TooFewScoredError,
    UnscorableSubmissionWarning,
    warn,
)
from ..io.judgments import SCALES
from ..io.ratings import read_ratings
from ..query_ids import check_on_mismatch
from ..report.text import frame_records
from ..stats import Comparison, adjust, compare_frame, has_ties, unit_columns
from ..stats.calibrate import METHODS, calibrate
from ..stats.compare import Resamples, file_run_name
from ..stats.judged import judged_warning
from ..stats.options import KeywordDefaults, StatOptions
from ..stats.tests import Paired, bootstrap_pvalues
from ..stats.ties import tie_bounds, tie_range
from .declaration import ENGINE, Benchmark
from .registry import benchmark
from .score import Score, unscorable_reason
from .streaming import reachable_rows, stream_unit

__all__ = ["Leaderboard", "leaderboard", "clusters", "resample_ranks", "rank_intervals", "unscorable_reason",
           "invalid_reason", "TooFewScoredError",
           "judgment_counts",
           "UnscorableSubmissionWarning"]


def invalid_reason(score: Score) -> str:
    """Why a ranked submission is invalid by the benchmark's rules (its first error, with the
    number of errors), or ``""`` for a valid one. Such a run ranks with its official value (a
    ChunQiu batch with a violation: 0)."""
    if score.valid:
        return ""
    errors = score.report.problems_of("error")
    if not errors:
        return "invalid by the benchmark's rules"
    first = errors[0]
    where = f"line {first.line}: " if first.line is not None else ""
    more = f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else ""
    return f"{where}{first.message}{more}"


@dataclass
class Leaderboard(Comparison):
    """A `Comparison` of submissions to one benchmark, with its ranking.

    Attributes (beyond the Comparison's ``summary``, ``pairwise``, ``per_query``, ...):
        benchmark: the benchmark's name.
        measure: the ranking measure (the official one by default).
        ranking: one row per scored submission, best first: ``rank, run, value, ci_low, ci_high,
            rank_low, rank_high, n, cluster, valid, problems, reason`` (``reason``: why a run is
            invalid by the benchmark's rules, ``""`` when valid; + ``tie_min, tie_max`` when ties
            change a value, ``reward`` where the benchmark has one, one column per diagnostic;
            a calibrated board: ``value, ci_low, ci_high`` calibrated, then ``judge_mean,
            judge_ci_low, judge_ci_high, n_human, human_mean, bias, lam``).
        groups: per grouping of the benchmark (``by_domain``, ``by_depth``, ``grid`` ...), a table
            ``run`` × group values of the ranking measure.
        scores: ``{run: Score}`` — every submission's full score.
        failed: ``{run: reason}`` — the submissions *not scored* and not ranked: unreadable, empty,
            or sharing no query id with the benchmark (`unscorable_reason`), in the order given.
        calibration: a calibrated board's `calibrate` table (one row
            per run); empty otherwise.
        calibrated_pairwise: a calibrated board's pairwise tests of the calibrated means: ``run,
            other, delta, p_value, p_adjusted, significant`` (paired bootstrap); empty otherwise.
    """

    benchmark: str = ""
    measure: str = ""
    ranking: pd.DataFrame = field(default_factory=pd.DataFrame)
    groups: dict[str, pd.DataFrame] = field(default_factory=dict)
    scores: dict[str, Score] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    calibration: pd.DataFrame = field(default_factory=pd.DataFrame)
    calibrated_pairwise: pd.DataFrame = field(default_factory=pd.DataFrame)

    def to_records(self) -> list[dict[str, Any]]:
        """The ranking as JSON-ready records."""
        return frame_records(self.ranking)


def clusters(order: Sequence[str], pairwise: pd.DataFrame, alpha: float) -> dict[str, int]:
    """Cluster numbers of runs in rank ``order`` by the leader rule of the module docs.

    ``pairwise`` holds ``run, other, p_adjusted`` for (at least) every pair of runs of ``order``.
    """
    p = {}
    for row in pairwise[["run", "other", "p_adjusted"]].itertuples(index=False):
        p[(row.run, row.other)] = row.p_adjusted
        p[(row.other, row.run)] = row.p_adjusted
    out: dict[str, int] = {}
    leader, number = None, 0
    for run in order:
        if leader is None:
            leader, number = run, 1
        else:
            pv = p.get((leader, run), np.nan)
            if not (np.isnan(pv) or pv >= alpha):  # significantly different from the leader
                leader, number = run, number + 1
        out[run] = number
    return out


def resample_ranks(aggregates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The best and worst place of every run in every resample (module docs, "Rank intervals").

    Args:
        aggregates: ``(B, R)`` each run's aggregate in each resample (higher is better; NaN:
            undefined, placed last).

    Returns:
        ``(best, worst)``, both ``(B, R)`` integer arrays: ``best`` = 1 + the number of runs
        strictly above (competition ranking), ``worst`` = the number of runs at or above.
    """
    a = np.asarray(aggregates, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"aggregates must be a (resamples, runs) array, not of shape {a.shape}")
    B, R = a.shape
    a = np.where(np.isnan(a), -np.inf, a)
    order = np.argsort(-a, axis=1, kind="stable")
    s = np.take_along_axis(a, order, axis=1)  # each row in descending order
    pos = np.broadcast_to(np.arange(R), (B, R))
    opens = np.ones((B, R), dtype=bool)
    opens[:, 1:] = s[:, 1:] != s[:, :-1]
    closes = np.ones((B, R), dtype=bool)
    closes[:, :-1] = s[:, :-1] != s[:, 1:]
    first = np.maximum.accumulate(np.where(opens, pos, 0), axis=1)
    last = np.minimum.accumulate(np.where(closes, pos, R - 1)[:, ::-1], axis=1)[:, ::-1]
    best = np.empty((B, R), dtype=np.int64)
    worst = np.empty((B, R), dtype=np.int64)
    np.put_along_axis(best, order, first + 1, axis=1)
    np.put_along_axis(worst, order, last + 1, axis=1)
    return best, worst


def rank_intervals(aggregates: np.ndarray, ci: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """``(rank_low, rank_high)`` per run from ``(B, R)`` resampled aggregates: the lower
    ``(1 − ci)/2`` percentile of the best places and the upper one of the worst places
    (`resample_ranks`; numpy's ``method="lower"`` / ``"higher"``: integer order statistics,
    the interval taken outwards)."""
    best, worst = resample_ranks(aggregates)
    q = (1.0 - ci) / 2.0
    low = np.quantile(best, q, axis=0, method="lower").astype(np.int64)
    high = np.quantile(worst, 1.0 - q, axis=0, method="higher").astype(np.int64)
    return low, high


def _run_items(runs: Any) -> list[tuple[str, Any]]:
    """``[(name, run)]`` from a mapping, a list of paths or a folder; a file's run name is
    `file_run_name` of it, as in ``rm.compare``."""
    if isinstance(runs, Mapping):
        return [(str(k), v) for k, v in runs.items()]
    if isinstance(runs, (str, os.PathLike)) and Path(runs).is_dir():
        runs = sorted(p for p in Path(runs).iterdir() if p.is_file() and not p.name.startswith("."))
    if isinstance(runs, (str, os.PathLike)):
        raise TypeError("runs must be a {name: run} mapping, a list of run files or a folder of them")
    items: list[tuple[str, Any]] = []
    seen: dict[str, int] = {}
    for r in runs:
        name = file_run_name(r)
        if name in seen:  # same stem twice: keep both, numbered
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        else:
            seen[name] = 1
        items.append((name, r))
    return items


def _official_rows(frame: pd.DataFrame, bench: Benchmark) -> pd.DataFrame:
    """The rows of a Score's table (``per_query_long``, ``summary``) under the official key (iKAT:
    passage task, NIST qrels; every row elsewhere)."""
    for k, v in bench.tables.official_key:
        frame = frame[frame[k] == v]
    return frame


#: the statistical settings of a board given none (fewer resamples than ``rm.compare``'s 10,000)
_STATS = KeywordDefaults(StatOptions(n_resamples=2_000))


def leaderboard(
    bench: Benchmark | str,
    runs: Any,
    *,
    data: Any = None,
    split: str | None = None,
    measure: str | None = None,
    test: str = _STATS.test,
    correction: str | None = _STATS.correction,
    alpha: float = _STATS.alpha,
    ci: float = _STATS.ci,
    n_resamples: int = _STATS.n_resamples,
    seed: int = _STATS.seed,
    stats: StatOptions | None = None,
    ties: bool = True,
    workers: int | None = None,
    human: Any = None,
    calibration: str = "ppi++",
    on_mismatch: str = "error",
    stream: bool = False,
    **options: Any,
) -> Leaderboard:
    """Score every submission and rank them by ``measure`` with confidence intervals, paired tests
    over every pair (``test``, ``correction``) and significance clusters (module docs).

    Args:
        bench: the benchmark, or its name (``"reteco-1a"``).
        runs: ``{name: run}``, a list of run files or a folder (names from the file names by
            `file_run_name`, as ``rm.compare`` names them;
            two files of one name are kept, the second as ``name#2``).
        data, split, options: as `Benchmark.score` (the reference data is loaded once).
        measure: the ranking measure's printed name (default: the official measure).
        test, correction, alpha, ci, n_resamples, seed: as `reteco_measures.compare` (but 2,000
            resamples by default).
        stats: the six settings above as one `StatOptions`; giving
            it and one of the six keywords is a ``TypeError``.
        ties: compute tie sensitivity (worst / best order of tied scores) for the ranking measure.
        workers: processes scoring the submissions (default: one per CPU, at most 8, when there
            are at least 8 submissions; 1 = in this process). The numbers do not depend on it.
        human: generation tracks only: human ratings of some judged turns (a CSV/TSV/JSONL file or
            DataFrame ``run, turn_id, dimension, rater, score``, or ``{run: ratings}``; see
            `reteco_measures.stats.calibrate`): rank by the calibrated means (module docs).
        calibration: the calibration estimator with ``human``: ``"ppi++"`` (default) or ``"ppi"``.
        on_mismatch: ``'error'`` (default): a submission whose query ids do not meet the
            benchmark's (`QueryIdMismatchWarning`'s cases: also
            ids that only meet in another form, which ``query_ids='normalize'`` maps on the
            RETECO benchmarks) or an empty input raises
            `InputMismatchError` naming the submission, as
            ``rm.compare`` does; ``'warn'``: the warning is given and the board is built anyway.
            Any other submission that cannot be scored (unreadable, empty, no query id in common
            with the benchmark: `unscorable_reason`) is not ranked: it is listed in ``failed``
            with its reason and an `UnscorableSubmissionWarning` names it.
        stream: score each run *file* in blocks of whole queries (``Benchmark.score(...,
            stream=True)``, `reteco_measures.benchmarks.streaming`): the same board, one block
            of a run in memory at a time.

    Raises:
        InputMismatchError: inputs that do not match, unless ``on_mismatch='warn'``.
        TooFewScoredError: fewer than two submissions could be scored (a ``ValueError``).
        TypeError: ``stats`` together with one of the six keywords it replaces.

    Returns:
        a `Leaderboard`.
    """
    st = _STATS.resolve(stats, test=test, correction=correction, alpha=alpha, ci=ci, n_resamples=n_resamples,
                        seed=seed)
    check_on_mismatch(on_mismatch)
    bench = _board_benchmark(bench, human, calibration)
    opts = bench.resolve_options(options)
    inputs = bench.load(data, split if split is not None else bench.default_split, opts)
    tie_measure = _tie_measure(bench, opts, measure, ties)
    if stream:
        stream_unit(bench, inputs, opts)  # a benchmark that cannot stream says why, once
    scores, failed, bounds = _score_board(bench, _run_items(runs), inputs, split, {**opts, "stream": True} if stream
                                          else opts, workers, tie_measure, on_mismatch)
    first = next(iter(scores.values()))
    label = measure or first.official_measure
    frame, tie_changed = _board_frame(bench, scores, inputs, opts, label, bounds if tie_measure is not None else {})
    stat = bench.statistical_unit(opts)
    empties = {label: first.per_query_long.attrs.get("empty", {}).get(label, float("nan"))}
    comp = compare_frame(frame, measures=[label], runs=list(scores), empties=empties,
                         units={label: (stat["unit"], " x ".join(stat["strata"]) or None)},
                         stats=st, keep_resamples=True)
    # a benchmark whose official number is not the mean over its units (RETECO --rules kit: rounded
    # per-domain means averaged over domains) ranks by that number; intervals and tests stay per unit
    own_number = label == first.official_measure and any(s.aggregation != bench.tables.aggregation
                                                        for s in scores.values())
    if human is None:
        ranked = _plain_ranking(comp, label, scores, st, own_number)
    else:
        ranked = _calibrated_ranking(comp, label, scores, human, calibration, st, opts)
    extra = {"ties_change_values": tie_changed, **({"calibration": calibration} if human is not None else {}),
             **({"value": f"the official number ({first.aggregation}); rank intervals and tests are over "
                          f"the per-{stat['unit']} values"} if own_number else {})}
    return _assemble(bench, comp, ranked, scores, failed, frame, label, extra)


# ------------------------------------------------------------------------------------------------
# the steps of a board: scoring, the per-query frame, the plain or calibrated ranking, assembly


def _board_benchmark(bench: Benchmark | str, human: Any, calibration: str) -> Benchmark:
    """The board's benchmark (by name or as given), checked against the calibration arguments."""
    if isinstance(bench, str):
        bench = benchmark(bench)
    if human is not None and bench.contract != "judgments":
        raise ValueError(f"human ratings (--human) calibrate the judged generation tracks (reteco-2b, reteco-2c, "
                         f"ikat-2023-generation); {bench.name} is not one")
    if calibration not in METHODS:
        raise ValueError(f"calibration must be one of {', '.join(METHODS)}, not {calibration!r}")
    return bench


def _tie_measure(bench: Benchmark, opts: dict, measure: str | None, ties: bool) -> Any:
    """The measure whose tie sensitivity the board computes (the official one of a RETECO board
    breaking ties trec_eval's way), or None."""
    measure_list = list(bench.measures(opts))
    official_label = bench.tables.display(measure_list[0])
    if ties and (measure is None or measure == official_label) and bench.contract == "reteco" \
            and opts.get("tie_break", "trec_eval") == "trec_eval" and not isinstance(measure_list[0], str):
        return measure_list[0]
    return None


def _score_board(bench: Benchmark, items: list[tuple[str, Any]], inputs: Any, split: str | None, opts: dict,
                 workers: int | None, tie_measure: Any, on_mismatch: str
                 ) -> tuple[dict[str, Score], dict[str, str], dict[str, pd.DataFrame]]:
    """Every scorable submission's Score, the submissions not scored (with their reasons, in the
    order given; an `UnscorableSubmissionWarning` names them) and the tie bounds of the runs with
    ties. A submission whose inputs do not match raises `InputMismatchError` with
    ``on_mismatch='error'``; fewer than two scored submissions raise `TooFewScoredError`."""
    with warnings.catch_warnings():
        if on_mismatch == "error":
            # the single-run checks stop a submission (also in worker processes, which get these
            # filters); its failure is then refused as a whole below, never ranked on zeros
            warnings.simplefilter("error", QueryIdMismatchWarning)
            warnings.simplefilter("error", EmptyInputWarning)
        scores, failed, bounds = _score_all(bench, items, inputs, split, opts, workers, tie_measure)
    for name, error in failed.items():
        if isinstance(error, _Mismatch):
            raise InputMismatchError(f"submission {name!r}: {error}")
    for name in list(scores):
        reason = unscorable_reason(scores[name])
        if reason is not None:  # never ranked on zeros: listed under "not scored" with the reason
            failed[name] = reason
            del scores[name]
            bounds.pop(name, None)
    failed = {name: failed[name] for name, _ in items if name in failed}  # in the order given
    if failed:
        warn(f"{bench.name} leaderboard: {len(failed)} submission(s) not scored and not ranked: "
             + "; ".join(f"{name}: {msg}" for name, msg in failed.items()), UnscorableSubmissionWarning)
    if len(scores) < 2:
        raise TooFewScoredError(list(scores), failed)
    return scores, failed, bounds


def _board_frame(bench: Benchmark, scores: dict[str, Score], inputs: Any, opts: dict, label: str,
                 bounds: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, bool]:
    """``run, query_id, measure, value, weight`` (+ ``unit, stratum``; + ``tie_min, tie_max`` with
    tie ``bounds``) of the ranking measure, from the Scores' per-query frames (nothing is evaluated
    again), and whether ties change some value."""
    parts = []
    for name, score in scores.items():
        rows = _official_rows(score.per_query_long, bench)
        rows = rows[rows["measure"] == label]
        if not len(rows):
            raise ValueError(f"no measure {label!r} in the scores of {bench.name}; "
                             f"choose one of {list(dict.fromkeys(score.per_query_long['measure']))}")
        parts.append(rows[["query_id", "measure", "value", "weight"]].assign(run=name))
    frame = pd.concat(parts, ignore_index=True)
    measure_objs = {bench.tables.display(m) if not isinstance(m, str) else m: m for m in bench.measures(opts)}
    m_obj = measure_objs.get(label)
    if not isinstance(m_obj, str) and m_obj is not None:
        cols = unit_columns(m_obj, frame["query_id"], inputs.topics)
        frame["unit"] = cols["unit"].to_numpy()
        frame["stratum"] = cols["stratum"].to_numpy()
    if bounds:
        return _with_ties(frame, bounds)
    return frame, False


@dataclass
class _Ranked:
    """A board's runs in rank order, with what its mode (plain or calibrated) shows.

    ``shown``: the columns after ``rank, run`` (``value, ci_low, ci_high`` [, ``judge_*``]);
    ``after``: the mode's columns after the judgment counts (calibrated: ``n_human`` ...);
    ``ranked``: the Comparison's summary rows in rank order (``n``, ``tie_min``, ``tie_max``)."""

    order: list[str]
    shown: dict[str, np.ndarray]
    rank_low: np.ndarray
    rank_high: np.ndarray
    clusters: dict[str, int]
    ranked: pd.DataFrame
    after: dict[str, np.ndarray] = field(default_factory=dict)
    calibration: pd.DataFrame = field(default_factory=pd.DataFrame)
    calibrated_pairwise: pd.DataFrame = field(default_factory=pd.DataFrame)


def _rank(names: list[str], values: np.ndarray, draws: np.ndarray, pairwise: pd.DataFrame, st: StatOptions
          ) -> tuple[list[str], list[int], np.ndarray, np.ndarray, dict[str, int]]:
    """``(order, at, rank_low, rank_high, clusters)``: best value first (NaN last, ties in the
    order given), ``at`` the positions of ``order`` in ``names``, the rank intervals from
    ``draws`` and the clusters from ``pairwise`` (module docs)."""
    low, high = rank_intervals(draws, st.ci)
    pos = {r: i for i, r in enumerate(names)}
    order = sorted(names, key=lambda r: (-_sortable(values[pos[r]]), pos[r]))
    at = [pos[r] for r in order]
    return order, at, low[at], high[at], clusters(order, pairwise, st.alpha)


def _plain_ranking(comp: Comparison, label: str, scores: dict[str, Score], st: StatOptions,
                   own_number: bool) -> _Ranked:
    """The ranking of a board of the measure's values (or the benchmark's own official number,
    whose intervals are then not shown), with the Comparison's tests and resamples."""
    names = list(scores)
    summary = comp.summary.set_index("run")
    values = summary.loc[names, "value"].to_numpy(dtype=np.float64)
    if own_number:
        values = np.array([scores[r].official for r in names], dtype=np.float64)
    order, at, low, high, cl = _rank(names, values, comp.resamples[(label,)].aggregates, comp.pairwise, st)
    ranked = summary.loc[order]
    shown = {col: ranked[col].to_numpy(dtype=np.float64) for col in ("value", "ci_low", "ci_high")}
    if own_number:  # the intervals are of the mean over units, not of this number: not shown beside it
        shown = {"value": values[at], "ci_low": np.full(len(at), np.nan), "ci_high": np.full(len(at), np.nan)}
    return _Ranked(order, shown, low, high, cl, ranked)


def _calibrated_ranking(comp: Comparison, label: str, scores: dict[str, Score], human: Any, method: str,
                        st: StatOptions, opts: dict) -> _Ranked:
    """The ranking of a calibrated board (module docs): the calibrated means and their intervals,
    the raw judge means beside them, rank intervals and clusters from the calibrated resamples."""
    names = list(scores)
    summary = comp.summary.set_index("run")
    dim = _dimension(label)
    table = _calibrate(scores, names, human, method, st.ci, dim, opts)
    values = table["calibrated"].to_numpy(dtype=np.float64)
    draws = _calibrated_resamples(comp.resamples[(label,)], scores, names, human, table, dim)
    pairwise = _bootstrap_pairwise(names, values, draws, st.correction, st.alpha)
    order, at, low, high, cl = _rank(names, values, draws, pairwise, st)
    ranked = summary.loc[order]
    cal = table.iloc[at]
    shown = {"value": cal["calibrated"].to_numpy(dtype=np.float64),
             "ci_low": cal["ci_low"].to_numpy(dtype=np.float64),
             "ci_high": cal["ci_high"].to_numpy(dtype=np.float64),
             "judge_mean": ranked["value"].to_numpy(dtype=np.float64),
             "judge_ci_low": ranked["ci_low"].to_numpy(dtype=np.float64),
             "judge_ci_high": ranked["ci_high"].to_numpy(dtype=np.float64)}
    after = {col: cal[col].to_numpy() for col in ("n_human", "human_mean", "bias", "lam")}
    after["n_human"] = after["n_human"].astype(np.int64)
    return _Ranked(order, shown, low, high, cl, ranked, after=after, calibration=table,
                   calibrated_pairwise=pairwise)


def _assemble(bench: Benchmark, comp: Comparison, ranked: _Ranked, scores: dict[str, Score], failed: dict[str, str],
              frame: pd.DataFrame, label: str, extra: dict[str, Any]) -> Leaderboard:
    """The `Leaderboard`: the Comparison's tables, the ranking table, the group tables and the
    parameters (the Comparison's, then how clusters and rank intervals are made, then ``extra``)."""
    params = {**comp.params, "clusters": "leader rule", "ties_change_values": extra.pop("ties_change_values"),
              "rank_intervals": "best/worst place percentiles over the bootstrap resamples", **extra}
    fields = {k: getattr(comp, k) for k in ("summary", "pairwise", "per_query", "design", "runs", "measures",
                                            "names")}
    groups = {g.name: _group_table(scores, ranked.order, g, label) for g in bench.tables.groupings}
    return Leaderboard(**fields, params=params, benchmark=bench.name, measure=label,
                       ranking=_ranking_table(ranked, comp, scores, bench, frame, label), groups=groups,
                       scores=scores, failed=failed, calibration=ranked.calibration,
                       calibrated_pairwise=ranked.calibrated_pairwise)


def _ranking_table(r: _Ranked, comp: Comparison, scores: dict[str, Score], bench: Benchmark, frame: pd.DataFrame,
                   label: str) -> pd.DataFrame:
    """`Leaderboard.ranking`: the ranked runs' columns in their documented order."""
    order = r.order
    ranking = pd.DataFrame({
        "rank": np.arange(1, len(order) + 1),
        "run": order,
        **r.shown,
        "rank_low": r.rank_low,
        "rank_high": r.rank_high,
        "n": r.ranked["n"].to_numpy(dtype=np.int64),
        "cluster": [r.clusters[run] for run in order],
        "valid": [scores[run].valid for run in order],
        "problems": [len(scores[run].report.errors) for run in order],
        "reason": [invalid_reason(scores[run]) for run in order],
    })
    if bench.contract == "judgments":
        _turn_counts(ranking, scores, frame, _dimension(label))
    for col, values in r.after.items():
        ranking[col] = values
    if "tie_min" in comp.summary.columns:
        ranking["tie_min"] = r.ranked["tie_min"].to_numpy(dtype=np.float64)
        ranking["tie_max"] = r.ranked["tie_max"].to_numpy(dtype=np.float64)
    first = next(iter(scores.values()))
    if first.reward is not None:
        ranking["reward"] = [scores[run].reward for run in order]
    for diag in _diagnostics(first, bench, label):
        column = [_summary_value(scores[run], bench, diag) for run in order]
        if bench.contract == "judgments" and np.isnan(column).all():
            continue  # a dimension no submission was judged on
        ranking[diag] = column
    for col in [c for c in ranking.columns if str(c).startswith("Judged@")]:
        # a run whose top k is judged far less than the pooled runs' scores low for unjudged documents
        judged_warning(dict(zip(ranking["run"], ranking[col], strict=True)))
    return ranking


# ------------------------------------------------------------------------------------------------
# calibrated leaderboards (generation tracks)


def _dimension(label: str) -> str:
    """The judged dimension of a Likert ranking measure (``Likert(dimension='x')`` → ``x``)."""
    return str(ir_measures.parse_measure(label).params["dimension"])


def judgment_counts(score: Any, dimension: str) -> dict[str, int]:
    """Of the turns a generation Score evaluated, how many have a valid judgment on ``dimension``
    (``judged``), an invalid one only (``invalid``) and none at all (``missing``: a target the
    submission did not answer or that was not judged)."""
    long = score.per_query_long
    units = pd.Index(long.loc[long["measure"] == f"Likert(dimension='{dimension}')", "query_id"].astype(str))
    run = score.report.run
    mine = run[run["dimension"] == dimension] if len(run) else run
    judged = pd.Index(mine["turn_id"].astype(str)) if len(mine) else pd.Index([])
    valid = pd.Index(mine.loc[mine["valid"].astype(bool), "turn_id"].astype(str)) if len(mine) else pd.Index([])
    has_valid = units.isin(valid)
    has_any = units.isin(judged)
    return {"judged": int(has_valid.sum()), "invalid": int((has_any & ~has_valid).sum()),
            "missing": int((~has_any).sum())}


def _turn_counts(ranking: pd.DataFrame, scores: dict[str, Score], frame: pd.DataFrame, dim: str) -> None:
    """A generation board's ``invalid`` and ``missing`` counts per run (`judgment_counts`; ``n`` is
    the turns its mean is over), and ``turn_set`` when the runs' means are over different sets of
    turns: runs of one letter average the same turns (``A`` = the first ranked run's set)."""
    counts = [judgment_counts(scores[r], dim) for r in ranking["run"]]
    ranking["invalid"] = np.array([c["invalid"] for c in counts], dtype=np.int64)
    ranking["missing"] = np.array([c["missing"] for c in counts], dtype=np.int64)
    valued = frame[frame["value"].notna()]
    sets = valued.groupby("run", sort=False)["query_id"].agg(lambda q: frozenset(q.astype(str)))
    keys = [sets.get(r, frozenset()) for r in ranking["run"]]
    if len(set(keys)) > 1:
        letters: dict[frozenset, str] = {}
        for k in keys:
            letters.setdefault(k, chr(ord("A") + len(letters)) if len(letters) < 26 else f"S{len(letters) + 1}")
        ranking["turn_set"] = [letters[k] for k in keys]


def _judged(score: Score) -> pd.DataFrame:
    """The valid judgment rows the board scored (after the benchmark's checks, e.g. its targets)."""
    run = score.report.run
    return run.loc[run["valid"].astype(bool), ["turn_id", "dimension", "score", "repeat"]].reset_index(drop=True)


def _calibrate(scores: dict[str, Score], names: list[str], human: Any, method: str, ci: float, dim: str,
               opts: dict) -> pd.DataFrame:
    """`calibrate` of every run's judgments (``by="run"``), in ``names`` order."""
    table = calibrate({r: _judged(scores[r]) for r in names}, human, method=method, ci=ci,
                      scale=scores[names[0]].meta["scale"], dimensions=[dim], by="run",
                      aggregate=opts.get("aggregate", "mean"))
    return table.set_index("run").reindex(names).rename_axis("run").reset_index()


def _human_table(human: Any, names: list[str]) -> dict[str, pd.DataFrame]:
    """``{run: read_ratings frame}``: a mapping as given; a table with a ``run`` column split by it;
    otherwise the same ratings for every run (as calibrate uses them)."""
    if isinstance(human, Mapping):
        return {str(k): read_ratings(v, [], keep_lines=True) for k, v in human.items()}
    path = None
    if isinstance(human, pd.DataFrame):
        frame = human
    else:
        path = Path(human)
        if path.suffix.lower() in (".csv", ".tsv"):
            frame = pd.read_csv(path, sep="\t" if path.suffix.lower() == ".tsv" else ",", dtype=str,
                                keep_default_na=False, encoding="utf-8-sig")
        else:
            frame = pd.read_json(path, lines=True, dtype=False)
    # the ratings keep the file and line each came from: a problem found later names them
    if "run" not in frame.columns:
        shared = read_ratings(frame, [], keep_lines=True, path=path)
        return {r: shared for r in names}
    return {str(k): read_ratings(part.drop(columns=["run"]), [], keep_lines=True, path=path)
            for k, part in frame.groupby(frame["run"].astype(str), sort=False)}


def _calibrated_resamples(res: Resamples, scores: dict[str, Score], names: list[str], human: Any,
                          table: pd.DataFrame, dim: str) -> np.ndarray:
    """``(B, R)`` each run's calibrated mean in each of the board's turn resamples, λ held at its
    full-sample value: ``λ·mean_w(f over unrated turns) + mean_w(Y − λ·f over rated turns)`` with
    the resample's multiplicities ``w`` (λ = 0 in a resample without an unrated turn; NaN without
    a rated one). At multiplicities 1 it is `calibrate`'s estimate."""
    P = res.paired
    units = pd.Index(P.units)
    f = P.unit_values()  # (R, U) the judge's value of each turn (NaN: no valid judgment)
    low, high = SCALES[scores[names[0]].meta["scale"]]
    ratings = _human_table(human, names)
    Y = np.full(f.shape, np.nan)
    for i, r in enumerate(names):
        part = ratings.get(r)
        if part is None or not len(part):
            continue
        part = part[(part["dimension"] == dim) & part["score"].between(low, high)]  # as calibrate: off-scale left out
        item = ((part["score"].astype(np.float64) - low) / (high - low)).groupby(part["turn_id"]).mean()
        Y[i] = item.reindex(units).to_numpy(dtype=np.float64)
    has_f = ~np.isnan(f)
    rated = has_f & ~np.isnan(Y)
    unrated = has_f & ~rated
    lam = table["lam"].to_numpy(dtype=np.float64)[:, None]
    lam = np.where(np.isnan(lam), 1.0, lam)
    f0, Y0 = np.where(has_f, f, 0.0), np.where(rated, Y, 0.0)
    C = res.counts()
    with np.errstate(invalid="ignore", divide="ignore"):
        n_u, n_l = C @ unrated.T, C @ rated.T
        imputed = (C @ (f0 * unrated).T) / n_u
        rect_f = (C @ (f0 * rated).T) / n_l
        rect_y = (C @ Y0.T) / n_l
    lam_b = np.where(n_u > 0, lam.T, 0.0)
    out = rect_y - lam_b * rect_f + np.where(n_u > 0, lam_b * imputed, 0.0)
    return np.where(n_l > 0, out, np.nan)


def _bootstrap_pairwise(names: list[str], values: np.ndarray, draws: np.ndarray, correction: str | None,
                        alpha: float) -> pd.DataFrame:
    """Every pair's paired bootstrap test on the resampled calibrated means (as the board's
    ``'bootstrap'`` test: the distribution of δ shifted to the null), corrected over all pairs."""
    ii, jj = np.triu_indices(len(names), k=1)
    empty = np.zeros((len(names), 0))
    P = Paired(list(names), np.array([], dtype=object), np.array([], dtype=np.int64), empty, empty,
               values, np.zeros(len(names), dtype=np.int64))
    p = bootstrap_pvalues(P, ii, jj, draws)
    corr = None if correction in (None, "none") else correction
    p_adj = adjust(p, corr)
    run = np.asarray(names, dtype=object)
    return pd.DataFrame({"run": run[ii], "other": run[jj], "delta": values[ii] - values[jj], "p_value": p,
                         "p_adjusted": p_adj, "significant": p_adj < alpha})


# ------------------------------------------------------------------------------------------------
# scoring the submissions, in this process or in a pool of worker processes

_WORKER: dict[str, Any] = {}


class _Mismatch(str):
    """The failure text of a submission whose inputs do not match (a query-id or empty-input
    warning turned into an error by ``on_mismatch='error'``): refused as a whole, never listed."""


def _score_one(bench: Benchmark, name: str, run: Any, inputs: Any, split: str | None, opts: dict,
               tie_measure: Any = None) -> tuple[str, Score | None, str | None, pd.DataFrame | None]:
    try:
        score = bench.score(run, inputs=inputs, split=split, **opts)
    except (QueryIdMismatchWarning, EmptyInputWarning) as exc:
        return name, None, _Mismatch(exc), None
    except Exception as exc:  # one unreadable submission must not stop the board
        return name, None, f"{type(exc).__name__}: {exc}", None
    bounds = _tie_bounds(score, inputs, tie_measure) if tie_measure is not None else None
    return name, score, None, bounds


def _init_worker(name: str, inputs: Any, split: str | None, opts: dict, filters: list, tie_measure: Any) -> None:
    import warnings

    warnings.filters[:] = filters  # the caller's warning policy (the CLI turns some into errors)
    _WORKER.update(bench=benchmark(name), inputs=inputs, split=split, opts=opts, tie_measure=tie_measure)


def _score_in_worker(item: tuple[str, Any]) -> tuple[str, Score | None, str | None, pd.DataFrame | None]:
    w = _WORKER
    return _score_one(w["bench"], item[0], item[1], w["inputs"], w["split"], w["opts"], w["tie_measure"])


def _picklable(obj: Any) -> bool:
    import pickle

    try:
        pickle.dumps(obj)
        return True
    except Exception:
        return False


def _score_all(bench: Benchmark, items: list[tuple[str, Any]], inputs: Any, split: str | None, opts: dict,
               workers: int | None, tie_measure: Any = None
               ) -> tuple[dict[str, Score], dict[str, str], dict[str, pd.DataFrame]]:
    """Every submission's Score (in the order given), the submissions that failed, and the tie
    bounds of the runs with ties (when ``tie_measure`` is given)."""
    if workers is None:
        workers = min(os.cpu_count() or 1, 8) if len(items) >= 8 else 1
    workers = max(1, min(int(workers), len(items)))
    results: list | None = None
    if workers > 1 and all(_picklable(run) for _, run in items[:1]):
        import multiprocessing
        import warnings
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        filters = [f for f in warnings.filters if _picklable(f)]
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                     initializer=_init_worker,
                                     initargs=(bench.name, inputs, split, opts, filters, tie_measure)) as pool:
                results = list(pool.map(_score_in_worker, items, chunksize=max(1, len(items) // (4 * workers))))
        except (BrokenProcessPool, OSError, RuntimeError):  # no processes here: score in this one
            results = None
    if results is None:
        results = [_score_one(bench, name, run, inputs, split, opts, tie_measure) for name, run in items]
    scores = {name: score for name, score, _, _ in results if score is not None}
    failed = {name: error for name, _, error, _ in results if error is not None}
    bounds = {name: b for name, _, _, b in results if b is not None}
    return scores, failed, bounds


def _sortable(value: Any) -> float:
    v = float(value)
    return -np.inf if np.isnan(v) else v


def _diagnostics(score: Score, bench: Benchmark, label: str) -> list[str]:
    rows = _official_rows(score.summary, bench)
    return [m for m in rows["measure"].tolist() if m not in (label, "reward")]


def _summary_value(score: Score, bench: Benchmark, measure: str) -> float:
    rows = _official_rows(score.summary, bench)
    hit = rows[rows["measure"] == measure]["value"]
    return float(hit.iloc[0]) if len(hit) else float("nan")


def _group_table(scores: dict[str, Score], order: list[str], g: Any, label: str) -> pd.DataFrame:
    """``run`` × group value of the ranking measure (from each Score's group table)."""
    rows = []
    for run in order:
        table = scores[run].by_group[g.name]
        if g.layout == "tidy":
            part = table[table["measure"] == label]
            key = part[list(g.by)].astype(str).agg(" x ".join, axis=1) if len(g.by) > 1 else part[g.by[0]]
            values = dict(zip(key.tolist(), part["value"].tolist(), strict=True))
        else:
            if label not in table.columns:
                continue
            values = dict(zip(table[g.by[0]].astype(str).tolist(), table[label].tolist(), strict=True))
        rows.append({"run": run, **values})
    return pd.DataFrame(rows)


def _tie_bounds(score: Score, inputs: Any, measure: Any) -> pd.DataFrame | None:
    """Per query ``worst, best``: ``measure`` under the worst and the best order of tied scores,
    for a run with ties that change the order among the rows that can reach the cutoff (else
    None). trec_eval's order is the engine's own value (not evaluated again)."""
    run = score.report.run[["query_id", "doc_id", "score"]]
    cutoff = (getattr(measure, "params", None) or {}).get("cutoff")
    if cutoff:
        run = reachable_rows(run, int(cutoff))
    if not len(run) or not has_ties(run):
        return None
    qrels = inputs.qrels[["query_id", "doc_id", "relevance"]]
    tb = tie_bounds(qrels, run, [measure], topics=inputs.topics, labels=inputs.labels)
    if tb is None:
        return None
    tb = tb.assign(query_id=tb["query_id"].astype(str)).drop_duplicates("query_id").set_index("query_id")
    return tb[["worst", "best"]]


def _with_ties(frame: pd.DataFrame, bounds: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, bool]:
    """``tie_min`` / ``tie_max`` per (run, query): the smallest / largest of the value and the
    run's worst / best tie orders (the value where the orders cannot differ)."""
    frame = frame.assign(tie_min=frame["value"], tie_max=frame["value"])
    changed = False
    for name, tb in bounds.items():
        rows = (frame["run"] == name).to_numpy()
        q = frame.loc[rows, "query_id"]
        value = frame.loc[rows, "value"].to_numpy(dtype=np.float64)
        lo, hi = tie_range(value, q.map(tb["worst"]), q.map(tb["best"]))
        frame.loc[rows, "tie_min"] = lo
        frame.loc[rows, "tie_max"] = hi
        same = (lo == value) & (hi == value) | np.isnan(value) & np.isnan(lo) & np.isnan(hi)
        changed = changed or not bool(same.all())
    return frame, changed


ENGINE["leaderboard"] = leaderboard  # what `Benchmark.leaderboard` runs
