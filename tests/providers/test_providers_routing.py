"""rm.* route nDCG/AP/P/R/RR to the native kernels and everything else to ir_measures in one call;
plain ir_measures calls keep pytrec_eval unless the user opts in."""

from __future__ import annotations

from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from ir_measures import AP, RR, P, R, Rprec, nDCG

import reteco_measures as rm
from reteco_measures.io.convert import qrels_to_dict, run_to_dict
from reteco_measures.kernels import standard
from reteco_measures.providers import native


def _files(trec_eval_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return rm.read_qrels(trec_eval_dir / "qrels.rel_level"), rm.read_run(trec_eval_dir / "results.test")


def test_mixed_call_routes_and_matches_pytrec_eval(trec_eval_dir: Path, monkeypatch) -> None:
    qrels, run = _files(trec_eval_dir)
    measures = [nDCG @ 10, AP @ 10, R @ 10, RR, RR @ 10, Rprec, P(rel=2) @ 5, "nDCG(dcg='exp-log2')@10"]
    calls = []
    real = standard.per_query

    def spy(ms, q, r):
        calls.append([str(m) for m in ms])
        return real(ms, q, r)

    monkeypatch.setattr(standard, "per_query", spy)
    ours = rm.calc_aggregate(measures, qrels, run)
    assert calls == [["nDCG@10", "AP@10", "R@10", "RR", "RR@10", "P(rel=2)@5"]]  # the native ones, once
    qd, rd = qrels_to_dict(qrels), run_to_dict(run)
    for m in rm.parse_measures(measures):
        ref = ir_measures.calc_aggregate([m], qd, rd)[m]
        assert ours[m] == pytest.approx(ref, abs=1e-9), m


def test_iter_calc_and_evaluate_per_query(trec_eval_dir: Path) -> None:
    qrels, run = _files(trec_eval_dir)
    measures = [nDCG @ 10, AP, RR @ 10]
    metrics = list(rm.iter_calc(measures, qrels, run))
    assert all(isinstance(m, ir_measures.Metric) and type(m.value) is float for m in metrics)
    got = {(m.query_id, str(m.measure)): m.value for m in metrics}
    qd, rd = qrels_to_dict(qrels), run_to_dict(run)
    ref = {(m.query_id, str(m.measure)): m.value for ms in measures for m in ir_measures.iter_calc([ms], qd, rd)}
    assert set(got) == set(ref)
    assert all(abs(got[k] - ref[k]) < 1e-9 for k in ref)
    frame = rm.evaluate(measures, qrels, run)
    assert frame.set_index("measure").loc["nDCG@10", "value"] == pytest.approx(
        np.mean([v for (q, m), v in ref.items() if m == "nDCG@10"]), abs=1e-12)


def test_other_tie_policies_still_apply(trec_eval_dir: Path) -> None:
    qrels, run = _files(trec_eval_dir)
    for tie_break in ("run_order", "trec_eval"):
        fast = rm.calc_aggregate([nDCG @ 10, AP @ 100, RR], qrels, run, tie_break=tie_break)
        with rm.use_native_kernels(False, scope="api"):
            slow = rm.calc_aggregate([nDCG @ 10, AP @ 100, RR], qrels, run, tie_break=tie_break)
        assert fast == pytest.approx(slow, abs=1e-9)


def test_api_scope_off_uses_pytrec_eval(trec_eval_dir: Path, monkeypatch) -> None:
    qrels, run = _files(trec_eval_dir)

    def boom(*a, **k):
        raise AssertionError("native kernels called")

    monkeypatch.setattr(standard, "per_query", boom)
    with rm.use_native_kernels(False, scope="api"):
        rm.calc_aggregate([nDCG @ 10], qrels, run)
    assert native.native_enabled("api")
    with pytest.raises(AssertionError, match="native kernels called"):
        rm.calc_aggregate([nDCG @ 10], qrels, run)


def test_plain_ir_measures_keeps_pytrec_eval_unless_opted_in(trec_eval_dir: Path, monkeypatch) -> None:
    qrels, run = _files(trec_eval_dir)
    qd, rd = qrels_to_dict(qrels), run_to_dict(run)
    names = [p.NAME for p in ir_measures.DefaultPipeline.providers]
    assert "reteco_native" not in names
    calls = []
    real = standard.per_query
    monkeypatch.setattr(standard, "per_query", lambda *a: calls.append(1) or real(*a))
    plain = ir_measures.calc_aggregate([nDCG @ 10, AP @ 10, R @ 10, RR], qd, rd)
    assert calls == []
    with rm.use_native_kernels():
        assert "reteco_native" in [p.NAME for p in ir_measures.DefaultPipeline.providers]
        opted = ir_measures.calc_aggregate([nDCG @ 10, AP @ 10, R @ 10, RR], qrels, run)
    assert calls == [1]
    assert "reteco_native" not in [p.NAME for p in ir_measures.DefaultPipeline.providers]
    assert opted == pytest.approx(plain, abs=1e-9)
    with pytest.raises(ValueError):
        rm.use_native_kernels(scope="everything")
