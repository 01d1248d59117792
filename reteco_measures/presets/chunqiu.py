"""``reteco-measures score chunqiu RESULTS.jsonl --data DIR [--queries Q.jsonl]``.

The official-style ChunQiu scorer (seed ``001``):

1. validate the whole batch with the strict ``chunqiu`` contract (every query exactly once,
   ≤ 10 distinct known doc ids, finite descending scores, ties in corpus order);
2. official score = mean binary nDCG@10 over *all* queries, each ranking taken in the results'
   own order (``tie_break='run_order'``; the contract already guarantees that equal scores follow
   corpus order, so this equals ``'corpus_order'``); an invalid batch scores 0 overall;
3. diagnostics beside it, from ir_measures: MAP@10 (``AP@10``), ``R@10``, MRR (``RR``);
4. reward = the official score (the seed: "Reward is mean binary nDCG@10 ... without baseline
   subtraction"), gated to 0 by an invalid batch or a failed audit (``--audit-failed``).

Exit code 1 for an invalid batch (the scores are printed as 0 together with every violation).
Python use: :func:`score_chunqiu`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..api import iter_calc, measure_label, parse_measures
from ..cli.report import OUTPUT_FORMATS, format_frame
from ..contracts.base import ValidationReport
from ..contracts.chunqiu import validate_chunqiu
from ..datasets import chunqiu as cq
from . import preset

__all__ = ["score_chunqiu", "ChunQiuScore", "OFFICIAL", "DIAGNOSTICS"]

#: the official measure (k = 10)
OFFICIAL = "nDCG@10"
#: diagnostics (ir_measures names) and the names they are printed with
DIAGNOSTICS = {"AP@10": "MAP@10", "R@10": "R@10", "RR": "MRR"}


@dataclass
class ChunQiuScore:
    """Result of :func:`score_chunqiu`.

    Attributes:
        valid: the batch passed the contract.
        official: mean binary nDCG@10 (0 for an invalid batch).
        reward: the official score gated by validity and the audit.
        scores: table ``measure, value, role`` (official, diagnostics, reward).
        per_query: ``query_id`` + one column per measure (NaN-free; 0 for an invalid batch).
        report: the contract's :class:`~reteco_measures.contracts.base.ValidationReport`.
    """

    valid: bool
    official: float
    reward: float
    scores: pd.DataFrame
    per_query: pd.DataFrame
    report: ValidationReport
    notes: list[str] = field(default_factory=list)


def score_chunqiu(
    results: Any,
    *,
    qrels: pd.DataFrame,
    queries: Any,
    corpus: Any,
    k: int = 10,
    audit_passed: bool = True,
    unlabelled: str = "error",
) -> ChunQiuScore:
    """Score a ChunQiu results batch officially.

    Args:
        results: results JSONL (path / text) or anything :func:`validate_chunqiu` accepts.
        qrels: ``query_id, doc_id, relevance`` (binary; ``relevance >= 1`` is relevant).
        queries: the query ids of the batch (sequence or DataFrame with ``query_id``): every
            one must be answered, and the mean is over all of them.
        corpus: doc ids in corpus order (or a DataFrame with ``doc_id``).
        k: cutoff and maximum list length (10).
        audit_passed: False gates the reward to 0 (a failed trajectory audit).
        unlabelled: what to do with queries that have no relevant document in ``qrels``:
            ``'error'`` (default: most likely the wrong labels file), ``'zero'`` (they score 0,
            as their ideal DCG is 0) or ``'skip'`` (left out of the mean).

    Returns:
        :class:`ChunQiuScore`.
    """
    if unlabelled not in ("error", "zero", "skip"):
        raise ValueError(f"unlabelled must be 'error', 'zero' or 'skip', not {unlabelled!r}")
    qframe = queries if isinstance(queries, pd.DataFrame) else pd.DataFrame({"query_id": list(queries)})
    qids = pd.Index(pd.unique(qframe["query_id"].astype(str).to_numpy()), dtype="str", name="query_id")
    report = validate_chunqiu(results, corpus=corpus, queries=qids.tolist(), top_k=k)
    qrels = qrels.assign(query_id=qrels["query_id"].astype(str), doc_id=qrels["doc_id"].astype(str))
    qrels = qrels[qrels["query_id"].isin(qids)]
    labelled = set(qrels.loc[qrels["relevance"] >= 1, "query_id"].tolist())
    notes: list[str] = []
    no_label = [q for q in qids.tolist() if q not in labelled]
    if no_label:
        if unlabelled == "error":
            raise ValueError(
                f"{len(no_label)} of {len(qids)} queries have no relevant document in the labels "
                f"(e.g. {no_label[:5]}); pass the labels of these queries, or unlabelled='zero'/'skip'"
            )
        notes.append(f"{len(no_label)} unlabelled queries {'score 0' if unlabelled == 'zero' else 'left out'}")
        if unlabelled == "skip":
            qids = qids[~qids.isin(no_label)]
    measures = parse_measures([f"nDCG@{k}", f"AP@{k}", f"R@{k}", "RR"])
    labels = [measure_label(m) for m in measures]
    if report.valid and len(qids):
        run = report.run[report.run["query_id"].isin(qids)]
        per = pd.DataFrame(
            [(m.query_id, measure_label(m.measure), float(m.value))
             for m in iter_calc(measures, qrels, run[["query_id", "doc_id", "score"]], tie_break="run_order")],
            columns=["query_id", "measure", "value"],
        )
        per_query = per.pivot_table(index="query_id", columns="measure", values="value", aggfunc="first")
        per_query = per_query.reindex(index=qids, columns=labels).fillna(0.0)
    else:
        per_query = pd.DataFrame(0.0, index=qids, columns=labels)
    means = per_query.mean(axis=0) if len(qids) else pd.Series(0.0, index=labels)
    official = float(means[labels[0]]) if report.valid else 0.0
    # ChunQiu has no piecewise mapping: the reward is the official score, gated
    gated = official if (report.valid and audit_passed) else 0.0
    rows = [{"measure": f"nDCG@{k}", "value": official, "role": "official"}]
    names = {f"AP@{k}": f"MAP@{k}", f"R@{k}": f"R@{k}", "RR": "MRR"}
    for label in labels[1:]:
        rows.append({"measure": names.get(label, label), "value": float(means[label]) if report.valid else 0.0,
                     "role": "diagnostic"})
    rows.append({"measure": "reward", "value": gated, "role": "reward"})
    scores = pd.DataFrame(rows, columns=["measure", "value", "role"])
    per_query = per_query.reset_index().rename(columns={"index": "query_id"})
    return ChunQiuScore(report.valid, official, gated, scores, per_query, report, notes)


# ------------------------------------------------------------------------------------------------
# command line


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="results JSONL: {query_id, results: [{doc_id, score}]} per line")
    p.add_argument("--data", help="data root holding chunqiu/ (default: $RETECO_DATA)")
    p.add_argument("--queries", help="queries JSONL {query_id, text[, relevant_doc_ids]} "
                   "(default: <data>/chunqiu/examples.jsonl)")
    p.add_argument("--top-k", type=int, default=10, help="cutoff and maximum results per query (10)")
    p.add_argument("--unlabelled", default="error", choices=["error", "zero", "skip"],
                   help="queries without relevant documents: error (default), score 0, or skip")
    p.add_argument("--audit-failed", action="store_true", help="the trajectory audit failed: reward 0")
    p.add_argument("--per-query", action="store_true", help="also print per-query values")
    p.add_argument("--limit", type=int, default=50, help="violations shown in table output")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.add_argument("--places", type=int, default=4)


def _demo(sample_root: Path) -> list[str]:
    return [str(sample_root / "runs" / "chunqiu.jsonl"), "--data", str(sample_root)]


def _json_safe(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


@preset("chunqiu", "ChunQiu: strict batch contract, mean binary nDCG@10 (+ MAP@10, R@10, MRR)", _configure,
        demo=_demo)
def run_chunqiu(args: argparse.Namespace) -> int:
    root = args.data if args.data is not None else None
    corpus = cq.corpus_order(root)
    if args.queries:
        ex = cq.load_examples(path=args.queries)
        has_labels = _has_field(args.queries, "relevant_doc_ids")
        qrels = cq.load_qrels(path=args.queries) if has_labels else cq.load_qrels(root)
    else:
        ex = cq.load_examples(root)
        qrels = cq.load_qrels(root)
    result = score_chunqiu(args.results, qrels=qrels, queries=ex["query_id"], corpus=corpus, k=args.top_k,
                           audit_passed=not args.audit_failed, unlabelled=args.unlabelled)
    report = result.report
    if args.format == "json":
        out = {
            "benchmark": "chunqiu",
            "valid": result.valid,
            "official": {"measure": result.scores["measure"].iloc[0], "value": result.official},
            "reward": result.reward,
            "scores": [{k: _json_safe(v) for k, v in r.items()} for r in result.scores.to_dict("records")],
            "queries": int(len(result.per_query)),
            "violations": [p.as_dict() for p in report.errors],
            "notes": result.notes,
        }
        if args.per_query:
            out["per_query"] = result.per_query.to_dict("records")
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0 if result.valid else 1
    print(format_frame(result.scores, args.format, args.places))
    if args.per_query:
        print()
        print(format_frame(result.per_query, args.format, args.places))
    stream = sys.stdout if args.format == "table" else sys.stderr
    for note in result.notes:
        print(f"note: {note}", file=stream)
    if not result.valid:
        print(f"\nINVALID batch: {len(report.errors)} violation(s); the official score is 0", file=stream)
        for p in report.errors[: args.limit]:
            print(f"  {p}", file=stream)
        if len(report.errors) > args.limit:
            print(f"  ... and {len(report.errors) - args.limit} more (--limit)", file=stream)
        return 1
    if args.format == "table":
        print(f"\nvalid batch: {len(result.per_query)} queries, {len(report.run)} results")
    return 0


def _has_field(path: str | os.PathLike, name: str) -> bool:
    with open(path, encoding="utf-8-sig") as f:
        for raw in f:
            if raw.strip():
                try:
                    rec = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if isinstance(rec, dict) and name in rec:
                    return True
    return False

