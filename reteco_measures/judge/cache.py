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
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:  # POSIX advisory locks; elsewhere concurrent processes are not coordinated
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["JudgmentCache", "cache_key"]

#: bump when the meaning of a cached entry changes
CACHE_FORMAT = 1


def cache_key(prompt_sha256: str, model: str, inputs: dict[str, Any], repeat: int = 0,
              settings: dict[str, Any] | None = None) -> str:
    """The sha256 of the canonical JSON of ``(format, prompt hash, model, inputs[, repeat][, settings])``.

    ``repeat`` (the index of an independent repeated judgment) and ``settings`` (decoding settings
    that differ from the defaults, e.g. a temperature above 0) enter the key only when given, so
    the keys of single judgments at the default settings never change.
    """
    data: dict[str, Any] = {"format": CACHE_FORMAT, "prompt_sha256": prompt_sha256, "model": model, "input": inputs}
    if repeat:
        data["repeat"] = int(repeat)
    if settings:
        data["settings"] = settings
    payload = json.dumps(
        data,
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
        except (OSError, ValueError, RecursionError):
            return None
        return entry if isinstance(entry, dict) and entry.get("key") == key else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` atomically (temporary file + rename)."""
        if self.directory is None:
            return
        text = json.dumps({**entry, "key": key}, ensure_ascii=False, sort_keys=True)
        atomic_write_text(self._path(key), text, fsync=True)

    @contextmanager
    def lock(self, key: str, stop: threading.Event | None = None, poll: float = 0.05) -> Iterator[None]:
        """Hold the lock of ``key`` across processes (an ``fcntl.flock`` on
        ``<dir>/locks/<xx>/<key>.lock``), so two runs sharing this cache never ask the same
        judgment at once: the second waits, then finds the first one's answer in the cache.

        The kernel releases a lock when its process ends, even by ``kill -9``: a stale lock file is
        never a held lock. Waiting stops (``InterruptedError``) when ``stop`` is set. Without a
        cache folder, or where ``fcntl`` is unavailable, this does nothing.
        """
        if self.directory is None or fcntl is None:
            yield
            return
        path = self.directory / "locks" / key[:2] / f"{key}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except (BlockingIOError, PermissionError):
                    if stop is not None and stop.is_set():
                        raise InterruptedError("stopped while waiting for another run's judgment") from None
                    time.sleep(poll)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def __len__(self) -> int:
        if self.directory is None:
            return 0
        return sum(1 for _ in self.directory.glob("*/*.json"))
