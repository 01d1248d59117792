"""Presentation: print result DataFrames as an aligned table, TSV or JSON."""

from __future__ import annotations

import sys

from ..report.text import OUTPUT_FORMATS, format_frame, frame_records, machine_names, print_frame

__all__ = [
    "OUTPUT_FORMATS",
    "format_frame",
    "print_frame",
    "frame_records",
    "machine_names",
    "print_run_checks",
]


def print_run_checks(
    report,
    *,
    table: bool,
    limit: int,
    notes: list[str] = (),
    data_problems: list = (),
    rows: str = "row(s)",
    show_state: bool = False,
) -> None:
    """The end of a preset's text report: notes, data problems, then what the run contract found
    (counts per kind and the first ``limit`` problems). Goes to stdout for ``table`` output and to
    stderr otherwise, so TSV stays machine-readable."""
    stream = sys.stdout if table else sys.stderr
    for note in notes:
        print(f"note: {note}", file=stream)
    for p in list(data_problems)[:limit]:
        print(f"data: {p}", file=stream)
    if report.errors:
        summary = ", ".join(f"{n} {kind}" for kind, n in report.problem_counts().items())
        state = f" ({'valid' if report.valid else 'INVALID'})" if show_state else ""
        print(f"\nrun checks{state}: {len(report.run)} {rows} kept; {summary}", file=stream)
        for p in report.errors[:limit]:
            print(f"  {p}", file=stream)
        if len(report.errors) > limit:
            print(f"  ... and {len(report.errors) - limit} more (--limit)", file=stream)
    elif table:
        print(f"\nrun checks: ok, {len(report.run)} {rows}")
