"""Line access for whitespace-separated files (TREC runs and qrels), robust to any byte.

The file's bytes are cut into lines with one vectorised newline search and wrapped, without
copying, as arrow binary arrays (one per block of about 8 MB). Each block is checked to be
UTF-8 in one arrow cast; a block that fails is bisected until the undecodable lines are found,
so an invalid byte costs its own line and nothing else, and no line length limit exists. The
good lines are then trimmed and split on ASCII whitespace with vectorised arrow kernels, blocks
in parallel threads (arrow releases the GIL). Every line is kept (blank ones included), so row
i is line i+1, which the validators need for their messages; tabs, runs of spaces, leading
blanks and trailing extra fields are tolerated, as trec_eval does (C ``isspace``: ASCII
whitespace only, so UTF-8 ids are never split; any other byte, control characters included,
belongs to a field). A carriage return between two fields or inside one is flagged
(`SplitLines.cr_inside`): the readers refuse such a line, which may hold several records.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataFormatError, InputTooLargeError, Problem
from .limits import ByteCounter, current_limits, format_size, guard_long_lines

Source = str | os.PathLike | IO[str] | IO[bytes] | bytes

__all__ = [
    "Source",
    "SplitLines",
    "split_lines",
    "source_name",
    "read_source_bytes",
    "is_inline_text",
    "line_blocks",
    "iter_text_chunks",
    "iter_file_bytes",
    "valid_utf8_mask",
    "ascii_fields",
    "comment_mask",
    "strip_compression_suffix",
    "read_line_bytes",
    "has_long_line",
    "COMPRESSION_SUFFIXES",
]

#: file name endings read transparently, with their decompressors
COMPRESSION_SUFFIXES = {".gz": gzip.decompress, ".bz2": bz2.decompress, ".xz": lzma.decompress}
_MAGIC = {b"\x1f\x8b": ".gz", b"\xfd7zXZ\x00": ".xz"}  # bytes no UTF-8 text starts with
_BLOCK_BYTES = 1 << 23


def is_inline_text(source: object) -> bool:
    """A ``str`` holding data rather than a path (it contains a newline)."""
    return isinstance(source, str) and "\n" in source


def source_name(source: object) -> str | None:
    """A printable name for error messages (the path), or None for in-memory data."""
    if isinstance(source, (str, os.PathLike)) and not is_inline_text(source):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return str(name) if isinstance(name, str) else None


def strip_compression_suffix(name: str) -> str:
    """``run.jsonl.gz`` → ``run.jsonl`` (lower-cased), for format detection by extension."""
    lowered = name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        if lowered.endswith(suffix):
            return lowered[: -len(suffix)]
    return lowered


def _decompress(data: bytes, suffix: str | None, name: str | None) -> bytes:
    if suffix is None:
        suffix = next((s for magic, s in _MAGIC.items() if data.startswith(magic)), None)
        if suffix is None:
            return data
    try:
        return COMPRESSION_SUFFIXES[suffix](data)
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
        raise DataFormatError([Problem(f"not a readable {suffix} file ({exc})", path=name, kind="encoding")]) from None


def read_source_bytes(source: Source) -> bytes:
    """The raw bytes of a path (``.gz``, ``.bz2``, ``.xz`` decompressed), inline text, bytes or a
    file object (compressed bytes are recognised by their gzip / xz signature).

    Raises:
        FileNotFoundError: the path does not exist or is a folder.
        DataFormatError: a compressed file cannot be decompressed.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _decompress(bytes(source), None, None)
    if is_inline_text(source):
        return source.encode("utf-8", errors="surrogateescape")  # type: ignore[union-attr]
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            raise FileNotFoundError(f"{path}: is a folder, not a file")
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        # the decompression of the stream reader (iter_file_bytes): the same decompressors, the
        # same messages for a damaged file and the same limits (a plain file in one read; a
        # compressed one in pieces, so that a decompression bomb is stopped at its limit)
        pieces = list(iter_file_bytes(path, -1 if _compression_of(path) is None else _BLOCK_BYTES))
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)
    data = source.read()  # file-like
    if isinstance(data, str):
        return data.encode("utf-8", errors="surrogateescape")
    return _decompress(bytes(data), None, source_name(source))


def read_line_bytes(source: Source, problems: list[Problem], max_line_bytes: int | None = None) -> bytes:
    """The bytes of a run or qrels file as `read_source_bytes` gives them, with every line
    longer than ``max_line_bytes`` (None: the `current_limits` value, 1 MiB by default; 0: no
    limit) left empty and reported in ``problems`` (kind ``long_line``), read piece by piece so
    that such a line is never held whole."""
    limit = current_limits().max_line_bytes if max_line_bytes is None else (max_line_bytes or None)
    data = read_source_bytes(source)
    if not limit or len(data) <= limit or not has_long_line(data, limit):
        return data
    windows = (data[i: i + _BLOCK_BYTES] for i in range(0, len(data), _BLOCK_BYTES))
    return b"".join(guard_long_lines(windows, limit, source_name(source), problems))


def has_long_line(data: bytes, limit: int) -> bool:
    """Whether a line of ``data`` is longer than ``limit`` bytes, without allocating: from each
    line start, the last newline within ``limit`` bytes (a C search) starts the next step, so a
    file is crossed in about ``len(data) / limit`` searches."""
    start, n = 0, len(data)
    while n - start > limit:
        nl = data.rfind(b"\n", start, start + limit + 1)
        if nl < 0:
            return True
        start = nl + 1
    return False


def line_blocks(data: bytes, block_bytes: int = _BLOCK_BYTES, *, strip_bom: bool = True,
                max_lines: int | None = None) -> list[pa.Array]:
    """The lines of ``data`` as zero-copy arrow binary arrays of about ``block_bytes`` each (and
    of at most ``max_lines`` lines each, when given: short lines then make several blocks).

    Line i holds its bytes without the line break (``\\n``; a ``\\r`` before it stays and is
    whitespace to the splitter). A final line without a newline counts; a trailing newline
    does not start an empty line. A leading UTF-8 byte-order mark is dropped.
    """
    start = 3 if strip_bom and data.startswith(b"\xef\xbb\xbf") else 0
    if len(data) <= start:
        return []
    raw = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(raw == 10)
    ends = nl if (len(nl) and nl[-1] == len(data) - 1) else np.append(nl, len(data))
    starts = np.empty(len(ends), dtype=np.int64)
    starts[0] = start
    starts[1:] = ends[:-1] + 1
    buf = pa.py_buffer(data)
    blocks = []
    # cut into blocks of whole lines, each with its own 32-bit offsets
    cuts = np.searchsorted(starts, np.arange(start, len(data), block_bytes)[1:], side="left")
    if max_lines is not None and len(starts) > max_lines:
        cuts = np.concatenate([cuts, np.arange(max_lines, len(starts), max_lines)])
    bounds = [0, *[int(c) for c in np.unique(cuts) if 0 < c < len(starts)], len(starts)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        s, e = starts[lo:hi], ends[lo:hi]
        base = int(s[0])
        # arrow binary values are contiguous: value i runs from line i's start to line i+1's
        # start (its newline included: whitespace, trimmed by the splitter and by text_of)
        offsets = np.empty(hi - lo + 1, dtype=np.int64)
        offsets[:-1] = s - base
        offsets[-1] = int(e[-1]) - base
        if offsets[-1] >= 2**31:  # a block over 2 GB (one huge line): 64-bit offsets
            arr = pa.Array.from_buffers(pa.large_binary(), hi - lo, [None, pa.py_buffer(offsets), buf.slice(base)])
        else:
            arr = pa.Array.from_buffers(
                pa.binary(), hi - lo, [None, pa.py_buffer(offsets.astype(np.int32)), buf.slice(base)]
            )
        blocks.append(arr)
    return blocks


def _compression_of(path: Path) -> str | None:
    """The compression suffix a file is read with: by its name, else by its first bytes (as
    `read_source_bytes` decides)."""
    suffix = next((s for s in COMPRESSION_SUFFIXES if path.name.lower().endswith(s)), None)
    if suffix is None:
        with open(path, "rb") as f:
            head = f.read(8)
        suffix = next((s for magic, s in _MAGIC.items() if head.startswith(magic)), None)
    return suffix


_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def iter_file_bytes(path: str | os.PathLike, chunk_bytes: int = _BLOCK_BYTES) -> Iterator[bytes]:
    """The bytes of a file (``.gz``, ``.bz2``, ``.xz`` by name, else by a gzip / xz signature,
    decompressed on the fly) in pieces of at most ``chunk_bytes`` (cut anywhere;
    ``chunk_bytes=-1``: one piece, the whole file). `read_source_bytes` reads a path
    through this function, so both have the same decompressors and errors: ``FileNotFoundError``
    for a missing file or a folder, `DataFormatError` (``not a
    readable .gz file (...)``) for a damaged compressed file, raised where the damage is met."""
    p = Path(path)
    if p.is_dir():
        raise FileNotFoundError(f"{p}: is a folder, not a file")
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file")
    suffix = _compression_of(p)
    opener = _OPENERS[suffix] if suffix is not None else open
    limits = current_limits()
    size = p.stat().st_size
    counter = ByteCounter(str(p), max_lines=limits.max_lines, max_unpacked=limits.max_unpacked,
                          max_ratio=limits.max_ratio, packed=size if suffix is not None else None)
    if suffix is None and limits.max_unpacked is not None and size > limits.max_unpacked:
        raise counter.refuse(f"{format_size(size)}, more than {format_size(limits.max_unpacked)}, the limit for one "
                             f"file; if the file is right, raise it with {counter.hint['max_unpacked']}")
    by_name = suffix is not None and p.name.lower().endswith(suffix)
    started = False
    try:
        with opener(p, "rb") as f:
            while True:
                piece = f.read(chunk_bytes)
                if not piece:
                    return
                counter.add(piece)
                started = True
                yield piece
    except InputTooLargeError:
        raise
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
        if suffix is None:
            raise
        if not by_name and not started:
            # only the first bytes looked compressed (a text file whose first line starts with a
            # gzip / xz signature, e.g. a damaged line): the file is read as it is, line by line
            yield from iter_file_bytes_plain(p, chunk_bytes)
            return
        raise DataFormatError([Problem(f"not a readable {suffix} file ({exc})", path=str(p), kind="encoding")]) from None


def iter_file_bytes_plain(path: Path, chunk_bytes: int = _BLOCK_BYTES) -> Iterator[bytes]:
    """The bytes of a file as they are (no decompression), in pieces of at most ``chunk_bytes``,
    counted against the reading limits as `iter_file_bytes` counts them."""
    limits = current_limits()
    counter = ByteCounter(str(path), max_lines=limits.max_lines, max_unpacked=limits.max_unpacked,
                          max_ratio=limits.max_ratio, packed=None)
    with open(path, "rb") as f:
        while True:
            piece = f.read(chunk_bytes)
            if not piece:
                return
            counter.add(piece)
            yield piece


def iter_text_chunks(path: str | os.PathLike, chunk_bytes: int = _BLOCK_BYTES, *,
                     max_line_bytes: int | None = None) -> Iterator[bytes]:
    """The bytes of a file (decompressed on the fly as `iter_file_bytes` does) in chunks
    of whole lines of about ``chunk_bytes`` (a longer line makes a longer chunk); the chunks
    joined are the file. For reading large files without holding them whole. With
    ``max_line_bytes``, a longer line comes out empty (`guard_long_lines`; its problem is made
    by `read_line_bytes`)."""
    rest: list[bytes] = []  # the pieces of an unfinished line (joined once: linear in its length)
    for chunk in guard_long_lines(iter_file_bytes(path, chunk_bytes), max_line_bytes):
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            rest.append(chunk)
            continue
        head = b"".join([*rest, chunk[:cut]]) if rest else chunk[:cut]
        rest = [chunk[cut:]] if cut < len(chunk) else []
        yield head
    if rest:
        yield b"".join(rest)


def valid_utf8_mask(block: pa.Array) -> np.ndarray | None:
    """None when every value of a binary array is valid UTF-8, else a boolean mask of the valid
    ones (found by bisection: a few arrow casts per bad value, not a Python loop per line)."""
    try:
        pc.cast(block, pa.string())
        return None
    except pa.ArrowInvalid:
        pass
    mask = np.ones(len(block), dtype=bool)

    def visit(lo: int, hi: int) -> None:
        if hi - lo <= 32:
            for i, value in enumerate(block.slice(lo, hi - lo).to_pylist()):
                try:
                    value.decode("utf-8")
                except UnicodeDecodeError:
                    mask[lo + i] = False
            return
        mid = (lo + hi) // 2
        for a, b in ((lo, mid), (mid, hi)):
            try:
                pc.cast(block.slice(a, b - a), pa.string())
            except pa.ArrowInvalid:
                visit(a, b)

    visit(0, len(block))
    return mask


_ASCII_SPACE = re.compile(r"[ \t\n\r\x0b\x0c]+")


def ascii_fields(text: str) -> list[str]:
    """``text`` split on ASCII whitespace only (C ``isspace``), as the vectorised splitter does;
    ``str.split()`` would also split on Unicode spaces and the 0x1C-0x1F separators."""
    return [f for f in _ASCII_SPACE.split(text) if f]


def _utf8_problem(value: bytes) -> str:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 text (byte 0x{value[exc.start]:02x} at column {exc.start + 1})"
    return "not valid UTF-8 text"  # pragma: no cover


def comment_mask(first: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Lines whose first field (null for a blank line) starts with ``#``: trec_eval 10 comment lines."""
    if not len(first):
        return np.zeros(0, dtype=bool)
    return pc.starts_with(pc.fill_null(first, ""), "#").to_numpy(zero_copy_only=False)


@dataclass
class SplitLines:
    """Whitespace-split lines: the first ``n_columns`` fields (null where a line is shorter),
    the number of fields of every line (0 for blank and undecodable lines), the raw lines (for
    error messages), the undecodable lines (index → reason) and the lines with a carriage return
    inside them."""

    columns: list[pa.ChunkedArray]
    n_fields: np.ndarray
    raw: pa.ChunkedArray
    undecodable: dict[int, str] = field(default_factory=dict)
    #: lines holding a carriage return (CR) between two fields or inside one: the CR-only line
    #: ends of old Mac files, or a stray CR, which would silently glue several records into one
    #: line (a CR among the leading or trailing blanks, as in CRLF files, is fine)
    cr_inside: np.ndarray | None = None

    def column(self, i: int, mask: np.ndarray | None = None) -> pa.ChunkedArray:
        """Field ``i`` of every line (or of the lines where ``mask`` is true)."""
        col = self.columns[i]
        return col.filter(pa.array(mask)) if mask is not None else col

    def text_of(self, i: int) -> str:
        """Line index ``i`` as text (undecodable bytes replaced), without its line break."""
        value = self.raw[i].as_py() or b""
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        return value.rstrip("\r\n")

    def encoding_problems(self, path: str | None) -> list[Problem]:
        """The undecodable lines as ``encoding`` problems (1-based line numbers, in order)."""
        return [Problem(msg, line=i + 1, path=path, kind="encoding") for i, msg in sorted(self.undecodable.items())]

    def __len__(self) -> int:
        return len(self.n_fields)


def split_chunk(chunk: pa.Array, keep: list[int]) -> tuple[list[pa.Array], np.ndarray, dict[int, str], np.ndarray]:
    """Fields ``keep`` of every line, the number of fields of each line (0: blank or
    undecodable), the undecodable lines (index -> reason) and a mask of the lines holding a
    carriage return between two fields or inside one (see `SplitLines.cr_inside`)."""
    bad: dict[int, str] = {}
    mask = valid_utf8_mask(chunk)
    if mask is not None:
        for i in np.flatnonzero(~mask).tolist():
            bad[i] = _utf8_problem(chunk[i].as_py())
        chunk = pc.if_else(pa.array(mask), chunk, pa.scalar(b"", chunk.type))
    text = pc.cast(chunk, pa.large_string() if chunk.type == pa.large_binary() else pa.string())
    trimmed = pc.ascii_trim_whitespace(text)
    fields = pc.ascii_split_whitespace(trimmed)
    n = pc.list_value_length(fields).to_numpy(zero_copy_only=False)
    n = np.where(pc.equal(trimmed, "").to_numpy(zero_copy_only=False), 0, n)
    cr_inside = pc.match_substring(trimmed, "\r").to_numpy(zero_copy_only=False)
    del trimmed, text
    fixed = pc.list_slice(fields, 0, max(keep) + 1, return_fixed_size_list=True)
    del fields
    cols = [pc.cast(pc.list_element(fixed, i), pa.string()) for i in keep]
    return cols, n.astype(np.int64), bad, cr_inside


def split_lines(source: Source | bytes, n_columns: int, keep: list[int] | None = None) -> SplitLines:
    """Read ``source`` and split every line on ASCII whitespace, keeping the first ``n_columns``
    fields (or only the fields numbered in ``keep``, which must include 0: ``columns[j]`` is
    then field ``keep[j]``; memory for columns nobody reads is saved)."""
    keep = list(range(n_columns)) if keep is None else list(keep)
    data = source if isinstance(source, bytes) else read_source_bytes(source)
    chunks = line_blocks(data)
    if not chunks:
        empty = pa.chunked_array([], pa.string())
        return SplitLines([empty] * len(keep), np.zeros(0, np.int64), pa.chunked_array([], pa.binary()),
                          cr_inside=np.zeros(0, bool))
    workers = min(len(chunks), os.cpu_count() or 1)
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(lambda c: split_chunk(c, keep), chunks))
    else:
        parts = [split_chunk(c, keep) for c in chunks]
    columns = [pa.chunked_array([p[0][i] for p in parts], pa.string()) for i in range(len(keep))]
    n_fields = np.concatenate([p[1] for p in parts])
    undecodable: dict[int, str] = {}
    base = 0
    for chunk, part in zip(chunks, parts):
        undecodable.update({base + i: msg for i, msg in part[2].items()})
        base += len(chunk)
    raw = pa.chunked_array(chunks) if len({c.type for c in chunks}) == 1 else pa.chunked_array(
        [c.cast(pa.large_binary()) for c in chunks])
    return SplitLines(columns, n_fields, raw, undecodable, np.concatenate([p[3] for p in parts]))
