"""The ir_measures provider of reteco-measures' own measures.

Measure *definitions* live in `reteco_measures.measures`; the vectorised *kernels* are
declared by measure name in `reteco_measures.kernels`, and the evaluator
(`reteco_measures.providers.evaluator`) looks them up there. Importing `reteco_measures`
calls `install`: `PROVIDER` is registered with ir_measures and put first in
``ir_measures.DefaultPipeline`` (once, however often the package is imported or reloaded), so
``ir_measures.calc_aggregate([nDCG@10, TC@10], ...)`` routes TC to us and nDCG to pytrec_eval.
This module is light (ir_measures only): the evaluator, which needs pandas and the kernels, is
imported when a call first evaluates one of our measures.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ir_measures
from ir_measures.providers.base import Evaluator, Provider

from ..measures.params import check_cutoff

__all__ = ["RetecoProvider", "PROVIDER", "install"]


class RetecoProvider(Provider):
    """reteco-measures' own measures (TemporalPrecision, TC, nDCG_FC, StepNDCG, ...)."""

    NAME = "reteco"
    SUPPORTED_MEASURES: list = []

    def supports(self, measure: ir_measures.Measure) -> bool:
        # Sitting first in ir_measures' default pipeline, we see every measure of a plain
        # ir_measures (or PyTerrier) call before pytrec_eval does: refuse a cutoff below 1 here,
        # which would otherwise abort the interpreter inside pytrec_eval.
        check_cutoff(measure)
        if not getattr(measure, "_RETECO", False):
            return False
        measure.validate_params()
        return True

    def _evaluator(self, measures: Iterable[ir_measures.Measure], qrels: Any) -> Evaluator:
        from .evaluator import evaluator  # pandas and the kernels: loaded on first evaluation

        return evaluator(measures, qrels)


PROVIDER = RetecoProvider()


def install() -> None:
    """Register `PROVIDER` with ir_measures and put it first in the default pipeline.

    Idempotent: an earlier instance (from a reload) is replaced, never duplicated.
    """
    ir_measures.providers.registry[PROVIDER.NAME] = PROVIDER
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) != PROVIDER.NAME]
    pipeline.insert(0, PROVIDER)
