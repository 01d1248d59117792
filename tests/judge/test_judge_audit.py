"""The judge audit at a loopback chat-completions server: repeats (cached per repeat, resumable),
request and token limits that stop cleanly and resume, token totals and cost, rating sheets, and
the disclosure report's fields. Expected values follow from what the server was told to answer."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("openai")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

from judge_server import generation_argv, write_jsonl  # noqa: E402

from reteco_measures.cli.main import main as cli_main  # noqa: E402
from reteco_measures.judge import load_prompt  # noqa: E402
from reteco_measures.judge.sampling import allocate  # noqa: E402

PROMPT_TOKENS, COMPLETION_TOKENS = 100, 10


class Server:
    """Markers in the judged answer: ``SCORES=a,b,c`` (the n-th request for this text gets the
    n-th score, cycling), ``FAIL500ONCE`` (first request HTTP 500), ``INVALID`` (content not JSON).
    Every 200 reply reports 100 prompt and 10 completion tokens and the model ``served-x``."""

    def __init__(self) -> None:
        self.count: Counter = Counter()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                user = next(m["content"] for m in body["messages"] if m["role"] == "user")
                text = re.search(r"Response to judge:\n(.*?)\n\nJudge the", user, re.S).group(1)
                with server.lock:
                    server.count[text] += 1
                    n = server.count[text]
                if "FAIL500ONCE" in text and n == 1:
                    status, data = 500, b"try again"
                else:
                    scores = [int(x) for x in re.search(r"SCORES=([\d,]+)", text).group(1).split(",")] \
                        if "SCORES=" in text else [3]
                    content = "no json here" if "INVALID" in text else json.dumps(
                        {"score": scores[(n - 1) % len(scores)], "rationale": "r"})
                    status, data = 200, json.dumps({
                        "model": "served-x", "usage": {"prompt_tokens": PROMPT_TOKENS,
                                                       "completion_tokens": COMPLETION_TOKENS},
                        "choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def requests(self) -> int:
        return sum(self.count.values())


@pytest.fixture
def server(monkeypatch):
    s = Server()
    monkeypatch.setenv("OPENAI_BASE_URL", s.url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()




def inputs(tmp: Path, answers: dict[str, str]) -> tuple[Path, Path]:
    ctx = write_jsonl(tmp / "ctx.jsonl", [{"turn_id": t, "question": f"question {t}", "history": [],
                                           "passages": [f"passage {t}"]} for t in answers])
    ans = write_jsonl(tmp / "ans.jsonl", [{"turn_id": t, "answer": a} for t, a in answers.items()])
    return ans, ctx


def argv(tmp, ans, ctx, *extra, out="out.jsonl"):
    return generation_argv(tmp, ans, ctx, "--concurrency", "1", *extra, out=out)


def read_rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


# ------------------------------------------------------------------------------------------------


def test_repeats_are_cached_per_repeat_resumable_and_aggregated(server, tmp_path, capsys):
    ans, ctx = inputs(tmp_path, {"t0": "a SCORES=2,4,5", "t1": "b SCORES=3", "t2": "c SCORES=1,5"})
    assert cli_main(argv(tmp_path, ans, ctx, "--repeats", "3")) == 0
    rows = read_rows(tmp_path / "out.jsonl")
    got = {(r["turn_id"], r["repeat"]): r["score"] for r in rows}
    assert got == {("t0", 0): 2, ("t0", 1): 4, ("t0", 2): 5, ("t1", 0): 3, ("t1", 1): 3, ("t1", 2): 3,
                   ("t2", 0): 1, ("t2", 1): 5, ("t2", 2): 1}
    assert server.requests == 9
    # summary (mean of repeats per turn, then over turns): t0 (0.25+0.75+1)/3, t1 0.5, t2 (0+1+0)/3 -> 0.5
    out = capsys.readouterr().out
    assert re.search(r"correctness\s+0\.5000\s+3\s+0", out), out
    # a rerun asks nothing; one more repeat asks exactly one judgment per turn
    assert cli_main(argv(tmp_path, ans, ctx, "--repeats", "3")) == 0
    assert server.requests == 9
    assert cli_main(argv(tmp_path, ans, ctx, "--repeats", "4")) == 0
    assert server.requests == 12 and set(server.count.values()) == {4}
    rows = read_rows(tmp_path / "out.jsonl")
    assert {(r["turn_id"], r["repeat"]): r["score"] for r in rows if r["repeat"] == 3} == {
        ("t0", 3): 2, ("t1", 3): 3, ("t2", 3): 5}
    capsys.readouterr()
    # aggregation choices over repeats 0-3: t0 (2,4,5,2), t1 (3,3,3,3), t2 (1,5,1,5)
    expected = {"mean": ((13 / 4 - 1) / 4 + 0.5 + 0.5) / 3,
                "median": ((3 - 1) / 4 + 0.5 + 0.5) / 3,   # medians 3, 3, 3
                "mode": ((2 - 1) / 4 + 0.5 + 0.0) / 3}     # modes 2, 3, 1 (lowest of the tied 1 and 5)
    for how, value in expected.items():
        assert cli_main(["judge", "aggregate", str(tmp_path / "out.jsonl"), "--aggregate", how, "--format",
                         "json"]) == 0
        (row,) = json.loads(capsys.readouterr().out)
        assert row["value"] == pytest.approx(value) and row["n"] == 3, how


def test_max_requests_stops_cleanly_and_the_next_run_resumes(server, tmp_path, capsys):
    ans, ctx = inputs(tmp_path, {f"t{i}": f"answer {i} SCORES={1 + i % 5}" for i in range(10)})
    assert cli_main(argv(tmp_path, ans, ctx, "--max-requests", "4")) == 4
    err = capsys.readouterr().err
    assert "stopped: --max-requests 4 reached" in err and "4 of 10 judgments are finished" in err
    assert server.requests == 4 and not (tmp_path / "out.jsonl").exists()
    assert cli_main(argv(tmp_path, ans, ctx)) == 0
    assert "4 from cache, 6 asked" in capsys.readouterr().err
    assert server.requests == 10 and set(server.count.values()) == {1}
    rows = read_rows(tmp_path / "out.jsonl")
    assert [r["score"] for r in rows] == [1 + i % 5 for i in range(10)]


def test_max_tokens_stops_cleanly(server, tmp_path, capsys):
    ans, ctx = inputs(tmp_path, {f"t{i}": f"answer {i}" for i in range(6)})
    # 110 tokens per request: 110, 220 (< 250, so a third is sent), 330 -> the fourth is not sent
    assert cli_main(argv(tmp_path, ans, ctx, "--max-tokens", "250")) == 4
    assert server.requests == 3
    assert "--max-tokens 250 reached (330 tokens used)" in capsys.readouterr().err
    assert cli_main(argv(tmp_path, ans, ctx)) == 0 and server.requests == 6


def test_token_totals_retry_causes_and_cost(server, tmp_path, capsys):
    ans, ctx = inputs(tmp_path, {"t0": "x FAIL500ONCE SCORES=4", "t1": "y SCORES=2", "t2": "z INVALID"})
    assert cli_main(argv(tmp_path, ans, ctx, "--price-in", "2.5", "--price-out", "10")) == 0
    err = capsys.readouterr().err
    # requests: t0 500 then 200; t1 200; t2 two invalid 200s -> 5 requests, 4 with usage
    pt, ct = 4 * PROMPT_TOKENS, 4 * COMPLETION_TOKENS
    cost = pt / 1e6 * 2.5 + ct / 1e6 * 10
    assert f"this run: 5 request(s), {pt} prompt + {ct} completion tokens, estimated cost {cost:.4f}" in err
    # t2: the invalid reply, then the same reply to the repair message (no further retry)
    assert "'http_5xx': 1" in err and "'invalid_reply': 1" in err and "'identical_reply': 1" in err
    assert "'answered': 2" in err
    rows = {r["turn_id"]: r for r in read_rows(tmp_path / "out.jsonl")}
    assert (rows["t0"]["attempts"], rows["t0"]["retry_causes"], rows["t0"]["prompt_tokens"]) == (2, ["http_5xx"], 100)
    assert rows["t0"]["response_model"] == "served-x" and rows["t0"]["completion_tokens"] == 10
    assert (rows["t2"]["error_kind"], rows["t2"]["prompt_tokens"]) == ("response", 200)
    record = json.loads((tmp_path / "out.jsonl.run.json").read_text())
    assert record["settings"]["temperature"] == 0 and record["settings"]["retries"] == 1
    assert record["last_run"]["prompt_tokens"] == pt and record["price_in"] == 2.5
    assert "k" not in json.dumps(record["settings"]).replace('"', " ").split()  # the key is not recorded


def test_allocation_by_hand():
    assert allocate([8, 4, 8, 4], 6) == [2, 1, 2, 1]
    assert allocate([10, 1], 3) == [2, 1]       # at least one per stratum
    assert allocate([5, 5, 5], 2) == [1, 1, 0]  # fewer items than strata: largest remainders, then order
    assert allocate([1, 10], 5) == [1, 4]
    assert allocate([1, 1], 5) == [1, 1]        # never more than a stratum holds
    assert allocate([3, 0, 3], 4) == [2, 0, 2]


def sample_judgments(tmp: Path) -> tuple[Path, Path]:
    rows = []
    for dim in ("correctness", "relevance"):
        p = load_prompt(dim)
        for i in range(12):
            rows.append({"turn_id": f"c{i}_turn_1", "dimension": dim, "score": 1 + i % 5, "normalized": None,
                         "model": "m", "prompt_sha256": p.sha256, "error": None, "repeat": 0,
                         "inputs": {k: v for k, v in {"question": f"q{i}", "history": "(no previous turns)",
                                                      "passages": f"[1] p{i}", "answer": f"ans{i}"}.items()
                                    if k in p.placeholders}})
    rows.append({"turn_id": "c99_turn_1", "dimension": "correctness", "score": None, "error": "timeout",
                 "prompt_sha256": load_prompt("correctness").sha256, "repeat": 0})
    topics = write_jsonl(tmp / "topics.jsonl", [{"query_id": f"c{i}_turn_1", "domain": "A" if i < 8 else "B"}
                                                for i in range(12)])
    return write_jsonl(tmp / "j.jsonl", rows), topics


def test_rating_sheet_is_reproducible_and_stratified(tmp_path, capsys):
    judgments, topics = sample_judgments(tmp_path)
    base = ["judge", "sample", "--judgments", str(judgments), "--n", "6", "--raters", "ann,bob"]
    assert cli_main([*base, "--out", str(tmp_path / "s1.csv"), "--seed", "3"]) == 0
    assert cli_main([*base, "--out", str(tmp_path / "s2.csv"), "--seed", "3"]) == 0
    assert cli_main([*base, "--out", str(tmp_path / "s3.csv"), "--seed", "4"]) == 0
    s1 = (tmp_path / "s1.csv").read_bytes()
    assert s1 == (tmp_path / "s2.csv").read_bytes() and s1 != (tmp_path / "s3.csv").read_bytes()
    sheet = pd.read_csv(tmp_path / "s1.csv", dtype=str, keep_default_na=False)
    assert sheet["dimension"].value_counts().to_dict() == {"correctness": 3, "relevance": 3}
    assert list(sheet["item"]) == [str(i) for i in range(1, 7)]
    assert {"turn_id", "dimension", "scale", "question", "answer", "rubric", "score_ann", "score_bob"} <= set(sheet)
    assert "score" not in sheet.columns and "c99_turn_1" not in set(sheet["turn_id"])  # blind; invalid not sampled
    row = sheet.iloc[0]
    assert row["rubric"] == load_prompt(row["dimension"]).system
    assert row["answer"] == "ans" + row["turn_id"][1:].split("_")[0]
    assert (sheet["score_ann"] == "").all()
    # strata from the topics: (dimension, domain) sizes 8, 4, 8, 4 -> 2, 1, 2, 1
    capsys.readouterr()
    assert cli_main([*base, "--out", str(tmp_path / "s4.csv"), "--stratify", "dimension,domain", "--topics",
                     str(topics), "--format", "json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert {(c["dimension"], c["domain"]): c["items"] for c in counts} == {
        ("correctness", "A"): 2, ("correctness", "B"): 1, ("relevance", "A"): 2, ("relevance", "B"): 1}


def test_the_disclosure_report_has_every_field(server, tmp_path, capsys):
    answers = {"t0": "a SCORES=4,5", "t1": "b FAIL500ONCE SCORES=2", "t2": "c SCORES=3,1", "t3": "d INVALID"}
    ans, ctx = inputs(tmp_path, answers)
    assert cli_main(argv(tmp_path, ans, ctx, "--repeats", "2", "--price-in", "1", "--price-out", "4")) == 0
    out = tmp_path / "out.jsonl"
    # human ratings: a sheet filled in by two raters
    assert cli_main(["judge", "sample", "--judgments", str(out), "--n", "3", "--raters", "ann,bob", "--out",
                     str(tmp_path / "sheet.csv")]) == 0
    sheet = pd.read_csv(tmp_path / "sheet.csv", dtype=str, keep_default_na=False)
    assert sorted(sheet["turn_id"]) == ["t0", "t1", "t2"]  # t3 has no valid judgment
    human = {"t0": ("4", "5"), "t1": ("2", "3"), "t2": ("1", "2")}
    sheet["score_ann"] = [human[t][0] for t in sheet["turn_id"]]
    sheet["score_bob"] = [human[t][1] for t in sheet["turn_id"]]
    sheet.to_csv(tmp_path / "sheet.csv", index=False)
    golden = write_jsonl(tmp_path / "golden.jsonl", [
        {"case_id": "c1", "dimension": "correctness", "good": 5, "bad": 1, "separated": True, "error": None},
        {"case_id": "c2", "dimension": "correctness", "good": 2, "bad": 2, "separated": False, "error": None}])
    targets = tmp_path / "targets.txt"
    targets.write_text("t0\nt1\nt2\nt3\nt4\n")
    capsys.readouterr()
    assert cli_main(["judge", "report", "--judgments", str(out), "--human", str(tmp_path / "sheet.csv"),
                     "--golden", str(golden), "--targets", str(targets), "--format", "json", "--bootstrap",
                     "100"]) == 0
    rep = json.loads(capsys.readouterr().out)
    (dim,) = rep["dimensions"]
    # judge scores per turn (repeats 0, 1): t0 4,5; t1 2,2; t2 3,1; t3 invalid twice -> means 4.5, 2, 2
    assert (dim["items"], dim["valid_items"], dim["invalid_items"], dim["missing_items"]) == (4, 3, 1, 1)
    assert dim["raw_mean"] == pytest.approx((4.5 + 2 + 2) / 3)
    assert dim["normalized_mean"] == pytest.approx(((4.5 + 2 + 2) / 3 - 1) / 4)
    assert dim["invalid_by_kind"] == {"response": 2} and dim["invalid_judgments"] == 2
    assert any("reply is not a JSON object" in k for k in dim["invalid_by_reason"])
    (prompt,) = rep["prompts"]
    p = load_prompt("correctness")
    assert (prompt["sha256"], prompt["version"]) == (p.sha256, p.version) and p.system in prompt["text"]
    assert rep["model"]["requested"] == ["m"] and rep["model"]["returned"] == {"served-x": 8}
    assert rep["decoding"]["temperature"] == 0 and rep["decoding"]["structured"] != "none"
    assert rep["retry_procedure"]["retries"] == 1 and rep["retry_procedure"]["timeout"] == 60
    # t1 repeat 0: a 500 then the reply; t1 repeat 1 is the server's third request for that text: no 500
    # t3's two judgments: an invalid reply, then the same reply to the repair message
    assert rep["retry_procedure"]["retry_causes"] == {"invalid_reply": 2, "identical_reply": 2, "http_5xx": 1}
    # six judgments (t0, t1, t2 x 2 repeats) ended with an answered attempt
    assert rep["retry_procedure"]["attempts_by_cause"] == {"answered": 6, "http_5xx": 1, "identical_reply": 2,
                                                           "invalid_reply": 2}
    assert rep["retry_procedure"]["attempts_histogram"] == {"1": 5, "2": 3}
    assert rep["repeats"]["k"] == 2 and rep["repeats"]["aggregate"] == "mean"
    (sc,) = rep["repeats"]["self_consistency"]
    assert sc["items"] == 3 and sc["identical"] == pytest.approx(1 / 3)
    ag = rep["agreement"]
    assert ag["sample"]["raters"] == ["ann", "bob"] and ag["sample"]["items"] == 3
    (row,) = ag["table"]
    # judge lower medians 4, 2, 1 against the consensus (lower medians 4, 2, 1): identical
    assert row["n"] == 3 and row["exact"] == 1.0
    # three items: no interval, and the table says why
    assert row["kappa_ci_low"] is None and "too small for an interval" in row["note"]
    assert row["kappa_quadratic"] == pytest.approx(sklearn_metrics.cohen_kappa_score(
        [4, 2, 1], [4, 2, 1], weights="quadratic", labels=[1, 2, 3, 4, 5]))
    assert rep["golden"]["by_dimension"] == [{"dimension": "correctness", "pairs": 2, "separated": 1, "invalid": 0,
                                              "accuracy": 0.5}]
    # requests = the attempts above: 5 x 1 + 3 x 2 = 11, one of them the 500 without usage
    t = rep["tokens"]
    assert (t["requests"], t["prompt_tokens"], t["completion_tokens"]) == (11, 1000, 100)
    assert t["cost"] == pytest.approx(1000 / 1e6 * 1 + 100 / 1e6 * 4)
    # the markdown form has every section
    assert cli_main(["judge", "report", "--judgments", str(out), "--human", str(tmp_path / "sheet.csv"),
                     "--golden", str(golden), "--bootstrap", "0"]) == 0
    md = capsys.readouterr().out
    for heading in ("Scores and invalid or missing outputs", "Judge model and decoding", "Retry procedure",
                    "Repeats and self-consistency", "Agreement with human raters", "Golden-case meta-evaluation",
                    "Tokens and cost", "Prompts"):
        assert f"### {heading}" in md
    assert p.sha256 in md and "served-x (8)" in md


def test_running_totals_reach_the_progress_callback_and_nothing_is_printed(capsys):
    from reteco_measures.cli.judge_cmd import _Progress
    from reteco_measures.judge import JudgeItem, RunStats, Verdict, run_items

    class Stub:
        model = "stub"

        def judge(self, messages, low, high):
            return Verdict(3, "r", None, "ok", 1, None, prompt_tokens=7, completion_tokens=2)

    p = load_prompt("relevance")
    items = [JudgeItem(p, {"question": f"q{i}", "history": "h", "answer": "a"}) for i in range(3)]
    stats = RunStats()
    seen = []
    run_items(items, Stub(), None, concurrency=1, stats=stats,
              on_progress=lambda done, total, s: seen.append((done, total, s.prompt_tokens)))
    assert capsys.readouterr().err == ""  # the library prints nothing
    assert (stats.prompt_tokens, stats.completion_tokens, stats.requests) == (21, 6, 3)
    assert seen[0] == (0, 3, 0) and seen[-1] == (3, 3, 21)  # 3 judgments x 7 prompt tokens
    # the command line shows the running totals when no progress bar is drawn
    show = _Progress(False, every=0.0)
    for done, total, _ in seen:
        show(done, total, stats)
    err = capsys.readouterr().err
    assert "judging: 3/3 done, 3 request(s), 21 prompt + 6 completion tokens so far" in err
