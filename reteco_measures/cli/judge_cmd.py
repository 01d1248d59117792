"""``reteco-measures judge``: LLM judgments (generation, iKAT, TEMPO labels), golden-case
meta-evaluation, aggregation, and lexical diagnostics.

::

    reteco-measures judge generation --answers A.jsonl --context C.jsonl --model M --out J.jsonl \\
        [--cache DIR] [--dimensions correctness,completeness,...] [--scale reteco|ikat]
    reteco-measures judge ikat --answers RUN.json|A.jsonl --context TOPICS.json|C.jsonl --model M --out J.jsonl
    reteco-measures judge temporal --topics T.jsonl --documents D.jsonl --run RUN --model M --out LABELS.jsonl
    reteco-measures judge meta-eval --model M [--dimensions ...]
    reteco-measures judge aggregate J.jsonl [J2.jsonl ...] [--targets F] [--by domain --topics T]
    reteco-measures judge lexical --answers A.jsonl --references R.jsonl [--metrics rougeL,meteor,bertscore]
    reteco-measures judge prompts [--show DIMENSION]
    reteco-measures judge sample --judgments J --n N [--stratify dimension,domain --topics T] [--seed S] --out sheet.csv
    reteco-measures judge agreement --judgments J --human H [--format table|json|markdown] [--confusion]
    reteco-measures judge report --judgments J [--human H] [--golden G] [--format markdown|json]
    reteco-measures judge calibrate --judgments J [J2 ...] --human H [--method ppi|ppi++] [--by run]

The endpoint comes from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (``--base-url`` overrides the URL).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ..errors import Problem
from .report import OUTPUT_FORMATS, frame_records, print_frame

__all__ = ["configure"]


def _print_problems(problems: Sequence[Problem], limit: int = 20) -> None:
    for p in problems[:limit]:
        print(f"warning: {p}", file=sys.stderr)
    if len(problems) > limit:
        print(f"warning: ... and {len(problems) - limit} more problem(s)", file=sys.stderr)


#: the environment a judging command reads (its ``--help`` epilog)
ENVIRONMENT_HELP = (
    "Environment: OPENAI_API_KEY, the endpoint's key, sent as 'Authorization: Bearer ...' (unset: no "
    "Authorization header, for local servers); OPENAI_BASE_URL, the endpoint (default https://api.openai.com/v1; "
    "--base-url overrides it), e.g. http://localhost:8000/v1 for vLLM, http://localhost:8080/v1 for llama.cpp's "
    "llama-server, http://localhost:11434/v1 for Ollama; OPENAI_ORG_ID and OPENAI_PROJECT_ID, sent as the "
    "OpenAI-Organization / OpenAI-Project headers by the openai client when set; HTTPS_PROXY, HTTP_PROXY and "
    "NO_PROXY, honoured by its HTTP connections. The key and URL credentials are never written to an output, "
    "cache or message.")


def add_client_args(p: argparse.ArgumentParser, *, default_cache: str, repeats: bool = False) -> None:
    p.epilog = ENVIRONMENT_HELP
    g = p.add_argument_group("judge endpoint and run")
    g.add_argument("--model", required=True, help="judge model name (sent to the endpoint)")
    g.add_argument("--base-url", help="endpoint base URL (default: $OPENAI_BASE_URL, else the OpenAI API)")
    g.add_argument("--cache", help=f"cache folder (default: {default_cache})")
    g.add_argument("--no-cache", action="store_true", help="do not read or write a cache")
    g.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    g.add_argument("--retries", type=int, default=3, help="extra attempts per judgment (default 3): the openai client's HTTP retries "
                                                              "and the re-asks of invalid replies together")
    g.add_argument("--timeout", type=float, default=60.0,
                   help="total seconds per attempt, from sending: connect, wait in the server's queue, and read "
                        "the whole reply (default 60)")
    g.add_argument("--backoff", type=float, default=1.0, help="first retry wait in seconds, doubling (default 1)")
    g.add_argument("--max-wait", type=float, default=60.0,
                   help="longest wait a server's Retry-After can impose before the next attempt; longer ones are cut "
                        "to it (default 60)")
    g.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    g.add_argument("--seed", type=int, help="the requests' seed (default: none sent); part of the cache key")
    g.add_argument("--top-p", type=float, help="the requests' top_p (default: none sent); part of the cache key")
    g.add_argument("--structured", default="auto",
                   choices=["auto", "json_object", "json_schema", "schema-in-object", "none"],
                   help="structured output: json_object (JSON mode), json_schema (OpenAI/vLLM/Ollama/llama-server: "
                        "the score schema), schema-in-object (llama-cpp-python: the schema inside json_object), none; "
                        "auto (default) chooses from the server's GET /models, json_object when unsure")
    g.add_argument("--no-repair", action="store_true",
                   help="retry an invalid reply with the same request, not with a repair message")
    g.add_argument("--max-reply-tokens", type=int, help="max_tokens of each reply (default: the endpoint's)")
    g.add_argument("--max-requests", type=int,
                   help="stop cleanly after this many HTTP requests (finished judgments are cached; run again "
                        "to continue)")
    g.add_argument("--max-tokens", type=int,
                   help="stop cleanly once this many tokens (prompt + completion) were used by this run")
    g.add_argument("--price-in", type=float, help="price per million prompt tokens (for a cost estimate)")
    g.add_argument("--price-out", type=float, help="price per million completion tokens (for a cost estimate)")
    if repeats:
        g.add_argument("--repeats", type=int, default=1,
                       help="independent judgments per item (default 1); each is cached separately")
        g.add_argument("--aggregate", default="mean", choices=["mean", "median", "mode"],
                       help="how the repeats of an item are combined in the summary (default mean)")
    g.add_argument("--batch", action="store_true",
                   help="send the judgments through the endpoint's Batch API (files + /batches) instead of one "
                        "request each; falls back to requests when the endpoint has no Batch API")
    g.add_argument("--batch-wait", type=float,
                   help="seconds to wait for running batches (default: until they finish; 0: submit or collect "
                        "and exit 4 while batches run)")
    g.add_argument("--batch-poll", type=float, default=30.0, help="seconds between batch status checks (default 30)")
    g.add_argument("--batch-size", type=int, default=50_000, help="requests per batch file (default 50000)")
    g.add_argument("--batch-window", default="24h", help="the batches' completion_window (default 24h)")
    g.add_argument("--no-json-mode", action="store_true",
                   help="same as --structured none (for endpoints that reject response_format)")
    g.add_argument("--prompts", help="folder of your own prompt files instead of the packaged ones")
    g.add_argument("--refresh-invalid", action="store_true",
                   help="re-ask judgments whose cached reply was invalid")
    g.add_argument("--progress", dest="progress", action="store_true", default=None, help="always show progress")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")
    g.add_argument("--strict", action="store_true", help="exit 1 when any judgment is invalid")
    g.add_argument("--format", default="table", choices=OUTPUT_FORMATS, help="summary format")




def _client(args: argparse.Namespace, budget=None):
    from ..judge.client import JudgeClient

    for name in ("max_requests", "max_tokens", "max_reply_tokens"):
        value = getattr(args, name, None)
        if value is not None and value < (1 if name == "max_reply_tokens" else 0):
            raise ValueError(f"--{name.replace('_', '-')} must be >= {1 if name == 'max_reply_tokens' else 0}")
    if args.concurrency < 1:
        raise ValueError("--concurrency must be >= 1")
    if args.no_json_mode and args.structured not in ("auto", "none"):
        raise ValueError("--no-json-mode contradicts --structured " + args.structured)
    return JudgeClient(
        args.model,
        base_url=args.base_url,
        timeout=args.timeout,
        retries=args.retries,
        backoff=args.backoff,
        max_retry_after=args.max_wait,
        structured="none" if args.no_json_mode else args.structured,
        max_tokens=args.max_reply_tokens,
        concurrency=args.concurrency,
        temperature=args.temperature,
        seed=args.seed,
        top_p=args.top_p,
        repair=not args.no_repair,
        budget=budget,
    )


def _cache(args: argparse.Namespace, default: str | None):
    from ..judge.cache import JudgmentCache

    if args.no_cache:
        return JudgmentCache(None)
    directory = args.cache or default
    return JudgmentCache(directory)


class _Progress:
    """The session's progress on stderr: a tqdm bar (``--progress``, or when stderr is a
    terminal), else the running totals once a minute."""

    def __init__(self, enabled: bool | None, every: float = 60.0) -> None:
        self.enabled = enabled
        self.every = every
        self.bar = None
        self.last = None

    def __call__(self, done: int, total: int, stats) -> None:
        import time

        if self.bar is None and self.enabled is not False:
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover - tqdm is part of the judge extra
                self.enabled = False
            else:
                self.bar = tqdm(total=total, initial=done, desc="judging", unit="judgment", file=sys.stderr,
                                disable=None if self.enabled is None else False, dynamic_ncols=True)
                return
        if self.bar is not None and not getattr(self.bar, "disable", False):
            self.bar.update(done - self.bar.n)
            self.bar.set_postfix_str(f"tokens {stats.prompt_tokens}+{stats.completion_tokens}", refresh=False)
            return
        now = time.monotonic()
        if self.last is None:
            self.last = now
        elif now - self.last >= self.every:
            self.last = now
            print(f"judging: {done}/{total} done, {stats.requests} request(s), {stats.prompt_tokens} prompt + "
                  f"{stats.completion_tokens} completion tokens so far", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_session(args: argparse.Namespace, items, cache_default: str | None):
    """Run a `JudgeSession` on items, printing its progress and summary; returns the
    `RunResult` when it finished, else its exit code."""
    from ..judge.budget import Budget
    from ..judge.ledger import cost
    from ..judge.session import BatchOptions, JudgeSession

    cache = _cache(args, cache_default)
    budget = Budget(args.max_requests, args.max_tokens)
    batch = BatchOptions(wait=args.batch_wait, poll_interval=args.batch_poll, size=args.batch_size,
                         window=args.batch_window) if args.batch else None
    try:
        client = _client(args, budget)
    except ImportError as exc:
        print(f"reteco-measures: {exc}", file=sys.stderr)
        return 2
    progress = _Progress(args.progress)
    session = JudgeSession(client, cache, concurrency=args.concurrency, batch=batch,
                           refresh_invalid=args.refresh_invalid, on_progress=progress,
                           on_note=lambda msg: print(f"reteco-measures: batch: {msg}", file=sys.stderr))
    try:
        result = session.run(items)
    finally:
        progress.close()
    stats = result.stats
    for msg in result.messages[:-1] if result.status != "done" else result.messages:
        print(f"reteco-measures: {msg}", file=sys.stderr)
    if result.status in ("pending", "fatal", "interrupted"):
        print(f"reteco-measures: {result.messages[-1]}", file=sys.stderr)
        return result.exit_code
    where = f"; cache {cache.directory}" if cache.directory is not None else ""
    print(f"judged {stats.total}: {stats.cached} from cache, {stats.asked} asked, {stats.not_sent} not sendable, "
          f"{stats.invalid} invalid{where}", file=sys.stderr)
    spent = cost(stats.prompt_tokens, stats.completion_tokens, args.price_in, args.price_out)
    print(f"this run: {stats.requests} request(s), {stats.prompt_tokens} prompt + {stats.completion_tokens} "
          f"completion tokens" + (f", estimated cost {spent:.4f}" if spent is not None else "")
          + (f"; attempts by cause {stats.attempts_by_cause}" if stats.requests else ""), file=sys.stderr)
    t = stats.throughput
    if t is not None:
        print(f"throughput: {t['requests_per_s']:.3g} requests/s over {t['requests']} answered request(s), "
              f"concurrency {t['concurrency']}, parallelism {t['parallelism']:.2g}", file=sys.stderr)
    if result.status == "limit":
        print(f"reteco-measures: {result.messages[-1]}", file=sys.stderr)
        return result.exit_code
    return result


def _final_code(args: argparse.Namespace, result) -> int:
    code, message = result.final_code(strict=args.strict)
    if message is not None:
        print(f"reteco-measures: error: {message}", file=sys.stderr)
    return code


def _write_run_record(args: argparse.Namespace, result, extra: dict | None = None, out: str | None = None) -> None:
    """``OUT.run.json`` beside the file the run wrote (``out``: another file it wrote, e.g.
    ``judge temporal --judgments-out``)."""
    from ..judge.session import run_record, write_run_record

    record = run_record(result, result.outcomes, command=getattr(args, "judge_command", None),
                        concurrency=args.concurrency, repeats=getattr(args, "repeats", 1),
                        aggregate=getattr(args, "aggregate", "mean"), price_in=args.price_in,
                        price_out=args.price_out, extra=extra)
    write_run_record(out or args.out, record)


def _targets(path: str | None):
    if path is None:
        return None
    from ..judge.inputs import read_targets

    return read_targets(path)


# ------------------------------------------------------------------------------------------------
# generation / ikat


def _cmd_generation(args: argparse.Namespace) -> int:
    from ..judge.generation import (
        generation_items,
        judgment_rows,
        resolve_dimensions,
        summary_frame,
        untargeted_answers,
        write_jsonl,
    )
    from ..judge.inputs import read_answers, read_context, read_passages

    scale = getattr(args, "scale", None) or "reteco"
    dims = resolve_dimensions(args.dimensions, scale)
    passages = read_passages(args.passages) if getattr(args, "passages", None) else None
    answers, p1 = read_answers(args.answers, passages)
    contexts, p2 = read_context(args.context)
    targets = _targets(args.targets)
    problems = p1 + p2 + untargeted_answers(answers, contexts, targets, args.answers)
    _print_problems(problems)
    items = generation_items(answers, contexts, dims, targets=targets, prompts_dir=args.prompts,
                             repeats=args.repeats)
    run = run_session(args, items, f"{args.out}.cache")
    if isinstance(run, int):
        return run
    outcomes = run.outcomes
    rows = judgment_rows(outcomes)
    write_jsonl(args.out, rows)
    _write_run_record(args, run, {"scale": scale, "dimensions": dims})
    print_frame(summary_frame(rows, dims, aggregate=args.aggregate), args.format)
    return _final_code(args, run)


def _add_generation(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("generation", help="judge generated answers (RETECO 2b/2c dimensions, 1-5)",
                       description="One judgment per (target turn, dimension); target turns = the context "
                                   "file's turns (or --targets). Missing answers are invalid judgments.")
    p.add_argument("--answers", required=True, help="JSONL {turn_id, answer}")
    p.add_argument("--context", required=True,
                   help="JSONL {turn_id, history: [{role, content}], question, passages: [str]}")
    p.add_argument("--out", required=True, help="judgments JSONL to write")
    p.add_argument("--dimensions", help="comma-separated (default: every dimension of the scale)")
    p.add_argument("--scale", default="reteco", choices=["reteco", "ikat"],
                   help="reteco: correctness, completeness, relevance, coherence, faithfulness (1-5); "
                        "ikat: naturalness, groundedness (0-4)")
    p.add_argument("--targets", help="target turn ids: JSONL, TREC qrels or one id per line")
    add_client_args(p, default_cache="OUT.cache", repeats=True)
    p.set_defaults(func=_cmd_generation)


def _add_ikat(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ikat", help="judge iKAT responses: naturalness and groundedness (0-4)",
                       description="Answers may be an iKAT 2023 run JSON (the rank-1 response of each turn; "
                                   "its 'used' provenance passages are judged for groundedness) or JSONL "
                                   "{turn_id, answer}. Context may be iKAT topics JSON or context JSONL.")
    p.add_argument("--answers", required=True, help="iKAT run JSON or JSONL {turn_id, answer}")
    p.add_argument("--context", required=True, help="iKAT topics JSON or context JSONL")
    p.add_argument("--passages", help="JSONL {id|passage_id, text} with the text of provenance passages")
    p.add_argument("--out", required=True, help="judgments JSONL to write")
    p.add_argument("--dimensions", help="naturalness,groundedness (default both)")
    p.add_argument("--targets", help="judged turns, e.g. the qrels file (pruned turns are not assessed)")
    add_client_args(p, default_cache="OUT.cache", repeats=True)
    p.set_defaults(func=_cmd_generation, scale="ikat")


# ------------------------------------------------------------------------------------------------
# temporal


def _cmd_temporal(args: argparse.Namespace) -> int:
    from ..io.readers import read_run
    from ..judge.generation import write_jsonl
    from ..judge.inputs import read_documents, read_pairs, read_temporal_topics
    from ..judge.temporal import judgment_rows, label_rows, pool_pairs, temporal_items, temporal_summary

    if not args.run and not args.pairs:
        raise ValueError("give --run RUN (repeatable) and/or --pairs PAIRS")
    topics, problems = read_temporal_topics(args.topics)
    pairs: list[tuple[str, str]] = []
    if args.run:
        pairs.extend(pool_pairs([read_run(r) for r in args.run], depth=args.depth))
    if args.pairs:
        pairs.extend(read_pairs(args.pairs))
    pairs = list(dict.fromkeys(pairs))
    documents, p2 = read_documents(args.documents, wanted={d for _, d in pairs})
    problems += p2
    _print_problems(problems)
    items = temporal_items(pairs, topics, documents, prompts_dir=args.prompts)
    run = run_session(args, items, f"{args.out}.cache")
    if isinstance(run, int):
        return run
    outcomes = run.outcomes
    rows = label_rows(outcomes, topics)
    write_jsonl(args.out, rows)
    _write_run_record(args, run)
    if args.judgments_out:
        write_jsonl(args.judgments_out, judgment_rows(outcomes))
        _write_run_record(args, run, out=args.judgments_out)  # judge report reads it beside the file
    print_frame(temporal_summary(rows, outcomes), args.format)
    return _final_code(args, run)


def _add_temporal(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("temporal", help="TEMPO temporal labels (verdict + period coverage) -> frozen labels JSONL",
                       description="Judges every (query, document) pair of the pool: a 0/1 temporal relevance "
                                   "verdict and, per required period, a 0/1 coverage judgment. Writes "
                                   "{query_id, doc_id, temporal, periods, ...} lines for --labels.")
    p.add_argument("--topics", required=True, help="JSONL {query_id|id, query|text, required_periods: [str]}")
    p.add_argument("--documents", required=True, help="JSONL {doc_id|id, content|text}")
    p.add_argument("--run", action="append", help="run whose top --depth documents are judged (repeatable)")
    p.add_argument("--depth", type=int, default=10, help="pool depth per run (default 10)")
    p.add_argument("--pairs", help="explicit pairs: JSONL {query_id, doc_id}, 'qid docid' lines or qrels")
    p.add_argument("--out", required=True, help="labels JSONL to write")
    p.add_argument("--judgments-out", help="also write every single judgment (with rationale) here")
    add_client_args(p, default_cache="OUT.cache")
    p.set_defaults(func=_cmd_temporal)


# ------------------------------------------------------------------------------------------------
# meta-eval


def _cmd_meta_eval(args: argparse.Namespace) -> int:
    from ..judge.generation import write_jsonl
    from ..judge.golden import golden_items, meta_eval_frames

    dims = [d for d in args.dimensions.split(",") if d.strip()] if args.dimensions else None
    items = golden_items(dims, prompts_dir=args.prompts)
    if not items:
        raise ValueError("no golden case for the chosen dimensions")
    run = run_session(args, items, None)
    if isinstance(run, int):
        return run
    outcomes = run.outcomes
    cases, summary = meta_eval_frames(outcomes)
    if args.out:
        write_jsonl(args.out, cases.astype(object).where(cases.notna(), None).to_dict(orient="records"))
    print_frame(cases.drop(columns=["error"]), args.format)
    print()
    print_frame(summary, args.format)
    failed = summary[summary["accuracy"] < args.min_accuracy]
    if len(failed):
        print(f"judge does NOT separate the golden cases for: {', '.join(failed['dimension'])} "
              f"(accuracy < {args.min_accuracy:g})", file=sys.stderr)
        for row in cases[cases["error"].notna()].itertuples(index=False):
            print(f"  {row.case_id}: {row.error}", file=sys.stderr)
        return 1
    print(f"judge separates every golden case pair ({int(summary['pairs'].sum())} pairs)", file=sys.stderr)
    return 0


def _add_meta_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("meta-eval", help="golden-case meta-evaluation: does the judge separate good from bad?",
                       description="Judges built-in contrast pairs (supported vs unsupported, complete vs "
                                   "incomplete, coherent vs incoherent, ...). Exit 1 when a dimension's "
                                   "accuracy is below --min-accuracy.")
    p.add_argument("--dimensions", help="comma-separated (default: all dimensions with golden cases)")
    p.add_argument("--min-accuracy", type=float, default=1.0, help="required share of separated pairs (default 1)")
    p.add_argument("--out", help="write the per-case results as JSONL")
    add_client_args(p, default_cache="no cache")
    p.set_defaults(func=_cmd_meta_eval)


# ------------------------------------------------------------------------------------------------
# aggregate


def _cmd_aggregate(args: argparse.Namespace) -> int:
    from ..judge.aggregate import aggregate_judgments

    problems: list[Problem] = []
    dims = [d for d in args.dimensions.split(",") if d.strip()] if args.dimensions else None
    frame = aggregate_judgments(args.judgments, targets=_targets(args.targets), dimensions=dims, scale=args.scale,
                                topics=args.topics, by=args.by, problems=problems, aggregate=args.aggregate)
    _print_problems(problems)
    print_frame(frame, args.format, places=args.places)
    return 0


def _add_aggregate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("aggregate", help="per-dimension macro scores of judgment files, with invalid/missing counts")
    p.add_argument("judgments", nargs="+", help="judgments JSONL file(s)")
    p.add_argument("--targets", help="target turns (missing ones are counted): JSONL, qrels or one id per line")
    p.add_argument("--dimensions", help="comma-separated (default: those present)")
    p.add_argument("--scale", choices=["reteco", "ikat"], help="force a scale (default: from the dimension)")
    p.add_argument("--topics", help="topics metadata for --by")
    p.add_argument("--by", action="append", help="group by a topics column or 'depth' (repeatable)")
    p.add_argument("--aggregate", default="mean", choices=["mean", "median", "mode"],
                   help="how repeated judgments of a turn are combined (default mean)")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.add_argument("--places", type=int, default=4)
    p.set_defaults(func=_cmd_aggregate)


# ------------------------------------------------------------------------------------------------
# lexical


def _cmd_lexical(args: argparse.Namespace) -> int:
    from ..lexical import METRICS, lexical_diagnostics, read_references

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown lexical metric(s) {unknown}; choose from {', '.join(METRICS)}")
    from ..judge.inputs import read_answers

    answers, problems = read_answers(args.answers)
    refs, p2 = read_references(args.references)
    _print_problems(problems + p2)
    per_turn, summary = lexical_diagnostics({t: a.answer for t, a in answers.items()}, refs, metrics=metrics)
    if args.per_turn:
        print_frame(per_turn, args.format, places=args.places)
        print()
    print_frame(summary, args.format, places=args.places)
    return 0


def _add_lexical(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lexical", help="ROUGE-L, METEOR, BERTScore of answers against reference answers")
    p.add_argument("--answers", required=True, help="JSONL {turn_id, answer}")
    p.add_argument("--references", required=True, help="JSONL {turn_id, answer|reference|references}")
    p.add_argument("--metrics", default="rougeL,meteor", help="comma-separated: rougeL, meteor, bertscore")
    p.add_argument("--per-turn", action="store_true", help="also print one row per turn")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.add_argument("--places", type=int, default=4)
    p.set_defaults(func=_cmd_lexical)


# ------------------------------------------------------------------------------------------------
# audit: sample, agreement, report


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _cmd_sample(args: argparse.Namespace) -> int:
    from ..judge.report import read_judgment_rows
    from ..judge.sampling import rating_sheet, sample_items, write_sheet

    problems: list[Problem] = []
    from ..io.ratings import item_ids

    rows = read_judgment_rows(args.judgments, problems)
    if rows.empty or not {"dimension", "score"} <= set(rows.columns):
        raise ValueError(f"{', '.join(args.judgments)}: no judgment rows (turn_id, dimension, score)")
    rows["turn_id"] = item_ids(rows)  # TEMPO judgments: "<query_id> <doc_id> [<period>]"
    topics = None
    if args.topics:
        from ..side import load_topics

        topics = load_topics(args.topics)
    if args.raters.isdigit():
        raters = [f"rater{i}" for i in range(1, int(args.raters) + 1)]
    else:
        raters = _split(args.raters)
    strata = _split(args.stratify)
    sample = sample_items(rows, args.n, stratify=strata, topics=topics, seed=args.seed)
    sheet = rating_sheet(sample, raters, prompts_dir=args.prompts, problems=problems)
    _print_problems(problems)
    write_sheet(sheet, args.out)
    counts = sheet.groupby(strata, sort=True).size().rename("items").reset_index() if strata else None
    print(f"wrote {len(sheet)} item(s) for {len(raters)} rater(s) to {args.out} (seed {args.seed})", file=sys.stderr)
    if counts is not None:
        print_frame(counts, args.format)
    return 0


def _add_sample(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sample", help="a reproducible stratified sample of judged items as a rating sheet (CSV)",
                       description="Valid judged items are stratified (default by dimension), allocated in "
                                   "proportion to the strata (at least one each), sampled with --seed, and "
                                   "written with what the judge saw, the rubric and an empty score_<rater> column "
                                   "per rater (the judge's score is not shown).")
    p.add_argument("--judgments", required=True, nargs="+", help="judgments JSONL file(s)")
    p.add_argument("--n", type=int, required=True, help="number of items to sample")
    p.add_argument("--stratify", default="dimension",
                   help="comma-separated strata: dimension, a topics column (e.g. domain) or depth "
                        "(default: dimension)")
    p.add_argument("--topics", help="topics metadata for strata other than dimension")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--raters", default="2", help="rater names (comma-separated) or a number (default 2)")
    p.add_argument("--prompts", help="folder of the prompt files used for judging (for the rubric)")
    p.add_argument("--out", required=True, help="rating sheet CSV to write")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.set_defaults(func=_cmd_sample)


def _agreement_output(frame, fmt: str, places: int) -> None:
    if fmt == "markdown":
        from ..judge.report import markdown_table

        print(markdown_table(frame_records(frame)), end="")
    else:
        print_frame(frame, fmt, places=places)


def _cmd_agreement(args: argparse.Namespace) -> int:
    from ..judge.agreement import agreement, agreement_and_confusion

    problems: list[Problem] = []
    options = {"scale": args.scale, "bootstrap": args.bootstrap, "seed": args.seed,
               "dimensions": _split(args.dimensions) or None, "problems": problems}
    if args.confusion:  # one reading of the inputs serves both tables (rows left out are reported once)
        table, conf = agreement_and_confusion(args.judgments, args.human, **options)
    else:
        table, conf = agreement(args.judgments, args.human, **options), {}
    _print_problems(problems)
    if args.format == "json" and args.confusion:
        print(json.dumps({"agreement": frame_records(table),
                          "confusion": {d: {"judge": [int(i) for i in m.index],
                                            "human_consensus": [int(c) for c in m.columns],
                                            "counts": m.to_numpy().tolist()} for d, m in conf.items()}},
                         indent=2))
        return 0 if (table["n"] > 0).any() else 1
    _agreement_output(table, args.format, args.places)
    if args.confusion:
        for dim, m in conf.items():
            print(f"\n{dim}: rows = judge score, columns = human consensus")
            _agreement_output(m.reset_index().rename(columns={"judge": "judge \\ human"}).rename(columns=str),
                              args.format, 0)
    if not (table["n"] > 0).any():
        print("reteco-measures: error: no item has both a valid judge score and a human rating", file=sys.stderr)
        return 1
    return 0


def _add_agreement(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("agreement", help="judge vs human raters: weighted kappa, Krippendorff's alpha, rank "
                                         "correlations, exact / within-1 agreement (bootstrap CIs)")
    p.add_argument("--judgments", required=True, nargs="+",
                   help="judgments JSONL (judge generation/ikat, temporal --judgments-out) or TEMPO labels JSONL")
    p.add_argument("--human", required=True,
                   help="ratings CSV/TSV/JSONL (turn_id, dimension, rater, score) or a filled-in rating sheet")
    p.add_argument("--dimensions", help="comma-separated (default: those rated)")
    p.add_argument("--scale", choices=sorted(["reteco", "ikat", "binary"]),
                   help="force a scale (default: from the dimension name)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the CIs (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--confusion", action="store_true", help="also print the confusion matrix of each dimension")
    p.add_argument("--format", default="table", choices=["table", "tsv", "json", "markdown"])
    p.add_argument("--places", type=int, default=4)
    p.set_defaults(func=_cmd_agreement)


def _cmd_report(args: argparse.Namespace) -> int:
    from ..judge.cache import atomic_write_text
    from ..judge.report import build_report, report_json, report_markdown

    problems: list[Problem] = []
    report = build_report(args.judgments, human=args.human, golden=args.golden, targets=_targets(args.targets),
                          price_in=args.price_in, price_out=args.price_out, aggregate=args.aggregate,
                          prompts_dir=args.prompts, bootstrap=args.bootstrap, seed=args.seed, problems=problems)
    _print_problems(problems)
    text = report_json(report) + "\n" if args.format == "json" else report_markdown(report)
    if args.out:
        atomic_write_text(args.out, text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        print(text, end="")
    return 0


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="the judge disclosure for a task report (markdown or json)",
                       description="Scores (raw and normalised), invalid and missing outputs by reason, prompts "
                                   "(version, sha256, text), model requested and returned, decoding settings, "
                                   "retry procedure and causes, repeats and self-consistency, agreement with "
                                   "humans and its sample, golden-case results, tokens and cost.")
    p.add_argument("--judgments", required=True, nargs="+", help="judgments JSONL file(s) (OUT.run.json is read too)")
    p.add_argument("--human", help="human ratings (CSV/TSV/JSONL or a filled-in rating sheet)")
    p.add_argument("--golden", help="golden-case results: the --out file of judge meta-eval")
    p.add_argument("--targets", help="target turns, to count missing outputs")
    p.add_argument("--price-in", type=float, help="price per million prompt tokens (default: the run record's)")
    p.add_argument("--price-out", type=float, help="price per million completion tokens (default: the run record's)")
    p.add_argument("--aggregate", choices=["mean", "median", "mode"],
                   help="how repeats are combined (default: the run record's, else mean)")
    p.add_argument("--prompts", help="folder of the prompt files used for judging, if not the packaged ones")
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--format", default="markdown", choices=["markdown", "json"])
    p.add_argument("--out", help="write the report here instead of stdout")
    p.set_defaults(func=_cmd_report)


# ------------------------------------------------------------------------------------------------
# calibrate: judge means corrected by the human spot-check (prediction-powered inference)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from ..stats.calibrate import calibrate

    problems: list[Problem] = []
    judge = args.judgments if len(args.judgments) > 1 or args.by else args.judgments[0]
    table = calibrate(judge, args.human, method=args.method, ci=args.ci, scale=args.scale,
                      dimensions=_split(args.dimensions) or None, by=args.by, aggregate=args.aggregate,
                      problems=problems)
    _print_problems(problems)
    _agreement_output(table, args.format, args.places)
    if not table["calibrated"].notna().any():
        print("reteco-measures: error: no judged item has a human rating: nothing could be calibrated",
              file=sys.stderr)
        return 1
    return 0


def _add_calibrate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="judge means calibrated by human ratings (PPI / PPI++), with intervals "
                                         "and the judge's bias",
                       description="Prediction-powered means (Angelopoulos et al. 2023; PPI++: Angelopoulos, "
                                   "Duchi & Zrnic 2023) on the normalised 0-1 scale: the judge's scores of every "
                                   "item corrected by the human ratings of the rated items. Items without a "
                                   "human rating are the unlabelled set. Exit 1 when nothing could be calibrated.")
    p.add_argument("--judgments", required=True, nargs="+",
                   help="judgments JSONL file(s); with --by run, one file per run (named by its file name)")
    p.add_argument("--human", required=True,
                   help="ratings CSV/TSV/JSONL (turn_id, dimension, rater, score [, the --by column]) or a "
                        "filled-in rating sheet")
    p.add_argument("--method", default="ppi++", choices=["ppi", "ppi++"],
                   help="ppi++ (power-tuned, default) or ppi (classic, lambda = 1)")
    p.add_argument("--by", choices=["run"],
                   help="one row per run: one judgments file per run, named by its file name (ratings may carry a "
                        "run column)")
    p.add_argument("--ci", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--dimensions", help="comma-separated (default: those judged)")
    p.add_argument("--scale", choices=sorted(["reteco", "ikat", "binary"]),
                   help="force a scale (default: from the dimension name)")
    p.add_argument("--aggregate", default="mean", choices=["mean", "median", "mode"],
                   help="how repeated judgments of an item are combined (default mean)")
    p.add_argument("--format", default="table", choices=["table", "tsv", "json", "markdown"])
    p.add_argument("--places", type=int, default=4)
    p.set_defaults(func=_cmd_calibrate)


# ------------------------------------------------------------------------------------------------
# prompts


def _cmd_prompts(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..judge.prompts import FAMILIES, load_prompt

    rows = []
    for family, dims in FAMILIES.items():
        for dim in dims:
            p = load_prompt(dim, directory=args.prompts)
            rows.append({"family": family, "dimension": dim, "version": p.version, "scale": f"{p.low}-{p.high}",
                         "sha256": p.sha256, "file": p.source})
    print_frame(pd.DataFrame(rows), args.format)
    if args.show:
        p = load_prompt(args.show, directory=args.prompts)
        print(f"\n=== system ===\n{p.system}\n=== user ===\n{p.user}")
    return 0


def _add_prompts(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prompts", help="list the judge prompts with version, scale and sha256")
    p.add_argument("--prompts", help="folder of your own prompt files instead of the packaged ones")
    p.add_argument("--show", metavar="DIMENSION", help="also print this dimension's prompt text")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.set_defaults(func=_cmd_prompts)


# ------------------------------------------------------------------------------------------------


def configure(sub: argparse._SubParsersAction) -> None:
    """Add ``judge`` and its sub-commands to the top-level parser."""
    p = sub.add_parser("judge", help="LLM judgments (generation, iKAT, temporal labels), meta-eval, aggregation",
                       epilog="The judge calls an OpenAI-compatible endpoint: OPENAI_BASE_URL (default the OpenAI "
                       "API; --base-url overrides it) and OPENAI_API_KEY from the environment (no key: no "
                       "Authorization header).")
    jsub = p.add_subparsers(dest="judge_command", metavar="SUBCOMMAND")
    jsub.required = True
    _add_generation(jsub)
    _add_ikat(jsub)
    _add_temporal(jsub)
    _add_meta_eval(jsub)
    _add_aggregate(jsub)
    _add_lexical(jsub)
    _add_prompts(jsub)
    _add_sample(jsub)
    _add_agreement(jsub)
    _add_report(jsub)
    _add_calibrate(jsub)

