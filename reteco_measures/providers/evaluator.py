"""The evaluator behind `reteco_measures.providers.reteco.RetecoProvider`: computes
reteco-measures' own measures for fixed qrels over any number of runs, with the vectorised kernels
declared by measure name in `reteco_measures.kernels` (`IMPLEMENTATIONS`).

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
from ir_measures.providers.base import Evaluator

from .. import kernels  # noqa: F401  (every kernel module: the declarations read below)
from ..io.convert import as_qrels_frame, as_run_frame
from ..kernels.context import CHECKED_IDS, IMPLEMENTATIONS, RANKED_RUN, EvalContext, RankedRun
from ..kernels.ranking import duplicate_pairs
from ..measures.base import WeightedValue
from ..query_ids import check_query_ids
from ..side import SideInfo, current_side_info

__all__ = ["RetecoEvaluator", "evaluator"]


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




def evaluator(measures: Iterable[ir_measures.Measure], qrels: Any) -> RetecoEvaluator:
    """A `RetecoEvaluator` for ``measures`` and ``qrels`` with the side information in effect."""
    return RetecoEvaluator(measures, qrels, current_side_info())
