"""``reteco-measures judge holes``: judge only the holes of the runs' top K, keep provenance.

``--qrels Q --runs R... --depth K --topics T --documents D --model M --out QRELS_OUT``: the
unjudged (query, document) pairs of the runs' top K (queries the qrels judge) go to the judge
(`reteco_measures.judge.holes`), through the judge's session and cache: a pair judged before (in
the cache, or already in ``--qrels`` with any provenance) is never asked again. Writes the extended
qrels (tab-separated, header ``query_id iteration doc_id relevance provenance``: ``human`` or the
model's name) and prints, per run, the measure without and with the filled holes, Judged@K before
and after, and the PPI-calibrated value (with ``--model-labels``: model judgments of human-judged
pairs). Exit 0; 1 when a judgment failed (the pair stays a hole); 2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .report import print_frame

__all__ = ["configure"]


def _cmd_holes(args: argparse.Namespace) -> int:
    from ..judge.holes import fill_holes, hole_report, write_extended_qrels
    from ..judge.inputs import read_documents, read_temporal_topics
    from . import judge_cmd

    if args.depth < 1:
        raise ValueError("--depth must be >= 1")
    topics, problems = read_temporal_topics(args.topics)
    documents, p2 = read_documents(args.documents)
    for p in problems + p2:
        print(f"reteco-measures: warning: {p}", file=sys.stderr)
    status: dict[str, int] = {}

    def judge(items):
        outcomes, run = judge_cmd._run(args, items, f"{args.out}.cache")
        if outcomes is None:
            status["code"] = run
            return []
        return outcomes

    result = fill_holes(args.qrels, args.runs, topics=topics, documents=documents, judge=judge, depth=args.depth,
                        prompts_dir=args.prompts)
    if "code" in status:
        return status["code"]
    write_extended_qrels(args.out, result.qrels)
    print(f"{len(result.holes)} hole(s) in the top {args.depth}: {result.asked} asked, {result.cached} from the "
          f"cache, {result.invalid} invalid (left holes); extended qrels written to {args.out}", file=sys.stderr)
    labels = None
    if args.model_labels:
        from ..judge.holes import _qrels

        labels = _qrels(args.model_labels)
    runs = {Path(r).name: r for r in args.runs}
    table = hole_report(args.qrels, result.qrels, runs, measure=args.measure, depth=args.depth,
                        model_labels=labels)
    print_frame(table, args.format)
    return 1 if result.invalid else 0


def configure(jsub: argparse._SubParsersAction) -> None:
    """Add ``judge holes`` to the ``judge`` sub-commands."""
    from .judge_cmd import _add_client_args

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
    p.add_argument("--model-labels", help="model judgments of human-judged pairs (qrels) for the PPI calibration")
    _add_client_args(p, default_cache="OUT.cache")
    p.set_defaults(func=_cmd_holes)
