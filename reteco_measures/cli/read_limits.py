"""The reading-limit options shared by ``eval``, ``compare``, ``score`` and ``leaderboard``
(see `reteco_measures.io.limits`)."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from ..io.limits import ReadLimits, format_size, parse_size, read_limits

__all__ = ["add_read_limit_options", "read_limits_of"]

_DEFAULTS = ReadLimits()


def _size(text: str) -> int:
    try:
        value = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1 byte")
    return value


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value
    return parse


def add_read_limit_options(p: argparse.ArgumentParser) -> None:
    """``--max-lines``, ``--max-unpacked``, ``--max-ratio``, ``--max-line-bytes``."""
    g = p.add_argument_group("reading limits (a file beyond them is refused, exit 1)")
    g.add_argument("--max-lines", type=_positive(int), metavar="N",
                   help=f"lines of one input file, blank ones included (default {_DEFAULTS.max_lines:,})")
    g.add_argument("--max-unpacked", type=_size, metavar="SIZE",
                   help=f"bytes of one input file once decompressed, e.g. 32G (default "
                        f"{format_size(_DEFAULTS.max_unpacked or 0)})")
    g.add_argument("--max-ratio", type=_positive(float), metavar="R",
                   help=f"decompressed bytes per compressed byte, checked past 64 MiB (default {_DEFAULTS.max_ratio:g})")
    g.add_argument("--max-line-bytes", type=_size, metavar="SIZE",
                   help="bytes of one run or qrels line; a longer line is reported and skipped (default "
                        f"{format_size(_DEFAULTS.max_line_bytes or 0)})")


def read_limits_of(args: argparse.Namespace) -> contextlib.AbstractContextManager:
    """The `read_limits` block the options given ask for (a no-op when none is given)."""
    changes = {k: getattr(args, k) for k in ("max_lines", "max_unpacked", "max_ratio", "max_line_bytes")
               if getattr(args, k, None) is not None}
    return read_limits(**changes) if changes else contextlib.nullcontext()
