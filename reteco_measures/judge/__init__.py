"""A reproducible LLM-judge harness for generation and temporal judgments (the RETECO evaluation plan's
generation dimensions, the iKAT 2023 response criteria, TEMPO's temporal labels).

* `.prompts` — versioned prompt files, one per dimension, identified by sha256;
* `.client` — an OpenAI-compatible chat-completions client (httpx, imported lazily) with
  retries, backoff, ``Retry-After`` and strict reply parsing;
* `.cache` / `.runner` — a disk cache keyed by (prompt hash, model, input), bounded
  concurrency, resumable runs;
* `.generation` / `.temporal` — RETECO / iKAT generation judgments and TEMPO temporal
  labels;
* `.aggregate` — per-dimension macro scores with invalid / missing counts;
* `.golden` — golden-case meta-evaluation;
* `.agreement` — agreement with human raters (weighted kappa, Krippendorff's alpha, rank
  correlations, bootstrap intervals) and self-consistency of repeated judgments;
* `.panel` — judge panels: agreement matrix, errors against humans and their correlation,
  effective committee size, calibrated panel means;
* `.repeats` — repeated stochastic judge runs: replicate-level intervals, flip rates, pass^k, a
  gate over repeats;
* `.calibrate` — judge means calibrated by a human spot-check (prediction-powered inference);
* `.sampling` — reproducible stratified rating sheets;
* `.ledger` / `.report` — token and cost totals; the disclosure for a task report;
* `.batch` — large jobs through the OpenAI-compatible Batch API.

Importing this package does not import httpx or tqdm.
"""

from __future__ import annotations

from .aggregate import (
    AGGREGATES,
    SCALES,
    aggregate_judgments,
    collapse_repeats,
    normalize_scores,
    read_judgments,
)
from .agreement import agreement, confusion_matrices, fleiss_kappa, read_ratings, self_consistency
from .cache import JudgmentCache, cache_key
from .calibrate import calibrate
from .client import (
    STRUCTURED_MODES,
    Budget,
    JudgeClient,
    JudgeFatalError,
    JudgeQueueingWarning,
    ReplyError,
    Verdict,
    judgment_schema,
    parse_reply,
)
from .generation import generation_items, judgment_rows, resolve_dimensions, summary_frame
from .golden import GOLDEN_CASES, GoldenCase, golden_items, meta_eval_frames
from .ledger import token_totals
from .panel import Panel, panel
from .prompts import FAMILIES, Prompt, available_prompts, load_prompt, parse_prompt
from .repeats import Repeats, gate_repeats, repeats
from .report import build_report, report_json, report_markdown
from .runner import JudgeItem, Outcome, RunStats, run_items
from .sampling import rating_sheet, sample_items
from .temporal import label_rows, pool_pairs, temporal_items

__all__ = [
    "fleiss_kappa",
    "panel",
    "Panel",
    "repeats",
    "Repeats",
    "gate_repeats",
    "FAMILIES",
    "SCALES",
    "Prompt",
    "load_prompt",
    "parse_prompt",
    "available_prompts",
    "JudgeClient",
    "JudgeFatalError",
    "JudgeQueueingWarning",
    "STRUCTURED_MODES",
    "judgment_schema",
    "ReplyError",
    "Verdict",
    "parse_reply",
    "JudgmentCache",
    "cache_key",
    "JudgeItem",
    "Outcome",
    "RunStats",
    "run_items",
    "resolve_dimensions",
    "generation_items",
    "judgment_rows",
    "summary_frame",
    "pool_pairs",
    "temporal_items",
    "label_rows",
    "read_judgments",
    "aggregate_judgments",
    "normalize_scores",
    "GoldenCase",
    "GOLDEN_CASES",
    "golden_items",
    "meta_eval_frames",
    "AGGREGATES",
    "collapse_repeats",
    "agreement",
    "calibrate",
    "confusion_matrices",
    "read_ratings",
    "self_consistency",
    "Budget",
    "token_totals",
    "build_report",
    "report_json",
    "report_markdown",
    "sample_items",
    "rating_sheet",
]
