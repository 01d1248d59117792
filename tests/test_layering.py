"""Lower floors never import the command line: library code must work without ``reteco_measures.cli``."""

from __future__ import annotations

import ast
from pathlib import Path

import reteco_measures

PACKAGE = Path(reteco_measures.__file__).parent
LIBRARY_FLOORS = ("kernels", "io", "contracts", "measures", "benchmarks", "stats", "report", "platforms", "judge")


def _imports_cli(source: str, depth: int) -> list[int]:
    """Lines of ``source`` that import the CLI; ``depth``: folders between the module and the package root."""
    tree = ast.parse(source)
    lines = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 0:
                names = [module]
            elif node.level == depth + 1:  # relative to the package root
                names = [module] if module else [a.name for a in node.names]
        if any(n == "reteco_measures.cli" or n.startswith("reteco_measures.cli.") or n == "cli"
               or n.startswith("cli.") for n in names):
            lines.append(node.lineno)
    return lines


def test_library_floors_do_not_import_cli() -> None:
    offenders = {f"{p.relative_to(PACKAGE)}:{line}"
                 for floor in LIBRARY_FLOORS for p in sorted((PACKAGE / floor).rglob("*.py"))
                 for line in _imports_cli(p.read_text(encoding="utf-8"), len(p.relative_to(PACKAGE).parts) - 1)}
    assert not offenders, sorted(offenders)


def test_the_checker_sees_a_cli_import() -> None:
    source = "from ..cli.report import format_frame\nimport reteco_measures.cli.main\nfrom ..api import evaluate\n"
    assert _imports_cli(source, 1) == [1, 2]
    assert _imports_cli("from .cli import x\n", 1) == []  # a sibling named cli inside the floor is not the CLI
