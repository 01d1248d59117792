"""Work done once: the ``eval`` contract note does not run the contract, and one ranking of the
run serves our measures and the standard ones under a non-trec_eval tie policy.

Expected values are hand computations written here, pytrec_eval, or Python's own stable sort.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.cli.main import main
from reteco_measures.kernels import ranking

# ------------------------------------------------------------------------------------------------
# 1. the `eval` note about what the RETECO contract would discard


def _write_run(path: Path, rows: list[tuple[str, str, float]]) -> Path:
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s} sys\n" for i, (q, d, s) in enumerate(rows)))
    return path


@pytest.fixture
def note_case(tmp_path: Path) -> dict[str, Path]:
    # corpus: d1, d2. Rows, in file order:
    #   q1 d1 (kept) | q1 d2 (kept) | q1 d1 duplicate | q1 d3 unknown | q1 d3 duplicate (a repeat of
    #   an unknown doc is reported once, as a duplicate) | q2 d1 (kept) | q2 dX unknown | q2 d1 duplicate
    # -> 3 duplicate, 2 unknown_doc, 5 rows in all
    run = _write_run(tmp_path / "run.txt", [
        ("q1", "d1", 3.0), ("q1", "d2", 2.0), ("q1", "d1", 1.0), ("q1", "d3", 0.5), ("q1", "d3", 0.4),
        ("q2", "d1", 2.0), ("q2", "dX", 1.0), ("q2", "d1", 0.5),
    ])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 1\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("d1\nd2\n")
    return {"run": run, "qrels": qrels, "corpus": corpus}


def _note(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("note: ")]


def test_note_counts_duplicates_and_unknown_docs(note_case, capsys) -> None:
    code = main(["eval", str(note_case["qrels"]), str(note_case["run"]), "P@1",
                 "--corpus", str(note_case["corpus"])])
    assert code == 0
    assert _note(capsys.readouterr().err) == [
        "note: 5 row(s) would be discarded by the RETECO contract (3 duplicate document(s), 2 unknown document(s)): this eval "
        "scores them (a repeated document keeps its last score); official scores apply the contract: "
        f"add --contract reteco --corpus {note_case['corpus']}"
    ]


def test_note_without_corpus_counts_duplicates_only(note_case, capsys) -> None:
    assert main(["eval", str(note_case["qrels"]), str(note_case["run"]), "P@1"]) == 0
    assert _note(capsys.readouterr().err) == [
        "note: 3 row(s) would be discarded by the RETECO contract (3 duplicate document(s)): this eval scores them "
        "(a repeated document keeps its last score); official scores apply the contract: "
        "add --contract reteco --corpus CORPUS"
    ]


def test_no_note_when_nothing_would_be_discarded(tmp_path: Path, capsys) -> None:
    run = _write_run(tmp_path / "run.txt", [("q1", "d1", 2.0), ("q1", "d2", 1.0)])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("d1\nd2\n")
    assert main(["eval", str(qrels), str(run), "P@1", "--corpus", str(corpus)]) == 0
    assert _note(capsys.readouterr().err) == []


def test_note_does_not_run_the_contract(note_case, monkeypatch, capsys) -> None:
    import reteco_measures.benchmarks.reteco.contract as reteco_contract
    import reteco_measures.contracts as contracts

    def forbidden(*args, **kwargs):
        raise AssertionError("the full contract ran")

    monkeypatch.setattr(contracts, "validate_run", forbidden)
    monkeypatch.setitem(contracts.CONTRACTS, "reteco", forbidden)
    monkeypatch.setattr(reteco_contract, "validate_reteco", forbidden)
    monkeypatch.setattr(reteco_contract, "_trec_eval_ranks", forbidden)
    argv = ["eval", str(note_case["qrels"]), str(note_case["run"]), "P@1", "--corpus", str(note_case["corpus"]),
            "--format", "tsv"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert _note(err)[0].startswith("note: 5 row(s) would be discarded")
    # scored as it is (a repeated document keeps its last score): q1 d2 2.0 > d1 1.0 > d3 0.4 and
    # q2 dX 1.0 > d1 0.5, so neither query has a relevant document at rank 1
    assert out.strip().splitlines() == ["measure\tvalue\tn", "P@1\t0.0000\t2"]
    # the patch does catch the contract's entry point: --contract goes through it
    assert main([*argv, "--contract", "reteco"]) == 3  # an internal error: the patched contract raised
    assert "the full contract ran" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------
# 2. one ranking per tie policy per call


@pytest.fixture
def rank_calls(monkeypatch) -> Counter:
    """Counts the run sorts by tie policy (every rank_run / row_ranks goes through _ranked_order)."""
    calls: Counter = Counter()
    real = ranking._ranked_order

    def spy(run, tie_break, corpus):
        calls[tie_break] += 1
        return real(run, tie_break, corpus)

    monkeypatch.setattr(ranking, "_ranked_order", spy)
    return calls


def _tied_case() -> tuple[pd.DataFrame, pd.DataFrame]:
    # q1 (file order): a 1.0, b 1.0, c 0.5, d 1.0; relevant b, d
    # q2: x 2.0, y 2.0, z 2.0; relevant x
    run = pd.DataFrame({
        "query_id": ["q1", "q1", "q1", "q1", "q2", "q2", "q2"],
        "doc_id": ["a", "b", "c", "d", "x", "y", "z"],
        "score": [1.0, 1.0, 0.5, 1.0, 2.0, 2.0, 2.0],
    })
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["b", "d", "x"], "relevance": [1, 1, 1]})
    return qrels, run


def test_mixed_measures_hand_values_under_each_policy() -> None:
    qrels, run = _tied_case()
    idcg_q1 = 1 + 1 / math.log2(3)
    # stable: q1 a, b, d, c -> relevant at ranks 2, 3; q2 x, y, z -> relevant at rank 1
    stable = ((1 / math.log2(3) + 1 / math.log2(4)) / idcg_q1 + 1.0) / 2
    # trec_eval: ties by doc id descending: q1 d, b, a, c -> ranks 1, 2; q2 z, y, x -> rank 3
    trec = (1.0 + (1 / math.log2(4)) / 1.0) / 2
    for policy, expected in [("stable", stable), ("trec_eval", trec)]:
        values = rm.calc_aggregate(["nDCG@3", "TurnNDCG@3"], qrels, run, tie_break=policy)
        assert list(values.values()) == pytest.approx([expected, expected], abs=1e-12), policy
    assert stable == pytest.approx(0.846713, abs=1e-6)


def _python_stable_run(run: pd.DataFrame) -> dict[str, dict[str, float]]:
    """score = -rank after Python's stable sort by score (file order among ties)."""
    out: dict[str, dict[str, float]] = {}
    for q in dict.fromkeys(run["query_id"]):
        rows = [(d, s) for qq, d, s in zip(run["query_id"], run["doc_id"], run["score"]) if qq == q]
        ranked = sorted(rows, key=lambda r: r[1], reverse=True)
        out[q] = {d: -float(i + 1) for i, (d, _) in enumerate(ranked)}
    return out


def _pytrec_ndcg10(qrels: pd.DataFrame, run_dict: dict) -> float:
    qd: dict[str, dict[str, int]] = {}
    for q, d, r in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"]):
        qd.setdefault(q, {})[d] = int(r)
    per = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10"}).evaluate(run_dict)
    return float(np.mean([per.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"] for q in qd]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_run_full_of_ties_matches_references(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = [(f"q{q}", f"d{d}") for q in range(5) for d in rng.choice(40, size=25, replace=False)]
    run = pd.DataFrame(rows, columns=["query_id", "doc_id"])
    run["score"] = rng.integers(0, 3, len(run)).astype(float)  # three score values: ties everywhere
    qrels = pd.DataFrame([(f"q{q}", f"d{d}") for q in range(5) for d in range(0, 40, 3)],
                         columns=["query_id", "doc_id"])
    qrels["relevance"] = rng.integers(0, 2, len(qrels))  # binary: TurnNDCG@10 is nDCG@10
    trec_dict = {q: dict(zip(g["doc_id"], g["score"])) for q, g in run.groupby("query_id")}
    for policy, reference in [("trec_eval", _pytrec_ndcg10(qrels, trec_dict)),
                              ("stable", _pytrec_ndcg10(qrels, _python_stable_run(run)))]:
        values = rm.calc_aggregate(["nDCG@10", "TurnNDCG@10"], qrels, run, tie_break=policy)
        assert list(values.values()) == pytest.approx([reference, reference], abs=1e-12), policy
        per_query = {(m.query_id, str(m.measure)): m.value
                     for m in rm.iter_calc(["nDCG@10", "TurnNDCG@10"], qrels, run, tie_break=policy)}
        for q in qrels["query_id"].unique():
            assert float(per_query[(q, "nDCG@10")]) == pytest.approx(float(per_query[(q, "TurnNDCG@10")]), abs=1e-12)


def test_repeated_pair_keeps_its_last_score_for_standard_measures_too() -> None:
    # q1 rows: a 0.2, b 0.5, a 0.9 -> a keeps its last score 0.9 and ranks first (no tie left), so
    # nDCG@1 is 1 under every score-based policy, as in pytrec_eval's dictionary (last score wins)
    run = pd.DataFrame({"query_id": ["q1", "q1", "q1"], "doc_id": ["a", "b", "a"], "score": [0.2, 0.5, 0.9]})
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    ref = pytrec_eval.RelevanceEvaluator({"q1": {"a": 1}}, {"ndcg_cut_1"}).evaluate(
        {"q1": {"b": 0.5, "a": 0.9}})["q1"]["ndcg_cut_1"]
    assert ref == 1.0
    for policy in ("trec_eval", "stable", "corpus_order"):
        values = rm.calc_aggregate(["nDCG@1", "TurnNDCG@1"], qrels, run, tie_break=policy, corpus=["a", "b"])
        assert list(values.values()) == [1.0, 1.0], policy


@pytest.mark.parametrize("policy", ["trec_eval", "stable", "run_order", "corpus_order"])
def test_one_ranking_per_policy_per_call(policy: str, rank_calls: Counter) -> None:
    qrels, run = _tied_case()
    corpus = ["d", "c", "b", "a", "z", "y", "x"]
    measures = ["nDCG@3", "P@2", "TurnNDCG@3", "TurnNDCG@2"]
    rm.calc_aggregate(measures, qrels, run, tie_break=policy, corpus=corpus)
    assert rank_calls == Counter({policy: 1})
    rank_calls.clear()
    list(rm.iter_calc(measures, qrels, run, tie_break=policy, corpus=corpus))
    assert rank_calls == Counter({policy: 1})
    rank_calls.clear()
    rm.evaluate(measures, qrels, run, tie_break=policy, corpus=corpus)
    assert rank_calls == Counter({policy: 1})


def test_a_measure_with_its_own_policy_adds_one_ranking(rank_calls: Counter) -> None:
    qrels, run = _tied_case()
    rm.calc_aggregate(["nDCG@3", "TurnNDCG@3", "TurnNDCG(tie_break='run_order')@3"], qrels, run, tie_break="stable")
    assert rank_calls == Counter({"stable": 1, "run_order": 1})


def test_cli_eval_ranks_once(tmp_path: Path, rank_calls: Counter, capsys) -> None:
    qrels, run = _tied_case()
    run_path = _write_run(tmp_path / "run.txt", list(zip(run["query_id"], run["doc_id"], run["score"])))
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.itertuples(index=False)))
    assert main(["eval", str(qrels_path), str(run_path), "nDCG@3", "TurnNDCG@3", "--tie-break", "stable",
                 "--format", "tsv", "--places", "6"]) == 0
    assert rank_calls == Counter({"stable": 1})
    lines = capsys.readouterr().out.strip().splitlines()
    # hand value of test_mixed_measures_hand_values_under_each_policy (stable): 0.846713
    assert lines[1:] == ["nDCG@3\t0.846713\t2", "TurnNDCG@3\t0.846713\t2"]
