"""Kept for one release: the provider moved to `reteco_measures.providers.reteco` (the evaluator
to `reteco_measures.providers.evaluator`, the kernel context to `reteco_measures.kernels.context`)."""

from .kernels.context import CHECKED_IDS, IMPLEMENTATIONS, RANKED_RUN, EvalContext, RankedRun, implements
from .providers.evaluator import RetecoEvaluator
from .providers.reteco import PROVIDER, RetecoProvider, install

__all__ = ["EvalContext", "RankedRun", "RetecoProvider", "RetecoEvaluator", "PROVIDER", "implements",
           "IMPLEMENTATIONS", "install", "CHECKED_IDS", "RANKED_RUN"]
