"""The pytrec_eval route (``rm.use_native_kernels(False, scope="api")``) never crashes or hangs.

The guard must read exactly what pytrec_eval receives: the labels *after* an nDCG ``gains``
mapping (ir_measures maps them before calling pytrec_eval) and, of a repeated judgment, the
*last* one (pytrec_eval takes a dictionary). Two inputs slipped past a guard that looked at the
raw rows: ``nDCG(gains={0: 2})`` on a query whose labels are all negative (no label maps to 0,
so no placeholder judgment was added), and a judgment ``0`` then ``-1`` of one document (the
guard saw the 0, pytrec_eval the -1). trec_eval then sizes a table by a negative label:
undefined behaviour, seen as a SIGSEGV (exit 139) or a hang depending on the heap, so the
invariant itself (a label >= 0 per query in what pytrec_eval receives) is checked too.

Each call runs in a child process with a timeout, so a regression fails the test instead of
killing or blocking the run. Expected values: the native kernels' (the default route), and by
hand (trec_eval's rules: a negative label is never relevant and gives no gain, so a query
without a relevant document scores 0).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import reteco_measures as rm

RUN = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"a": 3.0, "b": 2.0, "c": 1.0}}


def _pytrec_route(measures: list[str], qrels_rows: list[tuple[str, str, int]]) -> dict[str, float]:
    """Per-query values with the native kernels off, computed in a child process."""
    code = f"""
        import json
        import pandas as pd
        import reteco_measures as rm
        rows = {qrels_rows!r}
        qrels = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
        with rm.use_native_kernels(False, scope="api"):
            got = rm.iter_calc({measures!r}, qrels, {RUN!r})
        print(json.dumps({{f"{{m.query_id}} {{m.measure}}": float(m.value) for m in got}}))
    """
    try:
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                             timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("pytrec_eval route hung (no answer within 60 s)")
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-2000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def _native(measures: list[str], qrels_rows: list[tuple[str, str, int]]) -> dict[str, float]:
    import pandas as pd

    qrels = pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"])
    return {f"{m.query_id} {m.measure}": float(m.value) for m in rm.iter_calc(measures, qrels, RUN)}


def test_gains_without_a_zero_label_on_an_all_negative_query() -> None:
    measures = ["nDCG(gains={0:2})@10", "nDCG@10", "P@1"]
    rows = [("q1", "a", 1), ("q1", "b", 0), ("q2", "a", -1), ("q2", "b", -2)]
    got = _pytrec_route(measures, rows)
    native = _native(measures, rows)
    assert got.keys() == native.keys()
    assert got == pytest.approx(native, abs=1e-12)
    # by hand: q2 has no positive mapped label -> 0 everywhere; q1 under gains {0: 2}: a (1) at
    # rank 1, b (0 -> 2) at rank 2; ideal order b, a: DCG = 1 + 2/log2(3), IDCG = 2 + 1/log2(3)
    import math

    assert got["q2 nDCG(gains={0:2})@10"] == got["q2 nDCG@10"] == got["q2 P@1"] == 0.0
    assert got["q1 nDCG(gains={0:2})@10"] == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_repeated_judgment_whose_last_label_is_negative() -> None:
    measures = ["nDCG@10", "AP", "RR", "P@1", "R@10"]
    rows = [("q1", "a", 1), ("q2", "a", 0), ("q2", "a", -1)]  # q2's last judgment of a: -1
    got = _pytrec_route(measures, rows)
    native = _native(measures, rows)
    assert got.keys() == native.keys()
    assert got == pytest.approx(native, abs=1e-12)
    for m in measures:  # q1: its relevant document at rank 1; q2: nothing relevant
        assert got[f"q1 {m}"] == 1.0 and got[f"q2 {m}"] == 0.0


@pytest.mark.parametrize("measures, rows", [
    (["nDCG(gains={0:2})@10"], [("q1", "a", 1), ("q2", "a", -1), ("q2", "b", -2)]),
    (["nDCG@10", "AP"], [("q1", "a", 1), ("q2", "a", 0), ("q2", "a", -1)]),
])
def test_what_pytrec_eval_receives_has_a_non_negative_label_per_query(monkeypatch, measures, rows) -> None:
    """The invariant trec_eval needs (its relevance-level table is sized by the largest label),
    checked on the very dictionaries handed to pytrec_eval."""
    import pandas as pd
    import pytrec_eval

    seen = []
    real = pytrec_eval.RelevanceEvaluator

    def spy(qrels, *args, **kwargs):
        seen.append(qrels)
        return real(qrels, *args, **kwargs)

    monkeypatch.setattr(pytrec_eval, "RelevanceEvaluator", spy)
    qrels = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    with rm.use_native_kernels(False, scope="api"):
        rm.calc_aggregate(measures, qrels, RUN)
    assert seen
    for received in seen:
        for q, labels in received.items():
            assert max(labels.values()) >= 0, (q, labels)
