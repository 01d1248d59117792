"""The benchmarks by name: `BENCHMARKS`, filled by `register` as each benchmark module
is imported (``reteco_measures.benchmarks`` imports all of them, so the registry is full as soon as
the package is imported)."""

from __future__ import annotations

from .declaration import Benchmark

__all__ = ["BENCHMARKS", "register", "benchmark"]

#: benchmark name -> declaration
BENCHMARKS: dict[str, Benchmark] = {}


def register(bench: Benchmark) -> Benchmark:
    """Add a declaration to `BENCHMARKS` (each benchmark module calls this once)."""
    BENCHMARKS[bench.name] = bench
    return bench


def benchmark(name: str) -> Benchmark:
    """The benchmark ``name`` (``reteco-1a``, ``reteco-1b``, ``reteco-2a``, ``ikat-2023``,
    ``chunqiu``, ``spoken``)."""
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}") from None
