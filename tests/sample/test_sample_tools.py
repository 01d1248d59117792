"""The sample generators live in ``tools/`` at the repository root (not installed); the package
ships only their output (``reteco_measures/sample/data``) and the iKAT-like sample's builder,
which `reteco_measures.sample.ikat_sample_root` runs on first use."""

from __future__ import annotations

from pathlib import Path

import generate_chunqiu
import generate_reteco_recor
import generate_reteco_tempo
import generate_spoken

import reteco_measures
from reteco_measures.sample import sample_root

PACKAGE = Path(reteco_measures.__file__).resolve().parent
TOOLS = Path(__file__).resolve().parents[2] / "tools"


def test_generators_are_tools_not_package_modules() -> None:
    assert sorted(p.name for p in (PACKAGE / "sample").glob("generate_*.py")) == ["generate_ikat2023.py"]
    assert sorted(p.name for p in TOOLS.glob("generate_*.py")) == [
        "generate_chunqiu.py", "generate_reteco_recor.py", "generate_reteco_tempo.py", "generate_spoken.py"]


def test_generators_write_the_shipped_sample_by_default() -> None:
    for gen in (generate_chunqiu, generate_reteco_recor, generate_reteco_tempo, generate_spoken):
        assert Path(gen.__file__).resolve().parent == TOOLS
        assert gen.DEFAULT_ROOT.resolve() == sample_root().resolve() == PACKAGE / "sample" / "data"
