"""RETECO Track 1 (TEMPO): ``reteco-1a`` (query level) and ``reteco-1b`` (step-wise).

The official-style Track 1 scorer of the RETECO evaluation plan ("Track 01 scoring"):

1. the ``reteco`` run contract: duplicates removed after their first occurrence, rows of unknown
   topics discarded, documents not in the corpus discarded (``corpus_scope='domain'``, default:
   the corpus of the topic's own domain; ``'all'``: any loaded domain), missing topics score 0,
   trec_eval ordering (the rank column is ignored);
2. **1a** — official ``nDCG@10``: binary nDCG@10 per query (pytrec_eval ``ndcg_cut_10``), mean
   over the queries of the qrels. Diagnostics: ``TP@10``, ``TR@10``, ``TC@10``, ``nDCG|FC@10``,
   MAP@10 (``AP@10``), ``R@10``, MRR (``RR``);
3. **1b** — official ``StepNDCG@10``: binary nDCG@10 per step topic, averaged over the supplied
   steps of each query, then over queries. The diagnostics are computed per step topic (a step's
   verdicts are its step qrels, or frozen labels keyed by step id; its one required period is the
   step itself, covered iff its own top 10 holds one of its gold documents) and averaged the same
   way: per query over its steps, then over queries. The statistical unit is the query (after
   step averaging);
4. a per-domain table with ``(macro)`` (mean of the domain means, as the TEMPO paper's tables)
   and ``(all)`` (mean over queries, as the RETECO evaluation page) rows.

Temporal labels: by default the starter-kit oracle (qrels verdicts; steps as required periods);
``labels=`` uses frozen judge labels (JSONL ``{"query_id", "doc_id", "temporal", "periods"}``)
with the required periods of the topics (``periods='guidance'|'steps'``).

Reference data: the release layout under ``data`` (``reteco/track1_tempo/<domain>/...``), a
folder holding the organisers' public sample files (``examples.jsonl``, ``steps.jsonl``,
``documents.jsonl``, ``qrels.txt``), or explicit files (``qrels=``, ``topics=``, ``corpus=``,
``steps=``).

Python::

    import reteco_measures as rm
    score = rm.benchmark("reteco-1a").score("run.txt", data="/data", split="dev")
    score.summary, score.by_group["by_domain"], score.per_query, score.report
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ...contracts.base import ValidationReport
from ...datasets.base import MissingDataError
from ...kernels.stepwise import step_parents
from ...measures.names import measure_label, parse_measures
from ...side import load_labels
from ..declaration import Benchmark, CliSpec, Grouping, Inputs, Option, StatsSpec, TableSpec
from ..registry import register
from ..reteco.contract import ranked_by_contract
from ..reteco.rules import (
    COMMON_OPTIONS,
    FILE_OPTIONS,
    KIT_AGGREGATION,
    RULES_OPTION,
    RULES_TEXT,
    TIE_BREAK_OPTION,
    baseline_note,
    explicit_file,
    gold_notes,
    kit_macro,
    kit_qrels,
    missing_release,
    read_run_any,
    validate_reteco_domains,
    whole_corpus_topics,
)
from ..scoring import aggregate, long_per_query
from .data import TempoData, load_tempo, load_tempo_files, map_duplicates

__all__ = ["RETECO_1A", "RETECO_1B", "score_reteco_1a", "score_reteco_1b", "DISPLAY_NAMES", "diagnostics"]

#: ir_measures / reteco names -> names printed in the RETECO evaluation plan
DISPLAY_NAMES = {
    "TemporalPrecision": "TP",
    "TemporalRelevance": "TR",
    "TemporalCoverage": "TC",
    "AP": "MAP",
    "RR": "MRR",
}


def diagnostics(k: int = 10, reference: str = "reteco") -> list:
    """The Track 1 diagnostics at cutoff ``k``: TP, TR, TC, nDCG|FC, MAP, R, MRR, Judged (the share
    of the top ``k`` the qrels judge, ir_measures' ``Judged@k``).

    ``reference='tempo'`` gives TP, TR, TC and nDCG|FC the rules of TEMPO's own
    ``temporal_metrics.py`` (see the Track 1 page for every difference from the default)."""
    temporal = ["TP", "TR", "TC", "nDCG_FC"]
    if reference != "reteco":
        temporal = [f"{m}(reference='{reference}')" for m in temporal]
    return parse_measures([*(f"{m}@{k}" for m in temporal), f"AP@{k}", f"R@{k}", "RR", f"Judged@{k}"])


def display(measure: Any) -> str:
    """The printed name of a Track 1 measure (``TemporalPrecision@10`` → ``TP@10``, ``AP@10`` → ``MAP@10``)."""
    text = measure_label(measure)
    for name, short in DISPLAY_NAMES.items():
        if text == name or text.startswith(name + "@") or text.startswith(name + "("):
            return short + text[len(name):]
    return text


# ------------------------------------------------------------------------------------------------
# reference data


def _organiser_folder(data: Any) -> Path | None:
    """``data`` when it is a folder holding the organisers' sample files directly."""
    if data is None:
        return None
    p = Path(data)
    return p if (p / "examples.jsonl").is_file() and (p / "qrels.txt").is_file() else None


def _explicit(opts: dict, steps: bool, folder: Path | None) -> TempoData:
    """Reference data from explicit files (or an organiser-sample folder), read by
    `load_tempo_files`: every query's domain is the
    folder part of its gold document ids (``bitcoin/…``), as in the organisers' sample."""
    topics_path = explicit_file(opts, "topics", folder, "examples.jsonl")
    qrels_path = explicit_file(opts, "qrels", folder, "qrels.txt")
    corpus_path = explicit_file(opts, "corpus", folder, "documents.jsonl")
    steps_path = explicit_file(opts, "steps", folder, "steps.jsonl")
    if qrels_path is None:
        raise ValueError("reference qrels needed: give --qrels FILE (or --data with the release layout)")
    if topics_path is None and steps_path is None:
        raise ValueError("reference topics needed: give --topics examples.jsonl and/or --steps steps.jsonl "
                         "(or --data with the release layout)")
    if steps and steps_path is None:
        raise ValueError("reteco-1b needs step topics: give --steps with a steps JSONL that lists each query's steps")
    tempo = load_tempo_files(topics_path, steps=steps_path, documents=corpus_path, qrels=qrels_path,
                             step_view=steps, periods=opts.get("periods") or "guidance")
    if opts.get("domain"):
        keep = set(opts["domain"])
        tempo.topics = tempo.topics[tempo.topics["domain"].isin(keep)].reset_index(drop=True)
        tempo.qrels = tempo.qrels[tempo.qrels["domain"].isin(keep)].reset_index(drop=True)
        tempo.domains = [d for d in tempo.domains if d in keep]
    return tempo


def _load(steps: bool):
    def load(data: Any, split: str | None, opts: dict) -> Inputs:
        folder = _organiser_folder(data)
        from_files = folder is not None or any(opts.get(n) for n in ("qrels", "topics", "corpus", "steps"))
        if from_files:
            tempo = _explicit(opts, steps, folder)
        else:
            try:
                tempo = load_tempo(split or "dev", steps=steps, root=data, domains=opts["domain"],
                                   periods=opts["periods"])
            except MissingDataError as exc:
                if "missing TEMPO release folder" not in str(exc):
                    raise
                raise missing_release(exc, data, "track1_tempo", "the Track 1 (TEMPO) release",
                                      ("examples.jsonl", "qrels.txt")) from None
        labels = load_labels(opts["labels"]) if opts.get("labels") is not None else None
        source = "oracle" if opts.get("labels") is None else (
            "labels table" if isinstance(opts["labels"], pd.DataFrame) else str(opts["labels"]))
        if opts.get("map_duplicates") and len(tempo.duplicates):
            mapped, n = map_duplicates(tempo.qrels, tempo.duplicates)
            if n:
                # renamed ids may now name a document twice for one topic: the first line is kept
                tempo.qrels = mapped.drop_duplicates(["query_id", "doc_id"], keep="first").reset_index(drop=True)
        qrels = tempo.qrels
        meta: dict[str, Any] = {"domains": tempo.domains, "labels": source,
                                "_split": None if from_files else (split or "dev")}
        return Inputs(qrels=qrels, topics=tempo.topics, corpus=tempo.corpus, labels=labels,
                      problems=list(tempo.problems), meta=meta, extra={"tempo": tempo})
    return load


# ------------------------------------------------------------------------------------------------
# contract and per-query values


def _validate(run: Any, inputs: Inputs, opts: dict) -> ValidationReport:
    tempo: TempoData = inputs.extra["tempo"]
    frame, problems, path = read_run_any(run)
    kind = "step" if tempo.steps else "query"
    topics = tempo.topics[tempo.topics["kind"] == kind]
    if opts.get("map_duplicates") and len(tempo.duplicates):
        frame, _ = map_duplicates(frame, tempo.duplicates)
    if tempo.corpus is None:
        scope_corpus = pd.DataFrame({"doc_id": frame["doc_id"].astype(str).unique(), "domain": ""})
        return validate_reteco_domains(frame, problems, path, topics=topics, corpus=scope_corpus,
                                       corpus_scope="all", k=opts["k"], message="",
                                       query_ids=opts["query_ids"])
    report = validate_reteco_domains(frame, problems, path, topics=topics, corpus=tempo.corpus,
                                     corpus_scope=opts["corpus_scope"], k=opts["k"], query_ids=opts["query_ids"],
                                     message="document {doc} is not in the {domain} corpus; discarded",
                                     rules=opts["rules"])
    if len(tempo.duplicates) and len(frame):
        kept = tempo.duplicates.drop_duplicates("removed").set_index("removed")["kept"]
        report.errors = [
            replace(p, message=f"document {p.doc_id} is a duplicate removed in data v1.1 (duplicate_map.json: kept "
                    f"as {kept[p.doc_id]}); discarded (--map-duplicates / map_duplicates=True renames it)",
                    kind="removed_duplicate")
            if p.kind == "unknown_doc" and p.doc_id in kept.index else p for p in report.errors]
        if opts["rules"] == "kit":
            n = int(frame["doc_id"].astype(str).isin(set(kept.index)).sum())
            report.extra["kit_removed_duplicate"] = n
    return report


def average_unit(opts: dict) -> str:
    """The 1b averaging unit: ``opts['average']``, or by default ``query`` under the page rules
    (steps averaged per query, then queries) and ``step`` under the kit's (mean over step topics)."""
    return opts.get("average") or ("step" if opts.get("rules") == "kit" else "query")


def _kit_long(long: pd.DataFrame, official: str, inputs: Inputs) -> pd.DataFrame:
    """``long`` carrying the starter kit's official number (rounded per-domain means, averaged)."""
    value, _ = kit_macro(long, official, inputs.topics)
    long.attrs["official_value"] = value
    long.attrs["aggregation"] = KIT_AGGREGATION
    return long


def _evaluated_run(report: ValidationReport, opts: dict) -> tuple[pd.DataFrame, Any]:
    """The run to evaluate and, under trec_eval ties, the contract's ranking of it (reused by the
    evaluation, see `ranked_by_contract`), else None."""
    shared = ranked_by_contract(report.run) if opts["tie_break"] == "trec_eval" else None
    return (shared.run, shared) if shared is not None else (report.run[["query_id", "doc_id", "score"]], None)


def _per_query_1a(measures: list, inputs: Inputs, report: ValidationReport, opts: dict):
    run, shared = _evaluated_run(report, opts)
    qrels = inputs.qrels[["query_id", "doc_id", "relevance"]]
    units = inputs.units()
    if opts.get("rules") == "kit":
        tempo: TempoData = inputs.extra["tempo"]
        qrels = kit_qrels(inputs.qrels, tempo.corpus, run["query_id"])[["query_id", "doc_id", "relevance"]]
        units = pd.unique(qrels["query_id"].astype(str)).tolist()
    long = long_per_query(measures, qrels, run, display=display, units=units, ranked=shared,
                          topics=inputs.topics, labels=inputs.labels, tie_break=opts["tie_break"])
    if opts.get("rules") == "kit":
        long = _kit_long(long, display(measures[0]), inputs)
    return long, None


def _per_query_1b(measures: list, inputs: Inputs, report: ValidationReport, opts: dict):
    """One evaluation pass over the step qrels: StepNDCG per query, each diagnostic per step, then
    averaged per query over its supplied steps (NaN = not defined, skipped)."""
    if average_unit(opts) == "step":
        inputs = replace(inputs, query_ids=pd.unique(inputs.qrels["query_id"].astype(str)).tolist())
        return _per_query_1a(measures, inputs, report, opts)
    run = report.run[["query_id", "doc_id", "score"]]
    qrels = inputs.qrels[["query_id", "doc_id", "relevance"]]
    if opts.get("rules") == "kit":
        tempo: TempoData = inputs.extra["tempo"]
        qrels = kit_qrels(inputs.qrels, tempo.corpus, run["query_id"])[["query_id", "doc_id", "relevance"]]
    step_ids = pd.unique(qrels["query_id"].astype(str))
    long = long_per_query(measures, qrels, run, display=display, units=None, topics=inputs.topics,
                          labels=inputs.labels, tie_break=opts["tie_break"])
    empties, notes = long.attrs["empty"], long.attrs.get("notes", [])
    official = display(measures[0])
    query_level = long[long["measure"] == official]
    per_step = long[(long["measure"] != official) & long["query_id"].isin(set(step_ids))]
    parents, _ = step_parents(step_ids, inputs.topics)
    per_step = per_step.assign(query_id=per_step["query_id"].map(parents))
    queries = pd.unique(query_level["query_id"]).tolist()
    labels = [display(m) for m in measures[1:]]
    # the NaN-skipping mean over a query's steps (engine.results.aggregate, summed in step order);
    # a query none of whose steps defines a value stays NaN (not the measure's ``empty``)
    means = aggregate(per_step, ["query_id"], labels, {}, sums=())[["query_id", "measure", "value"]]
    full = pd.MultiIndex.from_product([queries, labels], names=["query_id", "measure"]).to_frame(index=False)
    diag = full.merge(means, on=["query_id", "measure"], how="left")
    diag["weight"] = 1.0
    out = pd.concat([query_level[["query_id", "measure", "value", "weight"]], diag], ignore_index=True)
    out.attrs["empty"] = empties
    out.attrs["notes"] = notes
    n_steps = parents.groupby(parents.to_numpy()).size()
    extra = pd.DataFrame({"steps": pd.Series(queries, index=queries).map(n_steps).fillna(0).astype(int)})
    if opts.get("rules") == "kit":
        out = _kit_long(out, official, inputs)
    return out, extra


def _stream_unit(steps: bool):
    """How a run streams (`reteco_measures.benchmarks.streaming`): by run query; 1b averaged per
    query: a query's step topics together (its StepNDCG averages them); the kit's rules refuse
    (their qrels depend on the whole run's topics)."""
    def unit(inputs: Inputs, opts: dict) -> Any:
        if opts.get("rules") == "kit":
            return "under --rules kit the evaluated topics are those of the whole run"
        if steps and average_unit(opts) == "query":
            return lambda ids: step_parents(pd.unique(ids), inputs.topics)[0].reindex(ids.to_numpy()).to_numpy()
        return None
    return unit


# ------------------------------------------------------------------------------------------------
# notes and JSON fields


def _notes(inputs: Inputs, report: ValidationReport, long: pd.DataFrame, opts: dict) -> list[str]:
    tempo: TempoData = inputs.extra["tempo"]
    kind = "step" if tempo.steps else "query"
    qrels, topics = tempo.qrels, tempo.topics
    notes = []
    no_rel = int((qrels.groupby("query_id")["relevance"].max() < 1).sum())
    if no_rel:
        notes.append(f"{no_rel} {kind} topic(s) of the qrels have no relevant document (they score 0)")
    expected = set(topics.loc[topics["kind"] == kind, "query_id"])
    unjudged = expected - set(qrels["query_id"])
    if unjudged:
        notes.append(f"{len(unjudged)} {kind} topic(s) have no qrels and are not evaluated")
    labels = inputs.labels
    if labels is not None:
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
            known = [p in r if isinstance(r, (list, tuple)) else False
                     for p, r in zip(pairs["periods"], req, strict=True)]
            if not any(known):
                notes.append("none of the labels' periods is a required period of its topic, so TC counts "
                             "nothing (check --periods guidance|steps against the labels)")
    if not tempo.steps:
        tc = long[long["measure"].str.startswith("TC") & long["measure"].str.endswith(f"@{opts['k']}")]["value"]
        if tc.isna().any():
            notes.append(f"{int(tc.isna().sum())} query(ies) have no required period: not scored by TC / nDCG|FC")
    if tempo.corpus is None:
        notes.append("no corpus given: unknown documents were not checked")
    if tempo.corpus is not None and opts.get("corpus_scope", "domain") == "domain":
        full = whole_corpus_topics(qrels, tempo.corpus)
        if full:
            n = qrels["query_id"].nunique()
            doms = ", ".join(sorted({d for _, d in full}))
            notes.append(f"{len(full)} of {n} {kind} topic(s) find every document of their domain's corpus "
                         f"relevant ({doms}): any ranking of that corpus scores 1.0 here; use the full release")
    notes += gold_notes(qrels, tempo.corpus, opts["rules"], unit=f"{kind} topic")
    if len(tempo.duplicates):
        removed = set(tempo.duplicates["removed"])
        stale = qrels[qrels["doc_id"].astype(str).isin(removed)]
        if len(stale):
            kept = tempo.duplicates.drop_duplicates("removed").set_index("removed")["kept"]
            named = ", ".join(f"{d} -> {kept[d]}" for d in pd.unique(stale["doc_id"].astype(str))[:5])
            notes.append(f"{len(stale)} qrels row(s) name a duplicate removed in data v1.1 ({named}): qrels older "
                         "than the corpus; --map-duplicates / map_duplicates=True renames them to the kept id")
    if report.extra.get("kit_removed_duplicate"):
        notes.append(f"{report.extra['kit_removed_duplicate']} run row(s) name a duplicate removed in data v1.1: "
                     "kept in the ranking under that id (kit rules); --map-duplicates renames them")
    if opts["rules"] == "kit" and report.extra.get("kit_unknown_doc"):
        notes.append(f"{report.extra['kit_unknown_doc']} run row(s) name a document outside the corpus: kept in "
                     "the ranking (kit rules)")
    notes.append(RULES_TEXT[opts["rules"]] + (f"; 1b averaged per {average_unit(opts)}" if tempo.steps else ""))
    off_label = display((_measures_1b if tempo.steps else _measures_1a)(opts)[0])
    rows = long[long["measure"] == off_label]
    if len(rows) and (not tempo.steps or average_unit(opts) == "step"):
        # the published 1b baselines are per step topic: beside a step-averaged score only
        value, per_domain = kit_macro(long, off_label, topics)
        if opts["rules"] != "kit":
            value = float(rows["value"].mean())
        note = baseline_note("1b" if tempo.steps else "1a", inputs.meta.get("_split"), opts["rules"], value,
                             per_domain)
        if note:
            notes.append(note)
    return notes


def _describe(steps: bool):
    def describe(score) -> dict:
        qrels_units = score.per_query["query_id"].nunique() if len(score.per_query) else 0
        n_steps = int(score.per_query["steps"].sum()) if steps and "steps" in score.per_query else 0
        if steps and average_unit(score.options) == "step":
            n_steps = int(qrels_units)
            parents, _ = step_parents(score.per_query["query_id"].astype(str).unique(), score.per_query)
            qrels_units = int(parents.nunique()) if len(parents) else 0
        out = {"queries": int(qrels_units), "steps": n_steps if steps else None,
               "n_queries": int(qrels_units), "n_steps": n_steps, "rules": score.options.get("rules", "page")}
        if steps:
            out["average"] = average_unit(score.options)
        return out
    return describe


# ------------------------------------------------------------------------------------------------
# declarations


_OPTIONS = (
    *COMMON_OPTIONS,
    Option("labels", None, "frozen temporal labels JSONL {query_id, doc_id, temporal, periods} (default: the "
           "starter-kit oracle: qrels verdicts, steps as periods)", data=True),
    Option("periods", "guidance", "required periods with --labels: guidance key_time_anchors where given "
           "(default) or step ids", choices=("guidance", "steps"), data=True),
    Option("temporal_reference", "reteco", "rules of TP, TR, TC and nDCG|FC: reteco (default) or tempo (TEMPO's "
           "temporal_metrics.py: first two time anchors as periods, duplicate anchors kept, TP/TR only for "
           "temporal queries)", choices=("reteco", "tempo")),
    TIE_BREAK_OPTION,
    RULES_OPTION,
    Option("map_duplicates", False, "rename document ids removed as duplicates in data v1.1 to their kept id "
           "(each domain's duplicate_map.json), in the run and the qrels", action="store_true",
           flag="--map-duplicates"),
    *FILE_OPTIONS,
    Option("steps", None, "steps JSONL (the step topics) instead of the release layout", data=True),
)

#: 1b only: the averaging unit of the official number
_AVERAGE_OPTION = Option("average", None, "1b aggregation: query (steps averaged per query, then queries; the "
                         "default under --rules page) or step (mean over step topics, the unit of the published "
                         "1b baselines; the default under --rules kit)", choices=("query", "step"))


def _demo_1a(sample_root: Path) -> dict:
    runs = sample_root / "runs"
    return {"run": runs / "reteco_track1a_dev.txt", "data": sample_root, "split": "dev",
            "labels": runs / "reteco_track1a_labels_dev.jsonl"}


def _demo_1b(sample_root: Path) -> dict:
    return {"run": sample_root / "runs" / "reteco_track1b_dev.txt", "data": sample_root, "split": "dev"}


def _measures_1a(opts: dict) -> list:
    k = opts["k"]
    return parse_measures([f"nDCG@{k}", *diagnostics(k, opts["temporal_reference"])])


def _measures_1b(opts: dict) -> list:
    k = opts["k"]
    if average_unit(opts) == "step":
        return parse_measures([f"nDCG@{k}", *diagnostics(k, opts["temporal_reference"])])
    return [*parse_measures([f"StepNDCG@{k}"]), *diagnostics(k, opts["temporal_reference"])]


_GROUPS = (Grouping("by_domain", ("domain",), "per domain ((macro) = mean of the domain means; "
                    "(all) = mean over queries)"),)


def _tempo_benchmark(steps: bool, *, name: str, title: str, help: str, measures: Any, per_query: Any,
                     unit: str, aggregation: str, run_help: str, demo: Any, options: tuple = _OPTIONS,
                     statistics: Any = None) -> Benchmark:
    """A Track 1 declaration: 1a (queries) and 1b (steps) share the data, the ``reteco`` contract,
    the per-domain breakdown, the printed names and the options."""
    return register(Benchmark(
        name=name,
        title=title,
        measures=measures,
        load=_load(steps),
        validate=_validate,
        per_query=per_query,
        contract="reteco",
        cli=CliSpec(help=help, options=options, run_help=run_help, demo=demo),
        tables=TableSpec(groupings=_GROUPS, per_query_columns=("domain",), per_query_sort=("domain", "query_id"),
                         display=display, aggregation=aggregation, notes=_notes, describe=_describe(steps)),
        stats=StatsSpec(unit=unit, statistics=statistics),
        stream_unit=_stream_unit(steps),
    ))


RETECO_1A = _tempo_benchmark(
    False,
    name="reteco-1a",
    title="RETECO 1a (TEMPO)",
    help="RETECO Track 1a (TEMPO): query-level nDCG@10 (+ TP, TR, TC, nDCG|FC, MAP@10, R@10, MRR per domain)",
    measures=_measures_1a,
    per_query=_per_query_1a,
    unit="query",
    aggregation="mean over queries",
    run_help="TREC run: query_id Q0 doc_id rank score run_id",
    demo=_demo_1a,
)

RETECO_1B = _tempo_benchmark(
    True,
    options=(*_OPTIONS, _AVERAGE_OPTION),
    statistics=lambda o: {"unit": "step"} if average_unit(o) == "step" else {},
    name="reteco-1b",
    title="RETECO 1b (TEMPO)",
    help="RETECO Track 1b (TEMPO): step-wise nDCG@10 averaged per query (+ step diagnostics per domain)",
    measures=_measures_1b,
    per_query=_per_query_1b,
    unit="query (after averaging its steps)",
    aggregation="mean over queries of the mean over their steps",
    run_help="TREC run of step topics: <query_id>_step<n> Q0 doc_id rank score run_id",
    demo=_demo_1b,
)


# ------------------------------------------------------------------------------------------------
# thin functions kept for existing code


def _from_data(bench: Benchmark, run: Any, data: TempoData, **options: Any):
    opts = bench.resolve_options(options)
    labels = load_labels(opts["labels"]) if opts.get("labels") is not None else None
    source = "oracle" if opts.get("labels") is None else (
        "labels table" if isinstance(opts["labels"], pd.DataFrame) else str(opts["labels"]))
    inputs = Inputs(qrels=data.qrels, topics=data.topics, corpus=data.corpus, labels=labels,
                    problems=list(data.problems), meta={"domains": data.domains, "labels": source},
                    extra={"tempo": data})
    return bench.score(run, inputs=inputs, **options)


def score_reteco_1a(run: Any, data: TempoData, *, k: int = 10, labels: Any = None,
                    corpus_scope: str = "domain"):
    """Score a 1a run against loaded data (``load_tempo(..., steps=False)``); same as
    ``rm.benchmark("reteco-1a").score(...)``, returns its `Score`."""
    if data.steps:
        raise ValueError("score_reteco_1a needs the 1a view of the data (load_tempo(..., steps=False))")
    return _from_data(RETECO_1A, run, data, k=k, labels=labels, corpus_scope=corpus_scope)


def score_reteco_1b(run: Any, data: TempoData, *, k: int = 10, labels: Any = None,
                    corpus_scope: str = "domain"):
    """Score a 1b run against loaded data (``load_tempo(..., steps=True)``); same as
    ``rm.benchmark("reteco-1b").score(...)``."""
    if not data.steps:
        raise ValueError("score_reteco_1b needs the 1b view of the data (load_tempo(..., steps=True))")
    return _from_data(RETECO_1B, run, data, k=k, labels=labels, corpus_scope=corpus_scope)
