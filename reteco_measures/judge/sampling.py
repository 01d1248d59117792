"""A reproducible, stratified sample of judged items as a rating sheet for human raters.

The sheet holds what the judge saw (question, conversation so far, passages or document, the
answer) and the rubric of the dimension, and one empty ``score_<rater>`` column per rater. It does
not show the judge's score (raters rate blind). Filled in, it is read back by
`read_ratings`.

Sampling: the valid judged items (one per turn and dimension, whatever the number of repeats) are
split into strata (``dimension`` and, with topics, e.g. ``domain`` or ``depth``); the sample size
is allocated to the strata in proportion to their sizes (largest remainders, at least one item per
stratum when ``n`` allows), and each stratum is sampled without replacement with numpy's PCG64
generator seeded by ``seed`` after sorting the items, so the same judgments and seed always give
the same sheet. Rows are then shuffled (same generator) so strata are interleaved.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..engine.grouping import group_frame
from ..errors import Problem
from .cache import atomic_write_text
from .prompts import load_prompt, prompt_index

__all__ = ["allocate", "sample_items", "rating_sheet", "SHEET_TEXT_COLUMNS"]

#: the judged inputs copied to the sheet, in this order (those present)
SHEET_TEXT_COLUMNS = ["question", "history", "passages", "periods", "period", "document", "answer"]


def allocate(sizes: Sequence[int], n: int) -> list[int]:
    """Proportional allocation of ``n`` over strata of ``sizes`` (largest remainders; at least one
    per non-empty stratum when ``n`` is at least the number of strata; never more than a stratum
    holds)."""
    sizes = [int(s) for s in sizes]
    total = sum(sizes)
    n = min(int(n), total)
    if n <= 0 or total == 0:
        return [0] * len(sizes)
    exact = [n * s / total for s in sizes]
    quota = [int(e) for e in exact]
    if n >= sum(1 for s in sizes if s > 0):
        quota = [max(q, 1) if s > 0 else 0 for q, s in zip(quota, sizes, strict=True)]
    # too many after the minimum of one: take back from the largest quotas above one
    while sum(quota) > n:
        i = max((i for i, q in enumerate(quota) if q > 1), key=lambda i: quota[i] - exact[i])
        quota[i] -= 1
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - int(exact[i])), i))
    while sum(quota) < n:
        for i in order:
            if sum(quota) >= n:
                break
            if quota[i] < sizes[i]:
                quota[i] += 1
    return quota


def _judged_items(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per (turn_id, dimension) with a valid score in some repeat, with its inputs."""
    f = judgments.copy()
    for col, default in (("repeat", 0), ("prompt_sha256", None), ("inputs", None)):
        if col not in f.columns:
            f[col] = default
    f["repeat"] = pd.to_numeric(f["repeat"], errors="coerce").fillna(0)
    if "valid" in f.columns:  # rows of read_judgments / read_judgment_rows: their rules decide
        valid = f["valid"].astype(bool)
    else:
        valid = f["error"].isna() & f["score"].notna() if "error" in f.columns else f["score"].notna()
    ok_items = f[valid][["turn_id", "dimension"]].drop_duplicates()
    with_inputs = f[f["inputs"].map(lambda v: isinstance(v, dict))].sort_values("repeat", kind="stable")
    first = with_inputs.drop_duplicates(["turn_id", "dimension"])[["turn_id", "dimension", "inputs",
                                                                    "prompt_sha256"]]
    return ok_items.merge(first, on=["turn_id", "dimension"], how="left")


def sample_items(
    judgments: pd.DataFrame,
    n: int,
    *,
    stratify: Sequence[str] = ("dimension",),
    topics: pd.DataFrame | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """The sampled items (``turn_id, dimension, inputs, prompt_sha256`` and the strata columns),
    in sheet order. See the module docstring for the procedure."""
    if n < 1:
        raise ValueError("--n must be >= 1")
    items = _judged_items(judgments)
    if items.empty:
        raise ValueError("no valid judged item to sample (every judgment is invalid or the file is empty)")
    strata = [s for s in stratify if s]
    extra = [s for s in strata if s != "dimension"]
    if extra:
        groups = group_frame(items["turn_id"].astype(str), topics, extra)
        for col in extra:
            items[col] = groups[col].to_numpy()
    items = items.sort_values([*strata, "turn_id", "dimension"], kind="stable").reset_index(drop=True)
    rng = np.random.default_rng(seed)
    if strata:
        keys = list(items.groupby(strata, sort=True).groups.items())
    else:
        keys = [((), items.index)]
    quotas = allocate([len(idx) for _, idx in keys], n)
    chosen: list[int] = []
    for (_, idx), q in zip(keys, quotas, strict=True):
        if q:
            chosen.extend(sorted(rng.choice(np.asarray(idx), size=q, replace=False).tolist()))
    sample = items.loc[chosen].reset_index(drop=True)
    return sample.iloc[rng.permutation(len(sample))].reset_index(drop=True)


def rating_sheet(
    sample: pd.DataFrame,
    raters: Sequence[str],
    *,
    prompts_dir: str | os.PathLike | None = None,
    problems: list[Problem] | None = None,
) -> pd.DataFrame:
    """The rating sheet of a sample: ``item, turn_id, dimension, scale``, the strata columns, the
    judged inputs (`SHEET_TEXT_COLUMNS`), ``rubric``, then one empty ``score_<rater>`` column
    per rater."""
    if not raters:
        raise ValueError("at least one rater is needed")
    bad = [r for r in raters if not r or "," in r]
    if bad or len(set(raters)) != len(raters):
        raise ValueError(f"rater names must be distinct and non-empty: {list(raters)}")
    index = prompt_index(prompts_dir)
    strata = [c for c in sample.columns if c not in ("turn_id", "dimension", "inputs", "prompt_sha256")]
    rows = []
    for k, r in enumerate(sample.itertuples(index=False), start=1):
        rec = r._asdict()
        prompt = index.get(rec.get("prompt_sha256") or "")
        if prompt is None:
            try:
                prompt = load_prompt(rec["dimension"], directory=prompts_dir)
            except (FileNotFoundError, ValueError):
                prompt = None
            if problems is not None:
                problems.append(Problem(f"the prompt {rec.get('prompt_sha256')} of this judgment is not among the "
                                        "known prompt files; the sheet shows the current prompt's rubric",
                                        query_id=str(rec["turn_id"]), kind="prompt"))
        inputs = rec.get("inputs") if isinstance(rec.get("inputs"), dict) else {}
        if not inputs and problems is not None:
            problems.append(Problem("the judgment has no 'inputs' (a file written before they were recorded): the "
                                    "sheet row lacks the context; judge again to fill it", query_id=str(rec["turn_id"]),
                                    kind="field"))
        row = {"item": k, "turn_id": rec["turn_id"], "dimension": rec["dimension"],
               "scale": f"{prompt.low}-{prompt.high}" if prompt else ""}
        row.update({c: rec[c] for c in strata})
        row.update({c: inputs.get(c, "") for c in SHEET_TEXT_COLUMNS})
        row["rubric"] = prompt.system if prompt else ""
        row.update({f"score_{name}": "" for name in raters})
        rows.append(row)
    frame = pd.DataFrame(rows)
    empty_text = [c for c in SHEET_TEXT_COLUMNS if (frame[c] == "").all()]
    return frame.drop(columns=empty_text)


def write_sheet(sheet: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write the sheet as UTF-8 CSV (atomically)."""

    atomic_write_text(Path(path), sheet.to_csv(index=False))
