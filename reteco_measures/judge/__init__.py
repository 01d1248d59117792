"""A reproducible LLM-judge harness for generation and temporal judgments (the RETECO evaluation plan's
generation dimensions, the iKAT 2023 response criteria, TEMPO's temporal labels).

* `.prompts` — versioned prompt files, one per dimension, identified by sha256;
* `.client` — a thin adapter over the official ``openai`` client (imported lazily) for any
  OpenAI-compatible chat-completions endpoint: counted attempts, backoff, ``Retry-After``;
* `.replies` — strict reply parsing (`Verdict`, `parse_reply`) and redaction; `.budget` — the
  run's request and token limits;
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
* `calibrate` — judge means calibrated by a human spot-check (prediction-powered inference;
  computed in the core, `reteco_measures.stats.calibrate`, from the ratings of
  `reteco_measures.io.ratings`, and re-exported here);
* `.sampling` — reproducible stratified rating sheets;
* `.ledger` / `.report` — token and cost totals; the disclosure for a task report;
* `.batch` — large jobs through the OpenAI-compatible Batch API;
* `.session` — one judging session (`JudgeSession`: batch-then-fallback, limits, resume, exit
  codes) and the ``OUT.run.json`` record it leaves (written and read there).

Importing this package does not import openai or tqdm.
"""

from __future__ import annotations

from ..io.ratings import read_ratings
from ..stats.calibrate import calibrate
from .aggregate import (
    AGGREGATES,
    SCALES,
    aggregate_judgments,
    collapse_repeats,
    normalize_scores,
    read_judgments,
)
from .agreement import agreement, confusion_matrices, fleiss_kappa, self_consistency
from .budget import Budget
from .cache import JudgmentCache, cache_key
from .client import STRUCTURED_MODES, JudgeClient, JudgeFatalError, JudgeQueueingWarning
from .generation import generation_items, judgment_rows, resolve_dimensions, summary_frame
from .golden import GOLDEN_CASES, GoldenCase, golden_items, meta_eval_frames
from .ledger import token_totals
from .panel import Panel, panel
from .prompts import FAMILIES, Prompt, available_prompts, load_prompt, parse_prompt
from .repeats import Repeats, gate_repeats, repeats
from .replies import ReplyError, Verdict, judgment_schema, parse_reply
from .report import build_report, report_json, report_markdown
from .runner import JudgeItem, Outcome, RunStats, run_items
from .sampling import rating_sheet, sample_items
from .session import BatchOptions, JudgeSession, RunResult, read_run_records, run_record, write_run_record
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
    "JudgeSession",
    "BatchOptions",
    "RunResult",
    "run_record",
    "write_run_record",
    "read_run_records",
]
