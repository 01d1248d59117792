"""``reteco-measures demo``: score the bundled synthetic sample with every official preset."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout

from . import sample_root

__all__ = ["run_demo"]


def run_demo(fmt: str = "table") -> int:
    """Run each preset that has a demo on the bundled sample; print its report.

    Returns 0 when every preset ran (an *invalid sample submission* is part of the demo and
    does not fail it), 1 if a preset crashed or no preset is available.
    """
    from ..cli.main import main as cli_main
    from ..presets import PRESETS

    root = sample_root()
    runnable = [(name, p) for name, p in sorted(PRESETS.items()) if p.demo is not None]
    if not runnable:
        print("no benchmark preset with a demo is installed", file=sys.stderr)
        return 1
    print(f"reteco-measures demo: scoring the bundled synthetic sample in {root}\n")
    failures = 0
    for name, preset in runnable:
        argv = ["score", name, *preset.demo(root), "--format", fmt]
        print("=" * 100)
        print(f"$ reteco-measures {' '.join(argv[:2])} ... ({preset.help})")
        print("=" * 100)
        buffer = io.StringIO()
        try:
            with redirect_stdout(buffer):
                code = cli_main(argv)
        except SystemExit as exc:  # argparse errors in a preset's demo argv
            code = int(exc.code or 0) or 2
        print(buffer.getvalue().rstrip())
        print(f"[exit code {code}]\n")
        if code not in (0, 1):
            failures += 1
    return 1 if failures else 0
