"""The ir_measures provider that computes reteco-measures' measures.

Measure *definitions* live in :mod:`reteco_measures.measures`; the vectorised *kernels* are
registered here by measure name with :func:`implements`. Importing :mod:`reteco_measures`
puts :data:`PROVIDER` first in ``ir_measures.DefaultPipeline`` (once, however often the
package is imported or reloaded), so ``ir_measures.calc_aggregate([nDCG@10, TC@10], ...)``
routes TC to us and nDCG to pytrec_eval.

A kernel is ``fn(measure, ctx) -> DataFrame`` with columns ``query_id``, ``value`` and an
optional ``weight`` (default 1): one row per reported unit. ``value`` NaN means "not defined
for this query" (skipped by the aggregate, reported as NaN per query).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any, NamedTuple

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric
from ir_measures.providers.base import Evaluator, Provider

from . import _gdeval
from ._pyterrier import patch_pyterrier
from .io.convert import as_qrels_frame, as_run_frame
from .kernels.ndcg import gains_frame
from .kernels.ranking import duplicate_pairs, rank_run, top_k
from .measures.base import WeightedValue, check_cutoff
from .query_ids import check_query_ids
from .side import SideInfo, current_side_info, load_labels, load_topics

__all__ = ["EvalContext", "RankedRun", "RetecoProvider", "PROVIDER", "implements", "IMPLEMENTATIONS", "install"]

Kernel = Callable[[ir_measures.Measure, "EvalContext"], pd.DataFrame]

#: measure NAME -> kernel
IMPLEMENTATIONS: dict[str, Kernel] = {}

#: ``side_info`` key set by :mod:`reteco_measures.api` once it has checked the query ids itself
CHECKED_IDS = "_reteco_checked_ids"

#: ``side_info`` key under which :mod:`reteco_measures.api` hands over a :class:`RankedRun`: the
#: ranking it already made of the run it passes on, reused instead of sorting that run again
RANKED_RUN = "_reteco_ranked_run"


class RankedRun(NamedTuple):
    """A run ready for our kernels and its ranking under one tie policy.

    ``run`` holds no repeated (query, doc) pair (the last score of each was kept) and
    ``ranked`` is ``rank_run(run, tie_break, corpus=...)`` with the side information's corpus.
    The evaluator reuses ``ranked`` only when it is given this very ``run`` object.
    """

    run: pd.DataFrame
    tie_break: str
    ranked: pd.DataFrame


def implements(*names: str) -> Callable[[Kernel], Kernel]:
    """Decorator registering a kernel for the measures named ``names``."""

    def deco(fn: Kernel) -> Kernel:
        for name in names:
            IMPLEMENTATIONS[name] = fn
        return fn

    return deco


class EvalContext:
    """Everything a kernel needs for one (qrels, run, side information) evaluation.

    Expensive views (the ranked run per tie policy, gains, top-k joins) are computed once and
    shared by all measures of the call: the run is sorted once per tie policy. ``ranked`` gives
    rankings already made of ``run`` (tie policy -> what :meth:`ranked` would compute), which
    are used instead of sorting again.
    """

    def __init__(
        self,
        qrels: pd.DataFrame,
        run: pd.DataFrame,
        side: SideInfo,
        measure: Any = None,
        ranked: Mapping[str, pd.DataFrame] | None = None,
    ):
        self.qrels = qrels
        self.run = run
        self.side = side
        self._ranked: dict[str, pd.DataFrame] = dict(ranked or {})
        self._gains: dict[tuple[bool, int], pd.DataFrame] = {}

    # -- side information ------------------------------------------------------------------
    def topics_for(self, measure: ir_measures.Measure) -> pd.DataFrame | None:
        path = measure.params.get("topics")
        return load_topics(path) if path else self.side.topics

    def labels_for(self, measure: ir_measures.Measure) -> pd.DataFrame | None:
        path = measure.params.get("labels")
        return load_labels(path) if path else self.side.labels

    def tie_break_for(self, measure: ir_measures.Measure) -> str:
        return measure.params.get("tie_break") or self.side.tie_break

    # -- shared views ----------------------------------------------------------------------
    @cached_property
    def query_ids(self) -> pd.Index:
        """The evaluated queries: those of the qrels (trec_eval ``-c``: missing ones score 0)."""
        return pd.Index(pd.unique(self.qrels["query_id"].to_numpy()), dtype="str", name="query_id")

    def ranked(self, tie_break: str | None = None) -> pd.DataFrame:
        """The whole run sorted by query and tie policy, with a 1-based ``rank`` (cached)."""
        tb = tie_break or self.side.tie_break
        if tb not in self._ranked:
            self._ranked[tb] = rank_run(self.run, tb, corpus=self.side.corpus)  # type: ignore[arg-type]
        return self._ranked[tb]

    def ranked_for(self, measure: ir_measures.Measure) -> pd.DataFrame:
        return self.ranked(self.tie_break_for(measure))

    def top(self, measure: ir_measures.Measure) -> pd.DataFrame:
        """Ranked rows with rank ≤ the measure's cutoff (all rows without a cutoff)."""
        return top_k(self.ranked_for(measure), measure.params.get("cutoff"))

    def gains(self, *, binary: bool = False, rel: int = 1) -> pd.DataFrame:
        key = (binary, rel)
        if key not in self._gains:
            self._gains[key] = gains_frame(self.qrels, binary=binary, rel=rel)
        return self._gains[key]


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
            check_query_ids(frame["query_id"], self.qrels_frame["query_id"], stacklevel=4)
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
    """Register :data:`PROVIDER` with ir_measures and put it first in the default pipeline.

    Idempotent: an earlier instance (from a reload) is replaced, never duplicated.
    """
    ir_measures.providers.registry[PROVIDER.NAME] = PROVIDER
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) != PROVIDER.NAME]
    pipeline.insert(0, PROVIDER)
    _gdeval.install()  # ERR@k for any query id (gdeval.pl takes integer topics only)
