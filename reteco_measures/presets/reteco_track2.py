"""``reteco-measures score reteco-2a RUN --data DIR --split dev``: RETECO sub-track 2a (RECOR).

The official-style Track 2 retrieval scorer (seed ``000``, "Track 02 scoring"):

1. read the TREC run and bring its topic ids to the split's ids (``#turn`` ids normalised
   and reported; plain release ids mapped to the all-domains ``<domain>/…`` ids where
   unambiguous, ambiguous ones reported and discarded: see
   :func:`reteco_measures.datasets.reteco_recor.map_run_query_ids`);
2. apply the ``reteco`` contract: duplicates removed after their first occurrence, rows of
   unknown turns discarded, documents not in the corpus discarded (``corpus_scope='domain'``,
   default: the corpus of the turn's own domain; ``'all'``: any domain's corpus), missing turns
   score 0; ordering is trec_eval's;
3. official score: ``TurnNDCG@10`` — binary nDCG@10 per target turn, macro-averaged over the
   turns of the qrels (``average='conversation'`` gives the RECOR-ablation mean over
   conversations instead);
4. diagnostics from ir_measures: MAP@10 (``AP@10``), ``R@10``, MRR (``RR``), each a mean over
   the same turns; per-domain and per-depth (T1..T4, T5+) tables with ``(macro)`` (mean of the
   group means) and ``(all)`` (mean over turns) rows.

Python use: :func:`score_reteco_2a`.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..api import depth_group, evaluate, iter_calc, measure_label, parse_measures
from ..cli.report import OUTPUT_FORMATS, format_frame, frame_records, print_run_checks
from ..contracts.base import ValidationReport
from ..contracts.reteco import load_run_rows, validate_reteco
from ..datasets.reteco_recor import HashPolicy, RecorData, load_recor, map_run_query_ids
from ..errors import Problem
from ..measures.turn_ndcg import TurnNDCG
from . import preset

__all__ = ["score_reteco_2a", "Track2Score", "DISPLAY_NAMES"]

#: ir_measures names -> names printed in the RETECO evaluation plan
DISPLAY_NAMES = {"AP@10": "MAP@10", "RR": "MRR"}


@dataclass
class Track2Score:
    """Result of :func:`score_reteco_2a`.

    Attributes:
        official: the official value (mean ``TurnNDCG@k`` over the qrels' turns).
        scores: ``measure, value, n, role`` (official + diagnostics).
        by_domain: one row per domain plus ``(macro)`` and ``(all)``; a column per measure + ``n``.
        by_depth: the same by conversation depth (T1, T2, T3, T4, T5+).
        per_query: ``query_id, domain, conversation_id, turn, depth`` + one column per measure.
        report: the ``reteco`` contract's report (with the id-mapping and domain-corpus problems).
        n_turns: number of evaluated turns (turns with qrels).
    """

    official: float
    scores: pd.DataFrame
    by_domain: pd.DataFrame
    by_depth: pd.DataFrame
    per_query: pd.DataFrame
    report: ValidationReport
    n_turns: int
    notes: list[str] = field(default_factory=list)


def _label(measure) -> str:
    text = measure_label(measure)
    return DISPLAY_NAMES.get(text, text)


def _domain_corpus_check(
    cleaned: pd.DataFrame, topics: pd.DataFrame, corpus: pd.DataFrame, path: str | None
) -> tuple[pd.DataFrame, list[Problem]]:
    """Discard rows whose document is not in the corpus of the turn's own domain."""
    if not len(cleaned):
        return cleaned, []
    dom = cleaned["query_id"].map(topics.drop_duplicates("query_id").set_index("query_id")["domain"])
    keys = pd.MultiIndex.from_arrays([corpus["domain"].astype(str), corpus["doc_id"].astype(str)])
    ok = pd.MultiIndex.from_arrays([dom.astype(str), cleaned["doc_id"].astype(str)]).isin(keys)
    problems = [
        Problem(
            f"unknown document {row.doc_id} discarded (not in the {d} corpus)",
            line=int(row.line) or None,
            query_id=row.query_id,
            path=path,
            kind="unknown_doc",
            doc_id=row.doc_id,
        )
        for row, d in zip(cleaned[~ok].itertuples(index=False), dom[~ok].tolist(), strict=True)
    ]
    return cleaned[ok].reset_index(drop=True), problems


def score_reteco_2a(
    run: Any,
    data: RecorData,
    *,
    k: int = 10,
    average: Literal["turn", "conversation"] = "turn",
    corpus_scope: Literal["domain", "all"] = "domain",
    hash_turn_ids: HashPolicy = "normalise",
) -> Track2Score:
    """Score a Track 2a run officially.

    Args:
        run: TREC run (path / text) or a DataFrame ``query_id, doc_id, score``.
        data: the split (:func:`reteco_measures.datasets.reteco_recor.load_recor`).
        k: cutoff of every measure (10).
        average: ``'turn'`` (official macro over turns) or ``'conversation'``.
        corpus_scope: documents must be in the turn's domain corpus (``'domain'``) or any (``'all'``).
        hash_turn_ids: ``'normalise'`` / ``'reject'`` run ids written ``<conversation_id>#turn<t>``.
    """
    if corpus_scope not in ("domain", "all"):
        raise ValueError(f"corpus_scope must be 'domain' or 'all', not {corpus_scope!r}")
    frame, problems, path = load_run_rows(run, "trec")
    problems = list(problems)
    frame, id_problems = map_run_query_ids(frame, data.topics, hash_turn_ids=hash_turn_ids, path=path)
    problems += id_problems
    queries = data.topics[["query_id", "domain"]]
    corpus = data.corpus[["doc_id", "domain"]] if corpus_scope == "all" else None
    report = validate_reteco(frame, corpus=corpus, queries=queries, top_k=k)
    contract_problems = [replace(p, path=path) if p.path is None else p for p in report.errors]
    cleaned = report.run
    if corpus_scope == "domain":
        cleaned, dom_problems = _domain_corpus_check(cleaned, data.topics, data.corpus, path)
        contract_problems += dom_problems
    report.errors = problems + contract_problems
    report.run = cleaned

    official = TurnNDCG @ k if average == "turn" else TurnNDCG(average=average) @ k
    measures = parse_measures([official, f"AP@{k}", f"R@{k}", "RR"])
    labels = [measure_label(m) for m in measures]
    names = {measure_label(m): _label(m) for m in measures}
    run_df = cleaned[["query_id", "doc_id", "score"]]
    qrels = data.qrels[["query_id", "doc_id", "relevance"]]
    topics = data.topics
    by_domain = evaluate(measures, qrels, run_df, topics=topics, by="domain")
    by_depth = evaluate(measures, qrels, run_df, topics=topics, by="depth")
    overall = by_domain[by_domain["domain"] == "(all)"].set_index("measure")
    rows = [
        {
            "measure": names[lab],
            "value": float(overall.loc[lab, "value"]),
            "n": int(overall.loc[lab, "n"]),
            "role": "official" if i == 0 else "diagnostic",
        }
        for i, lab in enumerate(labels)
    ]
    scores = pd.DataFrame(rows, columns=["measure", "value", "n", "role"])

    per = pd.DataFrame(
        [
            (m.query_id, names[measure_label(m.measure)], float(m.value))
            for m in iter_calc(measures, qrels, run_df, topics=topics)
        ],
        columns=["query_id", "measure", "value"],
    )
    per_query = per.pivot_table(index="query_id", columns="measure", values="value", aggfunc="first")
    per_query = per_query.reindex(columns=[names[lab] for lab in labels]).reset_index()
    meta = topics.drop_duplicates("query_id").set_index("query_id")[["domain", "conversation_id", "turn"]]
    per_query = per_query.join(meta, on="query_id")
    per_query["depth"] = [depth_group(t) for t in per_query["turn"]]
    per_query = per_query[
        ["query_id", "domain", "conversation_id", "turn", "depth", *[names[lab] for lab in labels]]
    ]

    notes = []
    no_rel = int((qrels.groupby("query_id")["relevance"].max() < 1).sum())
    if no_rel:
        notes.append(f"{no_rel} turn(s) of the qrels have no relevant document (they score 0)")
    unjudged = sorted(set(topics["query_id"]) - set(qrels["query_id"]))
    if unjudged:
        notes.append(f"{len(unjudged)} turn(s) of the topics have no qrels and are not evaluated")
    return Track2Score(
        official=float(scores["value"].iloc[0]),
        scores=scores,
        by_domain=_wide(by_domain, "domain", labels, names),
        by_depth=_wide(by_depth, "depth", labels, names),
        per_query=per_query.sort_values(["domain", "conversation_id", "turn"], kind="stable").reset_index(
            drop=True
        ),
        report=report,
        n_turns=int(qrels["query_id"].nunique()),
        notes=notes,
    )


def _wide(tidy: pd.DataFrame, col: str, labels: list[str], names: dict[str, str]) -> pd.DataFrame:
    """Tidy ``[col, measure, value, n]`` → one row per group, a column per measure, ``n`` turns."""
    order = list(dict.fromkeys(tidy[col].tolist()))
    wide = tidy.pivot_table(index=col, columns="measure", values="value", aggfunc="first", dropna=False)
    wide = wide.reindex(index=order, columns=labels).rename(columns=names)
    n = tidy[tidy["measure"] == labels[0]].set_index(col)["n"].reindex(order)
    wide.insert(0, "n", n.to_numpy(dtype=np.int64))
    return wide.reset_index()


# ------------------------------------------------------------------------------------------------
# command line


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="TREC run: query_id Q0 doc_id rank score run_id")
    p.add_argument("--data", help="data root holding reteco/track2_recor/ (default: $RETECO_DATA)")
    p.add_argument("--split", default="dev", help="split: train | dev (default dev)")
    p.add_argument(
        "--domain", action="append", help="score only this domain (repeatable; default: all present)"
    )
    p.add_argument("--k", type=int, default=10, help="cutoff of every measure (10)")
    p.add_argument(
        "--average",
        default="turn",
        choices=["turn", "conversation"],
        help="TurnNDCG aggregation: macro over turns (official) or over conversations",
    )
    p.add_argument(
        "--corpus-scope",
        default="domain",
        choices=["domain", "all"],
        help="documents must belong to the turn's domain corpus (default) or any domain",
    )
    p.add_argument(
        "--hash-turn-ids",
        default="normalise",
        choices=["normalise", "reject"],
        help="run ids written '<conv>#turn<t>': read as '<conv>_turn_<t>' (default) or reject",
    )
    p.add_argument("--per-query", action="store_true", help="also print per-turn values")
    p.add_argument("--limit", type=int, default=20, help="problems listed in table output")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.add_argument("--places", type=int, default=4)


def _demo(sample_root: Path) -> list[str]:
    return [str(sample_root / "runs" / "reteco_track2.txt"), "--data", str(sample_root), "--split", "dev"]



@preset(
    "reteco-2a",
    "RETECO Track 2a (RECOR): turn-level nDCG@10 (+ MAP@10, R@10, MRR, per domain and per depth)",
    _configure,
    demo=_demo,
)
def run_reteco_2a(args: argparse.Namespace) -> int:
    data = load_recor(args.split, root=args.data, domains=args.domain, hash_turn_ids=args.hash_turn_ids)
    result = score_reteco_2a(
        args.run,
        data,
        k=args.k,
        average=args.average,
        corpus_scope=args.corpus_scope,
        hash_turn_ids=args.hash_turn_ids,
    )
    report = result.report
    if args.format == "json":
        out = {
            "benchmark": "reteco-2a",
            "split": args.split,
            "domains": data.domains,
            "turns": result.n_turns,
            "official": {"measure": result.scores["measure"].iloc[0], "value": result.official},
            "scores": frame_records(result.scores),
            "by_domain": frame_records(result.by_domain),
            "by_depth": frame_records(result.by_depth),
            "validation": report.as_dict(),
            "data_problems": [p.as_dict() for p in data.problems],
            "notes": result.notes,
        }
        if args.per_query:
            out["per_query"] = frame_records(result.per_query)
        print(json.dumps(out, indent=2, ensure_ascii=False, default=str))
        return 0
    table = args.format == "table"
    if table:
        print(
            f"RETECO 2a (RECOR) - split {args.split}, {len(data.domains)} domain(s), {result.n_turns} turns"
        )
    print(format_frame(result.scores, args.format, args.places))
    print()
    print(format_frame(result.by_domain, args.format, args.places))
    print()
    print(format_frame(result.by_depth, args.format, args.places))
    if args.per_query:
        print()
        print(format_frame(result.per_query, args.format, args.places))
    print_run_checks(report, table=table, limit=args.limit, notes=result.notes, data_problems=data.problems)
    return 0
