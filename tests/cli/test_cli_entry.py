"""cli/entry.py and cli/commands.py: ``reteco-measures --help`` answers without pandas, numpy,
pyarrow or ir_datasets, and prints what the full parser prints."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from reteco_measures.cli.commands import top_parser
from reteco_measures.cli.main import build_parser

HEAVY = ("pandas", "numpy", "pyarrow", "ir_datasets")


def _imported(*args: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """Top-level packages a fresh ``python -X importtime -m reteco_measures ARGS`` imports."""
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "reteco_measures", *args],
                          capture_output=True, text=True, timeout=120, env=env)
    names = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    return names, done


@pytest.mark.parametrize("flag", ["--help", "-h", "--version"])
def test_help_and_version_import_no_heavy_package(flag: str) -> None:
    names, done = _imported(flag)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "reteco_measures" in names  # the probe sees our imports
    assert names.isdisjoint(HEAVY), sorted(names & set(HEAVY))
    if flag != "--version":
        assert done.stdout == _full_help(100)
    # a sub-command still builds the full command line
    names, done = _imported("score", "--help")
    assert done.returncode == 0 and "pandas" in names


def _full_help(width: int) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        return build_parser().format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


@pytest.mark.parametrize("width", [60, 100, 200])
def test_the_light_help_is_the_full_parsers(width: int, monkeypatch) -> None:
    """A command added to (or reworded in) the full parser must be listed in commands.COMMAND_LINES."""
    monkeypatch.setenv("COLUMNS", str(width))
    assert top_parser().format_help() == _full_help(width)


def test_no_command_is_the_same_usage_error(capsys) -> None:
    from reteco_measures.cli.entry import main

    with pytest.raises(SystemExit) as light:
        main([])
    light_err = capsys.readouterr().err
    with pytest.raises(SystemExit) as full:
        build_parser().parse_args([])
    assert (light.value.code, light_err) == (full.value.code, capsys.readouterr().err) and light.value.code == 2
