"""Vectorised computation kernels (numpy/pandas): ranking, nDCG and the measures' kernels.

One module per benchmark family; each declares its kernels with
`implements` (the table
`IMPLEMENTATIONS` the provider reads).
`.standard` holds the native kernels of trec_eval's standard measures.
"""

from . import conversational, likert, spoken, standard, stepwise, temporal
from .context import IMPLEMENTATIONS, EvalContext, RankedRun, implements
from .ndcg import gains_frame, ndcg, ndcg_at_k
from .ranking import TIE_BREAKS, rank_run, top_k

__all__ = [
    "TIE_BREAKS", "rank_run", "top_k", "ndcg", "ndcg_at_k", "gains_frame",
    "EvalContext", "RankedRun", "implements", "IMPLEMENTATIONS",
    "conversational", "likert", "spoken", "standard", "stepwise", "temporal",
]
