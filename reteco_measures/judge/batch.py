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

from .cache import JudgmentCache, atomic_write_text
from .client import JudgeClient, JudgeFatalError, ReplyError, Verdict, _loads, clean_text, parse_reply
from .runner import (
    JudgeItem,
    Outcome,
    RunStats,
    _cache_entry,
    _cacheable,
    _cached_verdict,
    _key_settings,
    _split_items,
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


class BatchUnsupported(RuntimeError):
    """The endpoint does not offer the Batch API (nothing was submitted)."""


class BatchPending(RuntimeError):
    """Batches are still running (their ids are recorded in the cache): run the same command again
    to collect them."""


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
        self.openai = client._openai_module
        self.api = client._client
        self.headers = client._headers

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
            obj = _loads(data)
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
        content, why = client._completion_object(response.get("body"), usage, model)
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
    stats.total = len(items)
    model = client.model
    settings = _key_settings(client)
    api = _Api(client)
    folder = cache.directory / "batches"
    rounds = client.retries + 1
    deadline = None if wait is None else time.monotonic() + wait
    results: list[Outcome | None] = [None] * len(items)

    def finish(i: int, verdict: Verdict, cached: bool) -> None:
        results[i] = Outcome(items[i], verdict, cached, model)

    pending = _split_items(items, cache, model, settings, refresh_invalid, stats, finish)

    final: dict[str, Verdict] = {}
    from_cache: set[str] = set()
    history: dict[str, Verdict] = {}  # attempts so far, for keys still to be asked again

    def store(key: str, verdict: Verdict, meta: dict[str, Any], inputs: dict[str, str] | None) -> None:
        if _cacheable(verdict):
            cache.put(key, _cache_entry(verdict, model, meta.get("prompt_sha256"), meta.get("dimension"),
                                        meta.get("repeat", 0), inputs, via="batch"))

    def conclude(key: str, verdict: Verdict, fresh: bool) -> None:
        final[key] = verdict
        if not fresh:
            from_cache.add(key)
            return
        stats.count_asked(verdict)

    def records() -> dict[str, dict[str, Any]]:
        out = {}
        if folder.is_dir():
            for path in sorted(folder.glob("*.json")):
                try:
                    rec = json.loads(path.read_text(encoding="utf-8"))
                except (ValueError, OSError, RecursionError):
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("keys"), dict):
                    out[path.stem] = rec
        return out

    def collect(batch_id: str, rec: dict[str, Any], batch: dict[str, Any]) -> None:
        lines: dict[str, dict[str, Any]] = {}
        for fid in (batch.get("output_file_id"), batch.get("error_file_id")):
            if isinstance(fid, str) and fid:
                for raw in api.content(fid).splitlines():
                    try:
                        obj = _loads(raw)
                    except ValueError:
                        continue
                    if isinstance(obj, dict) and isinstance(obj.get("custom_id"), str):
                        lines.setdefault(obj["custom_id"], obj)
        status = batch.get("status")
        for custom_id, info in rec["keys"].items():
            key = info["key"]
            if key in final:
                continue
            prev = Verdict.from_dict(info["history"]) if isinstance(info.get("history"), dict) else None
            line = lines.get(custom_id)
            if line is None:
                attempt = Verdict(None, None, f"no result for this request (batch {status})", "transport", 1, None,
                                  causes=(f"batch_{status}",))
                retryable = True
            else:
                attempt, retryable = _result_verdict(client, line, int(info["low"]), int(info["high"]),
                                                     info.get("placeholders") or ())
            merged = _merge(prev, attempt)
            done = attempt.valid or not retryable or int(info.get("round", 1)) >= rounds
            if done and not attempt.valid:
                merged = Verdict(None, None, f"invalid after {merged.attempts} attempt(s): {attempt.error}",
                                 merged.kind, merged.attempts, merged.raw, merged.prompt_tokens,
                                 merged.completion_tokens, merged.response_model, merged.causes)
            mine = key in pending
            if done:
                store(key, merged, info, items[pending[key][0]].inputs if mine else None)
                if mine:
                    conclude(key, merged, True)
            elif mine:
                history[key] = merged
            # a retryable failure of another command's item is left to that command's next run
        (folder / f"{batch_id}.json").unlink(missing_ok=True)

    def submit(keys: list[str]) -> None:
        budget = client.budget
        allowed: list[str] = []
        for key in keys:
            if budget is not None and not budget.reserve():
                break
            allowed.append(key)
        for start in range(0, len(allowed), max(1, max_requests_per_batch)):
            chunk = allowed[start:start + max_requests_per_batch]
            lines, index = [], {}
            size = 0
            for n, key in enumerate(chunk):
                item = items[pending[key][0]]
                custom_id = f"r{n}-{key[:16]}"
                body = client._body(item.prompt.render(item.inputs), item.prompt.low, item.prompt.high)
                line = json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
                                   "body": body}, ensure_ascii=False) + "\n"
                size += len(line.encode("utf-8"))
                if size > MAX_BATCH_BYTES:
                    raise ValueError("one batch input file would exceed 150 MB: lower --batch-size")
                lines.append(line)
                prev = history.get(key)
                index[custom_id] = {"key": key, "round": (prev.attempts if prev else 0) + 1,
                                    "history": prev.as_dict() if prev else None, "low": item.prompt.low,
                                    "high": item.prompt.high, "placeholders": list(item.prompt.reply_placeholders),
                                    "prompt_sha256": item.prompt.sha256,
                                    "dimension": item.prompt.dimension, "repeat": item.repeat}
            file_id = api.upload("".join(lines).encode("utf-8"))
            batch = api.create(file_id, completion_window, {"tool": "reteco-measures", "model": model[:64]})
            atomic_write_text(folder / f"{batch['id']}.json", json.dumps(
                {"batch_id": batch["id"], "input_file_id": file_id, "model": model, "submitted": time.time(),
                 "keys": index}), fsync=True)
            if log is not None:
                log(f"submitted {batch['id']} ({len(chunk)} request(s))")

    while True:
        with _folder_lock(folder):
            recs = records()
            in_flight = {info["key"] for rec in recs.values() for info in rec["keys"].values()}
            for batch_id, rec in recs.items():
                if not any(info["key"] in pending for info in rec["keys"].values()):
                    continue
                batch = api.get(batch_id)
                if batch.get("status") in TERMINAL_STATUSES:
                    collect(batch_id, rec, batch)
                    in_flight -= {info["key"] for info in rec["keys"].values()}
            todo = []
            for k in pending:
                if k in final or k in in_flight:
                    continue
                found = _cached_verdict(cache.get(k), refresh_invalid)  # another run may have answered it meanwhile
                if found is not None:
                    conclude(k, found, False)
                else:
                    todo.append(k)
            budget = client.budget
            if todo and budget is not None and not budget.tokens_left():
                todo = []
            if todo and (budget is None or budget.exhausted is None):
                submit(todo)
            recs = records()
            waiting = [b for b, rec in recs.items() if any(info["key"] in pending and info["key"] not in final
                                                           for info in rec["keys"].values())]
        unsent = [k for k in pending if k not in final and not any(
            info["key"] == k for rec in recs.values() for info in rec["keys"].values())]
        if not waiting:
            break
        if deadline is not None and time.monotonic() >= deadline:
            raise BatchPending(f"{len(waiting)} batch(es) still running ({', '.join(waiting[:3])}"
                               f"{' ...' if len(waiting) > 3 else ''}); run the same command again to collect them")
        time.sleep(min(poll_interval, max(0.0, deadline - time.monotonic())) if deadline is not None
                   else poll_interval)

    for key in unsent:
        verdict = history.get(key)
        why = client.budget.exhausted if client.budget is not None and client.budget.exhausted else "not submitted"
        final[key] = Verdict(None, None, f"not asked: {why}", "limit", verdict.attempts if verdict else 0)
        stats.limited += 1
    for key, idx in pending.items():
        for i in idx:
            results[i] = Outcome(items[i], final[key], key in from_cache, model)
        if key in from_cache:
            stats.cached += len(idx)
    out = [r for r in results if r is not None]
    stats.invalid = sum(1 for r in out if not r.verdict.valid)
    return out
