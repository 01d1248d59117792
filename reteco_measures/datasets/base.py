"""Shared helpers of the dataset readers and of our ir_datasets registrations.

Data is never downloaded: the user places the benchmark files under one root folder, given by
the ``RETECO_DATA`` environment variable (or a ``root=`` argument), one sub-folder per benchmark
(``reteco/``, ``chunqiu/``, ``spoken/``, ``ikat2023/``). Paths are resolved *when the data is
read*, so registering datasets on import costs nothing and a missing file produces a message
saying exactly which file to put where.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd  # noqa: F401  (used in annotations)

from ..errors import MissingDataError


def import_ir_datasets_without_folders():
    """Import ir_datasets (or return it, when it is imported already) without letting its import
    create one empty folder per dataset under ``$IR_DATASETS_HOME`` (``~/.ir_datasets``):
    ir_datasets 0.6 makes ~27 of them as a side effect of being imported, before any dataset is
    used. While it is imported here, directory creation below that home is skipped; ir_datasets
    creates a folder itself when a dataset is actually downloaded. Nothing changes when
    ir_datasets was imported before us. This module itself does not import ir_datasets: the
    registrations (`reteco_measures.datasets.irds`) and the import hook call this."""
    if "ir_datasets" in sys.modules:
        return sys.modules["ir_datasets"]
    home = os.path.abspath(os.environ.get("IR_DATASETS_HOME") or os.path.join(os.path.expanduser("~"), ".ir_datasets"))
    original = Path.mkdir

    def mkdir(self: Path, *args, **kwargs):
        target = os.path.abspath(self)
        if target == home or target.startswith(home + os.sep):
            return None
        return original(self, *args, **kwargs)

    Path.mkdir = mkdir  # type: ignore[method-assign]
    try:
        import ir_datasets
    finally:
        Path.mkdir = original  # type: ignore[method-assign]
    return ir_datasets


__all__ = ["ENV_VAR", "data_root", "DataFile", "MissingDataError", "REGISTERED_DATASETS", "topics",
           "TOPICS_FACTORIES", "add_topics", "import_ir_datasets_without_folders"]

ENV_VAR = "RETECO_DATA"

#: names of every dataset we registered, in registration order
REGISTERED_DATASETS: list[str] = []
#: dataset name -> function returning its topics metadata DataFrame (see `topics`)
TOPICS_FACTORIES: dict = {}


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data root: ``root`` if given, else ``$RETECO_DATA``."""
    if root is not None:
        return Path(root)
    env = os.environ.get(ENV_VAR)
    if not env:
        raise MissingDataError(
            f"no data root: set the environment variable {ENV_VAR} to the folder that holds the "
            "benchmark folders (reteco/, chunqiu/, spoken/, ikat2023/), or pass root=..."
        )
    return Path(env)


class DataFile:
    """A file below ``<root>/<relpath>``, resolved lazily (ir_datasets' file interface:
    ``path()`` and ``stream()``)."""

    def __init__(self, relpath: str, what: str, root: str | os.PathLike | None = None):
        self.relpath = relpath
        self.what = what
        self.root = root

    def path(self, force: bool = True) -> str:
        root = data_root(self.root)
        full = root / self.relpath
        if force and not full.exists():
            source = f"${ENV_VAR}" if self.root is None else str(root)
            raise MissingDataError(
                f"missing {self.what}: put it at {full} (that is {source}/{self.relpath})"
            )
        return str(full)

    @contextlib.contextmanager
    def stream(self) -> Iterator:
        with open(self.path(), "rb") as f:
            yield f

    def exists(self) -> bool:
        try:
            return (data_root(self.root) / self.relpath).exists()
        except MissingDataError:
            return False

    def __repr__(self) -> str:
        return f"DataFile({self.relpath!r})"


def add_topics(name: str, factory) -> None:
    """Declare the topics metadata of dataset ``name`` (for `topics`): ``factory`` is a
    zero-argument function returning the query metadata as a DataFrame keyed by ``query_id``.
    The reader modules declare their datasets' topics on import, without ir_datasets, so
    ``rm.topics(name)`` and ``validate_run(..., queries=name)`` need no ir_datasets import."""
    TOPICS_FACTORIES[name] = factory


def topics(dataset) -> pd.DataFrame:
    """Query metadata of one of our datasets (``domain``, ``parent_id``, ``conversation_id``,
    ``turn``, ``collection``, ``condition``, ``required_periods``, ... as the benchmark has
    them), as a DataFrame keyed by ``query_id``; pass it as ``topics=`` to our measures.

    ``dataset``: a registered name (``"reteco/tempo/dev"``) or the object
    ``ir_datasets.load`` returned."""
    name = dataset if isinstance(dataset, str) else getattr(getattr(dataset, "metadata", None), "_dsid", None)
    if name is None or name not in TOPICS_FACTORIES:
        # a name only the ir_datasets registrations declare (the upstream iKAT ids) or a dataset
        # object: importing ir_datasets runs the registrations (the hook of ``datasets/__init__``)
        ir_datasets = import_ir_datasets_without_folders()
        if name is None:
            name = next((n for n in REGISTERED_DATASETS if ir_datasets.registry[n] is dataset), None)
    if name not in TOPICS_FACTORIES:
        raise KeyError(f"no topics metadata for dataset {dataset!r}; known: {sorted(TOPICS_FACTORIES)}")
    return TOPICS_FACTORIES[name]()
