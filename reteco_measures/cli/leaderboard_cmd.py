"""``reteco-measures leaderboard BENCHMARK RUN... [--data DIR] [--split S] [--format F] [--plot FILE]``.

Scores every submission with the benchmark's engine (its contract first), ranks them by the
official measure with confidence intervals and significance clusters
(`reteco_measures.benchmarks.leaderboard`), and prints the ranking, the diagnostics and the
group breakdowns. ``RUN`` may be files or folders of files (every file of a folder is a run; a
run's name is its file name without its compression and format suffixes, as ``compare`` names
runs: ``bm25.run.gz`` → ``bm25``; see `reteco_measures.stats.compare.file_run_name`).

Generation tracks (``reteco-2b``, ``reteco-2c``, ``ikat-2023-generation``): each ``RUN`` is a
submission's judgments JSONL; ``--human FILE`` (ratings with a ``run`` column) ranks by the
calibrated means (``--calibration ppi++|ppi``) beside the raw judge means.

A submission whose query ids do not meet the benchmark's (also when they only meet in another id
form: ``--normalize-ids`` maps them on the RETECO benchmarks), or an empty one, stops the command
with one line naming it and no board (exit 1), as ``compare`` does.

A submission that cannot be scored at all — unreadable, empty, or sharing no query id with the
benchmark (a run for another benchmark) — is not ranked: it is listed under "not scored" with
its reason in every format and on stderr (exit 1); the others are ranked. A run invalid by the
benchmark's rules (a ChunQiu batch with a violation) is ranked with its official value and the
reason.

Exit codes: 0 ok; 1 inputs that do not match (refused, no board), or some submission could not be
scored (listed under "not scored"; fewer than two scored: no board), or with ``--human`` some run has no calibrated mean (no rated turn: it is ranked last with
NaN and a warning); 2 usage error or missing data.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from ..benchmarks import BENCHMARKS
from ..benchmarks.leaderboard import TooFewScoredError, UnscorableSubmissionWarning
from ..errors import InputMismatchError
from ..report.leaderboard import LEADERBOARD_FORMATS, format_leaderboard
from .compare_cmd import add_statistics_options, statistics_options
from .messages import cli_message
from .score_cmd import add_benchmark_options, add_stream_option, benchmark_options

__all__ = ["expand_runs", "configure"]


def expand_runs(items: list[str]) -> list[Path]:
    """Run files from the positional arguments: files as given, folders expanded (sorted)."""
    out: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            out += sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"{item}: no such run file or folder")
    return out


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    bench = BENCHMARKS[args.bench]
    runs = expand_runs(args.runs)
    extra = {}
    if getattr(args, "human", None):
        extra = {"human": args.human, "calibration": args.calibration}
    try:
        with warnings.catch_warnings():  # the not-scored submissions are listed below, with their reasons
            warnings.simplefilter("ignore", UnscorableSubmissionWarning)
            board = bench.leaderboard(runs, data=args.data, split=getattr(args, "split", None),
                                      measure=args.measure, ties=not args.no_ties, workers=args.workers,
                                      on_mismatch="error", stream=args.stream, **statistics_options(args), **extra,
                                      **benchmark_options(args, bench))
    except InputMismatchError as exc:  # never a board ranked on zeros: one line, exit 1
        print(f"reteco-measures: error: {cli_message(exc, args)}", file=sys.stderr)
        return 1
    except TooFewScoredError as exc:  # the reasons first, then why there is no board
        for name, message in exc.failed.items():
            print(f"reteco-measures: error: not scored: {name}: {message}", file=sys.stderr)
        print(f"reteco-measures: error: no leaderboard: it needs at least two scored submissions; scored: "
              f"{', '.join(exc.scored) or 'none'}", file=sys.stderr)
        return 1
    if args.format == "html":
        from ..report.html import leaderboard_html

        text = leaderboard_html(board, places=args.places)
    else:
        text = format_leaderboard(board, args.format, places=args.places)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"leaderboard written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if args.plot:
        fig = board.plot(kind="runs", sort=True)
        fig.savefig(args.plot, bbox_inches="tight")
        print(f"plot written to {args.plot}", file=sys.stderr)
    for name, message in board.failed.items():
        print(f"reteco-measures: error: not scored: {name}: {message}", file=sys.stderr)
    uncalibrated = []
    if extra and len(board.calibration):
        uncalibrated = board.calibration.loc[board.calibration["calibrated"].isna(), "run"].tolist()
        if uncalibrated:
            print(f"reteco-measures: error: no calibrated mean for {', '.join(map(str, uncalibrated))} "
                  "(no human-rated turn for that run; ranked last)", file=sys.stderr)
    return 1 if board.failed or uncalibrated else 0


def configure(sub: argparse._SubParsersAction) -> None:
    """Add ``leaderboard BENCHMARK`` (one sub-command per benchmark) to the top-level parser."""
    p = sub.add_parser("leaderboard", help="rank several submissions to a benchmark with confidence intervals "
                                           "and significance clusters")
    boards = p.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    boards.required = True
    for name, bench in sorted(BENCHMARKS.items()):
        pp = boards.add_parser(name, help=bench.cli.help, description=f"Rank submissions to {name}. {bench.cli.help}")
        pp.add_argument("runs", nargs="+", metavar="RUN", help="submission files or folders of them")
        add_benchmark_options(pp, bench)
        pp.add_argument("--measure", help="ranking measure (default: the official one)")
        add_statistics_options(pp, resamples=2_000)
        pp.add_argument("--no-ties", action="store_true", help="skip the tie-sensitivity computation")
        if bench.contract == "judgments":
            pp.add_argument("--human", metavar="FILE",
                            help="human ratings (CSV/TSV/JSONL: run, turn_id, dimension, rater, score): rank by the "
                                 "calibrated means beside the raw judge means")
            pp.add_argument("--calibration", default="ppi++", choices=["ppi++", "ppi"],
                            help="calibration estimator with --human (default ppi++)")
        add_stream_option(pp)
        pp.add_argument("--workers", type=int, default=None,
                        help="processes scoring the submissions (default: one per CPU when there are 8 or more)")
        pp.add_argument("--format", default="table", choices=[*LEADERBOARD_FORMATS, "html"],
                        help="html: one self-contained page (sortable tables, plots embedded)")
        pp.add_argument("--out", metavar="FILE", help="write the leaderboard to FILE instead of stdout")
        pp.add_argument("--places", type=int, default=4)
        pp.add_argument("--plot", metavar="FILE", help="also draw the runs with CI bars into FILE (.png, .pdf, .svg)")
        pp.set_defaults(func=_cmd_leaderboard, bench=name)
