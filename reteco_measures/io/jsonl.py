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
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONTextError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                            exc.lineno) from None
    except RecursionError:
        raise JSONTextError("not valid JSON here: nested too deeply to read") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        reason = str(exc).split(";")[0]
        raise JSONTextError(f"not valid JSON here: {reason}") from None


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
            problems.append(Problem(str(exc).replace(" (line 1, ", " ("), line=i, path=path))
            continue
        if not isinstance(rec, dict):
            problems.append(Problem("a line must be a JSON object", line=i, path=path))
            continue
        yield i, rec
