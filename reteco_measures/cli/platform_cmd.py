"""``reteco-measures codabench score|bundle``: argparse over `reteco_measures.platforms.codabench`.

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
    from ..platforms.submission import SubmissionLimits

    try:
        limits = SubmissionLimits(max_bytes=args.max_bytes, max_lines=args.max_lines, max_files=args.max_files,
                                  max_seconds=args.max_seconds or None, max_memory=args.max_memory or None)
    except ValueError as exc:
        print(f"reteco-measures: error: {exc}", file=sys.stderr)
        return 2
    result = score_codabench(args.input_dir, args.output_dir, args.benchmark, args.split,
                             settings=args.set, limit=args.limit, limits=limits)
    for line in result.messages:
        print(line, file=sys.stderr)
    if result.exit_code == 0 and result.official_measure is not None:
        print(f"{result.official_measure} = {result.official!r}" + ("" if result.valid else " (invalid submission)"))
    return result.exit_code


def _size(text: str) -> int:
    """``256M``, ``6G``, ``1048576``: a byte count (K, M, G are powers of 1024; 0 means no limit)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if mult > 1 else t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 256M or 6G, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a size cannot be negative: {text!r}")
    return int(value * mult)


def _cmd_bundle(args: argparse.Namespace) -> int:
    from ..platforms.codabench import build_bundle

    path = build_bundle(args.benchmark, args.data, args.out, args.split, settings=args.set, title=args.title,
                        docker_image=args.docker_image, start=args.start, package=args.package,
                        wheelhouse=args.wheelhouse, vendor_dependencies=args.vendor_dependencies)
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
    from ..platforms.submission import SubmissionLimits  # for the defaults shown in --help

    d = SubmissionLimits()
    g = s.add_argument_group("limits", "what one submission may cost the scoring worker (defaults sized for a "
                                       "2-core, 8 GB worker); past a limit the submission fails with a message")
    g.add_argument("--max-bytes", type=_size, default=d.max_bytes, metavar="SIZE",
                   help="unpacked and decompressed size of the submission, counted as it is read (default 256M)")
    g.add_argument("--max-lines", type=int, default=d.max_lines, metavar="N",
                   help=f"lines of the unpacked submission, blank ones included (default {d.max_lines:,})")
    g.add_argument("--max-files", type=int, default=d.max_files, metavar="N",
                   help=f"entries in the submission folder or a zip (default {d.max_files})")
    g.add_argument("--max-seconds", type=float, default=d.max_seconds, metavar="S",
                   help=f"wall-clock time to score one submission; 0: none (default {d.max_seconds:g})")
    g.add_argument("--max-memory", type=_size, default=d.max_memory, metavar="SIZE",
                   help="address space of the scoring process; 0: none (default 6G)")
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
    b.add_argument("--package", help="what the scoring image installs: a wheel file to ship in the bundle, or a "
                                     "pip requirement installed from the image's index (default: a wheel built "
                                     "now from this source tree, or repacked from the installed package, shipped in the bundle)")
    b.add_argument("--wheelhouse", metavar="DIR", help="wheels of the dependencies (e.g. from 'pip download') to "
                                                       "ship too: the image then installs offline (--no-index)")
    b.add_argument("--vendor-dependencies", action="store_true",
                   help="run 'pip download' for the dependencies into the bundle (offline image build)")
    b.set_defaults(func=_cmd_bundle)
