"""A small client for any OpenAI-compatible chat-completions endpoint, and strict reply parsing.

The endpoint follows the OpenAI client conventions: ``OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``) and ``OPENAI_API_KEY`` from the environment (no ``Authorization``
header when the key is unset, for local servers). Requests are sent with temperature 0 unless
another temperature is asked for.

httpx (the ``judge`` extra) is imported only when a client is created, so importing
reteco_measures never needs it.

Outcome of one judgment (:class:`Verdict`), never an exception for a single bad item:

* ``kind='ok'``: a chat completion whose content is a JSON object with an integer ``score`` in
  range and a string ``rationale``;
* ``kind='response'``: the endpoint returned a well-formed chat completion, but its content is not
  a valid judgment (not JSON, no integer score, score out of range, no rationale) on every attempt;
* ``kind='transport'``: timeouts, connection errors, HTTP 5xx or 429, or a body that is not a chat
  completion at all (a gateway's HTML page, truncated or absurd JSON) on every attempt;
* ``kind='request'``: the endpoint rejected this request (HTTP 400/413/422 ...): not retried;
* ``kind='limit'``: not (fully) asked because a request or token limit of the run was reached, or
  the run was cancelled.

Every attempt has a total deadline (``timeout``): connecting, sending, waiting and reading the
whole body together, so a server that trickles its reply cannot hold a request longer.

HTTP 401/403/404 mean the configuration is wrong (key, URL, model): they raise
:class:`JudgeFatalError` and stop the run instead of marking every item invalid; so does an
endpoint that cannot be reached at all. The API key, ``Authorization`` values and credentials in
the URL are redacted from every message, error and stored reply.
"""

from __future__ import annotations

import base64
import email.utils
import json
import os
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "JudgeClient",
    "Verdict",
    "JudgeFatalError",
    "ReplyError",
    "parse_reply",
    "redact",
    "Budget",
    "DEFAULT_BASE_URL",
    "INSTALL_HINT",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
INSTALL_HINT = 'pip install "reteco-measures[judge]"'

#: the largest response body read (bytes); a longer body is a transport failure
MAX_BODY_BYTES = 8 * 1024 * 1024


class JudgeFatalError(RuntimeError):
    """The endpoint refuses every request (bad key, URL or model) or cannot be reached: stop the run."""


class ReplyError(ValueError):
    """The model's reply is not a valid judgment (the message says why)."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of one judgment.

    Attributes:
        score: the integer score, or None when invalid.
        rationale: the model's rationale (None when invalid).
        error: None, or why the judgment is invalid.
        kind: ``ok`` | ``response`` | ``transport`` | ``request`` | ``limit`` | ``input`` | ``error``
            (see the module docstring; ``input`` = not sendable, ``error`` = an unexpected failure
            while judging that item).
        attempts: how many requests were sent.
        raw: the last raw reply content (for audit, at most 2000 characters), if any.
        prompt_tokens, completion_tokens: tokens the endpoint reported over all attempts.
        response_model: the model name the endpoint returned (last completion), if any.
        causes: why each failed attempt failed (``timeout``, ``connection``, ``http_429``,
            ``http_5xx``, ``not_a_completion``, ``invalid_reply`` ...), in order.
    """

    score: int | None
    rationale: str | None
    error: str | None
    kind: str
    attempts: int
    raw: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    response_model: str | None = None
    causes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def valid(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.score, "rationale": self.rationale, "error": self.error, "kind": self.kind,
                "attempts": self.attempts, "raw": self.raw, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "response_model": self.response_model,
                "causes": list(self.causes)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        def _int(x: Any) -> int:
            return int(x) if isinstance(x, int) and not isinstance(x, bool) else 0

        score = d.get("score")
        causes = d.get("causes") or []
        return cls(score=score if isinstance(score, int) and not isinstance(score, bool) else None,
                   rationale=d.get("rationale") if isinstance(d.get("rationale"), str) else None,
                   error=d.get("error") if isinstance(d.get("error"), str) else None,
                   kind=str(d.get("kind", "ok")), attempts=_int(d.get("attempts")),
                   raw=d.get("raw") if isinstance(d.get("raw"), str) else None,
                   prompt_tokens=_int(d.get("prompt_tokens")), completion_tokens=_int(d.get("completion_tokens")),
                   response_model=d.get("response_model") if isinstance(d.get("response_model"), str) else None,
                   causes=tuple(str(c) for c in causes) if isinstance(causes, list) else ())


_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n(.*)\n```$", re.S)


def _short(value: Any, limit: int = 40) -> str:
    """A short, never-failing rendering of a parsed JSON value for messages."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value) if value.bit_length() < 200 else f"<integer of {len(str(value))} digits>"
    else:
        try:
            text = json.dumps(value)
        except (ValueError, RecursionError, TypeError):
            text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _loads(text: str | bytes) -> Any:
    """``json.loads`` whose every failure is a ValueError with a short reason (deep nesting,
    numbers beyond the digit limit and invalid JSON alike)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at char {exc.pos}") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except (ValueError, MemoryError, OverflowError) as exc:  # e.g. integers beyond the digit limit
        raise ValueError(str(exc).split("\n")[0][:120] or type(exc).__name__) from None


def parse_reply(content: str, low: int, high: int) -> tuple[int, str]:
    """Strictly parse a judge reply: one JSON object with an integer ``score`` in [low, high] and a
    string ``rationale``.

    The only leniency is surrounding whitespace and a single Markdown code fence around the object.
    ``4.0``, ``"4"``, ``true`` and out-of-range numbers are rejected, never rounded or clamped.
    Any text at all (deeply nested JSON, numbers of thousands of digits, binary noise) either
    parses or raises :class:`ReplyError`; no other exception escapes.

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
        obj = _loads(text)
    except ValueError as exc:
        raise ReplyError(f"reply is not a JSON object ({exc})") from None
    if not isinstance(obj, dict):
        raise ReplyError(f"reply is JSON but not an object ({type(obj).__name__})")
    if "score" not in obj:
        raise ReplyError("reply has no 'score'")
    score = obj["score"]
    if isinstance(score, bool) or not isinstance(score, int):
        raise ReplyError(f"'score' is not an integer: {_short(score)}")
    if not low <= score <= high:
        raise ReplyError(f"'score' {_short(score)} is outside {low}-{high}")
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
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None  # NaN -> ignored
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    try:
        return max(0.0, when.timestamp() - time.time())
    except (OverflowError, ValueError, OSError):
        return None


_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=:-]+")
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


def redact(text: str, secrets: tuple[str, ...] | list[str] = ()) -> str:
    """``text`` with every secret, ``Bearer``/``Basic`` credential and URL user-info replaced by
    ``***``."""
    for s in secrets:
        if s and len(s) >= 3:
            text = text.replace(s, "***")
    text = _BEARER.sub(lambda m: f"{m.group(1)} ***", text)
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}***@", text)


class Budget:
    """Limits of one run: HTTP requests sent and tokens (prompt + completion) used.

    Thread-safe. A request is only sent after :meth:`reserve` succeeded; tokens are added when a
    reply arrives, so a run may exceed ``max_tokens`` by the requests already in flight.
    """

    def __init__(self, max_requests: int | None = None, max_tokens: int | None = None) -> None:
        for name, v in (("max_requests", max_requests), ("max_tokens", max_tokens)):
            if v is not None and v < 0:
                raise ValueError(f"{name} must be >= 0")
        self.max_requests = max_requests
        self.max_tokens = max_tokens
        self.requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.exhausted: str | None = None
        self._lock = threading.Lock()

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def reserve(self) -> bool:
        """Count one request if the limits allow it; False (and ``exhausted`` set) otherwise."""
        with self._lock:
            if self.max_requests is not None and self.requests >= self.max_requests:
                self.exhausted = f"--max-requests {self.max_requests} reached"
                return False
            if self._out_of_tokens():
                return False
            self.requests += 1
            return True

    def tokens_left(self) -> bool:
        """Whether the token limit still allows requests; False (and ``exhausted`` set) otherwise."""
        with self._lock:
            return not self._out_of_tokens()

    def _out_of_tokens(self) -> bool:
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            self.exhausted = f"--max-tokens {self.max_tokens} reached ({self.tokens} tokens used)"
            return True
        return False

    def add(self, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens


class _AttemptTimeout(Exception):
    pass


class _TooLarge(Exception):
    pass


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**12 else 0


class JudgeClient:
    """Chat-completions client with retries, backoff and strict parsing; safe to share between
    threads.

    Args:
        model: the model name sent to the endpoint.
        base_url: default ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
        api_key: default ``$OPENAI_API_KEY`` (no ``Authorization`` header when unset).
        timeout: total seconds per attempt (connect, send, wait and read the whole reply).
        retries: extra attempts after the first (each failed attempt of any kind except
            ``request`` counts); a fixed number, so the procedure can be disclosed.
        backoff: first wait in seconds; doubles after each failed attempt, capped at ``max_backoff``.
        max_retry_after: the longest ``Retry-After`` honoured (longer values are capped to it).
        json_mode: send ``response_format={"type": "json_object"}`` (turn off for endpoints that
            reject it).
        max_tokens: optional ``max_tokens`` for the reply.
        concurrency: requests in flight (use the same number of threads).
        extra_body: extra fields merged into every request body (e.g. ``{"seed": 0}``).
        temperature: sampling temperature (default 0).
        budget: request / token limits shared by the run (:class:`Budget`).
        unreachable_after: stop the run (:class:`JudgeFatalError`) when this many judgments in a
            row failed on connection errors only; before the endpoint has answered anything, the
            first such judgment stops it. ``0`` never stops.
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
        temperature: float = 0.0,
        budget: Budget | None = None,
        unreachable_after: int = 3,
    ) -> None:
        try:
            import httpx
        except ImportError:
            raise ImportError(f"the LLM judge needs httpx: {INSTALL_HINT}") from None
        if not model:
            raise ValueError("a judge model name is required (--model)")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if not timeout > 0:
            raise ValueError("timeout must be > 0")
        self._httpx = httpx
        self.model = model
        base = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        secrets: list[str] = [key] if key else []
        try:
            parts = urlsplit(base)
            if parts.password:
                secrets.append(parts.password)
            if parts.username:
                secrets.append(parts.username)
                userinfo = f"{parts.username}:{parts.password or ''}".encode()
                secrets.append(base64.b64encode(userinfo).decode())
        except ValueError:
            pass
        self._secrets = tuple(sorted(set(secrets), key=len, reverse=True))
        self.base_url = base
        #: the base URL with credentials removed, for messages and reports
        self.display_url = self.redact(base)
        headers: dict[str, str] = {}  # httpx sets the Content-Type of JSON and multipart bodies
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_retry_after = float(max_retry_after)
        self.json_mode = json_mode
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.extra_body = dict(extra_body or {})
        self.budget = budget
        self.unreachable_after = int(unreachable_after)
        n = max(1, concurrency)
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout),
            # abandoned attempts (past their deadline) may hold a connection a little longer
            limits=httpx.Limits(max_connections=2 * n + 2, max_keepalive_connections=n),
        )
        # a 429 with Retry-After pauses every thread, not just the one that got it
        self._pause_until = 0.0
        self._pause_lock = threading.Lock()
        self._stop = threading.Event()
        self._state_lock = threading.Lock()
        self._answered = False  # the endpoint has sent at least one HTTP response
        self._unreachable_streak = 0

    # -- plumbing ------------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """``text`` without the key or URL credentials."""
        return redact(text, self._secrets)

    def settings(self) -> dict[str, Any]:
        """Decoding settings and retry procedure (for the disclosure report); no secrets."""
        return {
            "model": self.model, "base_url": self.display_url, "temperature": self.temperature,
            "json_mode": self.json_mode, "max_tokens": self.max_tokens,
            "extra_body": json.loads(self.redact(json.dumps(self.extra_body))),
            "timeout": self.timeout, "retries": self.retries, "backoff": self.backoff,
            "max_backoff": self.max_backoff, "max_retry_after": self.max_retry_after,
        }

    def close(self) -> None:
        self._client.close()

    def cancel(self) -> None:
        """Stop retrying: judgments in progress end as ``limit`` (not cached) after their
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
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body)
        return body

    def _post(self, url: str, body: dict[str, Any]) -> tuple[int, Any, bytes]:
        """POST with a total deadline of ``timeout`` seconds; returns (status, headers, body).

        The request runs in a helper thread so the deadline holds however the server dribbles its
        bytes; at the deadline the socket is shut down (when known) and the helper gives up.

        Raises:
            _AttemptTimeout, _TooLarge, httpx.TransportError.
        """
        httpx = self._httpx
        box: dict[str, Any] = {}
        done = threading.Event()
        abort = threading.Event()

        def run() -> None:
            try:
                with self._client.stream("POST", url, json=body) as r:
                    box["stream"] = r.extensions.get("network_stream")
                    chunks: list[bytes] = []
                    size = 0
                    for chunk in r.iter_bytes():
                        if abort.is_set():
                            return
                        size += len(chunk)
                        if size > MAX_BODY_BYTES:
                            raise _TooLarge()
                        chunks.append(chunk)
                    box["result"] = (r.status_code, r.headers, b"".join(chunks))
            except BaseException as exc:  # handed to the waiting thread
                box["exc"] = exc
            finally:
                done.set()

        helper = threading.Thread(target=run, name="judge-request", daemon=True)
        helper.start()
        if not done.wait(self.timeout):
            abort.set()
            stream = box.get("stream")
            try:
                sock = stream.get_extra_info("socket") if stream is not None else None
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError, ValueError):
                pass
            raise _AttemptTimeout()
        if "exc" in box:
            exc = box["exc"]
            if isinstance(exc, httpx.TimeoutException):
                raise _AttemptTimeout() from None
            raise exc
        return box["result"]

    def _note_unreachable(self, all_connection: bool, error: str) -> None:
        with self._state_lock:
            if not all_connection:
                self._unreachable_streak = 0
                return
            self._unreachable_streak += 1
            stop = self.unreachable_after > 0 and (
                not self._answered or self._unreachable_streak >= self.unreachable_after)
        if stop:
            self.cancel()
            raise JudgeFatalError(self.redact(
                f"the endpoint {self.display_url} cannot be reached ({error}); stopped instead of failing "
                "every judgment the same way: check OPENAI_BASE_URL / --base-url and the network, then run "
                "the same command again (finished judgments are cached)"))

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
        causes: list[str] = []
        usage = [0, 0]
        returned_model: list[str | None] = [None]

        def verdict(score: int | None, rationale: str | None, error: str | None, kind: str) -> Verdict:
            return Verdict(score, rationale, None if error is None else self.redact(error), kind, attempts,
                           None if raw is None else self.redact(raw), usage[0], usage[1], returned_model[0],
                           tuple(causes))

        for attempt in range(self.retries + 1):
            self._wait_for_pause()
            if self._stop.is_set():
                return verdict(None, None, f"cancelled before an answer (after {attempts} attempt(s))", "limit")
            if self.budget is not None and not self.budget.reserve():
                return verdict(None, None, f"not asked: {self.budget.exhausted}", "limit")
            attempts += 1
            wait = min(self.backoff * (2**attempt), self.max_backoff)
            cause = None
            try:
                status, headers, data = self._post(url, body)
            except _AttemptTimeout:
                last_error, last_kind, cause = f"timeout after {self.timeout:g}s (total per attempt)", "transport", \
                    "timeout"
            except _TooLarge:
                last_error, last_kind, cause = (f"reply larger than {MAX_BODY_BYTES} bytes", "transport",
                                                "too_large")
            except httpx.TransportError as exc:
                last_error, last_kind = f"connection error: {type(exc).__name__}: {exc}", "transport"
                cause = "connection"
            else:
                with self._state_lock:
                    self._answered = True
                if status == 200:
                    content, why = self._completion(data, usage, returned_model)
                    if why is not None:
                        last_error, last_kind, cause = why, "transport", "not_a_completion"
                        raw = data[:2000].decode("utf-8", "replace")
                    else:
                        raw = content[:2000] if isinstance(content, str) else _short(content, 2000)
                        try:
                            score, rationale = parse_reply(content, low, high)
                        except ReplyError as exc:
                            last_error, last_kind, cause = str(exc), "response", "invalid_reply"
                        else:
                            self._note_unreachable(False, "")
                            return verdict(score, rationale, None, "ok")
                elif status in (401, 403, 404):
                    text = data[:300].decode("utf-8", "replace").strip()
                    self.cancel()
                    raise JudgeFatalError(self.redact(
                        f"{self.display_url}/chat/completions answered HTTP {status}: {text} "
                        "(check OPENAI_BASE_URL, OPENAI_API_KEY and --model)"))
                elif status == 429 or status >= 500:
                    text = data[:200].decode("utf-8", "replace").strip()
                    last_error = f"HTTP {status}" + (f": {text}" if text else "")
                    last_kind = "transport"
                    cause = "http_429" if status == 429 else "http_5xx"
                    after = _retry_after(headers.get("Retry-After"))
                    if after is not None:
                        wait = min(after, self.max_retry_after)
                        if status == 429:
                            self._pause(wait)
                else:
                    detail = data[:300].decode("utf-8", "replace").strip()
                    causes.append(f"http_{status}")
                    self._note_unreachable(False, "")
                    return verdict(None, None, f"HTTP {status}: {detail}", "request")
            causes.append(cause or "other")
            if attempt < self.retries:
                self._stop.wait(wait)
        self._note_unreachable(all(c == "connection" for c in causes) and bool(causes), last_error)
        return verdict(None, None, f"invalid after {attempts} attempt(s): {last_error}", last_kind)

    def _completion(self, data: bytes, usage: list[int], returned_model: list[str | None]) -> tuple[Any, str | None]:
        """(content, None) for a chat completion body, else (None, why it is not one)."""
        try:
            obj = _loads(data)
        except ValueError as exc:
            head = data[:60].decode("utf-8", "replace").strip().replace("\n", " ")
            return None, f"endpoint reply is not a chat completion (not JSON: {exc}; starts {head!r})"
        return self._completion_object(obj, usage, returned_model)

    def _completion_object(self, obj: Any, usage: list[int], returned_model: list[str | None]) -> tuple[Any, str | None]:
        """(content, None) for a parsed chat completion, else (None, why it is not one); adds its
        token usage to ``usage`` (and the run's budget) and records the returned model name."""
        if not isinstance(obj, dict):
            return None, "endpoint reply is not a chat completion (not a JSON object)"
        u = obj.get("usage")
        if isinstance(u, dict):
            pt, ct = _count(u.get("prompt_tokens")), _count(u.get("completion_tokens"))
            usage[0] += pt
            usage[1] += ct
            if self.budget is not None:
                self.budget.add(pt, ct)
        if isinstance(obj.get("model"), str):
            returned_model[0] = obj["model"][:200]
        try:
            content = obj["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return None, "endpoint reply is not a chat completion (no choices[0].message.content)"
        return content, None
