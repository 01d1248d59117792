"""Reading a TREC run: ``rm.read_run`` against the readers of the field, in one process.

    python benchmarks/bench_readers.py [--lines 2000000] [--repeat 5] [--memory] [--keep DIR] [--json OUT]

Writes a synthetic single-space TREC run (``q<i> Q0 doc<j> <rank> <score> bench``, 1,000 documents
per query, as most systems write it) into a temporary folder (``--keep`` to reuse one), then times,
round-robin (so that a busy machine slows every reader alike), best and median of ``--repeat``:

* ``rm.read_run(path)`` (the arrow path: one pass of ``pyarrow.csv``, then the checks);
* ``pd.read_csv(path, sep=" ", header=None)`` with the C engine, the id columns read as strings
  (``dtype=str``: ids such as ``001`` must stay ids), and the same with ``engine="pyarrow"``;
* ``pyarrow.csv.read_csv`` of the same file with string ids (an arrow table, no pandas frame);
* ``polars.read_csv`` with string ids (if polars is installed);
* ``rm.read_run`` on the same file plus one malformed last line (the checking path: every line is
  checked and the bad one reported).

Ratios are to pandas' C engine. Every reader must return every row, and ours must agree with
pandas' on every score. With ``--memory``, each reader also runs once in a fresh Python process
and reports that process's peak resident set size (``VmHWM`` from ``/proc/self/status``, Linux),
with and without the baseline of a process that imported the same libraries and did nothing:
RSS seen from outside counts arrow's memory pool, which ``tracemalloc`` does not see. Not part of
the test suite.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pv
from bench_memory import write_run_files

import reteco_measures as rm

try:
    import polars as pl
except ImportError:  # optional: the comparison is left out
    pl = None

NAMES = ["query_id", "q0", "doc_id", "rank", "score", "run_id"]
IDS = {"query_id": str, "q0": str, "doc_id": str, "run_id": str}


def pandas_c(path: str) -> pd.DataFrame:
    return pd.read_csv(path, sep=" ", header=None, names=NAMES, dtype=IDS)


def pandas_arrow(path: str) -> pd.DataFrame:
    return pd.read_csv(path, sep=" ", header=None, names=NAMES, dtype=IDS, engine="pyarrow")


def arrow_csv(path: str) -> pa.Table:
    return pv.read_csv(path, read_options=pv.ReadOptions(column_names=NAMES),
                       parse_options=pv.ParseOptions(delimiter=" "),
                       convert_options=pv.ConvertOptions(column_types={c: pa.string() for c in IDS}))


def polars_csv(path: str):  # noqa: ANN201 - a polars frame (optional dependency)
    return pl.read_csv(path, separator=" ", has_header=False, new_columns=NAMES,
                       schema_overrides={c: pl.String for c in IDS})


def ours_checking(path: str) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rm.read_run(path)


def readers(path: str, bad: str) -> dict[str, tuple[str, Callable[[], object]]]:
    """name -> (the call as a code string for the memory subprocess, the call)."""
    out = {
        "rm.read_run": (f"rm.read_run({path!r})", lambda: rm.read_run(path)),
        'pd.read_csv(sep=" ", engine="c"), string ids': (f"pandas_c({path!r})", lambda: pandas_c(path)),
        'pd.read_csv(sep=" ", engine="pyarrow"), string ids': (f"pandas_arrow({path!r})", lambda: pandas_arrow(path)),
        "pyarrow.csv.read_csv (a table), string ids": (f"arrow_csv({path!r})", lambda: arrow_csv(path)),
    }
    if pl is not None:
        out["polars.read_csv, string ids"] = (f"polars_csv({path!r})", lambda: polars_csv(path))
    out["rm.read_run, checking path (1 bad last line)"] = (f"ours_checking({bad!r})", lambda: ours_checking(bad))
    return out


def peak_rss(call: str) -> float:
    """Peak RSS in bytes of a fresh interpreter that imports this script and runs ``call``."""
    here = os.path.dirname(os.path.abspath(__file__))
    script = (f"import sys; sys.path.insert(0, {here!r})\nfrom bench_readers import *\n{call}\n"
              "print('PEAK', [ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM:')][0])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    peak = [ln for ln in proc.stdout.splitlines() if ln.startswith("PEAK ")]
    if proc.returncode != 0 or not peak:
        raise RuntimeError(f"{call} failed:\n{proc.stderr[-2000:]}")
    return float(peak[-1].split()[1]) * 1024.0  # kB


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=2_000_000, help="run lines (1,000 per query)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--memory", action="store_true", help="also measure each reader's peak RSS in a subprocess")
    ap.add_argument("--keep", help="folder for the generated files (default: a new temporary one)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    folder = args.keep or tempfile.mkdtemp(prefix="bench-readers-")
    n_docs = 1000
    n_queries = max(1, args.lines // n_docs)
    path, bad = write_run_files(folder, n_queries, n_docs)
    n_lines = n_queries * n_docs
    size = os.path.getsize(path)
    calls = readers(path, bad)

    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.repeat):
        for name, (_, fn) in calls.items():
            gc.collect()
            t0 = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            assert len(out) == n_lines, (name, len(out))
            del out
    ours, theirs = rm.read_run(path), pandas_c(path)
    assert np.array_equal(ours["score"].to_numpy(), theirs["score"].to_numpy(dtype=np.float64))
    assert (ours["query_id"].to_numpy() == theirs["query_id"].to_numpy()).all()
    del ours, theirs
    best = {name: min(ts) for name, ts in times.items()}
    median = {name: float(np.median(ts)) for name, ts in times.items()}
    base = 'pd.read_csv(sep=" ", engine="c"), string ids'
    print(f"reading a {size / 1e6:.0f} MB single-space TREC run ({n_lines:,} lines); {args.repeat} rounds, round-robin; "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, pandas {pd.__version__}, pyarrow {pa.__version__}"
          + (f", polars {pl.__version__}" if pl is not None else ", polars not installed")
          + f"; load average {os.getloadavg()[0]:.2f}")
    print(f"{'reader':52s} {'best s':>7s} {'median s':>9s} {'this / pandas C (best, median)':>32s}")
    for name in calls:
        print(f"{name:52s} {best[name]:7.3f} {median[name]:9.3f} {best[name] / best[base]:20.2f} "
              f"{median[name] / median[base]:10.2f}")
    result: dict = {"file_bytes": size, "lines": n_lines, "seconds": times, "best": best, "median": median}
    if args.memory:
        baseline = peak_rss("pass")
        rss = {name: peak_rss(call) for name, (call, _) in calls.items()}
        print(f"peak RSS of a fresh process per reader (VmHWM); baseline (Python + the imports) {baseline / 1e6:.0f} MB")
        print(f"{'reader':52s} {'peak RSS':>10s} {'x file':>7s} {'growth x file':>14s}")
        for name, value in rss.items():
            print(f"{name:52s} {value / 1e6:7.0f} MB {value / size:7.2f} {(value - baseline) / size:14.2f}")
        result.update(baseline_rss_bytes=baseline, peak_rss_bytes=rss)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
