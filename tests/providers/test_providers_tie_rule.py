"""One tie rule for every measure of a call, whichever provider computes it.

A constant scorer (every document the same score) is the hardest case for tie handling: the
whole ranking is decided by the tie rule. trec_eval (and pytrec_eval, our default
``tie_break='trec_eval'``) orders equal scores by doc id *descending*; ir_measures' MS MARCO
(``RR@k``) and ``judged`` (``Judged@k``) providers sort by doc id *ascending*, so before this
rule was enforced one call could rank the same run two ways (``RR@10 = 1.0`` next to
``RR = 0.1`` — the bug class of mteb#5092, where a constant scorer got MRR@10 = 1.0 and
nDCG@10 = 0).

Expected values: pytrec_eval run side by side where it has the measure; otherwise a hand
computation of the measure's published definition on the order d12, d11, …, d01.
"""

from __future__ import annotations

import ir_measures
import pytest
import pytrec_eval

import reteco_measures as rm

DOCS = [f"d{i:02d}" for i in range(1, 13)]
# every document scores 0.0: trec_eval's order is d12, d11, ..., d01 (doc id descending)
RUN = {"q1": {d: 0.0 for d in DOCS}, "q2": {d: 0.0 for d in DOCS}}
QRELS = {"q1": {"d01": 2, "d03": 1, "d07": 0, "d09": 0}, "q2": {"d02": 1, "d05": 3}}
K = 10  # top 10 in trec_eval's order: d12 ... d03

#: pytrec_eval's name for a measure at cutoff K
PYTREC = {"AP": f"map_cut_{K}", "nDCG": f"ndcg_cut_{K}", "P": f"P_{K}", "R": f"recall_{K}",
          "Success": f"success_{K}"}

#: hand computations on the order d12, d11, ..., d03 (ranks 1..10)
HAND = {
    # MS MARCO MRR@10: 1/rank of the first relevant document in the top 10
    #   q1: d03 at rank 10; q2: d05 at rank 8 (doc id ascending would give 1.0 and 0.5)
    "RR": {"q1": 1 / 10, "q2": 1 / 8},
    # judged share of the top 10: q1 d09, d07, d03; q2 d05 (ascending: 0.4 and 0.2)
    "Judged": {"q1": 3 / 10, "q2": 1 / 10},
    # ERR@10 (Chapelle et al. 2009, gdeval's grade scale R = (2^g - 1) / 2^4):
    #   q1: only d03 (g=1) at rank 10 -> (1/10)(1/16); q2: only d05 (g=3) at rank 8 -> (1/8)(7/16)
    "ERR": {"q1": (1 / 10) * (1 / 16), "q2": (1 / 8) * (7 / 16)},
    # ir_measures' Accuracy@10: 1 - mean over retrieved relevant documents of
    #   (non-relevant documents above it) / (non-relevant documents in the top 10)
    #   q1: 9 non-relevant above d03, 9 in all -> 0; q2: 7 above d05, 9 in all -> 2/9
    "Accuracy": {"q1": 0.0, "q2": 2 / 9},
}


def _cutoff_measures() -> list[str]:
    """ir_measures' own measures with a cutoff (reteco-measures' registered ones have their own tests)."""
    return sorted(name for name, m in ir_measures.measures.registry.items()
                  if "cutoff" in m.SUPPORTED_PARAMS and not getattr(m, "_RETECO", False))


def _provider_available(measure: ir_measures.Measure) -> bool:
    for p in ir_measures.DefaultPipeline.providers:
        try:
            if p.supports(measure) and p.is_available():
                return True
        except Exception:  # noqa: BLE001 - a provider that cannot judge the measure: not available
            continue
    return False


def test_every_cutoff_measure_is_enumerated() -> None:
    names = _cutoff_measures()
    # the registry holds the measures this file checks (a new ir_measures adds cases, not gaps)
    assert {"AP", "nDCG", "P", "R", "RR", "Judged", "ERR", "Success", "Accuracy"} <= set(names)


@pytest.mark.parametrize("name", _cutoff_measures())
def test_constant_scorer_every_cutoff_measure(name: str) -> None:
    measure = ir_measures.measures.registry[name](cutoff=K)
    if not _provider_available(measure):
        pytest.skip(f"{name}@{K}: no ir_measures provider for it is installed")
    got = {(m.query_id): m.value for m in rm.iter_calc([measure], QRELS, RUN)}
    canon = measure.NAME
    if canon in PYTREC:
        ev = pytrec_eval.RelevanceEvaluator(QRELS, {PYTREC[canon]})
        ref = {q: v[PYTREC[canon]] for q, v in ev.evaluate(RUN).items()}
    elif canon in HAND:
        ref = HAND[canon]
    else:  # pragma: no cover - a measure ir_measures added since: make it a case here
        pytest.fail(f"{name}@{K} has a provider but no reference value in this test")
    tol = 5e-6 if canon == "ERR" else 1e-9  # gdeval.pl prints 5 decimals
    assert set(got) == set(ref), name
    for q in ref:
        assert got[q] == pytest.approx(ref[q], abs=tol), (name, q)
    agg = rm.calc_aggregate([measure], QRELS, RUN)[measure]
    assert agg == pytest.approx(sum(ref.values()) / len(ref), abs=tol), name


def test_issue_reproducer_one_order_for_rr_at_k_rr_and_p() -> None:
    run = {"q1": {f"d{i:02d}": 0.0 for i in range(1, 11)}}
    got = rm.calc_aggregate(["RR@10", "RR", "P@1"], {"q1": {"d01": 1}}, run)
    # trec_eval's order puts d01 last (rank 10): RR@10 and RR agree, P@1 = 0
    assert {str(m): v for m, v in got.items()} == {"RR@10": 0.1, "RR": 0.1, "P@1": 0.0}


def test_rr_at_k_with_rel_and_other_tie_policy() -> None:
    got = rm.calc_aggregate(["RR(rel=2)@10", "RR(rel=3)@10", "Judged@3"], QRELS, RUN)
    # rel=2: q1 has only d01 (rank 12 > 10) -> 0; q2 d05 at rank 8 -> 1/8; rel=3: q2 only
    # Judged@3 (d12, d11, d10): nothing judged -> 0
    assert {str(m): v for m, v in got.items()} == pytest.approx(
        {"RR(rel=2)@10": (0 + 1 / 8) / 2, "RR(rel=3)@10": (0 + 1 / 8) / 2, "Judged@3": 0.0})
    # tie_break='run_order' (the dicts' insertion order d01 ... d12) applies to every measure too
    got = rm.calc_aggregate(["RR@10", "Judged@10", "P@1", "ERR@10"], QRELS, RUN, tie_break="run_order")
    err_q1 = 3 / 16 + (1 / 3) * (1 - 3 / 16) * (1 / 16)  # d01 (g=2) rank 1, d03 (g=1) rank 3
    err_q2 = (1 / 2) * (1 / 16) + (1 / 5) * (1 - 1 / 16) * (7 / 16)  # d02 (g=1) rank 2, d05 (g=3) rank 5
    assert {str(m): v for m, v in got.items()} == pytest.approx(
        {"RR@10": (1 + 1 / 2) / 2, "Judged@10": (4 / 10 + 2 / 10) / 2, "P@1": (1 + 0) / 2,
         "ERR@10": (err_q1 + err_q2) / 2}, abs=5e-6)  # gdeval.pl prints 5 decimals


def test_judged_counts_negative_grades_and_short_runs() -> None:
    # ir_measures' judged rule: any qrels entry counts, negative grades too; the denominator
    # is min(k, retrieved)
    qrels = {"q": {"a": -1, "b": 0, "z": 1}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    got = rm.calc_aggregate(["Judged@10", "Judged@2", "Judged"], qrels, run)
    assert {str(m): v for m, v in got.items()} == pytest.approx({"Judged@10": 2 / 3, "Judged@2": 1.0, "Judged": 2 / 3})


def test_fallback_provider_gets_top_k_dicts_in_our_order(monkeypatch) -> None:
    from ir_measures.providers.fallback_provider import FallbackProvider

    seen = []
    real = FallbackProvider.iter_calc

    def spy(self, measures, qrels, run):  # the fallback pipeline the native provider hands measures to
        seen.append((list(measures), qrels, run))
        return real(self, measures, qrels, run)

    monkeypatch.setattr(FallbackProvider, "iter_calc", spy)
    rm.calc_aggregate(["ERR@3", "nDCG@10"], QRELS, RUN)
    assert len(seen) == 1 and [str(m) for m in seen[0][0]] == ["ERR@3"]  # nDCG@10 is native
    _, qrels, run = seen[0]
    assert isinstance(run, dict) and isinstance(qrels, dict)
    for q in ("q1", "q2"):
        ranked = sorted(run[q], key=lambda d: -run[q][d])
        assert ranked == ["d12", "d11", "d10"]  # the top 3 only, trec_eval's order, no tie left
        assert len(set(run[q].values())) == 3


@pytest.mark.parametrize("name", ["RR", "Judged", "Accuracy", "ERR", "nDCG", "AP"])
def test_constant_scorer_through_the_providers_too(name: str) -> None:
    """With the native kernels off (pytrec_eval and ir_measures' other providers compute every
    measure), the providers get the run in trec_eval's order and give the same values."""
    measure = ir_measures.measures.registry[name](cutoff=K)
    with rm.use_native_kernels(False, scope="api"):
        got = {m.query_id: m.value for m in rm.iter_calc([measure], QRELS, RUN)}
    if name in PYTREC:
        ev = pytrec_eval.RelevanceEvaluator(QRELS, {PYTREC[name]})
        ref = {q: v[PYTREC[name]] for q, v in ev.evaluate(RUN).items()}
    else:
        ref = HAND[name]
    tol = 5e-6 if name == "ERR" else 1e-9
    assert got == pytest.approx(ref, abs=tol)
