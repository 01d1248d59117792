"""Leaderboards: several submissions to one benchmark, ranked with uncertainty.

:func:`leaderboard` (``rm.leaderboard(bench, runs)``, also ``Benchmark.leaderboard``) loads the reference data once, scores every
submission with the benchmark's engine (its contract first: an invalid ChunQiu batch scores 0 on
every query, as the task rules say), and builds a :class:`Leaderboard` — a
:class:`~reteco_measures.stats.Comparison` of the ranking measure (the official one by default)
over the submissions' per-query values, which are not evaluated again. The confidence intervals
and paired tests resample the benchmark's statistical unit (queries for 1a, queries after step
averaging for 1b, turns — or conversations with ``average='conversation'`` — for 2a, requests
within collection × condition cells for Spoken-Query; see :mod:`reteco_measures.stats.design`).

**Clusters** (the ``cluster`` column). Runs are taken in rank order. The best run opens cluster 1
and is its *leader*; each following run joins the current cluster when its difference from the
leader is not significant (the paired test after the multiple-testing correction over all pairs,
``p_adjusted >= alpha``), and otherwise opens the next cluster as its leader. So every run of a
cluster is statistically indistinguishable from the cluster's best run, and each leader is
significantly worse than the leader above it. (Clusters are not equivalence classes: two runs of
one cluster may differ significantly from each other; the ``pairwise`` table has every pair.)

**Tie sensitivity**: where the ranking measure breaks ties trec_eval's way and a run has tied
scores, ``tie_min`` / ``tie_max`` give its aggregate under the worst and best order of the tied
documents (:func:`reteco_measures.stats.tie_sensitivity`); the columns appear only when ties
change some value.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import EmptyInputWarning, InputMismatchError, QueryIdMismatchWarning
from ..query_ids import check_on_mismatch
from ..report.text import frame_records
from ..stats import Comparison, compare_frame, has_ties, unit_columns
from ..stats.compare import file_run_name
from ..stats.ties import tie_bounds, tie_range
from .registry import benchmark
from .score import Score

if TYPE_CHECKING:  # annotations only: Benchmark.leaderboard calls this module, not the other way round
    from .declaration import Benchmark

__all__ = ["Leaderboard", "leaderboard", "clusters"]


@dataclass
class Leaderboard(Comparison):
    """A :class:`~reteco_measures.stats.Comparison` of submissions to one benchmark, with its ranking.

    Attributes (beyond the Comparison's ``summary``, ``pairwise``, ``per_query``, ...):
        benchmark: the benchmark's name.
        measure: the ranking measure (the official one by default).
        ranking: one row per scored submission, best first: ``rank, run, value, ci_low, ci_high,
            n, cluster, valid, problems`` (+ ``tie_min, tie_max`` when ties change a value,
            ``reward`` where the benchmark has one, one column per diagnostic).
        groups: per grouping of the benchmark (``by_domain``, ``by_depth``, ``grid`` ...), a table
            ``run`` × group values of the ranking measure.
        scores: ``{run: Score}`` — every submission's full score.
        failed: ``{run: message}`` — submissions that could not be scored at all (unreadable).
    """

    benchmark: str = ""
    measure: str = ""
    ranking: pd.DataFrame = field(default_factory=pd.DataFrame)
    groups: dict[str, pd.DataFrame] = field(default_factory=dict)
    scores: dict[str, Score] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

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


def _run_items(runs: Any) -> list[tuple[str, Any]]:
    """``[(name, run)]`` from a mapping, a list of paths or a folder; a file's run name is
    :func:`~reteco_measures.stats.compare.file_run_name` of it, as in ``rm.compare``."""
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
    for k, v in bench.official_key:
        frame = frame[frame[k] == v]
    return frame


def leaderboard(
    bench: Benchmark | str,
    runs: Any,
    *,
    data: Any = None,
    split: str | None = None,
    measure: str | None = None,
    test: str = "t",
    correction: str | None = "holm",
    alpha: float = 0.05,
    ci: float = 0.95,
    n_resamples: int = 2_000,
    seed: int = 0,
    ties: bool = True,
    workers: int | None = None,
    on_mismatch: str = "error",
    **options: Any,
) -> Leaderboard:
    """Score every submission and rank them by ``measure`` with confidence intervals, paired tests
    over every pair (``test``, ``correction``) and significance clusters (module docs).

    Args:
        bench: the benchmark, or its name (``"reteco-1a"``).
        runs: ``{name: run}``, a list of run files or a folder (names from the file names by
            :func:`~reteco_measures.stats.compare.file_run_name`, as ``rm.compare`` names them;
            two files of one name are kept, the second as ``name#2``).
        data, split, options: as :meth:`Benchmark.score` (the reference data is loaded once).
        measure: the ranking measure's printed name (default: the official measure).
        test, correction, alpha, ci, n_resamples, seed: as :func:`reteco_measures.compare`.
        ties: compute tie sensitivity (worst / best order of tied scores) for the ranking measure.
        workers: processes scoring the submissions (default: one per CPU, at most 8, when there
            are at least 8 submissions; 1 = in this process). The numbers do not depend on it.
        on_mismatch: ``'error'`` (default): a submission whose query ids do not meet the
            benchmark's (:class:`~reteco_measures.errors.QueryIdMismatchWarning`'s cases: also
            ids that only meet in another form, which ``query_ids='normalize'`` maps on the
            RETECO benchmarks) or an empty input raises
            :class:`~reteco_measures.errors.InputMismatchError` naming the submission, as
            ``rm.compare`` does; ``'warn'``: the warning is given and the board is built anyway.
            Any other submission that cannot be scored is listed in ``failed``.

    Raises:
        InputMismatchError: inputs that do not match, unless ``on_mismatch='warn'``.

    Returns:
        a :class:`Leaderboard`.
    """
    check_on_mismatch(on_mismatch)
    if isinstance(bench, str):
        bench = benchmark(bench)
    opts = bench.resolve_options(options)
    inputs = bench.load(data, split if split is not None else bench.default_split, opts)
    items = _run_items(runs)
    measure_list = list(bench.measures(opts))
    official_label = bench.display(measure_list[0])
    tie_measure = None
    if ties and (measure is None or measure == official_label) and bench.contract == "reteco" \
            and opts.get("tie_break", "trec_eval") == "trec_eval" and not isinstance(measure_list[0], str):
        tie_measure = measure_list[0]
    with warnings.catch_warnings():
        if on_mismatch == "error":
            # the single-run checks stop a submission (also in worker processes, which get these
            # filters); its failure is then refused as a whole below, never ranked on zeros
            warnings.simplefilter("error", QueryIdMismatchWarning)
            warnings.simplefilter("error", EmptyInputWarning)
        scores, failed, bounds = _score_all(bench, items, inputs, split, opts, workers, tie_measure)
    for name, error in failed.items():
        for category in (QueryIdMismatchWarning, EmptyInputWarning):
            head = f"{category.__name__}: "
            if error.startswith(head):
                raise InputMismatchError(f"submission {name!r}: {error[len(head):]}")
    if len(scores) < 2:
        raise ValueError(f"a leaderboard needs at least two scored submissions; scored {list(scores)}"
                         + (f", failed {failed}" if failed else ""))
    first = next(iter(scores.values()))
    label = measure or first.official_measure
    measure_objs = {bench.display(m) if not isinstance(m, str) else m: m for m in bench.measures(opts)}
    stat = bench.statistical_unit(opts)
    parts = []
    for name, score in scores.items():
        rows = _official_rows(score.per_query_long, bench)
        rows = rows[rows["measure"] == label]
        if not len(rows):
            raise ValueError(f"no measure {label!r} in the scores of {bench.name}; "
                             f"choose one of {list(dict.fromkeys(score.per_query_long['measure']))}")
        parts.append(rows[["query_id", "measure", "value", "weight"]].assign(run=name))
    frame = pd.concat(parts, ignore_index=True)
    m_obj = measure_objs.get(label)
    if not isinstance(m_obj, str) and m_obj is not None:
        cols = unit_columns(m_obj, frame["query_id"], inputs.topics)
        frame["unit"] = cols["unit"].to_numpy()
        frame["stratum"] = cols["stratum"].to_numpy()
    tie_changed = False
    if tie_measure is not None and bounds:
        frame, tie_changed = _with_ties(frame, bounds)
    empties = {label: first.per_query_long.attrs.get("empty", {}).get(label, float("nan"))}
    comp = compare_frame(frame, measures=[label], runs=list(scores), empties=empties,
                         units={label: (stat["unit"], " x ".join(stat["strata"]) or None)},
                         test=test, correction=correction, alpha=alpha, ci=ci, n_resamples=n_resamples,
                         seed=seed)
    summary = comp.summary.set_index("run")
    order = sorted(scores, key=lambda r: (-_sortable(summary.loc[r, "value"]), list(scores).index(r)))
    cl = clusters(order, comp.pairwise, alpha)
    ranked = summary.loc[order]
    ranking = pd.DataFrame({
        "rank": np.arange(1, len(order) + 1),
        "run": order,
        **{col: ranked[col].to_numpy(dtype=np.float64) for col in ("value", "ci_low", "ci_high")},
        "n": ranked["n"].to_numpy(dtype=np.int64),
        "cluster": [cl[r] for r in order],
        "valid": [scores[r].valid for r in order],
        "problems": [len(scores[r].report.errors) for r in order],
    })
    if "tie_min" in comp.summary.columns:
        ranking["tie_min"] = ranked["tie_min"].to_numpy(dtype=np.float64)
        ranking["tie_max"] = ranked["tie_max"].to_numpy(dtype=np.float64)
    if first.reward is not None:
        ranking["reward"] = [scores[r].reward for r in order]
    for diag in _diagnostics(first, bench, label):
        ranking[diag] = [_summary_value(scores[r], bench, diag) for r in order]
    groups = {}
    for g in bench.groupings:
        groups[g.name] = _group_table(scores, order, g, label)
    fields = {k: getattr(comp, k) for k in ("summary", "pairwise", "per_query", "design", "runs", "measures",
                                            "names", "params")}
    fields["params"] = {**fields["params"], "clusters": "leader rule", "ties_change_values": tie_changed}
    return Leaderboard(**fields, benchmark=bench.name, measure=label, ranking=ranking, groups=groups,
                       scores=scores, failed=failed)


# ------------------------------------------------------------------------------------------------
# scoring the submissions, in this process or in a pool of worker processes

_WORKER: dict[str, Any] = {}


def _score_one(bench: Benchmark, name: str, run: Any, inputs: Any, split: str | None, opts: dict,
               tie_measure: Any = None) -> tuple[str, Score | None, str | None, pd.DataFrame | None]:
    try:
        score = bench.score(run, inputs=inputs, split=split, **opts)
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
        run = _top_with_ties(run, int(cutoff))
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


def _top_with_ties(run: pd.DataFrame, k: int) -> pd.DataFrame:
    """The rows that can reach the top ``k`` under some order of tied scores: every row scoring at
    least the ``k``-th best score of its query (a measure with cutoff ``k`` sees nothing else, under
    any tie order). Scores are compared at single precision, as trec_eval compares them."""
    scores = run["score"].to_numpy(dtype=np.float64).astype(np.float32)
    qcode = pd.factorize(run["query_id"])[0]
    order = np.lexsort((-scores, qcode))
    q = qcode[order]
    starts = np.r_[0, np.flatnonzero(q[1:] != q[:-1]) + 1]
    pos = np.arange(len(q)) - np.repeat(starts, np.diff(np.r_[starts, len(q)]))
    threshold = np.full(qcode.max() + 1 if len(qcode) else 0, -np.inf, dtype=np.float32)
    at_k = pos == k - 1
    threshold[q[at_k]] = scores[order][at_k]
    return run[scores >= threshold[qcode]]
