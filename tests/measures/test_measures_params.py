"""One way to read a measure parameter, for our measures and ir_measures' own."""

from __future__ import annotations

import ir_measures

import reteco_measures as rm
from reteco_measures.measures.params import param


def test_param_reads_given_then_declared_default_then_fallback() -> None:
    # given values win; ir_measures' own measures read the same way as ours
    assert param(ir_measures.parse_measure("RR(rel=2)@10"), "rel") == 2
    assert param(ir_measures.parse_measure("nDCG@10"), "cutoff") == 10
    # ir_measures declares RR's rel default as 1 (ir_measures/measures/rr.py)
    assert param(ir_measures.RR, "rel") == 1
    # a cutoff never given: the whole ranking (None), or the caller's fallback
    assert param(ir_measures.nDCG, "cutoff") is None
    assert param(ir_measures.nDCG, "cutoff", 0) == 0
    # a parameter the measure does not declare: the fallback
    assert param(ir_measures.nDCG, "no_such_parameter", "x") == "x"
    # ours: StepNDCG declares rel=1 and average='query'; TP declares form='dcg'
    step = rm.parse_measures(["StepNDCG@10"])[0]
    assert (param(step, "rel"), param(step, "average"), param(step, "cutoff")) == (1, "query", 10)
    tp = rm.parse_measures(["TP(form='ap')@5"])[0]
    assert param(tp, "form") == "ap" and param(rm.parse_measures(["TP@5"])[0], "form") == "dcg"
    # the measures' own method is the same reading
    assert step.param("average") == param(step, "average")
