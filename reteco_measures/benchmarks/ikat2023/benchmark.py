"""TREC iKAT 2023 passage and PTKB ranking: ``ikat-2023``.

1. validate the run JSON with the ``ikat`` contract against the test topics and convert it to a
   passage run and a PTKB ranking (rules: `reteco_measures.benchmarks.ikat2023.contract`);
2. **passage ranking** (measures of the iKAT 2023 overview, arXiv:2401.01330, all computed by
   ir_measures / pytrec_eval): ``nDCG@3``, ``nDCG@5``, ``nDCG@1000`` (graded, grades 0–4),
   ``AP(rel=2)@1000``, ``RR(rel=2)``, ``P(rel=2)@20``, ``R(rel=2)@20``, ``R(rel=2)@1000`` (a
   passage is relevant when its grade is ≥ 2), each a mean over the judged turns; a judged turn
   missing from the run scores 0;
3. **PTKB statement ranking**: ``P@k``, ``R@k`` (``k`` = ``ptkb_k``, default 3), ``AP`` and
   ``nDCG@3`` against the organisers' (``org``) and/or NIST's (``nist``) PTKB qrels (both by
   default; no version is official over the other in the published material), each a mean over
   the turns of that qrels file, missing turns 0.

The overview reports several retrieval measures and names none of them the official one; the
leaderboard ranks by passage ``nDCG@5`` (first row of our summary's role ``official``) — choose
another with ``leaderboard --measure``. Response generation (naturalness, groundedness 0–4) is
judged by the ``judge`` machinery, not here.
"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pandas as pd

from ...contracts.base import ValidationReport
from ...errors import count_problems, describe_kinds
from ...sample import ikat_sample_root
from ..declaration import Benchmark, CliSpec, Inputs, Option, StatsSpec, TableSpec
from ..registry import register
from ..scoring import long_per_query
from .contract import PassageScore, convert_ikat_run
from .data import ikat_qrels, load_ikat_topics, ptkb_qrels

__all__ = ["IKAT_2023", "score_ikat_2023", "PASSAGE_MEASURES", "PASSAGE_DIAGNOSTICS", "ptkb_measures"]

#: passage-ranking measures (ir_measures syntax)
PASSAGE_MEASURES = [
    "nDCG@3",
    "nDCG@5",
    "nDCG@1000",
    "AP(rel=2)@1000",
    "RR(rel=2)",
    "P(rel=2)@20",
    "R(rel=2)@20",
    "R(rel=2)@1000",
]

#: diagnostics beside the organisers' passage measures: ``Judged@10``, the share of a turn's top 10
#: passages the qrels judge (unjudged passages count as non-relevant; a low value means the
#: pool did not see this run's passages)
PASSAGE_DIAGNOSTICS = ["Judged@10"]

#: the passage measure the leaderboard ranks by
RANKING_MEASURE = "nDCG@5"

#: conversion modes of `convert_ikat_run` and its default
PASSAGE_SCORES = tuple(typing.get_args(PassageScore))
DEFAULT_PASSAGE_SCORE = inspect.signature(convert_ikat_run).parameters["passage_score"].default


def ptkb_measures(k: int = 3) -> list[str]:
    """PTKB-ranking measures: ``P@k``, ``R@k``, ``AP``, ``nDCG@3``."""
    return [f"P@{k}", f"R@{k}", "AP", "nDCG@3"]


def _load(data: Any, split: str | None, opts: dict) -> Inputs:
    topics = load_ikat_topics(split or "test", root=data)
    qrels = ikat_qrels(root=data)
    versions = ["org", "nist"] if opts["ptkb_qrels"] == "both" else [opts["ptkb_qrels"]]
    return _inputs(topics, qrels, {v: ptkb_qrels(v, root=data) for v in versions})


def _inputs(topics: pd.DataFrame, qrels: pd.DataFrame, ptkb: dict[str, pd.DataFrame]) -> Inputs:
    return Inputs(qrels=qrels, topics=topics, extra={"ptkb": ptkb})


def _validate(run: Any, inputs: Inputs, opts: dict) -> ValidationReport:
    return convert_ikat_run(run, queries=inputs.topics, passage_score=opts["passage_score"])


def _measures(opts: dict) -> list[str]:
    """The ranking measure first (it names the official row), then the passage measures."""
    return [RANKING_MEASURE, *[m for m in PASSAGE_MEASURES if m != RANKING_MEASURE], *PASSAGE_DIAGNOSTICS]


def _task(measures: list[str], qrels: pd.DataFrame, run: pd.DataFrame, task: str, version: str) -> pd.DataFrame:
    units = pd.unique(qrels["query_id"].astype(str)).tolist()
    run = run[run["query_id"].astype(str).isin(set(units))][["query_id", "doc_id", "score"]]
    long = long_per_query(measures, qrels, run, units=units)
    long["value"] = long["value"].fillna(0.0)  # every judged turn counts; a turn not covered scores 0
    long.insert(0, "qrels", version)
    long.insert(0, "task", task)
    return long


def _per_query(measures: list, inputs: Inputs, report: ValidationReport, opts: dict):
    parts = [_task(PASSAGE_MEASURES + PASSAGE_DIAGNOSTICS, inputs.qrels, report.run, "passage", "nist")]
    for version, q in inputs.extra["ptkb"].items():
        parts.append(_task(ptkb_measures(opts["ptkb_k"]), q, report.extra["ptkb_run"], "ptkb", version))
    notes = list(dict.fromkeys(n for part in parts for n in part.attrs.get("notes", [])))
    long = pd.concat(parts, ignore_index=True)
    long.attrs = {"empty": {}, "notes": notes}
    return long, None


#: iKAT's topics are turns: its problem counts say so (every count is in turns)
IKAT_KIND_NAMES = {"missing_query": "missing turn(s) (score 0)", "format": "format problem(s)"}


def _notes(inputs: Inputs, report: ValidationReport, long: pd.DataFrame, opts: dict) -> list[str]:
    notes = []
    judged = set(inputs.qrels["query_id"].astype(str))
    covered = judged & set(report.run["query_id"].astype(str))
    if len(covered) < len(judged):
        notes.append(f"{len(judged) - len(covered)} of {len(judged)} judged turns have no passage in the run "
                     "(they score 0)")
    if not report.valid:
        # Invalid = the organisers' validator would reject the run (a turn missing, an unknown
        # passage or PTKB id, a malformed field ...); what could be read is still scored.
        kinds = count_problems(report.problems_of("error"), by="kind")  # a summary counts as its turns
        errors = describe_kinds(kinds, names=IKAT_KIND_NAMES)
        if len(report.run):
            notes.append(f"the run is invalid by the iKAT 2023 run rules ({errors}); it is scored as read: "
                         "rejected parts are skipped and missing turns score 0")
        else:
            notes.append(f"the run is invalid by the iKAT 2023 run rules ({errors}) and holds no passage to "
                         "score: every passage score is 0")
    return notes


def _describe(score) -> dict:
    extra = score.report.extra
    return {"run_name": extra.get("run_name"), "run_type": extra.get("run_type"),
            "passage_score": score.options.get("passage_score"), "_rows_key": "passages_kept"}


def _demo(sample_root: Path) -> dict:
    # the iKAT-like sample is generated on first use, not shipped (see ikat_sample_root)
    root = ikat_sample_root()
    return {"run": root / "runs" / "ikat2023_run.json", "data": root}


IKAT_2023 = register(Benchmark(
    name="ikat-2023",
    title="TREC iKAT 2023",
    measures=_measures,
    load=_load,
    validate=_validate,
    per_query=_per_query,
    contract="ikat",
    default_split="test",
    cli=CliSpec(
        help="TREC iKAT 2023: passage ranking (nDCG@3/5/1000, AP, RR, P, R at rel>=2) and PTKB ranking",
        options=(
            Option("ptkb_qrels", "both", "PTKB qrels: organisers' (org), NIST's (nist) or both (default)",
                   choices=("org", "nist", "both"), data=True),
            Option("ptkb_k", 3, "cutoff of PTKB P@k and R@k (default 3)", type=int),
            Option("passage_score", DEFAULT_PASSAGE_SCORE, f"how converted passages are scored (default "
                   f"{DEFAULT_PASSAGE_SCORE}; see the iKAT page)", choices=PASSAGE_SCORES),
        ),
        run_help="iKAT 2023 run JSON {run_name, run_type, turns: [...]}",
        demo=_demo,
    ),
    tables=TableSpec(
        keys=("task", "qrels"),
        official_key=(("task", "passage"), ("qrels", "nist")),
        summary_columns=("task", "qrels", "measure", "value", "n"),
        aggregation="mean over the judged turns (a turn missing from the run scores 0)",
        notes=_notes,
        describe=_describe,
    ),
    stats=StatsSpec(unit="turn"),
    # a run file is not scored in blocks (reteco_measures.benchmarks.streaming): the reason
    stream_unit=lambda inputs, opts: "an iKAT 2023 run is one JSON document (turns, passages, PTKB and responses), read whole",
))


def score_ikat_2023(run: Any, *, topics: pd.DataFrame, qrels: pd.DataFrame, ptkb: dict[str, pd.DataFrame],
                    passage_score: str = DEFAULT_PASSAGE_SCORE, ptkb_k: int = 3):
    """Score an iKAT 2023 run JSON against in-memory reference data; same as
    ``rm.benchmark("ikat-2023").score(...)``, returns its `Score`
    (``.scores``: ``task, qrels, measure, value, n``; ``.per_query``: ``task, qrels, query_id`` + measures).

    Args:
        run: the run JSON (path, text or dict).
        topics: test topics, for the turn-id and PTKB-id checks.
        qrels: passage qrels (grades 0–4); the judged turns are its turns.
        ptkb: ``{version: PTKB qrels}`` (empty: no PTKB task).
        passage_score: how converted passages are scored (see `reteco_measures.benchmarks.ikat2023.contract`).
        ptkb_k: cutoff of PTKB ``P@k`` / ``R@k``.
    """
    return IKAT_2023.score(run, inputs=_inputs(topics, qrels, ptkb), passage_score=passage_score, ptkb_k=ptkb_k)
