"""What every benchmark's ir_datasets registration shares (`reteco_measures.datasets.irds.base`):
``register`` (idempotent) and the generic docs, queries and qrels handlers. Importing it imports
ir_datasets. The registrations themselves are each benchmark folder's ``irds`` module
(`reteco_measures.benchmarks.tempo.irds`, ...), imported as soon as ir_datasets is (see
`reteco_measures.datasets.on_ir_datasets`), so users never import them themselves.
"""

from __future__ import annotations

# first: base imports ir_datasets without letting it create folders in the user's home
from .base import register

__all__ = ["register"]
