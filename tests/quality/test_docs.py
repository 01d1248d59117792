"""The documentation stays complete: every nav page exists, relative links resolve, every
registered measure and every design-choice section the benchmarks need is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import reteco_measures as rm
from reteco_measures.measures import REGISTERED

REPO = Path(__file__).resolve().parents[2]
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


def _table_cells(row: str) -> list[str]:
    """Cells of a Markdown table row as Python-Markdown (mkdocs) splits it: on every ``|`` that is
    neither backslash-escaped nor inside a backtick code span."""
    cells, cell, i, tick = [], "", 0, ""
    while i < len(row):
        ch = row[i]
        if ch == "`":
            run = len(row[i:]) - len(row[i:].lstrip("`"))
            mark = "`" * run
            tick = "" if tick == mark else (tick or mark)
            cell += mark
            i += run
            continue
        if ch == "\\" and not tick and i + 1 < len(row):
            cell += row[i:i + 2]
            i += 2
            continue
        if ch == "|" and not tick:
            cells.append(cell)
            cell = ""
        else:
            cell += ch
        i += 1
    cells.append(cell)
    return [c.strip() for c in cells[1:-1]] if row.strip().endswith("|") else [c.strip() for c in cells[1:]]


def _tables(text: str):
    """(first line number, rows) of every table outside fenced code."""
    block, start, fence = [], 0, False
    for n, line in enumerate(text.splitlines() + [""], start=1):
        if line.lstrip().startswith("```"):
            fence = not fence
        if not fence and line.startswith("|"):
            if not block:
                start = n
            block.append(line)
        elif block:
            yield start, block
            block = []


def test_tables_render_with_every_cell() -> None:
    """A bare ``|`` inside a cell (``nDCG|FC``) splits the row and mkdocs silently drops the rest; a
    ``\\|`` inside a code span shows the backslash. Write ``nDCG&#124;FC`` in prose cells and a plain
    ``|`` inside code spans (mkdocs does not split there)."""
    bad = []
    for page in sorted(DOCS.rglob("*.md")):
        for start, rows in _tables(page.read_text(encoding="utf-8")):
            width = len(_table_cells(rows[0]))
            for offset, row in enumerate(rows):
                where = f"{page.relative_to(REPO)}:{start + offset}"
                if len(_table_cells(row)) != width:
                    bad.append(f"{where}: {len(_table_cells(row))} cells, header has {width}: {row[:90]}")
                if any("\\|" in m.group(2) for m in re.finditer(r"(`+)(.+?)\1", row)):
                    bad.append(f"{where}: backslash-escaped pipe inside a code span: {row[:90]}")
    assert not bad, "\n".join(bad)


#: what a docstring written for Sphinx leaves in mkdocstrings' HTML: roles and directives as text
_UNRENDERED = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|ref):(?=[`~\w.])|^\s*\.\. [a-z-]+::",
                         re.MULTILINE)


@pytest.mark.slow
def test_mkdocs_site_builds_strictly(tmp_path: Path) -> None:
    """The site builds with no warning, and the API reference, rendered from the docstrings by
    mkdocstrings, shows no Sphinx role or directive as literal text and no section twice."""
    import html
    import subprocess
    import sys

    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = []
    for page in sorted(site.rglob("*.html")):
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))
        bad += [f"{page.relative_to(site)}: {m.group(0)!r}" for m in _UNRENDERED.finditer(text)]
    assert not bad, f"{len(bad)} unrendered Sphinx markup in the site, e.g. " + "; ".join(bad[:10])
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    headings = re.findall(r"<h2[^>]*>(.*?)</h2>", api, flags=re.S)
    assert len(headings) == len(set(headings)), [h for h in headings if headings.count(h) > 1]
