"""What RETECO's two retrieval tracks share (TEMPO in `reteco_measures.benchmarks.tempo`, RECOR
in `reteco_measures.benchmarks.recor`): `.contract`, the ``reteco`` run contract (TREC run
lines, at most 100 results per query, documents of the query's domain), and `.rules`, the
domain-corpus check, the options both declarations offer and the two rule sets (``page``: the
task page; ``kit``: the organisers' starter kit, with its published baselines).
"""

from __future__ import annotations

from . import contract, rules
from .contract import check_kit_format, discard_counts, load_run_rows, validate_reteco

__all__ = ["contract", "rules", "validate_reteco", "load_run_rows", "discard_counts", "check_kit_format"]
