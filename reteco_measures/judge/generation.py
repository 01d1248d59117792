"""Generation judging (RETECO 2b/2c five dimensions, iKAT naturalness/groundedness).

One judgment per (target turn, dimension). The target turns are those of the context file, or of
an explicit ``targets`` list. A target turn without an answer, without context, or (for
faithfulness / groundedness) without passages is an *invalid* judgment with its reason: it is
written out and counted, never dropped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import Problem
from ..io.judgments import judgment_row
from .aggregate import collapse_repeats
from .cache import atomic_write_text
from .inputs import Answer, Context, render_history, render_passages
from .prompts import FAMILIES, Prompt, canonical, family_of, load_prompt
from .runner import JudgeItem, Outcome

__all__ = [
    "PASSAGE_DIMENSIONS",
    "untargeted_answers",
    "resolve_dimensions",
    "generation_items",
    "judgment_rows",
    "summary_frame",
    "write_jsonl",
]

#: dimensions that are judged against passages (no passages -> invalid)
PASSAGE_DIMENSIONS = {"faithfulness", "groundedness"}


def resolve_dimensions(dimensions: str | Sequence[str] | None, scale: str) -> list[str]:
    """Canonical dimension names for ``scale`` (default: every dimension of the scale).

    Raises:
        ValueError: unknown scale, or a dimension that is not on this scale.
    """
    if scale not in ("reteco", "ikat"):
        raise ValueError(f"--scale must be 'reteco' or 'ikat', not {scale!r}")
    if dimensions is None or dimensions == "" or dimensions == []:
        return list(FAMILIES[scale])
    if isinstance(dimensions, str):
        dimensions = [d for d in dimensions.split(",") if d.strip()]
    out: list[str] = []
    for d in dimensions:
        dim = canonical(d)
        fam = family_of(dim)
        if fam != scale:
            raise ValueError(f"dimension {dim!r} belongs to the {fam} scale, not {scale} "
                             f"({scale}: {', '.join(FAMILIES[scale])})")
        if dim not in out:
            out.append(dim)
    return out


def generation_items(
    answers: dict[str, Answer],
    contexts: dict[str, Context],
    dimensions: Sequence[str],
    *,
    targets: Sequence[str] | None = None,
    prompts: dict[str, Prompt] | None = None,
    prompts_dir: str | Path | None = None,
    repeats: int = 1,
) -> list[JudgeItem]:
    """One `JudgeItem` per (target turn, dimension) — ``repeats`` of them (``repeat`` 0 ..
    K-1) for repeated judgments — turn-major in target order."""
    if repeats < 1:
        raise ValueError("--repeats must be >= 1")
    prompts = prompts or {d: load_prompt(d, directory=prompts_dir) for d in dimensions}
    turn_ids = list(targets) if targets is not None else list(contexts)
    items: list[JudgeItem] = []
    for tid in turn_ids:
        ctx = contexts.get(tid)
        ans = answers.get(tid)
        for dim in dimensions:
            prompt = prompts[dim]
            meta = {"turn_id": tid, "dimension": dim}
            reason = None
            if ctx is None:
                reason = "no context for this turn (not in the context file)"
            elif ans is None:
                reason = "missing answer for this target turn"
            variables: dict[str, str] = {}
            if reason is None:
                assert ctx is not None and ans is not None
                passages = ans.passages if ans.passages is not None else ctx.passages
                if dim in PASSAGE_DIMENSIONS:
                    if ans.missing_passages:
                        reason = ("text of provenance passage(s) not supplied: "
                                  + ", ".join(ans.missing_passages[:5]) + " (give --passages)")
                    elif not passages:
                        reason = f"no passages supplied: {dim} cannot be judged"
                variables = {
                    "question": ctx.question,
                    "history": render_history(ctx.history),
                    "passages": render_passages(passages),
                    "answer": ans.answer,
                }
            inputs = {k: variables[k] for k in sorted(prompt.placeholders)} if reason is None else {}
            for r in range(repeats):
                items.append(JudgeItem(prompt, inputs, {**meta, "repeat": r}, invalid=reason, repeat=r))
    return items


def untargeted_answers(answers: dict[str, Answer], contexts: dict[str, Context], targets: Sequence[str] | None,
                       path: str | os.PathLike) -> list[Problem]:
    """A problem (kind ``unknown_query``, at its line of ``path``) for every answer whose turn is
    not a target turn: ``targets`` when given, else the turns of the context file. Such answers
    are not judged."""
    wanted = set(targets) if targets is not None else set(contexts)
    return [Problem("answer for a turn that is not a target turn; not judged", line=ans.line, path=os.fspath(path),
                    query_id=tid, kind="unknown_query")
            for tid, ans in answers.items() if tid not in wanted]


def judgment_rows(outcomes: Sequence[Outcome], *, with_inputs: bool = True) -> list[dict[str, Any]]:
    """Output rows: ``turn_id, dimension, score, normalized, model, prompt_sha256, error`` and the
    model's ``rationale``, then the audit fields ``repeat`` (0 .. K-1), ``error_kind`` (why a
    judgment is invalid: ``input``, ``response``, ``transport``, ``request``, ``limit``, ``error``; null when
    valid), ``attempts``, ``retry_causes``, ``prompt_tokens``, ``completion_tokens``,
    ``response_model`` (the model name the endpoint returned), ``served_model`` (the model its
    ``GET /models`` listed, see `identify`) and, on the first repeat, the
    ``inputs`` the judge saw (for rating sheets and audits)."""
    rows = []
    for o in outcomes:
        v = o.verdict
        row = judgment_row(
            turn_id=o.item.meta["turn_id"], dimension=o.item.meta["dimension"], score=v.score,
            normalized=o.normalized, model=o.model, prompt_sha256=o.item.prompt.sha256, error=v.error,
            rationale=v.rationale, repeat=o.item.repeat, error_kind=None if v.valid else v.kind,
            attempts=v.attempts, retry_causes=list(v.causes), prompt_tokens=v.prompt_tokens,
            completion_tokens=v.completion_tokens, response_model=v.response_model, served_model=v.served_model,
            inputs=o.item.inputs if with_inputs and o.item.repeat == 0 else None)
        rows.append(row)
    return rows


def summary_frame(rows: Sequence[dict[str, Any]], dimensions: Sequence[str] | None = None,
                  aggregate: str = "mean") -> pd.DataFrame:
    """Per dimension: mean normalised score over items with a valid judgment, n valid, n invalid.

    With repeated judgments the repeats of an item are first combined with ``aggregate`` (see
    `collapse_repeats`); an item is invalid only when every
    repeat is.
    """

    frame = pd.DataFrame(list(rows), columns=["turn_id", "dimension", "normalized", "error", "repeat"])
    order = list(dimensions) if dimensions is not None else list(dict.fromkeys(frame["dimension"]))
    valid = frame["error"].isna() & frame["normalized"].notna()
    frame = frame.assign(valid=valid, value=frame["normalized"].where(valid).astype("float64"))
    frame = collapse_repeats(frame, aggregate)
    grouped = frame.groupby("dimension", sort=False)
    out = pd.DataFrame({
        "mean": grouped["value"].mean(),
        "n_valid": grouped["valid"].sum(),
        "n_invalid": grouped.size() - grouped["valid"].sum(),
    }).reindex(order)
    out["n_valid"] = out["n_valid"].fillna(0).astype(int)
    out["n_invalid"] = out["n_invalid"].fillna(0).astype(int)
    return out.rename_axis("dimension").reset_index()


def write_jsonl(path: str | Path, rows: Sequence[dict[str, Any]]) -> None:
    """Write rows as UTF-8 JSONL atomically (temporary file + rename)."""
    atomic_write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
