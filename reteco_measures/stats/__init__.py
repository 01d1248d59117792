"""Comparing runs: paired tests, resampling by aggregation unit, corrections, tie sensitivity.

Entry points::

    rm.compare(runs, qrels, measures, *, baseline=None, test="t", correction="holm", alpha=0.05,
               ci=0.95, n_resamples=10_000, seed=0, stats=None, topics=None, labels=None, by=None,
               tie_break="trec_eval") -> Comparison
    # the six statistical settings as one value (the keywords fold into one; both: TypeError)
    rm.StatOptions(test="t", correction="holm", alpha=0.05, ci=0.95, n_resamples=10_000, seed=0)
    rm.compare(runs, qrels, measures, stats=rm.StatOptions(test="wilcoxon"))

    # lower level: a Comparison from an already computed per-query frame (no re-evaluation)
    stats.compare_frame(per_query, *, measures=None, runs=None, names=None, empties=None, units=None,
                        baseline=None, test="t", correction="holm", alpha=0.05, ci=0.95,
                        n_resamples=10_000, seed=0, stats=None, by=None) -> Comparison
    Comparison.from_per_query(per_query, **same keywords)             # the same
    # per_query columns: run, measure (report label), query_id, value, weight
    #   + unit, stratum (what resampling draws; stats.unit_columns(measure, query_ids, topics))
    #   + the by columns + tie_min, tie_max (optional, per-query worst/best tie order values)
    stats.per_query_frame(runs, qrels, measures, *, topics, labels, by, corpus, tie_break)
        -> (per_query, kwargs for compare_frame)                       # what rm.compare evaluates
    stats.unit_columns(measure, query_ids, topics=None) -> DataFrame(query_id, unit, stratum)

    rm.tie_sensitivity(qrels, run, measure, *, topics=None, labels=None, corpus=None)
        -> DataFrame(query_id, value, min, max, tied_at_cutoff)

    stats.rank_agreement(a, b, *, top=None, ci=0.95, n_resamples=1000, seed=0) -> RankAgreement
        # kendall_tau_b, tau_ap, spearman, tau_gap, topk_kendall, top1_same, n, swaps (+ intervals)

    stats.gate_frame(per_query, *, baseline, candidate, margin=0.0, alpha=0.05, ...) -> Gate
        # the regression gate on a per-query frame (rm.gate scores the runs first)

How each measure is resampled (its *unit*) is described in `reteco_measures.stats.design`,
the tests in `reteco_measures.stats.tests`, the tie orders in
`reteco_measures.stats.ties`. Nothing here prints or draws: tables and plots live in
`reteco_measures.report`.
"""

from __future__ import annotations

from .compare import ALL, Comparison, compare, compare_frame, per_query_frame
from .design import unit_columns, unit_kind
from .gate import Gate, gate_frame
from .options import StatOptions
from .rank_agreement import RankAgreement, rank_agreement
from .tests import CORRECTIONS, TESTS, TIE_TOLERANCE, adjust
from .ties import has_ties, tie_sensitivity

__all__ = [
    "ALL",
    "Comparison",
    "StatOptions",
    "compare",
    "compare_frame",
    "per_query_frame",
    "unit_columns",
    "unit_kind",
    "adjust",
    "TESTS",
    "CORRECTIONS",
    "TIE_TOLERANCE",
    "tie_sensitivity",
    "has_ties",
    "rank_agreement",
    "RankAgreement",
    "Gate",
    "gate_frame",
]
