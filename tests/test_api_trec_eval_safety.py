"""Inputs that crash pytrec_eval never reach it; the values follow trec_eval's rules.

trec_eval (``form_res_rels.c``) treats a negative relevance as "in the pool, not judged": it is
never relevant (``num_rel`` counts labels >= 1), gives no nDCG gain (only gains > 0 add), and
a query without a relevant document scores 0 on nDCG, P, AP, R and RR. Its relevance-level
table is sized by the query's largest label, so a query whose labels are all negative crashes
it (TREC Web qrels use -2). A cutoff of 0 trips an assertion in pytrec_eval that aborts the
interpreter. The crash-prone calls run in a child process, so a regression fails the test
instead of killing the test run.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.api import trec_eval_safe_qrels

MEASURES = ["nDCG@10", "P@1", "AP", "R@10", "RR"]
PYTREC = {"nDCG@10": "ndcg_cut_10", "P@1": "P_1", "AP": "map", "R@10": "recall_10", "RR": "recip_rank"}


def _child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)


def test_all_negative_query_next_to_another_does_not_crash(tmp_path):
    (tmp_path / "q").write_text("q1 0 d1 1\nq2 0 d1 -2\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1 r\nq2 Q0 d1 1 1 r\n")
    out = _child(f"""
        import json, reteco_measures as rm
        from reteco_measures.cli.main import main
        per = {{(m.query_id, str(m.measure)): float(m.value)
               for m in rm.iter_calc({MEASURES!r}, {str(tmp_path / 'q')!r}, {str(tmp_path / 'r')!r})}}
        print(json.dumps({{f"{{q}} {{m}}": v for (q, m), v in per.items()}}))
        raise SystemExit(main(["eval", {str(tmp_path / 'q')!r}, {str(tmp_path / 'r')!r}, "nDCG@10",
                               "--format", "json"]))
    """)
    assert out.returncode == 0, out.stderr
    first, rest = out.stdout.split("\n", 1)
    per = json.loads(first)
    # q1: its one relevant document is at rank 1 -> every measure 1; q2: no relevant document -> 0
    for m in ["nDCG@10", "P@1", "AP", "R@10", "RR"]:
        assert per[f"q1 {m}"] == 1.0 and per[f"q2 {m}"] == 0.0
    assert json.loads(rest) == [{"measure": "nDCG@10", "value": 0.5, "n": 2}]


def test_negative_labels_follow_trec_eval_rules_by_hand():
    qrels = pd.DataFrame({
        "query_id": ["a"] * 5 + ["b", "b"] + ["c"],
        "doc_id": ["u", "v", "w", "x", "y", "u", "v", "u"],
        "relevance": [-2, 2, -1, 0, 1, -1, -2, -1],
    })
    run = pd.DataFrame({
        "query_id": ["a"] * 4 + ["b", "b"] + ["c"],
        "doc_id": ["u", "w", "y", "v", "u", "z", "u"],
        "score": [4.0, 3.0, 2.0, 1.0, 2.0, 1.0, 1.0],
    })
    per = {(m.query_id, str(m.measure)): float(m.value) for m in rm.iter_calc(MEASURES, qrels, run)}
    # a: ranking u(-2) w(-1) y(1) v(2); negative labels gain nothing and are not relevant
    # DCG = 1/log2(4) + 2/log2(5); ideal = 2 + 1/log2(3) (labels 2 and 1 only)
    dcg = 1 / math.log2(4) + 2 / math.log2(5)
    assert per[("a", "nDCG@10")] == pytest.approx(dcg / (2 + 1 / math.log2(3)), abs=1e-12)
    assert per[("a", "P@1")] == 0.0
    assert per[("a", "RR")] == pytest.approx(1 / 3)
    assert per[("a", "AP")] == pytest.approx((1 / 3 + 2 / 4) / 2)  # num_rel = 2 (labels >= 1)
    assert per[("a", "R@10")] == 1.0
    # b (-1, -2) and c (-1): no relevant document -> 0 everywhere (and no crash)
    for q in ("b", "c"):
        for m in MEASURES:
            assert per[(q, str(rm.parse_measures(m)[0]))] == 0.0
    # our binary TurnNDCG follows the same rules: a's relevant y, v at ranks 3, 4 over an ideal of two
    turn = {m.query_id: float(m.value) for m in rm.iter_calc(["TurnNDCG@10"], qrels, run)}
    assert turn["a"] == pytest.approx((1 / math.log2(4) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)), abs=1e-12)
    assert turn["b"] == 0.0 and turn["c"] == 0.0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from([-2, -1, 0, 1, 2]), min_size=1, max_size=5), min_size=1, max_size=4),
    st.data(),
)
def test_same_as_pytrec_eval_where_it_does_not_crash(labels, data):
    qrels = {f"q{i}": {f"d{j}": r for j, r in enumerate(row)} for i, row in enumerate(labels)}
    run = {q: {f"d{j}": float(data.draw(st.integers(0, 3))) for j in range(6)} for q in qrels}
    safe = {q: docs for q, docs in qrels.items() if max(docs.values()) >= 0}  # what pytrec_eval survives
    per = {(m.query_id, str(m.measure)): float(m.value) for m in rm.iter_calc(MEASURES, qrels, run)}
    if safe:
        ref = pytrec_eval.RelevanceEvaluator(safe, set(PYTREC.values())).evaluate(
            {q: run[q] for q in safe})
        for q, values in ref.items():
            for m, key in PYTREC.items():
                assert per[(q, str(rm.parse_measures(m)[0]))] == pytest.approx(values[key], abs=1e-12)
    for q in set(qrels) - set(safe):  # all labels negative: no relevant document -> 0
        for m in MEASURES:
            assert per[(q, str(rm.parse_measures(m)[0]))] == 0.0


def test_safe_qrels_only_add_an_unretrieved_label_zero_row():
    qrels = pd.DataFrame({"query_id": ["a", "b", "b"], "doc_id": ["x", "x", "y"], "relevance": [1, -2, -1]})
    out = trec_eval_safe_qrels(qrels)
    assert len(out) == 4
    extra = out.iloc[3]
    assert (extra["query_id"], extra["relevance"]) == ("b", 0)
    assert trec_eval_safe_qrels(qrels.iloc[:1]) is not None and len(trec_eval_safe_qrels(qrels.iloc[:1])) == 1


@pytest.mark.parametrize("measure", ["nDCG@0", "P@0", "AP@0", "R@0"])
def test_cutoff_zero_is_a_value_error_before_evaluation(measure):
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]})
    with pytest.raises(ValueError, match="cutoff"):
        rm.parse_measures(measure)
    with pytest.raises(ValueError, match="cutoff"):
        rm.calc_aggregate([rm.parse_measures(measure.replace("@0", "@1"))[0](cutoff=0)], qrels, run)
    with pytest.raises(ValueError, match="cutoff"):
        rm.evaluate(measure, qrels, run)


def test_cutoff_zero_in_plain_ir_measures_and_cli_never_aborts(tmp_path):
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1 r\n")
    out = _child(f"""
        import ir_measures, pandas as pd
        import reteco_measures  # puts our provider first in ir_measures' pipeline
        from reteco_measures.cli.main import main
        qrels = pd.DataFrame({{"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]}})
        run = pd.DataFrame({{"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]}})
        for name in ["nDCG@0", "P@0", "AP@0", "R@0"]:
            try:
                ir_measures.calc_aggregate([ir_measures.parse_measure(name)], qrels, run)
                print(name, "no error")
            except ValueError as exc:
                print(name, "ValueError", "cutoff" in str(exc))
        print("cli", main(["eval", {str(tmp_path / 'q')!r}, {str(tmp_path / 'r')!r}, "P@0"]))
    """)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:4] == [f"{m} ValueError True" for m in ["nDCG@0", "P@0", "AP@0", "R@0"]]
    assert lines[4] == "cli 2"
    assert "cutoff must be a positive integer" in out.stderr and "Traceback" not in out.stderr


def test_ir_measures_passthrough_command_is_guarded_too(tmp_path):
    (tmp_path / "q").write_text("q1 0 d1 1\nq2 0 d1 -2\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 1 r\nq2 Q0 d1 1 1 r\n")
    out = _child(f"""
        from reteco_measures.cli.main import main
        raise SystemExit(main(["ir_measures", {str(tmp_path / 'q')!r}, {str(tmp_path / 'r')!r}, "nDCG@10 P@1",
                               "-q"]))
    """)
    assert out.returncode == 0, out.stderr
    rows = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in out.stdout.splitlines()}
    # q1 finds its relevant document at rank 1; q2 has none (labels all negative): 0, mean 0.5
    assert rows[("q1", "nDCG@10")] == "1.0000" and rows[("q2", "nDCG@10")] == "0.0000"
    assert rows[("all", "nDCG@10")] == "0.5000" and rows[("all", "P@1")] == "0.5000"
    assert (tmp_path / "q").read_text() == "q1 0 d1 1\nq2 0 d1 -2\n"  # the user's file is untouched


def test_safe_qrels_file_is_written_only_when_needed(tmp_path):
    """The file form: a query whose labels are all negative gets one unretrieved label-0
    judgment in the copy (by hand below); a file pytrec_eval reads safely, or one with a line in
    error, gives None."""
    from reteco_measures.api import trec_eval_safe_qrels_file

    (tmp_path / "out").mkdir()
    needs = tmp_path / "needs.txt"
    needs.write_text("q1 0 d1 1\nq2 0 d1 -2\nq2 0 d2 -1\n")
    copy = trec_eval_safe_qrels_file(needs, tmp_path / "out")
    assert copy is not None
    lines = set(open(copy).read().splitlines())
    assert {"q1 0 d1 1", "q2 0 d1 -2", "q2 0 d2 -1"} <= lines and len(lines) == 4
    (extra,) = lines - {"q1 0 d1 1", "q2 0 d1 -2", "q2 0 d2 -1"}
    q, _, doc, label = extra.split()
    assert (q, label) == ("q2", "0") and doc not in ("d1", "d2")
    fine = tmp_path / "fine.txt"
    fine.write_text("q1 0 d1 1\nq2 0 d1 0\n")
    assert trec_eval_safe_qrels_file(fine, tmp_path / "out") is None
    broken = tmp_path / "broken.txt"
    broken.write_text("q1 0 d1 1\nq2 0 d1 -2\nq2 0 d2 x\n")
    assert trec_eval_safe_qrels_file(broken, tmp_path / "out") is None
