"""StepNDCG@k — RETECO sub-track 1b step-wise retrieval (official measure).

Binary nDCG@k of each *step topic*; steps map to their query via ``topics.parent_id`` or the id
form ``<query_id>_step<n>`` (a step id matching neither is its own query, with a warning). A
query's value is the mean over its supplied steps — the steps of the qrels; a step in the qrels but
missing from the run scores 0. Binary gains: grade ≥ ``rel`` (default 1) counts as relevant, which
equals trec_eval's ``ndcg_cut_k`` on the binary RETECO qrels.

``average``:

* ``'query'`` (default, RETECO: "step-specific nDCG@10 values are first averaged over the
  supplied steps for each query, then aggregated across queries"): per-query metrics carry
  the query id, aggregate = mean over queries;
* ``'step'`` (upstream TEMPO code): per-step metrics carry the step id, aggregate = mean over
  all steps.

``DEFAULT`` is NaN, not 0 (as for all our measures, see ``RetecoMeasure.DEFAULT``): when StepNDCG is evaluated together with measures of another provider
(``ir_measures.calc_aggregate([StepNDCG@10, nDCG@10], ...)``), ir_measures adds a DEFAULT value
for every (measure, qrels topic) pair a provider did not report. With ``average='query'`` the
qrels topics are *steps* while StepNDCG reports *queries*, so those filler rows carry NaN ("not
defined at this level") and the NaN-skipping aggregate stays the mean over queries.
"""

from ir_measures.measures.base import ParamInfo

from .base import RetecoMeasure, common_params, register


class _StepNDCG(RetecoMeasure):
    __name__ = "StepNDCG"
    NAME = __name__
    PRETTY_NAME = "Step-wise nDCG"
    SHORT_DESC = "Binary nDCG@k per step topic, averaged per query (RETECO 1b)."
    SUPPORTED_PARAMS = common_params(
        average=ParamInfo(dtype=str, choices=["query", "step"], default="query", desc="aggregation unit"),
        rel=ParamInfo(dtype=int, default=1, desc="minimum grade counted as relevant"),
    )


StepNDCG = _StepNDCG()
register(StepNDCG)
