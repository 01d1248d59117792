"""TREC iKAT 2023 (``ikat-2023``), in one folder: `.data` reads the official topics, qrels and
PTKB qrels (``$RETECO_DATA/ikat2023``), `.irds` registers them with ir_datasets
(``reteco-ikat/2023/...``), `.contract` checks and converts an iKAT run (the ``ikat``
contract), `.benchmark` declares the benchmark.

::

    from reteco_measures.benchmarks.ikat2023 import load_ikat_topics, score_ikat_2023
"""

from __future__ import annotations

from ...datasets import on_ir_datasets
from . import benchmark, contract, data
from .benchmark import IKAT_2023, score_ikat_2023
from .contract import convert_ikat_run, validate_ikat
from .data import ikat_ptkb, ikat_qrels, load_ikat_topics, ptkb_qrels

__all__ = ["benchmark", "contract", "data", "IKAT_2023", "score_ikat_2023", "convert_ikat_run", "validate_ikat",
           "ikat_ptkb", "ikat_qrels", "load_ikat_topics", "ptkb_qrels"]


def _register_with_ir_datasets() -> None:
    from . import irds  # noqa: F401  (imports ir_datasets, a slow import: only once it is imported)


on_ir_datasets(_register_with_ir_datasets)
