"""Reading limits: what one input file may cost before it is refused.

Every file the readers open goes through `reteco_measures.io.lines.iter_file_bytes`, which
counts what it hands on with a `ByteCounter`:

* ``max_lines``: newline characters in the (decompressed) file (blank lines count: a million
  blank lines cost the readers far more than their bytes). Default 100,000,000, ten times a
  10-million-line run;
* ``max_unpacked``: bytes once decompressed. Default 16 GiB;
* ``max_ratio``: decompressed bytes per byte of the compressed file, checked once more than 64 MiB
  came out (a 1 MB gzip file of 1 GiB of newlines is a ratio of 1,000; text runs compress 3 to
  20 times). Default 200;
* ``max_line_bytes``: bytes of one line of a run or qrels file. A longer line is a problem of that
  line (kind ``long_line``) and is skipped as it is read, never held whole. Default 1 MiB. A file
  that is one JSON array (its first byte ``[``) is exempt: it is one value, not lines.

A file beyond the first three is refused whole with `InputTooLargeError`
(a `DataFormatError` naming the file, the limit and how to change it). The limits are set for a
block of code with `read_limits` (the command line's ``--max-lines``, ``--max-unpacked``,
``--max-ratio`` and ``--max-line-bytes`` do so), and reach child processes through the
``RETECO_MEASURES_READ_LIMITS`` environment variable.

The Codabench / Harbor submission reader (`reteco_measures.platforms.submission`) counts the lines
of an upload with the same `ByteCounter`, under its own, stricter limits.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

import numpy as np

from ..errors import InputTooLargeError, Problem, display

__all__ = ["ReadLimits", "read_limits", "current_limits", "ByteCounter", "guard_long_lines", "parse_size",
           "format_size", "MiB", "GiB", "RATIO_FLOOR", "ENV_VAR"]

MiB = 1 << 20
GiB = 1 << 30
#: decompressed bytes below which the ratio is not checked (small files compress very well)
RATIO_FLOOR = 64 * MiB
#: the environment variable that carries `read_limits` to child processes (JSON)
ENV_VAR = "RETECO_MEASURES_READ_LIMITS"


@dataclass(frozen=True)
class ReadLimits:
    """What one input file may cost (see the module's text); None: no limit."""

    max_lines: int | None = 100_000_000
    max_unpacked: int | None = 16 * GiB
    max_ratio: float | None = 200.0
    max_line_bytes: int | None = MiB

    def __post_init__(self) -> None:
        for name in ("max_lines", "max_unpacked", "max_ratio", "max_line_bytes"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive (or None: no limit), not {value!r}")


_current: ReadLimits | None = None


def current_limits() -> ReadLimits:
    """The limits in force: those of the innermost `read_limits` block, else those a parent
    process passed in ``RETECO_MEASURES_READ_LIMITS``, else the defaults."""
    if _current is not None:
        return _current
    raw = os.environ.get(ENV_VAR)
    if raw:
        try:
            return ReadLimits(**json.loads(raw))
        except (ValueError, TypeError):
            pass
    return ReadLimits()


@contextmanager
def read_limits(**changes: int | float | None) -> Iterator[ReadLimits]:
    """Change reading limits for a block (and the child processes it starts)::

        with rm.io.limits.read_limits(max_lines=500_000_000, max_line_bytes=16 * MiB):
            run = rm.read_run("huge.run.gz")
    """
    global _current
    before, env = _current, os.environ.get(ENV_VAR)
    _current = replace(current_limits(), **changes)
    os.environ[ENV_VAR] = json.dumps(asdict(_current))
    try:
        yield _current
    finally:
        _current = before
        if env is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = env


_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``'256M'`` → 268435456 (binary units K, M, G, T; a plain number is bytes)."""
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a size (a number of bytes, or e.g. 512M, 4G)")
    return int(float(m.group(1)) * (1024 ** "_kmgt".index(m.group(2).lower() or "_")))


def format_size(n: float) -> str:
    """Bytes in words: ``1.5 GiB``."""
    for unit, div in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{int(n)} bytes"


class ByteCounter:
    """Counts the bytes and lines of a stream as it is read and refuses it past the limits.

    ``refuse(message)`` makes the exception raised (default: `InputTooLargeError` with one
    ``too_large`` problem naming ``name``); ``packed`` is the size of the compressed file, when the
    stream is decompressed (for the ratio); ``hint`` names how to change each limit."""

    def __init__(self, name: str, *, max_lines: int | None, max_unpacked: int | None = None,
                 max_ratio: float | None = None, packed: int | None = None,
                 refuse: Callable[[str], Exception] | None = None,
                 hint: dict[str, str] | None = None):
        self.name, self.max_lines, self.max_unpacked, self.max_ratio = name, max_lines, max_unpacked, max_ratio
        self.packed = packed
        self.bytes = 0
        self.lines = 0
        #: the limit passed (``'max_lines'``, ``'max_unpacked'``, ``'max_ratio'``), once refused
        self.tripped: str | None = None
        self.refuse = refuse or (lambda msg: InputTooLargeError([Problem(msg, path=name, kind="too_large")]))
        self.hint = {"max_lines": "--max-lines N (Python: read_limits(max_lines=N))",
                     "max_unpacked": "--max-unpacked SIZE (Python: read_limits(max_unpacked=...))",
                     "max_ratio": "--max-ratio R (Python: read_limits(max_ratio=...))", **(hint or {})}

    def add(self, piece: bytes) -> None:
        """Count ``piece``; raises once a limit is passed."""
        self.bytes += len(piece)
        if self.max_lines is not None:
            self.lines += piece.count(b"\n")
            if self.lines > self.max_lines:
                self.tripped = "max_lines"
                raise self.refuse(f"more than {self.max_lines:,} lines, the limit for one file (blank lines "
                                  f"count); if the file is right, raise it with {self.hint['max_lines']}")
        if self.max_unpacked is not None and self.bytes > self.max_unpacked:
            self.tripped = "max_unpacked"
            raise self.refuse(f"more than {format_size(self.max_unpacked)} once decompressed, the limit for one "
                              f"file; if the file is right, raise it with {self.hint['max_unpacked']}")
        if (self.max_ratio is not None and self.packed and self.bytes > RATIO_FLOOR
                and self.bytes > self.max_ratio * self.packed):
            self.tripped = "max_ratio"
            raise self.refuse(f"decompresses to more than {self.max_ratio:g} times its size "
                              f"({format_size(self.packed)} gave more than {format_size(self.bytes)}): a "
                              f"decompression bomb, or a very repetitive file; if the file is right, raise the "
                              f"limit with {self.hint['max_ratio']}")


_BLANK = b" \t\r\n\x0b\x0c"


def _long_line(line: int, limit: int, name: str | None) -> Problem:
    return Problem(f"line longer than {limit:,} bytes, the limit for one line: skipped without being read whole "
                   "(if the line is right, raise the limit with --max-line-bytes, or max_line_bytes= in Python)",
                   line=line, path=name, kind="long_line")


def guard_long_lines(pieces: Iterable[bytes], limit: int | None, name: str | None = None,
                     problems: list[Problem] | None = None) -> Iterator[bytes]:
    """``pieces`` of a file (cut anywhere) as pieces of whole lines, with every line longer than
    ``limit`` bytes replaced by an empty line (its line break kept, so line numbers stay) and
    reported in ``problems`` (kind ``long_line``). A long line is dropped piece by piece as it
    arrives: at most ``limit`` bytes of it are ever held. One vectorised newline search per piece
    (none while a piece cannot hold a long line). A file whose first non-blank byte is ``[`` (a
    JSON array) is handed on unchanged."""
    it = iter(pieces)
    if not limit:
        yield from it
        return
    rest: list[bytes] = []
    rest_len = 0
    skipping = False
    done = 0  # lines completed before the current piece
    decided = False

    def report(line: int) -> None:
        if problems is not None:
            problems.append(_long_line(line, limit, name))

    for piece in it:
        if not decided:
            head = piece.lstrip(_BLANK)
            if head.startswith(b"\xef\xbb\xbf"):
                head = head[3:].lstrip(_BLANK)
            if head:
                decided = True
                if head[:1] == b"[":
                    yield from rest
                    yield piece
                    yield from it
                    return
        if not skipping and rest_len + len(piece) <= limit:  # no long line can end or start here
            cut = piece.rfind(b"\n") + 1
            if cut == 0:
                rest.append(piece)
                rest_len += len(piece)
                continue
            done += piece.count(b"\n", 0, cut)
            yield b"".join([*rest, piece[:cut]]) if rest else piece[:cut]
            rest = [piece[cut:]] if cut < len(piece) else []
            rest_len = len(piece) - cut
            continue
        nls = np.flatnonzero(np.frombuffer(piece, dtype=np.uint8) == 10)
        if not len(nls):
            if skipping:
                continue
            rest.append(piece)
            rest_len += len(piece)
            if rest_len > limit:
                report(done + 1)
                rest, rest_len, skipping = [], 0, True
            continue
        out: list[bytes] = []
        first = int(nls[0])
        if skipping:
            out.append(b"\n")
            skipping = False
        elif rest_len + first > limit:
            report(done + 1)
            out.append(b"\n")
        else:
            out.extend(rest)
            out.append(piece[: first + 1])
        rest, rest_len = [], 0
        done += 1
        starts, ends = nls[:-1] + 1, nls[1:]
        pos = first + 1
        for k in np.flatnonzero(ends - starts > limit).tolist():
            s, e = int(starts[k]), int(ends[k])
            out.append(piece[pos:s])
            out.append(b"\n")
            report(done + k + 1)
            pos = e + 1
        last = int(nls[-1])
        out.append(piece[pos: last + 1])
        done += len(nls) - 1
        tail = piece[last + 1:]
        if len(tail) > limit:
            report(done + 1)
            skipping = True
        elif tail:
            rest, rest_len = [tail], len(tail)
        yield b"".join(out)
    if rest and not skipping:
        yield b"".join(rest)


def shown_name(name: str | None) -> str:
    """A file name for a limit message."""
    return display(name, 300) if name else "<data>"
