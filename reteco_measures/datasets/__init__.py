"""ir_datasets registrations for the four benchmarks, one module per benchmark.

Importing :mod:`reteco_measures` registers them; the data root is ``$RETECO_DATA``.
"""

from __future__ import annotations

# first: base imports ir_datasets without letting it create folders in the user's home
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

# isort: split
# one module per benchmark; importing it registers its datasets with ir_datasets
from . import chunqiu, ikat2023, reteco_recor, reteco_tempo, spoken  # noqa: F401

__all__ = ["ENV_VAR", "REGISTERED_DATASETS", "TOPICS_FACTORIES", "DataFile", "MissingDataError", "data_root", "register", "topics",
           "DATASET_MODULES"]

#: dataset modules, one per benchmark (imported above)
DATASET_MODULES = ["reteco_tempo", "reteco_recor", "ikat2023", "chunqiu", "spoken"]
