"""Fast line access for whitespace-separated files (TREC runs and qrels).

The file is read as one string column with pyarrow's multi-threaded CSV reader (one field per
line), then split on ASCII whitespace with a vectorised kernel. This keeps every line (blank
ones included) so the row index is the 1-based line number minus one, which the validators
need for their messages, and tolerates what trec_eval tolerates: tabs, runs of spaces,
leading blanks and trailing extra fields.
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv

Source = Union[str, os.PathLike, IO[str], IO[bytes], bytes]

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
    """Whitespace-split lines: ``fields`` is a list array, ``n_fields`` its lengths."""

    fields: pa.ChunkedArray
    n_fields: np.ndarray

    def select(self, mask: np.ndarray) -> SplitLines:
        """The lines where ``mask`` is true (row order kept)."""
        return SplitLines(fields=self.fields.filter(pa.array(mask)), n_fields=self.n_fields[mask])

    def column(self, i: int) -> np.ndarray:
        """Field ``i`` of every line as an object array; every line must have > i fields."""
        if len(self.n_fields) == 0:
            return np.zeros(0, dtype=object)
        return pc.list_element(self.fields, i).to_numpy(zero_copy_only=False)

    def is_comment(self) -> np.ndarray:
        """Lines whose first field starts with ``#`` (trec_eval 10 comment lines)."""
        out = np.zeros(len(self.n_fields), dtype=bool)
        has = self.n_fields > 0
        if has.any():
            first = pc.list_element(self.fields.filter(pa.array(has)), 0)
            out[has] = pc.starts_with(first, "#").to_numpy(zero_copy_only=False)
        return out

    def __len__(self) -> int:
        return len(self.n_fields)


def _read_line_table(data: bytes) -> pa.ChunkedArray:
    if not data:
        return pa.chunked_array([], pa.string())
    if data.startswith(b"\xef\xbb\xbf"):  # UTF-8 byte-order mark
        data = data[3:]
    table = pv.read_csv(
        io.BytesIO(data),
        read_options=pv.ReadOptions(column_names=["line"], block_size=1 << 24),
        parse_options=pv.ParseOptions(
            delimiter="\x1f", quote_char=False, escape_char=False, ignore_empty_lines=False, newlines_in_values=False
        ),
        convert_options=pv.ConvertOptions(column_types={"line": pa.string()}, strings_can_be_null=False),
    )
    return table["line"]


def split_lines(source: Source) -> SplitLines:
    """Read ``source`` and split every line on ASCII whitespace (as C's ``isspace`` does)."""
    lines = _read_line_table(read_source_bytes(source))
    # A file ending without "\n" has no extra empty line; one ending with "\n" neither (pyarrow
    # does not emit a trailing empty row), so row i is line i+1.
    if not len(lines):
        return SplitLines(fields=pa.chunked_array([], pa.list_(pa.string())), n_fields=np.zeros(0, np.int64))
    trimmed = pc.ascii_trim_whitespace(lines)
    fields = pc.ascii_split_whitespace(trimmed)
    n_fields = pc.list_value_length(fields).to_numpy(zero_copy_only=False)
    n_fields = np.where(pc.equal(trimmed, "").to_numpy(zero_copy_only=False), 0, n_fields)
    return SplitLines(fields=fields, n_fields=np.asarray(n_fields, dtype=np.int64))
