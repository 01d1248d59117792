"""``reteco-measures score BENCHMARK ...``: argparse over `Benchmark.score`.

Each benchmark's declared options become flags (``corpus_scope`` → ``--corpus-scope``); the
command parses them, calls the engine once, hands the `Score`
to `reteco_measures.report.score.render_score` and chooses the exit code (1 when the
submission is invalid by the benchmark's rules, 0 otherwise). A submission of which nothing can
be scored (empty, unreadable, or sharing no query id with the benchmark: see
`reteco_measures.benchmarks.score.unscorable_reason`) prints its reason first on stderr, then
the contract's problems, and no table of zeros (exit 1).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..benchmarks import BENCHMARKS, Benchmark
from ..benchmarks.score import unscorable_reason
from ..platforms.harbor import score_harbor
from ..report.score import print_checks, render_score
from .read_limits import add_read_limit_options
from .report import OUTPUT_FORMATS

__all__ = ["add_score_parsers", "add_benchmark_options", "add_stream_option", "benchmark_options", "demo_argv", "score_exit_code"]


def add_benchmark_options(p: argparse.ArgumentParser, bench: Benchmark, *, data: bool = True) -> None:
    """``--data``, ``--split`` and one flag per declared option of ``bench``."""
    if data:
        p.add_argument("--data", help="data root (default: $RETECO_DATA), or a folder holding the reference "
                                      "files directly")
        if bench.default_split is not None:
            p.add_argument("--split", default=bench.default_split,
                           help=f"split (default {bench.default_split})")
        add_read_limit_options(p)
    for o in bench.cli.options:
        kwargs: dict[str, Any] = {"dest": o.name, "help": o.help}
        if o.action is not None:
            kwargs["action"] = o.action
            if o.action == "store_const":
                kwargs["const"] = o.const
                kwargs["default"] = o.default
        else:
            kwargs["default"] = o.default
            if o.type is not None:
                kwargs["type"] = o.type
            if o.choices is not None:
                kwargs["choices"] = list(o.choices)
        p.add_argument(o.cli_flag, **kwargs)


def add_stream_option(p: argparse.ArgumentParser) -> None:
    """``--stream``: score a run file in blocks of whole queries (`Benchmark.score(..., stream=True)`)."""
    p.add_argument("--stream", action="store_true",
                   help="read the run file in blocks of whole queries (out of core; the same numbers); a benchmark "
                        "whose contract judges the whole file says why it cannot")


def benchmark_options(args: argparse.Namespace, bench: Benchmark) -> dict[str, Any]:
    """The declared options' values from parsed arguments."""
    return {o.name: getattr(args, o.name) for o in bench.cli.options if hasattr(args, o.name)}


def score_exit_code(score: Any) -> int:
    """1 when the submission is invalid by the benchmark's rules (ChunQiu batch, unreadable iKAT
    run), else 0."""
    return 0 if score.valid else 1


def _cmd_score(args: argparse.Namespace) -> int:
    bench = BENCHMARKS[args.bench]
    reward_json = getattr(args, "reward_json", None)
    if reward_json and args.stream:
        raise ValueError("--stream and --reward-json: Harbor's verifier reads the upload whole under its own limits; "
                         "use one or the other")
    if reward_json:
        return _score_harbor(args, bench, reward_json)
    submission = args.submission
    if isinstance(submission, list):
        submission = submission[0] if len(submission) == 1 else submission
    score = bench.score(submission, data=args.data, split=getattr(args, "split", None),
                        stream=args.stream, **benchmark_options(args, bench))
    reason = unscorable_reason(score)
    if reason is not None:  # nothing of the submission was scored: the reason first, no table of zeros
        print(f"reteco-measures: error: {args.submission}: not scored: {reason}", file=sys.stderr)
        print_checks(score, table=True, limit=args.limit, out=sys.stderr, err=sys.stderr)
        return 1
    render_score(score, args.format, places=args.places, per_query=args.per_query, limit=args.limit)
    return score_exit_code(score)


def _score_harbor(args: argparse.Namespace, bench: Benchmark, reward_json: str) -> int:
    """Harbor's path (`reteco_measures.platforms.harbor.score_harbor`): a refused upload prints
    its reason (exit 1), a score is shown as without ``--reward-json``."""
    outcome = score_harbor(bench.name, args.submission, reward_json, data=args.data,
                           split=getattr(args, "split", None), options=benchmark_options(args, bench),
                           max_seconds=args.max_seconds, max_memory=args.max_memory)
    if outcome.score is None:
        print(f"error: submission refused: {outcome.refused}", file=sys.stderr)
        return 1
    render_score(outcome.score, args.format, places=args.places, per_query=args.per_query, limit=args.limit)
    return score_exit_code(outcome.score)


def add_score_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``score`` command with one sub-command per registered benchmark."""
    p = sub.add_parser("score", help="official-style scoring of one benchmark")
    presets = p.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    presets.required = True
    for name, bench in sorted(BENCHMARKS.items()):
        pp = presets.add_parser(name, help=bench.cli.help, description=bench.cli.help)
        # RETECO 2a: the starter kit writes one run file per domain, scored together as one submission
        several = name == "reteco-2a"
        pp.add_argument("submission", metavar=bench.cli.run_arg, help=bench.cli.run_help, nargs="+" if several else None)
        add_benchmark_options(pp, bench)
        pp.add_argument("--per-query", action="store_true", help="also print per-query values")
        pp.add_argument("--limit", type=int, default=50, help="problems listed in table output")
        pp.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
        pp.add_argument("--places", type=int, default=4)
        add_stream_option(pp)
        if bench.reward is not None:
            pp.add_argument("--reward-json", metavar="PATH",
                            help="write Harbor's reward file {\"reward\": r} here (e.g. /logs/verifier/reward.json) "
                                 "and the diagnostics beside it (<stem>_details.json)")
            pp.add_argument("--max-seconds", type=float, metavar="S",
                            help="with --reward-json: wall-clock seconds for scoring the submission; 0: none "
                                 "(default 300, as codabench score)")
            pp.add_argument("--max-memory", type=int, metavar="BYTES",
                            help="with --reward-json: address space of the scoring process in bytes; 0: none "
                                 "(default 6 GiB, as codabench score)")
        pp.set_defaults(func=_cmd_score, bench=name)


def demo_argv(name: str, sample_root: Path) -> list[str]:
    """The arguments after ``score NAME`` that score the bundled sample (from the benchmark's
    ``demo`` declaration)."""
    bench = BENCHMARKS[name]
    if bench.cli.demo is None:
        raise ValueError(f"benchmark {name!r} has no demo")
    kw = dict(bench.cli.demo(sample_root))
    argv = [str(kw.pop("run"))]
    for key in ("data", "split"):
        if kw.get(key) is not None:
            argv += [f"--{key}", str(kw.pop(key))]
        kw.pop(key, None)
    flags = {o.name: o for o in bench.cli.options}
    for key, value in kw.items():
        o = flags[key]
        if o.action == "store_true":
            if value:
                argv.append(o.cli_flag)
        else:
            argv += [o.cli_flag, str(value)]
    return argv
