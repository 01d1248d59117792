"""The ir_measures provider that computes reteco-measures' measures.

Measure *definitions* live in `reteco_measures.measures`; the vectorised *kernels* are
declared by measure name in `reteco_measures.kernels` (with
`implements`), and this provider looks them up in
`IMPLEMENTATIONS`. Importing `reteco_measures` puts
`PROVIDER` first in ``ir_measures.DefaultPipeline`` (once, however often the package is
imported or reloaded), so ``ir_measures.calc_aggregate([nDCG@10, TC@10], ...)`` routes TC to us
and nDCG to pytrec_eval.

A kernel is ``fn(measure, ctx) -> DataFrame`` with columns ``query_id``, ``value`` and an
optional ``weight`` (default 1): one row per reported unit (see `reteco_measures.kernels.context`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric
from ir_measures.providers.base import Evaluator, Provider

from .. import kernels  # noqa: F401  (every kernel module: the declarations read below)
from ..io.convert import as_qrels_frame, as_run_frame
from ..kernels.context import CHECKED_IDS, IMPLEMENTATIONS, RANKED_RUN, EvalContext, RankedRun, implements
from ..kernels.ranking import duplicate_pairs
from ..measures.base import WeightedValue
from ..measures.params import check_cutoff
from ..query_ids import check_query_ids
from ..side import SideInfo, current_side_info
from . import gdeval
from .pyterrier import patch_pyterrier

__all__ = [
    "EvalContext", "RankedRun", "RetecoProvider", "PROVIDER", "implements", "IMPLEMENTATIONS", "install",
    "CHECKED_IDS", "RANKED_RUN",
]

def _frame_to_metrics(measure: ir_measures.Measure, frame: pd.DataFrame) -> Iterator[Metric]:
    qids = frame["query_id"].to_numpy(dtype=object)
    values = frame["value"].to_numpy(dtype=np.float64)
    weights = frame["weight"].to_numpy(dtype=np.float64) if "weight" in frame.columns else np.ones(len(frame))
    for qid, value, weight in zip(qids.tolist(), values.tolist(), weights.tolist()):
        yield Metric(query_id=qid, measure=measure, value=WeightedValue(value, weight))


class RetecoEvaluator(Evaluator):
    """Evaluates our measures for fixed qrels over any number of runs."""

    def __init__(self, measures: Iterable[ir_measures.Measure], qrels: Any, side: SideInfo):
        self.qrels_frame = as_qrels_frame(qrels)
        measures = list(measures)
        super().__init__(measures, set(self.qrels_frame["query_id"].tolist()))
        self.side = side

    def iter_calc(self, run: Any) -> Iterator[Metric]:
        # inside pt.Experiment: make PyTerrier average our values with our aggregators
        patch_pyterrier()
        shared = self.side.extra.get(RANKED_RUN)
        reuse = isinstance(shared, RankedRun) and shared.run is run
        frame = as_run_frame(run)
        if not self.side.extra.get(CHECKED_IDS):
            # a plain ir_measures / PyTerrier call: rm.calc_aggregate has checked the ids already
            check_query_ids(frame["query_id"], self.qrels_frame["query_id"])
        ranked: dict[str, pd.DataFrame] = {}
        if reuse:
            # rm.calc_aggregate / iter_calc removed the repeated pairs and ranked this run already
            # (for the standard measures of the same call): one sort serves both; columns the
            # frame does not carry (a file's run_id) are dropped, as rank_run(frame) would give
            extra = [c for c in shared.ranked.columns if c not in frame.columns and c != "rank"]
            ranked[shared.tie_break] = shared.ranked.drop(columns=extra) if extra else shared.ranked
        else:
            # a repeated (query, doc) pair keeps its last score, as pytrec_eval's dictionaries do,
            # so our measures and the standard ones see the same run (the reteco contract, applied
            # by validate_run, keeps the *first* occurrence instead and reports the others)
            dup = duplicate_pairs(frame, keep="last")
            if dup.any():
                frame = frame[~dup].reset_index(drop=True)
        ctx = EvalContext(self.qrels_frame, frame, self.side, ranked=ranked)
        for measure in self.measures:
            kernel = IMPLEMENTATIONS.get(measure.NAME)
            if kernel is None:
                raise NotImplementedError(
                    f"{measure} is defined by reteco-measures but its computation has not landed yet"
                )
            yield from _frame_to_metrics(measure, kernel(measure, ctx))


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
        return RetecoEvaluator(measures, qrels, current_side_info())


PROVIDER = RetecoProvider()


def install() -> None:
    """Register `PROVIDER` with ir_measures and put it first in the default pipeline.

    Idempotent: an earlier instance (from a reload) is replaced, never duplicated.
    """
    ir_measures.providers.registry[PROVIDER.NAME] = PROVIDER
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) != PROVIDER.NAME]
    pipeline.insert(0, PROVIDER)
    gdeval.install()  # ERR@k for any query id (gdeval.pl takes integer topics only)
