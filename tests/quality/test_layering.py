"""The package's layers as a contract: every import goes down (or stays in its layer), none goes round.

:data:`LAYERS` maps each module prefix of ``reteco_measures`` to its layer (the table of
``DESIGN.md``). Every ``import`` statement of the package is read with :mod:`ast` — at module top,
inside functions and classes, inside ``try`` blocks — and checked:

- a module imports only modules of its own layer or a lower one;
- the import graph has no cycle. Importing ``a.b.c`` also runs the packages ``a`` and ``a.b``, so
  those are edges too (except the packages the importer already lives in, which are running).
  Imports under ``if TYPE_CHECKING:`` never run: they must still point down the layers, but they
  are not edges of the graph;
- no module is missing from the table (a new top-level module or package needs a layer);
- no module is loaded by a name computed at run time (``importlib.import_module``, ``__import__``,
  ``find_spec``): every import is a statement a reader, an IDE and this test can see.

A second test imports every module *first*, in a fresh interpreter whose ``reteco_measures``
package ``__init__`` has not run (a bare package stands in for it), so no module works only because
the package imported something else before it.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE_NAME = "reteco_measures"
PACKAGE = Path(importlib.util.find_spec(PACKAGE_NAME).origin).parent  # found, not imported

#: module prefix (relative to the package; "" = the package's own ``__init__``) -> layer
LAYERS: dict[str, int] = {
    # 0: reading and writing, problems, side information, query-id forms
    "io": 0, "errors": 0, "side": 0, "query_ids": 0, "_version": 0,
    # 1: one declaration per measure, measure names and parameters
    "measures": 1,
    # 2: vectorised computation over whole ranked runs
    "kernels": 2,
    # 3: ir_measures providers
    "providers": 3,
    # 4: the evaluation engine and its out-of-core forms
    "engine": 4, "scale": 4,
    # 5: the public evaluation functions
    "api": 5,
    # 6: the contract machinery (ValidationReport, the contract registry), the datasets machinery (data
    #    root, topics registry, ir_datasets hand-over, generic ir_datasets handlers), the bundled
    #    sample's data, reward, lexical diagnostics, presentation
    "contracts": 6, "datasets": 6, "sample": 6, "reward": 6, "lexical": 6, "report": 6, "plot": 6,
    # 7: statistics (calibrated judge means included)
    "stats": 7,
    # 8: the benchmark machinery, which knows no benchmark: the registry, the declaration, Score, the
    #    scoring engine, leaderboards, the judged generation tracks
    "benchmarks.registry": 8, "benchmarks.declaration": 8, "benchmarks.score": 8, "benchmarks.scoring": 8,
    "benchmarks.leaderboard": 8, "benchmarks.generation": 8, "benchmarks.gate": 8,
    "benchmarks.compare": 8, "benchmarks.streaming": 8,
    # 9: one folder per benchmark (data loader, ir_datasets registration, contract, declaration), the
    #    shared RETECO contract and rules, and the package's face that imports them all
    "benchmarks": 9,
    # 10: above the core, behind their own doors: submission platforms (Codabench, Harbor) and the
    #     LLM judge (it reads and writes the core's judgment rows; the core never imports it)
    "platforms": 10, "judge": 10,
    # 11: the command line, the demo (scores the sample with every benchmark), and the package's
    #     face (it exports every layer)
    "cli": 11, "sample.demo": 11, "__main__": 11, "": 11,
}


@dataclass(frozen=True)
class Import:
    """One import statement's target module, as the importer wrote it."""

    importer: str  # dotted name relative to the package ("" = the package __init__)
    target: str
    line: int
    type_only: bool  # under ``if TYPE_CHECKING:``


def module_names(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name (relative to the package) -> file, for every ``.py`` file of the package."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def layer_of(module: str) -> int | None:
    """The layer of ``module`` by its longest prefix in :data:`LAYERS` (None: not in the table)."""
    parts = module.split(".") if module else []
    for n in range(len(parts), -1, -1):
        prefix = ".".join(parts[:n])
        if prefix in LAYERS and (n or not module):
            return LAYERS[prefix]
    return None


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Line numbers of the statements under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
            if name == "TYPE_CHECKING":
                for stmt in node.body:
                    for sub in ast.walk(stmt):
                        if hasattr(sub, "lineno"):
                            lines.add(sub.lineno)
    return lines


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> Iterator[Import]:
    """Every import of our own package in ``source`` (the module ``module``), resolved to the most
    specific known module (``from .x import name`` names the module ``x.name`` when that exists)."""
    tree = ast.parse(source)
    type_only = _type_checking_lines(tree)
    here = module.split(".") if module else []
    package = here if is_package else here[:-1]

    def resolve(dotted: str) -> str | None:
        parts = dotted.split(".") if dotted else []
        for n in range(len(parts), -1, -1):
            if ".".join(parts[:n]) in known:
                return ".".join(parts[:n])
        return None

    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE_NAME or alias.name.startswith(PACKAGE_NAME + "."):
                    targets.append(alias.name[len(PACKAGE_NAME) + 1:])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module != PACKAGE_NAME and not (node.module or "").startswith(PACKAGE_NAME + "."):
                    continue
                base = node.module[len(PACKAGE_NAME) + 1:].split(".") if node.module != PACKAGE_NAME else []
            else:
                up = node.level - 1
                if up > len(package):
                    raise ValueError(f"{module}:{node.lineno}: relative import beyond the package")
                base = package[: len(package) - up] + (node.module.split(".") if node.module else [])
            for alias in node.names:
                sub = ".".join([*base, alias.name])
                targets.append(sub if sub in known else ".".join(base))
        for target in targets:
            resolved = resolve(target)
            if resolved is None:
                raise ValueError(f"{module}:{node.lineno}: import of an unknown module {target!r}")
            if resolved != module:
                yield Import(module, resolved, node.lineno, node.lineno in type_only)


def all_imports(root: Path = PACKAGE) -> list[Import]:
    names = module_names(root)
    known = set(names)
    out = []
    for name, path in names.items():
        out += imports_of(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", known)
    return list(dict.fromkeys(out))  # one entry for ``from .x import a, b``


def graph(imports: list[Import], known: set[str]) -> dict[str, set[str]]:
    """Runtime edges: each import, plus the packages it runs on the way (not the importer's own)."""
    edges: dict[str, set[str]] = {m: set() for m in known}
    for imp in imports:
        if imp.type_only:
            continue
        mine = imp.importer.split(".") if imp.importer else []
        ancestors = {".".join(mine[:n]) for n in range(len(mine) + 1)}
        parts = imp.target.split(".") if imp.target else []
        for n in range(1, len(parts) + 1):
            step = ".".join(parts[:n])
            if step not in ancestors and step != imp.importer and step in known:
                edges[imp.importer].add(step)
        if imp.target == "":  # ``from .. import x``: the package __init__ itself
            edges[imp.importer].add("")
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:  # other tests read the limit (the JSON readers' nesting depth follows it)
        sys.setrecursionlimit(limit)
    return out


def _label(module: str) -> str:
    return f"{PACKAGE_NAME}.{module}" if module else PACKAGE_NAME


# ------------------------------------------------------------------------------------------------


def test_every_module_has_a_layer() -> None:
    missing = sorted(_label(m) for m in module_names() if layer_of(m) is None)
    assert not missing, f"modules without a layer in LAYERS: {missing}"


def test_imports_go_down_the_layers() -> None:
    upward = sorted(
        f"{_label(i.importer)}:{i.line} (layer {layer_of(i.importer)}) imports {_label(i.target)} "
        f"(layer {layer_of(i.target)})"
        for i in all_imports()
        if layer_of(i.importer) is not None and layer_of(i.target) is not None
        and layer_of(i.target) > layer_of(i.importer)
    )
    assert not upward, "\n".join(upward)


#: above the core: the core (every layer below them) never imports these, at module top or inside a function
ABOVE_THE_CORE = ("judge", "platforms")


def test_the_core_never_imports_the_judge_or_the_platforms() -> None:
    inward = sorted(
        f"{_label(i.importer)}:{i.line} imports {_label(i.target)}"
        for i in all_imports()
        if any(i.target == top or i.target.startswith(top + ".") for top in ABOVE_THE_CORE)
        and layer_of(i.importer) is not None and layer_of(i.importer) < LAYERS["judge"]
    )
    assert not inward, "\n".join(inward)


def test_no_import_cycle() -> None:
    names = set(module_names())
    found = cycles(graph(all_imports(), names))
    assert not found, "\n".join(" <-> ".join(_label(m) for m in c) for c in found)


#: the benchmark folders of ``reteco_measures.benchmarks`` and the folder they may share
BENCHMARK_FOLDERS = ("tempo", "recor", "ikat2023", "chunqiu", "spoken", "reteco")
SHARED_FOLDERS = {"reteco"}
#: named exceptions: Spoken-Query results files are ChunQiu's JSONL results format, read by the
#: ``chunqiu`` contract's parser
ALLOWED_CROSSINGS = {("benchmarks.spoken.contract", "benchmarks.chunqiu.contract")}


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "benchmarks" and parts[1] in BENCHMARK_FOLDERS else None


def test_a_benchmark_folder_imports_no_other_benchmark() -> None:
    """A rule change for one benchmark opens one folder: a folder imports only the shared RETECO
    folder, never another benchmark's."""
    crossing = sorted(
        f"{_label(i.importer)}:{i.line} imports {_label(i.target)}"
        for i in all_imports()
        if _folder(i.importer) and _folder(i.target) and _folder(i.importer) != _folder(i.target)
        and _folder(i.target) not in SHARED_FOLDERS and (i.importer, i.target) not in ALLOWED_CROSSINGS
    )
    assert set(BENCHMARK_FOLDERS) <= {m.split(".")[1] for m in module_names() if _folder(m)}
    assert not crossing, "\n".join(crossing)


def test_the_benchmark_machinery_has_no_circle_even_in_annotations() -> None:
    """registry, declaration, score, scoring and leaderboard form no circle even counting the
    imports under ``if TYPE_CHECKING:`` (the declaration reaches the engine through its ENGINE
    table, filled by the engine's modules)."""
    machinery = {"benchmarks." + m for m in ("registry", "declaration", "score", "scoring", "leaderboard")}
    edges: dict[str, set[str]] = {m: set() for m in machinery}
    for i in all_imports():
        if i.importer in machinery and i.target in machinery:
            edges[i.importer].add(i.target)
    assert not cycles(edges), cycles(edges)
    assert not edges["benchmarks.declaration"] - {"benchmarks.score"}, edges["benchmarks.declaration"]


#: modules (prefixes) whose functions may import our own modules, and why
IN_FUNCTION_IMPORTS_ALLOWED: dict[str, str] = {
    "cli": "the command line: each sub-command imports what it runs, so that '--help' and other "
           "sub-commands stay fast",
}
#: single functions that may import our own modules, and why
IN_FUNCTION_IMPORT_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("", "_load"): "the package's face exports lazily (PEP 562): 'import reteco_measures' imports "
                   "neither pandas nor numpy",
    ("providers", "__getattr__"): "the native provider (pandas, the kernels) loads on first use, not "
                                  "with the provider ir_measures' pipeline holds",
    ("providers.reteco", "_evaluator"): "the evaluator (pandas, the kernels) loads on the first evaluation",
    **{(f"benchmarks.{name}", "_register_with_ir_datasets"): "the folder's irds module imports ir_datasets "
       "(0.3-0.5 s): it loads on an explicit datasets.register() / once ir_datasets is imported"
       for name in ("tempo", "recor", "ikat2023", "chunqiu", "spoken")},
}


def function_level_imports(source: str) -> list[tuple[str, int]]:
    """``(function, line)`` of every import of our own package inside a function of ``source``."""
    out = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            ours = (isinstance(node, ast.ImportFrom)
                    and (node.level > 0 or (node.module or "").split(".")[0] == PACKAGE_NAME)) or (
                isinstance(node, ast.Import) and any(a.name.split(".")[0] == PACKAGE_NAME for a in node.names))
            if ours:
                out.append((fn.name, node.lineno))
    return sorted(set(out), key=lambda x: x[1])


def test_functions_import_only_third_party_packages() -> None:
    """An import of our own modules goes at the module's top (the layers and the cycle check
    see it there, a reader sees what the module needs); inside a function only a third-party
    package may be imported (to keep a slow one off ``import reteco_measures``), except in the
    named places above."""
    found = []
    for module, path in module_names().items():
        if any(module == m or module.startswith(m + ".") for m in IN_FUNCTION_IMPORTS_ALLOWED):
            continue
        for fn, line in function_level_imports(path.read_text(encoding="utf-8")):
            if (module, fn) not in IN_FUNCTION_IMPORT_EXCEPTIONS:
                found.append(f"{_label(module)}:{line} ({fn})")
    assert not found, "imports of our modules inside functions (hoist them):\n" + "\n".join(found)
    assert function_level_imports("import os\ndef f():\n    import numpy\n    from .x import y\n") == [("f", 4)]


_BY_NAME = {"import_module", "__import__", "find_spec", "import_present"}


def _loads_by_name(source: str) -> list[int]:
    """Lines of ``source`` that load a module by a name computed at run time."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in _BY_NAME:
                lines.append(node.lineno)
    return lines


def test_no_module_is_loaded_by_name() -> None:
    found = sorted(f"{_label(m)}:{line}" for m, path in module_names().items()
                   for line in _loads_by_name(path.read_text(encoding="utf-8")))
    assert not found, "modules loaded by name (import them statically): " + ", ".join(found)


def test_the_checker_sees_what_it_must(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "a").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a/__init__.py": "from .x import f\n",
        "a/x.py": "def f():\n    from ..b import g\n",  # inside a function
        "a/y.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..b import g\n",
        "b.py": f"import {PACKAGE_NAME}.a.y\n",  # runs a/__init__ -> a.x -> b: a cycle
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    names = module_names(pkg)
    imps = all_imports(pkg)
    assert {(i.importer, i.target, i.type_only) for i in imps} == {
        ("a", "a.x", False), ("a.x", "b", False), ("a.y", "b", True), ("b", "a.y", False)}
    assert cycles(graph(imps, set(names))) == [["a", "a.x", "b"]]
    assert layer_of("kernels.ranking") == 2 and layer_of("") == 11 and layer_of("nowhere") is None
    assert _loads_by_name("import importlib\nm = importlib.import_module('x.' + n)\nfrom . import y\n") == [2]
    assert layer_of("sample") == 6 and layer_of("sample.generate_ikat2023") == 6 and layer_of("sample.demo") == 11
    assert layer_of("benchmarks.scoring") == 8 and layer_of("benchmarks.tempo.data") == 9 and layer_of("benchmarks") == 9


_FRESH = textwrap.dedent("""
    import importlib, json, os, sys, traceback, types
    import numpy, pandas, pyarrow, ir_measures, ir_datasets  # third-party, loaded once for every child
    root, package, names = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    sys.dont_write_bytecode, sys.pycache_prefix = False, sys.argv[4]  # compiled once, not once per child
    failed = {}
    for name in names:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # a child per module: nothing of ours is loaded, ir_datasets' registry is clean
            os.close(read)
            stub = types.ModuleType(package)  # the package without its __init__: the module goes first
            stub.__path__ = [root]
            sys.modules[package] = stub
            try:
                importlib.import_module(package + "." + name)
                message = ""
            except BaseException as exc:  # noqa: BLE001
                message = "".join(traceback.format_exception_only(type(exc), exc)).strip() or repr(exc)
            os.write(write, message.encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            message = f.read().decode()
        os.waitpid(pid, 0)
        if message:
            failed[name] = message
    print(json.dumps(failed))
""")

#: modules that act when imported (``python -m reteco_measures`` runs the command line)
_RUN_ON_IMPORT = {"__main__"}


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="one forked interpreter per module needs os.fork")
def test_every_module_imports_first_in_a_fresh_interpreter(tmp_path: Path) -> None:
    names = sorted(m for m in module_names() if m and m not in _RUN_ON_IMPORT)
    proc = subprocess.run([sys.executable, "-c", _FRESH, str(PACKAGE), PACKAGE_NAME, json.dumps(names),
                           str(tmp_path / "pycache")],
                          capture_output=True, text=True, timeout=300, cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    failed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not failed, "\n".join(f"{_label(k)}: {v}" for k, v in failed.items())


@pytest.mark.parametrize("code", ["import reteco_measures", "import reteco_measures.cli.main"])
def test_the_package_imports_in_a_fresh_interpreter(code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
