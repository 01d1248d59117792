"""Peak memory of evaluating a run of a million lines, per line, measured from outside.

A child process runs ``reteco-measures eval`` (``python -m reteco_measures``) on a synthetic TREC
run of 1,000,000 lines (1,000 queries x 1,000 documents, about 35 bytes a line) and, as its
baseline, on the first 1,000 lines of the same run with the same qrels. The peak resident set of
each child is its own ``VmHWM`` (``/proc/self/status``), printed as it ends. The marginal memory
((peak - baseline) / lines) must stay within 100 bytes per line: the evaluation measured about 63
on a 2-core Linux machine (NIST trec_eval 10.0-rc3 needs about 86 in all for the same file, 72
marginal; the reader and engine needed about 242 two rounds ago, 122 before this bound).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")]

LINES = 1_000_000
BOUND = 100  # bytes per run line, marginal


def _write(tmp: Path) -> tuple[Path, Path, Path]:
    nq, per = LINES // 1000, 1000
    rng = np.random.default_rng(7)
    q = np.repeat(np.array([f"q{i}" for i in range(nq)]), per)
    d = np.array([f"doc{i:07d}" for i in np.tile(np.arange(per), nq) * 20 + rng.integers(0, 20, nq * per)])
    run, qrels, tiny = tmp / "run.txt", tmp / "qrels.txt", tmp / "tiny.txt"
    pd.DataFrame({"q": q, "z": "Q0", "d": d, "r": np.tile(np.arange(1, per + 1), nq),
                  "s": np.char.mod("%.3f", rng.random(nq * per)), "t": "bench"}).to_csv(run, sep=" ", header=False,
                                                                                     index=False)
    pick = rng.integers(0, nq * per, nq * 50)
    pd.DataFrame({"q": q[pick], "z": "0", "d": d[pick], "r": rng.integers(0, 4, len(pick))}).drop_duplicates(
        ["q", "d"]).to_csv(qrels, sep=" ", header=False, index=False)
    with open(run, "rb") as src:
        tiny.write_bytes(b"".join(line for _, line in zip(range(1000), src)))
    return run, qrels, tiny


#: the command line's ``main`` in a child interpreter, which then prints its own peak resident set
#: (``VmHWM``: the high-water mark of this process's memory since it started; ``ru_maxrss`` of a
#: child would also count the parent's memory at the time it was forked)
_CHILD = """
import sys
from reteco_measures.cli.main import main
code = main(sys.argv[1:])
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print("PEAK", peak, file=sys.stderr)
sys.exit(code)
"""


def _peak_bytes(qrels: Path, run: Path) -> int:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", _CHILD, "eval", str(qrels), str(run), "nDCG@10", "AP", "RR"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "nDCG@10" in proc.stdout and "AP" in proc.stdout
    peak = [line for line in proc.stderr.splitlines() if line.startswith("PEAK ")]
    return int(peak[-1].split()[1]) * 1024  # kB


def test_eval_peak_memory_per_line(tmp_path: Path):
    run, qrels, tiny = _write(tmp_path)
    base = _peak_bytes(qrels, tiny)
    peak = _peak_bytes(qrels, run)
    per_line = (peak - base) / LINES
    assert per_line <= BOUND, f"{per_line:.0f} bytes per run line (peak {peak / 2**20:.0f} MiB, baseline " \
                              f"{base / 2**20:.0f} MiB)"
