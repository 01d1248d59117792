"""Spoken-Query (``spoken``), in one folder: `.data` reads the corpus, the spoken requests and
their labels (``$RETECO_DATA/spoken``), `.irds` registers them with ir_datasets
(``spoken-query/...``), `.contract` checks a results file (the ``spoken`` contract),
`.benchmark` declares the benchmark.

::

    from reteco_measures.benchmarks.spoken import data as sp, score_spoken
"""

from __future__ import annotations

from ...datasets import on_ir_datasets
from . import benchmark, contract, data
from .benchmark import SPOKEN, grid_table, score_spoken
from .contract import validate_spoken

__all__ = ["benchmark", "contract", "data", "SPOKEN", "grid_table", "score_spoken", "validate_spoken"]


def _register_with_ir_datasets() -> None:
    from . import irds  # noqa: F401  (imports ir_datasets, a slow import: only once it is imported)


on_ir_datasets(_register_with_ir_datasets)
