"""One JSON / JSONL reader for every loader, contract and judge file: bad lines become
:class:`~reteco_measures.errors.Problem` values with their line numbers; good lines are never
lost because of a bad one.

Hostile text never raises out of here: invalid UTF-8 costs its own line, JSON nested too deeply
for the parser, numbers with more digits than Python converts, and anything else
:func:`json.loads` refuses become a message (see :func:`loads`).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

from ..errors import Problem

__all__ = ["iter_jsonl", "loads", "JSONTextError", "json_number", "json_id", "read_json_document"]


class JSONTextError(ValueError):
    """Text that is not one valid JSON value; ``lineno`` is the 1-based line inside the text
    when the parser knows it."""

    def __init__(self, message: str, lineno: int | None = None):
        super().__init__(message)
        self.lineno = lineno


def loads(text: str | bytes) -> Any:
    """:func:`json.loads` whose every failure is a :class:`JSONTextError` with a readable message
    (also for nesting deeper than the parser's recursion limit and integers longer than Python's
    digit limit, which :func:`json.loads` reports as ``RecursionError`` / a bare ``ValueError``)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JSONTextError(f"not valid UTF-8 (byte 0x{text[exc.start]:02x} at offset {exc.start})") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONTextError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                            exc.lineno) from None
    except RecursionError:
        line = _line_of(text, _too_deep(text))
        raise JSONTextError(f"not valid JSON: nested too deeply to read{_at(line)}", line) from None
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
        digits = re.search("[0-9]{" + str(limit + 1) + ",}", text)
        line = _line_of(text, digits.start()) if digits else None
        reason = str(exc).split(";")[0].split(":")[0]
        raise JSONTextError(f"not valid JSON: {reason}{_at(line)}", line) from None
    if "\\u" in text:  # an escaped lone UTF-16 surrogate ("\\ud800") decodes to no text
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            line = _line_of(text, _lone_surrogate(text))
            raise JSONTextError(f"not valid JSON text: a string holds a lone UTF-16 surrogate{_at(line)}",
                                line) from None
    return value


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
    :class:`JSONTextError` (or :class:`FileNotFoundError` for a missing file or a folder)."""
    from ._lines import read_source_bytes

    return loads(read_source_bytes(path))


def iter_jsonl(
    source: str | os.PathLike | bytes,
    problems: list[Problem],
    *,
    name: str | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, object)`` for every JSON-object line of ``source`` (a path, ``.gz`` / ``.bz2`` /
    ``.xz`` read transparently, or the bytes of a file); blank lines are skipped; a line that is
    not JSON, not an object or not UTF-8 is appended to ``problems`` with its number (``name``
    or the path is the problem's ``path``) and the reading goes on."""
    from ._lines import read_source_bytes

    if isinstance(source, bytes):
        data, path = source, name
    else:
        path = name or os.fspath(source)
        data = read_source_bytes(source)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for i, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(f"not valid UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                                    line=i, path=path, kind="encoding"))
            continue
        try:
            rec = loads(text)
        except JSONTextError as exc:
            problems.append(Problem(str(exc).replace(" (line 1, ", " (").replace(" (line 1)", ""), line=i, path=path))
            continue
        if not isinstance(rec, dict):
            problems.append(Problem("a line must be a JSON object", line=i, path=path))
            continue
        yield i, rec
