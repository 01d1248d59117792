"""ChunQiu (``chunqiu``), in one folder: `.data` reads the corpus, examples and dated
associations (``$RETECO_DATA/chunqiu``), `.irds` registers them with ir_datasets (``chunqiu``),
`.contract` checks a results file (the ``chunqiu`` contract), `.benchmark` declares the benchmark.

::

    from reteco_measures.benchmarks.chunqiu import data as cq, score_chunqiu
"""

from __future__ import annotations

from ...datasets import on_ir_datasets
from . import benchmark, contract, data
from .benchmark import CHUNQIU, score_chunqiu
from .contract import validate_chunqiu

__all__ = ["benchmark", "contract", "data", "CHUNQIU", "score_chunqiu", "validate_chunqiu"]


def _register_with_ir_datasets() -> None:
    from . import irds  # noqa: F401  (imports ir_datasets, a slow import: only once it is imported)


on_ir_datasets(_register_with_ir_datasets)
