"""One JSON / JSONL reader for every loader, contract, judge file and run / qrels reader: bad
lines become `Problem` values with their line numbers; good lines
are never lost because of a bad one.

Hostile text never raises out of here: invalid UTF-8 costs its own line, JSON nested too deeply
for the parser, numbers with more digits than Python converts, and anything else
`json.loads` refuses become a message (see `loads`). `iter_jsonl` is the only
loop over JSONL lines in the package's general readers, so one damaged line is reported in the
same words, with the same number, whichever function reads it.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

from ..errors import MAX_PROBLEMS_PER_KIND, DuplicateKeyError, JSONTextError, Problem
from .lines import read_source_bytes

__all__ = ["iter_jsonl", "iter_json_records", "loads", "JSONTextError", "json_number", "json_id",
           "read_json_document"]


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` for `loads` that refuses a key twice in one object (the
    parser alone would keep its last value) with `DuplicateKeyError`."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def loads(text: str | bytes, *, object_pairs_hook: Any = None) -> Any:
    """`json.loads` whose every failure is a `JSONTextError` with a readable message
    (also for nesting deeper than the parser's recursion limit and integers longer than Python's
    digit limit, which `json.loads` reports as ``RecursionError`` / a bare ``ValueError``).
    ``object_pairs_hook`` is passed to `json.loads`; what it raises (other than
    ``ValueError``) goes through unchanged."""
    if isinstance(text, bytes):
        data = text.removeprefix(_BOM)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
            raise JSONTextError(f"not valid UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}, column {column})",
                                line) from None
    try:
        value = json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        reason = _BOM_REASON if exc.msg.startswith("Unexpected UTF-8 BOM") else exc.msg
        raise JSONTextError(f"not valid JSON: {reason} (line {exc.lineno}, column {exc.colno})",
                            exc.lineno) from None
    except RecursionError:
        line = _line_of(text, _too_deep(text))
        raise JSONTextError(f"not valid JSON: nested too deeply to read{_at(line)}", line) from None
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
        digits = re.search("[0-9]{" + str(limit + 1) + ",}", text)
        line = _line_of(text, digits.start()) if digits else None
        reason = f"an integer of more than {limit} digits" if digits else str(exc).split(";")[0].split(":")[0]
        raise JSONTextError(f"not valid JSON: {reason}{_at(line)}", line) from None
    if "\\u" in text:  # an escaped lone UTF-16 surrogate ("\\ud800") decodes to no text
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            line = _line_of(text, _lone_surrogate(text))
            raise JSONTextError(f"not valid JSON text: a string holds a lone UTF-16 surrogate{_at(line)}",
                                line) from None
    return value


_BOM = b"\xef\xbb\xbf"
#: json.loads's "Unexpected UTF-8 BOM (decode using utf-8-sig)" in plain words (a file's own BOM is
#: dropped before parsing: this is one inside a file, at the start of a line)
_BOM_REASON = "a byte-order mark (U+FEFF) before the value"

_SURROGATE = re.compile(r"\\u([dD][89a-fA-F][0-9a-fA-F]{2})")


def _lone_surrogate(text: str) -> int | None:
    """Offset of the first escaped UTF-16 surrogate that is not half of a pair."""
    skip = -1
    for m in _SURROGATE.finditer(text):
        if m.start() == skip:
            continue
        code = int(m.group(1), 16)
        low = _SURROGATE.match(text, m.end())
        if code < 0xDC00 and low and int(low.group(1), 16) >= 0xDC00:
            skip = m.end()
            continue
        return m.start()
    return None


def _too_deep(text: str, limit: int = 500) -> int | None:
    """Offset where bracket nesting first exceeds ``limit`` (strings not excluded: a hint)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "[{":
            depth += 1
            if depth > limit:
                return i
        elif ch in "]}":
            depth -= 1
    return None


def _line_of(text: str, offset: int | None) -> int | None:
    return None if offset is None else text.count("\n", 0, offset) + 1


def _at(line: int | None) -> str:
    return f" (line {line})" if line is not None else ""


def json_number(value: Any) -> float | None:
    """A JSON number as a finite float64, or None for anything else (booleans, strings, null,
    NaN / Infinity, and integers beyond the float range, which Python would raise on)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def json_id(value: Any) -> str | None:
    """A JSON id (a string, or an integer written without quotes) as a str, or None for
    anything else (null, booleans, floats, lists, objects, strings holding a lone UTF-16
    surrogate): ids are never made up from them."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")  # a lone surrogate ("\\ud800") is no text
        except UnicodeEncodeError:
            return None
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def read_json_document(path: str | os.PathLike) -> Any:
    """One JSON document from a file (``.gz``/``.bz2``/``.xz`` decompressed); every failure is a
    `JSONTextError` (or `FileNotFoundError` for a missing file or a folder)."""
    return loads(read_source_bytes(path))


def _what(value: Any) -> str:
    """The JSON type of a value that is not an object, for a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, (int, float)):
        return "a JSON number"
    if isinstance(value, str):
        return "a JSON string"
    return "a JSON array" if isinstance(value, list) else type(value).__name__


def _file_bytes(source: str | os.PathLike | bytes, name: str | None) -> tuple[bytes, str | None]:
    if isinstance(source, bytes):
        return source, name
    return read_source_bytes(source), name or os.fspath(source)


def iter_jsonl(
    source: str | os.PathLike | bytes,
    problems: list[Problem],
    *,
    name: str | None = None,
    blank_lines: list[int] | None = None,
    unique: bool = False,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, object)`` for every JSON-object line of ``source`` (a path, ``.gz`` / ``.bz2`` /
    ``.xz`` read transparently, or the bytes of a file).

    Lines are the pieces between ``\\n`` bytes, numbered from 1 (a final newline starts no
    line; ``\\r\\n`` endings are fine). A UTF-8 byte-order mark at the start of the file is
    dropped; anywhere else it is an error. Lines holding only ASCII whitespace are skipped (their
    numbers are appended to ``blank_lines`` when a list is given: a reader whose format forbids
    blank lines reports them itself; the empty piece after a final newline is no line). Each
    other line that is not one JSON object is appended to ``problems`` with its number (``name``
    or the path is the problem's ``path``), and the reading goes on:

    * invalid UTF-8: ``not valid UTF-8 text (byte 0xe9 at column 18)`` (the column counts
      bytes from 1), kind ``'encoding'``;
    * not JSON: ``not valid JSON: Expecting value (column 6)`` (the parser's reason and
      column), ``not valid JSON: nested too deeply to read``, ``not valid JSON: an integer of
      more than 4300 digits`` (Python's conversion limit), or ``not valid JSON text: a string
      holds a lone UTF-16 surrogate``, kind ``'format'``;
    * valid JSON but not an object: ``a line must be a JSON object, found a JSON array`` (or
      ``a JSON string`` / ``a JSON number`` / ``a JSON boolean`` / ``null``), kind ``'format'``;
    * with ``unique=True``, a key twice in one object (at any depth; the parser alone keeps
      its last value): ``the key "score" appears twice in one object``, kind ``'format'``.
    """
    data, path = _file_bytes(source, name)
    yield from _jsonl_lines(data, path, problems, blank_lines, unique)


def iter_json_records(
    source: str | os.PathLike | bytes,
    problems: list[Problem],
    *,
    name: str | None = None,
) -> Iterator[tuple[int | None, dict[str, Any]]]:
    """`iter_jsonl`, also accepting a file that is one JSON array of objects (the
    records then have no line: ``(None, object)``).

    A file is read as one array when its first non-blank character is ``[`` and either the
    whole file parses as one JSON array, or it does not but the first line is not a JSON value
    of its own and the parser's error lies after the first line (a damaged array spread over
    lines: that error is the one problem, with its line). Any other file is JSONL, read line by
    line by `iter_jsonl`, so a JSONL file whose first line is an array (or too deep to
    parse) loses that line only. An array item that is not an object is a problem (``array
    item 2 must be a JSON object, found a JSON number``, no line)."""
    data, path = _file_bytes(source, name)
    if data.removeprefix(_BOM).lstrip()[:1] == b"[":
        try:
            records = loads(data)
        except JSONTextError as exc:
            if exc.lineno is not None and exc.lineno > 1 and not _is_json(_first_line(data)):
                problems.append(Problem(str(exc), line=exc.lineno, path=path,
                                        kind="encoding" if str(exc).startswith("not valid UTF-8") else "format"))
                return
        else:
            for pos, rec in enumerate(records if isinstance(records, list) else [records], start=1):
                if isinstance(rec, dict):
                    yield None, rec
                else:
                    problems.append(Problem(f"array item {pos} must be a JSON object, found {_what(rec)}", path=path))
            return
    yield from _jsonl_lines(data, path, problems)


def _first_line(data: bytes) -> bytes:
    """The first line holding more than ASCII whitespace (the file's byte-order mark dropped)."""
    for raw in data.removeprefix(_BOM).split(b"\n"):
        if raw.strip():
            return raw
    return b""  # pragma: no cover (only called on a file holding a '[')


def _is_json(raw: bytes) -> bool:
    try:
        loads(raw)
    except JSONTextError:
        return False
    return True


_NOT_SPACE = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def _filled_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of the lines holding more than ASCII whitespace, found by a search
    for the next such byte (blank lines are skipped inside the regular-expression engine: no
    Python object per blank line)."""
    pos, line, counted = 0, 1, 0
    while (m := _NOT_SPACE.search(data, pos)) is not None:
        start = data.rfind(b"\n", 0, m.start()) + 1
        end = data.find(b"\n", m.start())
        end = len(data) if end < 0 else end
        line += data.count(b"\n", counted, start)
        counted = start
        yield line, data[start:end]
        pos = end


def _jsonl_lines(data: bytes, path: str | None, problems: list[Problem],
                 blank_lines: list[int] | None = None, unique: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON-object lines; at most `MAX_PROBLEMS_PER_KIND` problems of each kind are appended,
    the rest counted in one summary problem per kind (appended when the iteration ends)."""
    made: dict[str, int] = {}
    more: dict[str, int] = {}
    target = problems

    class _Capped(list):
        def append(self, p: Problem) -> None:  # type: ignore[override]
            if made.get(p.kind, 0) < MAX_PROBLEMS_PER_KIND:
                made[p.kind] = made.get(p.kind, 0) + 1
                target.append(p)
            else:
                more[p.kind] = more.get(p.kind, 0) + 1

    try:
        yield from _jsonl_body(data, path, _Capped(), blank_lines, unique)
    finally:
        for kind, n in more.items():
            target.append(Problem(f"... and {n:,} more problem(s) of kind '{kind}' like the ones above (only the "
                                  f"first {MAX_PROBLEMS_PER_KIND:,} of each kind are listed)", path=path, kind=kind,
                                  count=n))


def _jsonl_body(data: bytes, path: str | None, problems: list[Problem],
                blank_lines: list[int] | None = None, unique: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    hook = unique_keys if unique else None
    data = data.removeprefix(_BOM)
    if blank_lines is None:
        lines: Iterator[tuple[int, bytes]] = _filled_lines(data)
    else:
        pieces = data.split(b"\n")
        lines = enumerate(pieces, start=1)
    for i, raw in lines:
        if not raw.strip():
            if blank_lines is not None and (raw or i < len(pieces)):  # b"" after a final newline: no line
                blank_lines.append(i)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(f"not valid UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                                    line=i, path=path, kind="encoding"))
            continue
        repeated = None
        try:
            try:
                rec = loads(text, object_pairs_hook=hook)
            except DuplicateKeyError as exc:
                # rare: read the line again without the hook, so that its other faults (a lone
                # surrogate, not an object) are named first, as for any line
                repeated, rec = exc.args[0], loads(text)
        except JSONTextError as exc:  # one line: its number is the problem's, not the message's
            problems.append(Problem(str(exc).replace(" (line 1, ", " (").replace(" (line 1)", ""), line=i, path=path))
            continue
        if not isinstance(rec, dict):
            problems.append(Problem(f"a line must be a JSON object, found {_what(rec)}", line=i, path=path))
            continue
        if repeated is not None:
            problems.append(Problem(f"the key {json.dumps(repeated)} appears twice in one object", line=i, path=path))
            continue
        yield i, rec
