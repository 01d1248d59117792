"""Judging through the OpenAI-compatible Batch API: one upload instead of one request per item.

The calls are the ``openai`` client's ``files`` and ``batches`` resources (``files.create`` with
``purpose=batch``, ``batches.create`` for ``/v1/chat/completions`` and a ``completion_window``,
``batches.retrieve`` until the batch is ``completed``, ``failed``, ``expired`` or ``cancelled``,
``files.content`` of its output and error files). What is ours is the bookkeeping a run needs
around them. Each result line is read like a synchronous reply (`parse_reply`), with the same
cache, outcome kinds and audit fields (tokens, returned model, retry causes).

* **Retries.** An item whose result is a transport failure (HTTP 5xx/429 inside the batch, no
  result line, an expired or failed batch) or an invalid reply is sent again in the next round, up
  to ``1 + retries`` rounds in all; HTTP 400-type results are not retried, as in synchronous mode.
* **Resumable.** Every submitted batch is recorded in ``<cache>/batches/<batch id>.json`` (which
  cache keys it holds, the round, the causes so far) before anything else happens. A rerun of the
  same command first collects the batches recorded there — it never submits an item that is in
  flight — so a run can submit and exit (``wait=0``) and a later run can collect.
* **One submitter at a time.** Reading the records and submitting happens under an ``fcntl`` lock
  on ``<cache>/batches/.lock``, so two runs on one cache do not submit the same items twice.
* **Limits.** ``--max-requests`` caps the items submitted by the run; ``--max-tokens`` is checked
  before each round (tokens are only known when the results arrive).
* **Not offered.** When ``POST /files`` or ``POST /batches`` answers 404, 405 or 501,
  `BatchUnsupported` is raised before anything was submitted (the CLI then judges with
  synchronous requests).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from itertools import takewhile
from pathlib import Path
from typing import Any

from ..errors import BatchPending, BatchUnsupported
from .cache import JudgmentCache, atomic_write_text
from .client import JudgeClient, JudgeFatalError
from .replies import Verdict, clean_text, load_json, read_reply
from .runner import (
    JudgeItem,
    Outcome,
    RunStats,
    cache_entry,
    cacheable,
    cached_verdict,
    key_settings_of,
    split_items,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["run_batch", "BatchUnsupported", "BatchPending", "TERMINAL_STATUSES"]

TERMINAL_STATUSES = {"completed", "failed", "expired", "cancelled"}
#: OpenAI's limits: 50 000 requests and 200 MB per input file; we stay below both
MAX_BATCH_REQUESTS = 50_000
MAX_BATCH_BYTES = 150 * 1024 * 1024


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _call(client: JudgeClient, what: str, call: Callable[..., Any], *args: Any, unsupported: bool = False,
          **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` of the openai client, its errors made ours: a server without the
    Batch API (404, 405, 501 to a POST: ``unsupported``) raises `BatchUnsupported`; 401/403
    `JudgeFatalError`; any other failure (a reply that is not JSON included) RuntimeError."""
    openai = client.openai_module
    try:
        return call(*args, extra_headers=client.request_headers, **kwargs)
    except openai.APIStatusError as exc:
        status, text = exc.status_code, clean_text(exc.response.content[:300].decode("utf-8", "replace").strip())
        if unsupported and status in (404, 405, 501):
            raise BatchUnsupported(f"{client.display_url} does not offer the Batch API ({what} answered "
                                   f"HTTP {status})") from None
        if status in (401, 403):
            raise JudgeFatalError(client.redact(f"{client.display_url}: {what} answered HTTP {status}: {text} "
                                                "(check OPENAI_API_KEY)")) from None
        raise RuntimeError(client.redact(f"{what} answered HTTP {status}: {text}")) from None
    except (openai.APIError, ValueError, RecursionError) as exc:
        cause = exc.__cause__ or exc
        raise RuntimeError(client.redact(f"{what} failed: {type(cause).__name__}: {cause}"[:300])) from None


def _id(what: str, obj: Any) -> str:
    if not isinstance(getattr(obj, "id", None), str):
        raise RuntimeError(f"{what}: no id in the reply")
    return obj.id


def _result_verdict(client: JudgeClient, line: dict[str, Any] | None, info: dict[str, Any],
                    status: Any) -> tuple[Verdict, bool]:
    """(verdict of one round's attempt, retryable) from a batch output or error line (None: the
    batch has no result for the request)."""
    response = line.get("response") if line is not None and isinstance(line.get("response"), dict) else {}
    code = response.get("status_code")
    if line is None:
        v = Verdict(None, None, f"no result for this request (batch {status})", "transport", 1,
                    causes=(f"batch_{status}",))
    elif code == 200:
        v, _ = read_reply(response.get("body"), int(info["low"]), int(info["high"]), info.get("placeholders") or ())
        if client.budget is not None:
            client.budget.add(v.prompt_tokens, v.completion_tokens)
    elif isinstance(code, int) and not isinstance(code, bool):
        detail = json.dumps(response["body"])[:200] if response.get("body") is not None else ""
        overload = code == 429 or code >= 500
        v = Verdict(None, None, f"HTTP {code} in the batch: {detail}", "transport" if overload else "request", 1,
                    causes=("http_429" if code == 429 else "http_5xx" if overload else f"http_{code}",))
    else:
        error = line.get("error") if isinstance(line.get("error"), dict) else {}
        message = str(error.get("message") or "no response in the batch result")[:200]
        v = Verdict(None, None, f"batch error: {message}", "transport", 1, causes=("batch_error",))
    v = replace(v, error=None if v.error is None else client.redact(v.error),
                raw=None if v.raw is None else client.redact(v.raw))
    return v, v.kind in ("transport", "response")


def run_batch(
    items: Sequence[JudgeItem],
    client: JudgeClient,
    cache: JudgmentCache,
    *,
    wait: float | None = None,
    poll_interval: float = 30.0,
    completion_window: str = "24h",
    max_requests_per_batch: int = MAX_BATCH_REQUESTS,
    refresh_invalid: bool = False,
    stats: RunStats | None = None,
    log: Callable[[str], None] | None = None,
) -> list[Outcome]:
    """Judge ``items`` through the Batch API; one `Outcome` per item, in order.

    Args:
        items, client, cache: as `run_items` (a cache folder
            is required: the batches in flight are recorded there).
        wait: seconds to wait for running batches (None: until they finish; 0: submit or collect
            what is ready, then return).
        poll_interval: seconds between status checks.
        completion_window: the batch's ``completion_window``.
        max_requests_per_batch: requests per input file (at most 50 000).
        refresh_invalid: re-ask items whose cached outcome is an invalid model reply.
        stats: filled with counts.
        log: receives progress notes (None: none are made; nothing is printed here).

    Raises:
        BatchUnsupported: the endpoint has no Batch API (nothing was submitted).
        BatchPending: batches are still running when ``wait`` ran out (rerun to collect).
        JudgeFatalError: the endpoint refused the key.
    """
    if cache.directory is None:
        raise ValueError("--batch needs a cache folder: the submitted batches are recorded there (drop --no-cache)")
    job = _BatchJob(items, client, cache, completion_window, max(1, max_requests_per_batch), refresh_invalid,
                    stats if stats is not None else RunStats(), log)
    deadline = None if wait is None else time.monotonic() + wait
    while True:
        with _folder_lock(job.folder):
            waiting = job.one_pass()
        if not waiting:
            return job.outcomes()
        if deadline is not None and time.monotonic() >= deadline:
            raise BatchPending(f"{len(waiting)} batch(es) still running ({', '.join(waiting[:3])}"
                               f"{' ...' if len(waiting) > 3 else ''}); run the same command again to collect them")
        time.sleep(poll_interval if deadline is None else min(poll_interval, max(0.0, deadline - time.monotonic())))


class _BatchJob:
    """The state of one `run_batch` call: read the records of the batches in flight, collect the
    finished ones, submit what is left, and assemble the outcomes."""

    def __init__(self, items: Sequence[JudgeItem], client: JudgeClient, cache: JudgmentCache, window: str,
                 per_batch: int, refresh_invalid: bool, stats: RunStats, log: Callable[[str], None] | None) -> None:
        assert cache.directory is not None
        self.items, self.client, self.cache, self.window, self.per_batch = items, client, cache, window, per_batch
        self.refresh_invalid, self.stats, self.log, self.model = refresh_invalid, stats, log, client.model
        self.folder, self.rounds = cache.directory / "batches", client.retries + 1
        stats.total = len(items)
        self.results: list[Outcome | None] = [None] * len(items)
        self.pending = split_items(items, cache, self.model, key_settings_of(client), refresh_invalid, stats,
                                   lambda i, v, cached: self.results.__setitem__(i, Outcome(items[i], v, cached,
                                                                                            self.model)))
        self.final: dict[str, Verdict] = {}
        self.from_cache: set[str] = set()
        self.history: dict[str, Verdict] = {}  # attempts so far, for keys still to be asked again

    def records(self) -> dict[str, dict[str, Any]]:
        """The records of the batches in flight (``<cache>/batches/<id>.json``), by batch id."""
        out = {}
        for path in sorted(self.folder.glob("*.json")):
            try:
                rec = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, OSError, RecursionError):
                continue
            if isinstance(rec, dict) and isinstance(rec.get("keys"), dict):
                out[path.stem] = rec
        return out

    def one_pass(self) -> list[str]:
        """Under the folder lock: collect the finished batches holding this run's items, submit
        the items neither done nor in flight (one another run answered meanwhile is taken from the
        cache); returns the batches still running with this run's items."""
        recs = self.records()
        in_flight = {info["key"] for rec in recs.values() for info in rec["keys"].values()}
        for batch_id, rec in recs.items():
            if any(info["key"] in self.pending for info in rec["keys"].values()):
                batch = _call(self.client, f"GET /batches/{batch_id}", self.client.openai_client.batches.retrieve,
                              batch_id)
                if getattr(batch, "status", None) in TERMINAL_STATUSES:
                    self.collect(batch_id, rec, batch)
                    in_flight -= {info["key"] for info in rec["keys"].values()}
        todo = []
        for key in self.pending:
            if key not in self.final and key not in in_flight:
                found = cached_verdict(self.cache.get(key), self.refresh_invalid)
                if found is not None:
                    self.final[key] = found
                    self.from_cache.add(key)
                else:
                    todo.append(key)
        budget = self.client.budget
        if todo and (budget is None or (budget.tokens_left() and budget.exhausted is None)):
            self.submit(todo)
        return [b for b, rec in self.records().items()
                if any(info["key"] in self.pending and info["key"] not in self.final for info in rec["keys"].values())]

    def _results(self, batch: Any) -> dict[str, dict[str, Any]]:
        """The output and error lines of a finished batch, by ``custom_id`` (the first wins)."""
        lines: dict[str, dict[str, Any]] = {}
        for fid in (getattr(batch, "output_file_id", None), getattr(batch, "error_file_id", None)):
            if isinstance(fid, str) and fid:
                content = _call(self.client, f"GET /files/{fid}/content", self.client.openai_client.files.content, fid)
                for raw in content.content.splitlines():
                    try:
                        obj = load_json(raw)
                    except ValueError:
                        continue
                    if isinstance(obj, dict) and isinstance(obj.get("custom_id"), str):
                        lines.setdefault(obj["custom_id"], obj)
        return lines

    def collect(self, batch_id: str, rec: dict[str, Any], batch: Any) -> None:
        """Read a finished batch: cache the judgments that are done (any run's), keep this run's
        retryable ones for the next round, and drop the batch's record."""
        lines = self._results(batch)
        for custom_id, info in rec["keys"].items():
            key = info["key"]
            if key in self.final:
                continue
            prev = Verdict.from_dict(info["history"]) if isinstance(info.get("history"), dict) else None
            attempt, retryable = _result_verdict(self.client, lines.get(custom_id), info, batch.status)
            v = attempt if prev is None else replace(
                attempt, attempts=prev.attempts + 1, prompt_tokens=prev.prompt_tokens + attempt.prompt_tokens,
                completion_tokens=prev.completion_tokens + attempt.completion_tokens,
                response_model=attempt.response_model or prev.response_model, causes=prev.causes + attempt.causes)
            mine = key in self.pending
            if attempt.valid or not retryable or int(info.get("round", 1)) >= self.rounds:
                if not attempt.valid:
                    v = replace(v, error=f"invalid after {v.attempts} attempt(s): {attempt.error}")
                if cacheable(v):
                    inputs = self.items[self.pending[key][0]].inputs if mine else None
                    self.cache.put(key, cache_entry(v, self.model, info.get("prompt_sha256"), info.get("dimension"),
                                                    info.get("repeat", 0), inputs, via="batch"))
                if mine:
                    self.final[key] = v
                    self.stats.count_asked(v)
            elif mine:  # a retryable failure of another command's item is left to that command's next run
                self.history[key] = v
        (self.folder / f"{batch_id}.json").unlink(missing_ok=True)

    def submit(self, keys: list[str]) -> None:
        """Submit ``keys`` (as many as the request budget allows) in batches of at most
        ``per_batch``, each recorded before anything else happens."""
        budget, api = self.client.budget, self.client.openai_client
        if budget is not None:
            keys = list(takewhile(lambda _: budget.reserve(), keys))  # one request reserved per key
        for start in range(0, len(keys), self.per_batch):
            data, index = self._input_file(keys[start:start + self.per_batch])
            file_id = _id("POST /files", _call(self.client, "POST /files", api.files.create, unsupported=True,
                                               file=("judgments.jsonl", data, "application/jsonl"), purpose="batch"))
            batch_id = _id("POST /batches", _call(
                self.client, "POST /batches", api.batches.create, unsupported=True, input_file_id=file_id,
                endpoint="/v1/chat/completions", completion_window=self.window,
                metadata={"tool": "reteco-measures", "model": self.model[:64]}))
            atomic_write_text(self.folder / f"{batch_id}.json", json.dumps(
                {"batch_id": batch_id, "input_file_id": file_id, "model": self.model, "submitted": time.time(),
                 "keys": index}), fsync=True)
            if self.log is not None:
                self.log(f"submitted {batch_id} ({len(index)} request(s))")

    def _input_file(self, chunk: list[str]) -> tuple[bytes, dict[str, dict[str, Any]]]:
        """The JSONL input file of one batch and its record's ``keys`` (custom_id -> what is
        needed to read the result: cache key, round, earlier attempts, scale, prompt)."""
        lines, index, size = [], {}, 0
        for n, key in enumerate(chunk):
            item = self.items[self.pending[key][0]]
            p, custom_id, prev = item.prompt, f"r{n}-{key[:16]}", self.history.get(key)
            line = json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
                               "body": self.client.request_body(p.render(item.inputs), p.low, p.high)},
                              ensure_ascii=False) + "\n"
            size += len(line.encode("utf-8"))
            if size > MAX_BATCH_BYTES:
                raise ValueError("one batch input file would exceed 150 MB: lower --batch-size")
            lines.append(line)
            index[custom_id] = {"key": key, "round": (prev.attempts if prev else 0) + 1,
                                "history": prev.as_dict() if prev else None, "low": p.low, "high": p.high,
                                "placeholders": list(p.reply_placeholders), "prompt_sha256": p.sha256,
                                "dimension": p.dimension, "repeat": item.repeat}
        return "".join(lines).encode("utf-8"), index

    def outcomes(self) -> list[Outcome]:
        """One `Outcome` per item, in order, once no batch holds this run's items: the keys never
        submitted (a limit was reached) end as ``limit``."""
        budget = self.client.budget
        why = budget.exhausted if budget is not None and budget.exhausted else "not submitted"
        for key in self.pending:
            if key not in self.final:
                prev = self.history.get(key)
                self.final[key] = Verdict(None, None, f"not asked: {why}", "limit", prev.attempts if prev else 0)
                self.stats.limited += 1
        for key, idx in self.pending.items():
            for i in idx:
                self.results[i] = Outcome(self.items[i], self.final[key], key in self.from_cache, self.model)
            if key in self.from_cache:
                self.stats.cached += len(idx)
        out = [r for r in self.results if r is not None]
        self.stats.invalid = sum(1 for r in out if not r.verdict.valid)
        return out
