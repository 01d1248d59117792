"""Official-style scoring presets: ``reteco-measures score BENCHMARK ...``.

A preset only wires the layers together: read/validate (contracts), compute (measures via
:func:`reteco_measures.evaluate`), present (CLI tables / JSON). Each benchmark module
registers its presets with :func:`preset`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .._plugins import import_present

__all__ = ["Preset", "PRESETS", "preset", "PRESET_MODULES"]


@dataclass
class Preset:
    """A ``score`` sub-command.

    ``configure(parser)`` adds the preset's arguments; ``run(args) -> int`` does the work and
    returns the exit code (0 ok, 1 the submission is invalid, 2 usage / missing data).
    ``demo(sample_root) -> argv``: the arguments after ``score <name>`` that score the bundled
    sample (``sample_root`` is laid out like ``$RETECO_DATA``); used by ``reteco-measures demo``.
    """

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    demo: Callable[[Path], list[str]] | None = None


PRESETS: dict[str, Preset] = {}


def preset(
    name: str,
    help: str,
    configure: Callable[[argparse.ArgumentParser], None],
    demo: Callable[[Path], list[str]] | None = None,
):
    """Decorator registering ``run`` as the preset ``name``."""

    def deco(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        PRESETS[name] = Preset(name, help, configure, run, demo)
        return run

    return deco


#: preset modules, one per benchmark
PRESET_MODULES = ["reteco_track1", "reteco_track2", "ikat2023", "chunqiu", "spoken"]
import_present(__name__, PRESET_MODULES)
