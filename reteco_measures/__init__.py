"""reteco-measures: ir_measures extension for RETECO, ChunQiu, Spoken-Query and TREC iKAT 2023.

Importing the package registers every measure (long name and alias) with ir_measures and puts
our provider first in ir_measures' default pipeline; that is all it changes in other libraries::

    import ir_measures
    import reteco_measures as rm
    from ir_measures import nDCG

    ir_measures.calc_aggregate([nDCG @ 10, rm.TC @ 10], qrels, run)
    rm.calc_aggregate(["nDCG@10", "TC@10"], "qrels.txt", "run.txt", topics=topics_df)

Everything else (the evaluation functions, readers, benchmarks, statistics, the judge, ...) is
loaded on first use (PEP 562 module ``__getattr__``), so ``import reteco_measures`` costs about
what ``import ir_measures`` costs and imports neither pandas nor numpy. Three further changes are
opt-in, each an explicit call: `reteco_measures.datasets.register` (our datasets in
ir_datasets), `reteco_measures.providers.gdeval.install` (ERR@k for any query id in plain
ir_measures calls) and `reteco_measures.providers.pyterrier.patch_pyterrier` (PyTerrier averages
our measures with their own aggregators).

How the package is cut (each layer imports only from the layers below it): ``io``, ``errors``,
``side``, ``query_ids`` → ``measures`` → ``kernels`` → ``providers`` → ``engine``, ``scale`` →
``api`` → contracts, datasets, report → stats, judge → the benchmark machinery → one folder per
benchmark (``benchmarks/tempo``, ``recor``, ``ikat2023``, ``chunqiu``, ``spoken``) → platforms → cli.
"""

# ruff: noqa: I001  (names are grouped by topic, as in ir_measures' __init__; the order is free)
from typing import TYPE_CHECKING, Any

from ._version import __version__

# -- measures (light: ir_measures only) -------------------------------------------------------
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
from .measures.names import measure_label, measure_name, parse_measures
from .providers.reteco import install as _install

# `reward` is both a module and the function the package exports: the module is imported here (it
# is light: numpy and pandas are imported inside its functions), so that a later import of the
# module can never put the module in place of the function
from .reward import reward

_install()

if TYPE_CHECKING:  # what the names resolved by __getattr__ below are, for type checkers and IDEs
    from . import benchmarks, datasets, judge, platforms, plot, report, scale, stats  # noqa: F401
    from .api import calc_aggregate, evaluate, iter_calc
    from .benchmarks import Benchmark, Score, benchmark
    from .benchmarks.gate import gate
    from .benchmarks.leaderboard import leaderboard
    from .contracts import ValidationReport, validate_run
    from .datasets import topics
    from .engine.grouping import depth_group
    from .errors import (BatchPending, BatchUnsupported, BoundedRunError, DataFormatError, DataFormatWarning,
                         DuplicateKeyError, EmptyInputWarning, GroupMismatchWarning, IncompleteGridWarning,
                         InputMismatchError, InputOutOfMemoryError, InputTooLargeError, JSONTextError, JudgeFatalError,
                         JudgeQueueingWarning, LikertWarning, MissingDataError, NativeFallback, Problem,
                         QueryIdFormWarning, QueryIdMismatchWarning, ReplyError, SubmissionError, TooFewScoredError,
                         UnscorableSubmissionWarning)
    from .io.readers import read_qrels, read_run
    from .providers.native import use_native_kernels
    from .side import load_labels, load_topics, side_info
    from .benchmarks.compare import compare
    from .stats import Comparison, StatOptions, tie_sensitivity

#: every public exception and warning of the package (all defined in `reteco_measures.errors`)
_ERRORS = frozenset({
    "BatchPending", "BatchUnsupported", "BoundedRunError", "DataFormatError", "DataFormatWarning",
    "DuplicateKeyError", "EmptyInputWarning", "GroupMismatchWarning", "IncompleteGridWarning",
    "InputMismatchError", "InputOutOfMemoryError", "InputTooLargeError", "JSONTextError", "JudgeFatalError", "JudgeQueueingWarning",
    "LikertWarning", "MissingDataError", "NativeFallback", "Problem", "QueryIdFormWarning", "QueryIdMismatchWarning",
    "ReplyError",
    "SubmissionError", "TooFewScoredError", "UnscorableSubmissionWarning",
})
_SUBPACKAGES = ("benchmarks", "datasets", "judge", "platforms", "plot", "report", "scale", "stats")


def _load(name: str) -> Any:  # noqa: C901, PLR0911, PLR0912  (one static import per group of names)
    """The object exported as ``name``, imported on first use (every import is a plain statement)."""
    if name in ("calc_aggregate", "evaluate", "iter_calc"):
        from . import api as module
    elif name == "depth_group":
        from .engine import grouping as module
    elif name == "use_native_kernels":
        from .providers import native as module
    elif name in ("read_qrels", "read_run"):
        from .io import readers as module
    elif name in ("load_labels", "load_topics", "side_info"):
        from . import side as module
    elif name == "topics":
        from . import benchmarks as _folders  # noqa: F401  (the folders declare the topics)
        from . import datasets as module
    elif name in ("ValidationReport", "validate_run"):
        from . import benchmarks as _folders  # noqa: F401  (the folders register their contracts)
        from . import contracts as module
    elif name in ("Benchmark", "Score", "benchmark"):
        from . import benchmarks as module
    elif name == "leaderboard":
        from .benchmarks import leaderboard as module
    elif name == "gate":
        from .benchmarks import gate as module
    elif name == "compare":
        from .benchmarks import compare as module
    elif name in ("Comparison", "StatOptions", "tie_sensitivity"):
        from . import stats as module
    elif name in _ERRORS:
        from . import errors as module
    elif name == "benchmarks":
        from . import benchmarks as module
    elif name == "datasets":
        # the benchmark folders hand their ir_datasets registrations to `datasets` when imported
        from . import benchmarks as _folders  # noqa: F401
        from . import datasets as module
    elif name == "judge":
        from . import judge as module
    elif name == "platforms":
        from . import platforms as module
    elif name == "plot":
        from . import plot as module
    elif name == "report":
        from . import report as module
    elif name == "scale":
        from . import scale as module
    elif name == "stats":
        from . import stats as module
    else:
        raise AttributeError(f"module 'reteco_measures' has no attribute {name!r}")
    return module if name in _SUBPACKAGES else getattr(module, name)


_LOADING: set = set()


def __getattr__(name: str) -> Any:
    """PEP 562: load an exported name on first use and keep it."""
    if name in _LOADING:
        # ``from . import stats`` below first asks the package for ``stats`` (hasattr): answer
        # "not yet", and the import system imports the sub-package
        raise AttributeError(f"module 'reteco_measures' has no attribute {name!r}")
    _LOADING.add(name)
    try:
        value = _load(name)
    finally:
        _LOADING.discard(name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__) | set(_SUBPACKAGES))


__all__ = [
    # measures
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
    "parse_measures",
    "measure_label",
    "measure_name",
    # evaluate
    "calc_aggregate",
    "iter_calc",
    "evaluate",
    "depth_group",
    "use_native_kernels",
    "plot",
    "compare",
    "Comparison",
    "StatOptions",
    "tie_sensitivity",
    # data
    "read_run",
    "read_qrels",
    "side_info",
    "load_topics",
    "load_labels",
    "topics",
    "validate_run",
    "ValidationReport",
    # official scoring
    "benchmark",
    "leaderboard",
    "gate",
    "Benchmark",
    "Score",
    "reward",
    # errors
    "Problem",
    "BatchPending",
    "BatchUnsupported",
    "BoundedRunError",
    "DataFormatError",
    "DataFormatWarning",
    "DuplicateKeyError",
    "EmptyInputWarning",
    "GroupMismatchWarning",
    "IncompleteGridWarning",
    "InputMismatchError",
    "InputTooLargeError",
    "InputOutOfMemoryError",
    "JSONTextError",
    "JudgeFatalError",
    "JudgeQueueingWarning",
    "LikertWarning",
    "MissingDataError",
    "NativeFallback",
    "QueryIdFormWarning",
    "QueryIdMismatchWarning",
    "ReplyError",
    "SubmissionError",
    "TooFewScoredError",
    "UnscorableSubmissionWarning",
    "__version__",
]
