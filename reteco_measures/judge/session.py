"""One judging session: items in, outcomes and the run's record out.

`JudgeSession` is what ``reteco-measures judge generation|ikat|temporal|meta-eval`` run, usable
from Python without the command line:

* with ``batch`` set, the items go through the endpoint's Batch API first
  (`reteco_measures.judge.batch.run_batch`); an endpoint without it falls back to one request per
  item (`reteco_measures.judge.runner.run_items`), which is also the default;
* finished judgments are cached, so the same session run again resumes where it stopped;
* a request or token limit (`Budget`) stops the run cleanly, batches still running end it as
  ``pending``, a refused configuration or an unreachable endpoint as ``fatal``, Ctrl-C as
  ``interrupted``: `RunResult.status` says which, `RunResult.exit_code` is the command line's
  exit code for it, and `RunResult.messages` what happened, in words;
* nothing is printed: progress reaches the caller through ``on_progress`` and ``on_note``.

The ``OUT.run.json`` record (the settings and counts of the run that wrote ``OUT``) is written
by `write_run_record` and read back by `read_run_records` (the disclosure report's source for
decoding settings, retry procedure, prices and throughput).
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from .batch import BatchPending, BatchUnsupported, run_batch
from .cache import JudgmentCache, atomic_write_text
from .client import JudgeClient, JudgeFatalError
from .runner import JudgeItem, Outcome, ProgressCallback, RunStats, run_items

__all__ = ["BatchOptions", "JudgeSession", "RunResult", "EXIT_OK", "EXIT_INVALID", "EXIT_FATAL", "EXIT_LIMIT",
           "EXIT_INTERRUPTED", "run_record", "write_run_record", "read_run_records"]

#: exit codes of a session (the command line's): done; nothing valid (or ``strict`` and some
#: invalid); the endpoint refused the configuration or cannot be reached; a request/token limit
#: reached or batches still running (nothing written: run again to resume); interrupted
EXIT_OK, EXIT_INVALID, EXIT_FATAL, EXIT_LIMIT, EXIT_INTERRUPTED = 0, 1, 2, 4, 130


@dataclass(frozen=True)
class BatchOptions:
    """How to use the Batch API (see `run_batch`): seconds to wait for running batches
    (None: until they finish; 0: submit or collect and return), seconds between status checks,
    requests per batch file, and the batches' ``completion_window``."""

    wait: float | None = None
    poll_interval: float = 30.0
    size: int = 50_000
    window: str = "24h"

    def __post_init__(self) -> None:
        if self.size < 1 or self.poll_interval < 0 or (self.wait is not None and self.wait < 0):
            raise ValueError("--batch-size must be >= 1, --batch-poll and --batch-wait >= 0")


@dataclass
class RunResult:
    """What a session produced.

    Attributes:
        status: ``done``, ``limit`` (a request/token limit stopped it), ``pending`` (batches
            still running), ``fatal`` (configuration refused or endpoint unreachable) or
            ``interrupted``.
        outcomes: one `Outcome` per item, in order (None unless ``done``).
        stats: the run's counts.
        settings: the client's settings (`JudgeClient.settings`), with ``batch`` when the Batch
            API was used.
        messages: what happened, in words (for the caller to show).
    """

    status: str
    outcomes: list[Outcome] | None
    stats: RunStats
    settings: dict[str, Any] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """The exit code of the status (``done``: 0, use `final_code` for the judgments)."""
        return {"done": EXIT_OK, "limit": EXIT_LIMIT, "pending": EXIT_LIMIT, "fatal": EXIT_FATAL,
                "interrupted": EXIT_INTERRUPTED}[self.status]

    def final_code(self, strict: bool = False) -> tuple[int, str | None]:
        """(exit code, message) of a finished run: 1 when no judgment could be made, or with
        ``strict`` when any is invalid; else 0."""
        s = self.stats
        if s.total and s.valid == 0:
            return EXIT_INVALID, (f"no judgment could be made ({s.invalid} of {s.total} invalid; see the 'error' "
                                  "field of the output)")
        return (EXIT_INVALID if strict and s.invalid else EXIT_OK), None


class JudgeSession:
    """Judge items with a client and a cache, batch-then-fallback, stopping cleanly at limits.

    Args:
        client: the `JudgeClient` (its `Budget`, if any, holds the run's limits).
        cache: where finished judgments are kept (resume); None: no cache.
        concurrency: requests in flight.
        batch: use the Batch API with these options (None: one request per item).
        refresh_invalid: re-ask judgments whose cached reply was invalid.
        on_progress: called with (done, total, stats) as judgments finish.
        on_note: called with progress notes of the Batch API (submitted, still running ...).
    """

    def __init__(self, client: JudgeClient, cache: JudgmentCache | None = None, *, concurrency: int = 4,
                 batch: BatchOptions | None = None, refresh_invalid: bool = False,
                 on_progress: ProgressCallback | None = None,
                 on_note: Callable[[str], None] | None = None) -> None:
        if concurrency < 1:
            raise ValueError("--concurrency must be >= 1")
        self.client = client
        self.cache = cache if cache is not None else JudgmentCache(None)
        self.concurrency = concurrency
        self.batch = batch
        self.refresh_invalid = refresh_invalid
        self.on_progress = on_progress
        self.on_note = on_note

    def run(self, items: Sequence[JudgeItem]) -> RunResult:
        """Judge ``items``; never raises for the endpoint's faults (see `RunResult.status`)."""
        client, cache = self.client, self.cache
        result = RunResult("done", None, RunStats(), client.settings())
        try:
            with client:
                outcomes = self._batch(items, result) if self.batch is not None else None
                if result.status == "pending":
                    return result
                if outcomes is None:
                    outcomes = run_items(items, client, cache, concurrency=self.concurrency,
                                         refresh_invalid=self.refresh_invalid, stats=result.stats,
                                         on_progress=self.on_progress)
        except JudgeFatalError as exc:
            result.status = "fatal"
            result.messages.append(f"judge endpoint error: {exc}")
            return result
        except KeyboardInterrupt:
            result.status = "interrupted"
            result.messages.append(f"interrupted; finished judgments are cached in {cache.directory}: run the same "
                                   "command again to resume")
            return result
        budget = client.budget
        if budget is not None and budget.exhausted is not None:
            s = result.stats
            where = f"; cache {cache.directory}" if cache.directory is not None else ""
            result.status = "limit"
            result.messages.append(f"stopped: {budget.exhausted}; {s.total - s.limited} of {s.total} judgments are "
                                   f"finished and cached{where}; nothing was written: run the same command again "
                                   "to continue")
            return result
        result.outcomes = outcomes
        return result

    def _batch(self, items: Sequence[JudgeItem], result: RunResult) -> list[Outcome] | None:
        """The Batch API's outcomes; None when the endpoint has none (fall back to requests)."""
        opts = self.batch
        assert opts is not None
        try:
            outcomes = run_batch(items, self.client, self.cache, wait=opts.wait, poll_interval=opts.poll_interval,
                                 completion_window=opts.window, max_requests_per_batch=opts.size,
                                 refresh_invalid=self.refresh_invalid, stats=result.stats, log=self.on_note)
        except BatchUnsupported as exc:
            result.messages.append(f"{exc}; judging with one request per item instead")
            result.stats = RunStats()
            return None
        except BatchPending as exc:
            result.status = "pending"
            result.messages.append(f"{exc}; finished judgments are cached in {self.cache.directory}; nothing was "
                                   "written")
            return None
        result.settings["batch"] = {"completion_window": opts.window, "batch_size": opts.size}
        return outcomes


# ------------------------------------------------------------------------------------------------
# the run record: OUT.run.json


def run_record(result: RunResult, outcomes: Sequence[Outcome], *, command: str | None = None,
               concurrency: int = 4, repeats: int = 1, aggregate: str = "mean", price_in: float | None = None,
               price_out: float | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The record of a finished session: package version, time, command, the client's settings,
    concurrency, repeats and how they are combined, prices, the prompts used (dimension, family,
    version, sha256, source, scale) and the run's counts (``last_run``); ``extra`` is added at the
    top level."""
    prompts: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        p = o.item.prompt
        prompts.setdefault(p.sha256, {"dimension": p.dimension, "family": p.family, "version": p.version,
                                      "sha256": p.sha256, "source": p.source, "scale": f"{p.low}-{p.high}"})
    s = result.stats
    return {
        "reteco_measures_version": __version__,
        "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "settings": result.settings,
        "concurrency": concurrency,
        "repeats": repeats,
        "aggregate": aggregate,
        "price_in": price_in,
        "price_out": price_out,
        "prompts": list(prompts.values()),
        "last_run": {"total": s.total, "cached": s.cached, "asked": s.asked, "not_sent": s.not_sent,
                     "invalid": s.invalid, "requests": s.requests, "prompt_tokens": s.prompt_tokens,
                     "completion_tokens": s.completion_tokens, "retry_causes": dict(sorted(s.causes.items())),
                     "attempts_by_cause": s.attempts_by_cause, "throughput": s.throughput},
        **(extra or {}),
    }


def write_run_record(out: str | os.PathLike, record: dict[str, Any]) -> Path:
    """Write ``record`` (`run_record`) as ``<out>.run.json`` beside the file ``out`` the run wrote,
    atomically; returns its path."""
    path = Path(f"{os.fspath(out)}.run.json")
    atomic_write_text(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return path


def read_run_records(paths: Sequence[str | os.PathLike]) -> list[dict[str, Any]]:
    """The run records (``<path>.run.json``) found beside judgment files, in order; a missing or
    unreadable one is skipped."""
    out = []
    for p in paths:
        rec = Path(f"{os.fspath(p)}.run.json")
        if rec.is_file():
            try:
                data = json.loads(rec.read_text(encoding="utf-8"))
            except (ValueError, OSError, RecursionError):
                continue
            if isinstance(data, dict):
                out.append(data)
    return out
