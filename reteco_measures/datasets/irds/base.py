"""Registering our datasets with ir_datasets (imports ir_datasets): ``registry.register``, its
public way, for names no other package holds."""

from __future__ import annotations

import ir_datasets

from ..base import REGISTERED_DATASETS, TOPICS_FACTORIES

__all__ = ["register", "ir_datasets"]


def register(name: str, dataset: ir_datasets.Dataset, topics=None) -> None:
    """Register ``dataset`` with ir_datasets under ``name``, once (a name we registered before
    keeps its first registration). ``topics``: a zero-argument function returning the
    dataset's query metadata as a DataFrame keyed by ``query_id`` (for
    `topics`)."""
    registry = ir_datasets.registry
    if name not in REGISTERED_DATASETS:
        if name in set(registry):  # iterating the registry lists its names
            raise RuntimeError(f"dataset name {name!r} is already registered by another package")
        registry.register(name, dataset)
        REGISTERED_DATASETS.append(name)
    if topics is not None:
        TOPICS_FACTORIES[name] = topics
