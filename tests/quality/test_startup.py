"""Start-up cost: ``import reteco_measures`` does not import ir_datasets (whose ``__init__`` imports
all of its ~100 dataset modules), yet our datasets are registered with ir_datasets in either import
order (each benchmark folder's ``data`` module reads without ir_datasets; its ``irds`` module registers,
at our import or, through a one-shot ``sys.meta_path`` hook, when ir_datasets is imported).

The timing criterion (``import reteco_measures`` <= 1.5x and ``reteco-measures --version`` /
``--help`` <= 1.3x the time of ``import ir_measures, pandas, numpy, pyarrow``) needs a quiet
machine: it runs when ``RETECO_MEASURES_TIMING=1``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest


def _run(code: str, **env: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=180, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_does_not_import_ir_datasets() -> None:
    out = _run("""
        import sys
        import reteco_measures as rm
        from reteco_measures.benchmarks import benchmark
        benchmark("reteco-1a"), benchmark("chunqiu"), benchmark("ikat-2023")
        heavy = sorted(m for m in sys.modules if m == "ir_datasets" or m.startswith(("ir_datasets.",
                       "reteco_measures.datasets.irds")) or m.endswith(".irds"))
        assert not heavy, heavy
        # the readers declare every dataset's topics without ir_datasets
        factories = rm.datasets.TOPICS_FACTORIES
        for name in ("chunqiu", "spoken-query/validation", "ikat/2023/test", "ikat/2023/test/judged",
                     "ikat/2023/test/ptkb/nist", "reteco/recor/dev", "reteco/recor/biology/dev",
                     "reteco/tempo/dev", "reteco/tempo/law/train/steps"):
            assert name in factories, name
        assert "ir_datasets" not in sys.modules
        print("ok")
    """)
    assert out.strip() == "ok"


_ORDERS = {
    "ir_datasets first": "import ir_datasets\nimport reteco_measures as rm\n",
    "reteco_measures first": "import reteco_measures as rm\nimport ir_datasets\n",
    "reteco_measures, then a submodule of ir_datasets": (
        "import reteco_measures as rm\nfrom ir_datasets.formats import TrecQrel\nimport ir_datasets\n"),
    "reteco_measures, then from ir_datasets import load": (
        "import reteco_measures as rm\nfrom ir_datasets import load\nimport ir_datasets\n"),
}


@pytest.mark.parametrize("order", list(_ORDERS))
def test_datasets_are_registered_in_either_import_order(order: str, tmp_path) -> None:
    probe = _ORDERS[order] + textwrap.dedent("""
        import os, sys
        print(os.path.exists(os.environ["IR_DATASETS_HOME"]))  # a folder made by the imports?
        from reteco_measures.datasets import _IrDatasetsHook
        registered = ir_datasets.registry._registered
        for name in ("chunqiu", "spoken-query", "spoken-query/validation", "ikat/2023/test",
                     "trec-ikat/2023", "reteco/recor/dev", "reteco/tempo/dev", "reteco/tempo/dev/steps"):
            assert name in registered, name
        assert repr(ir_datasets.load("reteco/tempo/dev")) == (
            "Dataset(id='reteco/tempo/dev', provides=['docs', 'queries', 'qrels'])")
        assert ir_datasets.load("chunqiu").has_qrels()
        # the real module, with its own spec; the hook is gone
        assert ir_datasets.__spec__.origin == ir_datasets.__file__ and hasattr(ir_datasets, "registry")
        assert not any(isinstance(f, _IrDatasetsHook) for f in sys.meta_path)
        # a dataset object maps back to its topics
        try:
            rm.topics(ir_datasets.load("ikat/2023/test"))
        except rm.datasets.MissingDataError as exc:
            assert "RETECO_DATA" in str(exc)
        print("ok")
    """)
    home = tmp_path / "irds"
    env = {"IR_DATASETS_HOME": str(home)}
    out = _run(probe, **env).split()
    assert out[-1] == "ok"
    if order != "ir_datasets first":  # else ir_datasets' own import made them, as without us
        assert out[0] == "False", "importing ir_datasets after reteco_measures made folders in its home"


def test_topics_of_a_name_only_the_registrations_declare() -> None:
    # the upstream iKAT ids are registered only when ir_datasets does not define them itself:
    # rm.topics imports ir_datasets for them (and then finds them)
    out = _run("""
        import sys
        import reteco_measures as rm
        assert "trec-ikat/2023" not in rm.datasets.TOPICS_FACTORIES
        try:
            rm.topics("trec-ikat/2023")
        except rm.datasets.MissingDataError as exc:
            assert "ikat2023" in str(exc), exc
        assert "ir_datasets" in sys.modules and "trec-ikat/2023" in rm.datasets.TOPICS_FACTORIES
        try:
            rm.topics("no/such/dataset")
        except KeyError as exc:
            assert "no topics metadata" in str(exc)
        print("ok")
    """, RETECO_DATA="/nonexistent-reteco-data")
    assert out.strip() == "ok"


def test_datasets_command_lists_our_datasets() -> None:
    done = subprocess.run([sys.executable, "-m", "reteco_measures", "datasets", "list"], capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    names = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
    assert {"chunqiu", "reteco/tempo/dev", "ikat/2023/test", "spoken-query/validation"} <= names


def _best_times(commands: dict[str, list[str]], rounds: int = 7) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # cache bytecode
    for cmd in commands.values():  # warm: bytecode written, files in the page cache
        subprocess.run(cmd, capture_output=True, env=env, check=True, timeout=180)
    best = dict.fromkeys(commands, float("inf"))
    for _ in range(rounds):  # interleaved, so load changes hit every command alike
        for key, cmd in commands.items():
            start = time.perf_counter()
            subprocess.run(cmd, capture_output=True, env=env, check=True, timeout=180)
            best[key] = min(best[key], time.perf_counter() - start)
    return best


@pytest.mark.skipif(os.environ.get("RETECO_MEASURES_TIMING") != "1",
                    reason="timing needs a quiet machine: set RETECO_MEASURES_TIMING=1")
def test_start_up_time_against_the_baseline() -> None:
    py = sys.executable
    best = _best_times({
        "baseline": [py, "-c", "import ir_measures, pandas, numpy, pyarrow"],
        "import": [py, "-c", "import reteco_measures"],
        "--version": [py, "-m", "reteco_measures", "--version"],
        "--help": [py, "-m", "reteco_measures", "--help"],
    })
    ratios = {k: best[k] / best["baseline"] for k in best}
    assert ratios["import"] <= 1.5, ratios
    assert ratios["--version"] <= 1.3 and ratios["--help"] <= 1.3, ratios
