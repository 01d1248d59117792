"""nDCG|FC@k (registered as ``nDCG_FC``) — binary nDCG@k over fully covered queries.

Per query: binary nDCG@k (rel ≥ ``rel`` counts as 1) if TC@k = 1, otherwise not defined
(NaN, excluded from the mean). Queries without required periods are excluded as in TC; TC uses
the same cutoff, tie policy and label source as this measure (see ``TemporalCoverage``). A query
missing from the run has TC = 0 and is therefore excluded too.

``empty``: the aggregate when *no* query reaches full coverage. NaN by default (the honest
answer: the subset is empty); ``empty=0`` reproduces the RETECO starter-kit scorer.
Source: RETECO evaluation plan ("nDCG@10 over the subset of queries achieving full temporal
coverage").
"""

from ir_measures.measures.base import ParamInfo

from .base import TEMPORAL_REFERENCE, RetecoMeasure, common_params, register


class _nDCG_FC(RetecoMeasure):
    __name__ = "nDCG_FC"
    NAME = __name__
    DISPLAY_NAME = "nDCG|FC"
    PRETTY_NAME = "nDCG over fully covered queries"
    SHORT_DESC = "Binary nDCG@k restricted to queries whose temporal coverage is 1."
    SUPPORTED_PARAMS = common_params(
        reference=TEMPORAL_REFERENCE,
        empty=ParamInfo(dtype=(int, float), desc="aggregate for an empty subset (default NaN; 0 = starter kit)"),
        rel=ParamInfo(dtype=int, default=1, desc="minimum grade counted as relevant"),
    )

    def empty_value(self) -> float:
        return float(self.params.get("empty", float("nan")))


nDCG_FC = _nDCG_FC()
register(nDCG_FC, ("NDCG_FC",))
