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
from collections.abc import Iterator
from pathlib import Path

from ..errors import MissingDataError

__all__ = ["ENV_VAR", "data_root", "DataFile", "MissingDataError", "REGISTERED_DATASETS",
           "TOPICS_FACTORIES", "add_topics"]

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
            # where $RETECO_DATA points, say so; a root the caller gave is named as given
            source = f" (that is ${ENV_VAR}/{self.relpath})" if self.root is None else ""
            raise MissingDataError(f"missing {self.what}: put it at {full}{source}")
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
