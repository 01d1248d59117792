"""What ``pip install`` gets: the licence file, the ``py.typed`` marker, project URLs, one pure-Python
wheel for every platform (PEP 561 for the marker, the core metadata spec for ``License-File`` and
``Project-URL``)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

# packaging: wheels built and installed (run by CI; skipped by -m 'not slow')
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = out.glob("*.whl")
    code = (
        "import sys, setuptools.build_meta as b; "
        f"print(b.build_sdist({str(out)!r}))"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=REPO, timeout=300)
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def _wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return Parser().parsestr(zf.read(name).decode("utf-8")), zf.namelist()


def test_wheel_is_pure_python(built):
    assert built["wheel"].name.endswith("-py3-none-any.whl"), built["wheel"].name


def test_wheel_carries_licence_and_typed_marker(built):
    meta, names = _wheel_metadata(built["wheel"])
    assert "reteco_measures/py.typed" in names
    licences = [n for n in names if n.endswith("/LICENSE") and ".dist-info/" in n]
    assert licences, names
    with zipfile.ZipFile(built["wheel"]) as zf:
        assert "Apache License" in zf.read(licences[0]).decode("utf-8")
    assert meta["License-Expression"] == "Apache-2.0"
    assert "LICENSE" in meta.get_all("License-File", [])
    assert "Typing :: Typed" in meta.get_all("Classifier", [])


def test_wheel_has_project_urls(built):
    meta, _ = _wheel_metadata(built["wheel"])
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL", []))
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())


def test_sdist_carries_licence_and_typed_marker(built):
    with tarfile.open(built["sdist"]) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {"LICENSE", "reteco_measures/py.typed", "pyproject.toml"} <= names


def test_repository_licence_is_apache_2():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_wheel_carries_the_bundled_sample(built):
    """Every file of ``reteco_measures/sample/data`` (package-data ``sample/data/**/*``) is in the
    wheel, the judge panel's ratings included."""
    sample = REPO / "reteco_measures" / "sample" / "data"
    expected = {f"reteco_measures/sample/data/{p.relative_to(sample).as_posix()}" for p in sample.rglob("*")
                if p.is_file()}
    assert "reteco_measures/sample/data/runs/reteco_track2_panel/human.csv" in expected
    _, names = _wheel_metadata(built["wheel"])
    assert expected <= set(names), sorted(expected - set(names))
