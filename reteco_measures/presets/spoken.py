"""``reteco-measures score spoken RESULTS.jsonl --data DIR``.

The official-style Spoken-Query scorer (seed ``003``):

1. validate row by row with the ``spoken`` contract (≤ 10 distinct doc ids from the request's
   domain, finite non-increasing scores); an invalid row and a missing row score 0, valid rows
   count;
2. raw quality q = ``SpokenMacroNDCG@10``: graded nDCG@10 per request, mean within each
   collection × acoustic-condition cell, mean of the cell means;
3. per-collection and per-condition tables and the full grid (``rm.evaluate(by=...)``): a
   collection's number is the mean of its cells (each condition weighs the same), a condition's
   likewise; the plain mean over requests (``nDCG@10``) is printed as a diagnostic;
4. reward = ``rm.reward(q, a=15, b=0.4530094614433184)``, gated to 0 by a failed audit
   (``--audit-failed``).

Rankings follow the results' own order (``--tie-break run_order``, default; the contract allows
equal scores in any order, so the order the system wrote is the one judged). Python use:
:func:`score_spoken`.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..api import evaluate
from ..cli.report import OUTPUT_FORMATS, format_frame, frame_records
from ..contracts.base import ValidationReport
from ..contracts.spoken import validate_spoken
from ..datasets import spoken as sp
from ..measures.spoken_macro_ndcg import IncompleteGridWarning
from ..reward import DEFAULT_A, DEFAULT_B, reward
from . import preset

__all__ = ["score_spoken", "SpokenScore"]


@dataclass
class SpokenScore:
    """Result of :func:`score_spoken`.

    Attributes:
        quality: raw quality (SpokenMacroNDCG@k).
        reward: the mapped reward (0 when gated).
        summary: ``measure, value`` rows (quality, mean nDCG, reward, counts).
        grid: tidy ``collection, condition, measure, value, n`` (with ``(macro)``/``(all)``).
        by_collection / by_condition: tidy tables as :func:`reteco_measures.evaluate` returns.
        report: the contract's :class:`~reteco_measures.contracts.base.ValidationReport`.
        notes: warnings raised while scoring (e.g. an incomplete grid).
    """

    quality: float
    reward: float
    summary: pd.DataFrame
    grid: pd.DataFrame
    by_collection: pd.DataFrame
    by_condition: pd.DataFrame
    report: ValidationReport
    notes: list[str] = field(default_factory=list)


def score_spoken(
    results: Any,
    *,
    corpus: pd.DataFrame,
    topics: pd.DataFrame,
    qrels: pd.DataFrame,
    k: int = 10,
    tie_break: str = "run_order",
    a: float = DEFAULT_A,
    b: float = DEFAULT_B,
    audit_passed: bool = True,
) -> SpokenScore:
    """Score Spoken-Query results.

    Args:
        results: results JSONL path/text (anything :func:`validate_spoken` accepts).
        corpus: documents with ``doc_id`` and ``domain``.
        topics: requests with ``query_id, domain, collection, condition``.
        qrels: graded labels ``query_id, doc_id, relevance``; the evaluated requests are the
            labelled ones (a request of ``topics`` without labels cannot be scored).
        k: cutoff (10) and the maximum results per request.
        tie_break: ranking of equal scores: ``'run_order'`` (default) or ``'trec_eval'``.
        a, b: reward anchor and reference quality.
        audit_passed: False gates the reward to 0.
    """
    report = validate_spoken(results, corpus=corpus, queries=topics, top_k=k)
    run = report.run[["query_id", "doc_id", "score"]]
    measures = [f"SpokenMacroNDCG@{k}", f"nDCG@{k}"]
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", IncompleteGridWarning)
        grid = evaluate(measures[:1], qrels, run, topics=topics, by=["collection", "condition"], tie_break=tie_break)
        by_collection = evaluate(measures, qrels, run, topics=topics, by="collection", tie_break=tie_break)
        by_condition = evaluate(measures, qrels, run, topics=topics, by="condition", tie_break=tie_break)
    for w in caught:
        text = str(w.message)
        if text not in notes:
            notes.append(text)
    overall = by_collection[by_collection["collection"] == "(all)"].set_index("measure")["value"]
    quality = float(overall[measures[0]])
    gated = float(reward(quality, a=a, b=b, gate=audit_passed))
    n_req = int(qrels["query_id"].astype(str).nunique())
    rows = [
        (measures[0], quality, "raw quality (official)"),
        (measures[1], float(overall[measures[1]]), "diagnostic: mean over requests"),
        ("reward", gated, f"reward(q; a={a:g}, b={b!r})" + ("" if audit_passed else " gated: audit failed")),
        ("requests", n_req, "labelled requests"),
        ("invalid rows", len(report.invalid_queries), "score 0"),
        ("missing rows", len(report.missing_queries), "score 0"),
    ]
    summary = pd.DataFrame({"measure": [r[0] for r in rows], "value": pd.Series([r[1] for r in rows], dtype=object),
                            "role": [r[2] for r in rows]})
    return SpokenScore(quality, gated, summary, grid, by_collection, by_condition, report, notes)


def grid_table(grid: pd.DataFrame) -> pd.DataFrame:
    """The tidy grid as a collection × condition table (cells = cell means)."""
    cells = grid[~grid["collection"].isin(["(macro)", "(all)"])]
    table = cells.pivot_table(index="collection", columns="condition", values="value", aggfunc="first")
    table.columns.name = None
    return table.reset_index()


# ------------------------------------------------------------------------------------------------
# command line


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="results JSONL: {query_id, results: [{doc_id, score}]} per line")
    p.add_argument("--data", help="data root holding spoken/ (default: $RETECO_DATA)")
    p.add_argument("--split", default="validation", help="requests/labels folder under spoken/ (validation)")
    p.add_argument("--requests", help="requests JSONL instead of <data>/spoken/<split>/requests.jsonl")
    p.add_argument("--qrels", help="labels (JSONL or TREC) instead of <data>/spoken/<split>/qrels.jsonl")
    p.add_argument("--top-k", type=int, default=10, help="cutoff and maximum results per request (10)")
    p.add_argument("--tie-break", default="run_order", choices=["run_order", "trec_eval"])
    p.add_argument("--a", type=float, default=DEFAULT_A, help=f"reward anchor, 0-100 scale ({DEFAULT_A:g})")
    p.add_argument("--b", type=float, default=DEFAULT_B, help=f"reward reference quality ({DEFAULT_B!r})")
    p.add_argument("--audit-failed", action="store_true", help="the trajectory audit failed: reward 0")
    p.add_argument("--limit", type=int, default=50, help="problems shown in table output")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.add_argument("--places", type=int, default=4)


def _demo(sample_root: Path) -> list[str]:
    return [str(sample_root / "runs" / "spoken.jsonl"), "--data", str(sample_root)]



@preset("spoken", "Spoken-Query: row-level contract, SpokenMacroNDCG@10 (collection x condition), reward",
        _configure, demo=_demo)
def run_spoken(args: argparse.Namespace) -> int:
    root = args.data
    corpus = sp.load_corpus(root)
    topics = sp.topics(args.split, root, path=args.requests)
    qrels = sp.load_qrels(args.split, root, path=args.qrels)
    result = score_spoken(args.results, corpus=corpus, topics=topics, qrels=qrels, k=args.top_k,
                          tie_break=args.tie_break, a=args.a, b=args.b, audit_passed=not args.audit_failed)
    report = result.report
    if args.format == "json":
        print(json.dumps({
            "benchmark": "spoken",
            "quality": result.quality,
            "reward": result.reward,
            "summary": frame_records(result.summary),
            "grid": frame_records(result.grid),
            "by_collection": frame_records(result.by_collection),
            "by_condition": frame_records(result.by_condition),
            "invalid_queries": report.invalid_queries,
            "missing_queries": report.missing_queries,
            "problems": [p.as_dict() for p in report.errors],
            "notes": result.notes,
        }, indent=2, ensure_ascii=False))
        return 0
    out = sys.stdout
    sections = [
        ("raw quality and reward", result.summary),
        ("collection x condition grid (cell means of graded nDCG)", grid_table(result.grid)),
        ("per collection (mean of its cells)", result.by_collection),
        ("per condition (mean of its cells)", result.by_condition),
    ]
    for i, (title, frame) in enumerate(sections):
        if args.format == "table":
            print(("\n" if i else "") + f"== {title}", file=out)
        elif i:
            print(file=out)
        print(format_frame(frame, args.format, args.places), file=out)
    stream = out if args.format == "table" else sys.stderr
    for note in result.notes:
        print(f"\nwarning: {note}", file=stream)
    if report.errors:
        print(f"\n{len(report.errors)} problem(s); {len(report.invalid_queries)} invalid and "
              f"{len(report.missing_queries)} missing request(s) score 0:", file=stream)
        for p in report.errors[: args.limit]:
            print(f"  {p}", file=stream)
        if len(report.errors) > args.limit:
            print(f"  ... and {len(report.errors) - args.limit} more (--limit)", file=stream)
    return 0

