"""The ``reteco-measures`` entry point: ``--version`` and ``--help`` (the list of commands) answer
from this module alone, without pandas, numpy, pyarrow or ir_datasets; everything else builds the
full command line (`reteco_measures.cli.main`), which imports pandas and the benchmarks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._version import __version__

__all__ = ["main", "DESCRIPTION", "COMMAND_LINES", "top_parser"]

#: the description of ``reteco-measures --help`` (also the full parser's)
DESCRIPTION = "Evaluation for RETECO (TEMPO, RECOR), ChunQiu, Spoken-Query and TREC iKAT 2023."

#: ``(command, its line in --help)``, in the full parser's order. Each command's module gives its
#: parser the same line (a test checks that this help equals the full parser's, word for word)
COMMAND_LINES: tuple[tuple[str, str], ...] = (
    ("eval", "evaluate a run with any mix of ir_measures and reteco measures"),
    ("validate", "check a run against a benchmark contract"),
    ("reward", "map raw quality q in [0, 1] to the piecewise reward"),
    ("score", "official-style scoring of one benchmark"),
    ("demo", "evaluate the bundled synthetic sample end to end"),
    ("datasets", "the ir_datasets CLI with reteco-measures' datasets registered"),
    ("ir_measures", "the ir_measures CLI with reteco-measures' measures registered"),
    ("codabench", "Codabench scoring program and competition bundle"),
    ("compare", "compare runs: aggregates with confidence intervals and paired significance tests"),
    ("compare-leaderboards", "rank agreement of leaderboard B with the reference A (Kendall tau-b, tau_AP, "
                             "Spearman, top-1, significant swaps)"),
    ("gate", "regression gate: exit 0 not worse beyond the margin, 1 worse, 2 cannot tell"),
    ("judge", "LLM judgments (generation, iKAT, temporal labels), meta-eval, aggregation"),
    ("leaderboard", "rank several submissions to a benchmark with confidence intervals and significance clusters"),
)


def top_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command listed but none built: what ``--help`` (and a
    call without a command) prints."""
    parser = argparse.ArgumentParser(prog="reteco-measures", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, line in COMMAND_LINES:
        sub.add_parser(name, help=line, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        print(f"reteco-measures {__version__}")
        return 0
    if args in ([], ["--help"], ["-h"]):
        top_parser().parse_args(args)  # prints the help (exit 0) or the usage error (exit 2)
    from .main import main as full  # the full parser: pandas, the benchmarks, every sub-command

    return full(args)
