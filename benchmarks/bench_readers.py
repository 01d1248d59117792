"""Reading a TREC run: ``rm.read_run`` against pandas' fastest readings, in one process.

    python benchmarks/bench_readers.py [--queries 5000] [--docs 1000] [--repeat 5] [--keep DIR]

Writes a synthetic single-space TREC run (``q<i> Q0 doc<j> <rank> <score> bench``, as most
systems write it), then times, round-robin (so that a busy machine slows every reader alike)
best and median of ``--repeat``:

* ``rm.read_run(path)`` (the file is clean: the native path when the C tokenizer was built);
* ``rm.read_run(path)`` with ``RETECO_MEASURES_NATIVE_READER=0`` (the arrow path);
* ``pd.read_csv(path, sep=" ", header=None)`` with the C engine and with ``engine="pyarrow"``
  (pandas' defaults otherwise: its fastest readings of this file);
* ``rm.read_run`` on the same file plus one malformed last line (the checking path: every line
  is checked and the bad one reported);
* ``rm.read_run`` and pandas' C engine on the same run with its scores written as Python writes
  floats (``repr``: up to 17 significant digits, as ``DataFrame.to_csv`` and PyTerrier write
  them) instead of 3 decimals.

Every reader must return all 5,000,000 rows; the script checks that ours and pandas' agree on
every score. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import gc
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
from reteco_measures.io.readers import NATIVE_READER_ENV


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
    repr_path = os.path.join(folder, "run_repr.txt")
    if not os.path.exists(repr_path):
        frame = pd.read_csv(path, sep=" ", header=None, dtype={0: str, 2: str, 5: str})
        frame[4] = np.random.default_rng(1).random(len(frame)) * 30  # 15-17 significant digits
        frame.to_csv(repr_path, sep=" ", header=False, index=False)
        del frame
    n_lines = args.queries * args.docs

    def ours_checking() -> pd.DataFrame:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return rm.read_run(bad)

    def ours_arrow() -> pd.DataFrame:
        os.environ[NATIVE_READER_ENV] = "0"
        try:
            return rm.read_run(path)
        finally:
            del os.environ[NATIVE_READER_ENV]

    readers: dict[str, Callable[[], pd.DataFrame]] = {
        "rm.read_run" + (" (native path)" if rm.native_reader_available() else " (arrow path: not built)"):
            lambda: rm.read_run(path),
        "rm.read_run, native path off (arrow path)": ours_arrow,
        'pd.read_csv(sep=" ", engine="c")': lambda: pd.read_csv(path, sep=" ", header=None),
        'pd.read_csv(sep=" ", engine="pyarrow")': lambda: pd.read_csv(path, sep=" ", header=None, engine="pyarrow"),
        "rm.read_run, checking path (1 bad line)": ours_checking,
        "rm.read_run, repr scores": lambda: rm.read_run(repr_path),
        'pd.read_csv(sep=" ", engine="c"), repr scores': lambda: pd.read_csv(repr_path, sep=" ", header=None),
    }
    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(args.repeat):
        for name, fn in readers.items():
            gc.collect()
            t0 = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            assert len(out) == n_lines, (name, len(out))
            del out
    ours = rm.read_run(path)
    theirs = pd.read_csv(path, sep=" ", header=None)
    assert np.array_equal(ours["score"].to_numpy(), theirs[4].to_numpy(dtype=np.float64))
    del ours, theirs
    best = {name: min(ts) for name, ts in times.items()}
    median = {name: float(np.median(ts)) for name, ts in times.items()}
    pandas_c, pandas_arrow = 'pd.read_csv(sep=" ", engine="c")', 'pd.read_csv(sep=" ", engine="pyarrow")'
    fastest_best = min(best[pandas_c], best[pandas_arrow])
    fastest_median = min(median[pandas_c], median[pandas_arrow])
    size = os.path.getsize(path)
    print(f"reading a {size / 1e6:.0f} MB single-space TREC run ({n_lines:,} lines); {args.repeat} rounds, "
          f"round-robin; {os.cpu_count()} cores, Python {platform.python_version()}, pandas {pd.__version__}, "
          f"pyarrow {pa.__version__}, load average {os.getloadavg()[0]:.2f}")
    print(f"{'reader':45s} {'best s':>7s} {'median s':>9s} {'fastest pandas / this (best, median)':>38s}")
    for name in readers:
        if "repr" in name:
            continue
        print(f"{name:45s} {best[name]:7.3f} {median[name]:9.3f} "
              f"{fastest_best / best[name]:27.2f} {fastest_median / median[name]:10.2f}")
    base = 'pd.read_csv(sep=" ", engine="c"), repr scores'
    print(f"the same run with repr-written scores ({os.path.getsize(repr_path) / 1e6:.0f} MB); pandas' C engine / this:")
    for name in ("rm.read_run, repr scores", base):
        print(f"{name:45s} {best[name]:7.3f} {median[name]:9.3f} "
              f"{best[base] / best[name]:27.2f} {median[base] / median[name]:10.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"file_bytes": size, "lines": n_lines, "seconds": times, "best": best, "median": median},
                      f, indent=1)


if __name__ == "__main__":
    main()
