"""Memory and time of ``stream=True`` against the in-memory path on a TREC run file.

    python benchmarks/bench_stream.py make --queries 2000 --docs 1000 --out /tmp/bench-2m
    python benchmarks/bench_stream.py measure --dir /tmp/bench-2m [--block-mb 4]

``make`` writes ``run.txt`` (queries x docs, sorted by score within each query, as a system
writes it) and ``qrels.txt`` (20 judged documents per query, grades 0-3), in chunks, so files
larger than memory can be made. ``measure`` evaluates nDCG@10, AP@10, R@10 and RR on the files in
two fresh subprocesses (in memory, then streamed), each reporting its peak RSS growth over the
RSS after loading the qrels (``ru_maxrss``), its time and its values; the values must agree.
``--only stream`` skips the in-memory run (for files larger than memory).

    python benchmarks/bench_stream.py score --queries 1000 --depth 1000 --docs 100000 [--block-mb 4]

``score``: the same comparison for ``Benchmark.score`` (``reteco-measures score reteco-1a RUN``
against ``... --stream``) on the synthetic TEMPO-like release of ``bench_reteco_score.py`` (three
domains, ``--docs`` documents each, ``--queries`` queries of ``--depth`` documents holding
repeated documents, documents outside every corpus, of another domain, and ties). Each mode runs in
a fresh process (allocators set as the command line sets them, `lean_allocators`) that loads the
release first (``load_inputs``) and scores a small run once; the
peak resident set is then reset (``/proc/self/clear_refs``) and its growth during the score is
reported with the time. The two Scores' tables must be equal, value for value.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _interleave import status_mb  # noqa: E402
from bench_core import MEASURES, _text  # noqa: E402


def make(queries: int, docs: int, out: str, seed: int = 0, chunk_queries: int = 2_000) -> None:
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(seed)
    with open(os.path.join(out, "run.txt"), "wb") as run_f, open(os.path.join(out, "qrels.txt"), "wb") as qrels_f:
        for start in range(0, queries, chunk_queries):
            nq = min(chunk_queries, queries - start)
            qids = np.repeat(np.arange(start, start + nq), docs)
            doc_num = rng.integers(0, 50_000_000, nq * docs)
            scores = np.round(-np.sort(-rng.random((nq, docs)), axis=1).ravel() * 100, 3)  # sorted, with ties
            ranks = np.tile(np.arange(1, docs + 1), nq)
            q = pc.binary_join_element_wise("q", pa.array(qids).cast(pa.string()), "")
            d = pc.binary_join_element_wise("D", pa.array(doc_num).cast(pa.string()), "")
            line = pc.binary_join_element_wise(
                q, "Q0", d, pa.array(ranks).cast(pa.string()), pa.array(scores).cast(pa.string()), "bench\n", " ")
            run_f.write(_text(line))
            # qrels: 10 of the query's top 100 and 10 other documents, grades 0-3
            pick = np.concatenate([rng.integers(0, min(100, docs), (nq, 10)), rng.integers(0, docs, (nq, 10))], axis=1)
            rows = (np.arange(nq)[:, None] * docs + pick).ravel()
            judged = pc.binary_join_element_wise(
                pc.take(q, pa.array(rows)), "0", pc.take(d, pa.array(rows)),
                pc.binary_join_element_wise(pa.array(rng.integers(0, 4, len(rows))).cast(pa.string()), "\n", ""), " ")
            qrels_f.write(_text(judged))
            print(f"{start + nq}/{queries} queries", file=sys.stderr, flush=True)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(mode: str, folder: str, block_mb: int) -> None:
    import reteco_measures as rm

    qrels = rm.read_qrels(os.path.join(folder, "qrels.txt"))
    # warm up (lazy imports, first-call caches) on a small file, so the growth is the run's own
    small = os.path.join(folder, "warmup.txt")
    with open(os.path.join(folder, "run.txt"), "rb") as src, open(small, "wb") as dst:
        dst.writelines(line for _, line in zip(range(5000), src))
    rm.calc_aggregate(MEASURES, qrels, small, stream=mode == "stream")
    base = _rss_mb()
    t0 = time.perf_counter()
    kwargs = {"stream": True, "block_bytes": block_mb * 2**20} if mode == "stream" else {}
    if mode == "stream":
        from reteco_measures.scale.stream import stream_calc_aggregate

        values = stream_calc_aggregate(MEASURES, qrels, os.path.join(folder, "run.txt"),
                                       block_bytes=kwargs["block_bytes"])
    else:
        values = rm.calc_aggregate(MEASURES, qrels, os.path.join(folder, "run.txt"))
    seconds = time.perf_counter() - t0
    print(json.dumps({"mode": mode, "seconds": seconds, "baseline_mb": base, "peak_mb": _peak_mb(),
                      "growth_mb": _peak_mb() - base, "values": {str(k): v for k, v in values.items()}}))


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak resident set (Linux >= 4.0)
    except OSError:
        pass


def score_child(mode: str, root: str, block_mb: int) -> None:
    """One mode of ``score``: the release loaded, a warm-up score, then the run scored."""
    import hashlib

    from reteco_measures.benchmarks import BENCHMARKS
    from reteco_measures.benchmarks.streaming import stream_score
    from reteco_measures.io.memory import lean_allocators

    lean_allocators()  # as the command line does, in both modes
    bench = BENCHMARKS["reteco-1a"]
    inputs = bench.load_inputs(root, "dev")
    run = os.path.join(root, "run.txt")
    small = os.path.join(root, "warmup.txt")
    with open(run, "rb") as src, open(small, "wb") as dst:
        dst.writelines(line for _, line in zip(range(5000), src))

    def score(path: str):
        if mode == "stream":
            return stream_score(bench, path, inputs=inputs, block_bytes=block_mb * 2**20)
        return bench.score(path, inputs=inputs)

    score(small)
    _reset_peak()
    base = status_mb("VmRSS")
    t0 = time.perf_counter()
    result = score(run)
    seconds = time.perf_counter() - t0
    growth = status_mb("VmHWM") - base
    digest = hashlib.sha256()
    for frame in (result.summary, result.per_query, *result.by_group.values()):
        digest.update(frame.to_csv(float_format="%r").encode())
    print(json.dumps({"mode": mode, "seconds": seconds, "growth_mb": growth, "official": result.official,
                      "tables_sha256": digest.hexdigest(), "removed": result.removed}))


def measure_score(queries: int, depth: int, docs: int, block_mb: int, keep: str | None) -> dict:
    import tempfile

    from bench_reteco_score import build

    with tempfile.TemporaryDirectory(prefix="bench-stream-score-") as tmp:
        root = keep or tmp
        build(Path(root), queries, depth, docs)
        size = os.path.getsize(os.path.join(root, "run.txt"))
        out: dict = {"file_mb": size / 2**20, "queries": queries, "depth": depth, "block_mb": block_mb}
        for mode in ("memory", "stream"):
            res = subprocess.run([sys.executable, __file__, "score-child", mode, root, str(block_mb)],
                                 capture_output=True, text=True, check=True)
            out[mode] = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["memory"]["tables_sha256"] == out["stream"]["tables_sha256"], "the Scores differ"
    assert out["memory"]["removed"] == out["stream"]["removed"]
    out["growth_ratio"] = out["stream"]["growth_mb"] / out["memory"]["growth_mb"]
    print(json.dumps(out, indent=1))
    return out


def measure(folder: str, block_mb: int, only: str | None) -> dict:
    size = os.path.getsize(os.path.join(folder, "run.txt"))
    out = {"file_mb": size / 2**20, "block_mb": block_mb}
    for mode in ("memory", "stream"):
        if only and mode != only:
            continue
        res = subprocess.run([sys.executable, __file__, "child", mode, folder, str(block_mb)],
                             capture_output=True, text=True, check=True)
        out[mode] = json.loads(res.stdout.strip().splitlines()[-1])
    if "memory" in out and "stream" in out:
        for k, v in out["memory"]["values"].items():
            assert abs(v - out["stream"]["values"][k]) < 1e-12, (k, v, out["stream"]["values"][k])
        out["growth_ratio"] = out["stream"]["growth_mb"] / out["memory"]["growth_mb"]
    print(json.dumps(out, indent=1))
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "score-child":
        score_child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--queries", type=int, default=2000)
    m.add_argument("--docs", type=int, default=1000)
    m.add_argument("--out", required=True)
    s = sub.add_parser("measure")
    s.add_argument("--dir", required=True)
    s.add_argument("--block-mb", type=int, default=4)
    s.add_argument("--only", choices=["memory", "stream"])
    s.add_argument("--json", help="write the result here")
    c = sub.add_parser("score", help="Benchmark.score in memory against stream=True (reteco-1a)")
    c.add_argument("--queries", type=int, default=1000)
    c.add_argument("--depth", type=int, default=1000)
    c.add_argument("--docs", type=int, default=100_000, help="documents per domain")
    c.add_argument("--block-mb", type=int, default=4)
    c.add_argument("--keep", help="build the release in this folder and keep it")
    args = ap.parse_args()
    if args.cmd == "make":
        make(args.queries, args.docs, args.out)
    elif args.cmd == "score":
        measure_score(args.queries, args.depth, args.docs, args.block_mb, args.keep)
    else:
        res = measure(args.dir, args.block_mb, args.only)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
