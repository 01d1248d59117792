"""A Dask DataFrame run on a LocalCluster against the pandas path, same data, same numbers.

    python benchmarks/bench_dask.py --queries 2000 [--docs 1000] [--workers 2] [--partitions 8]

Builds the run of ``bench_core.build`` (Q queries x D docs), times ``rm.calc_aggregate`` on the
pandas frame, on ``dd.from_pandas`` (partitions that split queries: shuffled on query_id first),
and on ``dd.read_csv`` of the TREC file, checks the values agree to 1e-12, and prints seconds.
Needs the ``scale`` extra (dask[distributed]).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_core import MEASURES, build, write_files  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--json")
    args = ap.parse_args()

    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    import reteco_measures as rm

    qrels, run = build(args.queries, args.docs)
    out = {"rows": len(run), "workers": args.workers, "partitions": args.partitions, "seconds": {}}
    t0 = time.perf_counter()
    expected = rm.calc_aggregate(MEASURES, qrels, run)
    out["seconds"]["pandas"] = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as folder, \
            LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            Client(cl):
        _, run_path = write_files(qrels, run, folder, args.docs)
        ddf = dd.from_pandas(run, npartitions=args.partitions)
        t0 = time.perf_counter()
        got = rm.calc_aggregate(MEASURES, qrels, ddf)
        out["seconds"]["dask_from_pandas_shuffled"] = time.perf_counter() - t0
        assert all(abs(got[m] - expected[m]) < 1e-12 for m in expected), (got, expected)
        size = os.path.getsize(run_path)
        from_file = dd.read_csv(run_path, sep=" ", header=None, blocksize=max(size // args.partitions, 1),
                                names=["query_id", "q0", "doc_id", "rank", "score", "run"],
                                dtype={"query_id": str, "doc_id": str})
        t0 = time.perf_counter()
        got = rm.calc_aggregate(MEASURES, qrels, from_file)
        out["seconds"]["dask_read_csv_shuffled"] = time.perf_counter() - t0
        assert all(abs(got[m] - expected[m]) < 1e-12 for m in expected), (got, expected)
        # indexed by query id with known divisions: partitions hold whole queries, no shuffle
        indexed = dd.from_pandas(run.set_index("query_id").sort_index(), npartitions=args.partitions)
        t0 = time.perf_counter()
        got = rm.calc_aggregate(MEASURES, qrels, indexed)
        out["seconds"]["dask_indexed_no_shuffle"] = time.perf_counter() - t0
        assert all(abs(got[m] - expected[m]) < 1e-12 for m in expected), (got, expected)
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
