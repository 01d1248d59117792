"""TemporalCoverage (TC@k) — fraction of a query's required periods covered in the top k.

``TC@k = (1/M) Σₘ maxᵢ≤k cᵢₘ`` over the M required periods of the query, where cᵢₘ = 1 iff
the document at rank i covers period m.

Two label sources (as in the RETECO evaluation plan and the TEMPO paper, arXiv:2601.09523; kernel: `reteco_measures.kernels.temporal`):

* frozen ``labels`` (``periods`` per (query, doc)): the query's required periods are the topics
  column ``required_periods`` (list of str; a query without it falls back to the ids of its
  ``steps``). A document missing from the labels covers no period; a period counts whatever the
  document's verdict.
* no labels — the starter-kit oracle: each 1b step of the query is one required period, covered
  iff a top-k document is in that step's gold set. The steps come from the topics column
  ``steps``: the records of the release file ``steps_<split>.jsonl`` (``[{"step_id", "gold_ids"},
  ...]``), e.g. ``rm.calc_aggregate(["TC@10"], qrels, run, topics="steps_dev.jsonl")`` or
  ``topics=rm.topics("reteco/tempo/bitcoin/dev")``.

Queries with no required periods are *not scored* (NaN, excluded from the mean); a query of the
qrels missing from the run scores 0. Golden: two periods, one covered → 0.5, both → 1.0.
"""

from .base import TEMPORAL_REFERENCE, RetecoMeasure, common_params, register


class _TemporalCoverage(RetecoMeasure):
    __name__ = "TemporalCoverage"
    NAME = __name__
    PRETTY_NAME = "Temporal Coverage"
    SHORT_DESC = "Fraction of the required time periods covered by at least one top-k document."
    SUPPORTED_PARAMS = common_params(
        reference=TEMPORAL_REFERENCE,
    )


TemporalCoverage = _TemporalCoverage()
TC = TemporalCoverage
register(TemporalCoverage, ("TC",))
