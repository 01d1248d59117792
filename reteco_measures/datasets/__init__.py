"""The four benchmarks' data: readers (one module per benchmark) and ir_datasets registrations.

The reader modules (`reteco_tempo`,
`reteco_recor`, `ikat2023`,
`chunqiu`, `spoken`) need only
pandas and declare every dataset's topics metadata (`topics`); the data root is
``$RETECO_DATA``. The ir_datasets registrations live in `reteco_measures.datasets.irds`,
which imports ir_datasets (0.3-0.5 s: its ``__init__`` imports all of its own dataset modules),
so importing this package does not import it. They are made in either import order::

    import ir_datasets, reteco_measures      # ir_datasets first: registered on our import
    import reteco_measures, ir_datasets      # we first: registered when ir_datasets is imported

In the second case a small finder on `sys.meta_path` waits for ``import ir_datasets``: it
lets the real module execute (without creating folders in the ir_datasets home) and then imports
`reteco_measures.datasets.irds`, after which it removes itself. ``ir_datasets.load(...)``
therefore always sees our datasets.
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec

from .base import (
           ENV_VAR,
           REGISTERED_DATASETS,
           TOPICS_FACTORIES,
           DataFile,
           MissingDataError,
           add_topics,
           data_root,
           import_ir_datasets_without_folders,
           topics,
)

# isort: split
# one reader module per benchmark; importing it declares its datasets' topics metadata
from . import chunqiu, ikat2023, reteco_recor, reteco_tempo, spoken  # noqa: F401

__all__ = ["ENV_VAR", "REGISTERED_DATASETS", "TOPICS_FACTORIES", "DataFile", "MissingDataError", "data_root",
           "add_topics", "topics"]


def _register_with_ir_datasets() -> None:
    """Register every dataset with ir_datasets (imports it)."""
    from . import irds  # noqa: F401  (importing the package registers the datasets)


class _IrDatasetsLoader:
    """Loads ``ir_datasets`` by a plain ``import`` of the real module, then registers our datasets."""

    def create_module(self, spec: ModuleSpec):
        _uninstall_hook()
        module = import_ir_datasets_without_folders()  # the real import, run to its end
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        module.__spec__ = self.real_spec  # the import system set ours; the module keeps its own
        _register_with_ir_datasets()


class _IrDatasetsHook:
    """A `sys.meta_path` finder answering only for ``ir_datasets``, once."""

    def find_spec(self, fullname: str, path=None, target=None) -> ModuleSpec | None:
        if fullname != "ir_datasets":
            return None
        return ModuleSpec("ir_datasets", _IrDatasetsLoader())


def _uninstall_hook() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _IrDatasetsHook)]


def _install_hook() -> None:
    """Register now if ir_datasets is imported already, else when it is."""
    if "ir_datasets" in sys.modules:
        _register_with_ir_datasets()
    elif not any(isinstance(f, _IrDatasetsHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _IrDatasetsHook())


_install_hook()
