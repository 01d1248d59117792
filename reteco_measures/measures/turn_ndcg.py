"""TurnNDCG@k — RETECO sub-tracks 2a/2c conversational retrieval (official measure).

Binary nDCG@k per target turn, exactly trec_eval's ``ndcg_cut_k`` on binary gains (a document
with grade ≥ ``rel`` has gain 1). The evaluated turns are those of the qrels: a turn missing
from the run scores 0, a turn without a relevant document scores 0.

Turn ids are ``<conversation_id>_turn_<t>`` (``<conversation_id>#turn<t>``, the form of the
organisers' sample qrels, is read the same way); conversation and turn number come from the
topics (``conversation_id``, ``turn``) when given, else from the id.

``average``:

* ``'turn'`` (default, RETECO): macro over turns;
* ``'conversation'`` (RECOR ablations): mean per conversation, then over conversations (each
  turn carries weight 1/|turns of its conversation in the qrels|, so the aggregate is right
  inside a plain ``ir_measures.calc_aggregate`` call too; per-turn values do not change).

Kernel: `reteco_measures.kernels.conversational.turn_ndcg`.
"""

from ir_measures.measures.base import ParamInfo

from .base import RetecoMeasure, common_params, register


class _TurnNDCG(RetecoMeasure):
    __name__ = "TurnNDCG"
    NAME = __name__
    PRETTY_NAME = "Turn-level nDCG"
    SHORT_DESC = "Binary nDCG@k per target turn, macro-averaged (RETECO 2a/2c)."
    SUPPORTED_PARAMS = common_params(
        average=ParamInfo(dtype=str, choices=["turn", "conversation"], default="turn", desc="aggregation unit"),
        rel=ParamInfo(dtype=int, default=1, desc="minimum grade counted as relevant (binary gain)"),
    )


TurnNDCG = _TurnNDCG()
register(TurnNDCG)
