"""ChunQiu Temporal Retrieval (Classical Chinese annals): ``chunqiu``.

The official-style scorer of the ChunQiu task description:

1. validate the whole batch with the strict ``chunqiu`` contract (every query exactly once,
   ≤ 10 distinct known doc ids, finite descending scores, ties in corpus order);
2. official score = mean binary nDCG@10 over *all* queries, each ranking taken in the results'
   own order (``tie_break='run_order'``; the contract already guarantees that equal scores follow
   corpus order, so this equals ``'corpus_order'``); an invalid batch scores 0 overall;
3. diagnostics beside it, from ir_measures: MAP@10 (``AP@10``), ``R@10``, MRR (``RR``) and
   ``Judged@10`` (the share of the top 10 the qrels judge: unjudged documents count as non-relevant);
4. reward = the official score (the task: mean binary nDCG@10 without baseline subtraction),
   gated to 0 by an invalid batch or a failed audit (``audit_failed=True``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from ...contracts.base import ValidationReport
from ...measures.names import parse_measures
from ..declaration import Benchmark, CliSpec, Inputs, Option, RewardSpec, StatsSpec, TableSpec
from ..registry import register
from ..scoring import long_per_query
from . import data as cq
from .contract import validate_chunqiu

__all__ = ["CHUNQIU", "score_chunqiu", "OFFICIAL", "DIAGNOSTICS"]

#: the official measure (k = 10)
OFFICIAL = "nDCG@10"
#: diagnostics (ir_measures names) and the names they are printed with
DIAGNOSTICS = {"AP@10": "MAP@10", "R@10": "R@10", "RR": "MRR", "Judged@10": "Judged@10"}


def summary_name(label: str) -> str:
    """Summary names: ``AP@k`` → ``MAP@k``, ``RR`` → ``MRR`` (per-query columns keep ir_measures' names)."""
    if label.startswith("AP@"):
        return "M" + label
    return "MRR" if label == "RR" else label


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


def _inputs(qrels: pd.DataFrame, queries: Any, corpus: Any, unlabelled: str) -> Inputs:
    if unlabelled not in ("error", "zero", "skip"):
        raise ValueError(f"unlabelled must be 'error', 'zero' or 'skip', not {unlabelled!r}")
    qframe = queries if isinstance(queries, pd.DataFrame) else pd.DataFrame({"query_id": list(queries)})
    qids = pd.unique(qframe["query_id"].astype(str).to_numpy()).tolist()
    qrels = qrels.assign(query_id=qrels["query_id"].astype(str), doc_id=qrels["doc_id"].astype(str))
    qrels = qrels[qrels["query_id"].isin(set(qids))]
    labelled = set(qrels.loc[qrels["relevance"] >= 1, "query_id"].tolist())
    notes: list[str] = []
    no_label = [q for q in qids if q not in labelled]
    evaluated = qids
    if no_label:
        if unlabelled == "error":
            raise ValueError(
                f"{len(no_label)} of {len(qids)} queries have no relevant document in the labels "
                f"(e.g. {no_label[:5]}); pass the labels of these queries, or unlabelled='zero'/'skip'"
            )
        notes.append(f"{len(no_label)} unlabelled queries {'score 0' if unlabelled == 'zero' else 'left out'}")
        if unlabelled == "skip":
            evaluated = [q for q in qids if q not in set(no_label)]
    return Inputs(qrels=qrels, corpus=corpus, query_ids=evaluated, extra={"expected": qids, "notes": notes})


def _load(data: Any, split: str | None, opts: dict) -> Inputs:
    corpus = cq.corpus_order(data)
    if opts.get("queries"):
        ex = cq.load_examples(path=opts["queries"])
        has_labels = _has_field(opts["queries"], "relevant_doc_ids")
        qrels = cq.load_qrels(path=opts["queries"]) if has_labels else cq.load_qrels(data)
    else:
        ex = cq.load_examples(data)
        qrels = cq.load_qrels(data)
    if opts.get("qrels"):
        qrels = cq.load_qrels(path=opts["qrels"])
    return _inputs(qrels, ex["query_id"], corpus, opts["unlabelled"])


def _validate(run: Any, inputs: Inputs, opts: dict) -> ValidationReport:
    return validate_chunqiu(run, corpus=inputs.corpus, queries=inputs.extra["expected"], top_k=opts["top_k"])


def _measures(opts: dict) -> list:
    k = opts["top_k"]
    return parse_measures([f"nDCG@{k}", f"AP@{k}", f"R@{k}", "RR", f"Judged@{k}"])


def _per_query(measures: list, inputs: Inputs, report: ValidationReport, opts: dict):
    units = inputs.units()
    run = report.run[report.run["query_id"].isin(set(units))][["query_id", "doc_id", "score"]]
    if not report.valid or not len(units):  # an invalid batch is not evaluated: every value is 0
        run = run.iloc[0:0]
    long = long_per_query(measures, inputs.qrels, run, units=units, tie_break="run_order")
    long["value"] = long["value"].fillna(0.0)
    return long, None


def _reward(official: float, valid: bool, opts: dict) -> float:
    # ChunQiu has no piecewise mapping: the reward is the official score, gated
    return official if (valid and not opts["audit_failed"]) else 0.0


def _describe(score) -> dict:
    return {"queries": int(len(score.per_query)), "violations": [p.as_dict() for p in score.report.errors]}


def _demo(sample_root: Path) -> dict:
    return {"run": sample_root / "runs" / "chunqiu.jsonl", "data": sample_root}


CHUNQIU = register(Benchmark(
    name="chunqiu",
    title="ChunQiu",
    measures=_measures,
    load=_load,
    validate=_validate,
    per_query=_per_query,
    contract="chunqiu",
    default_split=None,
    invalid_scores_zero=True,
    cli=CliSpec(
        help="ChunQiu: strict batch contract, mean binary nDCG@10 (+ MAP@10, R@10, MRR, Judged@10)",
        options=(
            Option("queries", None, "queries JSONL {query_id, text[, relevant_doc_ids]} "
                   "(default: <data>/chunqiu/examples.jsonl)", data=True),
            Option("qrels", None, "labels JSONL with relevant_doc_ids (default: the queries' or examples' labels)",
                   data=True),
            Option("top_k", 10, "cutoff and maximum results per query (10)", type=int),
            Option("unlabelled", "error", "queries without relevant documents: error (default), score 0, or skip",
                   choices=("error", "zero", "skip"), data=True),
            Option("audit_failed", False, "the trajectory audit failed: reward 0", action="store_true"),
        ),
        run_arg="results",
        run_help="results JSONL: {query_id, results: [{doc_id, score}]} per line",
        demo=_demo,
    ),
    tables=TableSpec(
        summary_columns=("measure", "value", "role"),
        summary_names=summary_name,
        aggregation="mean over all queries of the batch (0 for an invalid batch)",
        notes=lambda inputs, report, long, opts: list(inputs.extra.get("notes", [])),
        describe=_describe,
    ),
    stats=StatsSpec(unit="query"),
    reward=RewardSpec(_reward),
    # a run file is not scored in blocks (reteco_measures.benchmarks.streaming): the reason
    stream_unit=lambda inputs, opts: "a ChunQiu batch is valid or invalid as a whole (every query exactly once; any violation scores 0), and its file is small (at most top_k results per query)",
))


def score_chunqiu(results: Any, *, qrels: pd.DataFrame, queries: Any, corpus: Any, k: int = 10,
                  audit_passed: bool = True, unlabelled: str = "error"):
    """Score a ChunQiu results batch against in-memory reference data; same as
    ``rm.benchmark("chunqiu").score(...)``, returns its `Score`
    (``.valid``, ``.official``, ``.reward``, ``.summary``, ``.per_query``, ``.report``).

    Args:
        results: results JSONL (path / text) or anything `validate_chunqiu` accepts.
        qrels: ``query_id, doc_id, relevance`` (binary; ``relevance >= 1`` is relevant).
        queries: the query ids of the batch: every one must be answered; the mean is over all.
        corpus: doc ids in corpus order (or a DataFrame with ``doc_id``).
        k: cutoff and maximum list length (10).
        audit_passed: False gates the reward to 0 (a failed trajectory audit).
        unlabelled: queries without a relevant document: ``'error'`` (default), ``'zero'``, ``'skip'``.
    """
    inputs = _inputs(qrels, queries, corpus, unlabelled)
    return CHUNQIU.score(results, inputs=inputs, top_k=k, audit_failed=not audit_passed, unlabelled=unlabelled)
