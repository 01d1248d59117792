"""Benchmarks: one declaration per benchmark, one engine for scoring and leaderboards.

::

    import reteco_measures as rm

    score = rm.benchmark("reteco-1a").score("run.txt", data="/data", split="dev")
    score.official, score.summary, score.by_group["by_domain"], score.per_query, score.report
    score.to_dict()                     # the JSON of ``reteco-measures score reteco-1a --format json``

    board = rm.leaderboard("reteco-1a", ["a.txt", "b.txt"], data="/data", split="dev")

Benchmarks: ``reteco-1a``, ``reteco-1b`` (TEMPO), ``reteco-2a`` (RECOR), ``ikat-2023``,
``chunqiu``, ``spoken``, and the judged generation tracks ``reteco-2b``, ``reteco-2c``,
``ikat-2023-generation`` (`.generation`). The package, bottom up:

- `.score` — `Score`, the result of scoring one submission, and its JSON;
- `.scoring` — the engine: per-query values once (`long_per_query`), everything else
  derived from them (`aggregate`);
- `.leaderboard` — several submissions ranked with uncertainty (``rm.leaderboard``);
- `.declaration` — `Option`, `Grouping`, `Inputs`, `Benchmark`;
- `.registry` — `BENCHMARKS` by name;
- one module per benchmark, each declaring a `Benchmark` and calling `register`.

Adding a benchmark is adding one such module and its name to the import line below.
"""

from __future__ import annotations

from ..report.text import metric_key

# the benchmarks, one module each: importing one registers its declaration in BENCHMARKS
from . import chunqiu, generation, ikat2023, reteco_track1, reteco_track2, spoken  # noqa: F401
from .declaration import Benchmark, Grouping, Inputs, Option
from .registry import BENCHMARKS, benchmark, register
from .score import Score
from .scoring import aggregate, long_per_query, removed_counts

__all__ = [
    "Benchmark",
    "Score",
    "Option",
    "Grouping",
    "Inputs",
    "BENCHMARKS",
    "benchmark",
    "register",
    "aggregate",
    "long_per_query",
    "metric_key",
    "removed_counts",
]
