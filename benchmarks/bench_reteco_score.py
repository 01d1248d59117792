"""``score reteco-1a`` against ``eval`` of the same run with the same standard measures.

    python benchmarks/bench_reteco_score.py [--queries 1000] [--depth 1000] [--docs 100000] [--rounds 3]
                                            [--markdown out.md] [--keep DIR]

Builds a synthetic TEMPO-like release in a temporary folder (laid out like the RETECO release the
``reteco-1a`` scorer reads: ``reteco/track1_tempo/<domain>/{documents.jsonl, examples_dev.jsonl,
qrels_dev.txt}``), three domains, ``--docs`` documents per domain, ``--queries`` dev queries with
five gold documents each, and a run of ``--depth`` documents per query (about ``queries x depth``
rows: 1M by default) holding what the RETECO contract handles: a few repeated documents, documents
outside every corpus, documents of another domain's corpus and tied scores.

Then, in this one process, rounds interleaved (median of ``--rounds``): the command line
``reteco-measures score reteco-1a RUN --data ROOT --split dev`` (contract, the four temporal
measures and the four standard ones) and ``reteco-measures eval QRELS RUN nDCG@10 AP@10 R@10 RR``.
``score`` is timed three times per round: with both corpus-id caches emptied first (the in-process
one and the on-disk one, ``$RETECO_MEASURES_CACHE``, here a temporary folder: what the first
command-line call on a release costs, parsing the corpus and writing the disk cache), with only the
in-process cache emptied (what a second command-line call costs: a fresh process reads the ids from
the disk cache) and with it filled (a second score of the same release in one process, as a
leaderboard scores its runs). Peak memory is the growth of the peak resident set during the call
(``/proc/self/clear_refs``, Linux); CPU seconds (this process, every thread) are given beside the
wall-clock seconds, as they vary less with the machine's load. Prints the table and the ratios,
and writes the Markdown table with ``--markdown``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

DOMAINS = ("bitcoin", "history", "law")
STANDARD = ["nDCG@10", "AP@10", "R@10", "RR"]


def build(root: Path, n_queries: int, depth: int, n_docs: int, seed: int = 0) -> tuple[Path, Path]:
    """Write the release under ``root``; returns (run file, all-domain qrels file)."""
    rng = np.random.default_rng(seed)
    track = root / "reteco" / "track1_tempo"
    corpora = {}
    for dom in DOMAINS:
        folder = track / dom
        folder.mkdir(parents=True, exist_ok=True)
        ids = np.array([f"{dom}/{h:08x}_{i:06d}.txt" for i, h in
                        enumerate(rng.integers(0, 2**32, n_docs).tolist())], dtype=object)
        corpora[dom] = ids
        with open(folder / "documents.jsonl", "w", encoding="utf-8") as f:
            f.writelines(f'{{"id": "{i}", "content": "<p>passage {n} of the {dom} forum, year {1900 + n % 120}'
                         f'</p>"}}\n' for n, i in enumerate(ids.tolist()))
    run_lines, qrels_lines = [], []
    per_domain = [n_queries // 3 + (1 if d < n_queries % 3 else 0) for d in range(3)]
    qn = 0
    for dom, nq in zip(DOMAINS, per_domain):
        ids = corpora[dom]
        others = np.concatenate([corpora[o] for o in DOMAINS if o != dom])
        examples, qrels = [], []
        for _ in range(nq):
            qn += 1
            qid = f"{10000 + qn}_{qn}"
            picks = ids[rng.choice(len(ids), depth, replace=False)]
            gold = picks[rng.choice(min(depth, 50), 3, replace=False)].tolist() + \
                ids[rng.choice(len(ids), 2, replace=False)].tolist()
            docs = picks.copy()
            other = rng.random(depth) < 0.01  # documents of another domain's corpus
            docs[other] = others[rng.integers(0, len(others), int(other.sum()))]
            unknown = rng.random(depth) < 0.005
            docs[unknown] = [f"{dom}/missing_{qn}_{j}.txt" for j in range(int(unknown.sum()))]
            docs[depth - 1] = docs[0]  # one repeated document per query
            scores = np.round(np.sort(rng.random(depth))[::-1] * 20, 2)  # ties
            run_lines += [f"{qid} Q0 {doc} {r} {s} bench\n" for r, (doc, s) in
                          enumerate(zip(docs.tolist(), scores.tolist()), start=1)]
            examples.append({"id": qid, "query": f"What changed in {dom} between {1900 + qn % 99} and 2020?",
                             "gold_ids": gold})
            qrels += [f"{qid}\t0\t{g}\t1\n" for g in gold]
        with open(track / dom / "examples_dev.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(e) + "\n" for e in examples)
        with open(track / dom / "qrels_dev.txt", "w", encoding="utf-8") as f:
            f.writelines(qrels)
        qrels_lines += qrels
    run_path, qrels_path = root / "run.txt", root / "qrels.txt"
    run_path.write_text("".join(run_lines), encoding="utf-8")
    qrels_path.write_text("".join(qrels_lines), encoding="utf-8")
    return run_path, qrels_path


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def measured(fn: Callable[[], int]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of this process, peak resident growth in bytes) of one call; the
    call must return exit code 0."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak resident set (Linux >= 4.0)
    except OSError:
        pass
    base = _status("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    code = fn()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if code != 0:
        raise SystemExit(f"a timed command failed with exit code {code}")
    return seconds, cpu, max(_status("VmHWM") - base, 0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=100_000, help="documents per domain")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--markdown", help="write the Markdown table here")
    ap.add_argument("--keep", help="build the release in this folder (kept) instead of a temporary one")
    args = ap.parse_args(argv)

    from reteco_measures.benchmarks.tempo import data as reteco_tempo
    from reteco_measures.cli.main import main as cli

    def quiet(argv: list[str]) -> Callable[[], int]:
        def call() -> int:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                return cli(argv)
        return call

    with contextlib.ExitStack() as stack:
        root = Path(args.keep) if args.keep else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        # the on-disk corpus-id cache in a folder of its own (never the user's ~/.cache)
        disk_cache = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="reteco-cache-")))
        old_env = os.environ.get(reteco_tempo.CACHE_ENV)
        os.environ[reteco_tempo.CACHE_ENV] = str(disk_cache)
        stack.callback(lambda: os.environ.pop(reteco_tempo.CACHE_ENV, None) if old_env is None
                       else os.environ.__setitem__(reteco_tempo.CACHE_ENV, old_env))
        t0 = time.perf_counter()
        run, qrels = build(root, args.queries, args.depth, args.docs)
        n_rows = sum(1 for _ in open(run, "rb"))
        print(f"release built in {time.perf_counter() - t0:.1f} s: {n_rows:,} run rows, "
              f"{3 * args.docs:,} corpus documents, {args.queries} queries", file=sys.stderr)
        score = quiet(["score", "reteco-1a", str(run), "--data", str(root), "--split", "dev"])
        evaluate = quiet(["eval", str(qrels), str(run), *STANDARD])

        clear = reteco_tempo.clear_corpus_cache

        def cold() -> int:  # a first command on the release: parse the corpus, write the disk cache
            clear()
            shutil.rmtree(disk_cache / "corpus-ids", ignore_errors=True)
            return score()

        def disk_warm() -> int:  # a second command: a fresh process, the ids on disk
            clear()
            return score()

        paths = {"eval (4 standard measures)": evaluate, "score reteco-1a (corpus ids read)": cold,
                 "score reteco-1a (disk cache warm)": disk_warm,
                 "score reteco-1a (corpus ids cached)": score}
        cold()  # warm-up: imports, page cache
        times: dict[str, list[float]] = {k: [] for k in paths}
        cpus: dict[str, list[float]] = {k: [] for k in paths}
        peaks: dict[str, list[int]] = {k: [] for k in paths}
        for r in range(args.rounds):
            for name, fn in paths.items():
                s, cpu, peak = measured(fn)
                times[name].append(s)
                cpus[name].append(cpu)
                peaks[name].append(peak)
                print(f"round {r + 1} {name}: {s:.2f} s ({cpu:.2f} s CPU), peak +{peak / 2**20:.0f} MiB",
                      file=sys.stderr)

    base = statistics.median(times["eval (4 standard measures)"])
    base_cpu = statistics.median(cpus["eval (4 standard measures)"])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"`score reteco-1a` vs `eval`, {n_rows:,} run rows, {3 * args.docs:,} corpus ids, "
             f"median of {args.rounds} interleaved rounds ({platform.machine()}, {os.cpu_count()} cores, "
             f"load {load:.1f}, Python {platform.python_version()})", "",
             "| command | seconds (median) | ratio to eval | CPU seconds (median) | CPU ratio to eval | "
             "peak memory growth (MiB) |",
             "|---|---:|---:|---:|---:|---:|"]
    for name in paths:
        med, cpu = statistics.median(times[name]), statistics.median(cpus[name])
        lines.append(f"| {name} | {med:.2f} | {med / base:.2f}x | {cpu:.2f} | {cpu / base_cpu:.2f}x | "
                     f"{max(peaks[name]) / 2**20:.0f} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
