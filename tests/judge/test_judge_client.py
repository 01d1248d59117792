"""The judge client against the loopback fake server taught what real model servers do: echoed
placeholders, schemas ignored or honoured, one request at a time, long Retry-After, connection
resets, a /v1/models list and an echoed model name, endpoint text with HTML in it.

Every expected value follows from what the server was told to do (or is written out by hand:
request bodies, schemas), never from running our code first.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import pytest

pytest.importorskip("openai")

from judge_server import (  # noqa: E402
    JudgeServer,
    echo_placeholders,
    generation_argv,
    generation_inputs,
    honours_schema,
    ignores_schema,
    marker_behaviour,
    write_jsonl,
)

from reteco_measures.cli.main import main as cli_main  # noqa: E402
from reteco_measures.judge import JudgeClient, JudgeItem, JudgmentCache, RunStats, load_prompt, run_items  # noqa: E402
from reteco_measures.judge.cache import cache_key  # noqa: E402
from reteco_measures.judge.client import JudgeQueueingWarning  # noqa: E402
from reteco_measures.judge.replies import ReplyError, parse_reply  # noqa: E402


@pytest.fixture
def server(monkeypatch):
    s = JudgeServer()
    monkeypatch.setenv("OPENAI_BASE_URL", s.url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield s
    s.close()


def client(**kw) -> JudgeClient:
    opts = dict(timeout=3.0, retries=1, backoff=0.01, max_backoff=0.02)
    opts.update(kw)
    return JudgeClient("judge-m", **opts)


def messages(answer: str, dimension: str = "correctness"):
    p = load_prompt(dimension)
    v = {"question": "Q?", "history": "(no previous turns)", "passages": "[1] P", "answer": answer}
    return p.render({k: v[k] for k in p.placeholders}), p.low, p.high, p


def items(texts, dimension="relevance"):
    p = load_prompt(dimension)
    return [JudgeItem(p, {k: {"question": "Q?", "history": "h", "passages": "[1] P", "answer": t}[k]
                          for k in p.placeholders}, {"i": i}) for i, t in enumerate(texts)]


@pytest.fixture
def files(tmp_path):
    ans, ctx = generation_inputs(tmp_path, {f"t{i}": f"answer of t{i} SCORE=4" for i in range(3)})
    return tmp_path, ans, ctx


def argv(tmp, ans, ctx, *extra):
    return generation_argv(tmp, ans, ctx, *extra, model="judge-m", timeout=5)


def rows_of(path: Path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


# ------------------------------------------------------------------------------------------------
# 1. echoed placeholders


@pytest.mark.parametrize("rationale", [
    "<one or two sentences naming the decisive claim(s)>", "one or two sentences naming the decisive claim(s)",
    '"<One or two  sentences naming the decisive claim(s)>"', "<rationale>", "{{answer}} is fine", "", "   "])
def test_placeholder_or_empty_rationales_are_invalid(rationale):
    p = load_prompt("correctness")
    reply = json.dumps({"score": 3, "rationale": rationale})
    with pytest.raises(ReplyError) as info:
        parse_reply(reply, 1, 5, p.reply_placeholders)
    assert info.value.cause == "echoed_placeholder"
    assert "placeholder" in str(info.value) or "empty" in str(info.value)


def test_own_rationales_stay_valid():
    p = load_prompt("correctness")
    for text in ("The passage dates the halving to 2012, as the response says.", "Uses <b>bold</b> text.",
                 "One or two claims are wrong."):
        assert parse_reply(json.dumps({"score": 2, "rationale": text}), 1, 5, p.reply_placeholders) == (2, text)


def test_echoed_placeholders_are_invalid_counted_and_reported(server, files, capsys):
    tmp, ans, ctx = files
    server.behaviour = echo_placeholders
    assert cli_main(argv(tmp, ans, ctx, "--structured", "json_object")) == 1  # nothing valid
    err = capsys.readouterr().err
    rows = rows_of(tmp / "out.jsonl")
    assert len(rows) == 3 and all(r["score"] is None for r in rows)
    for r in rows:
        assert 'copies the prompt\'s placeholder "<one or two sentences naming the decisive claim(s)>"' in r["error"]
        # the first reply, then the same reply to the repair message
        assert r["retry_causes"] == ["echoed_placeholder", "identical_reply"] and r["attempts"] == 2
    assert "'echoed_placeholder': 3" in err and "'identical_reply': 3" in err
    # the repair message named the reason and carried the schema
    repairs = [r["body"]["messages"] for r in server.requests if len(r["body"]["messages"]) == 4]
    assert len(repairs) == 3 and len(server.requests) == 6
    repair = repairs[0]
    assert repair[2]["role"] == "assistant" and "<one or two sentences" in repair[2]["content"]
    assert "copies the prompt's placeholder" in repair[3]["content"] and '"enum":[1,2,3,4,5]' in repair[3]["content"]
    assert cli_main(["judge", "report", "--judgments", str(tmp / "out.jsonl"), "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["echoed_placeholders"] == {"invalid_judgments": 3, "attempts": 3}
    assert rep["retry_procedure"]["attempts_by_cause"] == {"echoed_placeholder": 3, "identical_reply": 3}
    (dim,) = rep["dimensions"]
    assert dim["invalid_judgments"] == 3 and dim["invalid_by_kind"] == {"response": 3}


# ------------------------------------------------------------------------------------------------
# 2. structured output: the schema sent in each form

SCHEMA_1_5 = {"type": "object",
              "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}, "rationale": {"type": "string"}},
              "required": ["score", "rationale"], "additionalProperties": False}


@pytest.mark.parametrize(("mode", "sent", "valid"), [
    ("json_schema", {"type": "json_schema", "json_schema": {"name": "judgment", "strict": True,
                                                            "schema": SCHEMA_1_5}}, True),
    ("schema-in-object", {"type": "json_object", "schema": SCHEMA_1_5}, True),
    ("json_object", {"type": "json_object"}, False),
    ("none", None, False),
])
def test_structured_modes_send_the_score_schema(server, mode, sent, valid):
    server.behaviour = honours_schema  # a constrained server: only a schema makes it answer a judgment
    msgs, lo, hi, _ = messages("x")
    with client(structured=mode, retries=0) as c:
        v = c.judge(msgs, lo, hi)
    body = server.requests[0]["body"]
    assert body.get("response_format") == sent
    assert v.valid is valid
    if valid:
        assert (v.score, v.rationale) == (1, "constrained by the schema")  # the schema's lowest score
    else:
        assert "reply has no 'score'" in v.error


def test_a_server_that_ignores_the_schema_is_still_parsed_strictly(server):
    server.behaviour = ignores_schema
    msgs, lo, hi, _ = messages("x")
    with client(structured="json_schema", retries=1) as c:
        v = c.judge(msgs, lo, hi)
    assert v.kind == "response" and v.causes == ("invalid_reply", "identical_reply")


@pytest.mark.parametrize(("owned_by", "expected"), [
    ("me", {"type": "json_object", "schema": SCHEMA_1_5}),  # llama-cpp-python
    ("vllm", {"type": "json_schema", "json_schema": {"name": "judgment", "strict": True, "schema": SCHEMA_1_5}}),
    ("acme-proxy", {"type": "json_object"}),  # unknown: JSON mode
    (None, {"type": "json_object"}),  # GET /models answers 404
])
def test_auto_chooses_the_form_from_get_models(server, owned_by, expected):
    if owned_by is not None:
        server.models = [{"id": "some-model", "object": "model", "owned_by": owned_by}]
    msgs, lo, hi, _ = messages("SCORE=2")
    with client() as c:
        assert c.judge(msgs, lo, hi).score == 2
    assert server.requests[0]["body"]["response_format"] == expected
    assert server.gets == ["/v1/models"]  # asked once, before the first judgment


# ------------------------------------------------------------------------------------------------
# 4. seeds and every answer-changing setting in the cache key


def test_seed_top_p_reply_tokens_and_structured_mode_enter_the_cache_key(server, tmp_path):
    cache = JudgmentCache(tmp_path / "c")
    its = items(["one SCORE=4"])
    runs = [dict(), dict(seed=1), dict(seed=2), dict(seed=1), dict(top_p=0.5), dict(max_tokens=64),
            dict(structured="json_schema"), dict()]
    for kw in runs:
        with client(**kw) as c:
            run_items(its, c, cache)
    # asked: default, seed 1, seed 2, top_p, max_tokens, json_schema; served from the cache: seed 1 again, default
    assert len(server.requests) == 6
    bodies = [r["body"] for r in server.requests]
    assert [b.get("seed") for b in bodies] == [None, 1, 2, None, None, None]
    assert bodies[3]["top_p"] == 0.5 and bodies[4]["max_tokens"] == 64
    # the default settings keep the key of earlier versions: no settings in it
    p = its[0].prompt
    assert (tmp_path / "c" / cache_key(p.sha256, "judge-m", its[0].inputs)[:2]).is_dir()


def test_cli_seed_is_sent_and_recorded(server, files):
    tmp, ans, ctx = files
    assert cli_main(argv(tmp, ans, ctx, "--seed", "7", "--top-p", "0.9")) == 0
    assert {r["body"]["seed"] for r in server.requests} == {7}
    assert {r["body"]["top_p"] for r in server.requests} == {0.9}
    record = json.loads((tmp / "out.jsonl.run.json").read_text())
    assert record["settings"]["seed"] == 7 and record["settings"]["structured"] == "json_object"


# ------------------------------------------------------------------------------------------------
# 5. one request at a time: measured and warned


def test_a_server_that_answers_one_request_at_a_time_is_detected(server):
    server.serial, server.delay = True, 0.12
    stats = RunStats()
    with client() as c, pytest.warns(JudgeQueueingWarning, match="one request at a time"):
        run_items(items([f"t{i} SCORE=3" for i in range(10)]), c, None, concurrency=4, stats=stats)
    t = stats.throughput
    assert server.max_inflight == 4  # four were sent at once ...
    assert t["queueing"] is True and t["parallelism"] < 1.5  # ... and answered one after another
    # 10 answers of 0.12 s in a row: about 8 requests/s at most
    assert t["requests"] == 10 and t["requests_per_s"] <= 1 / 0.12 + 0.5


def test_a_parallel_server_gives_no_warning(server):
    server.delay = 0.12
    stats = RunStats()
    with client() as c, warnings.catch_warnings():
        warnings.simplefilter("error", JudgeQueueingWarning)
        run_items(items([f"t{i} SCORE=3" for i in range(12)]), c, None, concurrency=4, stats=stats)
    assert stats.throughput["queueing"] is False and stats.throughput["parallelism"] > 2.5


# ------------------------------------------------------------------------------------------------
# 6. model identity


def test_the_served_model_is_recorded_beside_the_echoed_name(server, files, capsys):
    tmp, ans, ctx = files
    server.models = [{"id": "/models/gemma-3-270m.gguf", "object": "model", "owned_by": "me"}]
    server.returned_model = "echo"
    server.usage = {"prompt_tokens": 50, "completion_tokens": 5}
    assert cli_main(argv(tmp, ans, ctx)) == 0
    rows = rows_of(tmp / "out.jsonl")
    assert {(r["response_model"], r["served_model"]) for r in rows} == {("judge-m", "/models/gemma-3-270m.gguf")}
    assert server.requests[0]["body"]["response_format"]["type"] == "json_object"
    assert "schema" in server.requests[0]["body"]["response_format"]  # auto: llama-cpp-python's form
    capsys.readouterr()
    assert cli_main(["judge", "report", "--judgments", str(tmp / "out.jsonl"), "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    ident = rep["model"]["endpoint_models"]
    assert ident["listed"] == ["/models/gemma-3-270m.gguf"] and "echoes the request" in ident["note"]
    assert rep["tokens"]["by_model"] == [{"response_model": "judge-m", "served_model": "/models/gemma-3-270m.gguf",
                                          "judgments": 3, "requests": 3, "prompt_tokens": 150,
                                          "completion_tokens": 15}]


# ------------------------------------------------------------------------------------------------
# issue 20: escaping, --max-wait, resets, exit codes


def test_endpoint_text_is_escaped_in_every_report_format(server, files, capsys):
    markdown = pytest.importorskip("markdown")
    tmp, ans, ctx = files
    evil = '<script>alert("x")</script>'
    server.returned_model = evil
    server.models = [{"id": "<img src=x onerror=alert(1)>", "owned_by": "[a](javascript:alert(1))"}]

    def brain(s, body, nth):
        if "t1" in body["messages"][1]["content"]:
            return 500, {}, "<iframe src=//evil>| **bold** `code`"
        return marker_behaviour(s, body, nth)

    server.behaviour = brain
    assert cli_main(argv(tmp, ans, ctx, "--retries", "0")) == 0
    capsys.readouterr()
    assert cli_main(["judge", "report", "--judgments", str(tmp / "out.jsonl")]) == 0
    md = capsys.readouterr().out
    html = markdown.markdown(md, extensions=["tables", "fenced_code"])
    for tag in ("<script", "<img", "<iframe", "<a ", "<strong>bold", "<code>code"):
        assert tag not in html, tag
    assert "&lt;script&gt;alert" in html and "&lt;iframe src=//evil&gt;" in html
    assert cli_main(["judge", "report", "--judgments", str(tmp / "out.jsonl"), "--format", "json"]) == 0
    text = capsys.readouterr().out
    assert "<" not in text and ">" not in text and "&" not in text.replace("\\u0026", "")
    rep = json.loads(text)
    assert rep["model"]["returned"] == {evil: 2}  # the same value, only written safely


def test_max_wait_bounds_a_long_retry_after(server):
    server.retry_after = "100000"
    msgs, lo, hi, _ = messages("RATE429 SCORE=5")
    t0 = time.monotonic()
    with client(max_retry_after=0.3, retries=1) as c:
        v = c.judge(msgs, lo, hi)
    assert (v.score, v.attempts, v.causes) == (5, 2, ("http_429",))
    gap = server.requests[1]["t"] - server.requests[0]["t"]
    assert 0.25 <= gap < 2 and time.monotonic() - t0 < 3


def test_cli_max_wait(server, files):
    tmp, ans, ctx = files
    server.retry_after = "100000"
    write_jsonl(ans, [{"turn_id": "t0", "answer": "RATE429 SCORE=2"}])
    t0 = time.monotonic()
    assert cli_main(argv(tmp, ans, ctx, "--max-wait", "0.2", "--concurrency", "1")) == 0
    assert time.monotonic() - t0 < 5
    assert rows_of(tmp / "out.jsonl")[0]["score"] == 2


def test_a_reset_with_no_retries_marks_the_item_and_the_run_goes_on(server, files, capsys):
    tmp, ans, ctx = files
    # the very first request is reset, before the endpoint has answered anything
    write_jsonl(ans, [{"turn_id": "t0", "answer": "RESETONCE SCORE=2"}, {"turn_id": "t1", "answer": "SCORE=4"},
                      {"turn_id": "t2", "answer": "SCORE=5"}])
    assert cli_main(argv(tmp, ans, ctx, "--retries", "0", "--concurrency", "1")) == 0
    rows = {r["turn_id"]: r for r in rows_of(tmp / "out.jsonl")}
    assert rows["t0"]["error_kind"] == "transport" and rows["t0"]["retry_causes"] == ["reset"]
    assert "reset after connecting" in rows["t0"]["error"]
    assert (rows["t1"]["score"], rows["t2"]["score"]) == (4, 5)
    # not cached: the next run asks it again and gets the answer
    assert cli_main(argv(tmp, ans, ctx, "--retries", "0")) == 0
    assert {r["turn_id"]: r["score"] for r in rows_of(tmp / "out.jsonl")} == {"t0": 2, "t1": 4, "t2": 5}


def test_limit_stop_and_internal_error_have_distinct_exit_codes(server, files, monkeypatch, capsys):
    tmp, ans, ctx = files
    assert cli_main(argv(tmp, ans, ctx, "--max-requests", "1", "--concurrency", "1")) == 4
    assert "stopped: --max-requests 1 reached" in capsys.readouterr().err

    def boom(*a, **k):
        raise RuntimeError("a bug")

    monkeypatch.setattr("reteco_measures.judge.generation.judgment_rows", boom)
    assert cli_main(argv(tmp, ans, ctx)) == 3
    assert "internal error" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["generation", "ikat", "temporal", "meta-eval"])
def test_help_of_a_judging_command_documents_the_environment(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli_main(["judge", command, "--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "HTTPS_PROXY"):
        assert name in out, name
    assert "unset: no Authorization header" in out


# ------------------------------------------------------------------------------------------------
# the openai client makes the HTTP retries; structured output falls back when the server rejects it


def test_http_retries_are_the_openai_clients(server):
    """openai's retry loop numbers its attempts in the ``X-Stainless-Retry-Count`` header (its own
    convention): a 5xx then an answer, and a 429 then an answer, are retried by it."""
    calls = []

    def brain(s, body, nth):
        calls.append(nth)
        if nth == 1:
            return 500, {}, "boom"
        return marker_behaviour(s, body, nth)

    server.behaviour = brain
    msgs, lo, hi, _ = messages("SCORE=3")
    with client(retries=2) as c:
        v = c.judge(msgs, lo, hi)
    assert (v.score, v.attempts, v.causes) == (3, 2, ("http_5xx",))
    assert [r["headers"].get("X-Stainless-Retry-Count") for r in server.requests] == ["0", "1"]


def test_every_http_attempt_counts_against_the_budget(server):
    from reteco_measures.judge.budget import Budget

    server.behaviour = lambda s, body, nth: (500, {}, "boom")
    msgs, lo, hi, _ = messages("x")
    budget = Budget(2, None)
    with client(retries=5, budget=budget) as c:
        v = c.judge(msgs, lo, hi)
    assert v.kind == "limit" and "not asked" in v.error and v.attempts == 2 and len(server.requests) == 2


def test_a_rejected_json_schema_falls_back_to_json_mode_and_stays_there(server):
    def brain(s, body, nth):  # an older server: 400 for a json_schema response_format
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return 400, {}, json.dumps({"error": {"message": "response_format type json_schema is not supported"}})
        return marker_behaviour(s, body, nth)

    server.behaviour = brain
    msgs, lo, hi, _ = messages("SCORE=4")
    with client(structured="json_schema", retries=0) as c:
        v = c.judge(msgs, lo, hi)
        assert (v.score, v.attempts, v.causes) == (4, 2, ("structured_unsupported",))
        assert c.resolved_structured() == "json_object"
        assert c.judge(msgs, lo, hi).score == 4
    sent = [r["body"].get("response_format") for r in server.requests]
    assert [f["type"] for f in sent] == ["json_schema", "json_object", "json_object"]


def test_a_400_for_another_reason_is_still_a_request_error(server):
    server.behaviour = lambda s, body, nth: (400, {}, "context length exceeded")
    msgs, lo, hi, _ = messages("x")
    with client(structured="json_schema", retries=2) as c:
        v = c.judge(msgs, lo, hi)
        assert c.resolved_structured() == "json_schema"
    assert v.kind == "request" and v.attempts == 1 and len(server.requests) == 1


def test_a_wait_given_in_retry_after_ms_is_honoured(server):
    """OpenAI's API also states the wait in milliseconds (``retry-after-ms``); the openai client's
    own parser reads it, so a 429 carrying only that header waits 0.8 s, not the judge's 0.01 s
    backoff."""
    def brain(s, body, nth):
        return (429, {"retry-after-ms": "800"}, "slow down") if nth == 1 else marker_behaviour(s, body, nth)

    server.behaviour = brain
    msgs, lo, hi, _ = messages("SCORE=4")
    with client(retries=1) as c:
        v = c.judge(msgs, lo, hi)
    assert (v.score, v.attempts, v.causes) == (4, 2, ("http_429",))
    gap = server.requests[1]["t"] - server.requests[0]["t"]
    assert 0.75 <= gap < 2, gap


def test_max_wait_above_two_minutes_is_the_cut(server, monkeypatch):
    """``--max-wait`` is the cut of a ``Retry-After`` also above the 120 s the openai client waits
    at most by itself: a 503 asking for 150 s with ``max_retry_after=130`` waits 130 s. The wait is
    read from the client's retry loop (its ``time.sleep``, recorded instead of slept)."""
    import types

    import openai._base_client as base

    waits: list[float] = []
    monkeypatch.setattr(base, "time", types.SimpleNamespace(sleep=waits.append, time=time.time))

    def brain(s, body, nth):
        return (503, {"Retry-After": "150"}, "busy") if nth == 1 else marker_behaviour(s, body, nth)

    server.behaviour = brain
    msgs, lo, hi, _ = messages("SCORE=2")
    with client(retries=1, max_retry_after=130) as c:
        v = c.judge(msgs, lo, hi)
    assert (v.score, v.causes) == (2, ("http_5xx",))
    assert waits == [130.0]
