"""What ``reteco-measures --help`` lists, light: the description, each command's line and the
top-level parser with no command built (`reteco_measures.cli.entry` prints it without importing
pandas; `reteco_measures.cli.main` builds the full parser with the same description)."""

from __future__ import annotations

import argparse

from .._version import __version__

__all__ = ["DESCRIPTION", "COMMAND_LINES", "top_parser"]

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
