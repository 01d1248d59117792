"""What every benchmark's data shares: the data root (``$RETECO_DATA``), `DataFile`, the topics
registry behind `topics`, and the hand-over to ir_datasets.

The readers and ir_datasets registrations live in their benchmark's folder
(`reteco_measures.benchmarks.tempo.data` and ``.irds``, likewise ``recor``, ``ikat2023``,
``chunqiu``, ``spoken``). A reader module needs only pandas and declares its datasets' topics
metadata on import (`add_topics`). A registration module imports ir_datasets (0.3-0.5 s: its
``__init__`` imports all of its own dataset modules), so each folder hands a function to
`on_ir_datasets` that imports it once ir_datasets is imported. They run in either import order::

    import ir_datasets, reteco_measures      # ir_datasets first: registered on our import
    import reteco_measures, ir_datasets      # we first: registered when ir_datasets is imported

In the second case a small finder on `sys.meta_path` waits for ``import ir_datasets``: it
lets the real module execute (without creating folders in the ir_datasets home) and then imports
every function given to `on_ir_datasets`, after which it removes itself. ``ir_datasets.load(...)``
therefore always sees our datasets.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
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

__all__ = ["ENV_VAR", "REGISTERED_DATASETS", "TOPICS_FACTORIES", "IRDS_REGISTRATIONS", "DataFile",
           "MissingDataError", "data_root", "add_topics", "topics", "on_ir_datasets", "hold_registrations",
           "release_registrations"]

#: functions registering datasets with ir_datasets, one per benchmark folder (`on_ir_datasets`)
IRDS_REGISTRATIONS: list[Callable[[], None]] = []


class _Hold:
    """Registrations wait while the generic ir_datasets handlers are being imported (that import
    may itself be the first ``import ir_datasets``, which runs the hook; the registrations need
    the handlers): ``held`` counts the holds, ``due`` records a run that waited."""

    held = 0
    due = False


def on_ir_datasets(register: Callable[[], None]) -> None:
    """Run ``register`` (a function that registers datasets with ir_datasets, and may import it)
    once ir_datasets is imported: now when it is imported already, else right after
    ``import ir_datasets``. Each benchmark folder calls this once on import."""
    IRDS_REGISTRATIONS.append(register)
    if "ir_datasets" in sys.modules:
        if _Hold.held:
            _Hold.due = True
        else:
            register()  # else the hook installed below runs it after ``import ir_datasets``


def hold_registrations() -> None:
    """Make registrations wait (until `release_registrations`): the generic handlers module
    (`reteco_measures.datasets.irds.base`) calls this before it imports ir_datasets."""
    _Hold.held += 1


def release_registrations() -> None:
    """End a `hold_registrations`; run the registrations that waited, if any."""
    _Hold.held -= 1
    if not _Hold.held and _Hold.due:
        _Hold.due = False
        _register_with_ir_datasets()


def _register_with_ir_datasets() -> None:
    """Register every dataset handed to `on_ir_datasets` with ir_datasets (or, while held, later)."""
    if _Hold.held:
        _Hold.due = True
        return
    for register in list(IRDS_REGISTRATIONS):
        register()


def _hook_installed() -> bool:
    return any(isinstance(f, _IrDatasetsHook) for f in sys.meta_path)


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
    elif not _hook_installed():
        sys.meta_path.insert(0, _IrDatasetsHook())


_install_hook()
