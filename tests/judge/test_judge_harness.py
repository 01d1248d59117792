"""The LLM-judge harness against a real HTTP server on 127.0.0.1 (no mock of the client).

The server plays an OpenAI-compatible chat-completions endpoint. Its replies are driven by
markers inside the judged answer text (``SCORE=4``, ``MALFORMED``, ``ALWAYS500`` ...), so every
expected value below follows from the test data, not from running our code.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")

from judge_server import (  # noqa: E402
    JudgeServer,
    completion,
    dimension_of,
    judged_text,
    marker_behaviour,
    score_reply,
    write_jsonl,
)

from reteco_measures.cli.main import main as cli_main  # noqa: E402
from reteco_measures.judge import (  # noqa: E402
    GOLDEN_CASES,
    JudgeClient,
    JudgeFatalError,
    JudgeItem,
    JudgmentCache,
    RunStats,
    load_prompt,
    run_items,
)

REPO = Path(__file__).resolve().parents[2]

@pytest.fixture
def server(monkeypatch):
    s = JudgeServer()
    monkeypatch.setenv("OPENAI_BASE_URL", s.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    yield s
    s.close()


def fast_client(**kw) -> JudgeClient:
    opts = dict(timeout=2.0, retries=2, backoff=0.01, max_backoff=0.05)
    opts.update(kw)
    return JudgeClient("judge-model-1", **opts)


def messages_for(answer: str, dimension: str = "correctness") -> tuple[list[dict], int, int]:
    p = load_prompt(dimension)
    variables = {"question": "Q?", "history": "(no previous turns)", "passages": "[1] P", "answer": answer}
    return p.render({k: variables[k] for k in p.placeholders}), p.low, p.high


# ------------------------------------------------------------------------------------------------
# client


def test_normal_answer_and_request_shape(server):
    msgs, lo, hi = messages_for("An answer SCORE=4")
    with fast_client() as c:
        v = c.judge(msgs, lo, hi)
    assert (v.score, v.error, v.kind, v.attempts) == (4, None, "ok", 1)
    assert v.rationale == "because"
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test-123"
    body = req["body"]
    assert body["model"] == "judge-model-1"
    assert body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_no_key_means_no_authorization_header(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    msgs, lo, hi = messages_for("SCORE=2")
    with fast_client(structured="none") as c:
        assert c.judge(msgs, lo, hi).score == 2
    assert "Authorization" not in server.requests[0]["headers"]
    assert "response_format" not in server.requests[0]["body"]


@pytest.mark.parametrize(
    ("marker", "reason"),
    [("MALFORMED", "not a JSON object"), ("OUTOFRANGE", "'score' 9 is outside 1-5"),
     ("FLOAT", "'score' is not an integer: 4.0")],
)
def test_invalid_replies_are_repaired_once_then_recorded_invalid(server, marker, reason):
    msgs, lo, hi = messages_for(f"answer {marker}")
    with fast_client(retries=2) as c:
        v = c.judge(msgs, lo, hi)
    assert v.score is None and v.kind == "response"
    # the server gives the same bad reply to the repair message: retrying further cannot help
    assert reason in v.error and "after 2 attempt(s)" in v.error and "the same reply again" in v.error
    assert v.causes == ("invalid_reply", "identical_reply")
    first, second = (r["body"]["messages"] for r in server.requests)
    assert first == msgs
    bad = json.loads(marker_behaviour(server, server.requests[0]["body"], 1)[2])["choices"][0]["message"]["content"]
    assert second[:2] == msgs and second[2] == {"role": "assistant", "content": bad}
    assert second[3]["role"] == "user" and reason in second[3]["content"]
    assert '"enum":[1,2,3,4,5]' in second[3]["content"]  # the score schema of the 1-5 scale


def test_without_repair_the_same_request_is_sent_and_identical_replies_stop(server):
    msgs, lo, hi = messages_for("answer MALFORMED")
    with fast_client(retries=3, repair=False) as c:
        v = c.judge(msgs, lo, hi)
    assert [r["body"]["messages"] for r in server.requests] == [msgs, msgs]
    assert v.attempts == 2 and v.causes == ("invalid_reply", "identical_reply")


def test_5xx_then_success(server):
    msgs, lo, hi = messages_for("TWICE500 SCORE=5")
    with fast_client(retries=3) as c:
        v = c.judge(msgs, lo, hi)
    assert (v.score, v.attempts) == (5, 3)
    assert len(server.requests) == 3


def test_5xx_every_time_is_invalid_with_reason(server):
    msgs, lo, hi = messages_for("ALWAYS500")
    with fast_client(retries=1) as c:
        v = c.judge(msgs, lo, hi)
    assert v.kind == "transport" and "HTTP 500" in v.error and v.score is None
    assert len(server.requests) == 2


def test_429_honours_retry_after(server):
    msgs, lo, hi = messages_for("RATE429 SCORE=2")
    with fast_client(retries=2, backoff=0.01) as c:
        v = c.judge(msgs, lo, hi)
    assert v.score == 2 and v.attempts == 2
    gap = server.requests[1]["t"] - server.requests[0]["t"]
    assert gap >= 0.95, f"retried after {gap:.3f}s although Retry-After said 1s"


def test_hanging_request_times_out(server):
    msgs, lo, hi = messages_for("HANG")
    t0 = time.monotonic()
    with fast_client(timeout=0.3, retries=1) as c:
        v = c.judge(msgs, lo, hi)
    assert v.kind == "transport" and "timeout after 0.3s" in v.error
    assert len(server.requests) == 2
    assert time.monotonic() - t0 < 3


def test_bad_request_is_not_retried(server):
    msgs, lo, hi = messages_for("BADREQ")
    with fast_client(retries=3) as c:
        v = c.judge(msgs, lo, hi)
    assert v.kind == "request" and v.error.startswith("HTTP 400") and len(server.requests) == 1


def test_auth_error_stops_the_run(server):
    server.behaviour = lambda s, b, n: (401, {}, "invalid api key")
    msgs, lo, hi = messages_for("x")
    with fast_client() as c, pytest.raises(JudgeFatalError, match="401"):
        c.judge(msgs, lo, hi)


def test_connection_refused_stops_the_run_or_is_invalid(monkeypatch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    msgs, lo, hi = messages_for("x")
    # an endpoint that never answered: the first judgment that fails on connection errors only stops the run
    with JudgeClient("m", base_url=f"http://127.0.0.1:{port}/v1", retries=1, backoff=0.01, timeout=1) as c:
        with pytest.raises(JudgeFatalError, match="cannot be reached"):
            c.judge(msgs, lo, hi)
    # with the early stop turned off it is one invalid judgment with its reason, not a crash
    with JudgeClient("m", base_url=f"http://127.0.0.1:{port}/v1", retries=1, backoff=0.01, timeout=1,
                     unreachable_after=0) as c:
        v = c.judge(msgs, lo, hi)
    assert v.kind == "transport" and "connection error" in v.error and v.causes == ("connection", "connection")


# ------------------------------------------------------------------------------------------------
# runner and cache


def _items(texts, dimension="correctness"):
    p = load_prompt(dimension)
    return [JudgeItem(p, {"question": "Q?", "history": "h", "passages": "[1] P", "answer": t}
                      if "passages" in p.placeholders else {"question": "Q?", "history": "h", "answer": t},
                      {"i": i}) for i, t in enumerate(texts)]


def test_cache_makes_a_rerun_free(server, tmp_path):
    items = _items([f"turn {i} SCORE={1 + i % 5}" for i in range(6)] + ["MALFORMED"])
    cache = JudgmentCache(tmp_path / "cache")
    with fast_client(retries=0) as c:
        s1 = RunStats()
        first = run_items(items, c, cache, concurrency=3, stats=s1)
        n_after_first = len(server.requests)
        s2 = RunStats()
        second = run_items(items, c, cache, concurrency=3, stats=s2)
    assert n_after_first == 7
    assert len(server.requests) == 7, "the rerun asked the endpoint again"
    assert [o.verdict.score for o in first] == [1, 2, 3, 4, 5, 1, None]
    assert [o.verdict for o in second] == [o.verdict for o in first]
    assert (s1.asked, s1.cached, s1.invalid) == (7, 0, 1)
    assert (s2.asked, s2.cached, s2.invalid) == (0, 7, 1)
    assert all(o.cached for o in second)


def test_transport_failures_are_not_cached_but_model_failures_are(server, tmp_path):
    items = _items(["ALWAYS500", "MALFORMED"])
    cache = JudgmentCache(tmp_path / "c")
    with fast_client(retries=0) as c:
        run_items(items, c, cache)
        assert len(server.requests) == 2
        again = run_items(items, c, cache)
        assert [r["key"][1] for r in server.requests[2:]] == ["ALWAYS500"]  # only the transport failure re-asked
        run_items(items, c, cache, refresh_invalid=True)
    assert sorted(r["key"][1] for r in server.requests[3:]) == ["ALWAYS500", "MALFORMED"]
    assert [o.verdict.kind for o in again] == ["transport", "response"]


def test_identical_items_are_asked_once(server, tmp_path):
    items = _items(["same SCORE=4"] * 5)
    with fast_client() as c:
        out = run_items(items, c, JudgmentCache(None))
    assert len(server.requests) == 1
    assert [o.verdict.score for o in out] == [4] * 5
    assert [o.item.meta["i"] for o in out] == [0, 1, 2, 3, 4]


def test_bounded_concurrency(server):
    server.delay = 0.15
    items = _items([f"t{i} SCORE=3" for i in range(8)])
    t0 = time.monotonic()
    with fast_client(concurrency=3) as c:
        out = run_items(items, c, None, concurrency=3)
    elapsed = time.monotonic() - t0
    assert len(out) == 8 and all(o.verdict.valid for o in out)
    assert server.max_inflight == 3
    assert elapsed < 8 * 0.15, "requests were not sent concurrently"


def test_not_sendable_items_are_recorded_not_dropped(server):
    p = load_prompt("relevance")
    items = [JudgeItem(p, {}, {"t": "a"}, invalid="missing answer for this target turn"),
             *_items(["SCORE=5"], "relevance")]
    with fast_client() as c:
        out = run_items(items, c, None)
    assert [o.verdict.error for o in out] == ["missing answer for this target turn", None]
    assert len(server.requests) == 1


def test_an_interrupted_run_stops_retrying(server):
    items = _items(["first SCORE=3"] + [f"ALWAYS500 {i}" for i in range(3)])
    server.delay = 0.05

    def boom(outcome):
        raise KeyboardInterrupt

    with fast_client(retries=100, backoff=0.1, max_backoff=0.1) as c:
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            run_items(items, c, None, concurrency=4, on_outcome=boom)
        assert time.monotonic() - t0 < 2
        time.sleep(0.4)
        n = len(server.requests)
        time.sleep(0.4)
    assert len(server.requests) == n, "workers kept retrying after the interruption"
    assert n < 20


# ------------------------------------------------------------------------------------------------
# CLI: judge generation




@pytest.fixture
def generation_files(tmp_path):
    context = write_jsonl(tmp_path / "context.jsonl", [
        {"turn_id": "c1_turn_1", "history": [], "question": "When was the first halving?",
         "passages": ["The first halving was on 28 November 2012."]},
        {"turn_id": "c1_turn_2", "history": [{"role": "user", "content": "When was the first halving?"},
                                             {"role": "assistant", "content": "In 2012."}],
         "question": "And the second?", "passages": []},
        {"turn_id": "c2_turn_1", "history": [], "question": "What is 2+2?", "passages": ["2+2=4"]},
    ])
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"turn_id": "c1_turn_1", "answer": "In November 2012. SCORE=5"},
        {"turn_id": "c1_turn_2", "answer": "In July 2016. SCORE=2"},
        {"turn_id": "zz_turn_9", "answer": "not a target SCORE=1"},
        # c2_turn_1 has no answer
    ])
    return tmp_path, answers, context


def test_cli_generation_end_to_end(server, generation_files, capsys):
    tmp, answers, context = generation_files
    out = tmp / "judgments.jsonl"
    argv = ["judge", "generation", "--answers", str(answers), "--context", str(context), "--model", "gpt-test",
            "--out", str(out), "--dimensions", "correctness,faithfulness", "--no-progress", "--retries", "0"]
    assert cli_main(argv) == 0
    captured = capsys.readouterr()
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["turn_id"], r["dimension"]) for r in rows] == [
        ("c1_turn_1", "correctness"), ("c1_turn_1", "faithfulness"),
        ("c1_turn_2", "correctness"), ("c1_turn_2", "faithfulness"),
        ("c2_turn_1", "correctness"), ("c2_turn_1", "faithfulness"),
    ]
    for r in rows:
        assert set(r) >= {"turn_id", "dimension", "score", "normalized", "model", "prompt_sha256", "error"}
        assert r["model"] == "gpt-test"
        assert r["prompt_sha256"] == load_prompt(r["dimension"]).sha256
    by = {(r["turn_id"], r["dimension"]): r for r in rows}
    assert (by["c1_turn_1", "correctness"]["score"], by["c1_turn_1", "correctness"]["normalized"]) == (5, 1.0)
    assert (by["c1_turn_2", "correctness"]["score"], by["c1_turn_2", "correctness"]["normalized"]) == (2, 0.25)
    # no passages for turn 2 -> faithfulness cannot be judged; c2_turn_1 has no answer
    assert by["c1_turn_2", "faithfulness"]["score"] is None
    assert "no passages" in by["c1_turn_2", "faithfulness"]["error"]
    assert by["c2_turn_1", "correctness"]["error"] == "missing answer for this target turn"
    assert by["c2_turn_1", "correctness"]["normalized"] is None
    # two judgments were sendable-and-sent for correctness, one for faithfulness
    assert len(server.requests) == 3
    # the history reached the coherence-independent prompt as text
    sent = [r["body"]["messages"][1]["content"] for r in server.requests if "July 2016" in r["key"][1]][0]
    assert "User: When was the first halving?\nAssistant: In 2012." in sent
    # summary: correctness mean of 1.0 and 0.25 = 0.625 (2 valid, 1 invalid); faithfulness 1.0 (1 valid, 2 invalid)
    table = captured.out
    assert re.search(r"correctness\s+0\.6250\s+2\s+1", table), table
    assert re.search(r"faithfulness\s+1\.0000\s+1\s+2", table), table
    assert "zz_turn_9: answer for a turn that is not a target turn" in captured.err
    # a rerun is free and writes the same file
    before = out.read_text(encoding="utf-8")
    assert cli_main(argv) == 0
    assert len(server.requests) == 3
    assert out.read_text(encoding="utf-8") == before


def test_cli_strict_and_scale_errors(server, generation_files, capsys):
    tmp, answers, context = generation_files
    out = tmp / "j.jsonl"
    base = ["judge", "generation", "--answers", str(answers), "--context", str(context), "--model", "m",
            "--out", str(out), "--no-progress"]
    assert cli_main([*base, "--dimensions", "relevance", "--strict"]) == 1  # c2_turn_1 missing -> invalid
    assert cli_main([*base, "--dimensions", "groundedness"]) == 2
    assert "belongs to the ikat scale" in capsys.readouterr().err


def test_cli_generation_ikat_scale_normalises_by_4(server, generation_files):
    tmp, answers, context = generation_files
    out = tmp / "j.jsonl"
    assert cli_main(["judge", "generation", "--answers", str(answers), "--context", str(context), "--model", "m",
                     "--out", str(out), "--scale", "ikat", "--dimensions", "naturalness", "--no-progress",
                     "--backoff", "0.01"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["turn_id"] for r in rows] == ["c1_turn_1", "c1_turn_2", "c2_turn_1"]
    # SCORE=5 is out of the 0-4 range: the server's reply is invalid, never clamped to 4
    assert rows[0]["score"] is None and "outside 0-4" in rows[0]["error"]
    assert (rows[1]["score"], rows[1]["normalized"]) == (2, 0.5)


# ------------------------------------------------------------------------------------------------
# kill half-way, resume


@pytest.mark.slow
def test_killed_run_resumes_without_asking_twice(server, generation_files, tmp_path):
    _, answers, context = generation_files
    # six target turns, all with answers, two dimensions -> 12 judgments
    turns = [{"turn_id": f"k{i}_turn_1", "history": [], "question": f"q{i}", "passages": [f"p{i}"]} for i in range(6)]
    context = write_jsonl(tmp_path / "ctx6.jsonl", turns)
    answers = write_jsonl(tmp_path / "ans6.jsonl",
                          [{"turn_id": t["turn_id"], "answer": f"answer {i} SCORE={1 + i % 5}"} for i, t in enumerate(turns)])
    out = tmp_path / "judged.jsonl"
    budget = {"left": 5}

    def budgeted(s, body, nth):
        with s.lock:
            if budget["left"] > 0:
                budget["left"] -= 1
                ok = True
            else:
                ok = False
        return marker_behaviour(s, body, nth) if ok else "hang"

    server.behaviour = budgeted
    env = {**os.environ, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "k"}
    argv = [sys.executable, "-m", "reteco_measures", "judge", "generation", "--answers", str(answers),
            "--context", str(context), "--model", "m", "--out", str(out), "--dimensions",
            "correctness,relevance", "--concurrency", "2", "--no-progress", "--timeout", "30"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while server.blocked < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert server.blocked == 2, f"run did not reach the hang ({proc.poll()=}, {server.blocked=})"
        proc.kill()  # SIGKILL: no cleanup code runs
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()
    assert sum(server.answered.values()) == 5
    first_requests = len(server.requests)  # 5 answered + 2 hung
    server.release.set()
    server.behaviour = marker_behaviour
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    keys = [(r["turn_id"], r["dimension"]) for r in rows]
    assert len(keys) == 12 and len(set(keys)) == 12
    assert all(r["error"] is None for r in rows)
    assert {r["turn_id"]: r["score"] for r in rows if r["dimension"] == "correctness"} == {
        f"k{i}_turn_1": 1 + i % 5 for i in range(6)}
    # nothing answered twice; the resumed run asked only the 7 judgments not cached
    assert len(server.answered) == 12 and set(server.answered.values()) == {1}
    assert len(server.requests) - first_requests == 7
    assert "5 from cache, 7 asked" in done.stderr


# ------------------------------------------------------------------------------------------------
# judge ikat on the real iKAT 2023 sample run and topics


def test_cli_ikat_with_real_sample_run(server, tmp_path, capsys, ikat2023_dir):
    run = ikat2023_dir / "2023_sample_run.json"
    topics = ikat2023_dir / "2023_test_topics.json"
    sample = json.loads(run.read_text())
    turn_ids = [t["turn_id"] for t in sample["turns"]]
    targets = write_jsonl(tmp_path / "targets.jsonl", [{"turn_id": t} for t in turn_ids[:4]])
    out = tmp_path / "ikat.jsonl"
    assert cli_main(["judge", "ikat", "--answers", str(run), "--context", str(topics), "--targets", str(targets),
                     "--model", "gpt-4-test", "--out", str(out), "--no-progress"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["turn_id"], r["dimension"]) for r in rows] == [
        (t, d) for t in turn_ids[:4] for d in ("naturalness", "groundedness")]
    # the server's default score is 3 -> 3/4 on the iKAT scale
    assert {(r["score"], r["normalized"]) for r in rows} == {(3, 0.75)}
    ground = [r["body"]["messages"][1]["content"] for r in server.requests if r["key"][0] == "groundedness"]
    first = sample["turns"][0]["responses"][0]
    n_used = sum(1 for p in first["passage_provenance"] if p.get("used"))
    # every sample response uses the same number of passages; requests arrive in any order
    # (bounded concurrency), so check them all rather than the first to arrive
    assert len(ground) == 4 and all(c.count("some passage text") == n_used for c in ground)
    # the context came from the real topics: utterance of turn 9-1_1 is the question of one request
    conv = json.loads(topics.read_text())[0]
    assert any(conv["turns"][0]["utterance"] in c for c in ground)


def test_cli_ikat_provenance_text_from_passages_file(server, tmp_path):
    run = {"run_name": "r", "run_type": "automatic", "turns": [
        {"turn_id": "1-1_1", "responses": [
            {"rank": 2, "text": "second SCORE=1", "passage_provenance": [], "ptkb_provenance": []},
            {"rank": 1, "text": "best SCORE=4", "ptkb_provenance": [], "passage_provenance": [
                {"id": "cw:1", "score": 1.0, "used": True},
                {"id": "cw:2", "score": 0.5, "used": False},
                {"id": "cw:3", "score": 0.3, "used": True, "text": "inline text three"}]}]},
    ]}
    run_path = tmp_path / "run.json"
    run_path.write_text(json.dumps(run))
    ctx = write_jsonl(tmp_path / "c.jsonl", [{"turn_id": "1-1_1", "question": "q", "history": []}])
    out = tmp_path / "o.jsonl"
    base = ["judge", "ikat", "--answers", str(run_path), "--context", str(ctx), "--model", "m", "--out", str(out),
            "--no-progress"]
    assert cli_main(base) == 0
    rows = {r["dimension"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["naturalness"]["score"] == 4  # the rank-1 response is judged
    assert "cw:1" in rows["groundedness"]["error"] and "--passages" in rows["groundedness"]["error"]
    passages = write_jsonl(tmp_path / "p.jsonl", [{"passage_id": "cw:1", "passage_text": "file text one"},
                                                  {"id": "cw:2", "text": "unused two"}])
    assert cli_main([*base, "--passages", str(passages)]) == 0
    rows = {r["dimension"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert (rows["groundedness"]["score"], rows["groundedness"]["normalized"]) == (4, 1.0)
    sent = [r["body"]["messages"][1]["content"] for r in server.requests if r["key"][0] == "groundedness"][-1]
    assert "[1] file text one\n\n[2] inline text three" in sent and "unused two" not in sent


# ------------------------------------------------------------------------------------------------
# judge temporal -> labels read by load_labels


def test_cli_temporal_labels(server, tmp_path, capsys):
    import reteco_measures as rm

    def brain(s, body, nth):
        msgs = body["messages"]
        user = msgs[-1]["content"]
        doc = judged_text(msgs)
        if dimension_of(msgs) == "temporal_relevance":
            return score_reply(1 if "TEMPORAL" in doc else 0)
        period = re.search(r"Required period:\n(.*?)\n", user).group(1)
        if "BROKEN" in doc:
            return completion("{not json")
        return score_reply(1 if f"COVERS[{period}]" in doc else 0)

    server.behaviour = brain
    topics = write_jsonl(tmp_path / "topics.jsonl", [
        {"query_id": "q1", "query": "How did X change from 2010 to 2020?", "required_periods": ["2010", "2020"]},
        {"id": "q2", "text": "What is Y?", "required_periods": []},
    ])
    docs = write_jsonl(tmp_path / "docs.jsonl", [
        {"id": "d1", "content": "TEMPORAL COVERS[2010] COVERS[2020]"},
        {"id": "d2", "content": "TEMPORAL COVERS[2020]"},
        {"doc_id": "d3", "text": "nothing about time"},
        {"id": "d4", "content": "TEMPORAL BROKEN"},
    ])
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 9 r\nq1 Q0 d2 2 8 r\nq1 Q0 d3 3 7 r\nq1 Q0 d4 4 6 r\nq1 Q0 dX 5 5 r\n"
                   "q2 Q0 d3 1 2 r\nq2 Q0 d1 2 1 r\n")
    out = tmp_path / "labels.jsonl"
    argv = ["judge", "temporal", "--topics", str(topics), "--documents", str(docs), "--run", str(run), "--depth", "4",
            "--model", "m", "--out", str(out), "--no-progress", "--retries", "0"]
    assert cli_main(argv) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    got = {(r["query_id"], r["doc_id"]): (r["temporal"], r["periods"], r["error"] is None) for r in rows}
    assert got == {
        ("q1", "d1"): (1, ["2010", "2020"], True),
        ("q1", "d2"): (1, ["2020"], True),
        ("q1", "d3"): (0, [], True),
        ("q1", "d4"): (1, [], False),  # coverage replies invalid -> named in error, no period
        ("q2", "d3"): (0, [], True),
        ("q2", "d1"): (1, [], True),
    }
    assert all(set(r["prompt_sha256"]) <= {"temporal_relevance", "period_coverage"} for r in rows)
    d4 = next(r for r in rows if r["doc_id"] == "d4")
    assert "period '2010'" in d4["error"] and "period '2020'" in d4["error"]
    labels = rm.load_labels(out)
    assert list(labels.columns[:4]) == ["query_id", "doc_id", "temporal", "periods"]
    assert labels.set_index(["query_id", "doc_id"]).loc[("q1", "d2"), "periods"] == ["2020"]
    # 6 verdicts + q1's 4 pairs x 2 periods = 14 requests
    assert len(server.requests) == 14
    # the frozen labels drive Track 1's measures (d4's verdict is valid, only its coverage failed)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d1 1\n")
    values = rm.calc_aggregate(["TR@4", "TC@4", "TP@4"], str(qrels), str(run), labels=str(out), topics=str(topics))
    by_name = {str(k): v for k, v in values.items()}
    # TR: q1 top-4 verdicts 1,1,0,1 -> 3/4; q2 returns 2 docs, verdicts 0,1 -> 1/2; mean 0.625
    assert by_name["TemporalRelevance@4"] == pytest.approx(0.625)
    # TC: q1 needs 2010 (d1) and 2020 (d1, d2) -> 1.0; q2 has no required period -> not scored
    assert by_name["TemporalCoverage@4"] == pytest.approx(1.0)
    # TP (dcg form): w_i = 1/log2(i+1); q1 (1 + 1/log2 3 + 1/log2 5) / (1 + 1/log2 3 + 1/2 + 1/log2 5);
    # q2 (1/log2 3) / (1 + 1/log2 3)
    w = [1 / math.log2(i + 1) for i in range(1, 5)]
    assert by_name["TemporalPrecision@4"] == pytest.approx(
        ((w[0] + w[1] + w[3]) / sum(w) + w[1] / (w[0] + w[1])) / 2)


def test_cli_generation_on_the_real_recor_sample(server, tmp_path, recor_sample_dir):
    """RECOR's public sample (HTML, entities, string histories, BRIGHT ids) through the whole harness."""
    root = recor_sample_dir
    docs = {d["doc_id"]: d["content"] for d in map(json.loads, (root / "documents.jsonl").open(encoding="utf-8"))}
    context, answers = [], []
    for conv in map(json.loads, (root / "benchmark.jsonl").open(encoding="utf-8")):
        for turn in conv["turns"]:
            tid = f"{conv['id']}_turn_{turn['turn_id']}"
            context.append({"turn_id": tid, "history": turn["conversation_history"], "question": turn["query"],
                            "passages": [docs[d] for d in turn["gold_doc_ids"]]})
            answers.append({"turn_id": tid, "answer": turn["answer"]})
    assert len(context) == 13
    out = tmp_path / "recor.jsonl"
    assert cli_main(["judge", "generation", "--answers", str(write_jsonl(tmp_path / "a.jsonl", answers)),
                     "--context", str(write_jsonl(tmp_path / "c.jsonl", context)), "--model", "m", "--out", str(out),
                     "--no-progress"]) == 0
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 13 * 5 and all(r["error"] is None and r["normalized"] == 0.5 for r in rows)
    assert len(server.requests) == 65
    # turn 1's history is the literal "No previous conversation." and reaches the coherence prompt as is
    first = next(r for r in server.requests if r["key"][0] == "coherence" and "ex_3025" not in r["key"][1])
    assert "Conversation so far:\n" in first["body"]["messages"][1]["content"]


def test_temporal_missing_document_is_invalid_not_dropped(server, tmp_path):
    topics = write_jsonl(tmp_path / "t.jsonl", [{"query_id": "q1", "query": "When?", "required_periods": ["1990"]}])
    docs = write_jsonl(tmp_path / "d.jsonl", [{"id": "d1", "content": "TEMPORAL"}])
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("q1 d1\nq1 dMissing\nq9 d1\n")
    out = tmp_path / "labels.jsonl"
    # every judgment is invalid (see below): the file is written, and the exit code says nothing was judged
    assert cli_main(["judge", "temporal", "--topics", str(topics), "--documents", str(docs), "--pairs", str(pairs),
                     "--model", "m", "--out", str(out), "--no-progress", "--backoff", "0.01"]) == 1
    rows = {(r["query_id"], r["doc_id"]): r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {("q1", "d1"), ("q1", "dMissing"), ("q9", "d1")}
    assert rows["q1", "dMissing"]["temporal"] is None and "document text not found" in rows["q1", "dMissing"]["error"]
    assert "query not in the topics file" in rows["q9", "d1"]["error"]
    # the server's default reply (score 3) is outside the 0-1 verdict scale: invalid, never clamped to 1
    assert rows["q1", "d1"]["temporal"] is None and "outside 0-1" in rows["q1", "d1"]["error"]


# ------------------------------------------------------------------------------------------------
# golden-case meta-evaluation


def test_meta_eval_passes_a_judge_that_separates_and_fails_one_that_does_not(server, tmp_path, capsys):
    good = {c.good for c in GOLDEN_CASES}
    bad = {c.bad for c in GOLDEN_CASES}
    assert not good & bad

    def oracle(s, body, nth):
        dim = dimension_of(body["messages"])
        text = judged_text(body["messages"])
        hi = 5 if dim in ("correctness", "completeness", "relevance", "coherence", "faithfulness") else (
            4 if dim in ("naturalness", "groundedness") else 1)
        lo = 1 if hi == 5 else 0
        assert text in good or text in bad
        return score_reply(hi if text in good else lo)

    server.behaviour = oracle
    out = tmp_path / "meta.jsonl"
    assert cli_main(["judge", "meta-eval", "--model", "m", "--no-progress", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "separates every golden case pair" in captured.err
    cases = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(cases) == len(GOLDEN_CASES) and all(c["separated"] for c in cases)
    assert {c["dimension"] for c in cases} >= {"faithfulness", "completeness", "coherence"}

    server.behaviour = lambda s, b, n: score_reply(1)  # a judge that says 1 to everything
    assert cli_main(["judge", "meta-eval", "--model", "m2", "--no-progress", "--dimensions",
                     "faithfulness,coherence"]) == 1
    assert "does NOT separate" in capsys.readouterr().err


def test_cli_prompts_lists_hashes(capsys):
    import hashlib

    assert cli_main(["judge", "prompts", "--format", "json", "--show", "faithfulness"]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out[: out.index("\n=== system ===")])
    by = {r["dimension"]: r for r in rows}
    path = REPO / "reteco_measures" / "judge" / "prompts" / "reteco" / "faithfulness.v1.txt"
    assert by["faithfulness"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert by["groundedness"]["scale"] == "0-4" and by["coherence"]["scale"] == "1-5"
    assert "FAITHFULNESS" in out


def test_importing_the_package_does_not_need_the_openai_client():
    code = ("import sys, reteco_measures, reteco_measures.judge, reteco_measures.lexical, "
            "reteco_measures.cli.judge_cmd; "
            "bad = [m for m in ('openai', 'httpx', 'httpx2', 'rouge_score', 'nltk', 'torch', 'bert_score') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
