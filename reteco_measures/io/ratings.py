"""Human ratings: the reader of rating files and sheets, and the checks every consumer shares.

A rating is ``turn_id, dimension, rater, score`` (an integer on the dimension's scale; TEMPO items
are ``"<query_id> <doc_id>[ <period>]"``). `read_ratings` reads long tables (CSV, TSV, JSONL or
a DataFrame) and filled-in rating sheets (one ``score_<rater>`` column per rater); `out_of_scale`
leaves out the scores off their dimension's scale. Every problem names the file and line it was
found at, so the agreement statistics, the calibrated judge means and the leaderboards report a bad
rating the same way.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataFormatWarning, Problem, user_stacklevel
from .jsonl import iter_jsonl
from .judgments import DIM_SCALE, SCALES, canonical

__all__ = ["read_ratings", "out_of_scale", "item_ids", "scale_bounds", "int_scores", "read_table", "report_problems",
           "line_of"]

Frame = pd.DataFrame | str | os.PathLike


def item_ids(frame: pd.DataFrame) -> pd.Series:
    if "turn_id" in frame.columns and frame["turn_id"].notna().all():
        return frame["turn_id"].astype(str)
    if {"query_id", "doc_id"} <= set(frame.columns):
        ids = frame["query_id"].astype(str) + " " + frame["doc_id"].astype(str)
        if "period" in frame.columns:
            period = frame["period"]
            ids = ids.where(period.isna(), ids + " " + period.astype(str))
        if "turn_id" in frame.columns:
            ids = frame["turn_id"].where(frame["turn_id"].notna(), ids).astype(str)
        return ids
    raise ValueError("ratings and judgments need 'turn_id' (or 'query_id' and 'doc_id')")


def scale_bounds(dimension: str, scale: str | tuple[int, int] | None) -> tuple[int, int]:
    if isinstance(scale, tuple):
        return int(scale[0]), int(scale[1])
    name = scale or DIM_SCALE.get(dimension)
    if name is None or name not in SCALES:
        raise ValueError(f"no scale known for dimension {dimension!r}: pass scale='reteco', 'ikat', 'binary' "
                         "or (low, high)")
    return SCALES[name]


def int_scores(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(float scores, mask of integer values)."""
    num = pd.to_numeric(values.where(values.map(lambda v: not isinstance(v, bool))), errors="coerce")
    arr = num.to_numpy(dtype=np.float64)
    ok = np.isfinite(arr) & (np.floor(arr) == arr)
    return arr, ok


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such file")
    if p.suffix.lower() in (".csv", ".tsv"):
        try:
            return pd.read_csv(p, sep="\t" if p.suffix.lower() == ".tsv" else ",", dtype=str, keep_default_na=False,
                               encoding="utf-8-sig")
        except (UnicodeDecodeError, pd.errors.ParserError) as exc:
            raise ValueError(f"{p}: not a readable CSV ({str(exc).splitlines()[0][:120]})") from None
    problems: list[Problem] = []
    rows = [obj for _, obj in iter_jsonl(p, problems)]
    report_problems(problems, None)
    return pd.DataFrame(rows)


def report_problems(found: list[Problem], problems: list[Problem] | None) -> None:
    if not found:
        return
    if problems is not None:
        problems.extend(found)
        return
    shown = "\n".join(str(p) for p in found[:10])
    warnings.warn(f"{len(found)} problem(s) in ratings/judgments (rows left out):\n{shown}", DataFormatWarning,
                  stacklevel=user_stacklevel())


def read_ratings(source: Frame, problems: list[Problem] | None = None, *, keep_lines: bool = False,
                 path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Human ratings as a long frame ``turn_id, dimension, rater, score`` (integer scores).

    ``source`` is a DataFrame or a CSV/TSV/JSONL file, either long (``turn_id`` — or ``query_id``
    and ``doc_id`` — , ``dimension``, ``rater``, ``score``) or a filled-in rating sheet from
    ``judge sample`` (one ``score_<rater>`` column per rater). Empty cells are "not rated"; a
    score that is not an integer is a problem (the row is left out), never a number guessed.

    Args:
        source: the ratings.
        problems: receives the rows left out (default: a `DataFormatWarning`).
        keep_lines: also return ``line`` and ``path`` columns (where each rating was read), so
            later checks (a score off the scale) can name them.
        path: the file a DataFrame ``source`` was read from: its index is then the row position
            in that file, and problems name it (a frame with ``line`` and ``path`` columns, as
            ``keep_lines`` returns, names its own).
    """
    frame = source.copy() if isinstance(source, pd.DataFrame) else read_table(source)
    if not isinstance(source, pd.DataFrame):
        path = str(source)
    path = None if path is None else os.fspath(path)
    label = path or "ratings"
    if "dimension" not in frame.columns:
        raise ValueError(f"{label}: a 'dimension' column is required")
    offset = 2 if path and path.lower().endswith((".csv", ".tsv")) else 1
    if {"line", "path"} <= set(frame.columns):  # already read, with where each rating came from
        lines, paths = frame["line"].to_numpy(), frame["path"].to_numpy(dtype=object)
        frame = frame.drop(columns=["line", "path"])
    elif isinstance(source, pd.DataFrame) and path is not None:
        lines, paths = frame.index.to_numpy() + offset, np.full(len(frame), path, dtype=object)
    else:
        lines, paths = np.arange(len(frame)) + offset, np.full(len(frame), path, dtype=object)
    frame = frame.reset_index(drop=True)
    frame["_line"], frame["_path"] = lines, paths
    frame["turn_id"] = item_ids(frame)
    if "rater" not in frame.columns:
        raters = [c for c in frame.columns if str(c).startswith("score_")]
        if not raters:
            raise ValueError(f"{label}: need 'rater' and 'score' columns, or 'score_<rater>' columns "
                             "(a rating sheet)")
        frame = frame.melt(id_vars=["turn_id", "dimension", "_line", "_path"], value_vars=raters, var_name="rater",
                           value_name="score")
        frame["rater"] = frame["rater"].str.slice(len("score_"))
    elif "score" not in frame.columns:
        raise ValueError(f"{label}: a 'score' column is required")
    score = frame["score"]
    blank = score.isna() | (score.astype(str).str.strip() == "")
    frame = frame[~blank]
    arr, ok = int_scores(frame["score"])
    bad = frame[~ok]
    found = [Problem(f"score {v!r} is not an integer; left out", line=line_of(ln), path=pa, query_id=str(t),
                     kind="score")
             for v, ln, pa, t in zip(bad["score"], bad["_line"], bad["_path"], bad["turn_id"], strict=True)]
    report_problems(found, problems)
    out = pd.DataFrame({"turn_id": frame["turn_id"][ok].astype(str),
                        "dimension": [canonical(str(d)) for d in frame["dimension"][ok]],
                        "rater": frame["rater"][ok].astype(str), "score": arr[ok].astype(np.int64),
                        "line": frame["_line"][ok], "path": frame["_path"][ok]})
    dup = out.duplicated(["turn_id", "dimension", "rater"], keep="first")
    if dup.any():
        d = out[dup]
        report_problems([Problem(f"rater {r!r} rated {dim!r} twice; the first is kept", query_id=t, path=pa,
                         line=line_of(ln), kind="duplicate")
                 for t, dim, r, ln, pa in zip(d["turn_id"], d["dimension"], d["rater"], d["line"], d["path"],
                                              strict=True)], problems)
    out = out[~dup].reset_index(drop=True)
    return out if keep_lines else out.drop(columns=["line", "path"])


def line_of(value: Any) -> int | None:
    """A line number from a ``line`` cell (None when unknown)."""
    try:
        return None if value is None or pd.isna(value) else int(value)
    except (TypeError, ValueError):
        return None


def out_of_scale(ratings: pd.DataFrame, bounds: dict[str, tuple[int, int]], who: str = "human",
                 hint: str = "") -> tuple[pd.DataFrame, list[Problem]]:
    """``ratings`` without the scores off their dimension's scale (``bounds``: dimension ->
    (low, high)), and a problem for each one left out, naming its file and line when the frame
    has ``line`` and ``path`` columns (`read_ratings` with ``keep_lines``)."""
    low = ratings["dimension"].map(lambda d: bounds[d][0]).to_numpy(dtype=np.float64)
    high = ratings["dimension"].map(lambda d: bounds[d][1]).to_numpy(dtype=np.float64)
    score = ratings["score"].to_numpy(dtype=np.float64)
    off = (score < low) | (score > high)
    if not off.any():
        return ratings, []
    bad = ratings[off]
    lines = bad["line"] if "line" in bad else [None] * len(bad)
    paths = bad["path"] if "path" in bad else [None] * len(bad)
    raters = bad["rater"] if "rater" in bad else [None] * len(bad)
    found = [Problem(f"{who} score {int(s)} for {d!r}" + (f" by rater {r!r}" if r is not None else "")
                     + f" is outside the {bounds[d][0]}-{bounds[d][1]} scale; left out{hint}",
                     path=pa, line=line_of(ln), query_id=str(t), kind="score")
             for t, d, r, s, ln, pa in zip(bad["turn_id"], bad["dimension"], raters, bad["score"], lines, paths,
                                           strict=True)]
    return ratings[~off], found
