"""``reteco-measures demo``: score the bundled synthetic sample with every benchmark's engine."""

from __future__ import annotations

import sys
from typing import TextIO

from ..benchmarks import BENCHMARKS
from ..report.score import render_score
from . import sample_root

__all__ = ["run_demo"]


def run_demo(fmt: str = "table", *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Score the bundled sample with each benchmark that declares a demo; write each report.

    Every benchmark goes through `reteco_measures.benchmarks.Benchmark.score` and its
    report through `reteco_measures.report.score.render_score` (no command line involved).

    Returns 0 when every benchmark scored (an *invalid sample submission* is part of the demo and
    does not fail it), 1 if one raised or none is available.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    root = sample_root()
    runnable = [b for _, b in sorted(BENCHMARKS.items()) if b.cli.demo is not None]
    if not runnable:
        print("no benchmark with a demo is installed", file=err)
        return 1
    print(f"reteco-measures demo: scoring the bundled synthetic sample in {root}\n", file=out)
    failures = 0
    for bench in runnable:
        print("=" * 100, file=out)
        print(f"{bench.name}: {bench.cli.help}", file=out)
        print("=" * 100, file=out)
        try:
            kw = dict(bench.cli.demo(root))
            score = bench.score(kw.pop("run"), data=kw.pop("data", None), split=kw.pop("split", None), **kw)
            render_score(score, fmt, out=out, err=out)
            print(f"[{'valid' if score.valid else 'INVALID'} submission]\n", file=out)
        except Exception as exc:  # a broken benchmark must not hide the others
            failures += 1
            print(f"{bench.name} failed: {type(exc).__name__}: {exc}\n", file=out)
    return 1 if failures else 0
