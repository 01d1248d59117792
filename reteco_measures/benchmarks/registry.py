"""The benchmarks by name: `BENCHMARKS`, filled by `register` as each benchmark module
is imported (``reteco_measures.benchmarks`` imports all of them, so the registry is full as soon as
the package is imported)."""

from __future__ import annotations

from typing import Any

__all__ = ["BENCHMARKS", "register", "benchmark"]

#: benchmark name -> declaration (a `reteco_measures.benchmarks.declaration.Benchmark`; the
#: registry sits below the declaration, which it never imports)
BENCHMARKS: dict[str, Any] = {}


def register(bench: Any) -> Any:
    """Add a declaration to `BENCHMARKS` (each benchmark module calls this once)."""
    BENCHMARKS[bench.name] = bench
    return bench


def benchmark(name: str) -> Any:
    """The benchmark ``name`` (``reteco-1a``, ``reteco-1b``, ``reteco-2a``, ``ikat-2023``,
    ``chunqiu``, ``spoken``): its `Benchmark` declaration."""
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}") from None
