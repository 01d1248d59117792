"""A loopback OpenAI-compatible chat-completions server for the judge tests (127.0.0.1 only).

``JudgeServer`` answers ``POST /v1/chat/completions`` through a *behaviour* (``behaviour(server,
body, nth) -> (status, headers, text) | "hang" | "reset"``) and ``GET /v1/models`` with the model
list it is given. Its default behaviour reads markers inside the judged text (``SCORE=4``,
``MALFORMED``, ``ALWAYS500`` ...), so every expected value in a test follows from the test data.

It can be taught what real servers do:

* ``behaviour = echo_placeholders``: answer with the prompt's own reply format, the placeholder
  copied as the rationale (what a 270M model does);
* ``behaviour = ignores_schema``: answer ``{}`` whatever is asked, schema or not;
  ``behaviour = honours_schema``: answer a valid judgment when a JSON schema came with the request
  (either form) and ``{}`` otherwise (a constrained server);
* ``serial = True``: answer one request at a time (the others wait in its queue, as
  llama-cpp-python's server does);
* ``retry_after``: ``RATE429`` markers answer 429 with this ``Retry-After``;
  ``"reset"``: the connection is reset (RST) after the request was read;
* ``models`` / ``returned_model``: what ``GET /v1/models`` lists and which ``model`` a completion
  names (``"echo"``: the requested name, as llama-cpp-python does).

Every request's body, headers and time are recorded; the judged text and dimension are read from
the *first* user message (a repair message appended after an invalid reply does not change them).
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_DIM_MARK = {
    "CORRECTNESS": "correctness", "COMPLETENESS": "completeness", "RELEVANCE": "relevance",
    "CONVERSATIONAL COHERENCE": "coherence", "FAITHFULNESS": "faithfulness",
    "NATURALNESS": "naturalness", "GROUNDEDNESS": "groundedness",
}


def _canonical_headers(headers) -> dict[str, str]:
    """Header names in one spelling (``authorization`` -> ``Authorization``): HTTP header names
    are case-insensitive, and clients differ in the case they send."""
    return {"-".join(w.capitalize() for w in k.split("-")): v for k, v in headers.items()}


def first_user(messages: list[dict]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def dimension_of(messages: list[dict]) -> str:
    user = first_user(messages)
    if "temporally relevant to the question?" in user:
        return "temporal_relevance"
    if "cover this period" in user:
        return "period_coverage"
    m = re.search(r"Judge the ([A-Z ]+?) of the response", user)
    assert m, user[-200:]
    return _DIM_MARK[m.group(1)]


def judged_text(messages: list[dict]) -> str:
    """The answer (or document) being judged, cut out of the first user message."""
    user = first_user(messages)
    m = re.search(r"Response to judge:\n(.*?)\n\n(?:Judge the|$)", user, re.S) or re.search(
        r"Document:\n(.*?)\n\n(?:Is the document|Does the document)", user, re.S)
    assert m, user
    return m.group(1)


def completion(content: str, model: str | None = None, usage: dict | None = None) -> tuple[int, dict, str]:
    body = {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}
    if model is not None:
        body["model"] = model
    if usage is not None:
        body["usage"] = usage
    return 200, {}, json.dumps(body)


def score_reply(score, rationale="because") -> tuple[int, dict, str]:
    return completion(json.dumps({"score": score, "rationale": rationale}))


def marker_behaviour(server: JudgeServer, body: dict, nth: int):
    """Default brain: markers in the judged text decide the reply."""
    text = judged_text(body["messages"])
    if "ALWAYS500" in text:
        return 500, {}, "upstream exploded"
    if "TWICE500" in text and nth <= 2:
        return 502, {}, "bad gateway"
    if "RATE429" in text and nth == 1:
        return 429, {"Retry-After": server.retry_after}, "slow down"
    if "RESETONCE" in text and nth == 1:
        return "reset"
    if "HANG" in text:
        return "hang"
    if "MALFORMED" in text:
        return completion("The score is 4 because it is fine.")
    if "OUTOFRANGE" in text:
        return score_reply(9)
    if "FLOAT" in text:
        return score_reply(4.0)
    if "BADREQ" in text:
        return 400, {}, "context too long"
    m = re.search(r"SCORE=(\d)", text)
    return score_reply(int(m.group(1)) if m else 3)


def reply_format(system: str) -> tuple[str, str]:
    """(score placeholder, rationale placeholder) of the reply format written in a system prompt,
    e.g. ``{"score": <integer from 1 to 5>, "rationale": "<one or two sentences>"}``."""
    m = re.search(r'\{"score": <([^>]*)>, "rationale": "<([^>]*)>"\}', system)
    assert m, system[-300:]
    return m.group(1), m.group(2)


def echo_placeholders(server: JudgeServer, body: dict, nth: int):
    """A small model: a score, and the rationale placeholder of the prompt copied as is."""
    _, rationale = reply_format(body["messages"][0]["content"])
    return completion(json.dumps({"score": server.echo_score, "rationale": f"<{rationale}>"}))


def sent_schema(body: dict) -> dict | None:
    """The JSON schema a request carries in ``response_format``, in either form, or None."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    if fmt.get("type") == "json_object":
        return fmt.get("schema")
    return None


def ignores_schema(server: JudgeServer, body: dict, nth: int):
    return completion("{}")


def honours_schema(server: JudgeServer, body: dict, nth: int):
    schema = sent_schema(body)
    if schema is None:
        return completion("{}")
    lowest = min(schema["properties"]["score"]["enum"])
    return completion(json.dumps({"score": lowest, "rationale": "constrained by the schema"}))


class JudgeServer:
    """A chat-completions endpoint on 127.0.0.1 that records what it was asked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.gets: list[str] = []
        self.per_key: Counter = Counter()  # (dimension, judged text) -> number of requests
        self.answered: Counter = Counter()  # (dimension, judged text) -> 200 replies delivered
        self.behaviour = marker_behaviour
        self.release = threading.Event()
        self.inflight = 0
        self.max_inflight = 0
        self.blocked = 0
        self.delay = 0.0
        self.serial = False
        self.retry_after = "1"
        self.echo_score = 3
        self.models: list[dict] | None = None  # GET /v1/models data; None: 404
        self.returned_model: str | None = None  # "echo": the requested name
        self.usage: dict | None = None
        self._serial_lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _send(self, status: int, headers: dict, data: bytes) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def do_GET(self):  # noqa: N802 - http.server API
                with server.lock:
                    server.gets.append(self.path)
                if self.path.rstrip("/") == "/v1/models" and server.models is not None:
                    self._send(200, {}, json.dumps({"object": "list", "data": server.models}).encode())
                else:
                    self._send(404, {}, b'{"error": "not found"}')

            def do_POST(self):  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with server.lock:
                    key = (dimension_of(body["messages"]), judged_text(body["messages"]))
                    server.per_key[key] += 1
                    nth = server.per_key[key]
                    server.requests.append({"path": self.path, "body": body, "headers": _canonical_headers(self.headers),
                                            "t": time.monotonic(), "key": key})
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                try:
                    if server.serial:
                        with server._serial_lock:
                            reply = self._think(body, nth)
                    else:
                        reply = self._think(body, nth)
                    if reply == "reset":
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        self.close_connection = True
                        self.connection.close()
                        return
                    status, headers, text = reply
                    if status == 200 and (server.returned_model is not None or server.usage is not None):
                        obj = json.loads(text)
                        if server.returned_model is not None:
                            obj["model"] = body["model"] if server.returned_model == "echo" else server.returned_model
                        if server.usage is not None:
                            obj["usage"] = server.usage
                        text = json.dumps(obj)
                    self._send(status, headers, text.encode())
                    if status == 200:
                        with server.lock:
                            server.answered[key] += 1
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass
                finally:
                    with server.lock:
                        server.inflight -= 1

            def _think(self, body: dict, nth: int):
                if server.delay:
                    time.sleep(server.delay)
                reply = server.behaviour(server, body, nth)
                if reply == "hang":
                    with server.lock:
                        server.blocked += 1
                    server.release.wait(timeout=20)
                    reply = (503, {}, "released after the client went away")
                return reply

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


# ------------------------------------------------------------------------------------------------
# inputs of ``judge generation`` for the CLI tests


def write_jsonl(path: Path, rows) -> Path:
    """``rows`` as JSONL (UTF-8, one object a line); returns ``path``."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def generation_inputs(tmp: Path, answers: dict[str, str]) -> tuple[Path, Path]:
    """Answers and context files for ``judge generation``: one turn per ``answers`` key (question
    ``q``, no history, one passage ``p``). Returns ``(answers, context)``."""
    ctx = write_jsonl(tmp / "c.jsonl", [{"turn_id": t, "question": "q", "history": [], "passages": ["p"]}
                                        for t in answers])
    ans = write_jsonl(tmp / "a.jsonl", [{"turn_id": t, "answer": a} for t, a in answers.items()])
    return ans, ctx


def generation_argv(tmp: Path, ans: Path, ctx: Path, *extra: str, model: str = "m", out: str = "out.jsonl",
                    timeout: float | None = None) -> list[str]:
    """``judge generation`` on those files: one dimension (correctness), one retry, a short backoff,
    no progress bar, judgments written to ``tmp / out``; ``extra`` arguments appended."""
    argv = ["judge", "generation", "--answers", str(ans), "--context", str(ctx), "--model", model,
            "--out", str(tmp / out), "--dimensions", "correctness", "--no-progress", "--retries", "1",
            "--backoff", "0.01"]
    if timeout is not None:
        argv += ["--timeout", f"{timeout:g}"]
    return argv + list(extra)
