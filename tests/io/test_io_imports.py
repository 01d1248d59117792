"""``reteco_measures.io`` imports without a cycle, counting imports inside functions.

The package ``io`` (its ``__init__``) imports ``convert`` and ``readers``; a submodule that
imported the package back (``from . import name`` of something that is not a submodule, or
``import reteco_measures.io``) would close the cycle io -> io.convert -> io.readers -> io.
"""

from __future__ import annotations

import ast
from pathlib import Path

import reteco_measures

IO = Path(reteco_measures.__file__).parent / "io"


def _graph(folder: Path) -> dict[str, set[str]]:
    """Module (``__init__`` for the package) -> the io modules it imports, anywhere in its body."""
    modules = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module in modules:
        for node in ast.walk(ast.parse((folder / f"{module}.py").read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level == 1:  # from . import x / from .x import y
                    if node.module:
                        targets = [node.module.split(".")[0]]
                    else:
                        targets = [a.name if a.name in modules else "__init__" for a in node.names]
                elif node.level == 0 and node.module and node.module.startswith("reteco_measures.io"):
                    rest = node.module.split(".")[2:]
                    targets = [rest[0] if rest else "__init__"]
                elif node.level == 2 and (node.module == "io" or (
                        not node.module and any(a.name == "io" for a in node.names))):
                    targets = ["__init__"]
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("reteco_measures.io"):
                        rest = a.name.split(".")[2:]
                        targets.append(rest[0] if rest else "__init__")
            graph[module].update(t for t in targets if t != module and t in modules)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state and (found := visit(w)):
                return found
        state[v] = 2
        path.pop()
        return None

    for v in sorted(graph):
        if v not in state and (found := visit(v)):
            return found
    return None


def test_io_has_no_import_cycle() -> None:
    graph = _graph(IO)
    assert "readers" in graph["convert"]  # the checker sees the imports it should
    assert _cycle(graph) is None, _cycle(graph)


def test_the_checker_finds_a_cycle_through_the_package(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("from .convert import f\n")
    (tmp_path / "convert.py").write_text("from .readers import g\n")
    (tmp_path / "readers.py").write_text("def g():\n    from . import _native  # a compiled module\n")
    assert _cycle(_graph(tmp_path)) == ["__init__", "convert", "readers", "__init__"]
