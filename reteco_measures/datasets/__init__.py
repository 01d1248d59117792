"""ir_datasets registrations for the four benchmarks, one module per benchmark.

Importing :mod:`reteco_measures` registers them; the data root is ``$RETECO_DATA``.
"""

from __future__ import annotations

from .._plugins import import_present
from .base import (
           ENV_VAR,
           REGISTERED_DATASETS,
           TOPICS_FACTORIES,
           DataFile,
           MissingDataError,
           data_root,
           register,
           topics,
)

__all__ = ["ENV_VAR", "REGISTERED_DATASETS", "TOPICS_FACTORIES", "DataFile", "MissingDataError", "data_root", "register", "topics",
           "DATASET_MODULES"]

#: dataset modules, one per benchmark
DATASET_MODULES = ["reteco_tempo", "reteco_recor", "ikat2023", "chunqiu", "spoken"]
import_present(__name__, DATASET_MODULES)
