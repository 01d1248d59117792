"""TemporalCoverage (TC@k) — fraction of a query's required periods covered in the top k.

``TC@k = (1/M) Σₘ maxᵢ≤k cᵢₘ`` over the M required periods of the query, where cᵢₘ = 1 iff
the document at rank i covers period m.

Periods and coverage come from a frozen ``labels`` table (``periods`` per (query, doc)) with the
query's ``required_periods`` from topics; or, with no labels, from the starter-kit oracle: each
1b step of the query is one required period, covered iff a top-k document is in that step's
gold set. Queries with no required periods are *not scored* (NaN, excluded from the mean).
Golden: two periods, one covered → 0.5, both → 1.0.
"""

from .base import RetecoMeasure, common_params, register


class _TemporalCoverage(RetecoMeasure):
    __name__ = "TemporalCoverage"
    NAME = __name__
    PRETTY_NAME = "Temporal Coverage"
    SHORT_DESC = "Fraction of the required time periods covered by at least one top-k document."
    SUPPORTED_PARAMS = common_params()


TemporalCoverage = _TemporalCoverage()
TC = TemporalCoverage
register(TemporalCoverage, ("TC",))
