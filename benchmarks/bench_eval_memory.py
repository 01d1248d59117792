"""Peak memory per run line of evaluating a TREC run file: ours (the command line), trec_eval and
pytrec_eval, each in its own child process.

    python benchmarks/bench_eval_memory.py [--lines 1000000 10000000] [--rounds 3] [--keep DIR] [--markdown FILE]

For each size, a synthetic run (1,000 documents per query, distinct per query, single spaces)
and qrels (about 50 judgments per query) are written once; then, round after round and tool after
tool (interleaved), each tool evaluates ``nDCG@10 AP RR`` (trec_eval: ``-c -m ndcg_cut.10 -m map
-m recip_rank``) in a fresh process. The Python tools print their own peak resident set as they end
(``VmHWM`` in ``/proc/self/status``, the high-water mark since the process started); trec_eval's is
its ``ru_maxrss`` from ``os.wait4`` (which also counts this small parent at the time of the fork:
the files are written by a child process, so the parent stays a bare interpreter). Each tool also evaluates a 1,000-line run against
the same qrels: its baseline (the interpreter, the libraries, the qrels). The table gives the
median peak, the peak per line, and the marginal bytes per line ((peak - baseline) / lines).
trec_eval is measured when a ``trec_eval`` binary is on PATH (or given with ``--trec-eval``).
Prints nothing but its progress and the table; not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

MEASURES = ["nDCG@10", "AP", "RR"]
TREC_EVAL_MEASURES = ["-m", "ndcg_cut.10", "-m", "map", "-m", "recip_rank"]

_PEAK = """
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print("PEAK", peak, file=sys.stderr)
"""

_OURS = """
import sys
from reteco_measures.cli.main import main
code = main(["eval", *sys.argv[1:]])
""" + _PEAK

_PYTREC = """
import sys, pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "map", "recip_rank"})
res = ev.evaluate(run)
print(len(res))
""" + _PEAK


def write_files(folder: str, n_lines: int, per_query: int = 1000, seed: int = 0) -> tuple[str, str, str]:
    """``run``, ``qrels`` and a 1,000-line ``tiny`` run in ``folder`` (reused when present)."""
    run, qrels, tiny = (os.path.join(folder, f"{n_lines}.{x}") for x in ("run", "qrels", "tiny"))
    if not os.path.exists(tiny):
        import numpy as np
        import pandas as pd

        nq = max(1, n_lines // per_query)
        rng = np.random.default_rng(seed)
        q = np.repeat(np.array([f"q{i}" for i in range(nq)]), per_query)
        d = np.array([f"doc{i:07d}" for i in np.tile(np.arange(per_query), nq) * 20 + rng.integers(0, 20, nq * per_query)])
        pd.DataFrame({"q": q, "z": "Q0", "d": d, "r": np.tile(np.arange(1, per_query + 1), nq),
                      "s": np.char.mod("%.3f", rng.random(nq * per_query)), "t": "bench"}).to_csv(
            run, sep=" ", header=False, index=False)
        pick = rng.integers(0, nq * per_query, nq * 50)
        pd.DataFrame({"q": q[pick], "z": "0", "d": d[pick], "r": rng.integers(0, 4, len(pick))}).drop_duplicates(
            ["q", "d"]).to_csv(qrels, sep=" ", header=False, index=False)
        with open(run, "rb") as src, open(tiny, "wb") as dst:
            dst.writelines(line for _, line in zip(range(1000), src))
    return run, qrels, tiny


def peak_kib(cmd: list[str], own_peak: bool) -> int:
    """Peak resident set (KiB) of one child process running ``cmd``: the ``PEAK`` line it prints
    (``own_peak``), else its ``ru_maxrss``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err[-2000:]}")
    if own_peak:
        return int([line for line in err.splitlines() if line.startswith("PEAK ")][-1].split()[1])
    return int(usage.ru_maxrss)


def tools(trec_eval: str | None) -> dict[str, tuple]:
    """name -> (command for (qrels, run), whether the command prints its own peak)."""
    out = {
        "reteco-measures eval": (lambda q, r: [sys.executable, "-c", _OURS, q, r, *MEASURES], True),
        "pytrec_eval": (lambda q, r: [sys.executable, "-c", _PYTREC, q, r], True),
    }
    if trec_eval:
        out["trec_eval -c"] = (lambda q, r: [trec_eval, "-c", *TREC_EVAL_MEASURES, q, r], False)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", help="folder for the generated files (default: a temporary one)")
    ap.add_argument("--trec-eval", default=shutil.which("trec_eval"), help="trec_eval binary (default: on PATH)")
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--write", nargs=2, metavar=("FOLDER", "LINES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:  # the child that writes the files (numpy and pandas stay out of the parent)
        write_files(args.write[0], int(args.write[1]))
        return
    folder = args.keep or tempfile.mkdtemp(prefix="bench-eval-memory-")
    os.makedirs(folder, exist_ok=True)
    runners = tools(args.trec_eval)
    rows = []
    for n in args.lines:
        subprocess.run([sys.executable, __file__, "--write", folder, str(n)], check=True)
        run, qrels, tiny = (os.path.join(folder, f"{n}.{x}") for x in ("run", "qrels", "tiny"))
        peaks: dict[str, list[int]] = {t: [] for t in runners}
        bases: dict[str, list[int]] = {t: [] for t in runners}
        for k in range(args.rounds):
            for name, (cmd, own) in runners.items():  # interleaved: every tool once per round
                bases[name].append(peak_kib(cmd(qrels, tiny), own))
                peaks[name].append(peak_kib(cmd(qrels, run), own))
            print(f"{n:,} lines: round {k + 1}/{args.rounds} done", file=sys.stderr)
        for name in runners:
            peak = statistics.median(peaks[name]) * 1024
            base = statistics.median(bases[name]) * 1024
            rows.append((name, n, peak, base))
    lines = ["| tool | run lines | peak RSS | bytes per line | marginal bytes per line |", "|---|---:|---:|---:|---:|"]
    for name, n, peak, base in rows:
        lines.append(f"| {name} | {n:,} | {peak / 2**20:.0f} MiB | {peak / n:.0f} | {(peak - base) / n:.0f} |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
