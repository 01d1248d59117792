"""Judging through the OpenAI-compatible Batch API, against a loopback server that implements
``/files`` (multipart upload, content download), ``/batches`` (create, status) and, for the
fallback, ``/chat/completions``. Expected values follow from the server's markers."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("openai")

from reteco_measures.cli.main import main as cli_main  # noqa: E402


def judged_text(body: dict) -> str:
    user = body["messages"][-1]["content"]
    return re.search(r"Response to judge:\n(.*?)\n\nJudge the", user, re.S).group(1)


def completion(content: str) -> dict:
    return {"model": "batch-model-7", "usage": {"prompt_tokens": 50, "completion_tokens": 5},
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


class BatchServer:
    """Markers: ``SCORE=n``; ``FAILONCE`` (HTTP 500 inside the first batch that holds it);
    ``INVALID`` (content not JSON); ``MISSING`` (no result line at all); ``BADREQ`` (HTTP 400)."""

    def __init__(self, supported: bool = True) -> None:
        self.supported = supported
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.polls: Counter = Counter()
        self.seen: Counter = Counter()  # judged text -> times it was in a batch
        self.sync_requests = 0
        self.uploads: list[list[dict]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, status, obj=None, raw: bytes | None = None):
                data = raw if raw is not None else json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with server.lock:
                    if self.path == "/v1/chat/completions":
                        server.sync_requests += 1
                        m = re.search(r"SCORE=(\d)", judged_text(json.loads(body)))
                        content = json.dumps({"score": int(m.group(1)) if m else 3, "rationale": "sync"})
                        return self.reply(200, completion(content))
                    if not server.supported:
                        return self.reply(404, {"error": "not found"})
                    if self.path == "/v1/files":
                        boundary = re.search(r"boundary=([^;]+)", self.headers["Content-Type"]).group(1).encode()
                        parts = {}
                        for part in body.split(b"--" + boundary):
                            head, _, content = part.partition(b"\r\n\r\n")
                            name = re.search(rb'name="([^"]+)"', head)
                            if name:
                                parts[name.group(1).decode()] = content[:-2] if content.endswith(b"\r\n") else content
                        assert parts["purpose"] == b"batch"
                        fid = f"file-{len(server.files)}"
                        server.files[fid] = parts["file"]
                        server.uploads.append([json.loads(x) for x in parts["file"].splitlines()])
                        return self.reply(200, {"id": fid, "object": "file", "purpose": "batch"})
                    if self.path == "/v1/batches":
                        req = json.loads(body)
                        assert req["endpoint"] == "/v1/chat/completions" and req["input_file_id"] in server.files
                        bid = f"batch_{len(server.batches)}"
                        server.batches[bid] = {"id": bid, "status": "validating", "input_file_id": req["input_file_id"],
                                               "completion_window": req["completion_window"]}
                        return self.reply(200, server.batches[bid])
                return self.reply(404, {"error": self.path})

            def do_GET(self):  # noqa: N802
                with server.lock:
                    m = re.fullmatch(r"/v1/batches/(\w+)", self.path)
                    if m:
                        batch = server.batches[m.group(1)]
                        server.polls[batch["id"]] += 1
                        if server.polls[batch["id"]] == 1:
                            batch["status"] = "in_progress"
                        elif batch["status"] != "completed":
                            server.finish(batch)
                        return self.reply(200, batch)
                    m = re.fullmatch(r"/v1/files/([\w-]+)/content", self.path)
                    if m and m.group(1) in server.files:
                        return self.reply(200, raw=server.files[m.group(1)])
                return self.reply(404, {"error": self.path})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def finish(self, batch: dict) -> None:
        out, err = [], []
        for line in map(json.loads, self.files[batch["input_file_id"]].splitlines()):
            text = judged_text(line["body"])
            self.seen[text] += 1
            cid = line["custom_id"]
            if "MISSING" in text:
                continue
            if "FAILONCE" in text and self.seen[text] == 1:
                err.append({"id": "x", "custom_id": cid, "response": {"status_code": 500, "body": {"error": "oops"}},
                            "error": None})
                continue
            if "BADREQ" in text:
                err.append({"id": "x", "custom_id": cid, "response": {"status_code": 400, "body": {"error": "bad"}},
                            "error": None})
                continue
            m = re.search(r"SCORE=(\d)", text)
            content = "not json" if "INVALID" in text else json.dumps({"score": int(m.group(1)) if m else 3,
                                                                      "rationale": "batched"})
            out.append({"id": "x", "custom_id": cid, "response": {"status_code": 200, "body": completion(content)},
                        "error": None})
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = f"file-{len(self.files)}"
                self.files[fid] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[name] = fid
        batch["status"] = "completed"


@pytest.fixture
def make_server(monkeypatch):
    servers = []

    def make(**kw):
        s = BatchServer(**kw)
        servers.append(s)
        monkeypatch.setenv("OPENAI_BASE_URL", s.url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        return s

    yield make
    for s in servers:
        s.httpd.shutdown()
        s.httpd.server_close()


def files(tmp: Path, answers: dict[str, str]):
    ctx = tmp / "ctx.jsonl"
    ctx.write_text("".join(json.dumps({"turn_id": t, "question": "q", "passages": ["p"]}) + "\n" for t in answers))
    ans = tmp / "ans.jsonl"
    ans.write_text("".join(json.dumps({"turn_id": t, "answer": a}) + "\n" for t, a in answers.items()))
    return ["judge", "generation", "--answers", str(ans), "--context", str(ctx), "--model", "m", "--out",
            str(tmp / "out.jsonl"), "--dimensions", "correctness", "--no-progress", "--batch", "--batch-poll", "0.01",
            "--retries", "1"]


def rows(tmp: Path) -> dict[str, dict]:
    return {r["turn_id"]: r for r in map(json.loads, (tmp / "out.jsonl").read_text().splitlines())}


def test_batch_end_to_end_with_retry_rounds(make_server, tmp_path, capsys):
    s = make_server()
    argv = files(tmp_path, {"a": "x SCORE=5", "b": "y SCORE=2", "c": "z FAILONCE SCORE=4", "d": "w INVALID",
                            "e": "v MISSING", "f": "u BADREQ"})
    assert cli_main(argv) == 0
    r = rows(tmp_path)
    assert {t: r[t]["score"] for t in r} == {"a": 5, "b": 2, "c": 4, "d": None, "e": None, "f": None}
    assert s.sync_requests == 0
    # round 1: all six; round 2: the retryable ones (c: 500, d: invalid reply, e: no result); f (400) is final
    assert [len(u) for u in s.uploads] == [6, 3] and len(s.batches) == 2
    assert sorted(judged_text(x["body"]) for x in s.uploads[1]) == ["v MISSING", "w INVALID", "z FAILONCE SCORE=4"]
    first = s.uploads[0][0]
    assert first["method"] == "POST" and first["url"] == "/v1/chat/completions"
    assert first["body"]["model"] == "m" and first["body"]["temperature"] == 0
    assert first["body"]["response_format"] == {"type": "json_object"}
    assert (r["c"]["attempts"], r["c"]["retry_causes"], r["c"]["prompt_tokens"]) == (2, ["http_5xx"], 50)
    assert r["a"]["response_model"] == "batch-model-7" and r["a"]["rationale"] == "batched"
    assert r["d"]["error_kind"] == "response" and "after 2 attempt(s)" in r["d"]["error"]
    assert r["e"]["error_kind"] == "transport" and "no result" in r["e"]["error"]
    assert r["f"]["error_kind"] == "request" and r["f"]["attempts"] == 1
    assert not list((tmp_path / "out.jsonl.cache" / "batches").glob("*.json"))  # every batch collected
    # a rerun submits only what is not cached: the transport failure (e) and the rejected request (f),
    # then e once more
    capsys.readouterr()
    assert cli_main(argv) == 0
    assert [len(u) for u in s.uploads] == [6, 3, 2, 1]
    assert sorted(judged_text(x["body"]) for x in s.uploads[2]) == ["u BADREQ", "v MISSING"]
    assert "4 from cache, 2 asked" in capsys.readouterr().err


def test_submit_now_collect_later(make_server, tmp_path, capsys):
    s = make_server()
    argv = [*files(tmp_path, {"a": "SCORE=1", "b": "SCORE=4"}), "--batch-wait", "0"]
    assert cli_main(argv) == 4  # EXIT_LIMIT: batches still running
    assert "still running" in capsys.readouterr().err and not (tmp_path / "out.jsonl").exists()
    records = list((tmp_path / "out.jsonl.cache" / "batches").glob("*.json"))
    assert len(records) == 1 and len(s.batches) == 1
    assert cli_main(argv) == 4  # the server says in_progress: nothing new is submitted
    assert len(s.batches) == 1 and s.polls["batch_0"] == 1
    assert cli_main(argv) == 0  # completed: collected
    assert {t: r["score"] for t, r in rows(tmp_path).items()} == {"a": 1, "b": 4}
    assert len(s.batches) == 1 and s.sync_requests == 0


def test_max_requests_in_batch_mode_and_resume(make_server, tmp_path, capsys):
    s = make_server()
    argv = files(tmp_path, {f"t{i}": f"SCORE={1 + i}" for i in range(5)})
    assert cli_main([*argv, "--max-requests", "3"]) == 4
    assert "--max-requests 3 reached" in capsys.readouterr().err
    assert [len(u) for u in s.uploads] == [3]
    assert cli_main(argv) == 0
    assert [len(u) for u in s.uploads] == [3, 2]
    assert {t: r["score"] for t, r in rows(tmp_path).items()} == {f"t{i}": 1 + i for i in range(5)}


def test_an_endpoint_without_batch_api_falls_back_to_requests(make_server, tmp_path, capsys):
    s = make_server(supported=False)
    assert cli_main(files(tmp_path, {"a": "SCORE=2", "b": "SCORE=5"})) == 0
    assert "does not offer the Batch API" in capsys.readouterr().err
    assert s.sync_requests == 2 and {t: r["score"] for t, r in rows(tmp_path).items()} == {"a": 2, "b": 5}


def test_batch_needs_a_cache(make_server, tmp_path, capsys):
    make_server()
    assert cli_main([*files(tmp_path, {"a": "SCORE=2"}), "--no-cache"]) == 2
    assert "--batch needs a cache folder" in capsys.readouterr().err
