"""Aggregate judgment files into per-dimension macro scores with invalid / missing counts.

The score of a judgment is re-normalised from its integer ``score`` and the dimension's scale
(RETECO 1-5: (s-1)/4; iKAT 0-4: s/4) rather than trusted from the file's ``normalized`` field; a
row whose ``normalized`` disagrees, or whose score is outside the scale, is reported as a problem
and counted invalid. The value of a dimension is the mean over its valid judgments (macro over
turns: one judgment per turn); ``n_invalid`` counts rows with an error, ``n_missing`` counts target
turns with no row at all. Nothing is silently dropped.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import Problem
from ..io.jsonl import iter_jsonl
from .prompts import FAMILIES, canonical

__all__ = ["SCALES", "AGGREGATES", "read_judgments", "aggregate_judgments", "normalize_scores", "collapse_repeats"]

#: how repeated judgments of one item are combined; ``mean`` is the default
AGGREGATES = ("mean", "median", "mode")

#: scale name -> (low, high)
SCALES: dict[str, tuple[int, int]] = {"reteco": (1, 5), "ikat": (0, 4), "binary": (0, 1)}
_DIM_SCALE = {d: ("binary" if fam == "tempo" else fam) for fam, dims in FAMILIES.items() for d in dims}

JudgmentSource = str | os.PathLike | pd.DataFrame


def read_judgments(source: JudgmentSource | Sequence[JudgmentSource]) -> tuple[pd.DataFrame, list[Problem]]:
    """Judgment rows (``turn_id``, ``dimension``, ``score``, ``normalized``, ``model``,
    ``prompt_sha256``, ``error``, ``repeat``, ``line``, ``path``) from JSONL files and/or DataFrames.

    Malformed lines and duplicate (turn, dimension, repeat) rows (the first is kept) are problems;
    a row without ``repeat`` is repeat 0.
    """
    sources = list(source) if isinstance(source, (list, tuple)) else [source]
    frames: list[pd.DataFrame] = []
    problems: list[Problem] = []
    for src in sources:
        if isinstance(src, pd.DataFrame):
            f = src.copy()
            f["line"] = np.arange(1, len(f) + 1)
            f["path"] = None
            frames.append(f)
            continue
        path = str(src)
        rows: list[dict[str, Any]] = []
        for i, obj in iter_jsonl(path, problems):
            if "turn_id" not in obj or "dimension" not in obj:
                problems.append(Problem("a judgment needs 'turn_id' and 'dimension'", line=i, path=path))
                continue
            rows.append({**obj, "line": i, "path": path})
        frames.append(pd.DataFrame(rows))
    cols = ["turn_id", "dimension", "score", "normalized", "model", "prompt_sha256", "error", "repeat", "line",
            "path"]
    frame = pd.concat([f.reindex(columns=cols) for f in frames], ignore_index=True) if frames else pd.DataFrame(
        columns=cols)
    frame["turn_id"] = frame["turn_id"].astype(str)
    frame["dimension"] = [canonical(str(d)) for d in frame["dimension"]]
    rep = pd.to_numeric(frame["repeat"], errors="coerce")
    bad_rep = frame["repeat"].notna() & (rep.isna() | (rep < 0) | (rep != rep.round()))
    for row in frame[bad_rep].itertuples(index=False):
        problems.append(Problem(f"'repeat' {row.repeat!r} is not a non-negative integer; row left out",
                                line=_int_or_none(row.line), path=row.path, query_id=row.turn_id, kind="field"))
    frame = frame[~bad_rep].copy()
    frame["repeat"] = rep[~bad_rep].fillna(0).astype("int64")
    dup = frame.duplicated(["turn_id", "dimension", "repeat"], keep="first")
    for row in frame[dup].itertuples(index=False):
        what = f"dimension {row.dimension!r}" + (f", repeat {row.repeat}" if row.repeat else "")
        problems.append(Problem(f"duplicate judgment for {what}; the first one is kept",
                                line=_int_or_none(row.line), path=row.path, query_id=row.turn_id, kind="duplicate"))
    return frame[~dup].reset_index(drop=True), problems


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)
    except (TypeError, ValueError):
        return None


def _scale_for(dimension: str, scale: str | None) -> tuple[int, int]:
    name = scale or _DIM_SCALE.get(dimension)
    if name is None:
        raise ValueError(f"unknown dimension {dimension!r}: give scale='reteco' or 'ikat'")
    if name not in SCALES:
        raise ValueError(f"unknown scale {name!r}; choose one of {sorted(SCALES)}")
    return SCALES[name]


def normalize_scores(frame: pd.DataFrame, scale: str | None = None) -> tuple[pd.DataFrame, list[Problem]]:
    """Add ``valid`` (bool) and ``value`` (normalised score, NaN when invalid) columns."""
    problems: list[Problem] = []
    frame = frame.copy()
    values = np.full(len(frame), np.nan)
    valid = np.zeros(len(frame), dtype=bool)
    for dim, idx in frame.groupby("dimension", sort=False).indices.items():
        low, high = _scale_for(dim, scale)
        sub = frame.iloc[idx]
        score = pd.to_numeric(sub["score"], errors="coerce").to_numpy(dtype=np.float64)
        has_error = sub["error"].notna().to_numpy() & (sub["error"].astype(str) != "").to_numpy()
        is_int = ~np.isnan(score) & (np.floor(score) == score)
        in_range = is_int & (score >= low) & (score <= high)
        norm = (score - low) / (high - low)
        ok = in_range & ~has_error
        stated = pd.to_numeric(sub["normalized"], errors="coerce").to_numpy(dtype=np.float64)
        disagree = ok & ~np.isnan(stated) & (np.abs(stated - norm) > 1e-9)
        bad_score = ~has_error & ~in_range
        for j in np.flatnonzero(bad_score | disagree):
            row = sub.iloc[j]
            what = (f"score {row['score']!r} is not an integer in {low}-{high}" if bad_score[j]
                    else f"'normalized' {row['normalized']!r} disagrees with score {row['score']!r} "
                         f"on the {low}-{high} scale")
            problems.append(Problem(f"{dim}: {what}; counted invalid", line=_int_or_none(row["line"]),
                                    path=row["path"], query_id=row["turn_id"], kind="score"))
        ok &= ~disagree
        values[idx] = np.where(ok, norm, np.nan)
        valid[idx] = ok
    frame["valid"] = valid
    frame["value"] = values
    return frame, problems


def collapse_repeats(frame: pd.DataFrame, how: str = "mean") -> pd.DataFrame:
    """One row per (``turn_id``, ``dimension``) from rows with ``valid`` and ``value`` columns and
    any number of repeats.

    ``value`` combines the valid repeats: ``mean`` (the default: the expected score of the judge),
    ``median`` (the middle value; the mean of the two middle values for an even count) or ``mode``
    (the most frequent value; the lowest of tied values). ``valid`` is True when at least one
    repeat is valid; ``n_repeats`` and ``n_valid_repeats`` count them.
    """
    if how not in AGGREGATES:
        raise ValueError(f"--aggregate must be one of {', '.join(AGGREGATES)}, not {how!r}")
    keys = ["turn_id", "dimension"]
    f = frame[[*keys, "valid", "value"]].copy()
    f["value"] = f["value"].where(f["valid"]).astype("float64")
    g = f.groupby(keys, sort=False)
    out = pd.DataFrame({"n_repeats": g.size(), "n_valid_repeats": g["valid"].sum().astype(int)})
    if how == "mean":
        out["value"] = g["value"].mean()
    elif how == "median":
        out["value"] = g["value"].median()
    else:
        counts = f.dropna(subset=["value"]).groupby([*keys, "value"], sort=False).size().rename("c").reset_index()
        counts = counts.sort_values(["c", "value"], ascending=[False, True], kind="stable")
        top = counts.drop_duplicates(keys, keep="first").set_index(keys)["value"]
        out["value"] = top.reindex(out.index)
    out["valid"] = out["n_valid_repeats"] > 0
    return out.reset_index()


def aggregate_judgments(
    judgments: JudgmentSource | Sequence[JudgmentSource],
    *,
    targets: Sequence[str] | None = None,
    dimensions: Sequence[str] | None = None,
    scale: str | None = None,
    topics: pd.DataFrame | str | None = None,
    by: str | Sequence[str] | None = None,
    problems: list[Problem] | None = None,
    aggregate: str = "mean",
) -> pd.DataFrame:
    """Per-dimension macro scores of judgment files, in the style of :func:`reteco_measures.evaluate`.

    Args:
        judgments: JSONL path(s) written by ``reteco-measures judge`` or DataFrames with the same
            columns.
        targets: the turns that should have been judged; target turns without a row count as
            ``n_missing``, rows of other turns are left out (and reported in ``problems``).
            Default: every turn that has a row for some dimension in the files.
        dimensions: dimensions to report (default: those present, in the order first seen).
        scale: force a scale (``reteco`` 1-5, ``ikat`` 0-4); default from the dimension name.
        topics: topics metadata (DataFrame or file) for ``by``.
        by: a topics column, ``"depth"`` (T1..T4, T5+ from the turn number or the
            ``<conversation>_turn_<t>`` id) or a list of them: one row per group, then
            ``"(macro)"`` (mean of group means) and ``"(all)"`` (mean over turns) rows.
        problems: a list that receives the problems found (malformed rows, bad scores, ...).
        aggregate: how repeated judgments of a turn are combined (``mean``, ``median``, ``mode``;
            see :func:`collapse_repeats`); a turn is invalid only when all its repeats are.

    Returns:
        DataFrame ``[*by, "dimension", "value", "n", "n_invalid", "n_missing"]``: ``value`` is the
        mean normalised score over the ``n`` valid judgments (NaN if none).
    """
    found: list[Problem] = []
    frame, p = read_judgments(judgments)
    found.extend(p)
    if dimensions is not None:
        dims = [canonical(d) for d in dimensions]
    else:
        dims = list(dict.fromkeys(frame["dimension"].tolist()))
    # default targets: every turn with a row for any dimension in the files
    all_turns = list(dict.fromkeys(frame["turn_id"].tolist()))
    frame = frame[frame["dimension"].isin(dims)]
    frame, p = normalize_scores(frame, scale)
    found.extend(p)
    if targets is None:
        target_ids = all_turns
    else:
        target_ids = list(dict.fromkeys(str(t) for t in targets))
        extra = frame[~frame["turn_id"].isin(set(target_ids))]
        for tid in dict.fromkeys(extra["turn_id"].tolist()):
            found.append(Problem("judgment for a turn that is not a target; left out", query_id=tid,
                                 kind="unknown_query"))
        frame = frame[frame["turn_id"].isin(set(target_ids))]
    frame = collapse_repeats(frame, aggregate)
    # complete grid of (target, dimension): rows without a judgment are "missing"
    grid = pd.MultiIndex.from_product([target_ids, dims], names=["turn_id", "dimension"]).to_frame(index=False)
    full = grid.merge(frame[["turn_id", "dimension", "valid", "value"]], on=["turn_id", "dimension"], how="left",
                      indicator=True)
    full["missing"] = full["_merge"] == "left_only"
    full["valid"] = full["valid"].fillna(False).astype(bool)
    full["invalid"] = ~full["valid"] & ~full["missing"]
    full["value"] = full["value"].astype("float64")
    if problems is not None:
        problems.extend(found)

    by_cols = [by] if isinstance(by, str) else list(by or [])

    def stats(part: pd.DataFrame) -> dict[str, Any]:
        n = int(part["valid"].sum())
        return {"value": float(part["value"].mean()) if n else float("nan"), "n": n,
                "n_invalid": int(part["invalid"].sum()), "n_missing": int(part["missing"].sum())}

    rows: list[dict[str, Any]] = []
    if not by_cols:
        for dim in dims:
            rows.append({"dimension": dim, **stats(full[full["dimension"] == dim])})
        return pd.DataFrame(rows, columns=["dimension", "value", "n", "n_invalid", "n_missing"])

    from ..api import group_frame  # the same grouping rules as rm.evaluate(by=...)
    from ..side import load_topics

    topics_df = load_topics(topics) if topics is not None else None
    groups = group_frame(full["turn_id"], topics_df, by_cols)
    full = pd.concat([full.reset_index(drop=True), groups[by_cols].reset_index(drop=True)], axis=1)
    for dim in dims:
        sub = full[full["dimension"] == dim]
        means = []
        for key, part in sub.groupby(by_cols, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            st = stats(part)
            rows.append({**dict(zip(by_cols, key, strict=True)), "dimension": dim, **st})
            means.append(st["value"])
        gv = np.array(means, dtype=np.float64)
        macro = float(np.nanmean(gv)) if np.any(~np.isnan(gv)) else float("nan")
        st = stats(sub)
        rows.append({**{c: "(macro)" for c in by_cols}, "dimension": dim, **{**st, "value": macro}})
        rows.append({**{c: "(all)" for c in by_cols}, "dimension": dim, **st})
    return pd.DataFrame(rows, columns=[*by_cols, "dimension", "value", "n", "n_invalid", "n_missing"])
