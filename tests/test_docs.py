"""The documentation stays complete: every nav page exists, relative links resolve, every
registered measure and every design-choice section the benchmarks need is documented."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import reteco_measures as rm
from reteco_measures.measures import REGISTERED

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def _nav_files(nav) -> list[str]:
    out = []
    for item in nav:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                out.extend(_nav_files(value) if isinstance(value, list) else [value])
    return out


def test_every_nav_page_exists() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    files = _nav_files(config["nav"])
    missing = [f for f in files if not (DOCS / f).is_file()]
    assert not missing, f"pages in mkdocs.yml nav without a file: {missing}"


def test_relative_links_resolve() -> None:
    broken = []
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if not (page.parent / target).resolve().is_file():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, broken


def test_every_measure_is_in_the_reference() -> None:
    text = (DOCS / "measures.md").read_text()
    public = {name for name, m in REGISTERED.items() if m.__class__.__module__.startswith("reteco_measures.")}
    missing = [n for n in public if f"`{n}`" not in text]
    assert not missing, missing


def test_benchmark_pages_record_their_choices() -> None:
    for page in ["reteco-track1.md", "reteco-track2.md", "ikat2023.md", "chunqiu.md", "spoken-query.md"]:
        path = DOCS / "benchmarks" / page
        assert path.is_file(), page
        assert "Choices made where the benchmark is ambiguous" in path.read_text(), page


def test_public_api_is_documented() -> None:
    undocumented = [n for n in rm.__all__ if callable(getattr(rm, n)) and not (getattr(rm, n).__doc__ or "").strip()]
    assert not undocumented, undocumented


def test_mkdocs_site_builds_strictly(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
