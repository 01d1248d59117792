"""Import the optional sub-modules of a package that exist (benchmark modules land one by one)."""

from __future__ import annotations

import importlib
import importlib.util


def import_present(package: str, names: list[str]) -> list[str]:
    """Import ``package.name`` for every name whose module exists; return the imported names.

    A module that exists but fails to import raises (a real bug must not be hidden).
    """
    loaded = []
    for name in names:
        full = f"{package}.{name}"
        if importlib.util.find_spec(full) is not None:
            importlib.import_module(full)
            loaded.append(name)
    return loaded
