"""Presentation: print result DataFrames as an aligned table, TSV or JSON."""

from __future__ import annotations

import json
import math
import sys
from typing import TextIO

import pandas as pd

__all__ = [
    "OUTPUT_FORMATS",
    "format_frame",
    "print_frame",
    "frame_records",
    "machine_names",
    "print_run_checks",
]

OUTPUT_FORMATS = ["table", "tsv", "json"]


def _fmt_value(value, places: int) -> str:
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else f"{value:.{places}f}"
    return str(value)


def frame_records(frame: pd.DataFrame) -> list[dict]:
    """``frame`` as JSON-ready records: one dict per row, NaN as None (JSON null)."""
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()}
        for rec in frame.to_dict(orient="records")
    ]


def machine_names(frame: pd.DataFrame, column: str = "measure") -> pd.DataFrame:
    """``frame`` with the measure names of ``column`` in the form programs read back
    (``nDCG|FC@10`` → ``nDCG_FC@10``, see :func:`reteco_measures.api.measure_name`); values that
    are not measure names (``judge: relevance``) are kept."""
    if column not in frame.columns or frame.empty:
        return frame
    from ..api import measure_name

    names: dict = {}
    for value in pd.unique(frame[column].to_numpy(dtype=object)):
        try:
            names[value] = measure_name(value, machine=True) if isinstance(value, str) else value
        except (ValueError, TypeError):
            names[value] = value
    if all(k == v for k, v in names.items()):
        return frame
    return frame.assign(**{column: frame[column].map(names)})


def format_frame(frame: pd.DataFrame, fmt: str = "table", places: int = 4) -> str:
    """Render ``frame`` as ``table`` (aligned, for people), ``tsv`` or ``json`` (records; NaN →
    null). TSV and JSON print measure names that parse back (``nDCG_FC@10``); the table may
    print the report form (``nDCG|FC@10``)."""
    if fmt in ("json", "tsv"):
        frame = machine_names(frame)
    if fmt == "json":
        return json.dumps(frame_records(frame), indent=2, default=str)
    cells = [[_fmt_value(v, places) for v in row] for row in frame.itertuples(index=False)]
    header = [str(c) for c in frame.columns]
    if fmt == "tsv":
        return "\n".join("\t".join(r) for r in [header, *cells])
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; choose one of {OUTPUT_FORMATS}")
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]

    def line(row: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(row, widths, numeric)).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in cells)])


def print_frame(frame: pd.DataFrame, fmt: str = "table", places: int = 4, file: TextIO | None = None) -> None:
    print(format_frame(frame, fmt, places), file=file or sys.stdout)


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
