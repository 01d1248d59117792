"""``reteco-measures`` command line.

Sub-commands: ``eval``, ``validate``, ``reward``, ``score BENCHMARK``, ``demo``, ``datasets``
(the ir_datasets CLI with our datasets loaded), ``ir_measures`` (the ir_measures CLI with our
measures registered) and, when the judge extra is installed, ``judge``.

Exit codes: 0 ok; 1 the submission is invalid / a check failed; 2 usage error or missing data.
User-data problems are printed as ``path:line: query_id: what``, never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

import pandas as pd

from .. import __version__
from ..errors import DataFormatError
from ..kernels.ranking import TIE_BREAKS
from .report import OUTPUT_FORMATS, print_frame

__all__ = ["main", "build_parser", "COMMANDS", "command"]

#: extra sub-commands contributed by other modules: name -> (configure(subparsers))
COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {}


def command(name: str):
    """Decorator for modules that add a sub-command: ``fn(subparsers)`` creates its parser and
    sets ``func`` (``args -> exit code``) as default."""

    def deco(fn):
        COMMANDS[name] = fn
        return fn

    return deco


# ------------------------------------------------------------------------------------------------
# eval


def _cmd_eval(args: argparse.Namespace) -> int:
    from ..api import evaluate, iter_calc, measure_label, parse_measures

    measures = parse_measures(args.measures)
    kwargs = dict(topics=args.topics, labels=args.labels, tie_break=args.tie_break)
    if args.per_query:
        rows = [
            {"query_id": m.query_id, "measure": measure_label(m.measure), "value": float(m.value)}
            for m in iter_calc(measures, args.qrels, args.run, **kwargs)
        ]
        frame = pd.DataFrame(rows, columns=["query_id", "measure", "value"])
        summary = evaluate(measures, args.qrels, args.run, **kwargs)
        summary.insert(0, "query_id", "all")
        frame = pd.concat([frame, summary[["query_id", "measure", "value"]]], ignore_index=True)
    else:
        frame = evaluate(measures, args.qrels, args.run, by=args.by, **kwargs)
    print_frame(frame, args.format, places=args.places)
    return 0


def _add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate a run with any mix of ir_measures and reteco measures")
    p.add_argument("qrels", help="qrels file (TREC or JSONL)")
    p.add_argument("run", help="run file (TREC 6 columns or JSONL results)")
    p.add_argument("measures", nargs="+", help="measures, e.g. nDCG@10 AP@10 'nDCG|FC@10' TC@10")
    p.add_argument("--topics", help="topics metadata file (JSONL/TSV) with query_id, domain, ...")
    p.add_argument("--labels", help="frozen temporal labels JSONL")
    p.add_argument("--by", action="append", help="group by a topics column or 'depth' (repeatable)")
    p.add_argument("--per-query", action="store_true", help="one row per query and measure, then 'all'")
    p.add_argument("--tie-break", default="trec_eval", choices=list(TIE_BREAKS))
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.add_argument("--places", type=int, default=4, help="decimals in table/tsv output")
    p.set_defaults(func=_cmd_eval)


# ------------------------------------------------------------------------------------------------
# validate


def _cmd_validate(args: argparse.Namespace) -> int:
    from ..contracts import validate_run

    report = validate_run(
        args.run,
        args.contract,
        corpus=args.corpus,  # paths go through: each contract reads its own id files
        queries=args.queries,
        top_k=args.top_k,
    )
    if args.format == "json":
        print(json.dumps({"contract": report.contract, "ok": report.ok, "valid": report.valid,
                          "rows": len(report.run), "errors": [p.as_dict() for p in report.errors]}, indent=2))
    else:
        print(report.summary(limit=args.limit))
    if args.output:
        out = report.run
        with open(args.output, "w", encoding="utf-8") as f:
            for row in out.itertuples(index=False):
                f.write(f"{row.query_id} Q0 {row.doc_id} {row.rank} {row.score!r} cleaned\n")
    return 0 if report.valid else 1


def _add_validate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check a run against a benchmark contract")
    p.add_argument("run")
    p.add_argument("--contract", required=True, help="reteco | chunqiu | spoken | ikat")
    p.add_argument("--corpus", help="doc ids: JSONL with doc_id/id, or one id per line")
    p.add_argument("--queries", help="expected query ids: JSONL, qrels, or one id per line")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--limit", type=int, default=50, help="problems shown in the text summary")
    p.add_argument("--output", help="write the cleaned run (TREC format) here")
    p.add_argument("--format", default="text", choices=["text", "json"])
    p.set_defaults(func=_cmd_validate)


# ------------------------------------------------------------------------------------------------
# reward


def _cmd_reward(args: argparse.Namespace) -> int:
    from ..reward import reward

    values = [reward(q, a=args.a, b=args.b) for q in args.q]
    for q, r in zip(args.q, values):
        print(f"{q}\t{r:.{args.places}f}" if len(values) > 1 else f"{r:.{args.places}f}")
    return 0


def _add_reward(sub: argparse._SubParsersAction) -> None:
    from ..reward import DEFAULT_A, DEFAULT_B

    p = sub.add_parser("reward", help="map raw quality q in [0, 1] to the piecewise reward")
    p.add_argument("q", type=float, nargs="+")
    p.add_argument("--a", type=float, default=DEFAULT_A, help=f"anchor on the 0-100 scale (default {DEFAULT_A:g})")
    p.add_argument("--b", type=float, default=DEFAULT_B, help=f"reference quality (default {DEFAULT_B!r})")
    p.add_argument("--places", type=int, default=6)
    p.set_defaults(func=_cmd_reward)


# ------------------------------------------------------------------------------------------------
# score


def _add_score(sub: argparse._SubParsersAction) -> None:
    from ..presets import PRESETS

    p = sub.add_parser("score", help="official-style scoring of one benchmark")
    presets = p.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    presets.required = True
    for name, preset in sorted(PRESETS.items()):
        pp = presets.add_parser(name, help=preset.help)
        preset.configure(pp)
        pp.set_defaults(func=preset.run)


# ------------------------------------------------------------------------------------------------
# demo


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..sample.demo import run_demo

    return run_demo(fmt=args.format)


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="evaluate the bundled synthetic sample end to end")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.set_defaults(func=_cmd_demo)


# ------------------------------------------------------------------------------------------------
# pass-through CLIs


def _cmd_datasets(args: argparse.Namespace) -> int:
    import ir_datasets

    try:
        ir_datasets.main(list(args.rest))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _cmd_ir_measures(args: argparse.Namespace) -> int:
    import ir_measures.__main__ as irm_main

    sys.argv = ["ir_measures", *args.rest]
    try:
        irm_main.main_cli()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _add_passthrough(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("datasets", help="the ir_datasets CLI with reteco-measures' datasets registered",
                       add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_cmd_datasets)
    p = sub.add_parser("ir_measures", help="the ir_measures CLI with reteco-measures' measures registered",
                       add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_cmd_ir_measures)


# ------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    import reteco_measures  # noqa: F401  (registers measures, datasets, presets)

    from .._plugins import import_present

    import_present("reteco_measures.cli", ["judge_cmd", "compare_cmd"])
    parser = argparse.ArgumentParser(
        prog="reteco-measures",
        description="Evaluation for RETECO (TEMPO, RECOR), ChunQiu, Spoken-Query and TREC iKAT 2023.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_eval(sub)
    _add_validate(sub)
    _add_reward(sub)
    _add_score(sub)
    _add_demo(sub)
    _add_passthrough(sub)
    for _name, configure in sorted(COMMANDS.items()):
        configure(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DataFormatError as exc:
        print(f"reteco-measures: {exc}", file=sys.stderr)
        return 1
    except (FileNotFoundError, ValueError, NotImplementedError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"reteco-measures: error: {msg}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
