"""The judge's endpoint client: the official ``openai`` Python client plus a thin adapter.

The ``openai`` client (the ``judge`` extra, imported when a client is created) does the HTTP work:
``base_url`` (OpenAI, vLLM, llama.cpp's ``llama-server``, Ollama ...), authentication, the
connection pool, timeouts, error classes, the chat-completions and Batch API resources, and the
retry loop (``max_retries``: timeouts, connection errors, HTTP 429 and 5xx, waiting a
``Retry-After``, given in seconds, milliseconds or as a date). The endpoint follows its
conventions: ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``) and ``OPENAI_API_KEY``
(no ``Authorization`` header when unset, for local servers).

The adapter keeps only what the client has no setting for:

* a transport hook on its ``http_client`` (`_AttemptHook`, public httpx transport API), around
  each HTTP attempt of a judgment: it waits while a 429 pauses every worker, counts the attempt
  against the run's request budget (``--max-requests``; a spent budget or a cancelled run stops it
  unretried), records the attempt's cause (``timeout``, ``connection``, ``reset``, ``http_429``,
  ``http_5xx``), and keeps a *total* deadline per attempt (``timeout``: connecting, sending,
  waiting and reading the whole body). httpx's timeouts are per operation, so a server that
  trickles its reply one byte at a time would never time out; the hook reads the reply in a helper
  thread and gives up at the deadline (shutting the socket down once it is known). A body over
  `MAX_BODY_BYTES` fails the attempt. The proxy the environment names is set on the wrapped
  transport (an explicit transport turns httpx's own lookup off);
* two overridden retry methods of the client (`_client_class`): only 429 and 5xx are retried (the
  client would also retry 408/409 and would not retry a ``Retry-After`` above 120 s), and the wait
  before a retry is the server's ``Retry-After`` cut to ``max_retry_after`` (``--max-wait``; a 429
  pauses every worker that long), else ``backoff`` doubling up to ``max_backoff``, nothing once
  the run is cancelled;
* the content retry: a reply that is not a valid judgment is asked again with a repair message
  (`repair_messages`); an answer identical to an earlier invalid one ends the retries (asking again
  would give it again). The client never retries an HTTP 200;
* structured output (``structured``): ``json_object`` sends ``response_format={"type":
  "json_object"}``, ``json_schema`` the OpenAI form ``{"type": "json_schema", "json_schema":
  {"name", "strict", "schema"}}`` (OpenAI, vLLM, Ollama, ``llama-server``), ``schema-in-object``
  llama-cpp-python's ``{"type": "json_object", "schema": ...}``, ``none`` nothing; ``auto`` picks
  one from what ``GET /models`` says (`AUTO_STRUCTURED`), ``json_object`` when it cannot tell. A
  server that rejects the form sent (HTTP 400/422 naming it) gets the next of
  `STRUCTURED_FALLBACK` from then on. The schema is `judgment_schema`;
* the endpoint's identity (``GET /models``), the throughput measurement, the settings that enter
  the cache key, and redaction: the API key, ``Authorization`` values and URL credentials never
  appear in a message, error or stored reply.

Outcome of one judgment (`Verdict`), never an exception for a single bad item: ``ok`` (a valid
judgment); ``response`` (well-formed chat completions whose content is not a valid judgment on
every attempt); ``transport`` (timeouts, connection errors, 5xx or 429, or a body that is not a
chat completion: a gateway's HTML page, truncated or absurd JSON); ``request`` (the endpoint
rejected the request, HTTP 400/413/422 ...: not retried); ``limit`` (a request or token limit
was reached, or the run was cancelled). HTTP 401/403/404 mean the configuration is wrong (key,
URL, model) and raise `JudgeFatalError`; so does an endpoint that cannot be reached at all.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import sys
import threading
import time
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from ..errors import JudgeFatalError, JudgeQueueingWarning
from .budget import Budget
from .replies import Verdict, clean_text, judgment_schema, load_json, read_reply, redact, repair_messages

__all__ = ["JudgeClient", "JudgeFatalError", "JudgeQueueingWarning", "STRUCTURED_MODES", "STRUCTURED_FALLBACK",
           "AUTO_STRUCTURED", "judgment_schema", "response_format", "DEFAULT_BASE_URL", "INSTALL_HINT"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
INSTALL_HINT = 'pip install "reteco-measures[judge]"'
#: the largest response body read (bytes); a longer body is a transport failure
MAX_BODY_BYTES = 8 * 1024 * 1024
#: values of ``structured`` (``--structured``)
STRUCTURED_MODES = ("auto", "json_object", "json_schema", "schema-in-object", "none")
#: ``structured="auto"``: the ``owned_by`` a server reports in ``GET /models`` -> the form its
#: documentation describes (vLLM, llama.cpp's llama-server, Ollama and OpenAI document
#: ``json_schema``; llama-cpp-python a ``schema`` inside ``json_object``); else ``json_object``
AUTO_STRUCTURED = {"vllm": "json_schema", "llamacpp": "json_schema", "library": "json_schema",
                   "ollama": "json_schema", "openai": "json_schema", "system": "json_schema",
                   "me": "schema-in-object"}
#: the mode sent after the endpoint rejected one (HTTP 400/422 naming it): a schema form falls
#: back to JSON mode, JSON mode to nothing
STRUCTURED_FALLBACK = {"schema": "json_object", "json_object": "none"}


def response_format(mode: str, low: int | None = None, high: int | None = None) -> dict[str, Any] | None:
    """The ``response_format`` field for a (resolved) structured-output ``mode`` (None: no field).
    Without a scale (``low``/``high`` None) the schema modes fall back to JSON mode."""
    if mode not in STRUCTURED_MODES[1:]:
        raise ValueError(f"structured output must be one of {', '.join(STRUCTURED_MODES)}, not {mode!r}")
    if mode == "none":
        return None
    if mode == "json_object" or low is None or high is None:
        return {"type": "json_object"}
    schema = judgment_schema(low, high)
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "judgment", "strict": True, "schema": schema}}
    return {"type": "json_object", "schema": schema}


class _Attempts:
    """The attempts of one judgment (kept per thread while `JudgeClient.judge` runs): their count,
    each failed one's cause, the last failure's message and the last HTTP status answered."""

    def __init__(self) -> None:
        self.count, self.causes, self.error, self.status = 0, [], "no attempt made", None


def _http_module(openai: Any) -> Any:
    """The httpx package the installed openai client is built on (``httpx``, or ``httpx2`` in newer
    releases): the one its documented ``DefaultHttpxClient`` subclasses."""
    base = next(c for c in openai.DefaultHttpxClient.__mro__[1:] if not c.__module__.startswith("openai"))
    return sys.modules[base.__module__.split(".")[0]]


def _client_class(openai: Any, owner: JudgeClient) -> type:
    """``openai.OpenAI`` with the judge's retry rule: only 429 and 5xx are retried, after the wait
    of `JudgeClient._retry_wait` (a client version without these methods keeps its own rule)."""

    class OpenAI(openai.OpenAI):  # type: ignore[misc, valid-type]
        def _should_retry(self, response: Any) -> bool:
            return response.status_code == 429 or response.status_code >= 500

        def _calculate_retry_timeout(self, remaining_retries: int, options: Any, response_headers: Any = None) -> float:
            if getattr(owner._local, "attempts", None) is None:
                return super()._calculate_retry_timeout(remaining_retries, options, response_headers)
            return owner._retry_wait(self._parse_retry_after_header(response_headers))

    return OpenAI


class _AttemptHook:
    """The ``http_client`` transport of `JudgeClient` (see the module docstring): budget, pause,
    cancel, cause and total deadline around each HTTP attempt of a judgment; other requests
    (``GET /models``, the Batch API's) pass through untouched."""

    def __init__(self, owner: JudgeClient, hx: Any, limits: Any) -> None:
        proxies = urllib.request.getproxies()
        proxy = None if urllib.request.proxy_bypass(urlsplit(owner.base_url).hostname or "") else (
            proxies.get(urlsplit(owner.base_url).scheme) or proxies.get("all"))
        self.owner, self.hx, self.inner = owner, hx, hx.HTTPTransport(proxy=proxy, limits=limits)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> _AttemptHook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def handle_request(self, request: Any) -> Any:
        owner, hx = self.owner, self.hx
        rec: _Attempts | None = getattr(owner._local, "attempts", None)
        if rec is None:
            return self.inner.handle_request(request)
        owner._before_attempt(rec)
        sent = time.monotonic()
        try:
            response, data = self._within_deadline(request)
        except Exception as exc:
            what = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, (TimeoutError, hx.TimeoutException)):
                cause, rec.error, retry_as = "timeout", f"timeout after {owner.timeout:g}s (total per attempt)", hx.ReadTimeout
            elif isinstance(exc, MemoryError):
                cause, rec.error, retry_as = "too_large", f"reply larger than {MAX_BODY_BYTES} bytes", hx.ReadError
            elif isinstance(exc, (hx.ConnectError, hx.UnsupportedProtocol)):
                cause, rec.error, retry_as = "connection", f"connection error: {what}", None
            else:
                cause, rec.error, retry_as = "reset", f"connection error (reset after connecting): {what}", None
            rec.causes.append(cause)
            if retry_as is None:
                raise
            raise retry_as(rec.error, request=request) from None  # as the httpx error the client retries
        owner._answered(rec, response.status_code, sent)
        return hx.Response(response.status_code, headers=response.headers, stream=hx.ByteStream(data),
                           request=request, extensions=response.extensions)

    def _within_deadline(self, request: Any) -> tuple[Any, bytes]:
        """The response and its whole body, or TimeoutError once ``timeout`` seconds passed (the
        helper thread is left to end with its socket, shut down when the response is known)."""
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                response = box["response"] = self.inner.handle_request(request)
                data = bytearray()
                try:
                    for chunk in response.stream:
                        data += chunk
                        if len(data) > MAX_BODY_BYTES:
                            raise MemoryError
                        if done.is_set():
                            return
                finally:
                    response.close()
                box["data"] = bytes(data)
            except BaseException as exc:  # handed to the waiting thread
                box["exc"] = exc
            finally:
                done.set()

        threading.Thread(target=run, name="judge-request", daemon=True).start()
        if not done.wait(self.owner.timeout):
            done.set()
            try:
                box["response"].extensions["network_stream"].get_extra_info("socket").shutdown(socket.SHUT_RDWR)
            except (KeyError, AttributeError, OSError):
                pass
            raise TimeoutError
        if "exc" in box:
            raise box["exc"]
        return box["response"], box["data"]


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
            off by default; `judge` sets ``max_retries`` per request; its ``http_client`` carries
            the attempt hook).
        openai_module: the ``openai`` module (its error classes).
        request_headers: the headers added to every request (``None``, or without a key the
            ``Authorization`` header left out).
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, retries: int = 3, backoff: float = 1.0, max_backoff: float = 60.0,
                 max_retry_after: float = 60.0, max_tokens: int | None = None, concurrency: int = 4,
                 extra_body: dict[str, Any] | None = None, temperature: float = 0.0, budget: Budget | None = None,
                 unreachable_after: int = 3, structured: str = "auto", seed: int | None = None,
                 top_p: float | None = None, repair: bool = True) -> None:
        try:
            import openai
        except ImportError:
            raise ImportError(f"the LLM judge needs the openai client: {INSTALL_HINT}") from None
        for bad, message in ((not model, "a judge model name is required (--model)"),
                             (retries < 0, "retries must be >= 0"), (not timeout > 0, "timeout must be > 0"),
                             (not max_retry_after >= 0, "max_retry_after (--max-wait) must be >= 0"),
                             (structured not in STRUCTURED_MODES,
                              f"structured output must be one of {', '.join(STRUCTURED_MODES)}, not {structured!r}"),
                             (top_p is not None and not 0 < top_p <= 1, "top_p must be in (0, 1]")):
            if bad:
                raise ValueError(message)
        self.openai_module, self.model = openai, model
        base = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        secrets = [key] if key else []
        try:  # URL credentials, and the Basic header the HTTP client makes of them
            parts = urlsplit(base)
            if parts.username or parts.password:
                secrets += [parts.username or "", parts.password or "",
                            base64.b64encode(f"{parts.username}:{parts.password or ''}".encode()).decode()]
        except ValueError:
            pass
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        self.base_url = base
        #: the base URL with credentials removed, for messages and reports
        self.display_url = self.redact(base)
        self.request_headers: dict[str, Any] | None = None if key else {"Authorization": openai.Omit()}
        self.timeout, self.retries = float(timeout), int(retries)
        self.backoff, self.max_backoff, self.max_retry_after = float(backoff), float(max_backoff), float(max_retry_after)
        self.structured, self.max_tokens, self.temperature = structured, max_tokens, float(temperature)
        self.seed = None if seed is None else int(seed)
        self.top_p = None if top_p is None else float(top_p)
        self.repair, self.extra_body, self.budget = bool(repair), dict(extra_body or {}), budget
        self.unreachable_after, self.concurrency = int(unreachable_after), max(1, concurrency)
        self._fallback: str | None = None  # the mode sent after the endpoint rejected one
        self._local = threading.local()  # the `_Attempts` of the judgment each thread is making
        self._stopped = type("JudgeAttemptStopped", (openai.OpenAIError,), {})  # re-raised unretried by openai
        self._pause_until, self._pause_lock, self._stop = 0.0, threading.Lock(), threading.Event()
        self._state_lock, self._answered_any, self._unreachable_streak = threading.Lock(), False, 0
        self._identity: dict[str, Any] | None = None  # what GET /models said (identify())
        self._identity_lock = threading.Lock()
        self._timings: list[tuple[float, float]] = []  # (sent, answered) of attempts that got a response
        hook = _AttemptHook(self, _http_module(openai), openai.DEFAULT_CONNECTION_LIMITS)
        self.openai_client = _client_class(openai, self)(
            base_url=base, api_key=key or "unused", max_retries=0, timeout=self.timeout,
            http_client=openai.DefaultHttpxClient(transport=hook, timeout=self.timeout))

    # -- the attempt hooks -----------------------------------------------------------------------
    def _before_attempt(self, rec: _Attempts) -> None:
        """Wait while a 429 pauses every worker; stop when cancelled or the budget is spent."""
        while not self._stop.is_set():
            with self._pause_lock:
                remaining = self._pause_until - time.monotonic()
            if remaining <= 0:
                break
            self._stop.wait(min(remaining, 0.5))
        if self._stop.is_set():
            raise self._stopped(f"cancelled before an answer (after {rec.count} attempt(s))")
        if self.budget is not None and not self.budget.reserve():
            raise self._stopped(f"not asked: {self.budget.exhausted}")
        rec.count += 1

    def _answered(self, rec: _Attempts, status: int, sent: float) -> None:
        rec.status = status
        if status == 429 or status >= 500:
            rec.causes.append("http_429" if status == 429 else "http_5xx")
        with self._state_lock:
            self._answered_any = True
            self._timings.append((sent, time.monotonic()))

    def _retry_wait(self, retry_after: float | None) -> float:
        """The wait before the openai client's next attempt: an answer's ``Retry-After`` cut to
        ``max_retry_after`` (a 429's pauses every worker), else the backoff; 0 once cancelled."""
        rec: _Attempts = self._local.attempts
        if self._stop.is_set():
            return 0.0  # the next attempt is refused at once
        if rec.status is None or retry_after is None or retry_after != retry_after:
            return self._backoff(rec.count)
        wait = min(max(retry_after, 0.0), self.max_retry_after)
        if rec.status == 429:
            with self._pause_lock:
                self._pause_until = max(self._pause_until, time.monotonic() + wait)
        return wait

    def _backoff(self, attempts: int) -> float:
        """The wait after the ``attempts``-th attempt failed: ``backoff`` doubling, up to ``max_backoff``."""
        return min(self.backoff * 2 ** max(attempts - 1, 0), self.max_backoff)

    # -- settings and identity -------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """``text`` without the key or URL credentials."""
        return redact(text, self._secrets)

    def resolved_structured(self) -> str:
        """The structured-output mode sent: ``structured``, or for ``auto`` the one
        `AUTO_STRUCTURED` gives for what ``GET /models`` reported (``json_object`` when
        unknown; this asks the endpoint once); after the endpoint rejected a mode, the next one of
        `STRUCTURED_FALLBACK`."""
        if self._fallback is not None or self.structured != "auto":
            return self._fallback or self.structured
        modes = {AUTO_STRUCTURED.get(str(o).lower()) for o in self.identify().get("owned_by") or []}
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
            models = [m for m in load_json(r.http_response.content[:MAX_BODY_BYTES]).get("data")
                      if isinstance(m, dict) and isinstance(m.get("id"), str)][:50]
        except openai.APIStatusError as exc:
            return {**out, "error": f"GET /models answered HTTP {exc.status_code}"}
        except openai.APIError as exc:
            return {**out, "error": clean_text(self.redact(f"GET /models failed: {type(exc.__cause__ or exc).__name__}"),
                                               200)}
        except (ValueError, AttributeError, TypeError):
            return {**out, "error": "GET /models did not answer a model list"}
        out["ids"] = ids = [clean_text(self.redact(m["id"]), 200) for m in models]
        out["owned_by"] = sorted({clean_text(m["owned_by"], 100) for m in models if isinstance(m.get("owned_by"), str)})
        out["served_model"] = self.model if self.model in ids else ids[0] if len(ids) == 1 else None
        out["error"] = None if ids else "GET /models listed no model"
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
        seconds = max(max(t[1] for t in timings) - min(t[0] for t in timings), 1e-9)
        fastest, rate = min(t[1] - t[0] for t in timings), len(timings) / seconds
        return {"requests": len(timings), "seconds": round(seconds, 3), "requests_per_s": round(rate, 3),
                "fastest": round(fastest, 3), "parallelism": round(rate * fastest, 2)}

    def key_settings(self) -> dict[str, Any]:
        """The decoding settings that change the answer and differ from the defaults (they enter
        the cache key): temperature (when not 0), seed, top_p, max reply tokens, the structured
        output mode sent (when not JSON mode) and extra body fields."""
        out: dict[str, Any] = {"temperature": float(self.temperature)} if self.temperature else {}
        out.update({n: getattr(self, n) for n in ("seed", "top_p", "max_tokens") if getattr(self, n) is not None})
        if self.resolved_structured() != "json_object":
            out["structured"] = self.resolved_structured()
        if self.extra_body:
            out["extra_body"] = json.loads(self.redact(json.dumps(self.extra_body, sort_keys=True)))
        return out

    def settings(self) -> dict[str, Any]:
        """Decoding settings, retry procedure and the endpoint's model list (for the run record and
        the disclosure report); no secrets."""
        return {
            "model": self.model, "base_url": self.display_url, "temperature": self.temperature,
            "seed": self.seed, "top_p": self.top_p, "structured": self.resolved_structured(),
            "structured_option": self.structured, "max_tokens": self.max_tokens,
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

    # -- requests ----------------------------------------------------------------------------------
    def request_body(self, messages: list[dict[str, str]], low: int | None = None,
                     high: int | None = None) -> dict[str, Any]:
        """The request body; with the scale (``low``, ``high``) the schema modes send the judgment
        schema."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        fmt = response_format(self.resolved_structured(), low, high)
        body.update({k: v for k, v in (("response_format", fmt), ("max_tokens", self.max_tokens),
                                       ("seed", self.seed), ("top_p", self.top_p)) if v is not None})
        return {**body, **self.extra_body}

    def _ask(self, body: dict[str, Any], retries: int) -> tuple[int, bytes]:
        """One request through the openai client, which makes up to ``retries`` more HTTP attempts
        itself: (status, body) of the last answer. The model and messages are sent as arguments,
        every other field through ``extra_body`` (so a server-specific form is sent as written).
        Raises the client's ``APIConnectionError`` when no attempt was answered, ``_stopped``
        when the budget or a cancel stopped it."""
        api = self.openai_client.with_options(max_retries=retries)
        try:
            r = api.chat.completions.with_raw_response.create(
                model=body["model"], messages=body["messages"], extra_headers=self.request_headers,
                extra_body={k: v for k, v in body.items() if k not in ("model", "messages")})
        except self.openai_module.APIStatusError as exc:
            return exc.status_code, exc.response.content
        return r.http_response.status_code, r.http_response.content

    def _reject_structured(self, body: dict[str, Any], data: bytes) -> bool:
        """Whether a 400/422 answer rejects the ``response_format`` sent (its text names it); if so,
        every later request uses the next mode of `STRUCTURED_FALLBACK`."""
        text = data[:2000].decode("utf-8", "replace").lower()
        sent = body.get("response_format")
        if sent is None or not any(w in text for w in ("response_format", "json_schema", "schema", "json_object")):
            return False
        mode = "json_object" if sent == {"type": "json_object"} else "schema"
        with self._state_lock:  # only ever further down (a stale request of another thread may come back)
            if self._fallback != "none" and (self._fallback is None or mode == "json_object"):
                self._fallback = STRUCTURED_FALLBACK[mode]
        return True

    def _fatal(self, error: str) -> JudgeFatalError:
        self.cancel()
        return JudgeFatalError(self.redact(error))

    def _note_unreachable(self, all_connection: bool, error: str) -> None:
        with self._state_lock:
            self._unreachable_streak = self._unreachable_streak + 1 if all_connection else 0
            stop = all_connection and self.unreachable_after > 0 and (
                not self._answered_any or self._unreachable_streak >= self.unreachable_after)
        if stop:
            raise self._fatal(
                f"the endpoint {self.display_url} cannot be reached ({error}); stopped instead of failing "
                "every judgment the same way: check OPENAI_BASE_URL / --base-url and the network, then run "
                "the same command again (finished judgments are cached)")

    # -- one judgment ----------------------------------------------------------------------------
    def judge(self, messages: list[dict[str, str]], low: int, high: int, *,
              placeholders: tuple[str, ...] | list[str] = ()) -> Verdict:
        """Send ``messages`` until a valid judgment arrives or the attempts run out.

        HTTP failures are retried by the openai client (``max_retries``: what is left of
        ``retries``); a reply that is not a valid judgment is re-asked here, with a repair message.
        ``placeholders``: the ``<...>`` texts of the prompt's reply format; a rationale that copies
        one is invalid (see `parse_reply`).
        """
        openai, served = self.openai_module, self.identify().get("served_model")
        body, rec, kind, last = self.request_body(messages, low, high), _Attempts(), "transport", None
        tokens, model, invalid_replies = [0, 0], None, set()

        def verdict(score: int | None, rationale: str | None, error: str | None, kind: str) -> Verdict:
            raw = None if last is None or last.raw is None else self.redact(last.raw)
            return Verdict(score, rationale, None if error is None else clean_text(self.redact(error)), kind, rec.count,
                           raw, tokens[0], tokens[1], model, tuple(rec.causes), served)

        self._local.attempts = rec
        try:
            allowed = self.retries + 1  # attempts of this judgment (a structured-output fallback adds one)
            while rec.count < allowed:
                try:
                    status, data = self._ask(body, allowed - rec.count - 1)
                except self._stopped as exc:
                    return verdict(None, None, str(exc), "limit")
                except openai.APIConnectionError:  # (APITimeoutError too) no attempt left was answered
                    kind = "transport"
                    break
                text = clean_text(data[:300].decode("utf-8", "replace").strip())
                if status in (401, 403, 404):
                    raise self._fatal(f"{self.display_url}/chat/completions answered HTTP {status}: {text} "
                                      "(check OPENAI_BASE_URL, OPENAI_API_KEY and --model)")
                if status == 429 or status >= 500:  # the attempts ran out on overload answers
                    rec.error, kind = f"HTTP {status}" + (f": {text[:200]}" if text else ""), "transport"
                    break
                if status in (400, 422) and self._reject_structured(body, data):
                    rec.causes.append("structured_unsupported")
                    rec.error = f"HTTP {status}: the endpoint rejected response_format"
                    body, allowed = self.request_body(body["messages"], low, high), allowed + 1
                    continue  # asked again at once in the next mode (an attempt of this judgment)
                if status != 200:
                    rec.causes.append(f"http_{status}")
                    self._note_unreachable(False, "")
                    return verdict(None, None, f"HTTP {status}: {text}", "request")
                last, reply = read_reply(data, low, high, placeholders)
                tokens = [tokens[0] + last.prompt_tokens, tokens[1] + last.completion_tokens]
                model = last.response_model or model
                if self.budget is not None:
                    self.budget.add(last.prompt_tokens, last.completion_tokens)
                if last.valid:
                    self._note_unreachable(False, "")
                    return verdict(last.score, last.rationale, None, "ok")
                again = reply is not None and reply in invalid_replies
                rec.error, kind = last.error + (" (the same reply again: not retried further)" if again else ""), last.kind
                rec.causes.append("identical_reply" if again else last.causes[0])
                if again:
                    break
                if reply is not None:
                    invalid_replies.add(reply)
                    if self.repair:
                        body = self.request_body(repair_messages(messages, reply, last.error, low, high), low, high)
                if rec.count < allowed:
                    self._stop.wait(self._backoff(rec.count))  # a content retry: ours, after the same backoff
        finally:
            self._local.attempts = None
        self._note_unreachable(bool(rec.causes) and all(c == "connection" for c in rec.causes), rec.error)
        return verdict(None, None, f"invalid after {rec.count} attempt(s): {rec.error}", kind)
