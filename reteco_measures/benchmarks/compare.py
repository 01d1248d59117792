"""``rm.compare``: runs compared on qrels and measures, or on a benchmark as its leaderboard scores them.

Without ``benchmark`` this is `reteco_measures.stats.compare.compare` (qrels and measures given).
With ``benchmark`` (``rm.compare(runs, benchmark="reteco-1a", data=..., split="dev",
rules="kit")``) the qrels, the measure, the contract, the per-query weights and the statistical
unit are the benchmark's: every run is scored exactly as `leaderboard` scores a
submission (the path `reteco_measures.benchmarks.gate.gate` takes), and the statistics of
`compare_frame` run on the per-unit values the scoring produced (nothing is evaluated
a second time). Under a rule set whose official number is not the mean over units (RETECO's
``rules='kit'``: per-domain means rounded to 5 decimals, averaged over domains) the summary's
``value`` is that official number, ``delta`` the difference of the official numbers, and the
tests and p-values are those of the per-unit values; the percentile intervals and the tie bounds,
which are of the mean over units and not of that number, are not shown (NaN), as the leaderboard
does not show the intervals.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pandas as pd

from ..stats.compare import Comparison, compare_frame
from ..stats.compare import compare as compare_runs
from .leaderboard import leaderboard
from .registry import benchmark as benchmark_named

__all__ = ["compare"]

#: keyword arguments of `compare_frame` (the statistics): taken by the comparison, not by the scoring
_STAT_KEYS = ("baseline", "test", "correction", "alpha", "ci", "n_resamples", "seed")


def compare(
    runs: Any,
    qrels: Any = None,
    measures: Any = None,
    *,
    benchmark: Any = None,
    data: Any = None,
    split: str | None = None,
    rules: str | None = None,
    **kwargs: Any,
) -> Comparison:
    """Compare runs with confidence intervals and paired significance tests.

    Args:
        runs: ``{name: run}`` or a list of run files (named by
            `reteco_measures.stats.compare.file_run_name`).
        qrels, measures: the qrels and the measures (without ``benchmark``; see
            `reteco_measures.stats.compare.compare` for every other keyword).
        benchmark: a benchmark or its name (``"reteco-1a"``): the runs are scored by it, as
            ``rm.leaderboard`` scores submissions; ``qrels`` is then not given, ``measures`` is
            None (the official measure) or measures the benchmark prints (``["nDCG@10"]``).
        data, split: the benchmark's data root and split (as `Benchmark.score`).
        rules: a RETECO benchmark's rule set: ``'page'`` (default, the evaluation page) or
            ``'kit'`` (the organisers' starter-kit scoring; see the module docs for what the
            summary then shows).
        kwargs: without ``benchmark``: `reteco_measures.stats.compare.compare`'s keywords. With
            it: the statistics (``baseline, test, correction, alpha, ci, n_resamples, seed``, as
            there), ``ties``, ``on_mismatch``, ``workers`` (as `leaderboard`) and the
            benchmark's own options (``average='step'``, ``map_duplicates=True``, ...).

    Returns:
        a `Comparison` (with ``benchmark``: ``params`` also holds ``benchmark``, ``split``,
        ``rules`` and, under a rule set with its own official number, ``value``).
    """
    if benchmark is None:
        if qrels is None or measures is None:
            raise TypeError("compare needs qrels and measures, or benchmark= (the benchmark's qrels and measure)")
        if data is not None or split is not None or rules is not None:
            raise TypeError("data=, split= and rules= belong to benchmark= (e.g. benchmark='reteco-1a')")
        return compare_runs(runs, qrels, measures, **kwargs)
    if qrels is not None:
        raise TypeError("with benchmark= the qrels are the benchmark's: give data= (and split=), not qrels")
    return _compare_on_benchmark(runs, benchmark, measures, data=data, split=split, rules=rules, **kwargs)


def _compare_on_benchmark(runs: Any, bench: Any, measures: Any, *, data: Any, split: str | None,
                          rules: str | None, **kwargs: Any) -> Comparison:
    bench = benchmark_named(bench) if isinstance(bench, str) else bench
    stats = {k: kwargs.pop(k) for k in _STAT_KEYS if k in kwargs}
    if "stats" in kwargs:  # one StatOptions value instead of the keywords
        given = sorted(set(stats) - {"baseline"})
        if given:
            raise TypeError(f"give either stats= or the keywords {given}, not both")
        stats["stats"] = kwargs.pop("stats")
    else:
        stats.setdefault("n_resamples", 10_000)
    options = dict(kwargs)
    if rules is not None:
        options["rules"] = rules
    wanted: list[str | None] = [None] if measures is None else (
        [measures] if isinstance(measures, str) else [str(m) for m in measures])
    if not wanted:
        raise ValueError("no measure given")
    frames, empties, units, labels, boards = [], {}, {}, [], []
    for name in wanted:
        # one leaderboard per measure: the gate's path (scores and per-unit values; its own
        # statistics are not used, so few resamples)
        board = leaderboard(bench, runs, data=data, split=split, measure=name, correction=None, n_resamples=1,
                            seed=int(stats["stats"].seed if "stats" in stats else stats.get("seed", 0)), **options)
        label = board.measure
        if label in labels:
            raise ValueError(f"a measure is given twice: {label}")
        labels.append(label)
        boards.append(board)
        pq = board.per_query
        frames.append(pq[pq["measure"] == label])
        first = board.scores[board.runs[0]]
        empties[label] = first.per_query_long.attrs.get("empty", {}).get(label, float("nan"))
        design = board.design.set_index("measure")
        units[label] = (str(design.loc[label, "unit"]), str(design.loc[label, "strata"]) or None)
    run_order = list(boards[0].runs)
    for board in boards[1:]:
        if list(board.runs) != run_order:  # pragma: no cover - the same runs are scored the same way
            raise ValueError(f"the runs scored differ between measures: {run_order} / {board.runs}")
    frame = pd.concat(frames, ignore_index=True)
    if {"tie_min", "tie_max"} & set(frame.columns):
        for col in ("tie_min", "tie_max"):  # measures without tie sensitivity: their value
            frame[col] = frame[col].where(frame[col].notna(), frame["value"]) if col in frame else frame["value"]
    comp = compare_frame(frame, measures=labels, runs=run_order, empties=empties, units=units, **stats)
    first_board = boards[0]
    comp.params.update(benchmark=first_board.benchmark, split=split or bench.default_split,
                       rules=first_board.scores[run_order[0]].meta.get("rules"))
    for board, label in zip(boards, labels):
        if "value" in board.params:  # the benchmark's own official number (RETECO kit rules)
            _official_values(comp, board, label)
            comp.params["value"] = (f"{label}: the official number ({board.scores[run_order[0]].aggregation}); "
                                    f"deltas are its differences, tests are over the per-unit values")
    return comp


def _official_values(comp: Comparison, board: Any, label: str) -> None:
    """Show ``label``'s official numbers (the board's ranking values) as the summary's values and
    their differences as the pairwise deltas; the intervals of the mean over units are dropped."""
    official = dict(zip(board.ranking["run"], board.ranking["value"].to_numpy(dtype=np.float64), strict=True))
    rows = (comp.summary["measure"] == label).to_numpy()
    comp.summary.loc[rows, "value"] = comp.summary.loc[rows, "run"].map(official).to_numpy(dtype=np.float64)
    # the intervals and tie bounds are of the mean over units, not of this number: not shown
    comp.summary.loc[rows, [c for c in ("ci_low", "ci_high", "tie_min", "tie_max") if c in comp.summary]] = np.nan
    prow = (comp.pairwise["measure"] == label).to_numpy()
    a = comp.pairwise.loc[prow, "run"].map(official).to_numpy(dtype=np.float64)
    b = comp.pairwise.loc[prow, "other"].map(official).to_numpy(dtype=np.float64)
    comp.pairwise.loc[prow, "delta"] = a - b



def _signature() -> inspect.Signature:
    """`compare`'s signature as users read it: every keyword of
    `reteco_measures.stats.compare.compare` (with its default), then the benchmark mode's."""
    base = inspect.signature(compare_runs)
    own = inspect.signature(compare).parameters
    params = [p.replace(default=None) if p.name in ("qrels", "measures") else p for p in base.parameters.values()]
    params += [own[name] for name in ("benchmark", "data", "split", "rules")]
    return base.replace(parameters=params)


compare.__signature__ = _signature()  # type: ignore[attr-defined]
