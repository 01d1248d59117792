"""``reteco-measures judge holes``: judge only the holes of the runs' top K, keep provenance.

``--qrels Q --runs R... --depth K --topics T --documents D --model M --out QRELS_OUT``: the
unjudged (query, document) pairs of the runs' top K (queries the qrels judge) go to the judge
(`reteco_measures.judge.holes`), through the judge's session and cache: a pair judged before (in
the cache, or already in ``--qrels`` with any provenance) is never asked again. Writes the extended
qrels (tab-separated, header ``query_id iteration doc_id relevance provenance``: ``human`` or the
model's name) and prints, per run, the measure without and with the filled holes, Judged@K before
and after, and the PPI-calibrated value with its interval: by default the judge also labels a random sample
of human-judged pairs of the same runs' top K (``--calibration-sample N``, default 200, drawn by
query with ``--calibration-seed``; cached like every judgment), and those labels with the human
ones calibrate the filled value (``--model-labels`` adds model judgments of human-judged pairs from
a file). Exit 0; 1 when a judgment failed (a hole stays a hole, a calibration pair is left out); 2
usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import judge_cmd
from .report import print_frame

__all__ = ["configure", "configure_judge"]


def _cmd_holes(args: argparse.Namespace) -> int:
    from ..judge.holes import fill_holes, hole_report, write_extended_qrels
    from ..judge.inputs import read_documents, read_temporal_topics
    if args.depth < 1:
        raise ValueError("--depth must be >= 1")
    if args.calibration_sample < 0:
        raise ValueError("--calibration-sample must be >= 0")
    topics, problems = read_temporal_topics(args.topics)
    documents, p2 = read_documents(args.documents)
    for p in problems + p2:
        print(f"reteco-measures: warning: {p}", file=sys.stderr)
    status: dict[str, int] = {}

    def judge(items):
        run = judge_cmd.run_session(args, items, f"{args.out}.cache")
        if isinstance(run, int):
            status["code"] = run
            return []
        return run.outcomes

    result = fill_holes(args.qrels, args.runs, topics=topics, documents=documents, judge=judge, depth=args.depth,
                        prompts_dir=args.prompts, calibration_sample=args.calibration_sample,
                        seed=args.calibration_seed)
    if "code" in status:
        return status["code"]
    write_extended_qrels(args.out, result.qrels)
    print(f"{len(result.holes)} hole(s) in the top {args.depth}: {result.asked} asked, {result.cached} from the "
          f"cache, {result.invalid} invalid (left holes); extended qrels written to {args.out}", file=sys.stderr)
    print(f"calibration: {len(result.calibration)} human-judged pair(s) sampled: {result.calibration_asked} asked, "
          f"{result.calibration_cached} from the cache, {result.calibration_invalid} invalid (left out)",
          file=sys.stderr)
    labels = [result.model_labels]
    if args.model_labels:
        from ..judge.holes import read_holes_qrels

        labels.insert(0, read_holes_qrels(args.model_labels))
    runs = {Path(r).name: r for r in args.runs}
    table = hole_report(args.qrels, result.qrels, runs, measure=args.measure, depth=args.depth,
                        model_labels=labels)
    print_frame(table, args.format)
    return 1 if result.invalid or result.calibration_invalid else 0


def _judge_sources(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = Path(item).stem, item
        if name in out:
            raise ValueError(f"judge {name!r} given twice")
        out[name] = path
    return out


def _cmd_panel(args: argparse.Namespace) -> int:
    from ..judge.panel import panel

    scale = args.scale
    result = panel(_judge_sources(args.judge), args.human, scale=scale, method=args.method, ci=args.ci,
                   n_resamples=args.resamples, seed=args.seed)
    for dim in dict.fromkeys(result.aggregate["dimension"]):
        print(f"== {dim}: judge x judge quadratic-weighted kappa")
        print(result.matrix(dim, "kappa_quadratic").round(args.places).to_string())
        print(f"== {dim}: judge x judge ordinal alpha")
        print(result.matrix(dim, "alpha_ordinal").round(args.places).to_string())
        if not result.error_correlation.empty:
            print(f"== {dim}: correlation of the judges' errors against the humans")
            print(result.matrix(dim, "r").round(args.places).to_string())
        print()
    for title, frame in (("errors against the human ratings", result.errors),
                         ("effective committee size k/(1+(k-1)rho)", result.effective),
                         ("panel aggregates (calibrated: PPI against the human ratings)", result.aggregate)):
        if len(frame):
            print(f"== {title}")
            print_frame(frame, "table", places=args.places)
            print()
    return 0


def _cmd_repeats(args: argparse.Namespace) -> int:
    from ..judge.repeats import gate_repeats, repeats

    result = repeats(args.judgments, scale=args.scale, pass_threshold=args.pass_threshold, ci=args.ci,
                     n_resamples=args.resamples, seed=args.seed)
    print_frame(result.summary, "table", places=args.places)
    if not args.baseline:
        return 0
    if not args.dimension:
        raise ValueError("--baseline needs --dimension (the dimension the gate decides on)")
    g = gate_repeats(args.baseline, args.judgments, dimension=args.dimension, margin=args.margin, alpha=args.alpha,
                     scale=args.scale, seed=args.seed)
    print(f"\ngate {args.dimension}: delta {g.delta:+.4f} [{g.ci_low:+.4f}, {g.ci_high:+.4f}], one-sided "
          f"p = {g.p_value:.4f}, n = {g.n} items: {g.verdict} (exit {g.exit_code}): {g.reason}")
    return g.exit_code


def _scale_arg(value: str):
    if "-" in value and value.replace("-", "").isdigit():
        low, high = value.split("-")
        return int(low), int(high)
    return value


def configure(jsub: argparse._SubParsersAction) -> None:
    """Add ``judge holes``, ``judge panel`` and ``judge repeats`` to the ``judge`` sub-commands."""
    add_client_args = judge_cmd.add_client_args

    p = jsub.add_parser("panel", help="judge panels: judge x judge kappa/alpha, errors against humans and their "
                                      "correlation, effective committee size, calibrated panel means")
    p.add_argument("--judge", required=True, nargs="+", metavar="NAME=FILE",
                   help="each judge's judgments JSONL (NAME= optional: the file name otherwise)")
    p.add_argument("--human", help="human ratings (CSV/TSV/JSONL: turn_id, dimension, rater, score)")
    p.add_argument("--scale", type=_scale_arg, help="reteco, ikat, binary or LOW-HIGH (default: each dimension's)")
    p.add_argument("--method", default="ppi++", choices=["ppi++", "ppi"], help="calibration (default ppi++)")
    p.add_argument("--ci", type=float, default=0.95)
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap of the effective size (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--places", type=int, default=4)
    p.set_defaults(func=_cmd_panel)

    p = jsub.add_parser("repeats", help="repeated judge runs: replicate-level intervals, flip rates, pass^k; "
                                        "with --baseline, the gate between two judged systems (exit 0/1/2)")
    p.add_argument("--judgments", required=True, help="judgments JSONL with several repeats per item")
    p.add_argument("--scale", type=_scale_arg, help="reteco, ikat, binary or LOW-HIGH (default: each dimension's)")
    p.add_argument("--pass-threshold", type=float, help="a score at or above it passes (default: 1 on 0-1 scales)")
    p.add_argument("--ci", type=float, default=0.95)
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--baseline", help="the baseline system's judgments: gate --judgments against it")
    p.add_argument("--dimension", help="the dimension of the gate")
    p.add_argument("--margin", type=float, default=0.0)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--places", type=int, default=4)
    p.set_defaults(func=_cmd_repeats)

    p = jsub.add_parser("holes", help="judge only the unjudged pairs of the runs' top K; extended qrels with "
                                      "provenance; each run's measure with and without the filled holes",
                        description="Only the (query, document) pairs of the runs' top --depth that the qrels do "
                                    "not judge go to the judge (temporal relevance, 0/1); pairs in the cache or "
                                    "already in --qrels are never asked again.")
    p.add_argument("--qrels", required=True, help="qrels (TREC, or an extended qrels written by judge holes)")
    p.add_argument("--runs", required=True, nargs="+", help="run files")
    p.add_argument("--depth", type=int, default=10, help="top K of each run (default 10)")
    p.add_argument("--topics", required=True, help="JSONL {query_id|id, query|text, required_periods: [str]}")
    p.add_argument("--documents", required=True, help="JSONL {doc_id|id, content|text}")
    p.add_argument("--out", required=True, help="extended qrels to write (tab-separated, with provenance)")
    p.add_argument("--measure", default="nDCG@10", help="the measure reported per run (default nDCG@10)")
    p.add_argument("--calibration-sample", type=int, default=200, metavar="N",
                   help="human-judged pairs of the runs' top K the judge labels too, for the PPI calibration "
                        "(default 200, all when fewer; drawn by query; 0: none)")
    p.add_argument("--calibration-seed", type=int, default=0, help="seed of the calibration sample (default 0)")
    p.add_argument("--model-labels", help="more model judgments of human-judged pairs (qrels) for the PPI "
                                          "calibration (they win over the sample's labels of the same pair)")
    add_client_args(p, default_cache="OUT.cache")
    p.set_defaults(func=_cmd_holes)


def configure_judge(sub: argparse._SubParsersAction) -> None:
    """The ``judge`` command (`judge_cmd.configure`) with ``holes``, ``panel`` and ``repeats``."""
    judge_cmd.configure(sub)
    parser = sub.choices.get("judge")
    if parser is None:
        return
    jsub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    configure(jsub)
