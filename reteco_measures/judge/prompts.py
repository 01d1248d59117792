"""Versioned judge prompts: one file per dimension, identified by its sha256.

A prompt file (``prompts/<family>/<dimension>.v<N>.txt``) has a header of ``# key: value`` lines
(``family``, ``dimension``, ``version``, ``scale`` as ``lo-hi``), then a ``=== system ===`` section
and a ``=== user ===`` section. Placeholders are written ``{{name}}`` and are replaced in a single
pass, so text that itself contains braces (JSON, code, user input) is never re-interpreted.

The sha256 of the file's bytes is recorded in every judgment: changing one character of a prompt
changes the hash, and with it the cache key, so old judgments are never mixed with new ones.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..io.judgments import ALIASES, FAMILIES, canonical, family_of  # noqa: F401  (declared with the Likert measure)

__all__ = [
    "Prompt",
    "FAMILIES",
    "load_prompt",
    "parse_prompt",
    "family_of",
    "available_prompts",
    "prompt_index",
]

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_ANGLE = re.compile(r"<([^<>\n]{1,200})>")
_FILE = re.compile(r"^(?P<dimension>\w+)\.v(?P<version>\d+)\.txt$")
_SECTION = re.compile(r"^=== (system|user) ===$", re.M)


@dataclass(frozen=True)
class Prompt:
    """One judge prompt.

    Attributes:
        family: ``reteco``, ``ikat`` or ``tempo``.
        dimension: the judged dimension (``correctness``, ``groundedness``, ...).
        version: the integer version of the file.
        low, high: the integer score range the reply must fall in.
        system, user: the two message templates.
        sha256: hex digest of the file's bytes.
        source: where it was read from (for messages).
    """

    family: str
    dimension: str
    version: int
    low: int
    high: int
    system: str
    user: str
    sha256: str
    source: str = "<text>"

    @property
    def placeholders(self) -> set[str]:
        """Names used as ``{{name}}`` in the templates."""
        return set(_PLACEHOLDER.findall(self.system)) | set(_PLACEHOLDER.findall(self.user))

    @property
    def reply_placeholders(self) -> tuple[str, ...]:
        """The ``<...>`` texts of the templates (the reply format's ``<integer from 1 to 5>``,
        ``<one or two sentences ...>``): a reply that copies one gives no information."""
        return tuple(dict.fromkeys(m.strip() for m in _ANGLE.findall(self.system + "\n" + self.user)))

    def normalize(self, score: int) -> float:
        """Map a score in [low, high] linearly onto [0, 1]: (s - low) / (high - low).

        For the RETECO 1-5 scale this is (s - 1)/4, for the iKAT 0-4 scale s/4."""
        return (score - self.low) / (self.high - self.low)

    def render(self, variables: dict[str, str]) -> list[dict[str, str]]:
        """The chat messages for ``variables`` (every placeholder must be given)."""
        missing = self.placeholders - set(variables)
        if missing:
            raise KeyError(f"prompt {self.source} needs {sorted(missing)}")

        def sub(text: str) -> str:
            return _PLACEHOLDER.sub(lambda m: variables[m.group(1)], text)

        return [{"role": "system", "content": sub(self.system)}, {"role": "user", "content": sub(self.user)}]


def parse_prompt(data: bytes, source: str = "<text>") -> Prompt:
    """Parse a prompt file's bytes (see the module docstring for the format)."""
    text = data.decode("utf-8")
    header: dict[str, str] = {}
    parts = _SECTION.split(text)
    # parts = [header, 'system', body, 'user', body]
    if len(parts) != 5 or parts[1] != "system" or parts[3] != "user":
        raise ValueError(f"{source}: a prompt needs '=== system ===' then '=== user ===' sections")
    for line in parts[0].splitlines():
        m = re.match(r"^#\s*(\w+)\s*:\s*(.+?)\s*$", line)
        if m:
            header[m.group(1)] = m.group(2)
    for key in ("family", "dimension", "version", "scale"):
        if key not in header:
            raise ValueError(f"{source}: header line '# {key}: ...' is missing")
    m = re.match(r"^(-?\d+)\s*-\s*(-?\d+)$", header["scale"])
    if not m or int(m.group(1)) >= int(m.group(2)):
        raise ValueError(f"{source}: scale must look like '1-5', not {header['scale']!r}")
    return Prompt(
        family=header["family"],
        dimension=header["dimension"],
        version=int(header["version"]),
        low=int(m.group(1)),
        high=int(m.group(2)),
        system=parts[2].strip("\n"),
        user=parts[4].strip("\n") + "\n",
        sha256=hashlib.sha256(data).hexdigest(),
        source=source,
    )


def _candidates(directory: Path | None, family: str, dimension: str) -> list[tuple[int, str, bytes]]:
    found: list[tuple[int, str, bytes]] = []
    if directory is not None:
        for sub in (directory / family, directory):
            if sub.is_dir():
                for path in sub.iterdir():
                    m = _FILE.match(path.name)
                    if m and m.group("dimension") == dimension:
                        found.append((int(m.group("version")), str(path), path.read_bytes()))
            if found:
                break
        return found
    root = resources.files("reteco_measures.judge").joinpath("prompts", family)
    if root.is_dir():
        for entry in root.iterdir():
            m = _FILE.match(entry.name)
            if m and m.group("dimension") == dimension:
                found.append((int(m.group("version")), f"reteco_measures/judge/prompts/{family}/{entry.name}",
                              entry.read_bytes()))
    return found


def load_prompt(dimension: str, *, version: int | None = None, directory: str | Path | None = None) -> Prompt:
    """Load the prompt of ``dimension``.

    Args:
        dimension: e.g. ``correctness``, ``coherence``, ``groundedness``, ``temporal_relevance``.
        version: a specific version; default the highest version present.
        directory: a folder of your own prompt files (``<dir>/<family>/<dim>.v<N>.txt`` or
            ``<dir>/<dim>.v<N>.txt``) instead of the packaged ones.
    """
    dim = canonical(dimension)
    family = family_of(dim)
    found = _candidates(Path(directory) if directory is not None else None, family, dim)
    if version is not None:
        found = [f for f in found if f[0] == version]
    if not found:
        where = directory or "the packaged prompts"
        raise FileNotFoundError(f"no prompt file for {dim!r}{f' v{version}' if version else ''} in {where}")
    ver, source, data = max(found)
    prompt = parse_prompt(data, source)
    if prompt.dimension != dim or prompt.version != ver or prompt.family != family:
        raise ValueError(f"{source}: header (family {prompt.family}, dimension {prompt.dimension}, "
                         f"version {prompt.version}) does not match the file name")
    return prompt


def available_prompts() -> dict[str, list[str]]:
    """Family -> dimensions with a packaged prompt."""
    out: dict[str, list[str]] = {}
    for family, dims in FAMILIES.items():
        out[family] = [d for d in dims if _candidates(None, family, d)]
    return out


def prompt_index(directory: str | Path | None = None) -> dict[str, Prompt]:
    """sha256 -> prompt, for the latest prompt of every dimension in ``directory`` (when given) and
    of the packaged prompts: which prompt a judgment (that records the sha256) was made with."""
    index: dict[str, Prompt] = {}
    for dims in FAMILIES.values():
        for dim in dims:
            for folder in ([directory] if directory else []) + [None]:
                try:
                    p = load_prompt(dim, directory=folder)
                except (FileNotFoundError, ValueError):
                    continue
                index.setdefault(p.sha256, p)
    return index
