"""``exclude_label``: BRIGHT's excluded documents, removed from the run before evaluation.

BRIGHT's scoring (https://github.com/xlang-ai/BRIGHT, ``run.py``: each query's ``excluded_ids``
are popped from the scores before pytrec_eval) drops them from the ranking; ir_datasets (0.6 on)
keeps them in the qrels with the grade -100, which pytrec_eval reads as a judged non-relevant
document that keeps its rank. Expected values: pytrec_eval on the run as BRIGHT hands it over
(the excluded ids removed from the dict), and on the run as it is for the default.
"""

from __future__ import annotations

import json
import warnings

import ir_measures
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.cli.main import main
from reteco_measures.errors import DataFormatWarning

QRELS = {"q1": {"a": 1, "x": -100, "b": 0}, "q2": {"c": 2, "y": -100}}
RUN = {"q1": {"x": 3.0, "a": 2.0, "b": 1.0}, "q2": {"y": 5.0, "z": 4.0, "c": 3.0}}
MEASURES = {"nDCG@10": "ndcg_cut_10", "RR": "recip_rank", "P@1": "P_1"}


def _pytrec(run: dict) -> dict[str, float]:
    per = pytrec_eval.RelevanceEvaluator(QRELS, set(MEASURES.values())).evaluate(run)
    return {m: sum(v[t] for v in per.values()) / len(QRELS) for m, t in MEASURES.items()}


def _bright_run() -> dict:
    excluded = {q: {d for d, g in docs.items() if g == -100} for q, docs in QRELS.items()}
    return {q: {d: s for d, s in docs.items() if d not in excluded[q]} for q, docs in RUN.items()}


def test_exclude_label_removes_the_documents_as_bright_does() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = rm.calc_aggregate(list(MEASURES), QRELS, RUN, exclude_label=-100)
    assert {str(m): v for m, v in got.items()} == pytest.approx(_pytrec(_bright_run()), abs=1e-12)
    # by hand: q1 a at rank 1; q2 z (unjudged) then c (2) at rank 2
    assert got[ir_measures.parse_measure("RR")] == pytest.approx((1 + 1 / 2) / 2)
    per = {(m.query_id, str(m.measure)): m.value for m in rm.iter_calc(["P@1"], QRELS, RUN, exclude_label=-100)}
    assert per == {("q1", "P@1"): 1.0, ("q2", "P@1"): 0.0}
    table = rm.evaluate(["RR"], QRELS, RUN, exclude_label=-100)
    assert table["value"].tolist() == [pytest.approx(0.75)]


def test_default_keeps_pytrec_eval_reading_with_a_note() -> None:
    with pytest.warns(DataFormatWarning, match=r"2 judgment\(s\) with the label -100.*exclude_label=-100"):
        got = rm.calc_aggregate(list(MEASURES), QRELS, RUN)
    assert {str(m): v for m, v in got.items()} == pytest.approx(_pytrec(RUN), abs=1e-12)
    assert got[ir_measures.parse_measure("RR")] == pytest.approx((1 / 2 + 1 / 3) / 2)


def test_cli_exclude_label(tmp_path, capsys) -> None:
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_text("".join(f"{qid} 0 {d} {g}\n" for qid, docs in QRELS.items() for d, g in docs.items()))
    r.write_text("".join(f"{qid} Q0 {d} {i} {s} r\n" for qid, docs in RUN.items()
                         for i, (d, s) in enumerate(docs.items(), 1)))
    assert main(["eval", str(q), str(r), "RR", "--exclude-label", "-100", "--format", "json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)[0]["value"] == pytest.approx(0.75) and "-100" not in out.err
    assert main(["eval", str(q), str(r), "RR", "--format", "json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)[0]["value"] == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert "--exclude-label -100" in out.err
