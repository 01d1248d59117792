"""Self-contained HTML pages: a submission's detailed results and a published leaderboard.

Every page is one file with its style sheet, its sorting script and its plots (PNG as ``data:``
URIs) inline: it makes no network request, so it can be mailed, attached to a task report,
served from any static host or shown by Codabench as ``detailed_results.html``.

* `score_html` — one `Score`: the official number, the
  diagnostics, every group table, what the contract removed and the validation problems.
* `leaderboard_html` — a `Leaderboard`: the
  ranked table with confidence intervals and significance clusters, the validation status of each
  submission, the group tables, the pairwise tests and the plots.

Tables carry ``class="sortable"``: clicking a column header sorts by it (numbers as numbers),
clicking again reverses the order. Presentation only: nothing here computes a score.
"""

from __future__ import annotations

import base64
import html
import io
import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import count_problems, display_message
from . import plots
from .leaderboard import TURN_SET_NOTE

__all__ = ["page", "table_html", "figure_data_uri", "score_html", "leaderboard_html"]

_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;
color:#1b1f23;padding:0 1em;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}
.meta{color:#555;margin:.2em 0 1em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.92em}
th,td{border:1px solid #d0d7de;padding:.3em .6em;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f6f8fa;white-space:nowrap}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}
table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
tr.invalid td{background:#fff1f0}
tr.cluster-odd td{background:#f7fbff}
.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}
.official{font-size:2.2em;font-weight:700;margin:.1em 0}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
code{background:#f6f8fa;padding:0 .2em}
div.wrap{overflow-x:auto;max-width:100%}
ul.problems li{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.88em}
"""

# Sort a table by the clicked column; numbers (data-value) compare numerically, text otherwise.
_JS = """
document.querySelectorAll('table.sortable').forEach(function(table){
  var heads = table.querySelectorAll('thead th');
  heads.forEach(function(th, col){
    th.addEventListener('click', function(){
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var asc = th.getAttribute('aria-sort') !== 'ascending';
      heads.forEach(function(h){ h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
      function key(row){
        var cell = row.cells[col];
        var v = cell.getAttribute('data-value');
        if (v !== null && v !== '' && !isNaN(parseFloat(v))) { return [0, parseFloat(v)]; }
        return [1, cell.textContent.trim().toLowerCase()];
      }
      rows.sort(function(a, b){
        var ka = key(a), kb = key(b);
        if (ka[0] !== kb[0]) { return ka[0] - kb[0]; }
        var r = ka[1] < kb[1] ? -1 : (ka[1] > kb[1] ? 1 : 0);
        return asc ? r : -r;
      });
      rows.forEach(function(r){ body.appendChild(r); });
    });
  });
});
"""


def escape_html(value: Any) -> str:
    """``value`` as HTML text: control characters written as escapes (an ESC or NUL byte never
    reaches the page), long lines cut (`display_message`), then HTML-escaped."""
    return html.escape(display_message(value), quote=True)


def page(title: str, body: str) -> str:
    """A complete HTML document around ``body`` with the inline style sheet and sorting script."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{escape_html(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n{body}\n"
        f"<script>{_JS}</script>\n</body>\n</html>\n"
    )


def _cell(value: Any, places: int) -> tuple[str, str | None, bool]:
    """(text, sort value, numeric?) of one cell."""
    if value is None:
        return "", None, False
    if isinstance(value, (bool, np.bool_)):
        return ("yes" if value else "no"), None, False
    if isinstance(value, numbers.Integral):
        return str(int(value)), str(int(value)), True
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f):
            return "NaN", None, True
        return f"{f:.{places}f}", repr(f), True
    return str(value), None, False


def table_html(
    frame: pd.DataFrame,
    *,
    places: int = 4,
    sortable: bool = True,
    table_id: str | None = None,
    row_classes: Sequence[str] | None = None,
) -> str:
    """``frame`` as an HTML table (escaped; numbers right-aligned with ``data-value`` for sorting)."""
    attrs = ' class="sortable"' if sortable else ""
    if table_id:
        attrs += f' id="{escape_html(table_id)}"'
    head = "".join(f'<th scope="col">{escape_html(c)}</th>' for c in frame.columns)
    rows = []
    for i, rec in enumerate(frame.itertuples(index=False, name=None)):
        cls = f' class="{escape_html(row_classes[i])}"' if row_classes is not None and row_classes[i] else ""
        cells = []
        for value in rec:
            text, sort_value, numeric = _cell(value, places)
            data = f' data-value="{escape_html(sort_value)}"' if sort_value is not None else ""
            klass = ' class="num"' if numeric else ""
            cells.append(f"<td{klass}{data}>{escape_html(text)}</td>")
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return (f'<div class="wrap"><table{attrs}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(rows)
            + "\n</tbody>\n</table></div>")


def figure_data_uri(fig: Any, *, dpi: int = 110) -> str:
    """A matplotlib figure as a ``data:image/png;base64,...`` URI (the figure is closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    try:
        import matplotlib.pyplot as plt

        plt.close(fig)
    except ImportError:  # pragma: no cover - a figure implies matplotlib
        pass
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(fig: Any, caption: str) -> str:
    return (f'<figure><img alt="{escape_html(caption)}" src="{figure_data_uri(fig)}">'
            f"<figcaption>{escape_html(caption)}</figcaption></figure>")


def _problem_list(problems: Iterable[Any], limit: int) -> str:
    items = []
    problems = list(problems)
    for p in problems[:limit]:
        severity = getattr(p, "severity", "error")
        items.append(f"<li>[{escape_html(severity)}] {escape_html(p)}</li>")
    more = f"<p>… and {len(problems) - limit} more.</p>" if len(problems) > limit else ""
    return f'<ul class="problems">{"".join(items)}</ul>{more}' if items else "<p>No problems.</p>"


def score_html(score: Any, *, places: int = 4, limit: int = 200, title: str | None = None) -> str:
    """The detailed results of one submission (Codabench's ``detailed_results.html``).

    Args:
        score: a `Score`.
        places: decimals shown (sorting uses full precision).
        limit: validation problems listed (the count is always given).
        title: the page title (default: the benchmark and split).
    """
    name = title or f"{score.benchmark}" + (f" ({score.split})" if score.split else "")
    status = '<span class="ok">valid</span>' if score.valid else '<span class="bad">invalid</span>'
    official = "NaN" if score.official is None or (isinstance(score.official, float) and math.isnan(score.official)) \
        else f"{float(score.official):.{places}f}"
    parts = [
        f"<h1>{escape_html(name)}</h1>",
        f'<p class="meta">Official measure <code>{escape_html(score.official_measure)}</code> '
        f"({escape_html(score.aggregation)}); submission {status}.</p>",
        f'<p class="official" id="official">{escape_html(official)}</p>',
    ]
    if score.reward is not None:
        parts.append(f'<p>Reward: <strong id="reward">{float(score.reward):.6f}</strong> '
                     f"(shown on the 0–100 scale: {100 * float(score.reward):.1f})</p>")
    parts.append("<h2>Scores</h2>")
    parts.append(table_html(score.scores, places=places, table_id="scores"))
    titles = {g.name: g.title for g in getattr(score, "groupings", ())}
    for gname, frame in score.by_group.items():
        parts.append(f"<h2>{escape_html(titles.get(gname, gname))}</h2>")
        parts.append(table_html(frame, places=places, table_id=f"group-{gname}"))
    removed = {k: v for k, v in dict(score.removed).items() if v}
    parts.append("<h2>Validation</h2>")
    if removed:
        items = "".join(f"<li>{escape_html(k.replace('_', ' '))}: {int(v)}</li>" for k, v in removed.items())
        parts.append(f"<p>Removed or rejected by the contract:</p><ul>{items}</ul>")
    problems = list(score.report.errors)
    parts.append(f"<p>{count_problems(problems)} problem(s) in the submission.</p>")
    parts.append(_problem_list(problems, limit))
    if score.data_problems:
        parts.append(f"<h2>Reference data</h2><p>{len(score.data_problems)} problem(s).</p>")
        parts.append(_problem_list(score.data_problems, limit))
    if score.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{escape_html(n)}</li>" for n in score.notes) + "</ul>")
    return page(name, "\n".join(parts))


def _plots(board: Any) -> list[str]:
    """The leaderboard's plots as figures; none when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
    except ImportError:
        return []
    figures = []
    kinds = [("runs", "Runs with confidence intervals")]
    cols = set(board.per_query.columns)
    if "depth" in cols:
        kinds.append(("depth", "By conversation depth"))
    for kind, caption in kinds:
        try:
            # the runs plot in the ranking's order (by score, as the table and --plot)
            fig = plots.plot_comparison(board, kind, sort=True) if kind == "runs" else plots.plot_comparison(board, kind)
        except (ValueError, KeyError):  # a plot that does not apply to this board
            continue
        figures.append(_figure(fig, caption))
    return figures


def leaderboard_html(board: Any, *, places: int = 4, plots: bool = True, title: str | None = None) -> str:
    """A published leaderboard page: ranking with CIs and clusters, validity, groups, tests, plots.

    Args:
        board: a `Leaderboard`.
        places: decimals shown (sorting uses full precision).
        plots: embed the plots (needs matplotlib; skipped silently without it — the tables are
            the record).
        title: the page title (default: the benchmark's name).
    """
    name = title or f"{board.benchmark} leaderboard"
    ranking = board.ranking.copy()
    classes = []
    for rec in ranking.to_dict("records"):
        cls = "invalid" if not rec.get("valid", True) else ""
        if int(rec.get("cluster", 1)) % 2 == 1:
            cls = (cls + " cluster-odd").strip()
        classes.append(cls)
    params = dict(getattr(board, "params", {}) or {})
    test = params.get("test", "t")
    correction = params.get("correction", "holm")
    alpha = params.get("alpha", 0.05)
    ci = params.get("ci", 0.95)
    parts = [
        f"<h1>{escape_html(name)}</h1>",
        f'<p class="meta">Ranked by <code>{escape_html(board.measure)}</code>; {escape_html(int(round(100 * float(ci))))}% '
        f"confidence intervals; paired <code>{escape_html(test)}</code> tests with <code>{escape_html(correction)}</code> "
        f"correction at α = {escape_html(alpha)}. A cluster holds the runs not significantly different from its "
        f"best run (the leader). <code>rank_low</code>–<code>rank_high</code>: {escape_html(int(round(100 * float(ci))))}% "
        "of the bootstrap resamples place the run within these ranks (a run tied with others in a resample "
        "counts every tied place, so two identical runs span 1–2).</p>",
        "<h2>Ranking</h2>",
        table_html(ranking, places=places, table_id="ranking", row_classes=classes),
    ]
    if "turn_set" in ranking.columns:
        parts.append(f'<p class="meta">{escape_html(TURN_SET_NOTE)}</p>')
    calibration = getattr(board, "calibration", None)
    if calibration is not None and len(calibration):
        method = params.get("calibration", "ppi++")
        parts[1] = (f'<p class="meta">Ranked by the {escape_html(method.upper())}-calibrated mean of '
                    f"<code>{escape_html(board.measure)}</code> (the judge's scores corrected by the human ratings, "
                    f"{escape_html(int(round(100 * float(ci))))}% normal intervals), beside the raw judge mean "
                    "(<code>judge_mean</code>, bootstrap interval). Clusters: paired bootstrap tests of the "
                    f"calibrated means with <code>{escape_html(correction)}</code> correction at α = {escape_html(alpha)}. "
                    "<code>rank_low</code>–<code>rank_high</code>: the ranks the run takes in "
                    f"{escape_html(int(round(100 * float(ci))))}% of the resamples.</p>")
        parts.append("<h2>Calibration</h2>")
        parts.append(table_html(calibration, places=places, table_id="calibration"))
        parts.append("<h2>Pairwise tests of the calibrated means</h2>")
        parts.append(table_html(board.calibrated_pairwise, places=places, table_id="calibrated-pairwise"))
    if board.failed:
        parts.append("<h2>Not scored (not ranked)</h2><ul>"
                     + "".join(f"<li><code>{escape_html(k)}</code>: {escape_html(v)}</li>" for k, v in board.failed.items())
                     + "</ul>")
    invalid = [r for r, s in board.scores.items() if not s.valid]
    parts.append("<h2>Validation</h2>")
    rows = []
    for run, score in board.scores.items():
        errs = [p for p in score.report.errors if getattr(p, "severity", "error") == "error"]
        rows.append({"run": run, "valid": bool(score.valid), "problems": len(score.report.errors),
                     "errors": len(errs), "first problem": str(score.report.errors[0]) if score.report.errors else ""})
    parts.append(table_html(pd.DataFrame(rows), places=places, table_id="validation"))
    if invalid:
        parts.append(f"<p>{len(invalid)} invalid submission(s): scored as the benchmark's rules say.</p>")
    for gname, frame in board.groups.items():
        parts.append(f"<h2>{escape_html(gname.replace('_', ' '))}</h2>")
        parts.append(table_html(frame.reset_index() if frame.index.name else frame, places=places,
                                table_id=f"group-{gname}"))
    if len(board.pairwise):
        parts.append("<h2>Pairwise tests</h2>")
        parts.append(table_html(board.pairwise, places=places, table_id="pairwise"))
    if plots:
        figures = _plots(board)
        if figures:
            parts.append("<h2>Plots</h2>")
            parts.extend(figures)
    return page(name, "\n".join(parts))
