"""Our nDCG kernel and ranking core against independent oracles: trec_eval 10's own expected
outputs, hand-checked small cases (ranx / pytrec_eval / trec_eval issue threads), and
pytrec_eval run side by side."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.io.convert import qrels_to_dict, run_to_dict
from reteco_measures.kernels import gains_frame, ndcg, ndcg_at_k, rank_run


def _trec_eval_values(path: Path, measure: str) -> dict[str, float]:
    """Per-query values of ``measure`` printed in a trec_eval output file."""
    out = {}
    for line in path.read_text().splitlines():
        parts = re.split(r"\s+", line.strip())
        if len(parts) == 3 and parts[0] == measure:
            out[parts[1]] = float(parts[2])
    return out


def _pytrec(qrels: pd.DataFrame, run: pd.DataFrame, measures: set[str]) -> dict:
    return pytrec_eval.RelevanceEvaluator(qrels_to_dict(qrels), measures).evaluate(run_to_dict(run))


@pytest.mark.parametrize("k", [5, 10, 100, 1000])
def test_ndcg_cut_matches_trec_eval_output_binary(trec_eval_dir: Path, k: int) -> None:
    qrels = rm.read_qrels(trec_eval_dir / "qrels.test")
    run = rm.read_run(trec_eval_dir / "results.test")
    expected = _trec_eval_values(trec_eval_dir / "out.test.aq", f"ndcg_cut_{k}")
    ours = ndcg(qrels, run, k)
    for qid in ("301", "302", "303"):
        assert round(ours[qid], 4) == pytest.approx(expected[qid], abs=1e-12), qid
    assert round(ours.mean(), 4) == pytest.approx(expected["all"], abs=1e-12)


def test_graded_ndcg_matches_trec_eval_output(trec_eval_dir: Path) -> None:
    # out.test.aql: graded qrels (grades 0,1,2,3,4 and -1); nDCG gains are the raw grades.
    qrels = rm.read_qrels(trec_eval_dir / "qrels.rel_level")
    run = rm.read_run(trec_eval_dir / "results.test")
    for k in (5, 10, 100):
        expected = _trec_eval_values(trec_eval_dir / "out.test.aql", f"ndcg_cut_{k}")
        ours = ndcg(qrels, run, k)
        for qid in ("301", "302", "303"):
            assert round(ours[qid], 4) == pytest.approx(expected[qid], abs=1e-12)


@pytest.mark.parametrize(
    "qrels_name,run_name",
    [("qrels.test", "results.test"), ("qrels.rel_level", "results.test"), ("qrels.comment.test", "results.comment.test"),
     ("qrels.test", "results.trunc")],
)
def test_ndcg_equals_pytrec_eval_per_query(trec_eval_dir: Path, qrels_name: str, run_name: str) -> None:
    qrels = rm.read_qrels(trec_eval_dir / qrels_name)
    run = rm.read_run(trec_eval_dir / run_name)
    ks = [1, 3, 5, 10, 20, 100, 1000]
    ref = _pytrec(qrels, run, {f"ndcg_cut.{','.join(map(str, ks))}"})
    for k in ks:
        ours = ndcg(qrels, run, k)
        for qid, vals in ref.items():
            assert abs(ours[qid] - vals[f"ndcg_cut_{k}"]) < 1e-9, (qid, k)


def test_small_cases_ndcg(ir_small_cases_dir: Path) -> None:
    cases = json.loads((ir_small_cases_dir / "cases.json").read_text())["cases"]
    checked = 0
    for case in cases:
        qrels = pd.DataFrame(
            [(q, d, r) for q, docs in case["qrels"].items() for d, r in docs.items()],
            columns=["query_id", "doc_id", "relevance"],
        )
        run = pd.DataFrame(
            [(q, d, s) for q, docs in case["run"].items() for d, s in docs.items()],
            columns=["query_id", "doc_id", "score"],
        )
        for exp in case["expected"]:
            m = re.fullmatch(r"ndcg(?:_cut_(\d+))?", exp["measure"])
            if not m:
                continue
            k = int(m.group(1)) if m.group(1) else None
            # trec_eval evaluates the queries of the run that have qrels
            qids = [q for q in case["run"] if q in case["qrels"]]
            values = ndcg(qrels, run, k, query_ids=qids)
            got = values.mean() if exp["qid"] == "all" else values[exp["qid"]]
            tol = exp.get("tolerance", 1e-4)
            assert got == pytest.approx(exp["value"], abs=tol), (case["id"], exp)
            checked += 1
    assert checked >= 10


def test_tie_break_issue22_docno_descending() -> None:
    # trec_eval issue 22: equal scores are ordered by docno descending (strcmp).
    qrels = pd.DataFrame({"query_id": ["1"], "doc_id": ["b"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "score": [1.0, 1.0]})
    ranked = rank_run(run)
    assert ranked["doc_id"].tolist() == ["b", "a"]
    assert ranked["rank"].tolist() == [1, 2]
    # 'b' relevant at rank 1 -> nDCG 1; if 'a' were the relevant doc it would be at rank 2 -> 1/log2(3)
    assert ndcg(qrels, run, None)["1"] == pytest.approx(1.0)
    qrels_a = qrels.assign(doc_id=["a"])
    assert ndcg(qrels_a, run, None)["1"] == pytest.approx(1 / np.log2(3))


def test_single_precision_score_ties() -> None:
    # 1.0 and 1.0 + 1e-9 are the same C float: the tie goes to the larger doc id ("b").
    run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0 + 1e-9, 1.0]})
    assert rank_run(run)["doc_id"].tolist() == ["b", "a"]
    # 1e-6 apart is distinguishable at single precision: score order wins
    run2 = run.assign(score=[1.0 + 1e-6, 1.0])
    assert rank_run(run2)["doc_id"].tolist() == ["a", "b"]


def test_byte_order_doc_ids() -> None:
    # strcmp order: "B" (0x42) < "a" (0x61) < "é" (0xC3 0xA9 in UTF-8); descending = é, a, B
    run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "é", "B"], "score": [0.5] * 3})
    assert rank_run(run)["doc_id"].tolist() == ["é", "a", "B"]


def test_run_order_and_corpus_order() -> None:
    run = pd.DataFrame(
        {"query_id": ["q"] * 4, "doc_id": ["d3", "d1", "d2", "d4"], "score": [0.1, 0.9, 0.9, 0.5]}
    )
    assert rank_run(run, "run_order")["doc_id"].tolist() == ["d3", "d1", "d2", "d4"]
    corpus = ["d2", "d4", "d1", "d3"]  # d2 before d1 in the corpus
    assert rank_run(run, "corpus_order", corpus=corpus)["doc_id"].tolist() == ["d2", "d1", "d4", "d3"]
    with pytest.raises(ValueError, match="corpus"):
        rank_run(run, "corpus_order")
    with pytest.raises(ValueError, match="tie_break"):
        rank_run(run, "random")


def test_binary_gains_threshold() -> None:
    # binary nDCG with rel=2: grade 1 counts as non-relevant. Hand computation:
    # ranking d1(grade 1), d2(grade 2), d3(grade 3); relevant = {d2, d3}
    # DCG@3 = 1/log2(3) + 1/log2(4); IDCG@3 = 1 + 1/log2(3)
    qrels = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["d1", "d2", "d3"], "relevance": [1, 2, 3]})
    run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["d1", "d2", "d3"], "score": [3.0, 2.0, 1.0]})
    expected = (1 / np.log2(3) + 1 / np.log2(4)) / (1 + 1 / np.log2(3))
    assert ndcg(qrels, run, 3, binary=True, rel=2)["q"] == pytest.approx(expected, abs=1e-12)
    # graded: DCG = 1 + 2/log2(3) + 3/2 ; IDCG = 3 + 2/log2(3) + 1/2
    graded = (1 + 2 / np.log2(3) + 3 / 2) / (3 + 2 / np.log2(3) + 0.5)
    assert ndcg(qrels, run, 3)["q"] == pytest.approx(graded, abs=1e-12)


def test_missing_queries_score_zero_and_unjudged_queries_ignored() -> None:
    qrels = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "relevance": [1, 1]})
    run = pd.DataFrame({"query_id": ["q1", "zz"], "doc_id": ["a", "b"], "score": [1.0, 1.0]})
    out = ndcg_at_k(rank_run(run), gains_frame(qrels), 10)
    assert out.to_dict() == {"q1": 1.0, "q2": 0.0}


@pytest.mark.parametrize("k", [3, 10, 50])
def test_ndcg_per_unit_is_pytrec_eval_to_the_last_bit(k: int) -> None:
    """One nDCG in the package: the per-unit nDCG (step, turn, FC, spoken) is the native kernel's,
    so it equals pytrec_eval's ``ndcg_cut_k`` bit for bit (graded qrels, tied scores), not only to
    1e-9 (a second DCG summed in another order differs in the last bit on about half the queries)."""
    rng = np.random.default_rng(7)
    nq, nd = 40, 120
    run = pd.DataFrame({"query_id": np.repeat([f"q{i}" for i in range(nq)], nd),
                        "doc_id": [f"d{j}" for j in rng.integers(0, 4000, nq * nd)],
                        "score": np.round(rng.random(nq * nd), 1)}).drop_duplicates(["query_id", "doc_id"])
    qrels = run.sample(frac=0.15, random_state=3)[["query_id", "doc_id"]].assign(
        relevance=rng.integers(0, 4, int(round(len(run) * 0.15)))).reset_index(drop=True)
    expected = _pytrec(qrels, run, {f"ndcg_cut.{k}"})
    ours = ndcg_at_k(rank_run(run), gains_frame(qrels), k)
    for qid, value in ours.items():
        assert value == expected.get(qid, {}).get(f"ndcg_cut_{k}", 0.0), qid
