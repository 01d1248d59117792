"""The cost ledger of judgment files: tokens per model and an optional cost estimate.

Every judgment row records the ``prompt_tokens`` and ``completion_tokens`` the endpoint reported
(summed over the attempts of that judgment), the ``response_model`` it returned and the
``served_model`` its ``GET /models`` listed at the start of the run (servers such as
llama-cpp-python echo the requested name, so only the latter tells which weights answered). A judgment
taken from the cache carries the tokens of the request that produced it, so the totals here are
what producing the file cost; the run's own totals (this invocation's requests) are printed by the
CLI and kept in ``OUT.run.json``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["cost", "token_totals"]


def cost(prompt_tokens: int, completion_tokens: int, price_in: float | None, price_out: float | None) -> float | None:
    """Estimated cost from prices per million tokens (None when no price is given)."""
    if price_in is None and price_out is None:
        return None
    return prompt_tokens / 1e6 * (price_in or 0.0) + completion_tokens / 1e6 * (price_out or 0.0)


def _ints(col: pd.Series) -> pd.Series:
    return pd.to_numeric(col, errors="coerce").fillna(0).clip(lower=0).astype("int64")


def _names(rows: pd.DataFrame, column: str) -> pd.Series | str:
    if column not in rows:
        return "(none)"
    col = rows[column].astype(object)
    return col.where(col.notna(), "(none)").astype(str)


def token_totals(rows: pd.DataFrame, *, price_in: float | None = None,
                 price_out: float | None = None) -> dict[str, Any]:
    """``{"requests", "prompt_tokens", "completion_tokens", "total_tokens", "cost", "by_model": [...]}``
    over judgment rows (``attempts``, ``prompt_tokens``, ``completion_tokens``, ``response_model``,
    ``served_model``); ``by_model`` has one entry per (returned name, model listed by the endpoint's
    ``GET /models``), ``"(none)"`` where a row has no such name."""
    f = pd.DataFrame({
        "attempts": _ints(rows["attempts"]) if "attempts" in rows else 0,
        "prompt_tokens": _ints(rows["prompt_tokens"]) if "prompt_tokens" in rows else 0,
        "completion_tokens": _ints(rows["completion_tokens"]) if "completion_tokens" in rows else 0,
        "response_model": _names(rows, "response_model"),
        "served_model": _names(rows, "served_model"),
    }, index=rows.index)
    pt, ct = int(f["prompt_tokens"].sum()), int(f["completion_tokens"].sum())
    by = (f.groupby(["response_model", "served_model"], sort=True)
          .agg(judgments=("attempts", "size"), requests=("attempts", "sum"), prompt_tokens=("prompt_tokens", "sum"),
               completion_tokens=("completion_tokens", "sum")).reset_index())
    return {
        "requests": int(f["attempts"].sum()), "prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct,
        "price_in_per_million": price_in, "price_out_per_million": price_out,
        "cost": cost(pt, ct, price_in, price_out),
        "by_model": [{k: (v if k in ("response_model", "served_model") else int(v)) for k, v in r.items()}
                     for r in by.to_dict(orient="records")],
    }
