"""``reteco-measures gate BASELINE CANDIDATE --benchmark B``: a regression gate for CI.

Scores both runs with the benchmark's engine and asks whether the candidate is worse than the
baseline by more than ``--margin`` on the benchmark's own measure, statistical unit and
aggregation (`reteco_measures.benchmarks.gate`, `reteco_measures.stats.gate`).

Exit codes: 0 not worse beyond the margin; 1 worse; 2 cannot tell (too few units), or the runs
could not be evaluated (a usage error, unreadable or mismatching input: the message says which).
``--format json`` prints one JSON object for CI annotations.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..benchmarks import BENCHMARKS
from ..errors import DataFormatError, EmptyInputWarning, QueryIdMismatchWarning
from .messages import cli_message

__all__ = ["configure"]


def _cmd_gate(args: argparse.Namespace) -> int:
    from ..benchmarks.gate import gate

    try:
        result = gate(args.baseline, args.candidate, benchmark=args.benchmark, margin=args.margin,
                      alpha=args.alpha, data=args.data, split=args.split, measure=args.measure,
                      n_resamples=args.resamples, seed=args.seed, min_units=args.min_units)
    except (DataFormatError, ValueError, FileNotFoundError, QueryIdMismatchWarning, EmptyInputWarning) as exc:
        # an input that cannot be evaluated is never "worse" (exit 1): exit 2, one line
        print(f"reteco-measures: error: {cli_message(exc, args)}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps({"baseline": args.baseline, "candidate": args.candidate, **result.to_dict()},
                         indent=2, ensure_ascii=False))
    else:
        p = result.params
        print(f"gate {p.get('benchmark')} {p.get('measure')} (unit: {p.get('unit')}, n = {result.n})")
        print(f"  baseline  {result.baseline_value:.4f}\n  candidate {result.candidate_value:.4f}")
        print(f"  delta     {result.delta:+.4f}  [{result.ci_low:+.4f}, {result.ci_high:+.4f}] "
              f"({1 - 2 * args.alpha:.0%} interval), one-sided p = {result.p_value:.4f}, margin {args.margin:g}")
        print(f"  verdict   {result.verdict} (exit {result.exit_code}): {result.reason}")
    return result.exit_code


def configure(sub: argparse._SubParsersAction) -> None:
    """Add ``gate`` to the top-level parser."""
    p = sub.add_parser("gate", help="regression gate: exit 0 not worse beyond the margin, 1 worse, 2 cannot tell",
                       description="Is CANDIDATE worse than BASELINE by more than --margin on the benchmark's own "
                                   "measure, unit and aggregation? A one-sided paired bootstrap over the units. "
                                   "Exit 0 = not worse beyond the margin, 1 = worse, 2 = cannot tell (too few "
                                   "units) or the runs cannot be evaluated.")
    p.add_argument("baseline", metavar="BASELINE", help="the baseline run file")
    p.add_argument("candidate", metavar="CANDIDATE", help="the candidate run file")
    p.add_argument("--benchmark", required=True, choices=sorted(BENCHMARKS), help="the benchmark")
    p.add_argument("--data", help="data root (default: $RETECO_DATA)")
    p.add_argument("--split", default=None, help="split (default: the benchmark's)")
    p.add_argument("--measure", help="the measure (default: the official one)")
    p.add_argument("--margin", type=float, default=0.0, help="how much worse still passes (default 0)")
    p.add_argument("--alpha", type=float, default=0.05, help="one-sided level (default 0.05)")
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-units", type=int, default=10, help="fewest units for a verdict (default 10)")
    p.add_argument("--format", default="table", choices=["table", "json"])
    p.set_defaults(func=_cmd_gate)
