"""Time a benchmark leaderboard: R runs x Q queries ranked by ``reteco-measures leaderboard``.

    python benchmarks/bench_leaderboard.py [--runs 100] [--queries 1000] [--depth 100] [--resamples 2000]

Writes a synthetic TEMPO-layout release (one domain, Q queries with three gold documents each, a
corpus of 5,000 documents) and a folder of R TREC runs (``--depth`` documents per query, some
scores tied), then times the whole ``leaderboard`` command: reading the data once, the ``reteco``
contract and one evaluation pass per run, the bootstrap CIs, the paired tests over every pair and
the clusters. Prints the wall-clock and CPU seconds (worker processes included) and the top of
the ranking. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

from reteco_measures.cli.main import main

TRACK = Path("reteco") / "track1_tempo" / "synthetic"


def write_release(root: Path, n_queries: int, n_docs: int, rng: np.random.Generator) -> list[str]:
    folder = root / TRACK
    folder.mkdir(parents=True)
    docs = [f"synthetic/{i}.txt" for i in range(n_docs)]
    with open(folder / "documents.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"id": d, "content": "text"}) + "\n")
    qids = [f"{i}_1" for i in range(n_queries)]
    with open(folder / "examples_dev.jsonl", "w", encoding="utf-8") as ex, \
            open(folder / "qrels_dev.txt", "w", encoding="utf-8") as qr:
        for q in qids:
            gold = [docs[j] for j in rng.choice(n_docs, 3, replace=False)]
            ex.write(json.dumps({"id": q, "query": f"query {q}", "gold_ids": gold}) + "\n")
            qr.writelines(f"{q}\t0\t{d}\t1\n" for d in gold)
    return docs


def write_runs(folder: Path, n_runs: int, qids: list[str], docs: list[str], depth: int,
               rng: np.random.Generator) -> None:
    folder.mkdir()
    for r in range(n_runs):
        idx = rng.integers(0, len(docs), size=(len(qids), depth))
        scores = np.round(rng.random((len(qids), depth)) * 50) / 10  # coarse: some ties
        with open(folder / f"run{r:03d}.txt", "w", encoding="utf-8") as f:
            for qi, q in enumerate(qids):
                seen = set()
                for j, s in zip(idx[qi], scores[qi]):
                    d = docs[j]
                    if d not in seen:
                        seen.add(d)
                        f.write(f"{q} Q0 {d} 0 {s} run{r}\n")


def _cpu() -> float:
    """CPU seconds of this process and of its finished worker processes."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main_cli() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--no-ties", action="store_true", help="skip the tie-sensitivity columns")
    ap.add_argument("--workers", type=int, default=None, help="worker processes (default: one per CPU)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        docs = write_release(root, args.queries, 5000, rng)
        write_runs(Path(tmp) / "runs", args.runs, [f"{i}_1" for i in range(args.queries)], docs, args.depth, rng)
        argv = ["leaderboard", "reteco-1a", str(Path(tmp) / "runs"), "--data", str(root), "--format", "json",
                "--resamples", str(args.resamples), *(["--no-ties"] if args.no_ties else []),
                *(["--workers", str(args.workers)] if args.workers else [])]
        out = io.StringIO()
        start, cpu = time.perf_counter(), _cpu()
        with redirect_stdout(out):
            code = main(argv)
        elapsed, cpu = time.perf_counter() - start, _cpu() - cpu
    doc = json.loads(out.getvalue())
    print(f"{args.runs} runs x {args.queries} queries x {args.depth} documents: {elapsed:.1f} s wall, "
          f"{cpu:.1f} s CPU "
          f"(exit {code}; {len(doc['pairwise'])} pairs; {max(r['cluster'] for r in doc['ranking'])} cluster(s))")
    for row in doc["ranking"][:3]:
        print(f"  {row['rank']:>3}  {row['run']}  {row['value']:.4f}  [{row['ci_low']:.4f}, {row['ci_high']:.4f}]  "
              f"cluster {row['cluster']}")


if __name__ == "__main__":
    main_cli()
