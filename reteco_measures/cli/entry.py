"""The ``reteco-measures`` entry point: ``--version`` and ``--help`` (the list of commands,
`reteco_measures.cli.commands`) answer without pandas, numpy, pyarrow or ir_datasets; everything
else builds the full command line (`reteco_measures.cli.main`), which imports pandas and the
benchmarks."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .._version import __version__
from .commands import top_parser

__all__ = ["main"]


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
