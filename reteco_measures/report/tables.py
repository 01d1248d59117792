"""Tables of a `Comparison`: text, markdown, LaTeX, CSV, JSON.

Presentation only: every number comes from the Comparison's frames.

Significance marks follow ranx: runs are labelled ``a, b, c, ...`` in their order; a value carries
the letters of the runs it is *significantly better than* on that measure (``significant`` after
the correction; with a baseline only the baseline's letter can appear). The best value of each
measure is bold. Grouped comparisons (``by=``) print their ``(all)`` rows in the markdown and LaTeX
tables; the text, CSV and JSON forms hold every group.
"""

from __future__ import annotations

import json
import math
import string
from typing import Any

import numpy as np
import pandas as pd

from .text import frame_records

__all__ = ["wide_frame", "to_markdown", "to_latex", "to_html", "to_text", "to_json", "to_csv", "run_letters",
           "superscripts", "format_comparison", "format_p"]

FORMATS = ("table", "markdown", "latex", "csv", "json")


def run_letters(runs: list[str]) -> dict[str, str]:
    """``a, b, ..., z, aa, ab, ...`` per run, in order."""
    letters = {}
    for i, run in enumerate(runs):
        s, k = "", i
        while True:
            s = string.ascii_lowercase[k % 26] + s
            k = k // 26 - 1
            if k < 0:
                break
        letters[run] = s
    return letters


def _overall(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    if not by:
        return frame
    mask = np.ones(len(frame), dtype=bool)
    for col in by:
        mask &= frame[col].astype(str).to_numpy() == "(all)"
    return frame[mask]


def superscripts(comparison: Any) -> dict[tuple[str, str], str]:
    """``{(run, measure): letters of the runs it significantly beats}`` over all queries."""
    letters = run_letters(comparison.runs)
    pw = _overall(comparison.pairwise, comparison.by)
    out: dict[tuple[str, str], str] = {}
    sig = pw[pw["significant"].astype(bool)]
    for row in sig.itertuples(index=False):
        winner, loser = (row.run, row.other) if row.delta > 0 else (row.other, row.run)
        if row.delta == 0:
            continue
        out[(winner, row.measure)] = out.get((winner, row.measure), "") + letters[loser]
    return {k: "".join(sorted(v, key=lambda c: (len(c), c))) for k, v in out.items()}


def wide_frame(comparison: Any, *, ci: bool = False) -> pd.DataFrame:
    """One row per run (per group), one column per measure; ``ci=True`` adds ``<m> ci_low`` /
    ``<m> ci_high`` columns."""
    by = comparison.by
    s = comparison.summary
    index = [*by, "run"]
    wide = s.pivot_table(index=index, columns="measure", values="value", aggfunc="first", sort=False)
    wide = wide.reindex(columns=comparison.measures)
    if ci:
        for col in ("ci_low", "ci_high"):
            part = s.pivot_table(index=index, columns="measure", values=col, aggfunc="first", sort=False)
            for m in comparison.measures:
                wide[f"{m} {col}"] = part[m]
        wide = wide[[c for m in comparison.measures for c in (m, f"{m} ci_low", f"{m} ci_high")]]
    wide.columns.name = None
    out = wide.reset_index()
    out["run"] = pd.Categorical(out["run"], categories=comparison.runs, ordered=True)
    out = out.sort_values([*by, "run"], kind="stable").reset_index(drop=True)
    out["run"] = out["run"].astype(str)
    return out


def _fmt(value: float, places: int) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{places}f}"


def _cells(comparison: Any, places: int, bold: tuple[str, str], sup: tuple[str, str]) -> pd.DataFrame:
    s = _overall(comparison.summary, comparison.by)
    marks = superscripts(comparison)
    letters = run_letters(comparison.runs)
    table = {"": [f"({letters[r]}) {r}" for r in comparison.runs]}
    for m in comparison.measures:
        part = s[s["measure"] == m].set_index("run")["value"]
        best = part.max() if part.notna().any() else None
        col = []
        for r in comparison.runs:
            v = part.get(r, float("nan"))
            text = _fmt(v, places)
            if best is not None and not math.isnan(v) and v == best:
                text = bold[0] + text + bold[1]
            if marks.get((r, m)):
                text += sup[0] + marks[(r, m)] + sup[1]
            col.append(text)
        table[m] = col
    return pd.DataFrame(table)


def _legend(comparison: Any) -> str:
    p = comparison.params
    corr = p.get("correction") or "no"
    base = f" against the baseline {p['baseline']}" if p.get("baseline") else ""
    return (f"Superscripts: significantly better than that run{base} ({p.get('test')} test, {corr} correction, "
            f"alpha = {p.get('alpha')}). Best value in bold.")


def to_markdown(comparison: Any, places: int = 4) -> str:
    """Markdown table, runs × measures, significance as ``<sup>letters</sup>``."""
    table = _cells(comparison, places, ("**", "**"), ("<sup>", "</sup>"))
    cols = list(table.columns)
    lines = ["| " + " | ".join(c.replace("|", "\\|") for c in ["run", *cols[1:]]) + " |",
             "|" + "|".join([":---"] + ["---:"] * (len(cols) - 1)) + "|"]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(str(x) for x in row) + " |")
    return "\n".join(lines) + "\n\n" + _legend(comparison) + "\n"


def to_html(comparison: Any, places: int = 4) -> str:
    """HTML table, runs × measures: value (bold when best) with significance superscripts and the
    confidence interval below it (shown by notebooks)."""
    from html import escape

    s = _overall(comparison.summary, comparison.by)
    marks = superscripts(comparison)
    letters = run_letters(comparison.runs)
    head = "".join(f"<th>{escape(m)}</th>" for m in comparison.measures)
    rows = []
    for r in comparison.runs:
        cells = [f"<td>({letters[r]}) {escape(r)}</td>"]
        for m in comparison.measures:
            part = s[s["measure"] == m].set_index("run")
            v = part["value"].get(r, float("nan"))
            text = _fmt(v, places)
            if part["value"].notna().any() and not math.isnan(v) and v == part["value"].max():
                text = f"<b>{text}</b>"
            if marks.get((r, m)):
                text += f"<sup>{marks[(r, m)]}</sup>"
            lo, hi = part["ci_low"].get(r, float("nan")), part["ci_high"].get(r, float("nan"))
            ci = f"<br><small>[{_fmt(lo, places)}, {_fmt(hi, places)}]</small>" if not math.isnan(lo) else ""
            cells.append(f'<td style="text-align:right">{text}{ci}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<table><thead><tr><th>run</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p><small>{escape(_legend(comparison))} Brackets: {comparison.params.get('ci', 0.95):.0%} "
            "confidence interval.</small></p>")


def _tex(text: str) -> str:
    for a, b in (("\\", "\\textbackslash{}"), ("&", "\\&"), ("%", "\\%"), ("$", "\\$"), ("#", "\\#"),
                 ("_", "\\_"), ("{", "\\{"), ("}", "\\}"), ("|", "\\textbar{}"), ("~", "\\textasciitilde{}"),
                 ("^", "\\textasciicircum{}")):
        text = text.replace(a, b) if a != "\\" else text.replace(a, b)
    return text


def to_latex(comparison: Any, places: int = 4, caption: str | None = None, label: str | None = None) -> str:
    """LaTeX table (booktabs: ``\\toprule``/``\\midrule``/``\\bottomrule``), superscript letters
    as ``$^{ab}$``, best value ``\\textbf``."""
    s = _overall(comparison.summary, comparison.by)
    marks = superscripts(comparison)
    letters = run_letters(comparison.runs)
    cols = "l" + "r" * len(comparison.measures)
    lines = ["\\begin{table}[t]", "\\centering"]
    if caption:
        lines.append(f"\\caption{{{_tex(caption)}}}")
    if label:
        lines.append(f"\\label{{{label}}}")
    lines += [f"\\begin{{tabular}}{{{cols}}}", "\\toprule",
              " & ".join(["Run", *[_tex(m) for m in comparison.measures]]) + " \\\\", "\\midrule"]
    for r in comparison.runs:
        cells = [f"({letters[r]}) {_tex(r)}"]
        for m in comparison.measures:
            part = s[s["measure"] == m].set_index("run")["value"]
            v = part.get(r, float("nan"))
            text = _fmt(v, places).replace("–", "--")
            if part.notna().any() and not math.isnan(v) and v == part.max():
                text = f"\\textbf{{{text}}}"
            if marks.get((r, m)):
                text += f"$^{{{marks[(r, m)]}}}$"
            cells.append(text)
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def format_p(p: Any, places: int = 4) -> str:
    """A p-value in one fixed format: ``places`` decimals (``0.0400``), and ``<0.0001`` (for
    ``places=4``) below the smallest value those decimals show, so no p-value prints as 0 and
    none in scientific notation; ``–`` when undefined."""
    if p is None or pd.isna(p):
        return "–"
    p = float(p)
    floor = 10.0 ** -places
    if p < floor:
        return f"<{floor:.{places}f}"
    return f"{p:.{places}f}"


def _format_frame(frame: pd.DataFrame, places: int) -> str:
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype.kind == "f":
            out[col] = [_fmt(v, places) if col not in ("p_value", "p_adjusted") else format_p(v, places)
                        for v in out[col]]
    return out.to_string(index=False)


def to_text(comparison: Any, places: int = 4) -> str:
    """Plain-text summary and pairwise tables."""
    return ("summary\n" + _format_frame(comparison.summary, places) + "\n\npairwise\n"
            + _format_frame(comparison.pairwise, places) + "\n")


def _records(frame: pd.DataFrame, names: dict[str, str]) -> list[dict[str, Any]]:
    """JSON records (see `frame_records`) with the ``measure``
    column in the names ir_measures parses (``names``: report label -> name)."""
    if "measure" in frame.columns:
        frame = frame.assign(measure=frame["measure"].map(lambda m: names.get(m, m)))
    return frame_records(frame)


def to_json(comparison: Any) -> str:
    """JSON: ``{"params", "design", "summary", "pairwise"}``; measure names as ``ir_measures``
    parses them (``nDCG_FC@10``), NaN as null."""
    doc = {"params": comparison.params, "runs": comparison.runs,
           "measures": [comparison.names.get(m, m) for m in comparison.measures],
           "design": _records(comparison.design, comparison.names),
           "summary": _records(comparison.summary, comparison.names),
           "pairwise": _records(comparison.pairwise, comparison.names)}
    return json.dumps(doc, indent=2)


def to_csv(comparison: Any) -> str:
    """CSV: the summary rows, then (after a blank line) the pairwise rows."""
    return comparison.summary.to_csv(index=False) + "\n" + comparison.pairwise.to_csv(index=False)


def format_comparison(comparison: Any, fmt: str = "table", places: int = 4) -> str:
    """The comparison in one of ``table, markdown, latex, csv, json``."""
    if fmt == "table":
        return to_text(comparison, places)
    if fmt == "markdown":
        return to_markdown(comparison, places)
    if fmt == "latex":
        return to_latex(comparison, places)
    if fmt == "csv":
        return to_csv(comparison)
    if fmt == "json":
        return to_json(comparison)
    raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
