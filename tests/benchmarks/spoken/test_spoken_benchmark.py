"""``reteco-measures score spoken``: raw quality, grid tables, reward; checked against pytrec_eval."""

from __future__ import annotations

import json
from pathlib import Path

import generate_spoken
import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.benchmarks.spoken import data as sp
from reteco_measures.benchmarks.spoken.benchmark import score_spoken
from reteco_measures.cli.main import main
from reteco_measures.cli.score_cmd import demo_argv

SAMPLE = Path(rm.__file__).resolve().parent / "sample" / "data"
RESULTS = SAMPLE / "runs" / "spoken.jsonl"
B = 0.4530094614433184


def independent_quality() -> tuple[float, pd.DataFrame]:
    """Raw quality from pytrec_eval + pandas, with the sample's known bad rows zeroed by hand."""
    qrels = sp.load_qrels(root=SAMPLE)
    topics = sp.topics(root=SAMPLE)
    lines = [json.loads(x) for x in RESULTS.read_text(encoding="utf-8").splitlines()]
    # the generator's docstring: one missing request, one row with a document of another domain,
    # one row with a repeated document -> those two rows score 0
    domain = dict(zip(sp.load_corpus(SAMPLE)["doc_id"], sp.load_corpus(SAMPLE)["domain"], strict=True))
    req_domain = dict(zip(topics["query_id"], topics["domain"], strict=True))
    good = {}
    for x in lines:
        docs = [r["doc_id"] for r in x["results"]]
        if len(set(docs)) == len(docs) and all(domain[d] == req_domain[x["query_id"]] for d in docs):
            good[x["query_id"]] = {d: float(100 - i) for i, d in enumerate(docs)}  # list order
    assert len(lines) - len(good) == 2
    qd: dict = {}
    for q, d, r in qrels.itertuples(index=False):
        qd.setdefault(q, {})[d] = int(r)
    ref = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10"}).evaluate(good)
    frame = topics[["query_id", "collection", "condition"]].copy()
    frame["v"] = [ref.get(q, {}).get("ndcg_cut_10", 0.0) for q in frame["query_id"]]
    return float(frame.groupby(["collection", "condition"])["v"].mean().mean()), frame


def spec_reward(q: float, a: float = 15, b: float = B) -> float:
    return (a / 100) * q / b if q <= b else a / 100 + (1 - a / 100) * (q - b) / (1 - b)


def test_score_spoken_matches_independent_computation():
    expected, frame = independent_quality()
    result = score_spoken(RESULTS, corpus=sp.load_corpus(SAMPLE), topics=sp.topics(root=SAMPLE),
                          qrels=sp.load_qrels(root=SAMPLE))
    assert result.fact("quality") == pytest.approx(expected, abs=1e-12)
    assert result.reward == pytest.approx(spec_reward(expected), abs=1e-12)
    assert result.report.invalid_queries == ["sq-0004", "sq-0013"] and result.report.missing_queries == ["sq-0008"]
    cells = result.table("grid").set_index(["collection", "condition"])["value"]
    by_cell = frame.groupby(["collection", "condition"])["v"].mean()
    for key, value in by_cell.items():
        assert cells[key] == pytest.approx(value, abs=1e-12)
    coll = result.table("by_collection")[result.table("by_collection")["measure"] == "SpokenMacroNDCG@10"].set_index("collection")
    for name, value in by_cell.groupby(level="collection").mean().items():
        assert coll.loc[name, "value"] == pytest.approx(value, abs=1e-12)
    cond = result.table("by_condition")[result.table("by_condition")["measure"] == "SpokenMacroNDCG@10"].set_index("condition")
    for name, value in by_cell.groupby(level="condition").mean().items():
        assert cond.loc[name, "value"] == pytest.approx(value, abs=1e-12)
    plain = result.summary.set_index("measure").loc["nDCG@10", "value"]
    assert plain == pytest.approx(frame["v"].mean(), abs=1e-12)
    assert result.notes == []


def test_cli_table(capsys):
    assert main(["score", "spoken", str(RESULTS), "--data", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    for title in ("== raw quality and reward", "== collection x condition grid", "== per collection",
                  "== per condition"):
        assert title in out
    assert "2 invalid and 1 missing request(s) score 0" in out
    assert f"{RESULTS}:4: sq-0004: result 5: document law-001 is from domain 'law'" in out


def test_cli_json_and_reward_parameters(capsys):
    expected, _ = independent_quality()
    assert main(["score", "spoken", str(RESULTS), "--data", str(SAMPLE), "--format", "json",
                 "--a", "20", "--b", "0.5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["quality"] == pytest.approx(expected, abs=1e-12)
    assert out["reward"] == pytest.approx(spec_reward(expected, 20, 0.5), abs=1e-12)
    assert out["invalid_queries"] == ["sq-0004", "sq-0013"] and out["missing_queries"] == ["sq-0008"]
    assert {p["kind"] for p in out["problems"]} == {"domain", "duplicate", "missing_query"}
    assert len([r for r in out["grid"] if r["collection"] not in ("(macro)", "(all)")]) == 24


def test_cli_audit_gate(capsys):
    assert main(["score", "spoken", str(RESULTS), "--data", str(SAMPLE), "--format", "json", "--audit-failed"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reward"] == 0.0 and out["quality"] > 0


def test_cli_incomplete_grid_is_reported(tmp_path, capsys):
    # labels for no far_field request, but one far_field request left in the topics (unlabelled):
    # the grid (from the topics) has 6 x 4 cells, the six far_field cells have no evaluated request
    topics = sp.topics(root=SAMPLE)
    keep = set(topics.loc[topics["condition"] != "far_field", "query_id"])
    reqs = [x for x in (SAMPLE / "spoken" / "validation" / "requests.jsonl").read_text().splitlines()
            if json.loads(x)["query_id"] in keep]
    qrels = [x for x in (SAMPLE / "spoken" / "validation" / "qrels.jsonl").read_text().splitlines()
             if json.loads(x)["query_id"] in keep]
    (tmp_path / "requests.jsonl").write_text("\n".join(reqs) + "\n" + json.dumps(
        {"query_id": "extra", "domain": "law", "one_best": "x", "condition": "far_field"}) + "\n")
    (tmp_path / "qrels.jsonl").write_text("\n".join(qrels) + "\n")
    rc = main(["score", "spoken", str(RESULTS), "--data", str(SAMPLE), "--requests", str(tmp_path / "requests.jsonl"),
               "--qrels", str(tmp_path / "qrels.jsonl"), "--format", "json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["notes"]) == 1 and "6 of 24 cells" in out["notes"][0] and "(law, far_field)" in out["notes"][0]


def test_demo_argv_is_registered():
    argv = demo_argv("spoken", SAMPLE)
    assert argv == [str(RESULTS), "--data", str(SAMPLE)]
    assert demo_argv("chunqiu", SAMPLE) == [str(SAMPLE / "runs" / "chunqiu.jsonl"), "--data", str(SAMPLE)]


def test_generator_is_deterministic_and_matches_the_bundled_sample(tmp_path):
    written = generate_spoken.generate(tmp_path)
    for path in written:
        bundled = SAMPLE / path.relative_to(tmp_path)
        assert bundled.read_bytes() == path.read_bytes(), f"{bundled} differs from the generator's output"
    size = sum(p.stat().st_size for p in written)
    assert size < 400_000
