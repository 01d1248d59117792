"""A thin adapter over the official ``openai`` Python client for any OpenAI-compatible
chat-completions endpoint (OpenAI, vLLM, llama.cpp's ``llama-server``, Ollama ...), and strict
reply parsing.

The endpoint follows the OpenAI client conventions: ``OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``) and ``OPENAI_API_KEY`` from the environment (no ``Authorization``
header when the key is unset, for local servers). Requests are sent with temperature 0 unless
another temperature is asked for.

The HTTP work is the ``openai`` client's (the ``judge`` extra): its ``base_url``, authentication,
connection pool, timeouts and error classes; it is imported only when a client is created, so
importing reteco_measures never needs it. Its own retries are off (``max_retries=0``): every
attempt is made here, because each one is counted against the run's request budget
(``--max-requests``), its cause is recorded for the disclosure report, a ``Retry-After`` is
capped at ``--max-wait`` and pauses every worker, and an invalid reply is re-asked with a repair
message, none of which the client's built-in retry loop can do.

Outcome of one judgment (`Verdict`), never an exception for a single bad item:

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
whole body together, so a server that trickles its reply cannot hold a request longer. Time a
request spends queued at the server (behind other requests it has not started yet) counts too:
see `JudgeQueueingWarning`.

Structured output (``structured``): ``json_object`` sends ``response_format={"type":
"json_object"}`` (JSON mode), ``json_schema`` the OpenAI form ``{"type": "json_schema",
"json_schema": {"name", "strict", "schema"}}`` (OpenAI, vLLM, Ollama, llama.cpp's ``llama-server``),
``schema-in-object`` llama-cpp-python's form ``{"type": "json_object", "schema": ...}``, ``none``
nothing; ``auto`` picks one from what ``GET /models`` says about the server
(`AUTO_STRUCTURED`), ``json_object`` when it cannot tell. The schema
(`judgment_schema`) allows only an object with an integer ``score`` on the prompt's scale and
a string ``rationale``, so a server that enforces it can only answer well-formed judgments.

A reply that is not a valid judgment is retried with a short repair message (the reason and the
schema) after the model's own reply; an answer identical to an earlier invalid one ends the
retries of that judgment (asking again would give it again).

HTTP 401/403/404 mean the configuration is wrong (key, URL, model): they raise
`JudgeFatalError` and stop the run instead of marking every item invalid; so does an
endpoint that cannot be reached at all. The API key, ``Authorization`` values and credentials in
the URL are redacted from every message, error and stored reply.
"""

from __future__ import annotations

import base64
import email.utils
import json
import os
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from ..errors import JudgeFatalError, JudgeQueueingWarning
from .budget import Budget
from .replies import ReplyError, Verdict, clean_text, load_json, parse_reply, redact, short_repr

__all__ = [
    "JudgeClient",
    "JudgeQueueingWarning",
    "QUEUEING_PARALLELISM",
    "QUEUEING_MIN_SECONDS",
    "STRUCTURED_MODES",
    "AUTO_STRUCTURED",
    "judgment_schema",
    "response_format",
    "JudgeFatalError",
    "DEFAULT_BASE_URL",
    "INSTALL_HINT",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
INSTALL_HINT = 'pip install "reteco-measures[judge]"'

#: the largest response body read (bytes); a longer body is a transport failure
MAX_BODY_BYTES = 8 * 1024 * 1024

#: values of ``structured`` (``--structured``)
STRUCTURED_MODES = ("auto", "json_object", "json_schema", "schema-in-object", "none")

#: ``structured="auto"``: the ``owned_by`` a server reports in ``GET /models`` -> the structured-output
#: form its documentation describes (vLLM, llama.cpp's llama-server, Ollama and OpenAI document
#: ``json_schema``; llama-cpp-python documents a ``schema`` inside ``json_object``); anything else
#: gets ``json_object``
AUTO_STRUCTURED = {
    "vllm": "json_schema",
    "llamacpp": "json_schema",
    "library": "json_schema",
    "ollama": "json_schema",
    "openai": "json_schema",
    "system": "json_schema",
    "me": "schema-in-object",
}

#: parallelism below which a run with concurrency >= 2 is warned that the server queues requests
QUEUEING_PARALLELISM = 1.5
#: answers faster than this (seconds) are not judged for queueing: the client's own overhead then
#: dominates the measurement, and a queue that short cannot exhaust a deadline
QUEUEING_MIN_SECONDS = 0.05


def judgment_schema(low: int, high: int) -> dict[str, Any]:
    """The JSON schema of one judgment on the scale ``low..high``: an object with exactly an integer
    ``score`` (one of low..high) and a string ``rationale``."""
    return {"type": "object",
            "properties": {"score": {"type": "integer", "enum": list(range(low, high + 1))},
                           "rationale": {"type": "string"}},
            "required": ["score", "rationale"], "additionalProperties": False}


def response_format(mode: str, low: int | None = None, high: int | None = None) -> dict[str, Any] | None:
    """The ``response_format`` field for a (resolved) structured-output ``mode`` (None: no field).
    Without a scale (``low``/``high`` None) the schema modes fall back to JSON mode."""
    if mode == "none":
        return None
    if mode == "json_object" or low is None or high is None:
        return {"type": "json_object"}
    schema = judgment_schema(low, high)
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "judgment", "strict": True, "schema": schema}}
    if mode == "schema-in-object":
        return {"type": "json_object", "schema": schema}
    raise ValueError(f"structured output must be one of {', '.join(STRUCTURED_MODES)}, not {mode!r}")


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


class _AttemptTimeout(Exception):
    pass


class _TooLarge(Exception):
    pass


class _Unreachable(Exception):
    """The endpoint could not be connected to (the message names the underlying error)."""


class _Broken(Exception):
    """The connection broke after it was made (reset, closed mid-reply)."""


def _transport_error(exc: BaseException, openai: Any) -> BaseException:
    """The attempt-level exception for what the openai client (or the reply's reading) raised:
    `_AttemptTimeout`, `_Unreachable`, `_Broken`, or ``exc`` itself when it is none of those."""
    if isinstance(exc, (_AttemptTimeout, _TooLarge)):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return _AttemptTimeout()
    cause = exc.__cause__ if isinstance(exc, openai.APIConnectionError) and exc.__cause__ is not None else exc
    name = type(cause).__name__
    if name.endswith("Timeout") or name == "TimeoutException":
        return _AttemptTimeout()
    text = f"{name}: {cause}"
    if name in ("ConnectError", "UnsupportedProtocol", "InvalidURL") or isinstance(cause, ConnectionRefusedError):
        return _Unreachable(text)
    if (isinstance(exc, openai.APIConnectionError) or isinstance(cause, OSError)
            or type(cause).__module__.startswith("httpx")):
        return _Broken(text)
    return exc


def _shutdown(response: Any) -> None:
    """Shut the socket under an HTTP response down, when it can be found (ends a trickle)."""
    try:
        stream = response.extensions.get("network_stream") if response is not None else None
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, AttributeError, ValueError):
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
        max_retry_after: the longest wait for a ``Retry-After`` (``--max-wait``): a longer one is
            cut to it (the pause of every worker too), so a server's ``Retry-After: 100000`` costs
            at most this many seconds per attempt.
        max_tokens: optional ``max_tokens`` for the reply.
        concurrency: requests in flight (use the same number of threads).
        extra_body: extra fields merged into every request body.
        temperature: sampling temperature (default 0).
        budget: request / token limits shared by the run (`Budget`).
        unreachable_after: stop the run (`JudgeFatalError`) when this many judgments in a
            row failed on connection errors only (the endpoint could not be connected to; a
            connection reset after it was made does not count); before the endpoint has
            answered anything, the first such judgment stops it. ``0`` never stops.
        structured: ``auto`` (default), ``json_object``, ``json_schema``, ``schema-in-object`` or
            ``none`` (see the module docstring).
        seed: the request's ``seed`` (None: not sent).
        top_p: the request's ``top_p`` (None: not sent).
        repair: retry an invalid reply with a repair message (the reason and the schema) after it;
            False re-sends the same request.

    Attributes:
        openai_client: the ``openai.OpenAI`` client every request goes through (its own retries
            off; `judge` makes the attempts).
        openai_module: the ``openai`` module (its error classes).
        request_headers: the headers added to every request (``None``, or without a key the
            ``Authorization`` header left out).
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
        max_retry_after: float = 60.0,
        max_tokens: int | None = None,
        concurrency: int = 4,
        extra_body: dict[str, Any] | None = None,
        temperature: float = 0.0,
        budget: Budget | None = None,
        unreachable_after: int = 3,
        structured: str = "auto",
        seed: int | None = None,
        top_p: float | None = None,
        repair: bool = True,
    ) -> None:
        try:
            import openai
        except ImportError:
            raise ImportError(f"the LLM judge needs the openai client: {INSTALL_HINT}") from None
        if not model:
            raise ValueError("a judge model name is required (--model)")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if not timeout > 0:
            raise ValueError("timeout must be > 0")
        if not max_retry_after >= 0:
            raise ValueError("max_retry_after (--max-wait) must be >= 0")
        if structured not in STRUCTURED_MODES:
            raise ValueError(f"structured output must be one of {', '.join(STRUCTURED_MODES)}, not {structured!r}")
        if top_p is not None and not 0 < top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        self.openai_module = openai
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
        # without a key (a local server) the Authorization header is left out of every request
        self.request_headers: dict[str, Any] | None = None if key else {"Authorization": openai.Omit()}
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_retry_after = float(max_retry_after)
        self.structured = structured
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.seed = None if seed is None else int(seed)
        self.top_p = None if top_p is None else float(top_p)
        self.repair = bool(repair)
        self.extra_body = dict(extra_body or {})
        self.budget = budget
        self.unreachable_after = int(unreachable_after)
        self.concurrency = max(1, concurrency)
        self.openai_client = openai.OpenAI(base_url=base, api_key=key or "unused", max_retries=0, timeout=self.timeout)
        # a 429 with Retry-After pauses every thread, not just the one that got it
        self._pause_until = 0.0
        self._pause_lock = threading.Lock()
        self._stop = threading.Event()
        self._state_lock = threading.Lock()
        self._answered = False  # the endpoint has sent at least one HTTP response
        self._unreachable_streak = 0
        self._identity: dict[str, Any] | None = None  # what GET /models said (identify())
        self._identity_lock = threading.Lock()
        self._timings: list[tuple[float, float]] = []  # (sent, answered) of attempts that got a response

    # -- plumbing ------------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """``text`` without the key or URL credentials."""
        return redact(text, self._secrets)

    def resolved_structured(self) -> str:
        """The structured-output mode sent: ``structured``, or for ``auto`` the one
        `AUTO_STRUCTURED` gives for what ``GET /models`` reported (``json_object`` when
        unknown; this asks the endpoint once)."""
        if self.structured != "auto":
            return self.structured
        owners = self.identify().get("owned_by") or []
        modes = {AUTO_STRUCTURED.get(str(o).lower()) for o in owners}
        return modes.pop() if len(modes) == 1 and None not in modes else "json_object"

    def identify(self) -> dict[str, Any]:
        """What the endpoint's ``GET {base}/models`` reports, asked once per client (not counted
        in the run's budget): ``{"ids": [...], "owned_by": [...], "served_model": id or None,
        "error": None or why it is unknown}``. ``served_model`` is the requested name when the
        list holds it, else the only id listed, else None."""
        with self._identity_lock:
            if self._identity is None:
                self._identity = self._ask_models()
            return self._identity

    def _ask_models(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ids": [], "owned_by": [], "served_model": None, "error": None}
        openai = self.openai_module
        try:
            r = self.openai_client.models.with_raw_response.list(extra_headers=self.request_headers,
                                                           timeout=min(self.timeout, 10.0))
        except openai.APIStatusError as exc:
            out["error"] = f"GET /models answered HTTP {exc.status_code}"
            return out
        except openai.APIError as exc:
            out["error"] = clean_text(self.redact(f"GET /models failed: {type(exc.__cause__ or exc).__name__}"), 200)
            return out
        try:
            data = load_json(r.http_response.content[:MAX_BODY_BYTES]).get("data")
            models = [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)][:50]
        except (ValueError, AttributeError, TypeError):
            out["error"] = "GET /models did not answer a model list"
            return out
        out["ids"] = [clean_text(self.redact(m["id"]), 200) for m in models]
        out["owned_by"] = sorted({clean_text(str(m["owned_by"]), 100) for m in models
                                  if isinstance(m.get("owned_by"), str)})
        if self.model in out["ids"]:
            out["served_model"] = self.model
        elif len(out["ids"]) == 1:
            out["served_model"] = out["ids"][0]
        if not out["ids"]:
            out["error"] = "GET /models listed no model"
        return out

    def throughput(self) -> dict[str, Any] | None:
        """Requests answered so far and how many the endpoint works on at once: ``requests``,
        ``seconds`` (first sent to last answered), ``requests_per_s``, ``fastest`` (the shortest
        attempt, s) and ``parallelism`` = requests_per_s x fastest, about 1 for a server that
        answers one request at a time however many are in flight (None before two answers)."""
        with self._state_lock:
            timings = list(self._timings)
        if len(timings) < 2:
            return None
        start = min(t[0] for t in timings)
        end = max(t[1] for t in timings)
        fastest = min(t[1] - t[0] for t in timings)
        seconds = max(end - start, 1e-9)
        rate = len(timings) / seconds
        return {"requests": len(timings), "seconds": round(seconds, 3), "requests_per_s": round(rate, 3),
                "fastest": round(fastest, 3), "parallelism": round(rate * fastest, 2)}

    def key_settings(self) -> dict[str, Any]:
        """The decoding settings that change the answer and differ from the defaults (they enter
        the cache key): temperature (when not 0), seed, top_p, max reply tokens, the structured
        output mode sent (when not JSON mode) and extra body fields."""
        out: dict[str, Any] = {}
        if self.temperature:
            out["temperature"] = float(self.temperature)
        for name in ("seed", "top_p", "max_tokens"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        mode = self.resolved_structured()
        if mode != "json_object":
            out["structured"] = mode
        if self.extra_body:
            out["extra_body"] = json.loads(self.redact(json.dumps(self.extra_body, sort_keys=True)))
        return out

    def settings(self) -> dict[str, Any]:
        """Decoding settings, retry procedure and the endpoint's model list (for the run record and
        the disclosure report); no secrets."""
        mode = self.resolved_structured()
        return {
            "model": self.model, "base_url": self.display_url, "temperature": self.temperature,
            "seed": self.seed, "top_p": self.top_p, "structured": mode, "structured_option": self.structured,
            "max_tokens": self.max_tokens,
            "extra_body": json.loads(self.redact(json.dumps(self.extra_body))),
            "timeout": self.timeout, "retries": self.retries, "backoff": self.backoff,
            "max_backoff": self.max_backoff, "max_retry_after": self.max_retry_after, "repair": self.repair,
            "served_models": self.identify(),
        }

    def close(self) -> None:
        self.openai_client.close()

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

    def request_body(self, messages: list[dict[str, str]], low: int | None = None,
                     high: int | None = None) -> dict[str, Any]:
        """The request body; with the scale (``low``, ``high``) the schema modes send the judgment
        schema."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        fmt = response_format(self.resolved_structured(), low, high)
        if fmt is not None:
            body["response_format"] = fmt
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.seed is not None:
            body["seed"] = self.seed
        if self.top_p is not None:
            body["top_p"] = self.top_p
        body.update(self.extra_body)
        return body

    def _repair_messages(self, messages: list[dict[str, str]], content: str, reason: str, low: int,
                         high: int) -> list[dict[str, str]]:
        """``messages`` + the invalid reply + a short request to repair it (reason and schema)."""
        schema = json.dumps(judgment_schema(low, high), separators=(",", ":"))
        note = (f"Your reply is not a valid judgment: {reason}. Reply again with one JSON object only, matching "
                f"this JSON schema: {schema}. The rationale must be your own reason for the score, not text "
                "copied from the instructions.")
        return [*messages, {"role": "assistant", "content": content[:2000]}, {"role": "user", "content": note}]

    def _create_kwargs(self, body: dict[str, Any]) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments that send exactly ``body``: the model and
        the messages as arguments, every other field through ``extra_body`` (so a server-specific
        form such as llama-cpp-python's schema inside ``json_object`` is sent as written)."""
        rest = {k: v for k, v in body.items() if k not in ("model", "messages")}
        return {"model": body["model"], "messages": body["messages"], "extra_body": rest,
                "extra_headers": self.request_headers}

    def _post(self, body: dict[str, Any]) -> tuple[int, Any, bytes]:
        """One chat-completions request through the openai client, with a total deadline of
        ``timeout`` seconds; returns (status, headers, body bytes) for any HTTP answer.

        The client's own timeout bounds each read; the total deadline holds however the server
        dribbles its bytes: the request runs in a helper thread, and at the deadline the socket is
        shut down (when known) and the helper is given up.

        Raises:
            _AttemptTimeout, _TooLarge, _Unreachable (could not connect), _Broken (the connection
            broke after it was made).
        """
        box: dict[str, Any] = {}
        done = threading.Event()
        abort = threading.Event()

        def run() -> None:
            try:
                box["result"] = self._send(body, box, abort)
            except BaseException as exc:  # handed to the waiting thread
                box["exc"] = exc
            finally:
                done.set()

        helper = threading.Thread(target=run, name="judge-request", daemon=True)
        helper.start()
        if not done.wait(self.timeout):
            abort.set()
            _shutdown(box.get("response"))
            raise _AttemptTimeout()
        if "exc" in box:
            raise _transport_error(box["exc"], self.openai_module)
        return box["result"]

    def _send(self, body: dict[str, Any], box: dict[str, Any], abort: threading.Event) -> tuple[int, Any, bytes]:
        """The request itself (in the helper thread of `_post`): the reply read in chunks up to
        `MAX_BODY_BYTES`; an HTTP error status is an answer too."""
        openai = self.openai_module
        try:
            with self.openai_client.chat.completions.with_streaming_response.create(**self._create_kwargs(body)) as r:
                box["response"] = r.http_response
                chunks: list[bytes] = []
                size = 0
                for chunk in r.iter_bytes():
                    if abort.is_set():
                        raise _AttemptTimeout()
                    size += len(chunk)
                    if size > MAX_BODY_BYTES:
                        raise _TooLarge()
                    chunks.append(chunk)
                return r.status_code, r.headers, b"".join(chunks)
        except openai.APIStatusError as exc:
            return exc.status_code, exc.response.headers, exc.response.content[:MAX_BODY_BYTES]

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

    def _transport_failure(self, exc: Exception) -> tuple[str, str]:
        """(error, cause) of an attempt that got no HTTP answer."""
        if isinstance(exc, _AttemptTimeout):
            return f"timeout after {self.timeout:g}s (total per attempt)", "timeout"
        if isinstance(exc, _TooLarge):
            return f"reply larger than {MAX_BODY_BYTES} bytes", "too_large"
        if isinstance(exc, _Unreachable):
            return f"connection error: {exc}", "connection"
        return f"connection error (reset after connecting): {exc}", "reset"  # connected, then it broke

    def _overloaded(self, status: int, headers: Any, data: bytes, wait: float) -> tuple[str, str, float]:
        """(error, cause, seconds to wait) of an HTTP 429 or 5xx answer: its ``Retry-After``, cut
        to ``max_retry_after``, replaces the backoff; a 429's pauses every worker."""
        text = data[:200].decode("utf-8", "replace").strip()
        error = f"HTTP {status}" + (f": {text}" if text else "")
        after = _retry_after(headers.get("Retry-After"))
        if after is not None:
            wait = min(after, self.max_retry_after)
            if after > self.max_retry_after:
                error += f" (Retry-After {after:g}s cut to --max-wait {self.max_retry_after:g}s)"
            if status == 429:
                self._pause(wait)
        return error, "http_429" if status == 429 else "http_5xx", wait

    # -- one judgment ----------------------------------------------------------------------------
    def judge(self, messages: list[dict[str, str]], low: int, high: int, *,
              placeholders: tuple[str, ...] | list[str] = ()) -> Verdict:
        """Send ``messages`` until a valid judgment arrives or the attempts run out.

        ``placeholders``: the ``<...>`` texts of the prompt's reply format; a rationale that copies
        one is invalid (see `parse_reply`).
        """
        served = self.identify().get("served_model")
        body = self.request_body(messages, low, high)
        last_error = "no attempt made"
        last_kind = "transport"
        raw: str | None = None
        attempts = 0
        causes: list[str] = []
        usage = [0, 0]
        returned_model: list[str | None] = [None]
        invalid_contents: set[str] = set()

        def verdict(score: int | None, rationale: str | None, error: str | None, kind: str) -> Verdict:
            return Verdict(score, rationale, None if error is None else clean_text(self.redact(error)), kind, attempts,
                           None if raw is None else self.redact(raw), usage[0], usage[1], returned_model[0],
                           tuple(causes), served)

        for attempt in range(self.retries + 1):
            self._wait_for_pause()
            if self._stop.is_set():
                return verdict(None, None, f"cancelled before an answer (after {attempts} attempt(s))", "limit")
            if self.budget is not None and not self.budget.reserve():
                return verdict(None, None, f"not asked: {self.budget.exhausted}", "limit")
            attempts += 1
            wait = min(self.backoff * (2**attempt), self.max_backoff)
            cause = None
            stop_retrying = False
            sent = time.monotonic()
            try:
                status, headers, data = self._post(body)
            except (_AttemptTimeout, _TooLarge, _Unreachable, _Broken) as exc:
                last_error, cause = self._transport_failure(exc)
                last_kind = "transport"
            else:
                with self._state_lock:
                    self._answered = True
                    self._timings.append((sent, time.monotonic()))
                if status == 200:
                    content, why = self._completion(data, usage, returned_model)
                    if why is not None:
                        last_error, last_kind, cause = why, "transport", "not_a_completion"
                        raw = data[:2000].decode("utf-8", "replace")
                    else:
                        raw = content[:2000] if isinstance(content, str) else short_repr(content, 2000)
                        try:
                            score, rationale = parse_reply(content, low, high, placeholders)
                        except ReplyError as exc:
                            last_error, last_kind, cause = str(exc), "response", exc.cause
                            text = content if isinstance(content, str) else raw
                            if text in invalid_contents:
                                cause, stop_retrying = "identical_reply", True
                                last_error = f"{exc} (the same reply again: not retried further)"
                            invalid_contents.add(text)
                            if self.repair and not stop_retrying and attempt < self.retries:
                                body = self.request_body(self._repair_messages(messages, text, str(exc), low, high),
                                                  low, high)
                        else:
                            self._note_unreachable(False, "")
                            return verdict(score, rationale, None, "ok")
                elif status in (401, 403, 404):
                    text = clean_text(data[:300].decode("utf-8", "replace").strip())
                    self.cancel()
                    raise JudgeFatalError(self.redact(
                        f"{self.display_url}/chat/completions answered HTTP {status}: {text} "
                        "(check OPENAI_BASE_URL, OPENAI_API_KEY and --model)"))
                elif status == 429 or status >= 500:
                    last_error, cause, wait = self._overloaded(status, headers, data, wait)
                    last_kind = "transport"
                else:
                    detail = data[:300].decode("utf-8", "replace").strip()
                    causes.append(f"http_{status}")
                    self._note_unreachable(False, "")
                    return verdict(None, None, f"HTTP {status}: {detail}", "request")
            causes.append(cause or "other")
            if stop_retrying:
                break
            if attempt < self.retries:
                self._stop.wait(wait)
        self._note_unreachable(all(c == "connection" for c in causes) and bool(causes), last_error)
        return verdict(None, None, f"invalid after {attempts} attempt(s): {last_error}", last_kind)

    def _completion(self, data: bytes, usage: list[int], returned_model: list[str | None]) -> tuple[Any, str | None]:
        """(content, None) for a chat completion body, else (None, why it is not one)."""
        try:
            obj = load_json(data)
        except ValueError as exc:
            head = data[:60].decode("utf-8", "replace").strip().replace("\n", " ")
            return None, f"endpoint reply is not a chat completion (not JSON: {exc}; starts {head!r})"
        return self.completion_object(obj, usage, returned_model)

    def completion_object(self, obj: Any, usage: list[int],
                          returned_model: list[str | None]) -> tuple[Any, str | None]:
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
            returned_model[0] = clean_text(obj["model"], 200)
        try:
            content = obj["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return None, "endpoint reply is not a chat completion (no choices[0].message.content)"
        return content, None
