"""RECOR, RETECO Track 2 (``reteco-2a`` conversational retrieval), in one folder: `.data` reads
the released files (``$RETECO_DATA/reteco/recor``), `.irds` registers them with ir_datasets
(``reteco/recor/...``), `.benchmark` declares the benchmark. The run contract is RETECO's,
shared with Track 1 (`reteco_measures.benchmarks.reteco`).

::

    from reteco_measures.benchmarks.recor import load_recor, score_reteco_2a
"""

from __future__ import annotations

from ...datasets import on_ir_datasets
from . import benchmark, data
from .benchmark import RETECO_2A, score_reteco_2a
from .data import RECOR_DOMAINS, RECOR_SPLITS, RecorData, load_organiser_sample, load_recor, map_run_query_ids

__all__ = ["benchmark", "data", "RETECO_2A", "score_reteco_2a", "RECOR_DOMAINS", "RECOR_SPLITS", "RecorData",
           "load_organiser_sample", "load_recor", "map_run_query_ids"]


def _register_with_ir_datasets() -> None:
    from . import irds  # noqa: F401  (imports ir_datasets, a slow import: only once it is imported)


on_ir_datasets(_register_with_ir_datasets)
