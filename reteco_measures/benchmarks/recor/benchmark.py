"""RETECO Track 2 (RECOR): ``reteco-2a`` conversational passage retrieval.

The official-style Track 2 retrieval scorer of the RETECO evaluation plan ("Track 02 scoring"):

1. read the TREC run and bring its topic ids to the split's ids (``#turn`` ids normalised and
   reported; plain release ids mapped to the all-domains ``<domain>/…`` ids where unambiguous,
   ambiguous ones reported and discarded: see
   `reteco_measures.benchmarks.recor.data.map_run_query_ids`);
2. the ``reteco`` contract: duplicates removed after their first occurrence, rows of unknown
   turns discarded, documents not in the corpus discarded (``corpus_scope='domain'``, default:
   the corpus of the turn's own domain; ``'all'``: any domain's corpus), missing turns score 0;
   ordering is trec_eval's;
3. official score: ``TurnNDCG@10`` — binary nDCG@10 per target turn, macro-averaged over the
   turns of the qrels (``average='conversation'`` gives the RECOR-ablation mean over
   conversations instead; its statistical unit is then the conversation);
4. diagnostics from ir_measures: MAP@10 (``AP@10``), ``R@10``, MRR (``RR``), each a mean over
   the same turns; per-domain and per-depth (T1..T4, T5+) tables with ``(macro)`` (mean of the
   group means) and ``(all)`` (mean over turns) rows.

Reference data: the release layout under ``data``, a folder holding the organisers' public
sample (``benchmark.jsonl``, ``documents.jsonl``, ``qrels.txt``), or explicit files
(``topics=``, ``qrels=``, ``corpus=``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ...contracts.base import ValidationReport
from ...datasets.base import MissingDataError
from ...measures.names import measure_label, parse_measures
from ...measures.turn_ndcg import TurnNDCG
from ..declaration import Benchmark, CliSpec, Grouping, Inputs, Option, StatsSpec, TableSpec
from ..registry import register
from ..reteco.contract import load_run_rows
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
)
from ..scoring import long_per_query
from .data import (
    RecorData,
    check_qrels_topics,
    conversations_to_topics,
    load_organiser_sample,
    load_recor,
    map_run_query_ids,
    read_conversations,
    read_documents,
    read_recor_qrels,
)

__all__ = ["RETECO_2A", "score_reteco_2a", "DISPLAY_NAMES"]

#: ir_measures names -> names printed in the RETECO evaluation plan
DISPLAY_NAMES = {"AP@10": "MAP@10", "RR": "MRR"}


def display(measure: Any) -> str:
    """The printed name of a Track 2 measure (``AP@10`` → ``MAP@10``, ``RR`` → ``MRR``)."""
    text = measure_label(measure)
    return DISPLAY_NAMES.get(text, text)


def _explicit(opts: dict, folder: Path | None) -> RecorData:
    """Reference data from explicit files: conversations (``benchmark.jsonl``; each
    conversation's domain is its ``task`` field), TREC qrels and documents, as the organisers'
    sample lays them out."""
    if folder is not None and not any(opts.get(n) for n in ("topics", "qrels", "corpus")):
        # --hash-turn-ids is about the run's ids: the organisers' own qrels are read in their '#turn' form
        return load_organiser_sample(folder, hash_turn_ids="normalise")

    topics_path = explicit_file(opts, "topics", folder, "benchmark.jsonl")
    qrels_path = explicit_file(opts, "qrels", folder, "qrels.txt")
    corpus_path = explicit_file(opts, "corpus", folder, "documents.jsonl")
    if topics_path is None or qrels_path is None:
        raise ValueError("explicit RECOR files need --topics (benchmark JSON/JSONL) and --qrels "
                         "(or --data with the release layout)")
    topics, problems = conversations_to_topics(read_conversations(topics_path), None, qualified=True,
                                               path=topics_path)
    qrels, probs = read_recor_qrels(qrels_path, None, hash_turn_ids="normalise")
    problems += probs
    release = topics.drop_duplicates("release_query_id").set_index("release_query_id")
    qrels["domain"] = qrels["query_id"].map(release["domain"]).fillna("").astype(str).to_numpy()
    mapped = qrels["query_id"].map(release["query_id"])
    qrels["query_id"] = mapped.where(mapped.notna(), qrels["query_id"]).astype("str").to_numpy()
    check_qrels_topics(qrels, topics, qrels_path, problems)
    if corpus_path is not None:
        docs = read_documents(corpus_path, "", text=False)
        gold = topics[["domain", "gold_doc_ids"]].explode("gold_doc_ids").dropna()
        doc_domain = gold.drop_duplicates("gold_doc_ids").set_index("gold_doc_ids")["domain"]
        docs["domain"] = docs["doc_id"].map(doc_domain).fillna("").astype(str).to_numpy()
    else:
        docs = None
    domains = list(dict.fromkeys(topics["domain"].tolist()))
    return RecorData(topics, qrels, docs, domains, True, problems)


def _load(data: Any, split: str | None, opts: dict) -> Inputs:
    folder = Path(data) if data is not None and (Path(data) / "benchmark.jsonl").is_file() else None
    if folder is not None or any(opts.get(n) for n in ("topics", "qrels", "corpus")):
        recor = _explicit(opts, folder)
        if opts.get("domain"):
            keep = set(opts["domain"])
            recor.topics = recor.topics[recor.topics["domain"].isin(keep)].reset_index(drop=True)
            recor.qrels = recor.qrels[recor.qrels["domain"].isin(keep)].reset_index(drop=True)
            recor.domains = [d for d in recor.domains if d in keep]
    else:
        # all-domains ids even for one domain: runs may use either form (plain ids are mapped)
        try:
            recor = load_recor(split or "dev", root=data, domains=opts["domain"], qualified=True,
                               hash_turn_ids="normalise")
        except MissingDataError as exc:
            if "missing RECOR release folder" not in str(exc):
                raise
            raise missing_release(exc, data, "track2_recor", "the Track 2 (RECOR) release",
                                  ("benchmark.jsonl", "qrels.txt")) from None
    return Inputs(qrels=recor.qrels, topics=recor.topics, corpus=recor.corpus, problems=list(recor.problems),
                  meta={"domains": recor.domains, "_split": None if folder is not None or any(
                      opts.get(n) for n in ("topics", "qrels", "corpus")) else (split or "dev")},
                  extra={"recor": recor})


def _file_domain(path: Path, ids: pd.Series, topics: pd.DataFrame, domains: list[str]) -> str | None:
    """The domain of one per-domain run file: named by the file (``<domain>.txt``, ``run_<domain>.txt``,
    ``<domain>/run.txt``; the longest such name), else the one domain whose topics hold the most of
    the file's plain ids; None when that is not one domain."""
    stem, parents = path.stem, {p.name for p in path.parents}
    named = [d for d in domains if d in parents or stem == d or stem.startswith(d + "_") or stem.endswith("_" + d)
             or f"_{d}_" in stem or stem.startswith(d + "-") or stem.endswith("-" + d)]
    if named:
        return max(named, key=len)
    plain = pd.Series(pd.unique(ids.astype(str)))
    plain = plain[~plain.str.contains("/", regex=False)]
    known = set(topics["query_id"].astype(str))
    hits = {d: int((d + "/" + plain).isin(known).sum()) for d in domains}
    best = max(hits.values(), default=0)
    winners = [d for d, n in hits.items() if n == best]
    return winners[0] if best and len(winners) == 1 else None


def _read_runs(run: Any, recor: RecorData) -> tuple[pd.DataFrame, list, str | None]:
    """One submission given as several run files (the starter kit writes one per domain, with plain
    turn ids): a ``{domain: path}`` mapping, or a list of paths whose domain each file's name (or
    else its ids) gives. A file's plain ids are qualified with its domain (``biology/3_turn_1``),
    so ids repeated across domains stay apart. Anything else is read as one run."""

    if isinstance(run, Mapping):
        items = [(str(d), Path(p)) for d, p in run.items()]
    elif isinstance(run, (list, tuple)) and run and all(isinstance(r, (str, Path)) for r in run):
        items = [(None, Path(p)) for p in run]
    else:
        return read_run_any(run)
    frames, problems, names = [], [], []
    for dom, path in items:
        frame, probs, name = load_run_rows(str(path), "trec")
        dom = dom or _file_domain(path, frame["query_id"], recor.topics, list(recor.domains))
        if dom is not None and len(frame):
            qid = frame["query_id"].astype(str)
            plain = ~qid.str.contains("/", regex=False)
            frame["query_id"] = qid.where(~plain, dom + "/" + qid)
        frames.append(frame)
        problems += [replace(p, path=p.path or name) for p in probs]
        names.append(f"{name or path}" + (f" ({dom})" if dom else ""))
    return pd.concat(frames, ignore_index=True), problems, ", ".join(names)


def _validate(run: Any, inputs: Inputs, opts: dict) -> ValidationReport:
    recor: RecorData = inputs.extra["recor"]
    frame, problems, path = _read_runs(run, recor)
    frame, id_problems = map_run_query_ids(frame, recor.topics, hash_turn_ids=opts["hash_turn_ids"], path=path)
    corpus = recor.corpus
    if corpus is None:
        corpus = pd.DataFrame({"doc_id": frame["doc_id"].astype(str).unique(), "domain": ""})
        scope = "all"
    else:
        scope = opts["corpus_scope"]
    return validate_reteco_domains(frame, list(problems) + id_problems, path, topics=recor.topics, corpus=corpus,
                                   corpus_scope=scope, k=opts["k"], check_all_corpus=False, query_ids=opts["query_ids"],
                                   message="document {doc} is not in the {domain} corpus; discarded",
                                   rules=opts["rules"])


def _stream_unit(inputs: Inputs, opts: dict) -> Any:
    """Runs stream by turn (`reteco_measures.benchmarks.streaming`); the kit's rules refuse (their
    qrels depend on the whole run's turns)."""
    if opts.get("rules") == "kit":
        return "under --rules kit the evaluated turns are those of the whole run"
    return None


def _measures(opts: dict) -> list:
    k = opts["k"]
    official = TurnNDCG @ k if opts["average"] == "turn" else TurnNDCG(average=opts["average"]) @ k
    return parse_measures([official, f"AP@{k}", f"R@{k}", "RR", f"Judged@{k}"])


def _per_query(measures: list, inputs: Inputs, report: ValidationReport, opts: dict):
    run = report.run[["query_id", "doc_id", "score"]]
    qrels = inputs.qrels[["query_id", "doc_id", "relevance"]]
    units = inputs.units()
    kit = opts.get("rules") == "kit"
    if kit:
        qrels = kit_qrels(inputs.qrels, inputs.corpus, run["query_id"])[["query_id", "doc_id", "relevance"]]
        units = pd.unique(qrels["query_id"].astype(str)).tolist()
    long = long_per_query(measures, qrels, run, display=display, units=units, topics=inputs.topics,
                          tie_break=opts["tie_break"])
    if kit:
        long.attrs["official_value"] = kit_macro(long, display(measures[0]), inputs.topics)[0]
        long.attrs["aggregation"] = KIT_AGGREGATION
    return long, None


def _notes(inputs: Inputs, report: ValidationReport, long: pd.DataFrame, opts: dict) -> list[str]:
    qrels, topics = inputs.qrels, inputs.topics
    notes = []
    no_rel = int((qrels.groupby("query_id")["relevance"].max() < 1).sum())
    if no_rel:
        notes.append(f"{no_rel} turn(s) of the qrels have no relevant document (they score 0)")
    unjudged = sorted(set(topics["query_id"]) - set(qrels["query_id"]))
    if unjudged:
        notes.append(f"{len(unjudged)} turn(s) of the topics have no qrels and are not evaluated")
    if inputs.corpus is None:
        notes.append("no corpus given: unknown documents were not checked")
    notes += gold_notes(qrels, inputs.corpus, opts["rules"], unit="turn")
    if opts["rules"] == "kit" and report.extra.get("kit_unknown_doc"):
        notes.append(f"{report.extra['kit_unknown_doc']} run row(s) name a document outside the corpus: kept in "
                     "the ranking (kit rules)")
    notes.append(RULES_TEXT[opts["rules"]])
    official = display(_measures(opts)[0])
    rows = long[long["measure"] == official]
    if len(rows) and opts["average"] == "turn":
        value, per_domain = kit_macro(long, official, topics)
        if opts["rules"] != "kit":
            value = float(rows["value"].mean())
        note = baseline_note("2a", inputs.meta.get("_split"), opts["rules"], value, per_domain)
        if note:
            notes.append(note)
    return notes


def _describe(score) -> dict:
    n = int(score.per_query["query_id"].nunique()) if len(score.per_query) else 0
    return {"turns": n, "n_turns": n, "rules": score.options.get("rules", "page")}


def _demo(sample_root: Path) -> dict:
    return {"run": sample_root / "runs" / "reteco_track2.txt", "data": sample_root, "split": "dev"}


RETECO_2A = register(Benchmark(
    name="reteco-2a",
    title="RETECO 2a (RECOR)",
    measures=_measures,
    load=_load,
    validate=_validate,
    per_query=_per_query,
    contract="reteco",
    cli=CliSpec(
        help="RETECO Track 2a (RECOR): turn-level nDCG@10 (+ MAP@10, R@10, MRR, per domain and per depth)",
        options=(
            *COMMON_OPTIONS,
            Option("average", "turn", "TurnNDCG aggregation: macro over turns (official) or over conversations",
                   choices=("turn", "conversation")),
            Option("hash_turn_ids", "normalise", "run ids written '<conv>#turn<t>': read as '<conv>_turn_<t>' "
                   "(default) or reject", choices=("normalise", "reject"), data=True),
            TIE_BREAK_OPTION,
            RULES_OPTION,
            *FILE_OPTIONS,
        ),
        run_help="TREC run: query_id Q0 doc_id rank score run_id; several files (e.g. the starter kit's one run "
                 "file per domain) are scored as one submission",
        demo=_demo,
    ),
    tables=TableSpec(
        groupings=(Grouping("by_domain", ("domain",), "per domain ((macro) = mean of the domain means; "
                            "(all) = mean over turns)"),
                   Grouping("by_depth", ("depth",), "per conversation depth")),
        per_query_columns=("domain", "conversation_id", "turn", "depth"),
        per_query_sort=("domain", "conversation_id", "turn"),
        display=display,
        aggregation="mean over the turns of the qrels",
        notes=_notes,
        describe=_describe,
    ),
    stats=StatsSpec(unit="turn", statistics=lambda o: {"unit": "conversation", "cluster": "conversation_id"}
                    if o["average"] == "conversation" else {}),
    stream_unit=_stream_unit,
))


def score_reteco_2a(run: Any, data: RecorData, *, k: int = 10, average: str = "turn",
                    corpus_scope: str = "domain", hash_turn_ids: str = "normalise"):
    """Score a Track 2a run against loaded data (`load_recor`);
    same as ``rm.benchmark("reteco-2a").score(...)``, returns its `Score`."""
    inputs = Inputs(qrels=data.qrels, topics=data.topics, corpus=data.corpus, problems=list(data.problems),
                    meta={"domains": data.domains}, extra={"recor": data})
    return RETECO_2A.score(run, inputs=inputs, k=k, average=average, corpus_scope=corpus_scope,
                           hash_turn_ids=hash_turn_ids)
