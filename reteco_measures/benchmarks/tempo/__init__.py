"""TEMPO, RETECO Track 1 (``reteco-1a`` temporal retrieval, ``reteco-1b`` step-wise retrieval), in
one folder: `.data` reads the released files (``$RETECO_DATA/reteco/tempo``), `.irds` registers
them with ir_datasets (``reteco/tempo/...``), `.benchmark` declares the two benchmarks. The
run contract is RETECO's, shared with Track 2 (`reteco_measures.benchmarks.reteco`).

::

    from reteco_measures.benchmarks.tempo import load_tempo, score_reteco_1a

    data = load_tempo("dev")
    score = score_reteco_1a("run.txt", data=data)
"""

from __future__ import annotations

from ...datasets import on_ir_datasets
from . import benchmark, data
from .benchmark import RETECO_1A, RETECO_1B, score_reteco_1a, score_reteco_1b
from .data import (
    TEMPO_DOMAINS,
    TEMPO_SPLITS,
    TempoData,
    load_tempo,
    load_tempo_files,
    load_tempo_organiser_sample,
    map_duplicates,
    read_duplicate_map,
)

__all__ = ["benchmark", "data", "RETECO_1A", "RETECO_1B", "score_reteco_1a", "score_reteco_1b", "TEMPO_DOMAINS",
           "TEMPO_SPLITS", "TempoData", "load_tempo", "load_tempo_files", "load_tempo_organiser_sample",
           "map_duplicates", "read_duplicate_map"]


def _register_with_ir_datasets() -> None:
    from . import irds  # noqa: F401  (imports ir_datasets, a slow import: only once it is imported)


on_ir_datasets(_register_with_ir_datasets)
