"""Kernel of the ``Likert`` measure: judged generation quality as an ir_measures measure.

``Likert(dimension='correctness', judgments='judgments.jsonl')`` gives, for every evaluated query
(the qrels' queries = the target turns), the normalised score of that turn's judgment:
(s-1)/4 on the RETECO 1-5 scale, s/4 on the iKAT 0-4 scale. A target turn whose judgment is
invalid or missing has no value (NaN, left out of the mean) and is *reported*: a
`LikertWarning` names how many were invalid and missing. The full table with the counts is
`reteco_measures.judge.aggregate_judgments` / ``reteco-measures judge aggregate``. Judgment rows
are read by `reteco_measures.io.judgments.read_judgments`, the reader the judge uses.

The judgments file may also be given as ``rm.side_info(judgments=...)`` (path or DataFrame).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..errors import LikertWarning, user_stacklevel
from ..io.judgments import FAMILIES, canonical, normalize_scores, read_judgments
from ..measures.params import param
from .context import EvalContext, implements

__all__ = ["likert_kernel", "LikertWarning"]


@implements("Likert")
def likert_kernel(measure, ctx: EvalContext) -> pd.DataFrame:
    dimension = param(measure, "dimension")
    if not dimension:
        raise ValueError(
            "Likert needs a dimension, e.g. Likert(dimension='correctness', judgments='judgments.jsonl'); "
            f"dimensions: {', '.join(FAMILIES['reteco'] + FAMILIES['ikat'])}"
        )
    source = param(measure, "judgments") or ctx.side.extra.get("judgments")
    if source is None:
        raise ValueError(
            f"{measure}: no judgments: give Likert(judgments='judgments.jsonl', ...) or "
            "rm.side_info(judgments=...); write the file with 'reteco-measures judge generation', "
            "or aggregate it directly with reteco_measures.judge.aggregate_judgments"
        )
    dim = canonical(dimension)
    frame, problems = read_judgments(source)
    frame = frame[frame["dimension"] == dim]
    scale = param(measure, "scale")
    if scale == "reteco" and dim in FAMILIES["ikat"] or scale == "ikat" and dim in FAMILIES["reteco"]:
        raise ValueError(f"{measure}: dimension {dim!r} is not on the {scale} scale")
    frame, more = normalize_scores(frame, scale)
    problems.extend(more)
    qids = ctx.query_ids
    by_turn = frame.drop_duplicates("turn_id").set_index("turn_id")
    present = qids.isin(by_turn.index)
    values = by_turn["value"].reindex(qids).to_numpy(dtype=np.float64)
    n_missing = int((~present).sum())
    n_invalid = int((present & np.isnan(values)).sum())
    if n_missing or n_invalid or problems:
        warnings.warn(
            f"{measure}: of {len(qids)} target turns, {n_invalid} have an invalid judgment and "
            f"{n_missing} have none; they are left out of the mean"
            + (f" ({len(problems)} problem(s) in the judgments, first: {problems[0]})" if problems else ""),
            LikertWarning,
            stacklevel=user_stacklevel(),
        )
    return pd.DataFrame({"query_id": qids.astype(str), "value": values})
