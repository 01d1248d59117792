"""Fast line access for whitespace-separated files (TREC runs and qrels).

The file is read as one string column with pyarrow's multi-threaded CSV reader (one field per
line), then each block of lines is trimmed and split on ASCII whitespace with vectorised arrow
kernels, blocks in parallel threads (arrow releases the GIL). Every line is kept (blank ones
included), so row i is line i+1, which the validators need for their messages; tabs, runs of
spaces, leading blanks and trailing extra fields are tolerated, as trec_eval does (C
``isspace``: ASCII whitespace only, so UTF-8 ids are never split).
"""

from __future__ import annotations

import gzip
import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv

Source = str | os.PathLike | IO[str] | IO[bytes] | bytes

__all__ = ["Source", "SplitLines", "split_lines", "source_name", "read_source_bytes", "is_inline_text"]


def is_inline_text(source: object) -> bool:
    """A ``str`` holding data rather than a path (it contains a newline)."""
    return isinstance(source, str) and "\n" in source


def source_name(source: object) -> str | None:
    """A printable name for error messages (the path), or None for in-memory data."""
    if isinstance(source, (str, os.PathLike)) and not is_inline_text(source):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return str(name) if isinstance(name, str) else None


def read_source_bytes(source: Source) -> bytes:
    """The raw bytes of a path (``.gz`` transparently), inline text, bytes or a file object."""
    if isinstance(source, bytes):
        return source
    if is_inline_text(source):
        return source.encode("utf-8")  # type: ignore[union-attr]
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    data = source.read()  # file-like
    return data.encode("utf-8") if isinstance(data, str) else data


@dataclass
class SplitLines:
    """Whitespace-split lines: the first ``n_columns`` fields (null where a line is shorter),
    the number of fields of every line, and the raw lines (for error messages)."""

    columns: list[pa.ChunkedArray]
    n_fields: np.ndarray
    raw: pa.ChunkedArray

    def column(self, i: int, mask: np.ndarray | None = None) -> pa.ChunkedArray:
        """Field ``i`` of every line (or of the lines where ``mask`` is true)."""
        col = self.columns[i]
        return col.filter(pa.array(mask)) if mask is not None else col

    def fields_of(self, i: int) -> list[str]:
        """All fields of line index ``i`` (for messages about that line)."""
        return (self.raw[i].as_py() or "").split()

    def is_comment(self) -> np.ndarray:
        """Lines whose first field starts with ``#`` (trec_eval 10 comment lines)."""
        if not len(self.n_fields):
            return np.zeros(0, dtype=bool)
        first = pc.fill_null(self.columns[0], "")
        return pc.starts_with(first, "#").to_numpy(zero_copy_only=False)

    def __len__(self) -> int:
        return len(self.n_fields)


def _read_line_table(data: bytes) -> pa.ChunkedArray:
    if not data:
        return pa.chunked_array([], pa.string())
    if data.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte-order mark
        data = data[3:]
    table = pv.read_csv(
        io.BytesIO(data),
        read_options=pv.ReadOptions(column_names=["line"], block_size=1 << 23),
        parse_options=pv.ParseOptions(
            delimiter="\x1f", quote_char=False, escape_char=False, ignore_empty_lines=False, newlines_in_values=False
        ),
        convert_options=pv.ConvertOptions(column_types={"line": pa.string()}, strings_can_be_null=False),
    )
    return table["line"]


def _split_chunk(chunk: pa.Array, n_columns: int) -> tuple[list[pa.Array], np.ndarray]:
    trimmed = pc.ascii_trim_whitespace(chunk)
    fields = pc.ascii_split_whitespace(trimmed)
    n = pc.list_value_length(fields).to_numpy(zero_copy_only=False)
    n = np.where(pc.equal(trimmed, "").to_numpy(zero_copy_only=False), 0, n)
    fixed = pc.list_slice(fields, 0, n_columns, return_fixed_size_list=True)
    return [pc.list_element(fixed, i) for i in range(n_columns)], n.astype(np.int64)


def split_lines(source: Source, n_columns: int) -> SplitLines:
    """Read ``source`` and split every line on ASCII whitespace, keeping ``n_columns`` fields."""
    lines = _read_line_table(read_source_bytes(source))
    chunks = [c for c in lines.chunks if len(c)]
    if not chunks:
        empty = pa.chunked_array([], pa.string())
        return SplitLines([empty] * n_columns, np.zeros(0, np.int64), empty)
    workers = min(len(chunks), os.cpu_count() or 1)
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(lambda c: _split_chunk(c, n_columns), chunks))
    else:
        parts = [_split_chunk(c, n_columns) for c in chunks]
    columns = [pa.chunked_array([p[0][i] for p in parts], pa.string()) for i in range(n_columns)]
    n_fields = np.concatenate([p[1] for p in parts])
    return SplitLines(columns, n_fields, pa.chunked_array(chunks, pa.string()))
