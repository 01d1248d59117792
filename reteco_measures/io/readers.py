"""Readers for runs and qrels: TREC text formats and JSONL.

All readers return a `pandas.DataFrame` that ir_measures accepts as is, and never lose
good rows because of a bad one: a malformed line is skipped and reported as a
`Problem` (``path:line: query_id: what``) according to
``on_bad_lines`` ('warn' (default) | 'error' | 'skip'), as in `pandas.read_csv`. The
problems are also kept in ``df.attrs["problems"]``.

A TREC run is read by the first of two paths that accepts it: the arrow path (one multi-threaded
pass of arrow's CSV reader, for files of single spaces or single tabs, as almost every system
writes its runs) and the checking path (line by line, every bad line reported). The arrow path
hands a file it does not accept on whole; both read every accepted line to the same values. A
file of 16 MiB or more is parsed by the arrow path in pieces of whole lines of about 8 MiB as
they are read, so that its bytes are never held whole beside the parsed columns (not under an
address-space limit, where arrow's parser threads may fail to start: the file is then read
whole, as a smaller one).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from ..errors import (
    MAX_PROBLEMS_PER_KIND,
    DataFormatError,
    InputOutOfMemoryError,
    InputTooLargeError,
    Problem,
    cap_problems,
    display,
    report_problems,
)
from .jsonl import iter_json_records, json_id, json_number
from .limits import current_limits
from .lines import (
    Source,
    ascii_fields,
    comment_mask,
    has_long_line,
    is_inline_text,
    iter_text_chunks,
    line_blocks,
    read_line_bytes,
    source_name,
    split_chunk,
    strip_compression_suffix,
)
from .memory import trim_heap

__all__ = [
    "read_run", "read_qrels", "read_run_with_problems", "read_qrels_with_problems", "RUN_COLUMNS", "MAX_GRADE",
]

RUN_COLUMNS = ["query_id", "doc_id", "score", "rank", "run_id"]

Format = Literal["auto", "trec", "jsonl"]


# --------------------------------------------------------------------------------------------
# format detection and the values each format allows

#: an integer field (rank, relevance): optional sign and at most 18 decimal digits (always within
#: 64 bits); hexadecimal, decimals ("1.0"), "nan" and longer numbers are reported, never changed
INT_PATTERN = r"^[+-]?[0-9]{1,18}$"
INT_LIMIT = 10**18
#: the largest relevance grade read, in magnitude: qrels with a larger grade are refused line by
#: line. trec_eval (and pytrec_eval, which runs its code) allocates and scans, for every query
#: and measure, an array as long as the query's largest grade: a grade of 2**31 asks for 16 GB,
#: and 10**6 costs about 2.5 ms per query. Graded scales in use are far smaller (0-3 in the TREC
#: Deep Learning tracks, -2-4 in TREC Web, 0-4 in TREC iKAT, gains up to 16 in TREC News).
MAX_GRADE = 1000
#: how a score is written: decimal or scientific notation (what arrow's parser reads as a finite
#: number; it also reads nan / inf, which a score may not be)
FLOAT_PATTERN = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"


#: file-name endings (after a compression suffix) of JSONL files, for format detection
_JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")


def detect_format(source: Source, data: bytes) -> str:
    """``"jsonl"`` for a JSONL name or text starting with ``{`` or ``[`` (after blanks), else ``"trec"``."""
    name = strip_compression_suffix(source_name(source) or "")
    if name.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    first = _NOT_SPACE.search(data)  # no copy of the bytes (lstrip would copy after leading blanks)
    return "jsonl" if first is not None and first.group() in (b"{", b"[") else "trec"


_NOT_SPACE = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def _cast_mask(values: pa.Array | pa.ChunkedArray, target: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """Cast strings to ``target`` with arrow's own parser (the one the arrow path's CSV reader
    uses, so a value is read the same way whatever the other lines hold); values it refuses
    are found by bisection and come back as a mask (their slots hold 0)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    bad = np.zeros(len(values), dtype=bool)
    try:
        return pc.cast(values, target), bad
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass

    def visit(lo: int, hi: int) -> None:
        if hi - lo <= 16:
            for i in range(lo, hi):
                try:
                    pc.cast(values.slice(i, 1), target)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    bad[i] = True
            return
        mid = (lo + hi) // 2
        for a, b in ((lo, mid), (mid, hi)):
            try:
                pc.cast(values.slice(a, b - a), target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                visit(a, b)

    visit(0, len(values))
    cleaned = pc.if_else(pa.array(bad), pa.scalar("0", values.type), values)
    return pc.cast(cleaned, target), bad


def parse_scores(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Score strings → float64 and a mask of the refused ones: a score is a decimal or
    scientific-notation number (arrow's float parser) whose value is finite; ``nan``, ``inf``,
    hexadecimal and numbers beyond the float64 range (``1e400``) are refused."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.float64), np.zeros(0, dtype=bool)
    try:
        num, bad = pc.cast(values, pa.float64()), np.zeros(len(values), dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # refuse what is not written as a decimal number in one vectorised pass, so that a
        # file full of bad scores is not bisected value by value; arrow parses the rest
        syntax = pc.fill_null(pc.match_substring_regex(values, FLOAT_PATTERN), False)
        num, bad = _cast_mask(pc.if_else(syntax, values, "0"), pa.float64())
        bad |= ~syntax.to_numpy(zero_copy_only=False)
    out = num.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    bad |= ~np.isfinite(out)
    return np.where(bad, 0.0, out), bad


def parse_ints(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Integer strings → int64 and a mask of the refused ones (see `INT_PATTERN`)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    ok = pc.fill_null(pc.match_substring_regex(values, INT_PATTERN), False).to_numpy(zero_copy_only=False)
    cleaned = pc.if_else(pa.array(ok), pc.replace_substring_regex(values, r"^\+", ""), "0")
    return pc.cast(cleaned, pa.int64()).to_numpy(zero_copy_only=False), ~ok


def _grade_fault(value: int) -> str:
    """Why a relevance grade beyond `MAX_GRADE` is refused, in words."""
    return (f"relevance {value} is beyond the largest grade read ({-MAX_GRADE} to {MAX_GRADE}; "
            "trec_eval allocates memory by grade)")


def _clip(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters for a message (a 16 MB line stays one short line)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _score_fault(text: str) -> str:
    """Why a score string was refused, in words: not a number at all, a number written in a form
    a score may not take (Python's ``float`` reads ``3_0`` as 30.0 and ``٣`` as 3.0; a run's
    score is written as a decimal or scientific-notation number), or not finite."""
    try:
        value = float(text)
    except ValueError:
        return "is not a number"
    if math.isfinite(value):
        what = "with '_' as a digit separator" if "_" in text else "in a form other than plain digits"
        return (f"is a number written {what} (Python would read it as {value!r}); a score is written as a "
                "decimal or scientific-notation number such as 30 or 3.0e1")
    return "is not a finite number (NaN, infinite or beyond the float64 range)"


def _str_array(values: pa.ChunkedArray | pa.Array) -> pd.api.extensions.ExtensionArray:
    """An arrow string array as a pandas string column without copying through Python objects,
    its chunks joined into one contiguous array (once, here): the kernels then take rows from it
    without arrow joining the chunks again on every ``take`` (a copy of the column each time)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks(memory_pool=_POOL()) if values.num_chunks != 1 else values.chunk(0)
    if values.type != pa.large_string():
        values = pc.cast(values, pa.large_string(), memory_pool=_POOL())  # pandas' str dtype holds large_string
    return pd.Series(pa.table({"v": values}).to_pandas()["v"]).array


def _POOL() -> pa.MemoryPool:
    """The pool of the columns a reader keeps: ``malloc``'s (`pyarrow.system_memory_pool`), so
    that the parsed table's memory goes back to the system as it is converted column by column
    (arrow's default mimalloc / jemalloc pool keeps freed segments for its own reuse)."""
    return pa.system_memory_pool()


def _label_array(values: pa.ChunkedArray | pa.Array) -> pd.Categorical:
    """A column that repeats a few values (a run's ``run_id``) as a pandas categorical: one
    small integer code per row instead of a string per row."""
    if isinstance(values, pa.ChunkedArray):
        if pa.types.is_dictionary(values.type):
            values = values.unify_dictionaries(memory_pool=_POOL())
        values = values.combine_chunks(memory_pool=_POOL()) if values.num_chunks != 1 else values.chunk(0)
    enc = values if pa.types.is_dictionary(values.type) else pc.dictionary_encode(values, memory_pool=_POOL())
    codes = enc.indices.to_numpy(zero_copy_only=False)
    categories = pd.Index(_str_array(enc.dictionary), dtype="str")
    small = np.int8 if len(categories) < 127 else np.int16 if len(categories) < 32767 else np.int32
    return pd.Categorical.from_codes(codes.astype(small), categories=categories)


def _table_frame(holder: list[pa.Table], names: list[str]) -> pd.DataFrame:
    """The columns ``names`` of the table in the one-item list ``holder`` (emptied: the caller
    keeps no reference) as a DataFrame, one column at a time: each arrow column is released once
    converted, so the table and the frame are never both held whole (strings as `_str_array`,
    numbers as numpy arrays)."""
    table = holder.pop().select(names)
    columns: dict[str, Any] = {}
    for name in names:
        col = table.column(name)
        table = table.drop_columns([name])
        if name == "run_id":
            columns[name] = _label_array(col)
        elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            columns[name] = _str_array(col)
        else:
            columns[name] = (col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)).to_numpy(
                zero_copy_only=False)
            if name == "rank":
                columns[name] = columns[name].astype(np.int64, copy=False)  # parsed as int32
        del col
    return pd.DataFrame(columns, copy=False)


def out_of_memory(source: Source, what: str) -> InputOutOfMemoryError:
    """The error for a file the machine's memory could not hold while it was read or scored."""
    name = source_name(source)
    return InputOutOfMemoryError([Problem(
        f"the {what} did not fit in memory while it was read: free memory (or raise the process's memory limit), "
        "read a smaller file, or lower the reading limits (--max-lines, --max-line-bytes); "
        "'eval --stream' reads a run in blocks", path=name, kind="too_large")])


def _with_long_lines(problems: list[Problem], long_lines: list[Problem]) -> list[Problem]:
    """The reader's problems and the over-long lines, in line order (the long ones capped)."""
    if not long_lines:
        return problems
    capped = cap_problems(long_lines, path=long_lines[0].path)
    return sorted([*problems, *capped], key=lambda p: (p.line is None, p.line or 0))


# --------------------------------------------------------------------------------------------
# TREC run

_RUN_NAMES = ["query_id", "q0", "doc_id", "rank", "score", "run_id"]


def _valid_utf8(data: bytes) -> bool:
    """Whether all of ``data`` is UTF-8 text: one vectorised arrow validation of the whole
    buffer, without a copy (a few milliseconds for 100 MB of ASCII)."""
    whole = pa.Array.from_buffers(pa.large_binary(), 1, [None, pa.py_buffer(np.array([0, len(data)], np.int64)),
                                                        pa.py_buffer(data)])
    try:
        pc.cast(whole, pa.large_string())
    except pa.ArrowInvalid:
        return False
    return True


#: bytes of an arrow CSV block (each block is parsed by one thread)
_ARROW_BLOCK_BYTES = 1 << 20


def _fast_trec_run(data: bytes | list[bytes], line_numbers: bool = True, *, release: bool = False,
                   rank: bool = True) -> pd.DataFrame | None:
    """The arrow path, in one multi-threaded pass: fields separated by one space (or one tab),
    exactly 6 fields, no blank or comment lines, numeric rank and finite score. Returns None
    when the file needs the checking path, which reads every line the arrow path accepts to the
    same values.

    ``data`` may be a one-item list holding the bytes; with ``release=True`` the list is emptied
    once arrow has parsed them (the caller can read them again: a file), so that the bytes and the
    parsed table are not both held while the frame is built (peak memory on large files).
    ``rank=False``: the rank column is checked (an integer) but not kept."""
    parsed = _fast_trec_table(data, release=release)
    if parsed is None:
        return None
    holder = [parsed[0]]
    del parsed  # the holder keeps the only reference: the table is freed column by column
    return _run_table_frame(holder, line_numbers, rank)


def _run_table_frame(holder: list[pa.Table], line_numbers: bool, rank: bool) -> pd.DataFrame:
    """The run frame of the table the arrow path accepted, in the one-item list ``holder``
    (emptied: the table is released column by column as the frame is built)."""
    frame = _table_frame(holder, ["query_id", "doc_id", "score", *(["rank"] if rank else []), "run_id"])
    if line_numbers:
        frame["line"] = np.arange(1, len(frame) + 1, dtype=np.int64)
    return frame


def _fast_trec_table(data: bytes | list[bytes], *, release: bool = False, tabbed: bool | None = None
                     ) -> tuple[pa.Table, bool] | None:
    """The arrow path's parsing and checks (see `_fast_trec_run`): ``(table, tabbed)``, or None.
    ``tabbed``: the separator (a tab or a space) found by an earlier piece of the same file;
    None: the first line's."""
    box = data if isinstance(data, list) else [data]
    data = box[0]
    if not data or data.startswith((b"\xef\xbb\xbf", b"\n")) or b"\n\n" in data:
        return None  # a blank line (one memchr-like scan): the checking path, without parsing first
    if tabbed is None:
        head = data[: data.find(b"\n")] if b"\n" in data else data
        tabbed = b"\t" in head
    if not tabbed and b"  " in data:
        return None  # an empty field (the Q0 column, not kept, is not parsed: see below)
    # Each test below is one single-byte scan of the bytes (memchr). Space-separated: any other
    # ASCII whitespace (tab, CR, VT, FF) needs the checking path. An empty field (a doubled,
    # leading or trailing separator in a line that lacks a field) is read as null and sends the
    # file on. Tab-separated: spaces may pad numbers (trec_eval's own test runs do; arrow's
    # number parser accepts them) but must not appear inside the other fields, checked after
    # parsing. Arrow's integer parser reads hexadecimal ("0x10"), which a rank is not: such
    # files take the checking path too, as do comment lines (a first field starting with '#').
    # Text must be UTF-8 throughout: one validation of the whole buffer, so arrow need not
    # validate each string column (Q0, tab-separated, is read as bytes, only to be checked).
    others = [b"\r", b"\x0b", b"\x0c"] + ([] if tabbed else [b"\t"])
    if (any(c in data for c in others) or ((b"x" in data or b"X" in data) and (b"0x" in data or b"0X" in data))
            or not _valid_utf8(data)):
        return None
    try:
        table = pv.read_csv(
            pa.BufferReader(pa.py_buffer(data)),  # zero copy, read without the GIL
            read_options=pv.ReadOptions(column_names=_RUN_NAMES, block_size=_ARROW_BLOCK_BYTES),
            parse_options=pv.ParseOptions(
                delimiter="\t" if tabbed else " ", quote_char=False, escape_char=False, ignore_empty_lines=False
            ),
            convert_options=pv.ConvertOptions(
                # large_string: pandas' str dtype takes it without a copy
                column_types={"query_id": pa.large_string(), "q0": pa.binary(),
                              # a rank beyond 32 bits takes the checking path (same values)
                              "doc_id": pa.large_string(), "rank": pa.int32(), "score": pa.float64(),
                              # a run's few names as codes from the start (4 bytes a row, not a string)
                              "run_id": pa.dictionary(pa.int32(), pa.large_string())},
                check_utf8=False,  # validated above
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
                null_values=[""],
                # space-separated, Q0 is not even parsed: every line still needs its six fields
                # (arrow counts them), and an empty one was refused above (a doubled space)
                include_columns=None if tabbed else [c for c in _RUN_NAMES if c != "q0"],
            ),
            memory_pool=_POOL(),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if release:
        box.clear()
        del data
    if len(table) == 0 or any(col.null_count for col in table.columns):
        return None
    if not pc.all(pc.is_finite(table["score"])).as_py():
        return None
    if pc.any(pc.starts_with(table["query_id"], "#")).as_py():
        return None
    low, high = pc.min_max(table["rank"]).values()
    if max(abs(low.as_py()), abs(high.as_py())) >= INT_LIMIT:
        return None
    if tabbed:
        for c in ("query_id", "q0", "doc_id", "run_id"):
            values = table[c].cast(pa.large_string()) if pa.types.is_dictionary(table[c].type) else table[c]
            if pc.any(pc.match_substring_regex(values, r"[ \t\r\x0b\x0c]")).as_py():
                return None
        table = table.drop_columns(["q0"])
    return table, tabbed


#: a run file of at least this many bytes on disk is parsed by the arrow path in pieces of whole
#: lines of about `_PIECE_BYTES`, one after the other (`_fast_trec_file`)
_PIECES_FROM_BYTES = 1 << 24
_PIECE_BYTES = 1 << 23


def _address_space_limited() -> bool:
    """Whether the process runs under an address-space limit (``RLIMIT_AS``). Arrow's parser
    threads (each reserves a stack) may then fail to start, which arrow cannot always report
    as an error; the file is then read whole, where running out of memory is reported as such
    (`out_of_memory`)."""
    if resource is None:
        return False
    return resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY


def _fast_trec_file(source: Source, format: Format, line_numbers: bool, rank: bool,
                    max_line_bytes: int | None) -> pd.DataFrame | bool:
    """The arrow path for a large file, read in pieces of whole lines (`iter_text_chunks`: the
    same decompression and reading limits) and parsed piece by piece, so that the file's bytes
    are never held whole beside the parsed columns (peak memory: one piece instead of the file).

    Every piece must pass the arrow path's checks, with the first piece's separator. Returns the
    frame; ``False`` when a piece needs the checking path (which reads every line the arrow path
    accepts to the same values: the caller goes there directly); ``True`` when the file is small,
    not TREC text, or meets a reading limit or damage: the caller reads it whole, as for any
    file, and reports what it finds."""
    if not (isinstance(source, (str, os.PathLike)) and not is_inline_text(source) and os.path.isfile(source)
            and os.path.getsize(source) >= _PIECES_FROM_BYTES) or _address_space_limited():
        return True
    limit = current_limits().max_line_bytes if max_line_bytes is None else (max_line_bytes or None)
    tables: list[pa.Table] = []
    tabbed: bool | None = None
    try:
        for piece in iter_text_chunks(source, _PIECE_BYTES):
            if not tables and format == "auto" and detect_format(source, piece) != "trec":
                return True
            if limit and len(piece) > limit and has_long_line(piece, limit):
                return True  # the whole-file reading reports the line (one piece holds it whole, at most)
            parsed = _fast_trec_table([piece], release=True, tabbed=tabbed)
            del piece
            if parsed is None:
                return False
            tables.append(parsed[0])
            tabbed = parsed[1]
            del parsed
    except (InputTooLargeError, DataFormatError):
        return True  # the whole-file reading meets it again and reports it

    if not tables:
        return True
    holder = [pa.concat_tables(tables)]
    del tables  # the holder keeps the only reference to the pieces' columns
    return _run_table_frame(holder, line_numbers, rank)


#: why a line with a carriage return between its fields is refused
CR_INSIDE = ("a carriage return (CR) inside the line: records end with a newline (LF or CRLF); "
             "a CR-only line end or a stray CR would join several records into one line")


def _line_fields_problem(raw: bytes, line: int, path: str | None, cr_inside: bool, glued: bool = False
                         ) -> Problem:
    """The problem of a run line that cannot be one record: a CR inside it, a second record after
    its sixth field (``glued``), or fewer than six fields."""
    fields = ascii_fields(raw.decode("utf-8", errors="replace"))
    qid = _clip(fields[0]) if fields else None
    if cr_inside:
        return Problem(CR_INSIDE, line=line, query_id=qid, path=path)
    if glued:
        return Problem(f"found {len(fields)} fields, and fields 7-12 are another record (a missing line break): "
                       f"{_clip(' '.join(fields))!r}", line=line, query_id=qid, path=path)
    return Problem(f"expected 6 columns 'query_id Q0 doc_id rank score run_id', found {len(fields)}: "
                   f"{_clip(' '.join(fields))!r}", line=line, query_id=qid, path=path)


def _glued_records(block: pa.Array, n: np.ndarray) -> np.ndarray:
    """Lines of at least 12 fields whose fields 7-12 are another record (its rank an integer and
    its score a number, as the format writes them): two records joined by a lost line break.
    Other fields after the sixth are free text, which trec_eval ignores (its own test runs
    carry some), and so do we."""
    glued = np.zeros(len(n), dtype=bool)
    many = np.flatnonzero(n >= 12)
    if len(many):
        (rank_s, score_s), _, _, _ = split_chunk(block.take(pa.array(many)), [9, 10])
        _, bad_rank = parse_ints(rank_s)
        score_ok = pc.fill_null(pc.match_substring_regex(score_s, FLOAT_PATTERN), False).to_numpy(zero_copy_only=False)
        glued[many] = ~bad_rank & score_ok
    return glued


def _check_run_block(block: pa.Array, first_line: int | np.ndarray, path: str | None,
                     cap: int = MAX_PROBLEMS_PER_KIND) -> tuple[dict[str, Any], list[Problem], dict[str, int]]:
    """The checking path for one block of lines: split, check, parse; only good rows are kept.
    ``first_line`` is the number of the block's first line (its lines follow each other), or
    the line number of every value of the block (a block without its blank lines).
    At most ``cap`` problems of each kind are made; the others are only counted (the third
    value: kind -> number not made)."""
    if not len(block):
        empty = pa.array([], pa.string())
        return ({"query_id": empty, "doc_id": empty, "run_id": empty, "score": np.zeros(0), "rank":
                 np.zeros(0, np.int64), "line": np.zeros(0, np.int64)}, [], {})
    numbers = (np.arange(len(block), dtype=np.int64) + first_line if isinstance(first_line, int)
               else np.asarray(first_line, dtype=np.int64))
    cols, n, undecodable, cr_inside = split_chunk(block, [0, 2, 3, 4, 5])  # the Q0 column is never read
    problems = [Problem(msg, line=int(numbers[i]), path=path, kind="encoding") for i, msg in undecodable.items()]
    uncounted: dict[str, int] = {}
    comment = comment_mask(cols[0])
    # a line that cannot be one record: a CR inside it (comment lines too: a CR-only file that
    # starts with a comment would otherwise vanish whole), fewer than six fields, or a second
    # record after the sixth
    glued = _glued_records(block, n) & ~comment
    wrong = (n > 0) & (cr_inside | (~comment & (n < 6)) | glued)
    wrong_at = np.flatnonzero(wrong)
    if len(wrong_at) > cap:
        uncounted["format"] = len(wrong_at) - cap
        wrong_at = wrong_at[:cap]
    for i in wrong_at.tolist():
        problems.append(_line_fields_problem(bytes(block[i].as_py()), int(numbers[i]), path, bool(cr_inside[i]),
                                             bool(glued[i])))
    # fields after the sixth: kept as trec_eval reads them (ignored), but never silently
    extra_at = np.flatnonzero((n > 6) & ~comment & ~wrong)
    if len(extra_at) > cap:
        uncounted["extra_fields"] = len(extra_at) - cap
        extra_at = extra_at[:cap]
    for i in extra_at.tolist():
        problems.append(Problem(f"found {int(n[i])} fields: the fields after the sixth (the run id) are ignored, as "
                                "trec_eval ignores them", line=int(numbers[i]), query_id=_clip(cols[0][i].as_py()),
                                path=path, kind="extra_fields", severity="warning"))
    keep = (n > 0) & ~comment & ~wrong
    if not keep.all():
        cols = [c.filter(pa.array(keep)) for c in cols]
    line_no = numbers[keep]
    qid, doc, rank_s, score_s, run_id = cols
    score, bad_score = parse_scores(score_s)
    rank, bad_rank = parse_ints(rank_s)
    faulty = np.flatnonzero(bad_score | bad_rank)
    if len(faulty) > cap:  # make at most cap of each kind: the first cap of either, counting the rest
        score_at, rank_at = faulty[bad_score[faulty]], faulty[~bad_score[faulty]]
        for kind, at in (("score", score_at), ("format", rank_at)):
            if len(at) > cap:
                uncounted[kind] = uncounted.get(kind, 0) + len(at) - cap
        faulty = np.sort(np.concatenate([score_at[:cap], rank_at[:cap]]))
    for j in faulty.tolist():
        q, d = qid[j].as_py(), doc[j].as_py()
        if bad_score[j]:
            msg, kind = f"score {_clip(score_s[j].as_py())!r} {_score_fault(score_s[j].as_py())}", "score"
        else:
            msg, kind = f"rank {_clip(rank_s[j].as_py())!r} is not an integer (at most 18 digits)", "format"
        problems.append(Problem(msg, line=int(line_no[j]), query_id=q, path=path, kind=kind, doc_id=d))
    ok = ~(bad_score | bad_rank)
    strings = [qid, doc, run_id]
    if not ok.all():
        mask = pa.array(ok)
        strings = [c.filter(mask) for c in strings]
        score, rank, line_no = score[ok], rank[ok], line_no[ok]
    out = dict(zip(("query_id", "doc_id", "run_id"), strings))
    out.update(score=score, rank=rank, line=line_no.astype(np.int64))
    return out, problems, uncounted


#: ASCII whitespace (C ``isspace``), by byte value
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True


def _non_blank(block: pa.Array) -> np.ndarray | None:
    """Indices of the lines of ``block`` that hold more than ASCII whitespace, or None when all
    do: one vectorised pass over the block's bytes, so that blank lines never reach the splitter
    (a file of millions of blank lines costs its newline search and nothing per line)."""
    offsets = np.frombuffer(block.buffers()[1], dtype=np.int64 if block.type == pa.large_binary() else np.int32,
                            count=len(block) + 1, offset=block.offset * (8 if block.type == pa.large_binary() else 4))
    data = np.frombuffer(block.buffers()[2], dtype=np.uint8)
    used = ~_SPACE[data[offsets[0]:offsets[-1]]]
    seen = np.concatenate([[0], np.cumsum(used, dtype=np.int64)])
    filled = seen[offsets[1:] - offsets[0]] > seen[offsets[:-1] - offsets[0]]
    return None if filled.all() else np.flatnonzero(filled)


def _trim(part: tuple[dict[str, Any], list[Problem], dict[str, int]], made: dict[str, int],
          cap: int = MAX_PROBLEMS_PER_KIND) -> tuple[dict[str, Any], list[Problem], dict[str, int]]:
    """A block's result with only the problems that keep each kind within ``cap`` over the blocks
    so far (``made``, updated); the others are counted in the result's third value."""
    rows, problems, uncounted = part
    kept = []
    for p in sorted(problems, key=lambda p: p.line or 0):
        if made.get(p.kind, 0) < cap:
            made[p.kind] = made.get(p.kind, 0) + 1
            kept.append(p)
        else:
            uncounted[p.kind] = uncounted.get(p.kind, 0) + 1
    return rows, kept, uncounted


def _byte_chunks(data: bytes, size: int | None = None) -> Iterator[bytes]:
    """``data`` in pieces of whole lines of about ``size`` bytes (`_CHECK_CHUNK_BYTES`; a longer
    line makes a longer piece); the pieces joined are ``data``. Cutting in-memory bytes as a file
    is read keeps the per-line arrays of `line_blocks` to one piece at a time."""
    size = size or _CHECK_CHUNK_BYTES
    pos = 0
    while pos < len(data):
        cut = data.rfind(b"\n", pos, pos + size) + 1 if pos + size < len(data) else len(data)
        if cut <= pos:  # no newline within size bytes: up to the next one
            nxt = data.find(b"\n", pos + size)
            cut = len(data) if nxt < 0 else nxt + 1
        yield data[pos:cut]
        pos = cut


#: bytes of one chunk of the checking path (a file is read again chunk by chunk), and lines of
#: one block (the unit checked by one thread): a block's temporaries cost about 200 bytes per
#: line, so a block of short lines (``x``) must hold few of them for the memory to stay within a
#: few times the file's size; blank lines are dropped before (`_non_blank`)
_CHECK_CHUNK_BYTES = 1 << 18
_CHECK_BLOCK_LINES = 1 << 15


def _block_problems(parts: list, path: Any) -> list[Problem]:
    """The problems of a file read in blocks (each part: columns, problems kept, problems counted
    past the cap by kind), in line order and capped per kind with the true counts kept."""
    uncounted: dict[str, int] = {}
    for part in parts:
        for kind, k in part[2].items():
            uncounted[kind] = uncounted.get(kind, 0) + k
    kept = sorted((p for part in parts for p in part[1]), key=lambda p: p.line or 0)
    return cap_problems(kept, uncounted, path=path)


#: a run file of this many bytes or more hands the free pages of malloc's heaps back once read
#: (`trim_heap`: a walk over the heaps, worth it for a large file, not for each small block)
_TRIM_BYTES = 1 << 23


def _read_trec_run(source: Source, holder: list[bytes], line_numbers: bool = True, reread_guarded: bool = False,
                   max_line_bytes: int | None = None, rank: bool = True, try_fast: bool = True
                   ) -> tuple[pd.DataFrame, list[Problem]]:
    """``holder`` holds the file's bytes and is emptied, so that they are freed as soon as the
    lines are parsed (peak memory on large files); ``rank=False`` keeps no rank column;
    ``try_fast=False``: straight to the checking path (the arrow path refused a piece already)."""
    is_file = isinstance(source, (str, os.PathLike)) and not is_inline_text(source) and os.path.isfile(source)
    box = [holder.pop()]
    large = len(box[0]) >= _TRIM_BYTES
    fast = _fast_trec_run(box, line_numbers, release=is_file, rank=rank) if try_fast else None
    if fast is not None:
        if large:
            trim_heap()  # the parser's small blocks, freed but kept by malloc
        return fast, []
    pa.default_memory_pool().release_unused()  # what the failed fast attempt allocated
    path = source_name(source)
    if is_file:
        # a file: read it again block by block (from the page cache), so that its bytes are
        # never held whole while the lines are checked (peak memory on large files)
        box.clear()
        limit = current_limits().max_line_bytes if max_line_bytes is None else (max_line_bytes or None)
        chunks = iter_text_chunks(source, _CHECK_CHUNK_BYTES, max_line_bytes=limit if reread_guarded else None)
    else:
        chunks = _byte_chunks(box.pop())
    parts: list[tuple[dict[str, Any], list[Problem], dict[str, int]]] = []
    workers = max(1, min(2, os.cpu_count() or 1))
    next_line = 1
    made: dict[str, int] = {}  # problems kept so far, by kind
    pool = pa.default_memory_pool()
    with ThreadPoolExecutor(workers) as executor:
        pending: list = []
        first_chunk = True
        for chunk in chunks:
            blocks = line_blocks(chunk, _CHECK_CHUNK_BYTES, strip_bom=first_chunk, max_lines=_CHECK_BLOCK_LINES)
            first_chunk = False
            del chunk
            for block in blocks:
                at = _non_blank(block)
                if at is None:  # no blank line
                    pending.append(executor.submit(_check_run_block, block, next_line, path))
                elif len(at):
                    pending.append(executor.submit(_check_run_block, block.take(pa.array(at)), at + next_line, path))
                next_line += len(block)
                while len(pending) > workers:
                    parts.append(_trim(pending.pop(0).result(), made))
                    pool.release_unused()  # the block's temporaries (mimalloc keeps them otherwise)
            del blocks
        parts.extend(_trim(f.result(), made) for f in pending)
        del pending
    pool.release_unused()  # the blocks' temporaries (and the file's bytes, freed above)
    problems = _block_problems(parts, path)
    parts = [part for part in parts if len(part[0]["score"])] or parts[:1]
    if not parts:
        parts = [({"query_id": pa.array([], pa.string()), "doc_id": pa.array([], pa.string()),
                   "run_id": pa.array([], pa.string()), "score": np.zeros(0), "rank": np.zeros(0, np.int64),
                   "line": np.zeros(0, np.int64)}, [], {})]
    columns: dict[str, Any] = {}
    for name in ("query_id", "doc_id", "score", "rank", "run_id", "line"):
        values = [part[0].pop(name) for part in parts]
        if name == "rank" and not rank:
            del values
        elif name == "run_id":
            columns[name] = _label_array(pa.chunked_array(values, pa.string()))
            del values
            pool.release_unused()
        elif name in ("query_id", "doc_id"):
            columns[name] = _str_array(pa.chunked_array(values, pa.string()))
            del values
            pool.release_unused()
        else:
            columns[name] = np.concatenate(values)
            del values
    frame = pd.DataFrame(columns, copy=False)
    del columns, parts
    pool.release_unused()  # the blocks' temporaries
    if large:
        trim_heap()
    return frame, problems


# --------------------------------------------------------------------------------------------
# JSONL results


def _record_query_id(rec: dict[str, Any], alias: str, line: int | None, path: str | None,
                     problems: list[Problem]) -> str | None:
    """A JSONL record's ``query_id`` (or its ``alias`` field) as a str; None, with the problem
    recorded, when it is missing or not a string / integer."""
    raw = rec.get("query_id", rec.get(alias))
    qid = json_id(raw)
    if qid is None:
        what = "missing field 'query_id'" if raw is None else f"query_id {_short(raw)} is not a string"
        problems.append(Problem(what, line=line, path=path, kind="field"))
    return qid


def _read_jsonl_run(source: Source, data: bytes) -> tuple[pd.DataFrame, list[Problem]]:
    path = source_name(source)
    problems: list[Problem] = []
    qids: list[str] = []
    docs: list[str] = []
    scores: list[float] = []
    ranks: list[int] = []
    line_nos: list[int] = []
    for line, rec in iter_json_records(data, problems, name=path):
        if "query_id" not in rec and isinstance(rec.get("turns"), list):  # the iKAT 2023 run format
            problems.append(Problem(
                "an iKAT 2023 run (a JSON object with run_name, run_type, turns), not a run of rows: read it "
                "with rm.validate_run(path, 'ikat') (its .run is the passage run; command line: --contract ikat "
                "or 'score ikat-2023')", line=line, path=path, kind="format"))
            continue
        qid = _record_query_id(rec, "qid", line, path, problems)
        if qid is None:
            continue
        results = rec.get("results")
        if results is None:
            problems.append(Problem("missing field 'results'", line=line, query_id=qid, path=path, kind="field"))
            continue
        if not isinstance(results, list):
            problems.append(Problem("'results' must be a list", line=line, query_id=qid, path=path, kind="field"))
            continue
        for pos, item in enumerate(results, start=1):
            doc = json_id(item.get("doc_id")) if isinstance(item, dict) else None
            if doc is None:
                what = "lacks 'doc_id'" if not isinstance(item, dict) or item.get("doc_id") is None else (
                    f"doc_id {_short(item['doc_id'])} is not a string")
                problems.append(Problem(f"result {pos} {what}", line=line, query_id=qid, path=path, kind="field"))
                continue
            score = json_number(item.get("score"))
            if score is None:
                problems.append(
                    Problem(f"result {pos} ({doc}): score {_short(item.get('score'))} is not a finite number",
                            line=line, query_id=qid, path=path, kind="score", doc_id=doc)
                )
                continue
            qids.append(qid)
            docs.append(doc)
            scores.append(score)
            ranks.append(pos)
            line_nos.append(line if line is not None else 0)
    frame = pd.DataFrame(
        {
            "query_id": pd.array(qids, dtype="str"),
            "doc_id": pd.array(docs, dtype="str"),
            "score": np.asarray(scores, dtype=np.float64),
            "rank": np.asarray(ranks, dtype=np.int64),
            "run_id": pd.Categorical.from_codes(np.zeros(len(qids), dtype=np.int8), categories=pd.Index([""], dtype="str")),
            "line": np.asarray(line_nos, dtype=np.int64),
        }
    )
    return frame, problems


def _short(value: Any, limit: int = 40) -> str:
    """A value for a message, cut to ``limit`` characters (a 5000-digit number stays readable)."""
    try:
        text = json.dumps(value, ensure_ascii=False) if not isinstance(value, int) or abs(value) < 10**100 else None
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is None:
        text = f"<{type(value).__name__}>" if not isinstance(value, int) else "<an integer of more than 100 digits>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_run_with_problems(source: Source, format: Format = "auto", *, line_numbers: bool = True,
                           max_line_bytes: int | None = None, rank: bool = True
                           ) -> tuple[pd.DataFrame, list[Problem]]:
    """Like `read_run`, returning ``(frame with a 'line' column, problems)``; never raises
    on malformed content (only on a missing file or a folder, a file beyond a reading limit or
    beyond the memory: `InputTooLargeError`). ``line_numbers=False`` may leave
    the ``line`` column out (it is then dropped if present); ``rank=False`` leaves the ``rank``
    column out (see `read_run`)."""
    long_lines: list[Problem] = []
    try:
        pieces = _fast_trec_file(source, format, line_numbers, rank, max_line_bytes) if format != "jsonl" else True
        if not isinstance(pieces, bool):
            trim_heap()  # the parser's small blocks, freed but kept by malloc
            return pieces, []
        if pieces is False:  # the pieces parsed before the one refused: their memory, back to the system
            trim_heap()
        data = read_line_bytes(source, long_lines, max_line_bytes)
        fmt = detect_format(source, data) if format == "auto" else format
        if fmt == "trec":
            holder = [data]
            del data  # the reader frees the bytes once parsed
            frame, problems = _read_trec_run(source, holder, line_numbers, bool(long_lines), max_line_bytes, rank,
                                             try_fast=pieces)
        elif fmt == "jsonl":
            frame, problems = _read_jsonl_run(source, data)
            if not rank:
                frame = frame.drop(columns="rank")
        else:
            raise ValueError(f"unknown run format {format!r}; use 'auto', 'trec' or 'jsonl'")
    except MemoryError:
        raise out_of_memory(source, "run") from None
    return frame, _with_long_lines(problems, long_lines)


def read_run(
    source: Source,
    format: Format = "auto",
    *,
    on_bad_lines: Literal["warn", "error", "skip"] = "warn",
    line_numbers: bool = False,
    max_line_bytes: int | None = None,
    rank: bool = True,
) -> pd.DataFrame:
    """Read a run: TREC 6-column text or JSONL results.

    Args:
        source: a path (``.gz`` read transparently), a string holding the file's text, bytes,
            or an open file.
        format: ``'trec'`` (``query_id Q0 doc_id rank score run_id``; tabs, runs of spaces and
            trailing free text after the run id are tolerated as trec_eval does; lines starting
            with ``#`` are comments; a line with a carriage return inside it, or with a second
            record in fields 7-12, is reported), ``'jsonl'`` (one ``{"query_id", "results":
            [{"doc_id", "score"}]}`` per line) or ``'auto'`` (by extension, else by the first
            character).
        on_bad_lines: what to do with malformed lines: ``'warn'`` (skip them and warn),
            ``'error'`` (raise `DataFormatError` listing all of
            them) or ``'skip'``.
        line_numbers: keep a ``line`` column (1-based line of each row in the file).
        max_line_bytes: a line longer than this is a ``long_line`` problem and is skipped without
            being split (None: the limit in force, 1 MiB unless changed with
            ``reteco_measures.io.limits.read_limits``; 0: no limit).
        rank: keep the ``rank`` column (default). ``False`` leaves it out, 8 bytes a line less:
            the rank field is still checked (an integer, as trec_eval's format writes it), but
            an evaluation never reads it (trec_eval ranks by score; `rank_run` computes ranks).

    Returns:
        DataFrame with columns ``query_id, doc_id, score, rank, run_id`` (+ ``line``) in file
        order: ids as arrow-backed ``str`` columns, ``run_id`` as a categorical (a run repeats
        one name; one small code per row). For JSONL, ``rank`` is the 1-based position in the
        results list and ``run_id`` is empty. Duplicates are
        *not* removed here: that is a run contract's job (`validate_run`).
    """
    frame, problems = read_run_with_problems(source, format, line_numbers=line_numbers, max_line_bytes=max_line_bytes,
                                             rank=rank)
    report_problems(problems, on_bad_lines, source_name(source) or "run")
    if not line_numbers and "line" in frame.columns:
        frame = frame.drop(columns="line")
    frame.attrs["problems"] = problems
    return frame


# --------------------------------------------------------------------------------------------
# qrels


def _check_qrels_block(block: pa.Array, numbers: np.ndarray, path: str | None, cap: int = MAX_PROBLEMS_PER_KIND
                       ) -> tuple[dict[str, Any], list[Problem], dict[str, int]]:
    """One block of qrels lines (``numbers``: the line number of each): split, check, parse; at
    most ``cap`` problems are made (the others counted by kind)."""
    cols, n, undecodable, cr_inside = split_chunk(block, [0, 1, 2, 3])
    problems = [Problem(msg, line=int(numbers[i]), path=path, kind="encoding") for i, msg in undecodable.items()]
    uncounted: dict[str, int] = {}
    comment = comment_mask(cols[0])
    bad_at = np.flatnonzero((n > 0) & (cr_inside | ((n != 4) & ~comment)))
    if len(bad_at) > cap:
        uncounted["format"] = len(bad_at) - cap
        bad_at = bad_at[:cap]
    for i in bad_at.tolist():
        fields = ascii_fields(bytes(block[i].as_py()).decode("utf-8", errors="replace"))
        if cr_inside[i]:
            problems.append(Problem(CR_INSIDE, line=int(numbers[i]), query_id=_clip(fields[0]), path=path))
            continue
        problems.append(
            Problem(f"expected 4 columns 'query_id iteration doc_id relevance', found {len(fields)}",
                    line=int(numbers[i]), query_id=_clip(fields[0]), path=path)
        )
    keep = (n == 4) & ~comment & ~cr_inside
    line_no = numbers[keep]
    mask = pa.array(keep)
    qid, it, doc, rel_s = (c.filter(mask) for c in cols)
    rel, bad = parse_ints(rel_s)
    too_large = ~bad & (np.abs(rel) > MAX_GRADE)
    faulty = np.flatnonzero(bad | too_large)
    if len(faulty) > cap:
        uncounted["format"] = uncounted.get("format", 0) + len(faulty) - cap
        faulty = faulty[:cap]
    for j in faulty.tolist():
        what = _grade_fault(int(rel[j])) if too_large[j] else (
            f"relevance {_clip(rel_s[j].as_py())!r} is not an integer (at most 18 digits)")
        problems.append(Problem(what, line=int(line_no[j]), query_id=qid[j].as_py(), path=path, doc_id=doc[j].as_py()))
    ok = ~(bad | too_large)
    mask = pa.array(ok)
    rows = {"query_id": qid.filter(mask), "doc_id": doc.filter(mask), "relevance": rel[ok].astype(np.int64),
            "iteration": it.filter(mask), "line": line_no[ok].astype(np.int64)}
    return rows, problems, uncounted


def _read_trec_qrels(source: Source, data: bytes | list[bytes]) -> tuple[pd.DataFrame, list[Problem]]:
    """TREC qrels, block by block as the run's checking path (blank lines dropped first, at most
    `MAX_PROBLEMS_PER_KIND` problems per kind, then a counted summary). ``data`` may be a
    one-item list, emptied so that the bytes are freed once cut (peak memory)."""
    if isinstance(data, list):
        data = data.pop()
    path = source_name(source)
    pool = pa.default_memory_pool()
    parts = []
    made: dict[str, int] = {}
    next_line = 1
    for k, chunk in enumerate(_byte_chunks(data)):
        for block in line_blocks(chunk, _CHECK_CHUNK_BYTES, max_lines=_CHECK_BLOCK_LINES, strip_bom=k == 0):
            at = _non_blank(block)
            if at is None:
                parts.append(_trim(_check_qrels_block(block, np.arange(len(block)) + next_line, path), made))
            elif len(at):
                parts.append(_trim(_check_qrels_block(block.take(pa.array(at)), at + next_line, path), made))
            next_line += len(block)
            pool.release_unused()
    del data
    problems = _block_problems(parts, path)

    columns: dict[str, Any] = {}
    for name in ("query_id", "doc_id", "relevance", "iteration", "line"):
        values = [part[0].pop(name) for part in parts]  # each column freed once converted (peak memory)
        if name in ("relevance", "line"):
            columns[name] = np.concatenate(values) if values else np.zeros(0, np.int64)
        else:
            columns[name] = _str_array(pa.chunked_array(values, pa.string()))
        del values
        pool.release_unused()
    frame = pd.DataFrame(columns, copy=False)
    return frame, problems


_GOLD_LIST_FIELDS = ("relevant_doc_ids", "gold_ids", "gold_doc_ids")


def _read_jsonl_qrels(source: Source, data: bytes) -> tuple[pd.DataFrame, list[Problem]]:
    """JSONL qrels: ``{"query_id", "doc_id", "relevance"}`` per line, or one record per query
    with a list of relevant ids (``relevant_doc_ids`` / ``gold_ids`` / ``gold_doc_ids``,
    relevance 1) as in the ChunQiu and RETECO example files."""
    path = source_name(source)
    problems: list[Problem] = []
    rows: list[tuple[str, str, int, int]] = []
    for line, rec in iter_json_records(data, problems, name=path):
        qid = _record_query_id(rec, "id", line, path, problems)
        if qid is None:
            continue
        gold_field = next((f for f in _GOLD_LIST_FIELDS if f in rec), None)
        if "doc_id" in rec:
            doc = json_id(rec["doc_id"])
            if doc is None:
                problems.append(Problem(f"doc_id {_short(rec['doc_id'])} is not a string", line=line, query_id=qid,
                                        path=path, kind="field"))
                continue
            rel = rec.get("relevance", 1)
            if isinstance(rel, bool) or not isinstance(rel, int) or abs(rel) >= INT_LIMIT:
                problems.append(Problem(f"relevance {_short(rel)} is not an integer (at most 18 digits)", line=line,
                                        query_id=qid, path=path, doc_id=doc))
                continue
            if abs(rel) > MAX_GRADE:
                problems.append(Problem(_grade_fault(rel), line=line, query_id=qid, path=path, doc_id=doc))
                continue
            rows.append((qid, doc, rel, line or 0))
        elif gold_field is not None:
            ids = rec[gold_field]
            if not isinstance(ids, list):
                problems.append(Problem(f"'{gold_field}' must be a list", line=line, query_id=qid, path=path))
                continue
            good = [json_id(d) for d in ids]
            for pos, (raw, d) in enumerate(zip(ids, good), start=1):
                if d is None:
                    problems.append(Problem(f"'{gold_field}' item {pos}: {_short(raw)} is not a string id", line=line,
                                            query_id=qid, path=path, kind="field"))
            rows.extend((qid, d, 1, line or 0) for d in good if d is not None)
        else:
            problems.append(Problem("needs 'doc_id' (+ 'relevance') or a list 'relevant_doc_ids'",
                                    line=line, query_id=qid, path=path, kind="field"))
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance", "line"])
    frame = frame.astype({"query_id": "str", "doc_id": "str", "relevance": np.int64, "line": np.int64})
    frame.insert(3, "iteration", pd.array(["0"] * len(frame), dtype="str"))
    return frame, problems


def repeated_judgments(frame: pd.DataFrame, path: str | None) -> list[Problem]:
    """The (query, document) pairs judged more than once in qrels read with a ``line`` column:
    a pair judged with different grades is a ``conflicting_grade`` warning naming both lines and
    the grade kept (the last one: the evaluation reads qrels into a dictionary, as pytrec_eval
    does, so a later line overwrites an earlier one); an exact repeat is a ``repeated_judgment``
    note. One vectorised pass; problems beyond `MAX_PROBLEMS_PER_KIND` per kind are counted."""
    if len(frame) < 2:
        return []
    keys = frame[["query_id", "doc_id"]]
    dup = keys.duplicated(keep=False).to_numpy()
    if not dup.any():
        return []
    sub = frame.loc[dup, ["query_id", "doc_id", "relevance", "line"]]
    grouped = sub.groupby(["query_id", "doc_id"], sort=False)
    first_line = grouped["line"].transform("first").to_numpy()
    first_grade = grouped["relevance"].transform("first").to_numpy()
    last_grade = grouped["relevance"].transform("last").to_numpy()
    prev_grade = grouped["relevance"].shift(1).to_numpy()
    prev_line = grouped["line"].shift(1).to_numpy()
    later = ~np.isnan(prev_line.astype(np.float64))
    problems: list[Problem] = []
    q, d = sub["query_id"].to_numpy(), sub["doc_id"].to_numpy()
    g, ln = sub["relevance"].to_numpy(), sub["line"].to_numpy()
    conflict = later & (g != prev_grade)
    repeat = later & ~conflict
    del first_line, first_grade
    for kind, at in (("conflicting_grade", np.flatnonzero(conflict)), ("repeated_judgment", np.flatnonzero(repeat))):
        for i in at[:MAX_PROBLEMS_PER_KIND].tolist():
            if kind == "conflicting_grade":
                msg = (f"document {display(d[i])} judged twice with different grades: line {int(prev_line[i])} grade "
                       f"{int(prev_grade[i])}, line {int(ln[i])} grade {int(g[i])}; grade {int(last_grade[i])} (the "
                       "last line) is used, as pytrec_eval reads qrels")
                severity = "warning"
            else:
                msg = f"document {display(d[i])} judged again with the same grade as on line {int(prev_line[i])}"
                severity = "note"
            problems.append(Problem(msg, line=int(ln[i]), query_id=str(q[i]), path=path, kind=kind, doc_id=str(d[i]),
                                    severity=severity))  # type: ignore[arg-type]
        if len(at) > MAX_PROBLEMS_PER_KIND:
            problems = cap_problems(problems, {kind: len(at) - MAX_PROBLEMS_PER_KIND}, path=path)
    return problems


def read_qrels_with_problems(source: Source, format: Format = "auto", *, max_line_bytes: int | None = None
                             ) -> tuple[pd.DataFrame, list[Problem]]:
    """Like `read_qrels`, returning ``(frame with a 'line' column, problems)``. Besides the lines
    that were skipped (severity ``'error'``), the problems hold the pairs judged twice
    (`repeated_judgments`: ``conflicting_grade`` warnings and ``repeated_judgment`` notes), whose
    rows are kept."""
    long_lines: list[Problem] = []
    try:
        data = read_line_bytes(source, long_lines, max_line_bytes)
        fmt = detect_format(source, data) if format == "auto" else format
        if fmt == "trec":
            holder = [data]
            del data  # the reader frees the bytes once cut into blocks
            frame, problems = _read_trec_qrels(source, holder)
        elif fmt == "jsonl":
            frame, problems = _read_jsonl_qrels(source, data)
        else:
            raise ValueError(f"unknown qrels format {format!r}; use 'auto', 'trec' or 'jsonl'")
        problems = problems + repeated_judgments(frame, source_name(source))
    except MemoryError:
        raise out_of_memory(source, "qrels") from None
    return frame, _with_long_lines(problems, long_lines)


def read_qrels(
    source: Source,
    format: Format = "auto",
    *,
    on_bad_lines: Literal["warn", "error", "skip"] = "warn",
    line_numbers: bool = False,
    max_line_bytes: int | None = None,
) -> pd.DataFrame:
    """Read relevance judgments: TREC qrels (``query_id iteration doc_id relevance``; ``#``
    comment lines skipped, as trec_eval 10 does) or JSONL.

    A relevance grade is an integer from -1000 to 1000 (`MAX_GRADE`); a line with a larger
    one is reported and skipped, because trec_eval's measures allocate memory by grade.

    Returns a DataFrame with columns ``query_id, doc_id, relevance, iteration`` (+ ``line``),
    in file order. Repeated (query, doc) pairs are kept as they are; evaluation uses the last
    one, as pytrec_eval's dictionaries do. A pair judged twice with different grades is a
    ``conflicting_grade`` warning (both lines, the grade used; warned unless
    ``on_bad_lines='skip'``), an exact repeat a ``repeated_judgment`` note; both are in
    ``attrs["problems"]`` and neither raises with ``on_bad_lines='error'``.
    """
    frame, problems = read_qrels_with_problems(source, format, max_line_bytes=max_line_bytes)
    report_problems(problems, on_bad_lines, source_name(source) or "qrels")
    if not line_numbers:
        frame = frame.drop(columns="line")
    frame.attrs["problems"] = problems
    return frame
