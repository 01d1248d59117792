"""A thin adapter over the official ``openai`` Python client for any OpenAI-compatible
chat-completions endpoint (OpenAI, vLLM, llama.cpp's ``llama-server``, Ollama ...), and strict
reply parsing.

The endpoint follows the OpenAI client conventions: ``OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``) and ``OPENAI_API_KEY`` from the environment (no ``Authorization``
header when the key is unset, for local servers). Requests are sent with temperature 0 unless
another temperature is asked for.

The HTTP work, retries included, is the ``openai`` client's (the ``judge`` extra): its
``base_url``, authentication, connection pool, timeouts, error classes and retry loop
(``max_retries``: timeouts, connection errors, 429 and 5xx, waiting a ``Retry-After``). It is
imported only when a client is created. What it has no setting for is a hook on its
``http_client``'s transport (`_transport`): each attempt is counted against the run's request
budget (``--max-requests``) and its cause recorded, a ``Retry-After`` is capped at ``--max-wait``
and pauses every worker, and each attempt has a total deadline. Re-asking a reply that is not a
valid judgment (with a repair message) is a content retry, made here.

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

The total deadline (``timeout``) covers connecting, sending, waiting and reading the whole body,
so a server that trickles its reply cannot hold a request longer; time queued at the server
counts too (see `JudgeQueueingWarning`).

Structured output (``structured``): ``json_object`` sends ``response_format={"type":
"json_object"}`` (JSON mode), ``json_schema`` the OpenAI form ``{"type": "json_schema",
"json_schema": {"name", "strict", "schema"}}`` (OpenAI, vLLM, Ollama, llama.cpp's ``llama-server``),
``schema-in-object`` llama-cpp-python's form ``{"type": "json_object", "schema": ...}``, ``none``
nothing; ``auto`` picks one from what ``GET /models`` says about the server
(`AUTO_STRUCTURED`), ``json_object`` when it cannot tell. A server that rejects the form sent
(HTTP 400/422 naming it) gets the next of `STRUCTURED_FALLBACK` from then on. The schema
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
import sys
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
    "STRUCTURED_FALLBACK",
    "OPENAI_MAX_RETRY_AFTER",
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

#: the structured-output mode sent after the endpoint rejected one (HTTP 400/422 naming it):
#: a schema form falls back to JSON mode, JSON mode to nothing
STRUCTURED_FALLBACK = {"schema": "json_object", "json_object": "none"}

#: the longest ``Retry-After`` the openai client waits (a longer one it does not retry); a
#: ``max_retry_after`` above it acts as this
OPENAI_MAX_RETRY_AFTER = 120.0

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


class _Attempts:
    """What the attempts of one judgment did (kept per thread while `JudgeClient.judge` runs):
    their count, each failed one's cause and the last failure's message."""

    def __init__(self) -> None:
        self.count = 0
        self.causes: list[str] = []
        self.error = "no attempt made"


class _Stopped(Exception):
    """Raised by the transport instead of an attempt (budget reached, run cancelled); made an
    ``openai.OpenAIError`` subclass in `_stopped_class`, which the client re-raises unretried."""


def _stopped_class(openai: Any) -> type[Exception]:
    return type("JudgeAttemptStopped", (_Stopped, openai.OpenAIError), {})


def _cause_of(exc: BaseException) -> str:
    """``timeout``, ``connection`` (could not connect) or ``reset`` (broke after connecting)."""
    name = type(exc).__name__
    if name.endswith("Timeout") or name == "TimeoutException":
        return "timeout"
    if name in ("ConnectError", "UnsupportedProtocol", "InvalidURL") or isinstance(exc, ConnectionRefusedError):
        return "connection"
    return "reset"


def _shutdown(response: Any) -> None:
    """Shut the socket under an HTTP response down, when it can be found (ends a trickle)."""
    try:
        stream = response.extensions.get("network_stream") if response is not None else None
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, AttributeError, ValueError):
        pass


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``urllib.request.getproxies``), or None."""
    import urllib.request

    proxies = urllib.request.getproxies()
    host = urlsplit(url).hostname or ""
    if not proxies or urllib.request.proxy_bypass(host):
        return None
    return proxies.get(urlsplit(url).scheme) or proxies.get("all")


def _http_module(openai: Any) -> Any:
    """The HTTP library the installed openai client is built on (``httpx``, or ``httpx2`` in
    newer releases): the base class of its documented ``DefaultHttpxClient``."""
    base = next(c for c in openai.DefaultHttpxClient.__mro__ if c.__name__ == "Client"
                and not c.__module__.startswith("openai"))
    return sys.modules[base.__module__.split(".")[0]]


def _openai_class(openai: Any, owner: JudgeClient) -> type:
    """``openai.OpenAI`` whose wait after an attempt that got no answer (timeout, connection
    error) follows ``backoff``/``max_backoff`` instead of the client's fixed 0.5 s doubling to 8 s
    (it has no setting for it; answers carry the wait as ``Retry-After``, see `_transport`). A
    client version without this method keeps its own schedule."""

    class OpenAI(openai.OpenAI):  # type: ignore[misc, valid-type]
        def _calculate_retry_timeout(self, remaining_retries: int, options: Any,
                                     response_headers: Any = None) -> float:
            rec = getattr(owner._local, "attempts", None)
            if rec is not None and owner._stop.is_set():
                return 0.0  # cancelled: the next attempt is refused at once (`_transport`)
            if response_headers is None and rec is not None:
                return owner._backoff(rec.count)
            return super()._calculate_retry_timeout(remaining_retries, options, response_headers)

    return OpenAI


def _attempt_failed(owner: JudgeClient, rec: _Attempts, exc: BaseException, request: Any, hx: Any) -> None:
    """Record an attempt that got no answer (its cause and message); a total-deadline timeout or
    an over-long body is raised as the httpx error openai retries, anything else is re-raised by
    the caller as it was."""
    cause = "timeout" if isinstance(exc, TimeoutError) else getattr(exc, "cause", None) or _cause_of(exc)
    rec.causes.append(cause)
    rec.error = {
        "timeout": f"timeout after {owner.timeout:g}s (total per attempt)",
        "too_large": f"reply larger than {MAX_BODY_BYTES} bytes",
        "connection": f"connection error: {type(exc).__name__}: {exc}",
    }.get(cause, f"connection error (reset after connecting): {type(exc).__name__}: {exc}")
    if cause == "timeout":
        raise hx.ReadTimeout(rec.error, request=request) from None
    if cause == "too_large":
        raise hx.ReadError(rec.error, request=request) from None


def _answer_headers(owner: JudgeClient, rec: _Attempts, response: Any, data: bytes, hx: Any) -> Any:
    """The headers openai sees for an answered attempt: for a 429 or 5xx, the cause and message
    recorded and ``Retry-After`` set to the wait (the server's, cut to ``max_retry_after``; a 429
    pauses every worker that long; else the judge's backoff); a status the judge does not retry
    marked ``x-should-retry: false``."""
    status = response.status_code
    headers = hx.Headers(response.headers)
    if status == 429 or status >= 500:
        rec.causes.append("http_429" if status == 429 else "http_5xx")
        try:  # the body as sent (gzip ...) decoded for the message
            text = hx.Response(status, headers=response.headers, stream=hx.ByteStream(data)).read()
        except Exception:  # noqa: BLE001  (an undecodable body: its raw bytes)
            text = data
        text = text[:200].decode("utf-8", "replace").strip()
        rec.error = f"HTTP {status}" + (f": {text}" if text else "")
        after = _retry_after(headers.get("Retry-After"))
        headers.pop("retry-after-ms", None)
        wait = owner._backoff(rec.count)
        if after is not None:
            cap = min(owner.max_retry_after, OPENAI_MAX_RETRY_AFTER)
            wait = min(after, cap)
            if after > cap:
                rec.error += f" (Retry-After {after:g}s cut to --max-wait {cap:g}s)"
            if status == 429:
                owner._pause(wait)
        # openai waits a Retry-After of (0, 120] seconds, else its own backoff
        headers["Retry-After"] = f"{max(wait, 0.001):.6f}"
    elif status >= 400:
        headers["x-should-retry"] = "false"
    return headers


def _transport(owner: JudgeClient, hx: Any) -> Any:
    """The ``http_client`` transport of `JudgeClient`: the hooks the openai client has no setting
    for, around each HTTP attempt of a judgment (requests outside `JudgeClient.judge`, such as
    ``GET /models`` and the Batch API's, pass through untouched):

    * before it: wait while a 429 pauses every worker; stop (not retried) when the run was
      cancelled or its request budget is spent, else count the attempt against it;
    * during it: a total deadline (``timeout``) over connecting, sending and reading the whole
      body, however slowly the server dribbles it; a body over `MAX_BODY_BYTES` fails;
    * after it: record the failure's cause and message; a 429's or 5xx's ``Retry-After`` cut to
      ``max_retry_after`` (and a 429 pauses every worker that long); statuses the judge does not
      retry are marked ``x-should-retry: false`` (openai would retry a 408 or 409).
    """

    class AttemptTransport(hx.BaseTransport):
        def __init__(self) -> None:
            # an explicit transport turns the client's own proxy lookup off: the proxy the
            # environment names for the endpoint (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY) is set here
            # (the connection pool holds every request in flight, as the client's default does)
            limits = hx.Limits(max_connections=max(100, 2 * owner.concurrency),
                               max_keepalive_connections=max(20, owner.concurrency))
            self.inner = hx.HTTPTransport(proxy=_env_proxy(owner.base_url), limits=limits)

        def close(self) -> None:
            self.inner.close()

        def handle_request(self, request: Any) -> Any:
            rec: _Attempts | None = getattr(owner._local, "attempts", None)
            if rec is None:
                return self.inner.handle_request(request)
            owner._wait_for_pause()
            if owner._stop.is_set():
                raise owner._stopped(f"cancelled before an answer (after {rec.count} attempt(s))")
            if owner.budget is not None and not owner.budget.reserve():
                raise owner._stopped(f"not asked: {owner.budget.exhausted}")
            rec.count += 1
            sent = time.monotonic()
            try:
                response, data = self._within_deadline(request)
            except BaseException as exc:
                if isinstance(exc, _Stopped):
                    raise
                _attempt_failed(owner, rec, exc, request, hx)
                raise
            with owner._state_lock:
                owner._answered = True
                owner._timings.append((sent, time.monotonic()))
            headers = _answer_headers(owner, rec, response, data, hx)
            return hx.Response(response.status_code, headers=headers, stream=hx.ByteStream(data), request=request,
                               extensions=response.extensions)

        def _within_deadline(self, request: Any) -> tuple[Any, bytes]:
            box: dict[str, Any] = {}
            done = threading.Event()
            abort = threading.Event()

            def run() -> None:
                try:
                    response = box["response"] = self.inner.handle_request(request)
                    chunks: list[bytes] = []
                    size = 0
                    try:
                        for chunk in response.stream:
                            if abort.is_set():
                                return
                            size += len(chunk)
                            if size > MAX_BODY_BYTES:
                                error = OSError("reply too large")
                                error.cause = "too_large"  # type: ignore[attr-defined]
                                raise error
                            chunks.append(chunk)
                    finally:
                        response.close()
                    box["data"] = b"".join(chunks)
                except BaseException as exc:  # handed to the waiting thread
                    box["exc"] = exc
                finally:
                    done.set()

            helper = threading.Thread(target=run, name="judge-request", daemon=True)
            helper.start()
            if not done.wait(owner.timeout):
                abort.set()
                _shutdown(box.get("response"))
                raise TimeoutError()
            if "exc" in box:
                raise box["exc"]
            return box["response"], box["data"]

    return AttemptTransport()


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
            ``request`` counts: the openai client's HTTP retries and the re-asks of invalid
            replies together); a fixed number, so the procedure can be disclosed.
        backoff: first wait in seconds; doubles after each failed attempt, capped at ``max_backoff``.
        max_retry_after: the longest wait for a ``Retry-After`` (``--max-wait``): a longer one is
            cut to it (the pause of every worker too), so a server's ``Retry-After: 100000`` costs
            at most this many seconds per attempt; above `OPENAI_MAX_RETRY_AFTER` (120 s, the
            longest the openai client waits) it acts as 120.
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
            off by default; `judge` sets ``max_retries`` per request; its ``http_client`` carries
            the attempt hooks of `_transport`).
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
        self._fallback: str | None = None  # the mode sent after the endpoint rejected one
        self._local = threading.local()  # the `_Attempts` of the judgment each thread is making
        self._stopped = _stopped_class(openai)
        hx = _http_module(openai)
        self.openai_client = _openai_class(openai, self)(
            base_url=base, api_key=key or "unused", max_retries=0, timeout=self.timeout,
            http_client=openai.DefaultHttpxClient(transport=_transport(self, hx), timeout=self.timeout))
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
        unknown; this asks the endpoint once); after the endpoint rejected a mode, the next one of
        `STRUCTURED_FALLBACK`."""
        if self._fallback is not None:
            return self._fallback
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
        current request (and the openai client's wait before its next attempt, when it already
        began: at most ``max_retry_after`` or ``max_backoff``), and new ones are not sent."""
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

    def _backoff(self, attempts: int) -> float:
        """The wait after the ``attempts``-th attempt failed: ``backoff`` doubling, up to ``max_backoff``."""
        return min(self.backoff * 2 ** max(attempts - 1, 0), self.max_backoff)

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

    def _ask(self, body: dict[str, Any], retries: int) -> tuple[int, bytes]:
        """One request through the openai client, which makes up to ``retries`` more HTTP attempts
        itself (timeouts, connection errors, 429, 5xx; see `_transport`): (status, body bytes) of
        the last answer; raises the client's ``APIConnectionError``/``APITimeoutError`` when no
        attempt was answered, `_Stopped` when the budget or a cancel stopped it."""
        openai = self.openai_module
        api = self.openai_client.with_options(max_retries=retries)
        try:
            r = api.chat.completions.with_raw_response.create(**self._create_kwargs(body))
        except openai.APIStatusError as exc:
            return exc.status_code, exc.response.content
        return r.http_response.status_code, r.http_response.content

    def _reject_structured(self, body: dict[str, Any], data: bytes) -> bool:
        """Whether a 400/422 answer rejects the ``response_format`` sent (its text names it); if so,
        every later request uses the next mode of `STRUCTURED_FALLBACK`."""
        text = data[:2000].decode("utf-8", "replace").lower()
        sent = body.get("response_format")
        if sent is None or not any(w in text for w in ("response_format", "json_schema",
                                                                                "schema", "json_object")):
            return False
        mode = "json_object" if sent == {"type": "json_object"} else "schema"
        with self._state_lock:  # only ever further down (a stale request of another thread may come back)
            if self._fallback != "none":
                self._fallback = STRUCTURED_FALLBACK[mode] if self._fallback is None or mode == "json_object" \
                    else self._fallback
        return True

    # -- one judgment ----------------------------------------------------------------------------
    def judge(self, messages: list[dict[str, str]], low: int, high: int, *,
              placeholders: tuple[str, ...] | list[str] = ()) -> Verdict:
        """Send ``messages`` until a valid judgment arrives or the attempts run out.

        HTTP failures are retried by the openai client (``max_retries``: what is left of
        ``retries``); a reply that is not a valid judgment is re-asked here, with a repair message.
        ``placeholders``: the ``<...>`` texts of the prompt's reply format; a rationale that copies
        one is invalid (see `parse_reply`).
        """
        served = self.identify().get("served_model")
        body = self.request_body(messages, low, high)
        rec = _Attempts()
        last_kind = "transport"
        raw: str | None = None
        usage = [0, 0]
        returned_model: list[str | None] = [None]
        invalid_contents: set[str] = set()

        def verdict(score: int | None, rationale: str | None, error: str | None, kind: str) -> Verdict:
            return Verdict(score, rationale, None if error is None else clean_text(self.redact(error)), kind, rec.count,
                           None if raw is None else self.redact(raw), usage[0], usage[1], returned_model[0],
                           tuple(rec.causes), served)

        self._local.attempts = rec
        try:
            allowed = self.retries + 1  # attempts of this judgment (a structured-output fallback adds one)
            while rec.count < allowed:
                try:
                    status, data = self._ask(body, allowed - rec.count - 1)
                except _Stopped as exc:
                    return verdict(None, None, str(exc), "limit")
                except (self.openai_module.APIConnectionError, self.openai_module.APITimeoutError):
                    last_kind = "transport"
                    break  # every attempt left went unanswered: the transport recorded why
                if status in (401, 403, 404):
                    text = clean_text(data[:300].decode("utf-8", "replace").strip())
                    self.cancel()
                    raise JudgeFatalError(self.redact(
                        f"{self.display_url}/chat/completions answered HTTP {status}: {text} "
                        "(check OPENAI_BASE_URL, OPENAI_API_KEY and --model)"))
                if status == 429 or status >= 500:
                    last_kind = "transport"
                    break  # the attempts ran out on overload answers
                if status in (400, 422) and self._reject_structured(body, data):
                    rec.causes.append("structured_unsupported")
                    rec.error = f"HTTP {status}: the endpoint rejected response_format"
                    body = self.request_body(body["messages"], low, high)
                    allowed += 1
                    continue  # asked again at once in the next mode (an attempt of this judgment)
                if status != 200:
                    rec.causes.append(f"http_{status}")
                    self._note_unreachable(False, "")
                    detail = data[:300].decode("utf-8", "replace").strip()
                    return verdict(None, None, f"HTTP {status}: {detail}", "request")
                content, why = self._completion(data, usage, returned_model)
                stop_retrying = False
                if why is not None:
                    rec.error, last_kind = why, "transport"
                    rec.causes.append("not_a_completion")
                    raw = data[:2000].decode("utf-8", "replace")
                else:
                    raw = content[:2000] if isinstance(content, str) else short_repr(content, 2000)
                    try:
                        score, rationale = parse_reply(content, low, high, placeholders)
                    except ReplyError as exc:
                        rec.error, last_kind, cause = str(exc), "response", exc.cause
                        text = content if isinstance(content, str) else raw
                        if text in invalid_contents:
                            cause, stop_retrying = "identical_reply", True
                            rec.error = f"{exc} (the same reply again: not retried further)"
                        rec.causes.append(cause)
                        invalid_contents.add(text)
                        if self.repair and not stop_retrying and rec.count < allowed:
                            body = self.request_body(self._repair_messages(messages, text, str(exc), low, high),
                                                     low, high)
                    else:
                        self._note_unreachable(False, "")
                        return verdict(score, rationale, None, "ok")
                if stop_retrying or rec.count >= allowed:
                    break
                self._stop.wait(self._backoff(rec.count))  # a content retry: ours, after the same backoff
        finally:
            self._local.attempts = None
        self._note_unreachable(all(c == "connection" for c in rec.causes) and bool(rec.causes), rec.error)
        return verdict(None, None, f"invalid after {rec.count} attempt(s): {rec.error}", last_kind)


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
