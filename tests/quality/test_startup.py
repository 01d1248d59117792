"""Start-up cost and import effects: ``import reteco_measures`` registers our measures with
ir_measures and imports neither pandas, numpy nor ir_datasets (whose ``__init__`` imports all of its
~100 dataset modules); our datasets are registered with ir_datasets by one explicit call
(``rm.datasets.register()``); ``--version`` answers without pandas.

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
    "ir_datasets first": "import ir_datasets\nimport reteco_measures as rm\nrm.datasets.register()\n",
    "reteco_measures first": "import reteco_measures as rm\nimport ir_datasets\nrm.datasets.register()\n",
    "register only": "import reteco_measures as rm\nrm.datasets.register()\nimport ir_datasets\n",
}


@pytest.mark.parametrize("order", list(_ORDERS))
def test_datasets_are_registered_by_one_explicit_call(order: str) -> None:
    probe = _ORDERS[order] + textwrap.dedent("""
        names = set(ir_datasets.registry)
        for name in ("chunqiu", "spoken-query", "spoken-query/validation", "ikat/2023/test",
                     "trec-ikat/2023", "reteco/recor/dev", "reteco/tempo/dev", "reteco/tempo/dev/steps"):
            assert name in names, name
        assert repr(ir_datasets.load("reteco/tempo/dev")) == (
            "Dataset(id='reteco/tempo/dev', provides=['docs', 'queries', 'qrels'])")
        assert ir_datasets.load("chunqiu").has_qrels()
        assert rm.datasets.register() == rm.datasets.REGISTERED_DATASETS  # idempotent
        try:  # a dataset object maps back to its topics
            rm.topics(ir_datasets.load("ikat/2023/test"))
        except rm.datasets.MissingDataError as exc:
            assert "RETECO_DATA" in str(exc)
        print("ok")
    """)
    assert _run(probe).split()[-1] == "ok"


def test_import_changes_nothing_but_the_ir_measures_registration() -> None:
    # what importing the package may change in other libraries: ir_measures' provider registry and
    # default pipeline gain our provider (first), nothing else; sys.meta_path, pathlib and the
    # other providers (gdeval, pytrec_eval, ...) are the objects they were before
    out = _run("""
        import pathlib, sys
        import ir_measures
        mkdir, meta_path = pathlib.Path.mkdir, list(sys.meta_path)
        registry, pipeline = dict(ir_measures.providers.registry), list(ir_measures.DefaultPipeline.providers)
        import reteco_measures as rm
        assert pathlib.Path.mkdir is mkdir
        assert sys.meta_path == meta_path, sys.meta_path
        now = ir_measures.providers.registry
        assert set(now) == set(registry) | {"reteco"}, set(now) ^ set(registry)
        assert all(now[k] is v for k, v in registry.items())
        from reteco_measures.providers.reteco import PROVIDER
        assert ir_measures.DefaultPipeline.providers == [PROVIDER, *pipeline]
        assert "ir_datasets" not in sys.modules and "pyterrier" not in sys.modules
        rm.calc_aggregate(["nDCG@10"], {"q": {"a": 1}}, {"q": {"a": 1.0}})  # evaluating changes nothing more
        assert pathlib.Path.mkdir is mkdir and sys.meta_path == meta_path
        assert all(now[k] is v for k, v in registry.items())
        print("ok")
    """)
    assert out.strip() == "ok"


def test_import_and_version_do_not_import_pandas() -> None:
    # the measures are registered by the import, everything else loads on first use
    out = _run("""
        import sys
        import ir_measures
        import reteco_measures as rm
        heavy = [m for m in ("pandas", "numpy", "pyarrow", "ir_datasets") if m in sys.modules]
        assert not heavy, heavy
        assert ir_measures.parse_measure("TC@10") == rm.TC @ 10
        assert "reteco" in ir_measures.providers.registry
        print("ok")
    """)
    assert out.strip() == "ok"
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "reteco_measures", "--version"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.startswith("reteco-measures "), done.stderr
    loaded = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "reteco_measures" in loaded
    assert not loaded & {"pandas", "numpy", "ir_datasets"}, sorted(loaded & {"pandas", "numpy", "ir_datasets"})


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
