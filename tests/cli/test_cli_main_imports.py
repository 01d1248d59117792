"""cli/main.py: building the parser (``--help``, ``--version``) imports no heavy optional package
(our own modules are imported statically and are cheap; the slow third-party packages load inside
the commands that use them)."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
from reteco_measures.cli.main import build_parser
build_parser()
heavy = ("scipy", "statsmodels", "httpx", "matplotlib", "dask", "openai", "sklearn", "krippendorff", "torch")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def test_building_the_parser_imports_no_heavy_package() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_every_sub_command_is_registered() -> None:
    from reteco_measures.cli.docs import _subcommands
    from reteco_measures.cli.main import build_parser

    names = [name for name, _ in _subcommands(build_parser())]
    assert names == ["eval", "validate", "reward", "score", "demo", "datasets", "ir_measures",
                     "codabench", "compare", "compare-leaderboards", "gate", "judge", "leaderboard"]
