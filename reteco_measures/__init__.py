"""reteco-measures: ir_measures extension for RETECO, ChunQiu, Spoken-Query and TREC iKAT 2023.

Importing the package registers every measure (long name and alias) with ir_measures and puts
our provider first in ir_measures' default pipeline::

    import ir_measures
    import reteco_measures as rm
    from ir_measures import nDCG

    ir_measures.calc_aggregate([nDCG @ 10, rm.TC @ 10], qrels, run)
    rm.calc_aggregate(["nDCG@10", "TC@10"], "qrels.txt", "run.txt", topics=topics_df)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import kernels as _kernels  # noqa: F401  (registers kernels)
from . import plot
from ._version import __version__
from .api import calc_aggregate, depth_group, evaluate, iter_calc, measure_label, measure_name, parse_measures
from .benchmarks import Benchmark, Score, benchmark
from .contracts import ValidationReport, validate_run
from .datasets import topics
from .errors import DataFormatError, DataFormatWarning, Problem
from .io.readers import read_qrels, read_run
from .measures import (
    TC,
    TP,
    TR,
    Likert,
    SpokenMacroNDCG,
    StepNDCG,
    TemporalCoverage,
    TemporalPrecision,
    TemporalRelevance,
    TurnNDCG,
    nDCG_FC,
)
from .provider import PROVIDER
from .provider import install as _install
from .reward import reward
from .scale.native import use_native_kernels
from .side import current_side_info, load_labels, load_topics, side_info

if TYPE_CHECKING:  # imported on first use (scipy and statsmodels are slow to import)
    from . import benchmarks as benchmarks
    from . import judge as judge
    from . import platforms as platforms
    from . import report as report
    from . import scale as scale
    from . import stats as stats
    from .benchmarks.leaderboard import leaderboard
    from .stats import Comparison, compare, tie_sensitivity

_install()

#: Submodules reachable as ``reteco_measures.<name>`` without importing them first.
_LAZY_SUBMODULES = frozenset({"benchmarks", "judge", "platforms", "report", "scale", "stats"})
#: Names exported here but defined in a submodule that is imported on first use.
_LAZY_NAMES = {"compare": "stats", "Comparison": "stats", "tie_sensitivity": "stats",
               "leaderboard": "benchmarks.leaderboard"}


def __getattr__(name: str) -> Any:
    """Import a submodule (``rm.judge``, ``rm.stats`` ...) or a lazily exported name on first access."""
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY_SUBMODULES | set(_LAZY_NAMES))

__all__ = [
    "benchmark",
    "leaderboard",
    "Benchmark",
    "Score",
    "__version__",
    "calc_aggregate",
    "iter_calc",
    "evaluate",
    "use_native_kernels",
    "read_run",
    "read_qrels",
    "validate_run",
    "topics",
    "reward",
    "plot",
    "side_info",
    "current_side_info",
    "load_topics",
    "load_labels",
    "parse_measures",
    "measure_label",
    "measure_name",
    "depth_group",
    "ValidationReport",
    "Problem",
    "DataFormatError",
    "DataFormatWarning",
    "PROVIDER",
    "TemporalPrecision",
    "TP",
    "TemporalRelevance",
    "TR",
    "TemporalCoverage",
    "TC",
    "nDCG_FC",
    "StepNDCG",
    "TurnNDCG",
    "SpokenMacroNDCG",
    "Likert",
    "compare",
    "Comparison",
    "tie_sensitivity",
]
