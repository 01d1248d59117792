"""Start-up: ``reteco-measures --version`` / ``--help`` and ``import reteco_measures`` against
``import ir_measures`` (and ``import pandas``, for scale), each a fresh interpreter, rounds interleaved.

    python benchmarks/bench_startup.py [--rounds 7] [--md out.md]

Prints the median wall time of each command, its ratio to ``import ir_measures`` and its peak
resident memory (the child's ``ru_maxrss``). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _interleave import machine, markdown, median  # noqa: E402

PY = sys.executable
COMMANDS = {
    "python -c 'import ir_measures'": [PY, "-c", "import ir_measures"],
    "python -c 'import pandas'": [PY, "-c", "import pandas"],
    "python -c 'import reteco_measures'": [PY, "-c", "import reteco_measures"],
    "reteco-measures --version": [PY, "-m", "reteco_measures", "--version"],
    "reteco-measures --help": [PY, "-m", "reteco_measures", "--help"],
}


def _run(cmd: list[str]) -> tuple[float, float]:
    """(seconds, peak MiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:  # reported as a failed command, the others still timed
        return float("nan"), float("nan")
    return elapsed, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--md", help="write the Markdown table here")
    args = ap.parse_args(argv)
    for cmd in COMMANDS.values():  # warm: bytecode written, files in the page cache
        _run(cmd)
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    peaks: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, cmd in COMMANDS.items():
            t, peak = _run(cmd)
            times[name].append(t)
            peaks[name] = max(peaks.get(name, 0.0), peak)
    base = median(times["python -c 'import ir_measures'"])
    rows = [[name, median(times[name]), median(times[name]) / base, peaks[name]] for name in COMMANDS]
    title = f"Start-up, fresh interpreter each; median of {args.rounds} interleaved rounds"
    table = markdown(["command", "seconds (median)", "ratio to import ir_measures", "peak MiB (RSS)"], rows)
    text = f"{title}\n\n{table}\n\nMachine: {machine()}\n"
    print(text)
    if args.md:
        Path(args.md).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
