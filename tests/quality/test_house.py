"""The house rules of the package, read from its source with :mod:`ast` (nothing is imported but
what a check names):

- nothing dead or kept "for one release" is left (nothing has been released);
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

PACKAGE_NAME = "reteco_measures"
PACKAGE = Path(importlib.util.find_spec(PACKAGE_NAME).origin).parent

#: (module, attribute) pairs removed as dead code or shims; none may come back
REMOVED = [
    ("kernels", "KERNEL_MODULES"), ("contracts", "CONTRACT_MODULES"), ("benchmarks", "BENCHMARK_MODULES"),
    ("datasets", "DATASET_MODULES"), ("io.readers", "QRELS_COLUMNS"), ("io.readers", "looks_like_path"),
    ("io._lines", "SplitLines.fields_of"), ("io._lines", "SplitLines.is_comment"),
    ("kernels.standard", "PreparedRun.sorted_by_score"), ("engine.evaluate", "Prepared.qrels_standard"),
    ("judge.client", "JudgeClient.json_mode"),
]


@pytest.mark.parametrize(("module", "name"), REMOVED)
def test_dead_code_stays_deleted(module: str, name: str) -> None:
    obj = importlib.import_module(f"{PACKAGE_NAME}.{module}")
    *owner, attr = name.split(".")
    for part in owner:
        obj = getattr(obj, part)
    assert not hasattr(obj, attr), f"{module}.{name} is dead code"


@pytest.mark.parametrize("shim", ["provider.py", "scale/native.py"])
def test_no_shim_modules(shim: str) -> None:
    assert not (PACKAGE / shim).exists(), f"{shim}: a re-export shim"


def test_no_ignored_parameters() -> None:
    """``stacklevel`` parameters that were ignored and ``EvalContext(measure=)`` are gone."""
    import inspect

    from reteco_measures.kernels.context import EvalContext
    from reteco_measures.query_ids import align_query_ids, check_not_empty, check_query_ids

    for fn in (align_query_ids, check_not_empty, check_query_ids):
        assert "stacklevel" not in inspect.signature(fn).parameters, fn.__name__
    assert "measure" not in inspect.signature(EvalContext).parameters
    from reteco_measures.judge.client import JudgeClient

    assert "json_mode" not in inspect.signature(JudgeClient).parameters
