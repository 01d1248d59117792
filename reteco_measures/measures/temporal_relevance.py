"""TemporalRelevance (TR@k) — share of the top-k results judged temporally relevant.

``TR@k = Σᵢ≤k vᵢ / n`` where vᵢ is the temporal verdict at rank i and n is

* ``over='returned'`` (default): the number of documents actually returned within the top k;
* ``over='k'``: k itself (a short ranking is penalised); needs a cutoff (``TR(over='k')`` without
  ``@k`` is an error, not a silent fallback).

An empty ranking (or a query missing from the run) scores 0. Without a cutoff the whole ranking
counts. Verdicts: frozen ``labels`` or the starter-kit oracle (qrels grade ≥ 1), as for
``TemporalPrecision``. Source: RETECO evaluation plan
("the fraction of the top ten results judged temporally relevant").
"""

from ir_measures.measures.base import ParamInfo

from .base import TEMPORAL_REFERENCE, RetecoMeasure, common_params, register


class _TemporalRelevance(RetecoMeasure):
    __name__ = "TemporalRelevance"
    NAME = __name__
    PRETTY_NAME = "Temporal Relevance"
    SHORT_DESC = "Fraction of the top-k results that are temporally relevant."
    SUPPORTED_PARAMS = common_params(
        reference=TEMPORAL_REFERENCE,
        over=ParamInfo(dtype=str, choices=["returned", "k"], default="returned", desc="denominator"),
    )


TemporalRelevance = _TemporalRelevance()
TR = TemporalRelevance
register(TemporalRelevance, ("TR",))
