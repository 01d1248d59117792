"""reteco-measures: ir_measures extension for RETECO, ChunQiu, Spoken-Query and TREC iKAT 2023.

Importing the package registers every measure (long name and alias) with ir_measures and puts
our provider first in ir_measures' default pipeline::

    import ir_measures
    import reteco_measures as rm
    from ir_measures import nDCG

    ir_measures.calc_aggregate([nDCG @ 10, rm.TC @ 10], qrels, run)
    rm.calc_aggregate(["nDCG@10", "TC@10"], "qrels.txt", "run.txt", topics=topics_df)

How the package is cut (each layer imports only from the layers below it): ``io``, ``errors``,
``side``, ``query_ids`` → ``measures`` → ``kernels`` → ``providers`` → ``engine``, ``scale`` →
``api`` → contracts, datasets, report → stats, judge → benchmarks → platforms → cli.
"""

# ruff: noqa: I001  (names are grouped by topic, as in ir_measures' __init__; the order is free)
from ._version import __version__

# -- measures ---------------------------------------------------------------------------------
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

# -- evaluate ---------------------------------------------------------------------------------
from .providers.native import use_native_kernels
from .providers.reteco import install as _install
from .api import calc_aggregate, evaluate, iter_calc
from .engine.grouping import depth_group
from . import plot

# -- data -------------------------------------------------------------------------------------
from .io.readers import read_qrels, read_run
from .side import load_labels, load_topics, side_info
from .datasets import topics
from .contracts import ValidationReport, validate_run

# -- official scoring -------------------------------------------------------------------------
from .benchmarks import Benchmark, Score, benchmark
from .reward import reward

# -- errors -----------------------------------------------------------------------------------
from .errors import (
    Problem,
    BatchPending,
    BatchUnsupported,
    BoundedRunError,
    DataFormatError,
    DataFormatWarning,
    DuplicateKeyError,
    EmptyInputWarning,
    GroupMismatchWarning,
    IncompleteGridWarning,
    InputMismatchError,
    InputTooLargeError,
    JSONTextError,
    JudgeFatalError,
    JudgeQueueingWarning,
    LikertWarning,
    MissingDataError,
    NativeFallback,
    QueryIdMismatchWarning,
    ReplyError,
    SubmissionError,
    TooFewScoredError,
    UnscorableSubmissionWarning,
)

# -- comparisons, leaderboards, the judge, platforms (their heavy third-party packages -- scipy,
# statsmodels, httpx, matplotlib, dask -- are imported inside the functions that need them)
from . import benchmarks as benchmarks
from . import judge as judge
from . import platforms as platforms
from . import report as report
from . import scale as scale
from . import stats as stats
from .benchmarks.leaderboard import leaderboard
from .stats import Comparison, compare, tie_sensitivity

_install()


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
    "JSONTextError",
    "JudgeFatalError",
    "JudgeQueueingWarning",
    "LikertWarning",
    "MissingDataError",
    "NativeFallback",
    "QueryIdMismatchWarning",
    "ReplyError",
    "SubmissionError",
    "TooFewScoredError",
    "UnscorableSubmissionWarning",
    "__version__",
]
