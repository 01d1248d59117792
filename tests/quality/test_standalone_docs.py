"""Docs, docstrings, comments and notebooks stand alone: they cite public sources (the RETECO
evaluation plan, the TEMPO and RECOR papers, the iKAT 2023 overview, the ChunQiu and Spoken-Query
task descriptions) and never the project's internal documents (its spec sections, its seed
documents, its issue numbers) or the folder beside the repository that holds them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FORBIDDEN = {
    "an internal spec section": re.compile(r"\bSPEC\b"),
    "a seed document": re.compile(r"(?i)\bseeds?\b[\s`'\"]*0\d\d\b|seed `|\bthe seed(?:'s\b|:|\s+(?:says|is silent))"),
    "the internal seeds folder": re.compile(r"shared/seeds"),
    "the folder beside the repository": re.compile(r"\.\./shared\b"),
    "an internal issue number": re.compile(r"(?i)(?<!github )\bissue\s+#?\d+\b"),
}


def _files() -> list[Path]:
    suffixes = {".py", ".md", ".txt", ".ipynb", ".yml", ".yaml", ".json", ".jsonl", ".cfg", ".toml"}
    files = [p for p in (REPO / "reteco_measures").rglob("*") if p.is_file() and p.suffix in suffixes]
    files += [*(REPO / "docs").rglob("*.md"), *(REPO / "notebooks").glob("*.ipynb"), REPO / "README.md",
              REPO / "mkdocs.yml"]
    return sorted(p for p in files if "__pycache__" not in p.parts)


def scan(text: str) -> list[tuple[int, str]]:
    """(line number, what) of every forbidden reference in ``text``."""
    hits = []
    for n, line in enumerate(text.splitlines(), start=1):
        hits += [(n, what) for what, pattern in FORBIDDEN.items() if pattern.search(line)]
    return hits


def test_docs_and_docstrings_cite_only_public_sources():
    offenders = []
    for path in _files():
        for n, what in scan(path.read_text(encoding="utf-8", errors="replace")):
            offenders.append(f"{path.relative_to(REPO)}:{n}: cites {what}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("line", [
    "Definition (SPEC §2), with v the verdict",
    "Source: the benchmark description (seed `003` of this project).",
    "Seed ``001``: \"Return at most ten distinct known IDs\"",
    "| Reward | Seed 000 defines no reward mapping |",
    "see /work/shared/seeds/003_x.txt",
    "the oracles in ../shared/data",
    "Choices where the seed is silent",
    "as decided in issue 14",
])
def test_the_scan_catches_internal_references(line):
    assert scan(line)


@pytest.mark.parametrize("line", [
    "TEMPO paper (arXiv:2601.09523), RETECO evaluation plan",
    "rng = np.random.default_rng(seed)  # the seed of the bootstrap",
    "--seed SEED           random seed (default 0)",
    "SEED = 20270101",
    "the spec of ir_measures' measure strings",
    "(Anserini GitHub issue #1523)",
])
def test_the_scan_leaves_public_and_ordinary_text_alone(line):
    assert not scan(line)
