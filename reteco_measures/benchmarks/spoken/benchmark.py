"""Spoken-Query Document Search: ``spoken``.

The official-style scorer of the Spoken-Query task description:

1. validate row by row with the ``spoken`` contract (≤ 10 distinct doc ids from the request's
   domain, finite non-increasing scores); an invalid row and a missing row score 0, valid rows
   count;
2. raw quality q = ``SpokenMacroNDCG@10``: graded nDCG@10 per request, mean within each
   collection × acoustic-condition cell, mean of the cell means (each request carries the weight
   of its cell, so the statistical unit is the cell: resampling is stratified by cell);
3. the full grid, per-collection and per-condition tables: a collection's number is the mean of
   its cells (each condition weighs the same), a condition's likewise; the plain mean over
   requests (``nDCG@10``) is a diagnostic;
4. reward = ``rm.reward(q, a=15, b=0.4530094614433184)``, gated to 0 by a failed audit.

Rankings follow the results' own order (``tie_break='run_order'``, default; the contract allows
equal scores in any order, so the order the system wrote is the one judged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...contracts.base import ValidationReport
from ...engine.results import ALL, MACRO
from ...kernels.ranking import TIE_BREAKS
from ...measures.names import parse_measures
from ...reward import DEFAULT_A, DEFAULT_B, reward
from ..declaration import Benchmark, CliSpec, Grouping, Inputs, Option, RewardSpec, StatsSpec, TableSpec
from ..registry import register
from ..scoring import long_per_query
from . import data as sp
from .contract import validate_spoken

__all__ = ["SPOKEN", "score_spoken", "grid_table"]


def _load(data: Any, split: str | None, opts: dict) -> Inputs:
    split = split or "validation"
    corpus = sp.load_corpus(data)
    topics = sp.topics(split, data, path=opts.get("requests"))
    qrels = sp.load_qrels(split, data, path=opts.get("qrels"))
    return _inputs(corpus, topics, qrels)


def _inputs(corpus: pd.DataFrame, topics: pd.DataFrame, qrels: pd.DataFrame) -> Inputs:
    return Inputs(qrels=qrels, topics=topics, corpus=corpus)


def _validate(run: Any, inputs: Inputs, opts: dict) -> ValidationReport:
    return validate_spoken(run, corpus=inputs.corpus, queries=inputs.topics, top_k=opts["top_k"])


def _measures(opts: dict) -> list:
    k = opts["top_k"]
    return parse_measures([f"SpokenMacroNDCG@{k}", f"nDCG@{k}", f"Judged@{k}"])


def _per_query(measures: list, inputs: Inputs, report: ValidationReport, opts: dict):
    run = report.run[["query_id", "doc_id", "score"]]
    # an incomplete collection x condition grid warns; the warning becomes a note of the Score
    long = long_per_query(measures, inputs.qrels, run, units=inputs.units(), topics=inputs.topics,
                          tie_break=opts["tie_break"])
    return long, None


def _reward(quality: float, valid: bool, opts: dict) -> float:
    return float(reward(quality, a=opts["a"], b=opts["b"], gate=not opts["audit_failed"]))


def _describe(score) -> dict:
    return {"quality": score.official, "invalid_queries": list(score.report.invalid_queries),
            "missing_queries": list(score.report.missing_queries),
            "problems": [p.as_dict() for p in score.report.errors],
            "requests": int(score.per_query["query_id"].nunique()) if len(score.per_query) else 0}


def _demo(sample_root: Path) -> dict:
    return {"run": sample_root / "runs" / "spoken.jsonl", "data": sample_root}


SPOKEN = register(Benchmark(
    name="spoken",
    title="Spoken-Query",
    measures=_measures,
    load=_load,
    validate=_validate,
    per_query=_per_query,
    contract="spoken",
    default_split="validation",
    cli=CliSpec(
        help="Spoken-Query: row-level contract, SpokenMacroNDCG@10 (collection x condition), reward",
        options=(
            Option("requests", None, "requests JSONL instead of <data>/spoken/<split>/requests.jsonl", data=True),
            Option("qrels", None, "labels (JSONL or TREC) instead of <data>/spoken/<split>/qrels.jsonl", data=True),
            Option("top_k", 10, "cutoff and maximum results per request (10)", type=int),
            Option("tie_break", "run_order", "ordering of tied scores (default: the results' own order)",
                   choices=tuple(TIE_BREAKS)),
            Option("a", DEFAULT_A, f"reward anchor, 0-100 scale ({DEFAULT_A:g})", type=float),
            Option("b", DEFAULT_B, f"reward reference quality ({DEFAULT_B!r})", type=float),
            Option("audit_failed", False, "the trajectory audit failed: reward 0", action="store_true"),
        ),
        run_arg="results",
        run_help="results JSONL: {query_id, results: [{doc_id, score}]} per line",
        demo=_demo,
    ),
    tables=TableSpec(
        groupings=(
            Grouping("grid", ("collection", "condition"), "collection x condition grid (cell means of graded nDCG)",
                     layout="tidy", official_only=True),
            Grouping("by_collection", ("collection",), "per collection (mean of its cells)", layout="tidy"),
            Grouping("by_condition", ("condition",), "per condition (mean of its cells)", layout="tidy"),
        ),
        per_query_columns=("collection", "condition"),
        summary_columns=("measure", "value", "n", "role"),
        aggregation="mean of the collection x condition cell means of graded nDCG@10",
        describe=_describe,
    ),
    stats=StatsSpec(unit="collection x condition cell", strata=("collection", "condition")),
    reward=RewardSpec(_reward),
    # a run file is not scored in blocks (reteco_measures.benchmarks.streaming): the reason
    stream_unit=lambda inputs, opts: "Spoken-Query's contract checks the whole results file (every request exactly once), which is small (at most top_k results per request)",
))


def grid_table(grid: pd.DataFrame) -> pd.DataFrame:
    """The tidy grid as a collection × condition table (cells = cell means)."""
    cells = grid[~grid["collection"].isin([MACRO, ALL])]
    table = cells.pivot_table(index="collection", columns="condition", values="value", aggfunc="first")
    table.columns.name = None
    return table.reset_index()


def score_spoken(results: Any, *, corpus: pd.DataFrame, topics: pd.DataFrame, qrels: pd.DataFrame, k: int = 10,
                 tie_break: str = "run_order", a: float = DEFAULT_A, b: float = DEFAULT_B,
                 audit_passed: bool = True):
    """Score Spoken-Query results against in-memory reference data; same as
    ``rm.benchmark("spoken").score(...)``, returns its `Score`
    (``.official`` = ``.fact("quality")``, ``.reward``, ``.table("grid")``, ``.table("by_collection")``,
    ``.table("by_condition")``)."""
    return SPOKEN.score(results, inputs=_inputs(corpus, topics, qrels), top_k=k, tie_break=tie_break, a=a, b=b,
                        audit_failed=not audit_passed)
