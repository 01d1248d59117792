"""Parameters shared by the measures: tie policies, the cutoff check, common declarations.

Everything here is a declaration (no computation): the kernels (`reteco_measures.kernels`)
read the tie policies, the evaluation (`reteco_measures.engine`) and the providers check
cutoffs with `check_cutoff`, each measure module builds its ``SUPPORTED_PARAMS`` with
`common_params`.
"""

from __future__ import annotations

from typing import Any, Literal

import ir_measures
from ir_measures.measures.base import ParamInfo
from ir_measures.providers.base import NOT_PROVIDED

__all__ = ["TieBreak", "TIE_BREAKS", "check_cutoff", "TEMPORAL_REFERENCE", "common_params", "param"]

TieBreak = Literal["trec_eval", "stable", "run_order", "corpus_order"]
#: every tie policy `reteco_measures.kernels.ranking.rank_run` accepts (the CLI and measure
#: parameters list these)
TIE_BREAKS: tuple[str, ...] = ("trec_eval", "stable", "run_order", "corpus_order")


def param(measure: ir_measures.Measure, name: str, default: Any = None) -> Any:
    """The one way the package reads a measure parameter (ours and ir_measures' own measures):
    the value given (``nDCG(rel=2)@10``), else the measure's declared default
    (``SUPPORTED_PARAMS[name].default``), else ``default``. A cutoff never given is ``default``
    (``param(nDCG, "cutoff")`` is None: the whole ranking)."""
    value = measure.params.get(name, NOT_PROVIDED)
    if value is NOT_PROVIDED:
        info = measure.SUPPORTED_PARAMS.get(name)
        value = info.default if info is not None else NOT_PROVIDED
    return default if value is NOT_PROVIDED else value


def check_cutoff(measure: ir_measures.Measure) -> None:
    """Raise ``ValueError`` when ``measure`` (any ir_measures measure) has a cutoff below 1.

    pytrec_eval aborts the whole interpreter on ``nDCG@0``, ``P@0``, ``AP@0``, ``R@0`` (an
    assertion in its C code); a cutoff must be a positive integer, so this is refused before any
    evaluation.
    """
    params = getattr(measure, "params", None) or {}
    cutoff = params.get("cutoff")
    if cutoff is None:
        return
    if isinstance(cutoff, bool) or not isinstance(cutoff, (int, float)) or cutoff < 1 or cutoff != int(cutoff):
        raise ValueError(f"{measure}: the cutoff must be a positive integer (1 or more), not {cutoff!r}")


#: the ``reference`` parameter of the temporal measures (TP, TR, TC, nDCG|FC)
TEMPORAL_REFERENCE = ParamInfo(
    dtype=str, choices=["reteco", "tempo"], desc="'reteco' (default) or 'tempo': TEMPO's temporal_metrics.py rules"
)


def common_params(**extra: ParamInfo) -> dict[str, ParamInfo]:
    """Parameters every reteco measure accepts, plus ``extra``.

    ``topics`` / ``labels`` are *file paths*: they let a plain ``ir_measures`` call (even the
    command line) point a measure at its side information while keeping the measure
    hashable and parseable (``TC(labels='judge.jsonl')@10``). DataFrames travel through
    `reteco_measures.side_info` instead.
    """
    params = {
        "cutoff": ParamInfo(dtype=int, required=False, desc="ranking cutoff k"),
        "topics": ParamInfo(dtype=str, desc="path of a topics file (JSONL/TSV) with query metadata"),
        "labels": ParamInfo(dtype=str, desc="path of a frozen temporal labels JSONL file"),
        "tie_break": ParamInfo(
            dtype=str,
            choices=list(TIE_BREAKS),
            desc="tie policy; default: the active side_info() policy, else 'trec_eval'",
        ),
    }
    params.update(extra)
    return params
