"""The command line, file to numbers: ``reteco-measures eval`` on a 1,000,000-line TREC run with
the six measures people mix (``RR@10`` among them) against NIST's ``trec_eval -c`` with the
same measures (``recip_rank`` for ``RR@10``: trec_eval has no cutoff on it), each a fresh process,
rounds interleaved.

    python benchmarks/bench_cli.py [--queries 1000] [--docs 1000] [--rounds 3] [--trec-eval PATH] [--md out.md]

trec_eval is taken from ``--trec-eval`` or the PATH (build it from github.com/usnistgov/trec_eval
with ``make``); without it only ours is timed. The peak memory is each process's maximum resident
set (``wait4``'s ``ru_maxrss``: the interpreter and its libraries included). The numbers the
two print are compared to 1e-4 (trec_eval prints 4 decimals). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _interleave import machine, markdown  # noqa: E402

OURS = ["nDCG@10", "nDCG@1000", "AP", "RR@10", "R@100", "P@10"]
TREC = ["ndcg_cut.10,1000", "map", "recip_rank", "recall.100", "P.10"]
SAME = {"nDCG@10": "ndcg_cut_10", "nDCG@1000": "ndcg_cut_1000", "AP": "map", "R@100": "recall_100", "P@10": "P_10"}


def write_files(folder: Path, n_queries: int, n_docs: int, seed: int = 0) -> tuple[Path, Path]:
    """A TREC run (each query's documents best first, distinct scores with 6 decimals) and qrels
    (50 judged documents a query, grades 0-3)."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = folder / "run.txt", folder / "qrels.txt"
    with run_path.open("w") as f:
        for i in range(n_queries):
            scores = np.sort(rng.random(n_docs))[::-1]
            docs = rng.permutation(n_docs)
            f.write("".join(f"q{i} Q0 d{d} {r + 1} {s:.6f} bench\n" for r, (d, s) in enumerate(zip(docs, scores))))
    with qrels_path.open("w") as f:
        for i in range(n_queries):
            picks = rng.choice(2 * n_docs, min(50, 2 * n_docs), replace=False)
            f.write("".join(f"q{i} 0 d{d} {g}\n" for d, g in zip(picks, rng.integers(0, 4, len(picks)))))
    return qrels_path, run_path


def run_once(cmd: list[str]) -> tuple[float, float, str]:
    """(seconds, peak resident MiB, stdout) of one process, its peak from ``os.wait4``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read().decode()[-500:]}")
        return seconds, usage.ru_maxrss / 1024, out.read().decode()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trec-eval", default=shutil.which("trec_eval"), help="trec_eval binary (default: on PATH)")
    ap.add_argument("--md", help="write the Markdown table here")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = write_files(Path(tmp), args.queries, args.docs)
        ours = [sys.executable, "-m", "reteco_measures", "eval", str(qrels), str(run), *OURS, "--format", "tsv",
                "--places", "6"]
        tiny = Path(tmp) / "tiny"
        tiny.mkdir()
        tiny_qrels, tiny_run = write_files(tiny, 1, 1)
        start_up = [sys.executable, "-m", "reteco_measures", "eval", str(tiny_qrels), str(tiny_run), *OURS,
                    "--format", "tsv"]
        cmds = {"reteco-measures eval": ours, "reteco-measures eval, 1-line run (start-up and imports)": start_up}
        if args.trec_eval:
            trec = [args.trec_eval, "-c"]
            for m in TREC:
                trec += ["-m", m]
            cmds["trec_eval -c"] = [*trec, str(qrels), str(run)]
        outputs = {name: run_once(cmd)[2] for name, cmd in cmds.items()}  # warm-up (page cache), and the values
        if "trec_eval -c" in cmds:
            check(outputs["reteco-measures eval"], outputs["trec_eval -c"])
        times: dict[str, list[float]] = {name: [] for name in cmds}
        peaks: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(args.rounds):
            for name, cmd in cmds.items():
                seconds, peak, _ = run_once(cmd)
                times[name].append(seconds)
                peaks[name].append(peak)
        size = run.stat().st_size
    base_name = "trec_eval -c" if "trec_eval -c" in cmds else "reteco-measures eval"
    base_t = statistics.median(times[base_name])
    base_m = statistics.median(peaks[base_name])
    rows = [[name, statistics.median(times[name]), statistics.median(times[name]) / base_t,
             statistics.median(peaks[name]), statistics.median(peaks[name]) / base_m] for name in cmds]
    title = (f"CLI, file to numbers: {args.queries * args.docs:,}-line run ({size / 2**20:.0f} MiB), "
             f"{', '.join(OURS)} (trec_eval: recip_rank for RR@10); each command a fresh process; median of "
             f"{args.rounds} interleaved rounds; the five shared measures equal to trec_eval's printed 4 decimals")
    table = markdown(["command", "seconds (median)", f"ratio to {base_name}", "peak RSS MiB",
                      f"memory ratio to {base_name}"], rows)
    text = f"{title}\n\n{table}\n\nMachine: {machine()}\n"
    print(text)
    if args.md:
        Path(args.md).write_text(text)
    return 0


def check(ours_tsv: str, trec_out: str) -> None:
    """The five measures both compute agree to trec_eval's 4 printed decimals."""
    mine = {}
    for line in ours_tsv.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0] in SAME:
            mine[parts[0]] = float(parts[1])
    theirs = {}
    for line in trec_out.splitlines():
        name, qid, value = line.split()
        if qid == "all":
            theirs[name] = float(value)
    for ours_name, trec_name in SAME.items():
        if ours_name not in mine or abs(mine[ours_name] - theirs[trec_name]) > 0.5e-4 + 1e-12:
            raise SystemExit(f"{ours_name}: ours {mine.get(ours_name)} != trec_eval {theirs.get(trec_name)}")


if __name__ == "__main__":
    sys.exit(main())
