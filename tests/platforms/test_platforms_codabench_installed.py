"""``reteco-measures codabench bundle`` from an installed (non-editable) package: the bundle's
wheel is repacked from the installed distribution's files.

Expected values come from outside the code under test: the repository's own source files (byte for
byte), sha256 hashes computed here with hashlib, and pip installing the wheel."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "reteco_measures" / "sample" / "data"


def _env(path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(path)  # the installed copy, never this checkout
    return env


def _pip(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", *args, "-q"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_bundle_from_a_non_editable_install_ships_the_installed_files(tmp_path: Path) -> None:
    site = tmp_path / "site"
    # a non-editable install (what `pip install .` does), into a folder of its own
    _pip("install", "--no-deps", "--no-build-isolation", "--target", str(site), str(REPO))
    assert not (site / "pyproject.toml").exists()
    out = tmp_path / "bundle.zip"
    cmd = [sys.executable, "-m", "reteco_measures", "codabench", "bundle", "--benchmark", "chunqiu",
           "--data", str(SAMPLE), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(site), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "source tree" not in proc.stderr and "Traceback" not in proc.stderr
    with zipfile.ZipFile(out) as bundle:
        wheels = [n for n in bundle.namelist() if n.startswith("docker/wheels/reteco_measures-")]
        assert len(wheels) == 1 and wheels[0].endswith("-py3-none-any.whl")
        wheel_bytes = bundle.read(wheels[0])
    wheel = tmp_path / Path(wheels[0]).name
    wheel.write_bytes(wheel_bytes)
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        # the package files are the repository's, byte for byte (the install copied them)
        for rel in ("__init__.py", "platforms/codabench.py", "cli/main.py", "sample/data/runs/chunqiu.jsonl"):
            assert zf.read(f"reteco_measures/{rel}") == (REPO / "reteco_measures" / rel).read_bytes(), rel
        assert not [n for n in names if n.endswith(".pyc")]
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        for installer_file in ("INSTALLER", "REQUESTED", "direct_url.json"):
            assert f"{info}/{installer_file}" not in names
        assert "reteco-measures = reteco_measures.cli.entry:main" in zf.read(f"{info}/entry_points.txt").decode()
        # RECORD lists every other file with its sha256 (PEP 376 form), computed here
        rows = list(csv.reader(io.StringIO(zf.read(f"{info}/RECORD").decode())))
        recorded = {r[0]: r[1] for r in rows}
        assert set(recorded) == set(names)
        for name in names:
            if name != f"{info}/RECORD":
                digest = base64.urlsafe_b64encode(hashlib.sha256(zf.read(name)).digest()).rstrip(b"=").decode()
                assert recorded[name] == f"sha256={digest}", name
    # pip installs the wheel, and the installed package runs
    again = tmp_path / "again"
    _pip("install", "--no-deps", "--target", str(again), str(wheel))
    proc = subprocess.run([sys.executable, "-c", "import reteco_measures; print(reteco_measures.__version__)"],
                          capture_output=True, text=True, env=_env(again), cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    # a modified installed file is not shipped under the release's name
    target = site / "reteco_measures" / "reward.py"
    target.write_text(target.read_text() + "\n# changed\n")
    proc = subprocess.run(cmd[:-1] + [str(tmp_path / "other.zip")], capture_output=True, text=True, cwd=tmp_path,
                          env=_env(site), timeout=300)
    assert proc.returncode != 0 and "differs from its recorded hash" in proc.stderr and "reward.py" in proc.stderr
    assert "Traceback" not in proc.stderr
