"""A small client for any OpenAI-compatible chat-completions endpoint, and strict reply parsing.

The endpoint follows the OpenAI client conventions: ``OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``) and ``OPENAI_API_KEY`` from the environment (no ``Authorization``
header when the key is unset, for local servers). Requests are sent with temperature 0.

httpx (the ``judge`` extra) is imported only when a client is created, so importing
reteco_measures never needs it.

Outcome of one judgment (:class:`Verdict`), never an exception for a single bad item:

* ``kind='ok'``: a JSON object with an integer ``score`` in range and a string ``rationale``;
* ``kind='response'``: the model answered, but not with a valid object (not JSON, no integer
  score, score out of range, no rationale) on every one of the attempts;
* ``kind='transport'``: timeouts, connection errors, HTTP 5xx or 429 on every attempt;
* ``kind='request'``: the endpoint rejected this request (HTTP 400/413/422 ...): not retried.

HTTP 401/403/404 mean the configuration is wrong (key, URL, model): they raise
:class:`JudgeFatalError` and stop the run instead of marking every item invalid.
"""

from __future__ import annotations

import email.utils
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["JudgeClient", "Verdict", "JudgeFatalError", "ReplyError", "parse_reply", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class JudgeFatalError(RuntimeError):
    """The endpoint refuses every request (bad key, URL or model): stop the run."""


class ReplyError(ValueError):
    """The model's reply is not a valid judgment (the message says why)."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of one judgment.

    Attributes:
        score: the integer score, or None when invalid.
        rationale: the model's rationale (None when invalid).
        error: None, or why the judgment is invalid.
        kind: ``ok`` | ``response`` | ``transport`` | ``request`` (see the module docstring).
        attempts: how many requests were sent.
        raw: the last raw reply content (for audit), if any.
    """

    score: int | None
    rationale: str | None
    error: str | None
    kind: str
    attempts: int
    raw: str | None = None

    @property
    def valid(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.score, "rationale": self.rationale, "error": self.error, "kind": self.kind,
                "attempts": self.attempts, "raw": self.raw}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        return cls(score=d.get("score"), rationale=d.get("rationale"), error=d.get("error"),
                   kind=d.get("kind", "ok"), attempts=int(d.get("attempts", 0)), raw=d.get("raw"))


_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n(.*)\n```$", re.S)


def parse_reply(content: str, low: int, high: int) -> tuple[int, str]:
    """Strictly parse a judge reply: one JSON object with an integer ``score`` in [low, high] and a
    string ``rationale``.

    The only leniency is surrounding whitespace and a single Markdown code fence around the object.
    ``4.0``, ``"4"``, ``true`` and out-of-range numbers are rejected, never rounded or clamped.

    Raises:
        ReplyError: with the reason.
    """
    if not isinstance(content, str):
        raise ReplyError("reply content is not text")
    text = content.strip()
    m = _FENCE.match(text)
    if m:
        text = m.group(1).strip()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplyError(f"reply is not a JSON object ({exc.msg} at char {exc.pos})") from None
    if not isinstance(obj, dict):
        raise ReplyError(f"reply is JSON but not an object ({type(obj).__name__})")
    if "score" not in obj:
        raise ReplyError("reply has no 'score'")
    score = obj["score"]
    if isinstance(score, bool) or not isinstance(score, int):
        raise ReplyError(f"'score' is not an integer: {json.dumps(score)[:40]}")
    if not low <= score <= high:
        raise ReplyError(f"'score' {score} is outside {low}-{high}")
    rationale = obj.get("rationale")
    if not isinstance(rationale, str):
        raise ReplyError("reply has no string 'rationale'")
    return score, rationale


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class JudgeClient:
    """Chat-completions client with retries, backoff and strict parsing; safe to share between
    threads.

    Args:
        model: the model name sent to the endpoint.
        base_url: default ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
        api_key: default ``$OPENAI_API_KEY`` (no ``Authorization`` header when unset).
        timeout: seconds per request (connect, read, write, pool).
        retries: extra attempts after the first (each failed attempt of any kind except
            ``request`` counts); a fixed number, so the procedure can be disclosed.
        backoff: first wait in seconds; doubles after each failed attempt, capped at ``max_backoff``.
        max_retry_after: the longest ``Retry-After`` honoured (longer values are capped to it).
        json_mode: send ``response_format={"type": "json_object"}`` (turn off for endpoints that
            reject it).
        max_tokens: optional ``max_tokens`` for the reply.
        concurrency: size of the connection pool (use the same number of threads).
        extra_body: extra fields merged into every request body (e.g. ``{"seed": 0}``).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        max_retry_after: float = 300.0,
        json_mode: bool = True,
        max_tokens: int | None = None,
        concurrency: int = 4,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        try:
            import httpx
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError(
                "the LLM judge needs httpx: pip install 'reteco-measures[judge]'"
            ) from None
        if not model:
            raise ValueError("a judge model name is required (--model)")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self._httpx = httpx
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_retry_after = float(max_retry_after)
        self.json_mode = json_mode
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout),
            limits=httpx.Limits(max_connections=max(1, concurrency), max_keepalive_connections=max(1, concurrency)),
        )
        # a 429 with Retry-After pauses every thread, not just the one that got it
        self._pause_until = 0.0
        self._pause_lock = threading.Lock()
        self._stop = threading.Event()

    # -- plumbing ------------------------------------------------------------------------------
    def close(self) -> None:
        self._client.close()

    def cancel(self) -> None:
        """Stop retrying: judgments in progress end as ``cancelled`` (not cached) after their
        current request, and new ones are not sent."""
        self._stop.set()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _pause(self, seconds: float) -> None:
        with self._pause_lock:
            self._pause_until = max(self._pause_until, time.monotonic() + seconds)

    def _wait_for_pause(self) -> None:
        while True:
            with self._pause_lock:
                remaining = self._pause_until - time.monotonic()
            if remaining <= 0 or self._stop.is_set():
                return
            self._stop.wait(min(remaining, 0.5))

    def _body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body)
        return body

    # -- one judgment ----------------------------------------------------------------------------
    def judge(self, messages: list[dict[str, str]], low: int, high: int) -> Verdict:
        """Send ``messages`` until a valid judgment arrives or the attempts run out."""
        httpx = self._httpx
        url = f"{self.base_url}/chat/completions"
        body = self._body(messages)
        last_error = "no attempt made"
        last_kind = "transport"
        raw: str | None = None
        attempts = 0
        for attempt in range(self.retries + 1):
            self._wait_for_pause()
            if self._stop.is_set():
                return Verdict(None, None, "cancelled before an answer", "transport", attempts, raw)
            attempts += 1
            wait = min(self.backoff * (2**attempt), self.max_backoff)
            try:
                response = self._client.post(url, json=body)
            except httpx.TimeoutException:
                last_error, last_kind = f"timeout after {self.timeout:g}s", "transport"
            except httpx.TransportError as exc:
                last_error, last_kind = f"connection error: {type(exc).__name__}: {exc}", "transport"
            else:
                status = response.status_code
                if status == 200:
                    try:
                        content = response.json()["choices"][0]["message"]["content"]
                    except (ValueError, KeyError, IndexError, TypeError):
                        last_error, last_kind = "endpoint reply is not a chat completion", "response"
                        raw = response.text[:2000]
                    else:
                        raw = content if isinstance(content, str) else json.dumps(content)
                        try:
                            score, rationale = parse_reply(content, low, high)
                        except ReplyError as exc:
                            last_error, last_kind = str(exc), "response"
                        else:
                            return Verdict(score, rationale, None, "ok", attempts, raw)
                elif status in (401, 403, 404):
                    raise JudgeFatalError(
                        f"{url} answered HTTP {status}: {response.text[:300].strip()} "
                        "(check OPENAI_BASE_URL, OPENAI_API_KEY and --model)"
                    )
                elif status == 429 or status >= 500:
                    last_error = f"HTTP {status}" + (f": {response.text[:200].strip()}" if response.text else "")
                    last_kind = "transport"
                    after = _retry_after(response.headers.get("Retry-After"))
                    if after is not None:
                        wait = min(after, self.max_retry_after)
                        if status == 429:
                            self._pause(wait)
                else:
                    detail = response.text[:300].strip()
                    return Verdict(None, None, f"HTTP {status}: {detail}", "request", attempts, None)
            if attempt < self.retries:
                self._stop.wait(wait)
        return Verdict(None, None, f"invalid after {attempts} attempt(s): {last_error}", last_kind, attempts, raw)
