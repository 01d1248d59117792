"""TemporalPrecision (TP@k) — position-sensitive precision of temporally relevant documents.

Definition (RETECO evaluation plan; TEMPO paper, arXiv:2601.09523), with vᵢ ∈ {0, 1} the temporal verdict of the document at rank i:

* ``form='dcg'`` (default; the RETECO starter-kit scorer):
  ``TP@k = Σᵢ wᵢ·vᵢ / Σᵢ wᵢ`` over the *returned* top-k ranks, ``wᵢ = 1/log₂(i+1)``.
* ``form='ap'`` (TEMPO paper, Abdallah et al., arXiv:2601.09523): mean over the temporally
  relevant ranks r ≤ k of (number of temporally relevant ranks ≤ r)/r; 0 if there is none.

Verdicts come from a frozen ``labels`` table, or (no labels) from the relevance qrels
(rel ≥ 1), the starter-kit oracle. An empty ranking scores 0; a query missing from the run
scores 0.

Golden vectors (k = 5): [1,0,0,0,0] → 0.33916 (dcg) / 1.0 (ap); [0,0,0,0,1] → 0.13121 / 0.2.
"""

from ir_measures.measures.base import ParamInfo

from .base import TEMPORAL_REFERENCE, RetecoMeasure, common_params, register


class _TemporalPrecision(RetecoMeasure):
    __name__ = "TemporalPrecision"
    NAME = __name__
    PRETTY_NAME = "Temporal Precision"
    SHORT_DESC = "Rank-discounted share of temporally relevant documents in the top k."
    SUPPORTED_PARAMS = common_params(
        reference=TEMPORAL_REFERENCE,
        form=ParamInfo(dtype=str, choices=["dcg", "ap"], default="dcg", desc="'dcg' (RETECO) or 'ap' (TEMPO paper)"),
    )


TemporalPrecision = _TemporalPrecision()
TP = TemporalPrecision
register(TemporalPrecision, ("TP",))
