"""The four benchmarks' data: readers (one module per benchmark) and ir_datasets registrations.

The reader modules (`reteco_tempo`,
`reteco_recor`, `ikat2023`,
`chunqiu`, `spoken`) need only
pandas and declare every dataset's topics metadata (`topics`); the data root is
``$RETECO_DATA``. The ir_datasets registrations live in `reteco_measures.datasets.irds`,
which imports ir_datasets (0.3-0.5 s: its ``__init__`` imports all of its own dataset modules),
so they are made by one explicit call, `register`::

    import ir_datasets
    import reteco_measures as rm

    rm.datasets.register()            # idempotent
    ir_datasets.load("reteco/tempo/dev")

Importing reteco_measures changes nothing in ir_datasets (no import hook, no patched
``pathlib``); ``reteco-measures datasets ...`` (the ir_datasets command line) calls `register`
itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import (
           ENV_VAR,
           REGISTERED_DATASETS,
           TOPICS_FACTORIES,
           DataFile,
           MissingDataError,
           add_topics,
           data_root,
           )

if TYPE_CHECKING:
    import pandas as pd

# isort: split
# one reader module per benchmark; importing it declares its datasets' topics metadata
from . import chunqiu, ikat2023, reteco_recor, reteco_tempo, spoken  # noqa: F401

__all__ = ["ENV_VAR", "REGISTERED_DATASETS", "TOPICS_FACTORIES", "DataFile", "MissingDataError", "data_root",
           "add_topics", "topics", "DATASET_MODULES", "register"]

#: reader modules, one per benchmark (imported above); their ir_datasets registrations are the
#: modules of the same names in `reteco_measures.datasets.irds`
DATASET_MODULES = ["reteco_tempo", "reteco_recor", "ikat2023", "chunqiu", "spoken"]


def register() -> list[str]:
    """Register every dataset of ours with ir_datasets (imports ir_datasets); idempotent.

    Returns the registered names. A name ir_datasets already holds from another package raises
    ``RuntimeError`` instead of replacing that dataset."""
    # ir_datasets is heavy: imported by this call only. The registrations are made when the
    # modules of `irds` execute (as ir_datasets' own dataset modules do), hence once per process.
    from . import irds  # noqa: F401

    return list(REGISTERED_DATASETS)


def topics(dataset) -> pd.DataFrame:
    """Query metadata of one of our datasets (``domain``, ``parent_id``, ``conversation_id``,
    ``turn``, ``collection``, ``condition``, ``required_periods``, ... as the benchmark has
    them), as a DataFrame keyed by ``query_id``; pass it as ``topics=`` to our measures.

    ``dataset``: a registered name (``"reteco/tempo/dev"``) or the object
    ``ir_datasets.load`` returned."""
    name = dataset if isinstance(dataset, str) else getattr(getattr(dataset, "metadata", None), "_dsid", None)
    if name is None or name not in TOPICS_FACTORIES:
        # a name only the ir_datasets registrations declare (the upstream iKAT ids) or a dataset
        # object: register our datasets with ir_datasets (imports it) and look again
        register()
        import ir_datasets

        if name is None:
            name = next((n for n in REGISTERED_DATASETS if ir_datasets.registry[n] is dataset), None)
    if name not in TOPICS_FACTORIES:
        raise KeyError(f"no topics metadata for dataset {dataset!r}; known: {sorted(TOPICS_FACTORIES)}")
    return TOPICS_FACTORIES[name]()
