"""SpokenMacroNDCG@k — Spoken-Query Document Search primary metric.

Graded nDCG@k (trec_eval gains = grades) per request; mean within each (collection,
condition) cell; result = mean of the cell means, so the six collections and four acoustic
conditions get equal weight. Each request carries weight 1/(|cell| · |cells|) in the
aggregate. ``collection`` and ``condition`` come from topics. An incomplete grid (a
collection × condition cell with no request) is reported with a warning naming the missing
cells; it is never silently reweighted.
"""

from .base import RetecoMeasure, common_params, register


class _SpokenMacroNDCG(RetecoMeasure):
    __name__ = "SpokenMacroNDCG"
    NAME = __name__
    PRETTY_NAME = "Spoken-Query macro nDCG"
    SHORT_DESC = "Graded nDCG@k averaged within collection x condition cells, then over cells."
    SUPPORTED_PARAMS = common_params()


SpokenMacroNDCG = _SpokenMacroNDCG()
register(SpokenMacroNDCG)
