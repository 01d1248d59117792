"""``reteco-measures score reteco-1a|reteco-1b RUN --data DIR --split dev``: RETECO Track 1 (TEMPO).

The official-style Track 1 scorer (seed ``000``, "Track 01 scoring"):

1. apply the ``reteco`` run contract to the TREC run: duplicates removed after their first
   occurrence, rows of unknown topics discarded, documents not in the corpus discarded
   (``corpus_scope='domain'``, default: the corpus of the topic's own domain; ``'all'``: any
   loaded domain), missing topics score 0, trec_eval ordering (the rank column is ignored);
2. **1a** — official ``nDCG@10``: binary nDCG@10 per query (pytrec_eval ``ndcg_cut_10``), mean
   over the queries of the qrels. Diagnostics: ``TP@10``, ``TR@10``, ``TC@10``, ``nDCG|FC@10``,
   MAP@10 (``AP@10``), ``R@10``, MRR (``RR``);
3. **1b** — official ``StepNDCG@10``: binary nDCG@10 per step topic, averaged over the supplied
   steps of each query, then over queries. The diagnostics are computed per step topic (a step's
   verdicts are its step qrels, or frozen labels keyed by step id; its one required period is
   the step itself, covered iff its own top 10 holds one of its gold documents) and averaged the
   same way as the official measure: per query over its steps, then over queries;
4. a per-domain table with ``(macro)`` (mean of the domain means, as the TEMPO tables) and
   ``(all)`` (mean over queries, as the RETECO evaluation page) rows.

Temporal labels: by default the starter-kit oracle (qrels verdicts; steps as required periods);
``--labels FILE`` uses frozen judge labels (JSONL ``{"query_id", "doc_id", "temporal",
"periods"}``) with the required periods of the topics (``--periods guidance|steps``).

Python use: :func:`score_reteco_1a`, :func:`score_reteco_1b`.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..api import evaluate, iter_calc, measure_label, parse_measures
from ..cli.report import OUTPUT_FORMATS, format_frame, frame_records, print_run_checks
from ..contracts.base import ValidationReport
from ..contracts.reteco import load_run_rows, validate_reteco
from ..datasets.reteco_tempo import TempoData, load_tempo
from ..errors import Problem
from ..kernels.stepwise import step_parents
from ..side import load_labels
from . import preset

__all__ = ["score_reteco_1a", "score_reteco_1b", "Track1Score", "DISPLAY_NAMES", "diagnostics"]

#: ir_measures / reteco names -> names printed in the RETECO evaluation plan
DISPLAY_NAMES = {
    "TemporalPrecision": "TP",
    "TemporalRelevance": "TR",
    "TemporalCoverage": "TC",
    "AP": "MAP",
    "RR": "MRR",
}

CorpusScope = Literal["domain", "all"]


def diagnostics(k: int = 10) -> list:
    """The seed's Track 1 diagnostics at cutoff ``k``: TP, TR, TC, nDCG|FC, MAP, R, MRR."""
    return parse_measures([f"TP@{k}", f"TR@{k}", f"TC@{k}", f"nDCG_FC@{k}", f"AP@{k}", f"R@{k}", "RR"])


def _label(measure) -> str:
    text = measure_label(measure)
    for name, short in DISPLAY_NAMES.items():
        if text == name or text.startswith(name + "@") or text.startswith(name + "("):
            return short + text[len(name):]
    return text


@dataclass
class Track1Score:
    """Result of :func:`score_reteco_1a` / :func:`score_reteco_1b`.

    Attributes:
        official: the official value (1a: mean nDCG@k over queries; 1b: StepNDCG@k).
        scores: ``measure, value, n, role`` — official + diagnostics, means over queries.
        by_domain: a row per domain plus ``(macro)`` and ``(all)``; ``n`` queries + a column per measure.
        per_query: ``query_id, domain`` (+ ``steps`` for 1b) + a column per measure.
        report: the ``reteco`` contract's report (``.run`` is the cleaned run that was scored).
        n_queries: evaluated queries (queries with qrels; 1b: queries with step qrels).
        n_steps: evaluated step topics (1b), else 0.
        labels: ``'oracle'`` or the frozen labels' source.
        notes: remarks on the data (queries without relevant documents, without periods, ...).
    """

    official: float
    scores: pd.DataFrame
    by_domain: pd.DataFrame
    per_query: pd.DataFrame
    report: ValidationReport
    n_queries: int
    n_steps: int = 0
    labels: str = "oracle"
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------
# validation


def _validate(run: Any, data: TempoData, corpus_scope: CorpusScope, k: int) -> ValidationReport:
    if corpus_scope not in ("domain", "all"):
        raise ValueError(f"corpus_scope must be 'domain' or 'all', not {corpus_scope!r}")
    frame, read_problems, path = load_run_rows(run, "trec")
    kind = "step" if data.steps else "query"
    topics = data.topics[data.topics["kind"] == kind]
    report = validate_reteco(frame, corpus=data.corpus[["doc_id"]], queries=topics[["query_id", "domain"]], top_k=k)
    problems = list(read_problems) + [replace(p, path=path) if p.path is None else p for p in report.errors]
    cleaned = report.run
    if corpus_scope == "domain" and len(cleaned):
        dom = cleaned["query_id"].map(topics.drop_duplicates("query_id").set_index("query_id")["domain"])
        keys = pd.MultiIndex.from_arrays([data.corpus["domain"].astype(str), data.corpus["doc_id"].astype(str)])
        ok = pd.MultiIndex.from_arrays([dom.astype(str), cleaned["doc_id"].astype(str)]).isin(keys)
        for row, d in zip(cleaned[~ok].itertuples(index=False), dom[~ok].tolist(), strict=True):
            problems.append(Problem(f"document {row.doc_id} is not in the {d} corpus; discarded",
                                    line=int(row.line) or None, query_id=row.query_id, path=path,
                                    kind="unknown_doc", doc_id=row.doc_id))
        cleaned = cleaned[ok].reset_index(drop=True)
    report.errors = problems
    report.run = cleaned
    return report


def _notes(qrels: pd.DataFrame, topics: pd.DataFrame, kind: str) -> list[str]:
    notes = []
    no_rel = int((qrels.groupby("query_id")["relevance"].max() < 1).sum())
    if no_rel:
        notes.append(f"{no_rel} {kind} topic(s) of the qrels have no relevant document (they score 0)")
    expected = set(topics.loc[topics["kind"] == kind, "query_id"])
    unjudged = expected - set(qrels["query_id"])
    if unjudged:
        notes.append(f"{len(unjudged)} {kind} topic(s) have no qrels and are not evaluated")
    return notes


def _wide(tidy: pd.DataFrame, labels: list[str], names: dict[str, str], first_n: str) -> pd.DataFrame:
    order = list(dict.fromkeys(tidy["domain"].tolist()))
    wide = tidy.pivot_table(index="domain", columns="measure", values="value", aggfunc="first", dropna=False)
    wide = wide.reindex(index=order, columns=labels).rename(columns=names)
    n = tidy[tidy["measure"] == first_n].set_index("domain")["n"].reindex(order)
    wide.insert(0, "n", n.to_numpy(dtype=np.int64))
    return wide.reset_index()


def _scores(by_domain: pd.DataFrame, labels: list[str], names: dict[str, str]) -> pd.DataFrame:
    overall = by_domain[by_domain["domain"] == "(all)"].set_index("measure")
    rows = [{"measure": names[lab], "value": float(overall.loc[lab, "value"]), "n": int(overall.loc[lab, "n"]),
             "role": "official" if i == 0 else "diagnostic"} for i, lab in enumerate(labels)]
    return pd.DataFrame(rows, columns=["measure", "value", "n", "role"])


def _label_notes(labels: pd.DataFrame | None, topics: pd.DataFrame, qrels: pd.DataFrame) -> list[str]:
    """Warnings about frozen labels that cannot be what the user meant (wrong ids, wrong periods)."""
    if labels is None:
        return []
    notes = []
    evaluated = set(qrels["query_id"].astype(str))
    unknown = int((~labels["query_id"].isin(evaluated)).sum())
    if unknown:
        notes.append(f"{unknown} label row(s) name topics that are not evaluated (ignored)")
    used = labels[labels["query_id"].isin(evaluated)]
    if len(labels) and used.empty:
        notes.append("no label row names an evaluated topic: every verdict is 0 (wrong labels file or split?)")
    required = topics.drop_duplicates("query_id").set_index("query_id")["required_periods"]
    pairs = used[["query_id", "periods"]].explode("periods").dropna(subset=["periods"])
    if len(pairs):
        req = pairs["query_id"].map(required)
        known = [p in r if isinstance(r, (list, tuple)) else False for p, r in zip(pairs["periods"], req, strict=True)]
        if not any(known):
            notes.append("none of the labels' periods is a required period of its topic, so TC counts nothing "
                         "(check --periods guidance|steps against the labels)")
    return notes


def _labels_name(labels: Any) -> str:
    if labels is None:
        return "oracle"
    return str(labels) if not isinstance(labels, pd.DataFrame) else "labels table"


# ------------------------------------------------------------------------------------------------
# 1a


def score_reteco_1a(
    run: Any,
    data: TempoData,
    *,
    k: int = 10,
    labels: Any = None,
    corpus_scope: CorpusScope = "domain",
) -> Track1Score:
    """Score a sub-track 1a run officially.

    Args:
        run: TREC run (path / text) or a DataFrame ``query_id, doc_id, score``.
        data: the split, 1a view (:func:`reteco_measures.datasets.reteco_tempo.load_tempo`).
        k: cutoff of every measure (10).
        labels: frozen temporal labels (DataFrame or JSONL path); None = starter-kit oracle.
        corpus_scope: documents must be in the query's domain corpus (``'domain'``) or any.
    """
    if data.steps:
        raise ValueError("score_reteco_1a needs the 1a view of the data (load_tempo(..., steps=False))")
    report = _validate(run, data, corpus_scope, k)
    measures = parse_measures([f"nDCG@{k}", *diagnostics(k)])
    labs = [measure_label(m) for m in measures]
    names = {lab: _label(m) for lab, m in zip(labs, measures, strict=True)}
    qrels = data.qrels[["query_id", "doc_id", "relevance"]]
    run_df = report.run[["query_id", "doc_id", "score"]]
    label_frame = load_labels(labels) if labels is not None else None
    tidy = evaluate(measures, qrels, run_df, topics=data.topics, labels=label_frame, by="domain")
    per = pd.DataFrame([(m.query_id, names[measure_label(m.measure)], float(m.value))
                        for m in iter_calc(measures, qrels, run_df, topics=data.topics, labels=label_frame)],
                       columns=["query_id", "measure", "value"])
    per_query = per.pivot_table(index="query_id", columns="measure", values="value", aggfunc="first", dropna=False)
    per_query = per_query.reindex(columns=[names[lab] for lab in labs]).reset_index()
    meta = data.topics.drop_duplicates("query_id").set_index("query_id")["domain"]
    per_query.insert(1, "domain", per_query["query_id"].map(meta).to_numpy())
    scores = _scores(tidy, labs, names)
    notes = _notes(data.qrels, data.topics, "query") + _label_notes(label_frame, data.topics, qrels)
    tc = per_query[names[labs[3]]]
    if tc.isna().any():
        notes.append(f"{int(tc.isna().sum())} query(ies) have no required period: not scored by TC / nDCG|FC")
    return Track1Score(official=float(scores["value"].iloc[0]), scores=scores,
                       by_domain=_wide(tidy, labs, names, labs[0]),
                       per_query=per_query.sort_values(["domain", "query_id"], kind="stable").reset_index(drop=True),
                       report=report, n_queries=int(qrels["query_id"].nunique()), labels=_labels_name(labels),
                       notes=notes)


# ------------------------------------------------------------------------------------------------
# 1b


def _group_means(per_query: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Tidy ``domain, measure, value, n`` from per-query values: domain means, ``(macro)``, ``(all)``
    (NaN = not defined, skipped)."""
    rows = []
    for col in columns:
        values = per_query[["domain", col]]
        means = []
        for dom, part in values.groupby("domain", sort=True):
            v = part[col].to_numpy(dtype=np.float64)
            ok = ~np.isnan(v)
            mean = float(v[ok].mean()) if ok.any() else float("nan")
            rows.append({"domain": dom, "measure": col, "value": mean, "n": int(ok.sum())})
            means.append(mean)
        gm = np.array(means, dtype=np.float64)
        rows.append({"domain": "(macro)", "measure": col, "value": float(np.nanmean(gm)) if (~np.isnan(gm)).any()
                     else float("nan"), "n": int((~np.isnan(gm)).sum())})
        v = values[col].to_numpy(dtype=np.float64)
        ok = ~np.isnan(v)
        rows.append({"domain": "(all)", "measure": col, "value": float(v[ok].mean()) if ok.any() else float("nan"),
                     "n": int(ok.sum())})
    return pd.DataFrame(rows, columns=["domain", "measure", "value", "n"])


def score_reteco_1b(
    run: Any,
    data: TempoData,
    *,
    k: int = 10,
    labels: Any = None,
    corpus_scope: CorpusScope = "domain",
) -> Track1Score:
    """Score a sub-track 1b (step-wise) run officially.

    Args as :func:`score_reteco_1a`; ``data`` is the 1b view (``load_tempo(..., steps=True)``) and
    the run's topics are step ids (``<query_id>_step<n>``). Frozen labels, if given, are keyed by
    step id.
    """
    if not data.steps:
        raise ValueError("score_reteco_1b needs the 1b view of the data (load_tempo(..., steps=True))")
    report = _validate(run, data, corpus_scope, k)
    qrels = data.qrels[["query_id", "doc_id", "relevance"]]
    run_df = report.run[["query_id", "doc_id", "score"]]
    label_frame = load_labels(labels) if labels is not None else None
    official = parse_measures([f"StepNDCG@{k}"])[0]
    diag = diagnostics(k)
    names = {measure_label(m): _label(m) for m in [official, *diag]}
    columns = [names[measure_label(m)] for m in [official, *diag]]

    # official: the StepNDCG measure itself (per query, then by domain)
    off_tidy = evaluate([official], qrels, run_df, topics=data.topics, by="domain")
    off_tidy["measure"] = columns[0]
    off_per = {m.query_id: float(m.value) for m in iter_calc([official], qrels, run_df, topics=data.topics)}

    # diagnostics per step, averaged per query over its supplied steps
    steps = pd.DataFrame([(m.query_id, names[measure_label(m.measure)], float(m.value))
                          for m in iter_calc(diag, qrels, run_df, topics=data.topics, labels=label_frame)],
                         columns=["step_id", "measure", "value"])
    parents, _ = step_parents(pd.unique(qrels["query_id"]), data.topics)
    steps["query_id"] = steps["step_id"].map(parents)
    step_means = steps.pivot_table(index="query_id", columns="measure", values="value", aggfunc="mean",
                                   dropna=False)
    n_steps = parents.groupby(parents.to_numpy()).size()
    per_query = pd.DataFrame({"query_id": list(off_per), columns[0]: list(off_per.values())})
    per_query = per_query.join(step_means.reindex(columns=columns[1:]), on="query_id")
    meta = data.topics.drop_duplicates("query_id").set_index("query_id")["domain"]
    per_query.insert(1, "domain", per_query["query_id"].map(meta).fillna("(none)").to_numpy())
    per_query.insert(2, "steps", per_query["query_id"].map(n_steps).fillna(0).astype(int).to_numpy())

    tidy = pd.concat([off_tidy, _group_means(per_query, columns[1:])], ignore_index=True)
    order = {c: i for i, c in enumerate(columns)}
    tidy = tidy.sort_values("measure", key=lambda s: s.map(order), kind="stable")
    by_domain = _wide(tidy, columns, {c: c for c in columns}, columns[0])
    scores = _scores(tidy, columns, {c: c for c in columns})
    notes = _notes(data.qrels, data.topics, "step") + _label_notes(label_frame, data.topics, qrels)
    return Track1Score(official=float(scores["value"].iloc[0]), scores=scores, by_domain=by_domain,
                       per_query=per_query.sort_values(["domain", "query_id"], kind="stable").reset_index(drop=True),
                       report=report, n_queries=len(per_query), n_steps=int(qrels["query_id"].nunique()),
                       labels=_labels_name(labels), notes=notes)


# ------------------------------------------------------------------------------------------------
# command line


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="TREC run: query_id Q0 doc_id rank score run_id")
    p.add_argument("--data", help="data root holding reteco/track1_tempo/ (default: $RETECO_DATA)")
    p.add_argument("--split", default="dev", help="split: train | dev (default dev)")
    p.add_argument("--domain", action="append", help="score only this domain (repeatable; default: all present)")
    p.add_argument("--labels", help="frozen temporal labels JSONL {query_id, doc_id, temporal, periods} "
                                    "(default: the starter-kit oracle: qrels verdicts, steps as periods)")
    p.add_argument("--periods", default="guidance", choices=["guidance", "steps"],
                   help="required periods with --labels: guidance key_time_anchors where given (default) or step ids")
    p.add_argument("--k", type=int, default=10, help="cutoff of every measure (10)")
    p.add_argument("--corpus-scope", default="domain", choices=["domain", "all"],
                   help="documents must belong to the topic's domain corpus (default) or any loaded domain")
    p.add_argument("--per-query", action="store_true", help="also print per-query values")
    p.add_argument("--limit", type=int, default=20, help="problems listed in table output")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.add_argument("--places", type=int, default=4)



def _print(result: Track1Score, data: TempoData, args: argparse.Namespace, benchmark: str) -> int:
    report = result.report
    if args.format == "json":
        out = {
            "benchmark": benchmark,
            "split": args.split,
            "domains": data.domains,
            "queries": result.n_queries,
            "steps": result.n_steps if data.steps else None,
            "labels": result.labels,
            "official": {"measure": result.scores["measure"].iloc[0], "value": result.official,
                         "aggregation": "mean over queries" + (" of the mean over their steps" if data.steps else "")},
            "scores": frame_records(result.scores),
            "by_domain": frame_records(result.by_domain),
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
        unit = f"{result.n_queries} queries, {result.n_steps} steps" if data.steps else f"{result.n_queries} queries"
        print(f"RETECO {benchmark[-2:]} (TEMPO) - split {args.split}, {len(data.domains)} domain(s), {unit}; "
              f"temporal labels: {result.labels}")
    print(format_frame(result.scores, args.format, args.places))
    print()
    print(format_frame(result.by_domain, args.format, args.places))
    if args.per_query:
        print()
        print(format_frame(result.per_query, args.format, args.places))
    print_run_checks(report, table=table, limit=args.limit, notes=result.notes, data_problems=data.problems)
    return 0


def _demo_1a(sample_root: Path) -> list[str]:
    runs = sample_root / "runs"
    return [str(runs / "reteco_track1a_dev.txt"), "--data", str(sample_root), "--split", "dev",
            "--labels", str(runs / "reteco_track1a_labels_dev.jsonl")]


def _demo_1b(sample_root: Path) -> list[str]:
    return [str(sample_root / "runs" / "reteco_track1b_dev.txt"), "--data", str(sample_root), "--split", "dev"]


@preset("reteco-1a", "RETECO Track 1a (TEMPO): query-level nDCG@10 (+ TP, TR, TC, nDCG|FC, MAP@10, R@10, MRR "
        "per domain)", _configure, demo=_demo_1a)
def run_reteco_1a(args: argparse.Namespace) -> int:
    data = load_tempo(args.split, steps=False, root=args.data, domains=args.domain, periods=args.periods)
    result = score_reteco_1a(args.run, data, k=args.k, labels=args.labels, corpus_scope=args.corpus_scope)
    return _print(result, data, args, "reteco-1a")


@preset("reteco-1b", "RETECO Track 1b (TEMPO): step-wise nDCG@10 averaged per query (+ step diagnostics "
        "per domain)", _configure, demo=_demo_1b)
def run_reteco_1b(args: argparse.Namespace) -> int:
    data = load_tempo(args.split, steps=True, root=args.data, domains=args.domain, periods=args.periods)
    result = score_reteco_1b(args.run, data, k=args.k, labels=args.labels, corpus_scope=args.corpus_scope)
    return _print(result, data, args, "reteco-1b")
