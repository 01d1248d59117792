"""Measure names: parsing strings into measures and printing measures back.

* `parse_measures` reads what users write (``'nDCG@10'``, ``'TC@10'``, ``'nDCG|FC@10'``,
  ``'MAP@10 MRR'``) into ir_measures measures, refusing a cutoff below 1.
* `measure_name` / `measure_label` print a measure as the user wrote it, for
  programs (a name ``ir_measures.parse_measure`` reads back) or for people (``nDCG|FC@10``).
* `machine_name` / `machine_names` turn printed labels (and the measure columns of a
  frame) into the machine form; `metric_key` gives the stable lower-case key of a label
  (``nDCG@10`` → ``ndcg_10``) used in JSON ``metrics`` and platform score files.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

import ir_measures

from .params import check_cutoff

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["parse_measures", "measure_name", "measure_label", "machine_name", "machine_names", "metric_key"]

#: report spellings that ir_measures does not parse -> the registered name
_DISPLAY_TO_NAME = {"nDCG|FC": "nDCG_FC", "MAP": "AP", "MRR": "RR"}


def _parse_one(measure: Any) -> ir_measures.Measure:
    if isinstance(measure, ir_measures.Measure):
        return measure
    if not isinstance(measure, str):
        raise TypeError(f"a measure must be an ir_measures.Measure or a string, not {type(measure).__name__}")
    text = measure.strip()
    head = re.match(r"[^(@\s]+", text)
    written = head.group(0) if head else None
    for display, name in _DISPLAY_TO_NAME.items():
        text = re.sub(rf"^{re.escape(display)}(?=[(@]|$)", name, text)
    at = text.rpartition(")")[2].rpartition("@")
    if at[1] and not re.fullmatch(r"[0-9]+", at[2].strip()):
        raise ValueError(f"measure {measure!r}: the cutoff after '@' must be a positive integer "
                         f"(1 or more), not {at[2].strip()!r}")
    try:
        parsed = ir_measures.parse_measure(text)
    except (NameError, SyntaxError, TypeError, AssertionError, ValueError) as exc:
        raise ValueError(f"unknown measure {measure!r} ({exc})") from None
    if written and written != getattr(parsed, "__name__", None):
        parsed._reteco_written = written  # printed as the user wrote it (measure_name)
    return parsed


def parse_measures(measures: Any) -> list[ir_measures.Measure]:
    """Measures from objects or strings (``'nDCG@10'``, ``'TC@10'``, ``'nDCG|FC@10'``, ``'MAP@10'``).

    A single string may hold several measures separated by spaces or commas outside brackets.
    """
    if isinstance(measures, (str, ir_measures.Measure)):
        measures = [measures]
    out: list[ir_measures.Measure] = []
    for m in measures:
        if isinstance(m, str) and re.search(r"[\s,](?![^()]*\))", m.strip()):
            parts = [p for p in re.split(r"[\s,]+(?![^()]*\))", m.strip()) if p]
            out.extend(_parse_one(p) for p in parts)
        else:
            out.append(_parse_one(m))
    for m in out:
        check_cutoff(m)  # nDCG@0 would abort the interpreter inside pytrec_eval
    return out


def measure_name(measure: Any, machine: bool = True) -> str:
    """The name to print for a measure (object or string), as the user wrote it.

    * ``machine=True`` (JSON, TSV, anything a program reads back): a name that
      ``ir_measures.parse_measure`` (and `parse_measures`) accepts and that gives the same
      measure — ``nDCG_FC@10``; an alias keeps its spelling (``TP@10`` stays ``TP@10``).
    * ``machine=False`` (tables for people): the report name — ``nDCG|FC@10``, ``TP@10``.
    """
    m = _parse_one(measure) if isinstance(measure, str) else measure
    canonical = repr(m)
    base = getattr(m, "__name__", None) or ""
    written = getattr(m, "_reteco_written", None)
    tail = canonical[len(base):] if base and canonical.startswith(base) else None
    if machine:
        if written and tail is not None:
            candidate = written + tail
            try:
                if ir_measures.parse_measure(candidate) == m:
                    return candidate
            except Exception:  # noqa: BLE001  (a spelling that does not parse: use the canonical name)
                pass
        return canonical
    if written and tail is not None:
        return written + tail
    display = getattr(m, "display", None)
    return display() if callable(display) else canonical


def measure_label(measure: ir_measures.Measure) -> str:
    """How a measure is printed in tables for people (``nDCG_FC@10`` → ``nDCG|FC@10``); the same as
    ``measure_name(measure, machine=False)``."""
    return measure_name(measure, machine=False)


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
    """``frame`` with measure names in machine form (see `machine_name`): the values of
    ``column`` (a tidy table's ``measure``) and, with ``headers``, the column names that are
    measures (a wide table's ``nDCG|FC@10`` column). Other values and columns are kept."""
    if headers:
        renamed = {c: machine_name(c) for c in frame.columns if isinstance(c, str)}
        renamed = {c: n for c, n in renamed.items() if n != c}
        if renamed:
            frame = frame.rename(columns=renamed)
    if column is None or column not in frame.columns or frame.empty:
        return frame
    import pandas as pd  # heavy: only when a frame is renamed (importing the package stays light)

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
