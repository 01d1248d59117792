"""Judging through the OpenAI-compatible Batch API: one upload instead of one request per item.

Where the endpoint offers it (OpenAI and compatible servers), a large judging job is sent as JSONL
files of chat-completion requests: ``POST /files`` (``purpose=batch``), ``POST /batches``
(``endpoint=/v1/chat/completions``, ``completion_window`` 24h), ``GET /batches/{id}`` until the
batch is ``completed`` (or ``failed`` / ``expired`` / ``cancelled``), then
``GET /files/{output_file_id}/content`` and ``.../{error_file_id}/content``. Each result line is
parsed exactly like a synchronous reply (`parse_reply`), with
the same cache, the same outcome kinds and the same audit fields (tokens, returned model, retry
causes).

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
* **Not offered.** When ``POST /files`` answers 404, 405 or 501, `BatchUnsupported` is
  raised before anything was submitted (the CLI then judges with synchronous requests).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import BatchPending, BatchUnsupported
from .cache import JudgmentCache, atomic_write_text
from .client import JudgeClient, JudgeFatalError
from .replies import ReplyError, Verdict, clean_text, load_json, parse_reply
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
def _folder_lock(folder: Path):
    if fcntl is None:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class _Api:
    """The Batch API calls through the client's openai connection (its key, base URL and
    timeout): ``files.create``, ``batches.create``, ``batches.retrieve``, ``files.content``. The
    replies are read raw and parsed here, so a body that is not JSON is a clear error."""

    def __init__(self, client: JudgeClient) -> None:
        self.client = client
        self.openai = client.openai_module
        self.api = client.openai_client
        self.headers = client.request_headers

    def _call(self, what: str, call: Callable[..., Any], *args: Any, unsupported: bool = False,
              **kwargs: Any) -> bytes:
        """The raw reply body of ``call`` (an openai ``with_raw_response`` method). A server
        without the Batch API (404, 405, 501 to a POST: ``unsupported``) raises
        `BatchUnsupported`; 401/403 raise `JudgeFatalError`; other errors RuntimeError."""
        openai = self.openai
        try:
            return call(*args, extra_headers=self.headers, **kwargs).http_response.content
        except openai.APIStatusError as exc:
            status = exc.status_code
            text = clean_text(exc.response.content[:300].decode("utf-8", "replace").strip())
            if unsupported and status in (404, 405, 501):
                raise BatchUnsupported(f"{self.client.display_url} does not offer the Batch API ({what} answered "
                                       f"HTTP {status})") from None
            if status in (401, 403):
                raise JudgeFatalError(self.client.redact(f"{self.client.display_url}: {what} answered HTTP {status}: "
                                                         f"{text} (check OPENAI_API_KEY)")) from None
            raise RuntimeError(self.client.redact(f"{what} answered HTTP {status}: {text}")) from None
        except openai.APIError as exc:
            cause = exc.__cause__ or exc
            raise RuntimeError(self.client.redact(f"{what} failed: {type(cause).__name__}: {cause}")) from None

    def _object(self, what: str, data: bytes, id_of: str | None = None) -> dict[str, Any]:
        try:
            obj = load_json(data)
        except ValueError as exc:
            raise RuntimeError(f"{what}: the reply is not JSON ({exc})") from None
        if not isinstance(obj, dict) or (id_of is not None and not isinstance(obj.get("id"), str)):
            raise RuntimeError(f"{what}: no {id_of} id in the reply" if id_of else f"{what}: not a batch object")
        return obj

    def upload(self, data: bytes) -> str:
        raw = self._call("POST /files", self.api.files.with_raw_response.create, unsupported=True,
                         file=("judgments.jsonl", data, "application/jsonl"), purpose="batch")
        return self._object("POST /files", raw, "file")["id"]

    def create(self, file_id: str, window: str, metadata: dict[str, str]) -> dict[str, Any]:
        raw = self._call("POST /batches", self.api.batches.with_raw_response.create, unsupported=True,
                         input_file_id=file_id, endpoint="/v1/chat/completions", completion_window=window,
                         metadata=metadata)
        return self._object("POST /batches", raw, "batch")

    def get(self, batch_id: str) -> dict[str, Any]:
        what = f"GET /batches/{batch_id}"
        return self._object(what, self._call(what, self.api.batches.with_raw_response.retrieve, batch_id))

    def content(self, file_id: str) -> bytes:
        return self._call(f"GET /files/{file_id}/content", self.api.files.with_raw_response.content, file_id)


def _result_verdict(client: JudgeClient, line: dict[str, Any], low: int, high: int,
                    placeholders: tuple[str, ...] | list[str] = ()) -> tuple[Verdict, bool]:
    """(verdict of one attempt, retryable) from a batch output or error line."""
    usage, model = [0, 0], [None]
    response = line.get("response") if isinstance(line.get("response"), dict) else None
    error = line.get("error") if isinstance(line.get("error"), dict) else None
    status = response.get("status_code") if response else None

    def v(score, rationale, err, kind, cause, raw=None):
        return Verdict(score, rationale, None if err is None else client.redact(err), kind, 1,
                       None if raw is None else client.redact(raw[:2000]), usage[0], usage[1], model[0],
                       () if cause is None else (cause,))

    if response is not None and status == 200:
        content, why = client.completion_object(response.get("body"), usage, model)
        if why is not None:
            return v(None, None, why, "transport", "not_a_completion"), True
        raw = content if isinstance(content, str) else None
        try:
            score, rationale = parse_reply(content, low, high, placeholders)
        except ReplyError as exc:
            return v(None, None, str(exc), "response", exc.cause, raw), True
        return v(score, rationale, None, "ok", None, raw), False
    if isinstance(status, int) and not isinstance(status, bool):
        body = response.get("body") if response else None
        detail = json.dumps(body)[:200] if body is not None else ""
        if status == 429 or status >= 500:
            return v(None, None, f"HTTP {status} in the batch: {detail}", "transport",
                     "http_429" if status == 429 else "http_5xx"), True
        return v(None, None, f"HTTP {status} in the batch: {detail}", "request", f"http_{status}"), False
    message = (error or {}).get("message") or "no response in the batch result"
    return v(None, None, f"batch error: {str(message)[:200]}", "transport", "batch_error"), True


def _merge(previous: Verdict | None, new: Verdict) -> Verdict:
    """Accumulate attempts, tokens and causes over rounds."""
    if previous is None:
        return new
    return Verdict(new.score, new.rationale, new.error, new.kind, previous.attempts + new.attempts, new.raw,
                   previous.prompt_tokens + new.prompt_tokens, previous.completion_tokens + new.completion_tokens,
                   new.response_model or previous.response_model, previous.causes + new.causes)


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
    stats = stats if stats is not None else RunStats()
    job = _BatchJob(items, client, cache, completion_window=completion_window,
                    max_requests_per_batch=max_requests_per_batch, refresh_invalid=refresh_invalid, stats=stats,
                    log=log)
    job.wait_for_batches(wait, poll_interval)
    return job.outcomes()


class _BatchJob:
    """The state of one `run_batch` call and its steps: read the records of the batches in
    flight, collect a finished batch, submit what is left, wait, and assemble the outcomes."""

    def __init__(self, items: Sequence[JudgeItem], client: JudgeClient, cache: JudgmentCache, *,
                 completion_window: str, max_requests_per_batch: int, refresh_invalid: bool, stats: RunStats,
                 log: Callable[[str], None] | None) -> None:
        assert cache.directory is not None
        self.items, self.client, self.cache = items, client, cache
        self.window, self.per_batch = completion_window, max(1, max_requests_per_batch)
        self.refresh_invalid, self.stats, self.log = refresh_invalid, stats, log
        self.model = client.model
        self.api = _Api(client)
        self.folder = cache.directory / "batches"
        self.rounds = client.retries + 1
        stats.total = len(items)
        self.results: list[Outcome | None] = [None] * len(items)
        self.pending = split_items(items, cache, self.model, key_settings_of(client), refresh_invalid, stats,
                                   self._finish_unsent)
        self.final: dict[str, Verdict] = {}
        self.from_cache: set[str] = set()
        self.history: dict[str, Verdict] = {}  # attempts so far, for keys still to be asked again

    def _finish_unsent(self, i: int, verdict: Verdict, cached: bool) -> None:
        self.results[i] = Outcome(self.items[i], verdict, cached, self.model)

    # -- the loop --------------------------------------------------------------------------------
    def wait_for_batches(self, wait: float | None, poll_interval: float) -> None:
        """Collect, submit and wait until no batch holding this run's items is running.

        Raises:
            BatchPending: ``wait`` seconds passed with batches still running.
        """
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            with _folder_lock(self.folder):
                waiting = self._one_pass()
            if not waiting:
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise BatchPending(f"{len(waiting)} batch(es) still running ({', '.join(waiting[:3])}"
                                   f"{' ...' if len(waiting) > 3 else ''}); run the same command again to collect "
                                   "them")
            time.sleep(min(poll_interval, max(0.0, deadline - time.monotonic())) if deadline is not None
                       else poll_interval)

    def _one_pass(self) -> list[str]:
        """Under the folder lock: collect the finished batches, submit the items neither done nor
        in flight; returns the batches still running with this run's items."""
        in_flight = self._collect_finished(self.records())
        todo = self._still_to_ask(in_flight)
        budget = self.client.budget
        if todo and budget is not None and not budget.tokens_left():
            todo = []
        if todo and (budget is None or budget.exhausted is None):
            self.submit(todo)
        return [b for b, rec in self.records().items()
                if any(info["key"] in self.pending and info["key"] not in self.final for info in rec["keys"].values())]

    def _collect_finished(self, recs: dict[str, dict[str, Any]]) -> set[str]:
        """Collect every finished batch holding this run's items; returns the keys still in flight."""
        in_flight = {info["key"] for rec in recs.values() for info in rec["keys"].values()}
        for batch_id, rec in recs.items():
            if not any(info["key"] in self.pending for info in rec["keys"].values()):
                continue
            batch = self.api.get(batch_id)
            if batch.get("status") in TERMINAL_STATUSES:
                self.collect(batch_id, rec, batch)
                in_flight -= {info["key"] for info in rec["keys"].values()}
        return in_flight

    def _still_to_ask(self, in_flight: set[str]) -> list[str]:
        """This run's keys neither final nor in flight; one another run answered meanwhile is
        taken from the cache."""
        todo = []
        for k in self.pending:
            if k in self.final or k in in_flight:
                continue
            found = cached_verdict(self.cache.get(k), self.refresh_invalid)
            if found is not None:
                self._conclude(k, found, False)
            else:
                todo.append(k)
        return todo

    # -- records -----------------------------------------------------------------------------------
    def records(self) -> dict[str, dict[str, Any]]:
        """The records of the batches in flight (``<cache>/batches/<id>.json``), by batch id."""
        out = {}
        if self.folder.is_dir():
            for path in sorted(self.folder.glob("*.json")):
                try:
                    rec = json.loads(path.read_text(encoding="utf-8"))
                except (ValueError, OSError, RecursionError):
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("keys"), dict):
                    out[path.stem] = rec
        return out

    # -- collecting --------------------------------------------------------------------------------
    def _result_lines(self, batch: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The output and error lines of a finished batch, by ``custom_id`` (the first wins)."""
        lines: dict[str, dict[str, Any]] = {}
        for fid in (batch.get("output_file_id"), batch.get("error_file_id")):
            if isinstance(fid, str) and fid:
                for raw in self.api.content(fid).splitlines():
                    try:
                        obj = load_json(raw)
                    except ValueError:
                        continue
                    if isinstance(obj, dict) and isinstance(obj.get("custom_id"), str):
                        lines.setdefault(obj["custom_id"], obj)
        return lines

    def _attempt(self, info: dict[str, Any], line: dict[str, Any] | None, status: Any) -> tuple[Verdict, bool]:
        """(the verdict of this round's attempt, whether it may be retried) for one request."""
        if line is None:
            return Verdict(None, None, f"no result for this request (batch {status})", "transport", 1, None,
                           causes=(f"batch_{status}",)), True
        return _result_verdict(self.client, line, int(info["low"]), int(info["high"]), info.get("placeholders") or ())

    def collect(self, batch_id: str, rec: dict[str, Any], batch: dict[str, Any]) -> None:
        """Read a finished batch: cache the judgments that are done (any run's), keep this run's
        retryable ones for the next round, and drop the batch's record."""
        lines = self._result_lines(batch)
        status = batch.get("status")
        for custom_id, info in rec["keys"].items():
            key = info["key"]
            if key in self.final:
                continue
            prev = Verdict.from_dict(info["history"]) if isinstance(info.get("history"), dict) else None
            attempt, retryable = self._attempt(info, lines.get(custom_id), status)
            merged = _merge(prev, attempt)
            done = attempt.valid or not retryable or int(info.get("round", 1)) >= self.rounds
            if done and not attempt.valid:
                merged = Verdict(None, None, f"invalid after {merged.attempts} attempt(s): {attempt.error}",
                                 merged.kind, merged.attempts, merged.raw, merged.prompt_tokens,
                                 merged.completion_tokens, merged.response_model, merged.causes)
            mine = key in self.pending
            if done:
                self._store(key, merged, info, self.items[self.pending[key][0]].inputs if mine else None)
                if mine:
                    self._conclude(key, merged, True)
            elif mine:
                self.history[key] = merged
            # a retryable failure of another command's item is left to that command's next run
        (self.folder / f"{batch_id}.json").unlink(missing_ok=True)

    def _store(self, key: str, verdict: Verdict, meta: dict[str, Any], inputs: dict[str, str] | None) -> None:
        if cacheable(verdict):
            self.cache.put(key, cache_entry(verdict, self.model, meta.get("prompt_sha256"), meta.get("dimension"),
                                            meta.get("repeat", 0), inputs, via="batch"))

    def _conclude(self, key: str, verdict: Verdict, fresh: bool) -> None:
        self.final[key] = verdict
        if not fresh:
            self.from_cache.add(key)
            return
        self.stats.count_asked(verdict)

    # -- submitting --------------------------------------------------------------------------------
    def submit(self, keys: list[str]) -> None:
        """Submit ``keys`` (as many as the request budget allows) in batches of at most
        ``max_requests_per_batch``, each recorded before anything else happens."""
        budget = self.client.budget
        allowed: list[str] = []
        for key in keys:
            if budget is not None and not budget.reserve():
                break
            allowed.append(key)
        for start in range(0, len(allowed), self.per_batch):
            chunk = allowed[start:start + self.per_batch]
            data, index = self._input_file(chunk)
            file_id = self.api.upload(data)
            batch = self.api.create(file_id, self.window, {"tool": "reteco-measures", "model": self.model[:64]})
            atomic_write_text(self.folder / f"{batch['id']}.json", json.dumps(
                {"batch_id": batch["id"], "input_file_id": file_id, "model": self.model, "submitted": time.time(),
                 "keys": index}), fsync=True)
            if self.log is not None:
                self.log(f"submitted {batch['id']} ({len(chunk)} request(s))")

    def _input_file(self, chunk: list[str]) -> tuple[bytes, dict[str, dict[str, Any]]]:
        """The JSONL input file of one batch and its record's ``keys`` (custom_id -> what is
        needed to read the result: cache key, round, earlier attempts, scale, prompt)."""
        lines, index = [], {}
        size = 0
        for n, key in enumerate(chunk):
            item = self.items[self.pending[key][0]]
            custom_id = f"r{n}-{key[:16]}"
            body = self.client.request_body(item.prompt.render(item.inputs), item.prompt.low, item.prompt.high)
            line = json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
                               "body": body}, ensure_ascii=False) + "\n"
            size += len(line.encode("utf-8"))
            if size > MAX_BATCH_BYTES:
                raise ValueError("one batch input file would exceed 150 MB: lower --batch-size")
            lines.append(line)
            prev = self.history.get(key)
            index[custom_id] = {"key": key, "round": (prev.attempts if prev else 0) + 1,
                                "history": prev.as_dict() if prev else None, "low": item.prompt.low,
                                "high": item.prompt.high, "placeholders": list(item.prompt.reply_placeholders),
                                "prompt_sha256": item.prompt.sha256,
                                "dimension": item.prompt.dimension, "repeat": item.repeat}
        return "".join(lines).encode("utf-8"), index

    # -- the outcomes ------------------------------------------------------------------------------
    def outcomes(self) -> list[Outcome]:
        """One `Outcome` per item, in order, once no batch holds this run's items: the keys never
        submitted (a limit was reached) end as ``limit``."""
        budget = self.client.budget
        for key in self.pending:
            if key in self.final:
                continue
            verdict = self.history.get(key)
            why = budget.exhausted if budget is not None and budget.exhausted else "not submitted"
            self.final[key] = Verdict(None, None, f"not asked: {why}", "limit", verdict.attempts if verdict else 0)
            self.stats.limited += 1
        for key, idx in self.pending.items():
            for i in idx:
                self.results[i] = Outcome(self.items[i], self.final[key], key in self.from_cache, self.model)
            if key in self.from_cache:
                self.stats.cached += len(idx)
        out = [r for r in self.results if r is not None]
        self.stats.invalid = sum(1 for r in out if not r.verdict.valid)
        return out
