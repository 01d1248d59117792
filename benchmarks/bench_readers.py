"""Reading a TREC run: ``rm.read_run`` against pandas' fastest readings, in one process.

    python benchmarks/bench_readers.py [--queries 5000] [--docs 1000] [--repeat 5] [--keep DIR]

Writes a synthetic single-space TREC run (``q<i> Q0 doc<j> <rank> <score> bench``, as most
systems write it), then times, round-robin (so that a busy machine slows every reader alike)
and best of ``--repeat``:

* ``rm.read_run(path)`` (fast path: the file is clean);
* ``pd.read_csv(path, sep=" ", header=None)`` with the C engine and with ``engine="pyarrow"``
  (pandas' defaults otherwise: its fastest readings of this file);
* ``rm.read_run`` on the same file plus one malformed last line (the checking path: every line
  is checked and the bad one reported).

Every reader must return all 5,000,000 rows; the script checks that ours and pandas' agree on
every score. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
from bench_memory import write_run_files

import reteco_measures as rm


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="folder for the generated files (default: a temporary one)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    folder = args.keep or tempfile.mkdtemp(prefix="bench-readers-")
    path, bad = write_run_files(folder, args.queries, args.docs)
    n_lines = args.queries * args.docs

    def ours_checking() -> pd.DataFrame:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return rm.read_run(bad)

    readers: dict[str, Callable[[], pd.DataFrame]] = {
        "rm.read_run": lambda: rm.read_run(path),
        'pd.read_csv(sep=" ", engine="c")': lambda: pd.read_csv(path, sep=" ", header=None),
        'pd.read_csv(sep=" ", engine="pyarrow")': lambda: pd.read_csv(path, sep=" ", header=None, engine="pyarrow"),
        "rm.read_run, checking path (1 bad line)": ours_checking,
    }
    best = {name: float("inf") for name in readers}
    outputs: dict[str, pd.DataFrame] = {}
    for _ in range(args.repeat):
        for name, fn in readers.items():
            t0 = time.perf_counter()
            out = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
            assert len(out) == n_lines, (name, len(out))
            outputs[name] = out
            del out
    ours = outputs["rm.read_run"]
    theirs = outputs['pd.read_csv(sep=" ", engine="c")']
    assert np.array_equal(ours["score"].to_numpy(), theirs[4].to_numpy(dtype=np.float64))
    size = os.path.getsize(path)
    fastest_pandas = min(best['pd.read_csv(sep=" ", engine="c")'], best['pd.read_csv(sep=" ", engine="pyarrow")'])
    print(f"reading a {size / 1e6:.0f} MB single-space TREC run ({n_lines:,} lines); best of {args.repeat}, "
          f"round-robin; {os.cpu_count()} cores, Python {platform.python_version()}, pandas {pd.__version__}, "
          f"pyarrow {pa.__version__}")
    print(f"{'reader':45s} {'seconds':>8s} {'fastest pandas / this':>22s}")
    for name, secs in best.items():
        print(f"{name:45s} {secs:8.3f} {fastest_pandas / secs:22.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"file_bytes": size, "lines": n_lines, "seconds": best}, f, indent=1)


if __name__ == "__main__":
    main()
