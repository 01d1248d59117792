"""SpokenMacroNDCG@k — the Spoken-Query Document Search primary metric.

The Spoken-Query task description: "Compute original graded nDCG@10, average within each collection and acoustic
condition, then give the six collections and four conditions equal weight."

* per request: graded nDCG@k with trec_eval gains (gain = the label grade, ideal DCG from all
  judged documents of the request, missing request = 0);
* mean within each (``collection``, ``condition``) cell, the two columns taken from the topics
  (``rm.benchmarks.spoken.data.topics(...)`` or any DataFrame keyed by ``query_id``);
* result = mean of the cell means. Each request carries the weight ``1 / (|cell| · n_cells)``
  so that ir_measures' plain aggregation (`WeightedMeanAgg`) returns exactly that
  number even inside ``ir_measures.calc_aggregate``; ``rm.evaluate(..., by=["collection",
  "condition"])`` shows the grid (its ``(macro)`` row equals the measure).

Parameters (besides ``cutoff``, ``topics``, ``tie_break``):

* ``collections`` / ``conditions``: the expected grid as comma-separated names (e.g.
  ``conditions='clean,noisy,far,accented'``). Default: every collection and every condition
  that occurs in the topics table.
* ``missing_cells``: what to do when a grid cell has no evaluated request: ``'warn'`` (default:
  an `IncompleteGridWarning` names the missing cells, and the value is then the mean over
  the cells that *are* present — every present cell weighs 1/n_present; it is *not* the
  benchmark number over the full grid) or ``'error'`` (raise ``ValueError``).

An evaluated request (a qrels query) without ``collection``/``condition`` in the topics, or
outside a declared grid, is an error: it cannot be placed in a cell.
"""

from ir_measures.measures.base import ParamInfo

from ..errors import IncompleteGridWarning
from .base import RetecoMeasure, common_params, register

__all__ = ["SpokenMacroNDCG", "IncompleteGridWarning"]


class _SpokenMacroNDCG(RetecoMeasure):
    """Graded nDCG@k, averaged within (collection, condition) cells, then over the cells."""

    __name__ = "SpokenMacroNDCG"
    NAME = __name__
    PRETTY_NAME = "Spoken-Query macro nDCG"
    SHORT_DESC = "Graded nDCG@k averaged within collection x condition cells, then over cells."
    SUPPORTED_PARAMS = common_params(
        collections=ParamInfo(dtype=str, desc="expected collections, comma-separated (default: those in topics)"),
        conditions=ParamInfo(dtype=str, desc="expected acoustic conditions, comma-separated (default: from topics)"),
        missing_cells=ParamInfo(dtype=str, choices=["warn", "error"], default="warn",
                                desc="a grid cell without evaluated requests: warn (mean over present cells) "
                                     "or error"),
    )


SpokenMacroNDCG = _SpokenMacroNDCG()
register(SpokenMacroNDCG)
