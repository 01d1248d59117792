"""``reteco-measures compare-leaderboards A.json B.json``: how far leaderboard B agrees with A.

``A`` and ``B`` are the JSON files of ``reteco-measures leaderboard ... --format json`` (or a
comparison's JSON with one measure); ``A`` is the reference. Prints Kendall's τ-b, τ_AP (Yilmaz,
Aslam & Robertson 2008), Spearman's ρ, whether the top run is the same, the number of runs
compared and the pairs that ``A`` finds significantly different and ``B`` puts the other way
round (`reteco_measures.stats.rank_agreement`). The JSON files hold no per-query values, so
there are no bootstrap intervals here (Python: pass the Leaderboard objects).

Exit codes: 0 ok; 1 the two leaderboards do not rank the same runs (the numbers over the common
runs are still printed); 2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from ..errors import DataFormatWarning
from .report import print_frame

__all__: list[str] = []


def _cmd_compare_leaderboards(args: argparse.Namespace) -> int:
    from ..stats.rank_agreement import rank_agreement

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataFormatWarning)
        result = rank_agreement(args.a, args.b, top=args.top)
    if args.format == "json":
        print(json.dumps({"a": args.a, "b": args.b, **result.to_dict()}, indent=2, ensure_ascii=False))
    else:
        print_frame(result.to_frame()[["statistic", "value"]], args.format, places=args.places)
        if result.swaps is not None:
            shown = "; ".join(f"{x} > {y} in A, reversed in B" for x, y in result.swapped) or "none"
            print(f"\nsignificant pairs of A reversed in B: {shown}")
        else:
            print("\nswaps: A has no significance tests (pairwise) to count them")
    for w in caught:
        print(f"reteco-measures: warning: {w.message}", file=sys.stderr)
    return 1 if result.only_a or result.only_b else 0


def configure(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare-leaderboards", help="rank agreement of leaderboard B with the reference A (Kendall "
                                                    "tau-b, tau_AP, Spearman, top-1, significant swaps)",
                       description="A and B: JSON files of `leaderboard ... --format json`; A is the reference. "
                                   "Runs ranked by one side only are left out (exit 1).")
    p.add_argument("a", metavar="A.json", help="the reference leaderboard (JSON)")
    p.add_argument("b", metavar="B.json", help="the leaderboard compared with it (JSON)")
    p.add_argument("--top", type=int, help="compare only A's best K runs")
    p.add_argument("--format", default="table", choices=["table", "tsv", "json"])
    p.add_argument("--places", type=int, default=4)
    p.set_defaults(func=_cmd_compare_leaderboards)
