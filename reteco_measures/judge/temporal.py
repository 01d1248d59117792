"""TEMPO temporal labels produced by the judge and frozen to a labels JSONL file.

For every (query, document) pair of the pool — the top ``depth`` documents of one or more runs
(trec_eval tie order), or an explicit list of pairs — the judge gives

* a temporal relevance verdict (prompt ``temporal_relevance``, 0/1), and
* for each of the query's ``required_periods``, whether the document covers it (prompt
  ``period_coverage``, 0/1; one focused question per period).

Each labels line is ``{"query_id", "doc_id", "temporal": 0|1|null, "periods": [covered periods],
"model", "prompt_sha256": {dimension: sha256}, "error": null|why}``, which
`reteco_measures.side.load_labels` reads (Track 1's TP/TR/TC/nDCG|FC measures).

An invalid verdict is written as ``"temporal": null`` with the reason in ``error``; the measures
then treat it like a document missing from the labels (verdict 0, no period), as the temporal measures
do for missing documents, and the summary counts it. A period whose coverage judgment is invalid is not
listed as covered and is named in ``error``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..kernels.ranking import rank_run, top_k
from .prompts import Prompt, load_prompt
from .runner import JudgeItem, Outcome

__all__ = ["pool_pairs", "temporal_items", "label_rows", "temporal_summary", "judgment_rows"]


def pool_pairs(runs: Iterable[pd.DataFrame], depth: int = 10, tie_break: str = "trec_eval") -> list[tuple[str, str]]:
    """(query_id, doc_id) pairs ranked within the top ``depth`` of any run, in first-seen order
    (run by run, query by query, rank by rank)."""

    if depth < 1:
        raise ValueError("depth must be >= 1")
    seen: dict[tuple[str, str], None] = {}
    for run in runs:
        top = top_k(rank_run(run, tie_break), depth)
        for pair in zip(top["query_id"].astype(str).tolist(), top["doc_id"].astype(str).tolist(), strict=True):
            seen.setdefault(pair, None)
    return list(seen)


def _render_periods(periods: Sequence[str]) -> str:
    return "\n".join(f"- {p}" for p in periods) if periods else "(none given)"


def temporal_items(
    pairs: Sequence[tuple[str, str]],
    topics: dict[str, dict[str, Any]],
    documents: dict[str, str],
    *,
    prompts_dir: str | Path | None = None,
    prompts: dict[str, Prompt] | None = None,
) -> list[JudgeItem]:
    """The verdict item and the per-period coverage items of every pair."""
    prompts = prompts or {d: load_prompt(d, directory=prompts_dir) for d in ("temporal_relevance", "period_coverage")}
    verdict_p, cover_p = prompts["temporal_relevance"], prompts["period_coverage"]
    items: list[JudgeItem] = []
    for qid, did in pairs:
        topic = topics.get(qid)
        text = documents.get(did)
        reason = None
        if topic is None:
            reason = "query not in the topics file"
        elif text is None:
            reason = "document text not found in the documents file"
        periods = topic["required_periods"] if topic else []
        base = {"query_id": qid, "doc_id": did}
        if reason is not None:
            items.append(JudgeItem(verdict_p, {}, {**base, "dimension": "temporal_relevance"}, invalid=reason))
            continue
        assert topic is not None and text is not None
        items.append(JudgeItem(
            verdict_p,
            {"question": topic["query"], "periods": _render_periods(periods), "document": text},
            {**base, "dimension": "temporal_relevance"},
        ))
        for period in periods:
            items.append(JudgeItem(
                cover_p,
                {"question": topic["query"], "period": period, "document": text},
                {**base, "dimension": "period_coverage", "period": period},
            ))
    return items


def label_rows(outcomes: Sequence[Outcome], topics: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One labels row per pair, in pool order."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    errors: dict[tuple[str, str], list[str]] = {}
    for o in outcomes:
        meta = o.item.meta
        key = (meta["query_id"], meta["doc_id"])
        row = rows.setdefault(key, {
            "query_id": key[0], "doc_id": key[1], "temporal": None, "periods": [], "model": o.model,
            "prompt_sha256": {}, "error": None,
        })
        v = o.verdict
        row["prompt_sha256"][meta["dimension"]] = o.item.prompt.sha256
        if meta["dimension"] == "temporal_relevance":
            row["temporal"] = v.score
            if not v.valid:
                errors.setdefault(key, []).append(f"verdict: {v.error}")
        else:
            if v.valid and v.score == 1:
                row["periods"].append(meta["period"])
            elif not v.valid:
                errors.setdefault(key, []).append(f"period {meta['period']!r}: {v.error}")
    for key, row in rows.items():
        if key in errors:
            row["error"] = "; ".join(errors[key])
        # keep the topic's order of periods
        order = topics.get(key[0], {}).get("required_periods", [])
        row["periods"] = [p for p in order if p in set(row["periods"])]
    return list(rows.values())


def temporal_summary(rows: Sequence[dict[str, Any]], outcomes: Sequence[Outcome]) -> pd.DataFrame:
    """Per judged dimension: mean score over valid judgments, n valid, n invalid."""
    frame = pd.DataFrame({
        "dimension": [o.item.meta["dimension"] for o in outcomes],
        "score": [o.verdict.score for o in outcomes],
        "valid": [o.verdict.valid for o in outcomes],
    })
    frame["value"] = frame["score"].where(frame["valid"]).astype("float64")
    g = frame.groupby("dimension", sort=False)
    out = pd.DataFrame({"mean": g["value"].mean(), "n_valid": g["valid"].sum().astype(int),
                        "n_invalid": (g.size() - g["valid"].sum()).astype(int)})
    out = out.rename_axis("dimension").reset_index()
    pairs = pd.DataFrame({"error": [r["error"] for r in rows]})
    extra = pd.DataFrame([{"dimension": "pairs (labels rows)", "mean": float("nan"),
                           "n_valid": int(pairs["error"].isna().sum()), "n_invalid": int(pairs["error"].notna().sum())}])
    return pd.concat([out, extra], ignore_index=True)


def judgment_rows(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Every single temporal judgment as a row (``judge temporal --judgments-out``): the item's
    ``query_id``, ``doc_id``, ``dimension`` (and ``period``), then ``score``, ``model``,
    ``prompt_sha256``, ``error``, ``rationale`` and the audit fields of `judgment_row`
    (``error_kind``, ``attempts``, ``retry_causes``, tokens, ``response_model``,
    ``served_model``), and the ``inputs`` the judge saw."""
    return [
        {**o.item.meta, "score": o.verdict.score, "model": o.model, "prompt_sha256": o.item.prompt.sha256,
         "error": o.verdict.error, "rationale": o.verdict.rationale,
         "error_kind": None if o.verdict.valid else o.verdict.kind, "attempts": o.verdict.attempts,
         "retry_causes": list(o.verdict.causes), "prompt_tokens": o.verdict.prompt_tokens,
         "completion_tokens": o.verdict.completion_tokens, "response_model": o.verdict.response_model,
         "served_model": o.verdict.served_model, **({"inputs": o.item.inputs} if o.item.inputs else {})}
        for o in outcomes
    ]
