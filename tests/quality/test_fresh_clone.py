"""A fresh clone (no ../shared beside it) passes the test command: oracle tests skip, naming what is
missing; with RETECO_MEASURES_REQUIRE_ORACLES=1 (CI) the same tests fail instead."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENV = "RETECO_MEASURES_REQUIRE_ORACLES"


def test_missing_base_skips_naming_it(oracle, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    missing = tmp_path / "no-shared" / "data"
    with pytest.raises(pytest.skip.Exception) as info:
        oracle("ikat2023", base=missing)
    assert "oracle data missing" in str(info.value) and str(missing) in str(info.value)


def test_missing_file_skips_naming_the_file(oracle, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    (tmp_path / "ikat2023").mkdir()
    with pytest.raises(pytest.skip.Exception) as info:
        oracle("ikat2023", "2023_sample_run.json", base=tmp_path, what="the iKAT sample run")
    message = str(info.value)
    assert "the iKAT sample run" in message and str(tmp_path / "ikat2023" / "2023_sample_run.json") in message


@pytest.mark.parametrize("value", ["1", "yes", "true"])
def test_required_oracles_fail_instead(oracle, tmp_path, monkeypatch, value):
    monkeypatch.setenv(ENV, value)
    with pytest.raises(pytest.fail.Exception) as info:
        oracle("trec_eval_tests", base=tmp_path / "absent")
    assert ENV in str(info.value) and str(tmp_path / "absent") in str(info.value)


@pytest.mark.parametrize("value", ["", "0", "false", "no"])
def test_switch_off_values_skip(oracle, tmp_path, monkeypatch, value):
    monkeypatch.setenv(ENV, value)
    with pytest.raises(pytest.skip.Exception):
        oracle("x", base=tmp_path / "absent")


def test_present_oracle_is_returned(oracle, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "1")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b.txt").write_text("x", encoding="utf-8")
    assert oracle("a", "b.txt", base=tmp_path) == tmp_path / "a" / "b.txt"


@pytest.mark.slow
def test_fixtures_end_to_end_in_a_fresh_layout(tmp_path):
    """Our conftest in a folder with no ../shared: a test using each fixture skips, then fails with the
    switch on. Runs pytest in a subprocess, as the README's test command would."""
    tests = tmp_path / "clone" / "tests"
    tests.mkdir(parents=True)
    (tests / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text(encoding="utf-8"), encoding="utf-8")
    fixtures = ["shared_data", "trec_eval_dir", "ir_small_cases_dir", "ikat2023_dir", "tempo_sample_dir",
                "recor_sample_dir"]
    (tests / "test_uses_oracles.py").write_text(
        "".join(f"def test_{name}({name}):\n    raise AssertionError('must not run')\n\n\n" for name in fixtures),
        encoding="utf-8")
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:randomly", "-o",
           "addopts=", str(tests)]
    env = {k: v for k, v in os.environ.items() if k not in (ENV, "RETECO_MEASURES_ORACLE_DIR")}
    skipped = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert re.search(rf"{len(fixtures)} skipped", skipped.stdout), skipped.stdout
    assert skipped.stdout.count("oracle data missing") == len(fixtures)
    assert str(tmp_path / "shared" / "data") in skipped.stdout
    failed = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env={**env, ENV: "1"}, timeout=120)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert re.search(rf"{len(fixtures)} errors?", failed.stdout), failed.stdout
    assert "must not run" not in failed.stdout
    # RETECO_MEASURES_ORACLE_DIR: the oracles found elsewhere, the tests run (and here fail on purpose)
    elsewhere = tmp_path / "oracles"
    for sub in ("trec_eval_tests", "ir_small_cases", "ikat2023", "recor_tempo_samples/reteco_sample/track1_tempo",
                "recor_tempo_samples/reteco_sample/track2_recor"):
        (elsewhere / sub).mkdir(parents=True)
    found = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                           env={**env, ENV: "1", "RETECO_MEASURES_ORACLE_DIR": str(elsewhere)}, timeout=120)
    assert f"{len(fixtures)} failed" in found.stdout and found.stdout.count("must not run") >= len(fixtures)


def test_no_test_builds_its_own_path_to_the_oracles():
    """Every oracle path goes through the conftest fixtures (so it skips or fails cleanly)."""
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        if path.name in ("conftest.py", Path(__file__).name, "test_standalone_docs.py"):  # they name the paths
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("#", 1)[0]
            if re.search(r"""["']shared["']|["']shared/|\.parents\[\d\]\.parent\b""", code):
                offenders.append(f"{path.name}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_nothing_depends_on_machine_paths():
    """No absolute machine path in tests, the package, docs, notebooks or the README."""
    pattern = re.compile(r"(?<![\w.])/(work|home|root|Users|tmp/team)/")
    offenders = []
    targets = [*(REPO / "tests").rglob("*.py"), *(REPO / "reteco_measures").rglob("*.py"),
               *(REPO / "docs").rglob("*.md"), *(REPO / "notebooks").glob("*.ipynb"), REPO / "README.md",
               REPO / "mkdocs.yml"]
    for path in targets:
        if path.name in (Path(__file__).name, "test_standalone_docs.py"):  # their examples name such paths
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:120]}")
    assert not offenders, "\n".join(offenders)
