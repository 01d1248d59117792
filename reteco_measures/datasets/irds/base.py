"""Registering our datasets with ir_datasets (imports ir_datasets, without creating folders in
its home: `import_ir_datasets_without_folders`)."""

from __future__ import annotations

from ..base import REGISTERED_DATASETS, TOPICS_FACTORIES, import_ir_datasets_without_folders

ir_datasets = import_ir_datasets_without_folders()

__all__ = ["register", "ir_datasets"]


def register(name: str, dataset: ir_datasets.Dataset, topics=None) -> None:
    """Register ``dataset`` with ir_datasets under ``name``, idempotently (a reload replaces
    our own earlier registration). ``topics``: a zero-argument function returning the
    dataset's query metadata as a DataFrame keyed by ``query_id`` (for
    `topics`)."""
    registry = ir_datasets.registry
    if name in registry._registered:
        if name in REGISTERED_DATASETS:
            del registry._registered[name]
        else:
            raise RuntimeError(f"dataset name {name!r} is already registered by another package")
    registry.register(name, dataset)
    if name not in REGISTERED_DATASETS:
        REGISTERED_DATASETS.append(name)
    if topics is not None:
        TOPICS_FACTORIES[name] = topics
