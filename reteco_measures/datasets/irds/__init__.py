"""Our datasets as ir_datasets registrations, one module per benchmark (the readers they wrap are
the modules of `reteco_measures.datasets`). Importing this package imports ir_datasets and
registers every dataset; `reteco_measures.datasets` imports it as soon as ir_datasets is
imported (see the hook there), so users never import it themselves.
"""

from __future__ import annotations

# first: base imports ir_datasets without letting it create folders in the user's home
from .base import register

# isort: split
# one module per benchmark; importing it registers its datasets with ir_datasets
from . import chunqiu, ikat2023, reteco_recor, reteco_tempo, spoken  # noqa: F401

__all__ = ["register"]
