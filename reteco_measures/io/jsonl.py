"""One JSONL line reader for every loader, contract and judge file: bad lines become
:class:`~reteco_measures.errors.Problem` values with their line numbers; good lines are never
lost because of a bad one."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any

from ..errors import Problem

__all__ = ["iter_jsonl"]


def iter_jsonl(
    source: str | os.PathLike | bytes,
    problems: list[Problem],
    *,
    name: str | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, object)`` for every JSON-object line of ``source`` (a path, or the bytes of a
    file); blank lines are skipped; a line that is not JSON or not an object, and undecodable
    UTF-8, are appended to ``problems`` (``name`` or the path is the problem's ``path``)."""
    if isinstance(source, bytes):
        handle = io.TextIOWrapper(io.BytesIO(source), encoding="utf-8-sig", errors="strict")
        path = name
    else:
        handle = open(source, encoding="utf-8-sig", errors="strict")  # noqa: SIM115 (closed below)
        path = name or os.fspath(source)
    with handle as f:
        try:
            for i, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                try:
                    rec = json.loads(raw)
                except json.JSONDecodeError as exc:
                    problems.append(Problem(f"not valid JSON: {exc.msg} (column {exc.colno})", line=i, path=path))
                    continue
                if not isinstance(rec, dict):
                    problems.append(Problem("a line must be a JSON object", line=i, path=path))
                    continue
                yield i, rec
        except UnicodeDecodeError as exc:
            problems.append(Problem(f"not valid UTF-8 ({exc.reason}); the rest of the file was not read",
                                    path=path, kind="encoding"))
