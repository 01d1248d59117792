"""Writing the sample's files: `write_files` (every generator ends with it) and the private
cache folder the generated iKAT-like sample lives in."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_files", "private_cache_dir", "matches"]


def write_files(root: str | os.PathLike, files: dict[str, str]) -> list[Path]:
    """Write ``{relative path: text}`` under ``root`` (UTF-8, LF), in path order; return the paths.
    The generators build their whole sample in memory, then call this."""
    written = []
    for rel, text in sorted(files.items()):
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)
    return written


def private_cache_dir() -> Path | None:
    """A folder only the current user can write (``$XDG_CACHE_HOME`` or ``~/.cache``, then
    ``reteco-measures/``, mode 0700), or None when there is no usable home."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "reteco-measures"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = folder.stat()
    except OSError:
        return None
    if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
        return None  # not ours, or writable by others: do not trust it
    return folder


def matches(target: Path, files: dict[str, str]) -> bool:
    """True when ``target`` holds exactly ``files`` (byte for byte; extra files are ignored)."""
    try:
        return all((target / rel).read_bytes() == text.encode("utf-8") for rel, text in files.items())
    except OSError:
        return False
