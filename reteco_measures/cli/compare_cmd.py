"""``reteco-measures compare QRELS RUN RUN... MEASURE...``: several runs with statistics.

``reteco-measures compare --benchmark NAME [--data D] [--split S] [--rules kit] RUN RUN...``: the
runs scored as the benchmark's leaderboard scores them (its qrels, contract, official measure or
``--measure``, statistical unit; `reteco_measures.benchmarks.compare`).

Telling runs from measures: after the qrels, every argument naming an existing file is a run
(named as `reteco_measures.stats.compare.file_run_name` names it: the file name without its
compression and format suffixes, ``runs/bm25.run.gz`` → ``bm25``), every other argument is a
measure (``nDCG@10``, ``'nDCG|FC@10'``, ``TC@10`` ...). An argument that looks like a file (has a
path separator or ends with one of
`RUN_FILE_SUFFIXES`) but does not exist is an error, not a
measure.

Inputs that do not match are refused as ``eval`` refuses them: a run (or the topics, labels)
whose query ids do not meet the qrels' (also when they only meet in another id form:
``--normalize-ids`` maps them), or an empty run or qrels, stops the command with one line naming
the run and no table (exit 1).

Exit codes: 0 ok; 1 inputs that do not match (refused, no table), or other input warnings (e.g.
queries grouped as ``(none)`` by ``--by``: printed, the numbers are still shown); 2 usage error or
unreadable input.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from ..errors import DataFormatWarning, InputMismatchError
from .messages import cli_message
from .read_limits import add_read_limit_options

__all__ = ["split_runs_and_measures", "add_statistics_options", "statistics_options", "configure"]

def split_runs_and_measures(items: list[str]) -> tuple[list[str], list[str]]:
    """(run files, measures) from the positional arguments after the qrels (see the module docs)."""
    from ..stats.compare import RUN_FILE_SUFFIXES

    runs, measures = [], []
    for item in items:
        if os.path.isfile(item):
            runs.append(item)
        elif os.sep in item or "/" in item or item.lower().endswith(RUN_FILE_SUFFIXES):
            raise FileNotFoundError(f"{item}: no such run file")
        else:
            measures.append(item)
    return runs, measures


def add_statistics_options(p: argparse.ArgumentParser, resamples: int) -> None:
    """The paired-test and interval options shared by ``compare`` and ``leaderboard``."""
    from ..stats import CORRECTIONS, TESTS

    p.add_argument("--test", default="t", choices=list(TESTS))
    p.add_argument("--correction", default="holm", choices=[c for c in CORRECTIONS if c] + ["none"])
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--ci", type=float, default=0.95, help="confidence level of the bootstrap intervals")
    p.add_argument("--resamples", type=int, default=resamples, help="bootstrap / randomization resamples")
    p.add_argument("--seed", type=int, default=0)


def statistics_options(args: argparse.Namespace) -> dict:
    """``{"stats": StatOptions(...)}``: the keyword argument of `reteco_measures.compare` (and
    ``Benchmark.leaderboard``) holding what `add_statistics_options` parsed."""
    from ..stats import StatOptions

    return {"stats": StatOptions(test=args.test, correction=None if args.correction == "none" else args.correction,
                                 alpha=args.alpha, ci=args.ci, n_resamples=args.resamples, seed=args.seed)}


def _cmd_compare(args: argparse.Namespace) -> int:
    from ..stats import compare

    if args.benchmark:
        return _cmd_compare_benchmark(args)
    if args.data or args.split or args.rules:
        raise ValueError("--data, --split and --rules belong to --benchmark (e.g. --benchmark reteco-1a)")
    runs, measures = split_runs_and_measures(args.items)
    if len(runs) < 2:
        raise ValueError(f"compare needs at least two run files (found {len(runs)}: {runs}); "
                         "arguments that are not files are read as measures")
    measures += list(args.measure or [])
    if not measures:
        raise ValueError("no measure given (e.g. nDCG@10)")
    if args.plot_kind in ("heatmap", "depth") and args.plot and not args.by:
        raise ValueError(f"--plot-kind {args.plot_kind} needs --by (e.g. --by domain --by depth)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = compare(runs, args.qrels, measures, baseline=args.baseline, topics=args.topics,
                             labels=args.labels, by=args.by, tie_break=args.tie_break, ties=not args.no_ties,
                             query_ids="normalize" if args.normalize_ids else "exact", on_mismatch="error",
                             **statistics_options(args))
        except InputMismatchError as exc:  # never a table of zeros: one line, exit 1
            print(f"reteco-measures: error: {cli_message(exc, args)}", file=sys.stderr)
            return 1
    return _print_comparison(args, result, caught)


def _print_comparison(args: argparse.Namespace, result, caught: list) -> int:
    from ..report.tables import format_comparison

    problems = 0
    for w in caught:
        print(f"reteco-measures: warning: {w.message}", file=sys.stderr)
        problems += issubclass(w.category, DataFormatWarning)
    print(format_comparison(result, args.format, places=args.places), end="")
    if args.plot:
        fig = result.plot(kind=args.plot_kind)
        fig.savefig(args.plot, bbox_inches="tight")
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 1 if problems else 0


def _cmd_compare_benchmark(args: argparse.Namespace) -> int:
    """``compare --benchmark NAME RUN RUN...``: every argument is a run file (or a measure the
    benchmark prints); the qrels and the measure are the benchmark's."""
    from ..benchmarks.compare import compare

    runs, measures = split_runs_and_measures([args.qrels, *args.items])
    if len(runs) < 2:
        raise ValueError(f"compare --benchmark needs at least two run files (found {len(runs)}: {runs})")
    measures += list(args.measure or [])
    unused = [flag for flag, value in (("--topics", args.topics), ("--labels", args.labels), ("--by", args.by),
                                       ("--normalize-ids", args.normalize_ids)) if value]
    if unused or args.tie_break != "trec_eval":
        raise ValueError(f"{', '.join(unused) or '--tie-break'}: not with --benchmark (the benchmark decides)")
    options = {"rules": args.rules} if args.rules else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = compare(runs, measures=measures or None, benchmark=args.benchmark, data=args.data,
                             split=args.split, baseline=args.baseline, ties=not args.no_ties, on_mismatch="error",
                             workers=1, **options, **statistics_options(args))
        except InputMismatchError as exc:  # never a table of zeros: one line, exit 1
            print(f"reteco-measures: error: {cli_message(exc, args)}", file=sys.stderr)
            return 1
    if result.params.get("rules"):
        print(f"reteco-measures: {result.params['benchmark']} {result.params['split']}, "
              f"rules: {result.params['rules']}" + (f"; value: {result.params['value']}"
                                                     if result.params.get("value") else ""), file=sys.stderr)
    return _print_comparison(args, result, caught)


def configure(sub: argparse._SubParsersAction) -> None:
    """Add ``compare`` to the top-level parser."""
    from ..benchmarks.registry import BENCHMARKS
    from ..kernels.ranking import TIE_BREAKS
    from ..report.tables import FORMATS

    p = sub.add_parser(
        "compare", help="compare runs: aggregates with confidence intervals and paired significance tests",
        description="Arguments after QRELS that are existing files are runs, named by the file name without "
                    "its compression and format suffixes (runs/bm25.run.gz -> bm25); the others are measures.")
    p.add_argument("qrels", metavar="QRELS", help="qrels file (TREC or JSONL); with --benchmark the first run")
    p.add_argument("items", nargs="+", metavar="RUN|MEASURE", help="two or more run files, then measures")
    p.add_argument("--measure", action="append", help="a measure (repeatable; for names that are also file names)")
    p.add_argument("--benchmark", choices=sorted(BENCHMARKS),
                   help="score the runs as this benchmark's leaderboard does: its qrels, contract, official "
                        "measure (or --measure) and statistical unit; then no QRELS, every argument is a run")
    p.add_argument("--data", help="with --benchmark: data root (default: $RETECO_DATA)")
    p.add_argument("--split", help="with --benchmark: split (default: the benchmark's)")
    p.add_argument("--rules", choices=["page", "kit"],
                   help="with a RETECO --benchmark: page (the evaluation page; default) or kit (the starter kit's "
                        "scoring: the summary shows its official number, deltas are their differences)")
    p.add_argument("--baseline", help="run name (file name without its suffixes) to compare every other run "
                                         "against")
    add_statistics_options(p, resamples=10_000)
    p.add_argument("--by", action="append", help="group by a topics column or 'depth' (repeatable)")
    p.add_argument("--topics", help="topics metadata file (JSONL/TSV)")
    p.add_argument("--labels", help="frozen temporal labels JSONL")
    p.add_argument("--tie-break", default="trec_eval", choices=list(TIE_BREAKS))
    p.add_argument("--no-ties", action="store_true",
                   help="skip the tie-sensitivity step (tie_min / tie_max of runs with tied scores)")
    p.add_argument("--normalize-ids", action="store_true",
                   help="map every run's (topics', labels') query ids to the qrels' form of the same query: "
                        "'#turn1' = '_turn_1', '<domain>/<id>' = '<id>', '001' = '1'")
    p.add_argument("--format", default="table", choices=list(FORMATS))
    p.add_argument("--places", type=int, default=4)
    add_read_limit_options(p)
    p.add_argument("--plot", metavar="FILE", help="also draw a plot into FILE (.png, .pdf, .svg)")
    p.add_argument("--plot-kind", default="runs", choices=["runs", "delta", "heatmap", "depth"],
                   help="runs: values with CI bars; delta: per-query differences to the baseline; "
                        "heatmap: a two-column --by grid; depth: curves over --by depth")
    p.set_defaults(func=_cmd_compare)
