"""``reteco-measures`` command line.

Sub-commands: ``eval``, ``validate``, ``reward``, ``score BENCHMARK``, ``demo``, ``datasets``
(the ir_datasets CLI with our datasets loaded), ``ir_measures`` (the ir_measures CLI with our
measures registered) and, when the judge extra is installed, ``judge``.

Exit codes: 0 ok; 1 the submission is invalid / a check failed (including inputs that would
score a silent zero: an empty run or qrels, query ids that do not meet); 2 usage error or missing
data (a missing file, a directory given as a file, files in the wrong order); 3 an internal error
(one line; ``RETECO_MEASURES_DEBUG=1`` shows the traceback); 4 stopped by a limit (``judge``:
``--max-requests``, ``--max-tokens``, ...); 5 a missing optional extra (the message is its
``pip install`` line).
User-data problems are printed as ``path:line: query_id: what``, never as a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from .._version import __version__
from ..benchmarks.reteco.contract import StreamDiscards, corpus_scope, discard_counts
from ..benchmarks.tempo.data import TEMPO_DOMAINS
from ..datasets import register
from ..errors import (
    DataFormatError,
    EmptyInputWarning,
    InputMismatchError,
    QueryIdMismatchWarning,
    describe_kinds,
    display,
    display_message,
)
from ..io.memory import lean_allocators
from ..io.writers import write_trec_run
from ..kernels.ranking import TIE_BREAKS
from . import compare_cmd, gate_cmd, holes_cmd, leaderboard_cmd, platform_cmd, rank_agreement_cmd
from .commands import DESCRIPTION
from .read_limits import add_read_limit_options, read_limits_of
from .report import OUTPUT_FORMATS, print_frame
from .score_cmd import add_score_parsers

__all__ = ["main", "build_parser", "COMMANDS", "command"]

#: extra sub-commands: name -> configure(subparsers); ours are imported above and listed here, a
#: program embedding this command line may add its own with `command`
COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {
    "codabench": platform_cmd.configure,
    "compare": compare_cmd.configure,
    "compare-leaderboards": rank_agreement_cmd.configure,
    "gate": gate_cmd.configure,
    "judge": holes_cmd.configure_judge,
    "leaderboard": leaderboard_cmd.configure,
}


def command(name: str):
    """Decorator adding a sub-command: ``fn(subparsers)`` creates its parser and sets ``func``
    (``args -> exit code``) as default."""

    def deco(fn):
        COMMANDS[name] = fn
        return fn

    return deco


# ------------------------------------------------------------------------------------------------
# eval


def _first_fields(path: str) -> int | None:
    """Columns of the first data line of a TREC-style file (None for JSON or unreadable files)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError:
        return None
    for raw in head.splitlines():
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        if line[:1] in (b"{", b"["):
            return None
        return len(line.split())
    return None


def _check_order(qrels: str, run: str) -> None:
    """Refuse files passed in the wrong order (a 6-column run where the qrels belong)."""
    q, r = _first_fields(qrels), _first_fields(run)
    if q == 6:
        what = (
            f"the files seem swapped: {qrels!r} looks like a run (6 columns) and {run!r} like qrels (4 columns)"
            if r == 4
            else f"{qrels!r} looks like a run (6 columns), not qrels"
        )
        raise _UsageError(f"{what}; the order is: eval QRELS RUN MEASURE...")


class _UsageError(ValueError):
    """A command-line usage problem (exit code 2)."""


def _contract_note(run: pd.DataFrame, corpus: pd.DataFrame | None, queries: object = None,
                   corpus_arg: str | None = None) -> str | None:
    """What the RETECO contract would discard from ``run`` and how to apply it (None: nothing).

    Only the kinds the note names are counted (``duplicate`` and, with ``corpus``,
    ``unknown_doc`` and ``other_domain_doc``), with the contract's own row masks; the contract is
    not run (no second validation pass over a run that is scored as it is)."""
    return _discard_note(discard_counts(run, corpus, queries), corpus_arg)


def _discard_note(counts: dict[str, int], corpus_arg: str | None) -> str | None:
    """The note of `_contract_note` for discard counts (also added up block by block, ``--stream``)."""
    if not counts:
        return None
    return (
        f"{sum(counts.values())} row(s) would be discarded by the RETECO contract ({describe_kinds(counts)}): "
        f"this eval scores them (a repeated document keeps its last score); official scores apply the contract: "
        f"add --contract reteco --corpus {corpus_arg or 'CORPUS'}"
    )


def _cmd_eval(args: argparse.Namespace) -> int:
    from ..api import evaluate, iter_calc
    from ..engine.evaluate import evaluate_table, qrels_order
    from ..io.convert import as_qrels_frame, as_run_frame
    from ..measures.names import measure_name, parse_measures

    measures = parse_measures(args.measures)  # a bad measure or a cutoff < 1 stops here
    _check_order(args.qrels, args.run)
    qrels = as_qrels_frame(args.qrels)
    if qrels.empty:
        raise EmptyInputWarning(f"qrels {args.qrels!r} have no usable row; nothing can be scored")
    if args.stream and args.contract:
        raise ValueError("--stream reads the run in blocks; a --contract needs the whole run: use one or the other")
    if args.contract:
        from ..contracts import validate_run

        corpus, queries, scope = args.corpus, args.queries, None
        if args.contract == "reteco":  # the corpus scope of the benchmark scorers, where the files allow it
            corpus, queries, scope = corpus_scope(qrels, args.corpus, args.queries, args.topics, args.corpus_scope,
                               domains=TEMPO_DOMAINS)
        report = validate_run(args.run, args.contract, corpus=corpus, queries=queries)
        if not report.valid:  # the official scorer would not score it either
            print(report.summary(limit=10), file=sys.stderr)
            print(f"reteco-measures: error: the run is not valid under the {args.contract} contract; "
                  f"see 'reteco-measures validate'", file=sys.stderr)
            return 1
        if scope:
            print(f"note: contract {args.contract}: {scope}", file=sys.stderr)
        print(f"note: contract {args.contract}: {len(report.run)} row(s) kept; removed or reported: "
              f"{describe_kinds(report.problem_counts())}", file=sys.stderr)
        run = report.run
    elif args.stream:  # the evaluation reads the file in blocks of whole queries
        run = args.run
        stream_scope = corpus_scope(qrels, args.corpus, args.queries, args.topics, args.corpus_scope,
                               domains=TEMPO_DOMAINS)
    else:
        run = as_run_frame(args.run, rank=False)  # no measure reads a file's rank column (8 bytes a line)
        note = None
        if len(run):
            corpus, queries, _ = corpus_scope(qrels, args.corpus, args.queries, args.topics, args.corpus_scope,
                               domains=TEMPO_DOMAINS)
            note = _contract_note(run, corpus, queries, args.corpus)
        if note:
            print(f"note: {note}", file=sys.stderr)
    if not isinstance(run, str) and run.empty:
        raise EmptyInputWarning(f"run {args.run!r} has no usable row; nothing can be scored")
    machine = args.format != "table"
    kwargs = dict(
        topics=args.topics,
        labels=args.labels,
        tie_break=args.tie_break,
        query_ids="normalize" if args.normalize_ids else "exact",
    )
    if args.exclude_label is not None:
        kwargs["exclude_label"] = args.exclude_label
    discards: StreamDiscards | None = None
    watching: Any = contextlib.nullcontext()
    if args.stream:
        kwargs["stream"] = True
        # what the RETECO contract would discard, counted block by block: the note 'eval' prints in memory
        discards = StreamDiscards(stream_scope.corpus, stream_scope.queries)
        watching = discards.watching()
    try:
        with watching:
            if args.per_query:  # one evaluation: the values and their summary
                metrics = list(iter_calc(measures, qrels, run, **kwargs))
                rows = [
                    {"query_id": m.query_id, "measure": measure_name(m.measure, machine=machine), "value": float(m.value)}
                    for m in metrics
                ]
                frame = pd.DataFrame(rows, columns=["query_id", "measure", "value"])
                # the run is evaluated once: the summary aggregates the same per-query values
                summary = evaluate_table(metrics, measures, order=qrels_order(qrels), topics=None, by=[],
                                         names="machine" if machine else "human")
                summary.insert(0, "query_id", "all")
                frame = pd.concat([frame, summary[["query_id", "measure", "value"]]], ignore_index=True)
            else:
                frame = evaluate(measures, qrels, run, by=args.by, names="machine" if machine else "human", **kwargs)
    except EmptyInputWarning:
        if not args.stream:
            raise
        # the stream path checks the run once it is read (the qrels were checked above): the
        # message of the in-memory command
        raise EmptyInputWarning(f"run {args.run!r} has no usable row; nothing can be scored") from None
    note = _discard_note(discards.counts(), args.corpus) if discards is not None else None
    if note:
        print(f"note: {note}", file=sys.stderr)
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
    add_read_limit_options(p)
    p.add_argument("--per-query", action="store_true", help="one row per query and measure, then 'all'")
    p.add_argument("--tie-break", default="trec_eval", choices=list(TIE_BREAKS))
    p.add_argument("--stream", action="store_true",
                   help="read the run file in blocks of whole queries (out of core; same numbers)")
    p.add_argument(
        "--normalize-ids",
        action="store_true",
        help="map the run's (topics', labels') query ids to the qrels' form of the same query: "
        "'#turn1' = '_turn_1', '<domain>/<id>' = '<id>', '001' = '1', '9-1-3' = '9-1_3'",
    )
    p.add_argument("--exclude-label", type=int, metavar="LABEL",
                   help="remove from the run every document the qrels judge LABEL for its query before evaluation "
                   "(-100: ir_datasets' grade for BRIGHT's excluded documents, which BRIGHT's scoring drops); "
                   "default: pytrec_eval's reading (judged non-relevant, ranked), with a note when the qrels hold -100")
    p.add_argument("--contract", help="apply a benchmark contract (reteco | chunqiu | spoken | ikat) to the run "
                   "before scoring, as the benchmark's scorer does ('score BENCHMARK' also reads its topics)")
    p.add_argument("--corpus", help="doc ids for the contract (JSONL with doc_id/id, or one id per line); "
                   "without --contract: only reports what the RETECO contract would discard")
    p.add_argument("--queries", help="expected query ids for the contract")
    p.add_argument("--corpus-scope", default="domain", choices=["domain", "all"],
                   help="RETECO contract: a document must be in the corpus of its query's domain (default, as "
                   "'score reteco-1a'/'reteco-2a'; needs domains, see docs/getting-started.md) or in any domain's")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS,
                   help="table (for people) or tsv / json (measure names that parse back: nDCG_FC@10)")
    p.add_argument("--places", type=int, default=4, help="decimals in table/tsv output")
    p.set_defaults(func=_cmd_eval)


# ------------------------------------------------------------------------------------------------
# validate


def _cmd_validate(args: argparse.Namespace) -> int:
    from ..contracts import validate_run

    if getattr(args, "rules", "page") == "kit":
        return _validate_kit(args)

    report = validate_run(
        args.run,
        args.contract,
        corpus=args.corpus,  # paths go through: each contract reads its own id files
        queries=args.queries,
        top_k=args.top_k,
    )
    # a file without one usable row cannot be scored: it is invalid, whatever else the contract says
    valid = bool(report.valid) and len(report.run) > 0
    if args.format == "json":
        print(json.dumps({"contract": report.contract, "ok": report.ok and valid, "valid": valid,
                          "rows": len(report.run), "errors": [p.as_dict() for p in report.errors]}, indent=2))
    else:
        print(report.summary(limit=args.limit))
        if report.valid and not len(report.run):  # a contract that does not say it itself
            print("INVALID: no usable row in the run")
    if args.output:
        write_trec_run(report.run, args.output, run_id="cleaned")
    return 0 if valid else 1


def _validate_kit(args: argparse.Namespace) -> int:
    """``validate --rules kit``: the RETECO starter kit's format check only (exit 1 where it fails)."""
    from ..benchmarks.reteco.contract import check_kit_format

    problems = check_kit_format(args.run)
    if args.format == "json":
        print(json.dumps({"rules": "kit", "ok": not problems, "valid": not problems,
                          "errors": [p.as_dict() for p in problems]}, indent=2))
    else:
        state = "ok" if not problems else f"INVALID, {len(problems)} line(s) fail"
        print(f"starter-kit format check (rules: kit): {state}")
        for p in problems[:args.limit]:
            print(f"  error: {p}")
        if len(problems) > args.limit:
            print(f"  ... and {len(problems) - args.limit} more")
    return 1 if problems else 0


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
    p.add_argument("--rules", default="page", choices=["page", "kit"],
                   help="page: the contract's checks (default); kit: only the checks of the RETECO starter kit's "
                        "format_checker.py (6 fields, integer rank >= 1 unique within a topic, numeric score)")
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
    add_score_parsers(sub)


# ------------------------------------------------------------------------------------------------
# demo


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..sample.demo import run_demo

    code = run_demo(fmt=args.format)
    # the way on: the same command for one's own run (on stderr when stdout is machine-readable)
    print(_demo_next_steps(), file=sys.stdout if args.format == "table" else sys.stderr)
    return code


def _demo_next_steps() -> str:
    """What to type next: the `score` command of one demo submission, with the run to replace."""
    import shlex

    from ..benchmarks import BENCHMARKS
    from ..sample import sample_root

    bench = BENCHMARKS.get("reteco-2a")
    if bench is None or bench.cli.demo is None:
        return "next: score your own run with 'reteco-measures score BENCHMARK RUN --data DIR' (see --help)"
    kw = dict(bench.cli.demo(sample_root()))
    cmd = ["reteco-measures", "score", bench.name, str(kw["run"]), "--data", str(kw["data"])]
    if kw.get("split"):
        cmd += ["--split", str(kw["split"])]
    return ("next: score your own run the same way - this command gives the reteco-2a table above:\n"
            f"  {shlex.join(cmd)}\n"
            "replace the run file with yours, and --data with your data: the release root (or set RETECO_DATA), "
            "or the organisers' sample folder (e.g. .../reteco_sample/track2_recor);\n"
            "'reteco-measures score BENCHMARK --help' lists each benchmark's options, "
            "'reteco-measures validate' checks a run without scoring it.")


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="evaluate the bundled synthetic sample end to end")
    p.add_argument("--format", default="table", choices=OUTPUT_FORMATS)
    p.set_defaults(func=_cmd_demo)


# ------------------------------------------------------------------------------------------------
# pass-through CLIs


def _cmd_datasets(args: argparse.Namespace) -> int:
    import ir_datasets

    register()  # our datasets, registered with ir_datasets (an explicit call, not an import effect)
    try:
        ir_datasets.main(list(args.rest))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


_VALUE_OPTIONS = {"--places", "-p", "--output_format", "-o", "--provider"}


def _trec_eval_safe_arguments(rest: list[str], folder: str) -> list[str]:
    """``rest`` with the qrels file (the first positional argument) replaced by the copy
    `reteco_measures.api.trec_eval_safe_qrels_file` writes into ``folder``, when one is needed."""
    from ..api import trec_eval_safe_qrels_file

    positional = []
    skip = False
    for i, arg in enumerate(rest):
        if skip:
            skip = False
        elif arg in _VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            positional.append(i)
    if not positional or not os.path.isfile(rest[positional[0]]):
        return rest
    index = positional[0]
    safe = trec_eval_safe_qrels_file(rest[index], folder)
    return rest if safe is None else [*rest[:index], safe, *rest[index + 1 :]]


def _cmd_ir_measures(args: argparse.Namespace) -> int:
    import tempfile

    import ir_measures.__main__ as irm_main

    with tempfile.TemporaryDirectory(prefix="reteco-measures-") as folder:
        sys.argv = ["ir_measures", *_trec_eval_safe_arguments(list(args.rest), folder)]
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
    parser = argparse.ArgumentParser(prog="reteco-measures", description=DESCRIPTION)
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


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings on the command line: one line, no source location (they are about the data)."""
    print(f"reteco-measures: warning: {display_message(message)}", file=file or sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; user-data problems print one message and set the exit code."""
    from .messages import cli_message, install_hint

    parser = build_parser()
    args = parser.parse_args(argv)
    lean_allocators()  # freed memory goes back to the system: the peak is the largest step's

    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        _show_warning(cli_message(message, args), category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.showwarning = show_warning
        # never a silent zero: inputs that would score 0 or NaN without meaning stop the command
        warnings.simplefilter("error", QueryIdMismatchWarning)
        warnings.simplefilter("error", EmptyInputWarning)
        try:
            with read_limits_of(args):
                return int(args.func(args) or 0)
        except MemoryError as exc:  # a file too large for this machine: which, and what to change
            if isinstance(exc, DataFormatError):  # a reader named the file it could not hold
                print(f"reteco-measures: error: {display_message(str(exc))}", file=sys.stderr)
                return 1
            inputs = [display(v, 300) for k in ("run", "qrels", "runs", "items", "submission", "input_dir")
                      for v in (getattr(args, k, None) if isinstance(getattr(args, k, None), list)
                                else [getattr(args, k, None)]) if isinstance(v, str)]
            print(f"reteco-measures: error: out of memory while reading or scoring {', '.join(inputs) or 'the input'}: "
                  "free memory or raise the process's memory limit, score a smaller file, lower the reading limits "
                  "(--max-lines, --max-line-bytes), or use --stream ('eval', 'score', 'leaderboard'), which reads a run "
                  "in blocks",
                  file=sys.stderr)
            return 1
        except (QueryIdMismatchWarning, EmptyInputWarning, InputMismatchError) as exc:
            print(f"reteco-measures: error: {display_message(cli_message(exc, args))}", file=sys.stderr)
            return 1
        except DataFormatError as exc:
            print(f"reteco-measures: {display_message(exc)}", file=sys.stderr)
            return 1
        except IsADirectoryError as exc:
            print(f"reteco-measures: error: {display(exc.filename, 300)}: is a directory, not a file", file=sys.stderr)
            return 2
        except (FileNotFoundError, ValueError, NotImplementedError, KeyError) as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            print(f"reteco-measures: error: {display_message(cli_message(msg, args))}", file=sys.stderr)
            return 2
        except ImportError as exc:  # a missing optional extra: its install hint, exit 5
            hint = install_hint(exc)
            if hint is None:
                if os.environ.get("RETECO_MEASURES_DEBUG"):
                    raise
                print(f"reteco-measures: internal error: {type(exc).__name__}: {exc} "
                      "(please report it; RETECO_MEASURES_DEBUG=1 shows the traceback)", file=sys.stderr)
                return 3
            print(f"reteco-measures: error: {hint}", file=sys.stderr)
            return 5
        except BrokenPipeError:  # e.g. piped into head
            return 0
        except OSError as exc:  # permission denied, a device, ...: one line, no traceback
            where = f"{display(exc.filename, 300)}: " if exc.filename else ""
            print(f"reteco-measures: error: {display_message(f'{where}{exc.strerror or exc}')}", file=sys.stderr)
            return 2
        except Exception as exc:  # noqa: BLE001  (a bug of ours: one line, the traceback on request)
            if os.environ.get("RETECO_MEASURES_DEBUG"):
                raise
            print(f"reteco-measures: internal error: {type(exc).__name__}: {exc} "
                  "(please report it; RETECO_MEASURES_DEBUG=1 shows the traceback)", file=sys.stderr)
            return 3


if __name__ == "__main__":  # pragma: no cover
    # ``python -m reteco_measures.cli.main``: run the package's module, not this ``__main__`` copy,
    # whose COMMANDS the sub-command modules (``from .main import command``) never fill
    from reteco_measures.cli.main import main as _package_main

    sys.exit(_package_main())
