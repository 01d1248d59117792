"""The judge against a hostile endpoint: a real TCP server on 127.0.0.1 (threads, raw sockets) that
answers with malformed and out-of-range judgments, 5xx, 429 with Retry-After, hangs, resets,
trickles its reply one byte at a time, serves a gateway's HTML page with status 200, deeply nested
JSON, numbers of thousands of digits, and a 401 that echoes the Authorization header.

Each expectation follows from what the server was told to do (the test data), never from running
our code first.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

pytest.importorskip("openai")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from judge_server import generation_argv, generation_inputs, write_jsonl  # noqa: E402

from reteco_measures.cli.main import main as cli_main  # noqa: E402
from reteco_measures.judge import JudgeClient, JudgeFatalError, JudgmentCache, load_prompt  # noqa: E402
from reteco_measures.judge.replies import ReplyError, parse_reply, redact  # noqa: E402

KEY = "sk-SECRET-abc123xyz"


def http(status: int, body: bytes | str, headers: dict | None = None) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(data)}", "Connection: close"]
    head += [f"{k}: {v}" for k, v in (headers or {"Content-Type": "application/json"}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def completion(content: str, **extra) -> bytes:
    body = {"id": "x", "object": "chat.completion", "model": "served-model-2025",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}], **extra}
    return http(200, json.dumps(body))


def judged(score: int, **extra) -> bytes:
    return completion(json.dumps({"score": score, "rationale": "r"}), **extra)


class FaultServer:
    """``script(request, n) -> action``; action is bytes (sent, then the connection closed),
    ``("trickle", bytes, seconds_per_byte)``, ``"hang"`` or ``"reset"``."""

    def __init__(self, script) -> None:
        self.script = script
        self.requests: list[dict] = []
        self.count: Counter = Counter()
        self.lock = threading.Lock()
        self.closing = threading.Event()
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                sock: socket.socket = self.request
                sock.settimeout(10)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        chunk = sock.recv(65536)
                        if not chunk:
                            return
                        data += chunk
                    head, _, rest = data.partition(b"\r\n\r\n")
                    lines = head.decode("latin-1").split("\r\n")
                    headers = {k.strip().lower(): v.strip() for k, v in
                               (x.split(":", 1) for x in lines[1:] if ":" in x)}
                    length = int(headers.get("content-length", 0))
                    while len(rest) < length:
                        rest += sock.recv(65536)
                    body = json.loads(rest[:length])
                except (OSError, ValueError):
                    return
                user = next(m["content"] for m in body["messages"] if m["role"] == "user")
                m = re.search(r"Response to judge:\n(.*?)\n\nJudge the", user, re.S)
                text = m.group(1) if m else user
                with server.lock:
                    server.count[text] += 1
                    n = server.count[text]
                    server.requests.append({"headers": headers, "body": body, "text": text, "t": time.monotonic()})
                action = server.script({"headers": headers, "body": body, "text": text}, n)
                try:
                    if action == "hang":
                        server.closing.wait(30)
                    elif action == "reset":
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    elif isinstance(action, tuple) and action[0] == "trickle":
                        for i in range(len(action[1])):
                            if server.closing.is_set():
                                return
                            sock.sendall(action[1][i:i + 1])
                            time.sleep(action[2])
                    else:
                        sock.sendall(action)
                except OSError:
                    pass

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.tcp = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.tcp.server_address[1]}/v1"
        threading.Thread(target=self.tcp.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.closing.set()
        self.tcp.shutdown()
        self.tcp.server_close()


@pytest.fixture
def fault(monkeypatch):
    servers = []

    def make(script):
        s = FaultServer(script)
        servers.append(s)
        monkeypatch.setenv("OPENAI_BASE_URL", s.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        return s

    yield make
    for s in servers:
        s.close()


def msgs(answer: str = "an answer"):
    p = load_prompt("correctness")
    return p.render({"question": "Q?", "history": "h", "passages": "[1] P", "answer": answer}), p.low, p.high


def client(**kw) -> JudgeClient:
    opts = dict(timeout=2.0, retries=1, backoff=0.01, max_backoff=0.02)
    opts.update(kw)
    return JudgeClient("judge-m", **opts)


# ------------------------------------------------------------------------------------------------
# the client, one fault at a time

DEEP = "[" * 100000
HUGE = "9" * 5000


@pytest.mark.parametrize(("action", "kind", "reason"), [
    (completion("The score is four."), "response", "not a JSON object"),
    (judged(9), "response", "'score' 9 is outside 1-5"),
    (http(500, "boom"), "transport", "HTTP 500: boom"),
    (http(200, "<html><body>502 Bad Gateway</body></html>", {"Content-Type": "text/html"}), "transport",
     "not a chat completion"),
    (completion(DEEP), "response", "nested too deeply"),
    (http(200, DEEP), "transport", "not a chat completion"),
    (completion('{"score": ' + HUGE + ', "rationale": "r"}'), "response", "not a JSON object"),
    (completion('{"score": 1' + "0" * 300 + ', "rationale": "r"}'), "response", "<integer of 301 digits>"),
    (http(200, '{"choices": [], "usage": {"prompt_tokens": ' + HUGE + "}}"), "transport", "not a chat completion"),
    ("reset", "transport", "connection error"),
], ids=["malformed", "out-of-range", "500", "html-200", "deep-content", "deep-body", "huge-score",
        "long-score", "huge-usage", "reset"])
def test_each_fault_is_an_invalid_verdict_with_its_reason(fault, action, kind, reason):
    fault(lambda req, n: action)
    with client(unreachable_after=0) as c:
        v = c.judge(*msgs())
    assert (v.score, v.kind, v.attempts) == (None, kind, 2), v
    assert reason in v.error, v.error
    assert len(v.error) < 600 and (v.raw is None or len(v.raw) <= 2000)


def test_429_retry_after_is_honoured_and_then_answered(fault):
    s = fault(lambda req, n: http(429, "slow", {"Retry-After": "1"}) if n == 1 else judged(4))
    with client() as c:
        v = c.judge(*msgs())
    assert (v.score, v.attempts, v.causes) == (4, 2, ("http_429",))
    assert s.requests[1]["t"] - s.requests[0]["t"] >= 0.95


def test_hang_times_out_within_the_deadline(fault):
    fault(lambda req, n: "hang")
    t0 = time.monotonic()
    with client(timeout=0.5, retries=1) as c:
        v = c.judge(*msgs())
    assert v.kind == "transport" and "timeout after 0.5s" in v.error and v.causes == ("timeout", "timeout")
    assert time.monotonic() - t0 < 2.0


def test_trickle_is_cut_at_the_total_deadline(fault):
    # a valid reply, one byte every 50 ms: about 15 s in all; the deadline per attempt is 1 s
    reply = judged(5)
    fault(lambda req, n: ("trickle", reply, 0.05))
    t0 = time.monotonic()
    with client(timeout=1.0, retries=1) as c:
        v = c.judge(*msgs())
    elapsed = time.monotonic() - t0
    assert v.kind == "transport" and v.causes == ("timeout", "timeout"), v
    assert elapsed < 2.0 + 0.5, f"two attempts of 1 s took {elapsed:.1f}s"
    assert len(reply) * 0.05 > 10  # the reply alone would have taken longer than 10 s


def test_usage_and_returned_model_are_recorded(fault):
    fault(lambda req, n: judged(3, usage={"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127}))
    with client() as c:
        v = c.judge(*msgs())
    assert (v.score, v.prompt_tokens, v.completion_tokens, v.response_model) == (3, 120, 7, "served-model-2025")


def test_echoing_401_never_shows_the_key(fault):
    def echo(req, n):
        return http(401, json.dumps({"error": "invalid key", "you_sent": req["headers"].get("authorization")}))

    fault(echo)
    with client() as c, pytest.raises(JudgeFatalError) as info:
        c.judge(*msgs())
    assert "401" in str(info.value) and KEY not in str(info.value) and "Bearer ***" in str(info.value)


def test_url_credentials_are_redacted(fault):
    s = fault(lambda req, n: http(500, "upstream saw " + req["headers"].get("authorization", "")))
    url = s.url.replace("http://", "http://alice:pa55word@")
    with JudgeClient("m", base_url=url, retries=0, timeout=2) as c:
        v = c.judge(*msgs())
        assert "pa55word" not in c.display_url and "alice" not in c.display_url
    assert "HTTP 500" in v.error
    assert "pa55word" not in v.error and KEY not in v.error
    assert redact("GET https://u:p@host/x Authorization: Bearer abc.def", ["zzz"]) == \
        "GET https://***@host/x Authorization: Bearer ***"


# ------------------------------------------------------------------------------------------------
# the CLI: one bad reply among good ones, HTML not cached, secrets, unreachable, nothing judged


@pytest.fixture
def files(tmp_path):
    ans, ctx = generation_inputs(tmp_path, {f"t{i}": f"answer of t{i}" for i in range(6)})
    return tmp_path, ans, ctx


def base_argv(tmp, ans, ctx, *extra):
    return generation_argv(tmp, ans, ctx, *extra, timeout=3)


def rows_of(tmp):
    return {r["turn_id"]: r for r in map(json.loads, (tmp / "out.jsonl").read_text().splitlines())}


@pytest.mark.parametrize("garbage", [completion(DEEP), http(200, DEEP), completion('{"score": ' + HUGE + "}"),
                                     http(200, '{"x": ' + HUGE + "}")],
                         ids=["deep-content", "deep-body", "huge-content", "huge-body"])
def test_one_garbage_reply_is_one_invalid_row(fault, files, garbage):
    tmp, ans, ctx = files
    fault(lambda req, n: garbage if req["text"] == "answer of t3" else judged(4))
    argv = base_argv(tmp, ans, ctx)
    assert cli_main(argv) == 0
    rows = rows_of(tmp)
    assert len(rows) == 6
    assert all(rows[f"t{i}"]["score"] == 4 for i in (0, 1, 2, 4, 5))
    assert rows["t3"]["score"] is None and rows["t3"]["error"]
    assert re.search("nested too deeply|not a JSON object|not a chat completion", rows["t3"]["error"])
    # a rerun does not die on it either
    assert cli_main(argv) == 0
    assert rows_of(tmp)["t3"]["error"]


def test_gateway_html_is_not_cached(fault, files):
    tmp, ans, ctx = files
    state = {"html": True}
    s = fault(lambda req, n: http(200, "<html>Gateway Timeout</html>", {"Content-Type": "text/html"})
              if state["html"] else judged(2))
    argv = base_argv(tmp, ans, ctx)
    assert cli_main(argv) == 1  # nothing could be judged
    assert all("not a chat completion" in r["error"] for r in rows_of(tmp).values())
    n = len(s.requests)
    state["html"] = False
    assert cli_main(argv) == 0
    assert len(s.requests) == n + 6, "the HTML replies were cached as answers"
    assert {r["score"] for r in rows_of(tmp).values()} == {2}


def test_secrets_never_reach_stderr_or_files(fault, files, capsys):
    tmp, ans, ctx = files
    fault(lambda req, n: http(500, "echo: " + req["headers"].get("authorization", "")))
    url = os.environ["OPENAI_BASE_URL"].replace("http://", "http://bob:hunter22@")
    assert cli_main(base_argv(tmp, ans, ctx, "--base-url", url)) == 1
    err = capsys.readouterr().err
    written = "".join(p.read_text(errors="replace") for p in tmp.rglob("*") if p.is_file())
    for secret in (KEY, "hunter22"):
        assert secret not in err and secret not in written
    # the HTTP client sends the URL's user-info as Basic credentials: the echoed header is redacted too
    assert "Basic ***" in (tmp / "out.jsonl").read_text()
    assert base64.b64encode(b"bob:hunter22").decode() not in err + written

    fault(lambda req, n: http(403, "forbidden for " + req["headers"].get("authorization", "")))
    assert cli_main(base_argv(tmp, ans, ctx)) == 2
    err = capsys.readouterr().err
    assert "HTTP 403" in err and KEY not in err


def test_unreachable_endpoint_stops_early_with_a_clear_message(files, monkeypatch, capsys):
    tmp, ans, ctx = files
    many = write_jsonl(tmp / "c.jsonl", [{"turn_id": f"t{i}", "question": "q", "passages": ["p"]}
                                          for i in range(300)])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    t0 = time.monotonic()
    assert cli_main(base_argv(tmp, ans, many)) == 2
    err = capsys.readouterr().err
    assert "cannot be reached" in err and f"127.0.0.1:{port}" in err
    assert time.monotonic() - t0 < 5
    assert not (tmp / "out.jsonl").exists()


def test_every_request_failing_exits_non_zero(fault, files, capsys):
    tmp, ans, ctx = files
    fault(lambda req, n: http(503, "down"))
    assert cli_main(base_argv(tmp, ans, ctx)) == 1
    assert "no judgment could be made (6 of 6 invalid" in capsys.readouterr().err


def test_missing_openai_prints_the_install_hint(files, monkeypatch, capsys):
    tmp, ans, ctx = files
    monkeypatch.setitem(sys.modules, "openai", None)  # what `import openai` meets without the judge extra
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert cli_main(base_argv(tmp, ans, ctx)) == 2
    err = capsys.readouterr().err
    assert 'pip install "reteco-measures[judge]"' in err and "Traceback" not in err
    assert not (tmp / "out.jsonl").exists()


# ------------------------------------------------------------------------------------------------
# two processes on one cache; kill -9 leaves no stale lock


@pytest.mark.slow
def test_two_processes_on_one_cache_never_ask_twice(fault, files):
    tmp, ans, ctx = files

    def slow(req, n):
        time.sleep(0.2)
        return judged(3)

    s = fault(slow)
    cache = tmp / "shared.cache"
    env = {**os.environ}
    procs = []
    for k in range(2):
        argv = [sys.executable, "-m", "reteco_measures", *base_argv(tmp, ans, ctx, "--cache", str(cache),
                                                                      "--concurrency", "3")]
        argv[argv.index(str(tmp / "out.jsonl"))] = str(tmp / f"out{k}.jsonl")
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=90)
        assert p.returncode == 0, err
    assert sum(s.count.values()) == 6 and set(s.count.values()) == {1}, s.count
    for k in range(2):
        rows = [json.loads(x) for x in (tmp / f"out{k}.jsonl").read_text().splitlines()]
        assert [r["score"] for r in rows] == [3] * 6


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    cache = JudgmentCache(tmp_path / "c")
    code = ("import sys, time\nfrom reteco_measures.judge.cache import JudgmentCache\n"
            f"c = JudgmentCache({str(tmp_path / 'c')!r})\n"
            "with c.lock('ab' * 32):\n    print('held', flush=True)\n    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        stop = threading.Event()
        threading.Timer(0.5, stop.set).start()
        with pytest.raises(InterruptedError):  # held by the live process: we wait (until told to stop)
            with cache.lock("ab" * 32, stop):
                pass
        proc.kill()  # SIGKILL: no cleanup runs
        proc.wait(timeout=10)
        t0 = time.monotonic()
        with cache.lock("ab" * 32):
            pass
        assert time.monotonic() - t0 < 1
    finally:
        if proc.poll() is None:
            proc.kill()


# ------------------------------------------------------------------------------------------------
# reply parsing never raises anything but ReplyError

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.text(max_size=200),
    json_values.map(json.dumps),
    st.builds(lambda s, r: json.dumps({"score": s, "rationale": r}), json_values, json_values),
    st.builds(lambda d, t: "[" * d + t, st.integers(0, 50000), st.text(max_size=5)),
    st.builds(lambda n: '{"score": ' + "7" * n + ', "rationale": "x"}', st.integers(1, 6000)),
))
def test_parse_reply_only_raises_reply_error(text):
    try:
        score, rationale = parse_reply(text, 1, 5)
    except ReplyError as exc:
        assert str(exc) and len(str(exc)) < 300
    else:
        assert type(score) is int and 1 <= score <= 5 and isinstance(rationale, str)


def test_the_environment_proxy_is_still_used(fault, monkeypatch):
    """The attempt hooks sit on the client's transport; the proxy the environment names still
    carries the requests (here the fault server plays the proxy of a host that does not exist)."""
    proxy = fault(lambda req, n: judged(4))
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url.rsplit("/v1", 1)[0])
    with JudgeClient("judge-m", base_url="http://judge.invalid:9/v1", retries=0, timeout=3) as c:
        v = c.judge(*msgs())
    assert v.score == 4 and len(proxy.requests) == 1


def test_a_gzipped_error_body_is_read_as_text(fault):
    import gzip

    body = gzip.compress(b"upstream overloaded")
    fault(lambda req, n: http(503, body, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}))
    with client(retries=0) as c:
        v = c.judge(*msgs())
    assert v.kind == "transport" and "HTTP 503: upstream overloaded" in v.error, v.error


def test_a_body_over_the_size_limit_is_a_failed_attempt(fault):
    """A 200 whose body is 9 MB (the client reads at most 8 MB of a reply) is cut off: a transport
    failure of each attempt, never read whole into memory."""
    fault(lambda req, n: http(200, b"x" * (9 * 1024 * 1024)))
    with client(unreachable_after=0) as c:
        v = c.judge(*msgs())
    assert (v.kind, v.attempts, v.causes) == ("transport", 2, ("too_large", "too_large")), v
    assert f"reply larger than {8 * 1024 * 1024} bytes" in v.error
