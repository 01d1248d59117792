"""Presentation of a benchmark `Score`: text tables, TSV, JSON.

Nothing here computes a number: every value comes from the Score's frames. ``table`` output
carries a header, the summary, every group table, the per-query table (on request) and the run
checks (what the contract removed, counted, and the first problems); ``tsv`` keeps stdout
machine-readable (checks and notes go to stderr); ``json`` is `Score.to_dict`.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import pandas as pd

from ..errors import count_problems, describe_kinds, display_message
from .text import OUTPUT_FORMATS, format_frame

__all__ = ["SCORE_FORMATS", "render_score", "header", "removed_line", "print_checks"]

SCORE_FORMATS = list(OUTPUT_FORMATS)


def header(score: Any) -> str:
    """One line naming the benchmark, the split and what was evaluated."""
    meta = score.meta
    name = score.benchmark
    if name in ("reteco-1a", "reteco-1b"):
        unit = f"{meta['queries']} queries" + (f", {meta['n_steps']} steps" if name == "reteco-1b" else "")
        return (f"RETECO {name[-2:]} (TEMPO) - split {score.split}, {len(meta['domains'])} domain(s), {unit}; "
                f"temporal labels: {meta['labels']}")
    if name == "reteco-2a":
        return f"RETECO 2a (RECOR) - split {score.split}, {len(meta['domains'])} domain(s), {meta['turns']} turns"
    if name == "ikat-2023":
        return f"TREC iKAT 2023 - run {meta.get('run_name')!r} ({meta.get('run_type')})"
    if name == "spoken":
        return (f"Spoken-Query - split {score.split}, {meta['requests']} requests; raw quality "
                f"{score.official:.4f}, reward {score.reward:.4f}")
    if name == "chunqiu":
        return f"ChunQiu - {meta['queries']} queries"
    return f"{name} - split {score.split}"


def removed_line(score: Any) -> str:
    """``removed by the contract: 2 duplicate document(s), ...; 120 row(s) kept``."""
    counts = {k: v for k, v in score.removed.items() if k != "rows_kept" and v}
    if not counts:
        return f"removed by the contract: nothing; {score.removed.get('rows_kept', 0)} row(s) kept"
    return f"removed by the contract: {describe_kinds(counts)}; {score.removed.get('rows_kept', 0)} row(s) kept"


def _group_frame(score: Any, name: str, frame: pd.DataFrame) -> pd.DataFrame:
    g = next((g for g in score.groupings if g.name == name), None)
    if g is not None and g.layout == "tidy" and len(g.by) == 2 and g.official_only:
        # a two-way grid reads best as a matrix (cells = the group values)
        a, b = g.by
        cells = frame[~frame[a].isin(["(macro)", "(all)"])]
        table = cells.pivot_table(index=a, columns=b, values="value", aggfunc="first")
        table.columns.name = None
        return table.reset_index()
    return frame


def print_checks(score: Any, *, table: bool, limit: int, out: TextIO, err: TextIO) -> None:
    """Notes, data problems, what the contract removed and the first ``limit`` problems."""
    stream = out if table else err
    report = score.report
    for note in score.notes:
        print(f"note: {display_message(note)}", file=stream)
    for p in list(score.data_problems)[:limit]:
        print(f"data: {p}", file=stream)
    rows = "passage row(s)" if score.benchmark == "ikat-2023" else "row(s)"
    if score.benchmark == "chunqiu":
        if not score.valid:
            print(f"\nINVALID batch: {count_problems(report.errors)} violation(s); the official score is 0", file=stream)
        elif table:
            print(f"\nvalid batch: {len(score.per_query)} queries, {report.rows_kept} results", file=stream)
    elif score.benchmark == "spoken":
        if report.errors:
            print(f"\n{count_problems(report.errors)} problem(s); {len(report.invalid_queries)} invalid and "
                  f"{len(report.missing_queries)} missing request(s) score 0:", file=stream)
    elif report.errors:
        names = ({"missing_query": "missing turn(s) (score 0)", "format": "format problem(s)"}
                 if score.benchmark == "ikat-2023" else None)  # iKAT's topics are turns, its file one JSON
        summary = describe_kinds(report.problem_counts(), names=names)
        state = f" ({'valid' if report.valid else 'INVALID'})" if score.benchmark == "ikat-2023" else ""
        print(f"\nrun checks{state}: {report.rows_kept} {rows} kept; {summary}", file=stream)
    elif table:
        print(f"\nrun checks: ok, {report.rows_kept} {rows}", file=stream)
    if score.benchmark in ("reteco-1a", "reteco-1b", "reteco-2a") and (report.errors or table):
        print(removed_line(score), file=stream)
    for p in report.errors[:limit]:
        print(f"  {p}", file=stream)
    if len(report.errors) > limit:
        print(f"  ... and {len(report.errors) - limit} more (--limit)", file=stream)


def render_score(
    score: Any,
    fmt: str = "table",
    *,
    places: int = 4,
    per_query: bool = False,
    limit: int = 20,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> None:
    """Write ``score`` as ``table`` (for people), ``tsv`` or ``json`` (`Score.to_dict`)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if fmt == "json":
        print(json.dumps(score.to_dict(per_query=per_query), indent=2, ensure_ascii=False, default=str), file=out)
        return
    table = fmt == "table"
    first = "raw quality and reward" if score.benchmark == "spoken" else "official score and diagnostics"
    sections: list[tuple[str, pd.DataFrame]] = [(first, score.scores)]
    titles = {g.name: g.title for g in score.groupings}
    for name, frame in score.by_group.items():
        sections.append((titles.get(name, name), _group_frame(score, name, frame)))
    if per_query:
        sections.append(("per query", score.per_query))
    if table:
        print(header(score), file=out)
    for i, (title, frame) in enumerate(sections):
        if i:
            print(file=out)
        if table:
            print(f"== {title}", file=out)
        print(format_frame(frame, fmt, places), file=out)
    print_checks(score, table=table, limit=limit, out=out, err=err)
