"""ChunQiu official score: binary nDCG@10 in the results' order, corpus-order ties, the preset."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.benchmarks.chunqiu import data as cq
from reteco_measures.benchmarks.chunqiu.benchmark import score_chunqiu
from reteco_measures.cli.main import main

SAMPLE = Path(rm.__file__).resolve().parent / "sample" / "data"
LOG2 = math.log2


# ---- corpus-order tie-breaking (SPEC §4), hand-computed --------------------------------------------


def test_corpus_order_ties_hand_computed():
    corpus = ["d3", "d1", "d2"]  # corpus order: neither ascending nor descending by id
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["d2"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["d1", "d2", "d3"], "score": [1.0, 1.0, 1.0]})
    # corpus order: d3, d1, d2 -> the relevant d2 at rank 3: nDCG = (1/log2(4)) / 1 = 0.5
    got = rm.calc_aggregate(["nDCG@10"], qrels, run, tie_break="corpus_order", corpus=corpus)
    assert list(got.values())[0] == pytest.approx(1 / LOG2(4), abs=1e-12)
    # trec_eval: doc id descending d3, d2, d1 -> rank 2: 1/log2(3)
    got = rm.calc_aggregate(["nDCG@10"], qrels, run, tie_break="trec_eval")
    assert list(got.values())[0] == pytest.approx(1 / LOG2(3), abs=1e-12)
    # run order: d1, d2, d3 -> rank 2 as well; RR = 1/2 and 1/3 under the two orders
    assert rm.calc_aggregate(["RR"], qrels, run, tie_break="run_order")[rm.parse_measures("RR")[0]] == 0.5
    rr = rm.calc_aggregate(["RR"], qrels, run, tie_break="corpus_order", corpus=corpus)
    assert list(rr.values())[0] == pytest.approx(1 / 3)


def test_corpus_order_only_breaks_ties_and_unknown_docs_go_last():
    corpus = ["d3", "d2", "d1"]
    qrels = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["d2", "x"], "relevance": [1, 1]})
    # d1 scores highest; d3/d2 tie -> corpus order d3 then d2; unknown x ties with them but goes last
    run = pd.DataFrame({"query_id": ["q"] * 4, "doc_id": ["x", "d2", "d3", "d1"], "score": [1.0, 1.0, 1.0, 2.0]})
    ranked = rm.kernels.rank_run(run, "corpus_order", corpus=corpus)
    assert ranked["doc_id"].tolist() == ["d1", "d3", "d2", "x"]
    # relevant at ranks 3 and 4: DCG = 1/log2(4) + 1/log2(5); ideal = 1 + 1/log2(3)
    expected = (1 / LOG2(4) + 1 / LOG2(5)) / (1 + 1 / LOG2(3))
    got = rm.calc_aggregate(["nDCG@10"], qrels, run, tie_break="corpus_order", corpus=corpus)
    assert list(got.values())[0] == pytest.approx(expected, abs=1e-12)


# ---- official score vs pytrec_eval ---------------------------------------------------------------


def pytrec_per_query(qrels: pd.DataFrame, lines: list[dict], measures: set[str]) -> dict[str, dict[str, float]]:
    """pytrec_eval on the results lists; list order encoded as distinct decreasing scores."""
    qd: dict[str, dict[str, int]] = {}
    for q, d, r in qrels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
        qd.setdefault(q, {})[d] = int(r)
    rd = {x["query_id"]: {r["doc_id"]: float(100 - i) for i, r in enumerate(x["results"])} for x in lines}
    return pytrec_eval.RelevanceEvaluator(qd, measures).evaluate(rd)


def read_lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_sample_official_score_equals_pytrec_eval_per_query():
    qrels = cq.load_qrels(SAMPLE)
    examples = cq.load_examples(SAMPLE)
    results = SAMPLE / "runs" / "chunqiu.jsonl"
    score = score_chunqiu(results, qrels=qrels, queries=examples["query_id"], corpus=cq.corpus_order(SAMPLE))
    assert score.valid
    ref = pytrec_per_query(qrels, read_lines(results), {"ndcg_cut_10", "map_cut_10", "recall_10", "recip_rank"})
    per = score.per_query.set_index("query_id")
    assert len(per) == len(examples) == 40
    for q in examples["query_id"]:
        r = ref.get(q, {})
        assert per.loc[q, "nDCG@10"] == pytest.approx(r.get("ndcg_cut_10", 0.0), abs=1e-9)
        assert per.loc[q, "AP@10"] == pytest.approx(r.get("map_cut_10", 0.0), abs=1e-9)
        assert per.loc[q, "R@10"] == pytest.approx(r.get("recall_10", 0.0), abs=1e-9)
        assert per.loc[q, "RR"] == pytest.approx(r.get("recip_rank", 0.0), abs=1e-9)
    mean_ndcg = sum(ref.get(q, {}).get("ndcg_cut_10", 0.0) for q in examples["query_id"]) / len(examples)
    assert score.official == pytest.approx(mean_ndcg, abs=1e-12)
    assert score.reward == score.official
    # Judged@10 by hand: the share of each query's top 10 (score descending, doc id descending on a
    # tie, as trec_eval) that the qrels judge; a query without results has none judged
    judged = {(str(q), str(d)) for q, d in zip(qrels["query_id"], qrels["doc_id"], strict=True)}
    by_query = {str(r["query_id"]): r["results"] for r in read_lines(results)}
    for q in examples["query_id"]:
        top = sorted(by_query.get(str(q), []), key=lambda x: (float(x["score"]), str(x["doc_id"])), reverse=True)[:10]
        want = sum((str(q), str(x["doc_id"])) in judged for x in top) / len(top) if top else 0.0
        assert per.loc[q, "Judged@10"] == pytest.approx(want, abs=1e-12)
    table = score.scores.set_index("measure")["value"]
    assert list(table.index) == ["nDCG@10", "MAP@10", "R@10", "MRR", "Judged@10", "reward"]


def test_hand_case_official_score():
    corpus = ["d1", "d2", "d3", "d4"]
    qrels = pd.DataFrame({"query_id": ["a", "a", "b", "c"], "doc_id": ["d1", "d3", "d4", "d2"],
                          "relevance": [1, 1, 1, 1]})
    text = "\n".join([
        json.dumps({"query_id": "a", "results": [{"doc_id": "d2", "score": 3}, {"doc_id": "d1", "score": 2},
                                                 {"doc_id": "d3", "score": 1}]}),
        json.dumps({"query_id": "b", "results": [{"doc_id": "d4", "score": 0.1}]}),
        json.dumps({"query_id": "c", "results": []}),
    ]) + "\n"
    score = score_chunqiu(text, qrels=qrels, queries=["a", "b", "c"], corpus=corpus)
    # a: relevant at ranks 2, 3: (1/log2 3 + 1/log2 4) / (1 + 1/log2 3); b: 1; c: empty list -> 0
    a = (1 / LOG2(3) + 1 / LOG2(4)) / (1 + 1 / LOG2(3))
    assert score.per_query.set_index("query_id").loc["a", "nDCG@10"] == pytest.approx(a, abs=1e-12)
    assert score.official == pytest.approx((a + 1 + 0) / 3, abs=1e-12)
    # MRR = (1/2 + 1 + 0) / 3; R@10 = (1 + 1 + 0) / 3; AP@10 = ((1/2 + 2/3) / 2 + 1 + 0) / 3
    table = score.scores.set_index("measure")["value"]
    assert table["MRR"] == pytest.approx(0.5, abs=1e-12)
    assert table["R@10"] == pytest.approx(2 / 3, abs=1e-12)
    assert table["MAP@10"] == pytest.approx(((0.5 + 2 / 3) / 2 + 1) / 3, abs=1e-12)


def test_results_order_is_what_counts_not_trec_eval_tie_breaking():
    # corpus order a1, z2; equal scores must be listed a1 then z2. trec_eval would put z2 first
    # (doc id descending); the official score uses the list order, so z2 is at rank 2.
    corpus = ["a1", "z2"]
    qrels = pd.DataFrame({"query_id": ["a"], "doc_id": ["z2"], "relevance": [1]})
    text = json.dumps({"query_id": "a", "results": [{"doc_id": "a1", "score": 1}, {"doc_id": "z2", "score": 1}]})
    score = score_chunqiu(text + "\n", qrels=qrels, queries=["a"], corpus=corpus)
    assert score.valid
    assert score.official == pytest.approx(1 / LOG2(3), abs=1e-12)
    run = pd.DataFrame({"query_id": ["a", "a"], "doc_id": ["a1", "z2"], "score": [1.0, 1.0]})
    trec = rm.calc_aggregate(["nDCG@10"], qrels, run, tie_break="trec_eval")
    assert list(trec.values())[0] == 1.0  # what trec_eval's tie-breaking would have given
    same = rm.calc_aggregate(["nDCG@10"], qrels, run, tie_break="corpus_order", corpus=corpus)
    assert list(same.values())[0] == pytest.approx(score.official, abs=1e-12)
    # listing z2 first breaks the corpus-order rule: the whole batch scores 0
    text = json.dumps({"query_id": "a", "results": [{"doc_id": "z2", "score": 1}, {"doc_id": "a1", "score": 1}]})
    bad = score_chunqiu(text + "\n", qrels=qrels, queries=["a"], corpus=corpus)
    assert not bad.valid and bad.official == 0.0 and bad.report.errors[0].kind == "tie_order"


def test_invalid_batch_scores_zero():
    qrels = cq.load_qrels(SAMPLE)
    examples = cq.load_examples(SAMPLE)
    score = score_chunqiu(SAMPLE / "runs" / "chunqiu_invalid.jsonl", qrels=qrels, queries=examples["query_id"],
                          corpus=cq.corpus_order(SAMPLE))
    assert not score.valid
    assert score.official == 0.0 and score.reward == 0.0
    assert (score.scores["value"] == 0.0).all()
    assert {p.kind for p in score.report.errors} >= {"duplicate", "unknown_doc", "order", "tie_order", "too_many",
                                                      "score", "repeated_query", "unknown_query", "format",
                                                      "missing_query"}


def test_audit_gate_and_unlabelled_policy():
    qrels = pd.DataFrame({"query_id": ["a"], "doc_id": ["d1"], "relevance": [1]})
    text = json.dumps({"query_id": "a", "results": [{"doc_id": "d1", "score": 1}]}) + "\n" + \
        json.dumps({"query_id": "b", "results": []}) + "\n"
    with pytest.raises(ValueError, match="no relevant document"):
        score_chunqiu(text, qrels=qrels, queries=["a", "b"], corpus=["d1"])
    zero = score_chunqiu(text, qrels=qrels, queries=["a", "b"], corpus=["d1"], unlabelled="zero")
    assert zero.official == pytest.approx(0.5)
    skip = score_chunqiu(text, qrels=qrels, queries=["a", "b"], corpus=["d1"], unlabelled="skip")
    assert skip.official == pytest.approx(1.0)
    gated = score_chunqiu(text, qrels=qrels, queries=["a", "b"], corpus=["d1"], unlabelled="skip", audit_passed=False)
    assert gated.official == pytest.approx(1.0) and gated.reward == 0.0


# ---- the preset on the command line --------------------------------------------------------------


def test_cli_score_valid_sample(capsys):
    rc = main(["score", "chunqiu", str(SAMPLE / "runs" / "chunqiu.jsonl"), "--data", str(SAMPLE), "--format", "json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is True and out["violations"] == [] and out["queries"] == 40
    qrels = cq.load_qrels(SAMPLE)
    ref = pytrec_per_query(qrels, read_lines(SAMPLE / "runs" / "chunqiu.jsonl"), {"ndcg_cut_10"})
    expected = sum(ref.get(q, {}).get("ndcg_cut_10", 0.0) for q in cq.load_examples(SAMPLE)["query_id"]) / 40
    assert out["official"]["value"] == pytest.approx(expected, abs=1e-12)
    assert out["reward"] == out["official"]["value"]


def test_cli_score_invalid_sample_exit_1(capsys):
    rc = main(["score", "chunqiu", str(SAMPLE / "runs" / "chunqiu_invalid.jsonl"), "--data", str(SAMPLE)])
    assert rc == 1
    out = capsys.readouterr().out
    assert "INVALID batch" in out and re.search(r"^nDCG@10 +0\.0000  official$", out, re.M)
    assert "chunqiu_invalid.jsonl:2: cq-q012: result 1: unknown document cq99999" in out


def test_cli_tsv_and_env_data_root(capsys, monkeypatch):
    monkeypatch.setenv("RETECO_DATA", str(SAMPLE))
    assert main(["score", "chunqiu", str(SAMPLE / "runs" / "chunqiu.jsonl"), "--format", "tsv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "measure\tvalue\trole" and lines[1].startswith("nDCG@10\t")


def test_cli_queries_subset(tmp_path, capsys):
    # a held-out subset of the examples, with its labels: only those queries must be answered
    examples = cq.load_examples(SAMPLE)
    subset = examples.iloc[:5]
    qfile = tmp_path / "queries.jsonl"
    qfile.write_text("".join(json.dumps({"query_id": q, "text": t, "relevant_doc_ids": r}, ensure_ascii=False) + "\n"
                             for q, t, r in subset.itertuples(index=False)), encoding="utf-8")
    wanted = set(subset["query_id"])
    lines = [x for x in read_lines(SAMPLE / "runs" / "chunqiu.jsonl") if x["query_id"] in wanted]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert main(["score", "chunqiu", str(results), "--data", str(SAMPLE), "--queries", str(qfile),
                 "--format", "json", "--per-query"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["queries"] == 5 and {r["query_id"] for r in out["per_query"]} == wanted
    # queries file without labels: the labels come from examples.jsonl
    qfile.write_text("".join(json.dumps({"query_id": q, "text": t}, ensure_ascii=False) + "\n"
                             for q, t, _ in subset.itertuples(index=False)), encoding="utf-8")
    assert main(["score", "chunqiu", str(results), "--data", str(SAMPLE), "--queries", str(qfile),
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["official"]["value"] == pytest.approx(out["official"]["value"])


def test_cli_missing_data_message(tmp_path, capsys):
    rc = main(["score", "chunqiu", str(SAMPLE / "runs" / "chunqiu.jsonl"), "--data", str(tmp_path)])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"put it at {tmp_path / 'chunqiu' / 'corpus.jsonl'}" in err
