"""Peak memory (RSS) of reading and validating a large TREC run, each step in a fresh process.

    python benchmarks/bench_memory.py [--queries 5000] [--docs 1000] [--keep DIR]

Writes a synthetic run of Q x D lines (single spaces, as most systems write it) and a copy of
it that needs the checking path (one malformed line at the end: the arrow path refuses the file
and every line goes through the line-by-line checks), then runs each measured step in its own
Python process and reports that process's peak resident set size (``VmHWM`` from ``/proc/self/status``, Linux),
minus nothing: the interpreter and the imported libraries are included, as a user would see.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd


def write_run(path: str, n_queries: int, n_docs: int, seed: int = 0) -> None:
    """A TREC run ``q<i> Q0 doc<j> <rank> <score> bench`` written with pandas (no Python loop)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "q": np.repeat(np.array([f"q{i}" for i in range(n_queries)]), n_docs),
            "z": "Q0",
            "d": np.array([f"doc{i:07d}" for i in rng.integers(0, n_docs * 20, n_queries * n_docs)]),
            "r": np.tile(np.arange(1, n_docs + 1), n_queries),
            "s": np.char.mod("%.3f", rng.random(n_queries * n_docs)),
            "t": "bench",
        }
    )
    frame.to_csv(path, sep=" ", header=False, index=False)


def write_run_files(folder: str, n_queries: int, n_docs: int) -> tuple[str, str]:
    """``folder/run.txt`` (clean) and ``folder/run_checking.txt`` (the same plus one malformed last line,
    which sends every line through the checking path); files already there are reused."""
    os.makedirs(folder, exist_ok=True)
    run = os.path.join(folder, "run.txt")
    bad = os.path.join(folder, "run_checking.txt")
    if not os.path.exists(run):
        write_run(run, n_queries, n_docs)
    if not os.path.exists(bad):
        with open(run, "rb") as src, open(bad, "wb") as dst:
            while chunk := src.read(1 << 24):
                dst.write(chunk)
            dst.write(b"q0 Q0 this-line-has-five-fields 1\n")
    return run, bad


STEPS = {
    "baseline (python + import reteco_measures)": "import reteco_measures",
    "rm.read_run, arrow path": "import reteco_measures as rm; rm.read_run({run!r})",
    "rm.read_run, checking path": "import reteco_measures as rm, warnings; warnings.simplefilter('ignore'); "
    "rm.read_run({bad!r})",
    "validate --contract reteco (CLI)": "from reteco_measures.cli.main import main; "
    "main(['validate', {bad!r}, '--contract', 'reteco', '--limit', '3'])",
}


def peak_rss(code: str) -> float:
    """Peak RSS in bytes of a fresh interpreter running ``code``."""
    # VmHWM (the high-water mark of this process's own memory since exec); ru_maxrss would also
    # count the parent's memory at fork time
    script = (f"{code}\nprint('PEAK', [ln.split()[1] for ln in open('/proc/self/status') "
              f"if ln.startswith('VmHWM:')][0])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    peak = [ln for ln in proc.stdout.splitlines() if ln.startswith("PEAK ")]
    if proc.returncode != 0 or not peak:
        raise RuntimeError(f"step failed:\n{code}\n{proc.stderr[-2000:]}")
    return float(peak[-1].split()[1]) * 1024.0  # kB


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--keep", help="folder for the generated files (default: a temporary one)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    folder = args.keep or tempfile.mkdtemp(prefix="bench-memory-")
    run, bad = write_run_files(folder, args.queries, args.docs)
    size = os.path.getsize(run)
    print(f"run: {size / 1e6:.0f} MB, {args.queries * args.docs:,} lines; peak RSS (VmHWM) of a fresh process per step")
    results = {}
    for name, code in STEPS.items():
        rss = peak_rss(code.format(run=run, bad=bad))
        results[name] = rss
    print(f"{'step':45s} {'peak RSS':>10s} {'x file':>7s}")
    for name, rss in results.items():
        print(f"{name:45s} {rss / 1e6:8.0f} MB {rss / size:7.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"file_bytes": size, "lines": args.queries * args.docs, "peak_rss_bytes": results}, f, indent=1)


if __name__ == "__main__":
    main()
