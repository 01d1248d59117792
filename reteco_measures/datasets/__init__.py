"""What every benchmark's data shares: the data root (``$RETECO_DATA``), `DataFile`, the topics
registry behind `topics`, and the hand-over to ir_datasets.

The readers and ir_datasets registrations live in their benchmark's folder
(`reteco_measures.benchmarks.tempo.data` and ``.irds``, likewise ``recor``, ``ikat2023``,
``chunqiu``, ``spoken``). A reader module needs only pandas and declares its datasets' topics
metadata on import (`add_topics`). A registration module imports ir_datasets (0.3-0.5 s: its
``__init__`` imports all of its own dataset modules), so each folder hands a function to
`on_ir_datasets`, and one explicit call, `register`, runs them::

    import ir_datasets
    import reteco_measures as rm

    rm.datasets.register()            # idempotent
    ir_datasets.load("reteco/tempo/dev")

Importing reteco_measures changes nothing in ir_datasets (no import hook, no patched
``pathlib``); ``reteco-measures datasets ...`` (the ir_datasets command line) and `topics` call
`register` themselves.
"""

from __future__ import annotations

from collections.abc import Callable
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

__all__ = ["ENV_VAR", "REGISTERED_DATASETS", "TOPICS_FACTORIES", "IRDS_REGISTRATIONS", "DataFile",
           "MissingDataError", "data_root", "add_topics", "topics", "on_ir_datasets", "register"]

#: functions registering datasets with ir_datasets, one per benchmark folder (`on_ir_datasets`)
IRDS_REGISTRATIONS: list[Callable[[], None]] = []
_RUN: list[Callable[[], None]] = []  # the registrations `register` has run


def on_ir_datasets(registration: Callable[[], None]) -> None:
    """Hand over a function that registers a benchmark folder's datasets with ir_datasets (it
    imports ir_datasets); `register` runs it. Each benchmark folder calls this once on import; a
    folder imported after `register` ran is registered at once."""
    IRDS_REGISTRATIONS.append(registration)
    if _RUN:
        registration()
        _RUN.append(registration)


def register() -> list[str]:
    """Register every dataset of ours with ir_datasets (imports ir_datasets); idempotent.

    Runs each benchmark folder's registration (`on_ir_datasets`) once and returns the registered
    names. A name ir_datasets already holds from another package raises ``RuntimeError``
    instead of replacing that dataset."""
    if not IRDS_REGISTRATIONS:
        raise RuntimeError("no benchmark folder has handed over its ir_datasets registration yet: import "
                           "reteco_measures.benchmarks first (rm.datasets.register() through `import reteco_measures "
                           "as rm` does)")
    for registration in list(IRDS_REGISTRATIONS):
        if registration not in _RUN:
            registration()
            _RUN.append(registration)
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
