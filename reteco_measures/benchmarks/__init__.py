"""Benchmarks: one declaration per benchmark, one engine for scoring and leaderboards.

::

    import reteco_measures as rm

    score = rm.benchmark("reteco-1a").score("run.txt", data="/data", split="dev")
    score.official, score.summary, score.by_group["by_domain"], score.per_query, score.report
    score.to_dict()                     # the JSON of ``reteco-measures score reteco-1a --format json``

    board = rm.benchmark("reteco-1a").leaderboard(["a.txt", "b.txt"], data="/data", split="dev")

Benchmarks: ``reteco-1a``, ``reteco-1b`` (TEMPO), ``reteco-2a`` (RECOR), ``ikat-2023``,
``chunqiu``, ``spoken``. Adding a benchmark is adding one module that declares a
:class:`Benchmark` and calls :func:`register`.
"""

from __future__ import annotations

from .._plugins import import_present
from .base import (
    BENCHMARKS,
    Benchmark,
    Grouping,
    Inputs,
    Option,
    Score,
    aggregate,
    benchmark,
    long_per_query,
    metric_key,
    register,
    removed_counts,
)

__all__ = [
    "Benchmark",
    "Score",
    "Option",
    "Grouping",
    "Inputs",
    "BENCHMARKS",
    "BENCHMARK_MODULES",
    "benchmark",
    "register",
    "aggregate",
    "long_per_query",
    "metric_key",
    "removed_counts",
]

#: one module per benchmark
BENCHMARK_MODULES = ["reteco_track1", "reteco_track2", "ikat2023", "chunqiu", "spoken"]

_LOADED: list[str] = []


def _load_all() -> None:
    """Import every benchmark module present (idempotent)."""
    if not _LOADED:
        _LOADED.extend(import_present(__name__, BENCHMARK_MODULES))
