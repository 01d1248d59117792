"""`JudgeSession`: the judging session without the command line (limits, resume, exit codes;
batch-then-fallback is tested through the CLI in test_judge_batch.py) and the ``OUT.run.json`` record written beside the file a run wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from judge_server import JudgeServer  # noqa: E402

from reteco_measures.judge import (  # noqa: E402
    Budget,
    JudgeClient,
    JudgeItem,
    JudgeSession,
    JudgmentCache,
    load_prompt,
    read_run_records,
    run_record,
    write_run_record,
)


@pytest.fixture
def server(monkeypatch):
    s = JudgeServer()
    monkeypatch.setenv("OPENAI_BASE_URL", s.url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield s
    s.close()


def items(texts):
    p = load_prompt("relevance")
    return [JudgeItem(p, {k: {"question": "Q?", "history": "h", "passages": "[1] P", "answer": t}[k]
                          for k in p.placeholders}, {"i": i}) for i, t in enumerate(texts)]


def client(budget=None):
    return JudgeClient("m", timeout=2.0, retries=1, backoff=0.01, budget=budget)


def test_a_session_judges_prints_nothing_and_resumes_from_its_cache(server, tmp_path, capsys):
    cache = JudgmentCache(tmp_path / "cache")
    seen = []
    first = JudgeSession(client(), cache, concurrency=2, on_progress=lambda d, t, s: seen.append((d, t))).run(
        items(["a SCORE=4", "b SCORE=2"]))
    assert first.status == "done" and first.exit_code == 0 and first.final_code() == (0, None)
    assert [o.verdict.score for o in first.outcomes] == [4, 2]
    assert seen[-1] == (2, 2) and capsys.readouterr() == ("", "")
    again = JudgeSession(client(), cache).run(items(["a SCORE=4", "b SCORE=2"]))
    assert (again.stats.cached, again.stats.asked, len(server.requests)) == (2, 0, 2)  # nothing asked twice


def test_a_request_limit_stops_the_session_with_exit_4(server, tmp_path):
    result = JudgeSession(client(Budget(max_requests=1)), JudgmentCache(tmp_path / "c"), concurrency=1).run(
        items(["a SCORE=4", "b SCORE=2", "c SCORE=3"]))
    assert result.status == "limit" and result.exit_code == 4 and result.outcomes is None
    assert "--max-requests 1 reached" in result.messages[-1] and len(server.requests) == 1


def test_nothing_valid_is_exit_1_and_an_unreachable_endpoint_is_fatal(server, tmp_path, monkeypatch):
    result = JudgeSession(client()).run(items(["MALFORMED"]))
    assert result.final_code()[0] == 1 and "no judgment could be made" in result.final_code()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    fatal = JudgeSession(client()).run(items(["a SCORE=4"]))
    assert fatal.status == "fatal" and fatal.exit_code == 2 and "cannot be reached" in fatal.messages[0]


def test_the_run_record_is_read_back_beside_the_file_it_describes(server, tmp_path):
    result = JudgeSession(client()).run(items(["a SCORE=4"]))
    out = tmp_path / "j.jsonl"
    write_run_record(out, run_record(result, result.outcomes, command="generation", repeats=1, price_in=1.5,
                                     extra={"scale": "reteco"}))
    (rec,) = read_run_records([out, tmp_path / "absent.jsonl"])
    assert json.loads((tmp_path / "j.jsonl.run.json").read_text()) == rec
    assert (rec["command"], rec["price_in"], rec["scale"], rec["last_run"]["asked"]) == ("generation", 1.5, "reteco", 1)
    assert rec["settings"]["model"] == "m" and rec["prompts"][0]["dimension"] == "relevance"
