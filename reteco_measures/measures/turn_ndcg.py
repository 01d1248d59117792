"""TurnNDCG@k — RETECO sub-tracks 2a/2c conversational retrieval (official measure).

Binary nDCG@k per target turn (a turn in the qrels but missing from the run scores 0).
Turn ids are ``<conversation_id>_turn_<t>``; conversation and turn number come from topics
(``conversation_id``, ``turn``) or from that id form.

``average``:

* ``'turn'`` (default, RETECO): macro over turns;
* ``'conversation'`` (RECOR ablations): mean per conversation, then over conversations
  (each turn carries weight 1/|turns of its conversation|).
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
        rel=ParamInfo(dtype=int, default=1, desc="minimum grade counted as relevant"),
    )


TurnNDCG = _TurnNDCG()
register(TurnNDCG)
