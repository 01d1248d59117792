"""benchmarks/registry.py: the registry is full as soon as the package is imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reteco_measures.benchmarks.registry import BENCHMARKS, benchmark

NAMES = ["chunqiu", "ikat-2023", "ikat-2023-generation", "reteco-1a", "reteco-1b", "reteco-2a", "reteco-2b",
         "reteco-2c", "spoken"]


def test_benchmarks_are_registered_on_import_in_a_fresh_interpreter() -> None:
    code = ("import reteco_measures.benchmarks.registry as r\n"
            "print(sorted(r.BENCHMARKS))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(NAMES)


def test_benchmark_by_name() -> None:
    assert all(benchmark(n) is BENCHMARKS[n] for n in NAMES)
    with pytest.raises(ValueError, match="unknown benchmark 'nope'; choose one of"):
        benchmark("nope")
