"""Benchmarks: one declaration per benchmark, one engine for scoring and leaderboards.

::

    import reteco_measures as rm

    score = rm.benchmark("reteco-1a").score("run.txt", data="/data", split="dev")
    score.official, score.summary, score.table("by_domain"), score.per_query, score.report
    score.to_dict()                     # the JSON of ``reteco-measures score reteco-1a --format json``

    board = rm.leaderboard("reteco-1a", ["a.txt", "b.txt"], data="/data", split="dev")

Benchmarks: ``reteco-1a``, ``reteco-1b`` (TEMPO), ``reteco-2a`` (RECOR), ``ikat-2023``,
``chunqiu``, ``spoken``, and the judged generation tracks ``reteco-2b``, ``reteco-2c``,
``ikat-2023-generation`` (`.generation`). The package, bottom up:

- the machinery, which knows no benchmark:

  - `.registry` — `BENCHMARKS` by name;
  - `.score` — `Score`, the result of scoring one submission, and its JSON;
  - `.declaration` — `Option`, `Grouping`, `Inputs`, `Benchmark` and its specs (`CliSpec`,
    `TableSpec`, `StatsSpec`, `RewardSpec`) (its ``score`` and
    ``leaderboard`` methods call the engine installed by the two modules above it);
  - `.scoring` — the engine: per-query values once (`long_per_query`), everything else
    derived from them (`aggregate`);
  - `.leaderboard` — several submissions ranked with uncertainty (``rm.leaderboard``);
  - `.streaming` — a run file scored in blocks of whole queries (``score(..., stream=True)``);

- one folder per benchmark, holding everything that benchmark needs: its data loader
  (``data.py``), its ir_datasets registration (``irds.py``), its run contract (``contract.py``)
  and its declaration (``benchmark.py``): `.tempo` (``reteco-1a``, ``reteco-1b``), `.recor`
  (``reteco-2a``), `.ikat2023`, `.chunqiu`, `.spoken`; `.reteco` holds the contract and rules
  the two RETECO folders share. Importing a folder fills the registries by name
  (`BENCHMARKS`, the contracts of ``rm.validate_run``, the topics of ``rm.topics`` and the
  ir_datasets ids).

Adding a benchmark is adding one such folder and its name to the import line below.
"""

from __future__ import annotations

from ..report.text import metric_key
from .declaration import Benchmark, CliSpec, Grouping, Inputs, Option, RewardSpec, StatsSpec, TableSpec
from .leaderboard import Leaderboard
from .registry import BENCHMARKS, benchmark, register
from .score import Score
from .scoring import aggregate, long_per_query, removed_counts
from .streaming import stream_score

# isort: split
# the benchmarks, one folder each: importing one registers its declaration in BENCHMARKS
from . import chunqiu, generation, ikat2023, recor, reteco, spoken, tempo  # noqa: F401

__all__ = [
    "Benchmark",
    "CliSpec",
    "TableSpec",
    "StatsSpec",
    "RewardSpec",
    "Score",
    "Option",
    "Grouping",
    "Inputs",
    "BENCHMARKS",
    "Leaderboard",
    "benchmark",
    "register",
    "aggregate",
    "long_per_query",
    "metric_key",
    "removed_counts",
    "stream_score",
]
