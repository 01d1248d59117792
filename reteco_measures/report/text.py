"""Result frames as text: an aligned table for people, TSV or JSON records for programs.

TSV and JSON print measure names in the form `ir_measures.parse_measure` reads back
(``nDCG_FC@10``); the table may print the report form (``nDCG|FC@10``).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, TextIO

import numpy as np
import pandas as pd

from ..measures.names import machine_name, machine_names, metric_key

__all__ = ["OUTPUT_FORMATS", "format_frame", "print_frame", "frame_records", "machine_names", "machine_name",
           "metric_key", "json_number"]

OUTPUT_FORMATS = ["table", "tsv", "json"]


# ------------------------------------------------------------------------------------------------
# names and values as programs read them


def json_number(value: Any) -> Any:
    """``value`` as JSON writes it: numpy integers as ``int``, floats as ``float``, NaN as None."""
    if value is None:
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


def frame_records(frame: pd.DataFrame) -> list[dict]:
    """``frame`` as JSON-ready records: NaN / NA as None, numpy scalars as Python numbers."""
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return [{k: json_number(v) for k, v in rec.items()} for rec in records]


# ------------------------------------------------------------------------------------------------
# frames as text


def _fmt_value(value, places: int) -> str:
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else f"{value:.{places}f}"
    return str(value)


def format_frame(frame: pd.DataFrame, fmt: str = "table", places: int = 4) -> str:
    """Render ``frame`` as ``table`` (aligned, for people), ``tsv`` or ``json`` (records; NaN →
    null). TSV and JSON print measure names that parse back (``nDCG_FC@10``); the table may
    print the report form (``nDCG|FC@10``)."""
    if fmt in ("json", "tsv"):
        frame = machine_names(frame, headers=True)
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
    """Print `format_frame` of ``frame`` to ``file`` (standard output by default)."""
    print(format_frame(frame, fmt, places), file=file or sys.stdout)
