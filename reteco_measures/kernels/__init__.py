"""Vectorised computation kernels (numpy/pandas): ranking, nDCG and the measures' kernels.

Importing this package registers every available kernel with the provider.
"""

from .ndcg import dcg_at_k, gains_frame, ideal_dcg_at_k, ndcg, ndcg_at_k
from .ranking import TIE_BREAKS, rank_run, top_k

__all__ = ["TIE_BREAKS", "rank_run", "top_k", "ndcg", "ndcg_at_k", "dcg_at_k", "ideal_dcg_at_k", "gains_frame"]

from .._plugins import import_present as _import_present

#: kernel modules, one per benchmark family; each registers its measures with the provider
KERNEL_MODULES = ["temporal", "stepwise", "conversational", "spoken", "likert"]
_import_present(__name__, KERNEL_MODULES)
