"""``reteco-measures codabench score|bundle``: argparse over :mod:`reteco_measures.platforms.codabench`.

``codabench score INPUT_DIR OUTPUT_DIR --benchmark NAME [--split S] [--set NAME=VALUE ...]`` is
the scoring program Codabench runs; ``codabench bundle --benchmark NAME --data DIR [--split S]
--out bundle.zip`` writes a competition bundle around it.
"""

from __future__ import annotations

import argparse
import sys

from ..benchmarks import BENCHMARKS

__all__ = ["configure"]


def _cmd_score(args: argparse.Namespace) -> int:
    from ..platforms.codabench import score_codabench

    result = score_codabench(args.input_dir, args.output_dir, args.benchmark, args.split,
                             settings=args.set, limit=args.limit)
    for line in result.messages:
        print(line, file=sys.stderr)
    if result.exit_code == 0 and result.score is not None:
        print(f"{result.score.official_measure} = {result.score.official!r}"
              + ("" if result.score.valid else " (invalid submission)"))
    return result.exit_code


def _cmd_bundle(args: argparse.Namespace) -> int:
    from ..platforms.codabench import build_bundle

    path = build_bundle(args.benchmark, args.data, args.out, args.split, settings=args.set, title=args.title,
                        docker_image=args.docker_image, start=args.start)
    print(f"wrote {path}")
    return 0


def configure(sub: argparse._SubParsersAction) -> None:
    """Add ``codabench score|bundle`` to the top-level parser."""
    names = sorted(BENCHMARKS)
    p = sub.add_parser("codabench", help="Codabench scoring program and competition bundle")
    cmds = p.add_subparsers(dest="codabench_command", metavar="{score,bundle}")
    cmds.required = True

    s = cmds.add_parser("score", help="score INPUT_DIR/res against INPUT_DIR/ref, write OUTPUT_DIR/scores.json",
                        description="The scoring program Codabench runs: reads INPUT_DIR/ref (the reference "
                                    "data root) and INPUT_DIR/res (one submission file, any name, or a zip "
                                    "of it); writes scores.json, scores.txt and detailed_results.html. Exit "
                                    "0 scored, 1 invalid or unreadable submission, 2 broken set-up.")
    s.add_argument("input_dir")
    s.add_argument("output_dir")
    s.add_argument("--benchmark", required=True, choices=names)
    s.add_argument("--split", help="the split (default: the benchmark's)")
    s.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="a benchmark option (repeatable); a relative path is a file of the reference data")
    s.add_argument("--limit", type=int, default=50, help="problems printed to stderr")
    s.set_defaults(func=_cmd_score)

    b = cmds.add_parser("bundle", help="write a Codabench competition bundle for a benchmark")
    b.add_argument("--benchmark", required=True, choices=names)
    b.add_argument("--data", required=True, help="the reference data root (copied into the bundle)")
    b.add_argument("--split", help="the split (default: the benchmark's)")
    b.add_argument("--out", required=True, help="the bundle zip to write")
    b.add_argument("--set", action="append", metavar="NAME=VALUE", help="a benchmark option baked into the "
                                                                       "scoring command (repeatable)")
    b.add_argument("--title", help="competition title")
    b.add_argument("--docker-image", help="the scoring image (default reteco-measures/scorer:<version>)")
    b.add_argument("--start", help="phase start, 'YYYY-MM-DD HH:MM:SS' (default: today)")
    b.set_defaults(func=_cmd_bundle)
