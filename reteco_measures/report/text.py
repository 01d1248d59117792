"""Result frames as text: an aligned table for people, TSV or JSON records for programs.

TSV and JSON print measure names in the form :func:`ir_measures.parse_measure` reads back
(``nDCG_FC@10``); the table may print the report form (``nDCG|FC@10``).
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from typing import Any, TextIO

import numpy as np
import pandas as pd

from ..api import measure_name

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


@functools.lru_cache(maxsize=1024)
def machine_name(label: str) -> str:
    """A measure's printed name in the form programs read back with ``ir_measures.parse_measure``
    (``nDCG|FC@10`` → ``nDCG_FC@10``; ``MAP@10``, ``MRR`` and ``AP(rel=2)@1000`` stay, ir_measures
    parses them); a label that is not a measure (``reward``, ``domain``) is returned unchanged."""
    try:
        return measure_name(label, machine=True)
    except (ValueError, TypeError, KeyError):
        return label


def machine_names(frame: pd.DataFrame, column: str | None = "measure", headers: bool = True) -> pd.DataFrame:
    """``frame`` with measure names in machine form (see :func:`machine_name`): the values of
    ``column`` (a tidy table's ``measure``) and, with ``headers``, the column names that are
    measures (a wide table's ``nDCG|FC@10`` column). Other values and columns are kept."""
    if headers:
        renamed = {c: machine_name(c) for c in frame.columns if isinstance(c, str)}
        renamed = {c: n for c, n in renamed.items() if n != c}
        if renamed:
            frame = frame.rename(columns=renamed)
    if column is None or column not in frame.columns or frame.empty:
        return frame
    names = {v: machine_name(v) for v in pd.unique(frame[column].to_numpy(dtype=object)) if isinstance(v, str)}
    names = {v: n for v, n in names.items() if n != v}
    if not names:
        return frame
    return frame.assign(**{column: frame[column].map(lambda v: names.get(v, v))})


def metric_key(label: str) -> str:
    """A stable, lower-case key for a measure's printed name: ``nDCG@10`` → ``ndcg_10``,
    ``nDCG|FC@10`` → ``ndcg_fc_10``, ``MAP@10`` → ``map_10``, ``AP(rel=2)@1000`` →
    ``ap_rel_2_1000``, ``TurnNDCG(average='conversation')@10`` →
    ``turnndcg_average_conversation_10``. Used for JSON ``metrics`` and platform score files."""
    return re.sub(r"[^0-9a-z]+", "_", str(label).lower()).strip("_")


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
    """Print :func:`format_frame` of ``frame`` to ``file`` (standard output by default)."""
    print(format_frame(frame, fmt, places), file=file or sys.stdout)
