"""What every benchmark's ir_datasets registration shares (`reteco_measures.datasets.irds.base`):
``register`` (idempotent) and the generic docs, queries and qrels handlers. Importing it imports
ir_datasets. The registrations themselves are each benchmark folder's ``irds`` module
(`reteco_measures.benchmarks.tempo.irds`, ...), run by `reteco_measures.datasets.register`.
"""

from __future__ import annotations

from .base import register

__all__ = ["register"]
