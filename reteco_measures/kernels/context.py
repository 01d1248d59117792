"""What a kernel is given, and how a kernel declares the measures it computes.

A kernel is ``fn(measure, ctx) -> DataFrame`` with columns ``query_id``, ``value`` and an
optional ``weight`` (default 1): one row per reported unit. ``value`` NaN means "not defined
for this query" (skipped by the aggregate, reported as NaN per query).

Each kernel module declares its kernels with `implements`, which records them in
`IMPLEMENTATIONS` (measure ``NAME`` -> kernel). The provider
(`reteco_measures.providers.reteco`) reads that table; kernels never import the provider.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple

import ir_measures
import pandas as pd

from ..measures.params import param
from ..side import SideInfo, load_labels, load_topics
from .ndcg import gains_frame
from .ranking import rank_run, top_k

__all__ = ["Kernel", "EvalContext", "RankedRun", "implements", "IMPLEMENTATIONS", "CHECKED_IDS", "RANKED_RUN"]

Kernel = Callable[[ir_measures.Measure, "EvalContext"], pd.DataFrame]

#: measure NAME -> kernel (filled by `implements` when a kernel module is imported)
IMPLEMENTATIONS: dict[str, Kernel] = {}

#: ``side_info`` key set by the evaluation engine once it has checked the query ids itself
CHECKED_IDS = "_reteco_checked_ids"

#: ``side_info`` key under which the evaluation engine hands over a `RankedRun`: the
#: ranking it already made of the run it passes on, reused instead of sorting that run again
RANKED_RUN = "_reteco_ranked_run"


def implements(*names: str) -> Callable[[Kernel], Kernel]:
    """Decorator declaring ``fn`` as the kernel of the measures named ``names``."""

    def deco(fn: Kernel) -> Kernel:
        for name in names:
            IMPLEMENTATIONS[name] = fn
        return fn

    return deco


class RankedRun(NamedTuple):
    """A run ready for our kernels and its ranking under one tie policy.

    ``run`` holds no repeated (query, doc) pair (the last score of each was kept) and
    ``ranked`` is ``rank_run(run, tie_break, corpus=...)`` with the side information's corpus.
    The evaluator reuses ``ranked`` only when it is given this very ``run`` object.
    """

    run: pd.DataFrame
    tie_break: str
    ranked: pd.DataFrame


class EvalContext:
    """Everything a kernel needs for one (qrels, run, side information) evaluation.

    Expensive views are computed once and shared by all measures of the call, in one declared
    cache, `cache`: ``("ranked", tie_policy)`` (the run sorted once per tie policy),
    ``("gains", binary, rel)`` (the qrels' gains) and ``("query_ids",)``. ``ranked`` gives
    rankings already made of ``run`` (tie policy -> what `ranked` would compute), which
    are used instead of sorting again.
    """

    #: the shared views of this evaluation, by key (see the class docstring)
    cache: dict[Hashable, Any]

    def __init__(
        self,
        qrels: pd.DataFrame,
        run: pd.DataFrame,
        side: SideInfo,
        ranked: Mapping[str, pd.DataFrame] | None = None,
    ):
        self.qrels = qrels
        self.run = run
        self.side = side
        self.cache = {("ranked", tb): frame for tb, frame in (ranked or {}).items()}

    def cached(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``cache[key]``, computed by ``compute()`` on first use."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]

    # -- side information ------------------------------------------------------------------
    def topics_for(self, measure: ir_measures.Measure) -> pd.DataFrame | None:
        path = param(measure, "topics")
        return load_topics(path) if path else self.side.topics

    def labels_for(self, measure: ir_measures.Measure) -> pd.DataFrame | None:
        path = param(measure, "labels")
        return load_labels(path) if path else self.side.labels

    def tie_break_for(self, measure: ir_measures.Measure) -> str:
        return param(measure, "tie_break") or self.side.tie_break

    # -- shared views ----------------------------------------------------------------------
    @property
    def query_ids(self) -> pd.Index:
        """The evaluated queries: those of the qrels (trec_eval ``-c``: missing ones score 0)."""
        return self.cached(
            ("query_ids",),
            lambda: pd.Index(pd.unique(self.qrels["query_id"].to_numpy()), dtype="str", name="query_id"),
        )

    def ranked(self, tie_break: str | None = None) -> pd.DataFrame:
        """The whole run sorted by query and tie policy, with a 1-based ``rank`` (cached)."""
        tb = tie_break or self.side.tie_break
        return self.cached(("ranked", tb), lambda: rank_run(self.run, tb, corpus=self.side.corpus))  # type: ignore[arg-type]

    def ranked_for(self, measure: ir_measures.Measure) -> pd.DataFrame:
        return self.ranked(self.tie_break_for(measure))

    def top(self, measure: ir_measures.Measure) -> pd.DataFrame:
        """Ranked rows with rank ≤ the measure's cutoff (all rows without a cutoff)."""
        return top_k(self.ranked_for(measure), param(measure, "cutoff"))

    def gains(self, *, binary: bool = False, rel: int = 1) -> pd.DataFrame:
        return self.cached(("gains", binary, rel), lambda: gains_frame(self.qrels, binary=binary, rel=rel))
