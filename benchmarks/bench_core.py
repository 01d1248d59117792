"""Speed and memory of reteco-measures against pytrec_eval, ir_measures and ranx on the same data.

    python benchmarks/bench_core.py time --queries 5000 [--docs 1000] [--repeat 3] [--json out.json]
    python benchmarks/bench_core.py rss --queries 5000 [--json out.json]
    python benchmarks/bench_core.py plot results/*.json --out docs/performance-scaling.png

The data: Q queries x D documents (``q<i>``, ``D<8 digits>``), scores rounded to 3 decimals
(ties), each query written best first as a system writes its run file; qrels with 20 judged
documents per query (10 of its top 100, 10 anywhere), grades 0-3. Measures: nDCG@10, AP@10,
R@10, RR.

``time`` runs every path in one process on the same data, best of ``--repeat``, and checks that
our values equal pytrec_eval's to 1e-9 on every query. ``rss`` runs each path in its own
subprocess and reports the growth of the peak RSS while the path runs (the peak is reset with
``/proc/self/clear_refs`` after the inputs are built), so peaks of different tools do not mix.
Not part of the test suite. Needs the ``bench`` extra (ranx) and ``plot`` (matplotlib).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _interleave import reset_peak, status_mb  # noqa: E402

MEASURES = ["nDCG@10", "AP@10", "R@10", "RR"]
PYTREC = {"ndcg_cut.10", "map_cut.10", "recall.10", "recip_rank"}
PATHS = [
    "ours_df_sorted", "ours_df_unsorted", "ours_files", "pytrec_prebuilt", "pytrec_from_df",
    "ir_measures_dicts", "ir_measures_df", "ranx_prebuilt",
]


def build(n_queries: int, n_docs: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(qrels, run); the run is grouped by query and sorted by score within each query."""
    rng = np.random.default_rng(seed)
    q = pc.binary_join_element_wise("q", pa.array(np.repeat(np.arange(n_queries), n_docs)).cast(pa.string()), "")
    # distinct documents within a query (a run lists a document once), in random order
    spread = np.argsort(rng.random((n_queries, n_docs)), axis=1) * 7919
    doc_num = (rng.integers(0, 10**8, n_queries)[:, None] + spread).ravel() % 10**8
    d = pc.binary_join_element_wise("D", pc.utf8_lpad(pa.array(doc_num).cast(pa.string()), 8, "0"), "")
    scores = np.round(-np.sort(-rng.random((n_queries, n_docs)), axis=1).ravel(), 3)
    run = pd.DataFrame({"query_id": pd.arrays.ArrowStringArray(q.cast(pa.large_string())),
                        "doc_id": pd.arrays.ArrowStringArray(d.cast(pa.large_string())), "score": scores})
    pick = np.concatenate([rng.integers(0, min(100, n_docs), (n_queries, 10)),
                           rng.integers(0, n_docs, (n_queries, 10))], axis=1)
    rows = np.unique((np.arange(n_queries)[:, None] * n_docs + pick).ravel())
    qrels = pd.DataFrame({"query_id": run["query_id"].to_numpy()[rows], "doc_id": run["doc_id"].to_numpy()[rows],
                          "relevance": rng.integers(0, 4, len(rows))}).astype({"query_id": "str", "doc_id": "str"})
    return qrels, run


def shuffled_within_queries(run: pd.DataFrame, n_docs: int, seed: int = 1) -> pd.DataFrame:
    """The same run, each query's rows in random order (grouped by query, not sorted)."""
    rng = np.random.default_rng(seed)
    n_queries = len(run) // n_docs
    order = np.argsort(rng.random((n_queries, n_docs)), axis=1) + (np.arange(n_queries) * n_docs)[:, None]
    return run.iloc[order.ravel()].reset_index(drop=True)


def write_files(qrels: pd.DataFrame, run: pd.DataFrame, folder: str, n_docs: int) -> tuple[str, str]:
    run_path, qrels_path = os.path.join(folder, "run.txt"), os.path.join(folder, "qrels.txt")
    ranks = pa.array(np.tile(np.arange(1, n_docs + 1), len(run) // n_docs)).cast(pa.string())
    lines = pc.binary_join_element_wise(
        _s(run["query_id"]), "Q0", _s(run["doc_id"]), ranks,
        pa.array(run["score"].to_numpy()).cast(pa.string()), "bench\n", " ")
    with open(run_path, "wb") as f:
        f.write(_text(lines))
    qlines = pc.binary_join_element_wise(
        _s(qrels["query_id"]), "0", _s(qrels["doc_id"]),
        pc.binary_join_element_wise(pa.array(qrels["relevance"].to_numpy()).cast(pa.string()), "\n", ""), " ")
    with open(qrels_path, "wb") as f:
        f.write(_text(qlines))
    return qrels_path, run_path


def _s(col: pd.Series) -> pa.Array:
    return pa.array(col.to_numpy(dtype=object), type=pa.string())


def _text(lines: pa.Array) -> bytes:
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    lines = lines.cast(pa.large_string())
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64, count=len(lines) + 1, offset=lines.offset * 8)
    return memoryview(lines.buffers()[2])[offsets[0] : offsets[-1]].tobytes()


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _paths(qrels, run, n_docs, folder):
    """name -> (setup() -> inputs, run(inputs) -> result). setup is not timed."""
    import ir_measures
    import pytrec_eval

    import reteco_measures as rm
    from reteco_measures.io.convert import qrels_to_dict, run_to_dict

    ms = rm.parse_measures(MEASURES)
    files = {}

    def file_inputs():
        if not files:
            files["q"], files["r"] = write_files(qrels, run, folder, n_docs)
        return files["q"], files["r"]

    def ranx_run(inputs):
        import ranx

        qd, rd = inputs
        return ranx.evaluate(ranx.Qrels(qd), ranx.Run(rd), ["ndcg@10", "map@10", "recall@10", "mrr"])

    return {
        "ours_df_sorted": (lambda: (qrels, run), lambda i: rm.calc_aggregate(ms, *i)),
        "ours_df_unsorted": (lambda: (qrels, shuffled_within_queries(run, n_docs)), lambda i: rm.calc_aggregate(ms, *i)),
        "ours_files": (file_inputs, lambda i: rm.calc_aggregate(ms, *i)),
        "pytrec_prebuilt": (lambda: (qrels_to_dict(qrels), run_to_dict(run)),
                            lambda i: pytrec_eval.RelevanceEvaluator(i[0], PYTREC).evaluate(i[1])),
        "pytrec_from_df": (lambda: (qrels, run), lambda i: pytrec_eval.RelevanceEvaluator(
            qrels_to_dict(i[0]), PYTREC).evaluate(run_to_dict(i[1]))),
        "ir_measures_dicts": (lambda: (qrels_to_dict(qrels), run_to_dict(run)),
                              lambda i: ir_measures.calc_aggregate(ms, *i)),
        "ir_measures_df": (lambda: (qrels, run), lambda i: ir_measures.calc_aggregate(ms, *i)),
        "ranx_prebuilt": (lambda: (qrels_to_dict(qrels), run_to_dict(run)), ranx_run),
    }


def cmd_time(args) -> dict:
    qrels, run = build(args.queries, args.docs)
    out = {"rows": len(run), "queries": args.queries, "docs": args.docs, "qrels_rows": len(qrels),
           "repeat": args.repeat, "seconds": {}}
    with tempfile.TemporaryDirectory() as folder:
        paths = _paths(qrels, run, args.docs, folder)
        results = {}
        for name in PATHS:
            if name in args.skip:
                continue
            setup, fn = paths[name]
            inputs = setup()
            if name == "ranx_prebuilt":
                fn(inputs)  # numba compiles on the first call: not timed
            repeat = 1 if name == "ir_measures_df" else args.repeat
            secs, res = best_of(lambda fn=fn, inputs=inputs: fn(inputs), repeat)
            out["seconds"][name] = secs
            results[name] = res
            del inputs
            print(f"{name:20s} {secs:8.3f} s", file=sys.stderr, flush=True)
    # agreement: our per-query values against pytrec_eval's on every query
    if "pytrec_prebuilt" in results:
        import reteco_measures as rm

        ref = results["pytrec_prebuilt"]
        names = {"nDCG@10": "ndcg_cut_10", "AP@10": "map_cut_10", "R@10": "recall_10", "RR": "recip_rank"}
        worst = 0.0
        for m in rm.iter_calc(MEASURES, qrels, run):
            if m.query_id in ref:
                worst = max(worst, abs(m.value - ref[m.query_id][names[str(m.measure)]]))
        out["max_abs_diff_vs_pytrec_eval"] = worst
        assert worst < 1e-9, worst
    base = out["seconds"].get("pytrec_prebuilt")
    if base:
        out["x_pytrec_prebuilt"] = {k: v / base for k, v in out["seconds"].items()}
    return out


def cmd_rss_child(name: str, queries: int, docs: int) -> None:
    qrels, run = build(queries, docs)
    with tempfile.TemporaryDirectory() as folder:
        setup, fn = _paths(qrels, run, docs, folder)[name]
        inputs = setup()
        if name == "ranx_prebuilt":
            fn(inputs)
        if name == "ours_files":
            del qrels, run
        gc.collect()
        reset_peak()
        before = status_mb("VmRSS")
        fn(inputs)
        peak = status_mb("VmHWM")
    print(json.dumps({"path": name, "rss_before_mb": before, "peak_mb": peak, "growth_mb": peak - before}))


def cmd_rss(args) -> dict:
    out = {"rows": args.queries * args.docs, "growth_mb": {}}
    for name in PATHS:
        if name in args.skip:
            continue
        res = subprocess.run([sys.executable, __file__, "rss-child", name, str(args.queries), str(args.docs)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            print(res.stderr[-2000:], file=sys.stderr)
            continue
        row = json.loads(res.stdout.strip().splitlines()[-1])
        out["growth_mb"][name] = row["growth_mb"]
        print(f"{name:20s} {row['growth_mb']:8.0f} MB", file=sys.stderr, flush=True)
    return out


def cmd_plot(files: list[str], out_path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted((json.load(open(f)) for f in files), key=lambda r: r["rows"])
    runs = [r for r in runs if "seconds" in r]
    labels = {"ours_df_sorted": "rm.calc_aggregate (DataFrame)", "ours_files": "rm.calc_aggregate (files, reading incl.)",
              "pytrec_prebuilt": "pytrec_eval (dicts prebuilt)", "pytrec_from_df": "pytrec_eval (from DataFrames)",
              "ir_measures_df": "ir_measures (DataFrames)", "ranx_prebuilt": "ranx (dicts prebuilt, JIT warm)"}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label in labels.items():
        pts = [(r["rows"] / 1e6, r["seconds"][key]) for r in runs if key in r["seconds"]]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("run rows (millions)")
    ax.set_ylabel("seconds (nDCG@10, AP@10, R@10, RR)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "rss-child":
        cmd_rss_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("time", "rss"):
        p = sub.add_parser(name)
        p.add_argument("--queries", type=int, default=5000)
        p.add_argument("--docs", type=int, default=1000)
        p.add_argument("--repeat", type=int, default=3)
        p.add_argument("--skip", nargs="*", default=[], choices=PATHS)
        p.add_argument("--json")
    p = sub.add_parser("plot")
    p.add_argument("files", nargs="+")
    p.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.cmd == "plot":
        cmd_plot(args.files, args.out)
        return
    res = cmd_time(args) if args.cmd == "time" else cmd_rss(args)
    print(json.dumps(res, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
