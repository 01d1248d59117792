"""Disk cache of judgments keyed by (prompt sha256, model, input).

One JSON file per key under ``<dir>/<first two hex digits>/<key>.json``, written to a temporary file
in the same folder and renamed into place (``os.replace``), so a run killed at any moment leaves
either the whole entry or none: a rerun asks only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["JudgmentCache", "cache_key"]

#: bump when the meaning of a cached entry changes
CACHE_FORMAT = 1


def cache_key(prompt_sha256: str, model: str, inputs: dict[str, Any]) -> str:
    """The sha256 of the canonical JSON of (format, prompt hash, model, inputs)."""
    payload = json.dumps(
        {"format": CACHE_FORMAT, "prompt_sha256": prompt_sha256, "model": model, "input": inputs},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()



def atomic_write_text(path: str | Path, text: str, *, fsync: bool = False) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file in the same folder, then a rename,
    so a reader (or a resumed run) never sees a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:16]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise

class JudgmentCache:
    """A folder of cached judgments (``None`` directory = no caching)."""

    def __init__(self, directory: str | os.PathLike | None) -> None:
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached entry, or None (also for an unreadable entry, which is then re-asked)."""
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            with open(path, encoding="utf-8") as f:
                entry = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) and entry.get("key") == key else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` atomically (temporary file + rename)."""
        if self.directory is None:
            return
        text = json.dumps({**entry, "key": key}, ensure_ascii=False, sort_keys=True)
        atomic_write_text(self._path(key), text, fsync=True)

    def __len__(self) -> int:
        if self.directory is None:
            return 0
        return sum(1 for _ in self.directory.glob("*/*.json"))
