"""``reteco-measures score ikat-2023 RUN.json --data DIR``: TREC iKAT 2023 passage and PTKB ranking.

1. validate the run JSON with the ``ikat`` contract against the test topics and convert it to
   a passage run and a PTKB ranking (rules: :mod:`reteco_measures.contracts.ikat`);
2. **passage ranking** (measures of the iKAT 2023 overview, all computed by ir_measures /
   pytrec_eval): ``nDCG@3``, ``nDCG@5``, ``nDCG@1000`` (graded, grades 0–4),
   ``AP(rel=2)@1000``, ``RR(rel=2)``, ``P(rel=2)@20``, ``R(rel=2)@20``, ``R(rel=2)@1000`` (a
   passage is relevant when its grade is ≥ 2), each a mean over the 176 judged turns; a judged
   turn missing from the run scores 0;
3. **PTKB statement ranking**: ``P@k``, ``R@k`` (``k`` = ``ptkb_k``, default 3), ``AP`` and
   ``nDCG@3`` against the organisers' (``org``, 112 turns) and/or NIST's (``nist``, 98 turns)
   PTKB qrels (``ptkb_qrels='both'`` by default; no version is official over the other in the
   published material), each a mean over the turns of that qrels file, missing turns 0.

Response generation (naturalness, groundedness 0–4) is judged by the ``judge`` machinery, not
here; the contract's ``extra["responses"]`` holds the responses for it.

Python use: :func:`score_ikat_2023`.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ..api import iter_calc, measure_label, parse_measures
from ..cli.report import OUTPUT_FORMATS, format_frame, frame_records, print_run_checks
from ..contracts.base import ValidationReport
from ..contracts.ikat import PassageScore, convert_ikat_run
from ..datasets.ikat2023 import ikat_qrels, load_ikat_topics, ptkb_qrels
from ..sample import ikat_sample_root
from . import preset

__all__ = ["score_ikat_2023", "IkatScore", "PASSAGE_MEASURES", "ptkb_measures"]

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


def ptkb_measures(k: int = 3) -> list[str]:
    """PTKB-ranking measures: ``P@k``, ``R@k``, ``AP``, ``nDCG@3``."""
    return [f"P@{k}", f"R@{k}", "AP", "nDCG@3"]


@dataclass
class IkatScore:
    """Result of :func:`score_ikat_2023`.

    Attributes:
        scores: ``task, qrels, measure, value, n`` (task ``passage`` or ``ptkb``).
        per_query: ``task, qrels, query_id`` + one column per measure.
        report: the ``ikat`` contract's report (``run`` = passage run, ``extra["ptkb_run"]``).
    """

    scores: pd.DataFrame
    per_query: pd.DataFrame
    report: ValidationReport
    notes: list[str] = field(default_factory=list)


def _evaluate(
    measures: list[str], qrels: pd.DataFrame, run: pd.DataFrame, task: str, version: str
) -> tuple[list[dict], pd.DataFrame]:
    """Mean over the qrels' turns (missing turns 0) and per-turn values."""
    parsed = parse_measures(measures)
    labels = [measure_label(m) for m in parsed]
    qids = pd.Index(pd.unique(qrels["query_id"].astype(str)), name="query_id")
    run = run[run["query_id"].isin(qids)][["query_id", "doc_id", "score"]]
    per = pd.DataFrame(
        [(m.query_id, measure_label(m.measure), float(m.value)) for m in iter_calc(parsed, qrels, run)],
        columns=["query_id", "measure", "value"],
    )
    wide = per.pivot_table(index="query_id", columns="measure", values="value", aggfunc="first")
    # every judged turn counts; a turn the run does not cover scores 0
    wide = wide.reindex(index=qids, columns=labels).fillna(0.0)
    rows = [
        {"task": task, "qrels": version, "measure": lab, "value": float(wide[lab].mean()), "n": len(qids)}
        for lab in labels
    ]
    wide = wide.reset_index()
    wide.insert(0, "qrels", version)
    wide.insert(0, "task", task)
    return rows, wide


def score_ikat_2023(
    run: Any,
    *,
    topics: pd.DataFrame,
    qrels: pd.DataFrame,
    ptkb: dict[str, pd.DataFrame],
    passage_score: PassageScore = "position",
    ptkb_k: int = 3,
) -> IkatScore:
    """Score an iKAT 2023 run JSON.

    Args:
        run: the run JSON (path, text or dict).
        topics: test topics (:func:`~reteco_measures.datasets.ikat2023.load_ikat_topics`), for
            the turn-id and PTKB-id checks.
        qrels: passage qrels (grades 0–4); the judged turns are its turns.
        ptkb: ``{version: PTKB qrels}``, e.g. ``{"org": ..., "nist": ...}`` (empty: no PTKB task).
        passage_score: how converted passages are scored (see :mod:`reteco_measures.contracts.ikat`).
        ptkb_k: cutoff of PTKB ``P@k`` / ``R@k``.
    """
    report = convert_ikat_run(run, queries=topics, passage_score=passage_score)
    rows, per_parts = [], []
    r, w = _evaluate(PASSAGE_MEASURES, qrels, report.run, "passage", "nist")
    rows += r
    per_parts.append(w)
    for version, q in ptkb.items():
        r, w = _evaluate(ptkb_measures(ptkb_k), q, report.extra["ptkb_run"], "ptkb", version)
        rows += r
        per_parts.append(w)
    scores = pd.DataFrame(rows, columns=["task", "qrels", "measure", "value", "n"])
    notes = []
    judged = set(qrels["query_id"].astype(str))
    covered = judged & set(report.run["query_id"].astype(str))
    if len(covered) < len(judged):
        notes.append(
            f"{len(judged) - len(covered)} of {len(judged)} judged turns have no passage in the run "
            "(they score 0)"
        )
    if not report.valid:
        notes.append("the run could not be read as an iKAT run: every score is 0")
    return IkatScore(scores, pd.concat(per_parts, ignore_index=True), report, notes)


# ------------------------------------------------------------------------------------------------
# command line


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="iKAT 2023 run JSON {run_name, run_type, turns: [...]}")
    p.add_argument("--data", help="data root holding ikat2023/ (default: $RETECO_DATA)")
    p.add_argument(
        "--ptkb-qrels",
        default="both",
        choices=["org", "nist", "both"],
        help="PTKB qrels: organisers' (org), NIST's (nist) or both (default)",
    )
    p.add_argument("--ptkb-k", type=int, default=3, help="cutoff of PTKB P@k and R@k (default 3)")
    p.add_argument(
        "--passage-score",
        default="position",
        choices=["position", "provenance"],
        help="converted passage scores: 1/position (default) or the submitted scores",
    )
    p.add_argument("--per-query", action="store_true", help="also print per-turn values")
    p.add_argument("--limit", type=int, default=20, help="problems listed in table output")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.add_argument("--places", type=int, default=4)


def _demo(sample_root: Path) -> list[str]:
    # the iKAT-like sample is generated on first use, not shipped (see ikat_sample_root)
    root = ikat_sample_root()
    return [str(root / "runs" / "ikat2023_run.json"), "--data", str(root)]



@preset(
    "ikat-2023",
    "TREC iKAT 2023: passage ranking (nDCG@3/5/1000, AP, RR, P, R at rel>=2) and PTKB ranking",
    _configure,
    demo=_demo,
)
def run_ikat_2023(args: argparse.Namespace) -> int:
    topics = load_ikat_topics("test", root=args.data)
    qrels = ikat_qrels(root=args.data)
    versions: list[Literal["org", "nist"]] = (
        ["org", "nist"] if args.ptkb_qrels == "both" else [args.ptkb_qrels]
    )
    ptkb = {v: ptkb_qrels(v, root=args.data) for v in versions}
    result = score_ikat_2023(
        args.run, topics=topics, qrels=qrels, ptkb=ptkb, passage_score=args.passage_score, ptkb_k=args.ptkb_k
    )
    report = result.report
    if args.format == "json":
        out = {
            "benchmark": "ikat-2023",
            "run_name": report.extra.get("run_name"),
            "run_type": report.extra.get("run_type"),
            "passage_score": args.passage_score,
            "scores": frame_records(result.scores),
            "validation": report.as_dict("passages_kept"),
            "notes": result.notes,
        }
        if args.per_query:
            out["per_query"] = frame_records(result.per_query)
        print(json.dumps(out, indent=2, ensure_ascii=False, default=str))
        return 0 if report.valid else 1
    table = args.format == "table"
    if table:
        print(f"TREC iKAT 2023 - run {report.extra.get('run_name')!r} ({report.extra.get('run_type')})")
    print(format_frame(result.scores, args.format, args.places))
    if args.per_query:
        print()
        print(format_frame(result.per_query, args.format, args.places))
    print_run_checks(report, table=table, limit=args.limit, notes=result.notes, rows="passage row(s)",
                     show_state=True)
    return 0 if report.valid else 1
