"""Presentation of a `Leaderboard`: text, markdown,
LaTeX (booktabs), CSV, JSON. Nothing here computes a number."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pandas as pd

from .text import format_frame, frame_records, machine_name, machine_names, metric_key

__all__ = ["LEADERBOARD_FORMATS", "format_leaderboard", "ranking_table", "rank_range", "board_notes",
           "TURN_SET_NOTE"]

LEADERBOARD_FORMATS = ("table", "markdown", "latex", "csv", "json")


def _num(value: Any, places: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{places}f}"
    return str(value)


def _interval(lo: Any, hi: Any, places: int) -> str:
    return f"[{_num(lo, places)}, {_num(hi, places)}]"


def rank_range(low: Any, high: Any) -> str:
    """A rank interval as text: ``1–2``, or ``1`` when both ends agree."""
    if low is None or high is None or (isinstance(low, float) and math.isnan(low)):
        return "–"
    return f"{int(low)}" if int(low) == int(high) else f"{int(low)}–{int(high)}"


def ranking_table(board: Any, places: int = 4) -> pd.DataFrame:
    """The ranking as display strings: rank, rank interval, cluster, run, value [CI] (a calibrated
    board: the calibrated value [CI], then the raw judge mean [CI], n_human, bias), tie range,
    validity, diagnostics."""
    r = board.ranking
    level = int(round(100 * board.params.get("ci", 0.95)))
    calibrated = "judge_mean" in r.columns
    head = f"calibrated {board.measure}" if calibrated else board.measure
    out = pd.DataFrame({
        "rank": r["rank"].astype(int).astype(str),
        f"{level}% rank interval": [rank_range(lo, hi) for lo, hi in zip(r["rank_low"], r["rank_high"], strict=True)]
        if "rank_low" in r.columns else "–",
        "cluster": r["cluster"].astype(int).astype(str),
        "run": r["run"].astype(str),
        head: [_num(v, places) for v in r["value"]],
        f"{level}% CI": [_interval(lo, hi, places) for lo, hi in zip(r["ci_low"], r["ci_high"], strict=True)],
    })
    if calibrated:
        out["judge mean"] = [_num(v, places) for v in r["judge_mean"]]
        out[f"judge {level}% CI"] = [_interval(lo, hi, places)
                                     for lo, hi in zip(r["judge_ci_low"], r["judge_ci_high"], strict=True)]
        out["n_human"] = r["n_human"].astype(int).astype(str)
        out["bias"] = [_num(v, places) for v in r["bias"]]
    if "invalid" in r.columns:  # a generation board: what each mean is over
        out["n"] = r["n"].astype(int).astype(str)
        out["invalid"] = r["invalid"].astype(int).astype(str)
        out["missing"] = r["missing"].astype(int).astype(str)
        if "turn_set" in r.columns:
            out["turn set"] = r["turn_set"].astype(str)
    if "tie_min" in r.columns:
        out["ties: worst..best"] = [f"{_num(lo, places)}..{_num(hi, places)}"
                                    for lo, hi in zip(r["tie_min"], r["tie_max"], strict=True)]
    out["valid"] = ["yes" if v else "INVALID" for v in r["valid"]]
    fixed = {"rank", "run", "value", "ci_low", "ci_high", "rank_low", "rank_high", "n", "cluster", "valid",
             "problems", "tie_min", "tie_max", "judge_mean", "judge_ci_low", "judge_ci_high", "n_human", "bias",
             "human_mean", "lam", "reason", "invalid", "missing", "turn_set"}
    for col in r.columns:
        if col not in fixed:
            out[col] = [_num(v, places) for v in r[col]]
    return out


#: the note under a generation board whose runs' means are over different turns
TURN_SET_NOTE = ("note: the means are over different turn sets (column 'turn set': runs of one letter average "
                 "the same turns; n, invalid and missing say what each mean leaves out); --on-missing zero "
                 "(on_missing='zero') scores a turn without a valid judgment 0, so every run averages the same turns")


def board_notes(board: Any) -> list[str]:
    """The lines every form of a leaderboard prints below its ranking: a note when a generation
    board's means are over different turn sets, each ranked run invalid by the benchmark's rules
    with its reason, then each submission not scored (not ranked) with its reason."""
    r = board.ranking
    lines = []
    if "turn_set" in r.columns:
        lines.append(TURN_SET_NOTE)
    if "reason" in r.columns:
        for run, valid, reason in zip(r["run"], r["valid"], r["reason"], strict=True):
            if not valid:
                lines.append(f"INVALID (ranked with its official value): {run}: {reason or 'invalid by the rules'}")
    lines += [f"not scored (not ranked): {name}: {msg}" for name, msg in board.failed.items()]
    return lines


def _markdown(frame: pd.DataFrame) -> str:
    def esc(v: Any) -> str:
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(esc(c) for c in frame.columns) + " |",
             "|" + "|".join("---" for _ in frame.columns) + "|"]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _latex(frame: pd.DataFrame, caption: str, notes: list[str] | None = None) -> str:
    def tex(v: Any) -> str:
        s = str(v)
        for a, b in (("\\", "\\textbackslash{}"), ("&", "\\&"), ("%", "\\%"), ("_", "\\_"), ("#", "\\#"),
                     ("|", "\\textbar{}"), ("–", "--")):
            s = s.replace(a, b)
        return s

    cols = "l" * 3 + "r" * (len(frame.columns) - 3)
    lines = ["\\begin{table}[t]", "\\centering", f"\\begin{{tabular}}{{{cols}}}", "\\toprule",
             " & ".join(tex(c) for c in frame.columns) + " \\\\", "\\midrule"]
    lines += [" & ".join(tex(v) for v in row) + " \\\\" for row in frame.itertuples(index=False)]
    lines += ["\\bottomrule", "\\end{tabular}"]
    if notes:
        lines += ["\\par\\footnotesize " + " \\\\\n".join(tex(n) for n in notes)]
    lines += [f"\\caption{{{tex(caption)}}}", "\\end{table}"]
    return "\n".join(lines)


def _legend(board: Any) -> str:
    p = board.params
    unit = board.design["unit"].iloc[0] if len(board.design) else "query"
    strata = board.design["strata"].iloc[0] if len(board.design) else ""
    level = int(round(100 * p['ci']))
    resampling = f"resampling unit: {unit}" + (f", stratified by {strata}" if strata else "")
    ranks = (f"; rank interval: {level}% of the bootstrap resamples place the run within it (a run tied with others "
             "in a resample counts every tied place)")
    if p.get("calibration"):
        return (f"ranked by the {p['calibration'].upper()}-calibrated mean of {board.measure} (human ratings; "
                f"{level}% normal CI), beside the raw judge mean ({level}% bootstrap CI, {resampling})" + ranks
                + f"; clusters: runs not significantly different from the cluster's best run (paired bootstrap test "
                f"of the calibrated means, {p['correction'] or 'no'} correction over all pairs, alpha {p['alpha']})")
    return (f"ranked by {board.measure}; {level}% bootstrap CI ({resampling})" + ranks
            + f"; clusters: runs not significantly different from the cluster's best run "
            f"({p['test']} test, {p['correction'] or 'no'} correction over all pairs, alpha {p['alpha']})")


def _group_frames(board: Any, places: int) -> list[tuple[str, pd.DataFrame]]:
    out = []
    for name, frame in board.groups.items():
        shown = frame.copy()
        for col in shown.columns[1:]:
            shown[col] = [_num(v, places) for v in shown[col]]
        out.append((f"{name} ({board.measure})", shown))
    return out


def format_leaderboard(board: Any, fmt: str = "table", places: int = 4) -> str:
    """The leaderboard as ``table``, ``markdown``, ``latex``, ``csv`` or ``json``. JSON names the
    measure as ``ir_measures.parse_measure`` reads it back (``nDCG_FC@10``); tables print
    ``nDCG|FC@10``."""
    if fmt == "json":
        doc = {
            "benchmark": board.benchmark,
            "measure": machine_name(board.measure),  # parses back; the key keeps the printed form's
            "key": metric_key(board.measure),
            "params": {k: v for k, v in board.params.items() if k != "by"},
            "design": frame_records(machine_names(board.design)),
            "ranking": frame_records(machine_names(board.ranking)),
            "groups": {name: frame_records(machine_names(f)) for name, f in board.groups.items()},
            "pairwise": frame_records(machine_names(board.pairwise)),
            "failed": dict(board.failed),
            "not_scored": [{"run": name, "reason": msg} for name, msg in board.failed.items()],
        }
        calibration = getattr(board, "calibration", None)
        if calibration is not None and len(calibration):
            doc["calibration"] = frame_records(calibration)
            doc["calibrated_pairwise"] = frame_records(board.calibrated_pairwise)
        return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        board.ranking.to_csv(buf, index=False)
        return buf.getvalue()
    table = ranking_table(board, places)
    legend = _legend(board)
    failed = board_notes(board)
    if fmt == "latex":
        return _latex(table, f"{board.benchmark}: {legend}", failed) + "\n"
    if fmt == "markdown":
        parts = [f"**{board.benchmark}** — {legend}", "", _markdown(table)]
        for title, frame in _group_frames(board, places):
            parts += ["", f"*{title}*", "", _markdown(frame)]
        parts += ["", *failed] if failed else []
        return "\n".join(parts) + "\n"
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; choose one of {LEADERBOARD_FORMATS}")
    parts = [f"leaderboard {board.benchmark}: {len(board.ranking)} submission(s); {legend}", "", format_frame(table)]
    for title, frame in _group_frames(board, places):
        parts += ["", f"== {title}", format_frame(frame)]
    if failed:
        parts += ["", *failed]
    return "\n".join(parts) + "\n"
