"""Likert — generation judgments normalised to [0, 1] and macro-averaged per dimension.

* ``scale='reteco'``: integer 1–5 → (s − 1)/4 (RETECO 2b/2c: correctness, completeness,
  relevance, coherence, faithfulness);
* ``scale='ikat'``: integer 0–4 → s/4 (TREC iKAT 2023 naturalness, groundedness).

Judgments come from a judgments JSONL file (``judgments=`` path) written by
``reteco-measures judge``; invalid or missing judgments are counted and reported, never
silently dropped.
"""

from ir_measures.measures.base import ParamInfo

from .base import RetecoMeasure, common_params, register


class _Likert(RetecoMeasure):
    __name__ = "Likert"
    NAME = __name__
    PRETTY_NAME = "Likert judgment score"
    SHORT_DESC = "LLM-judge Likert score normalised to [0, 1], macro-averaged per dimension."
    SUPPORTED_PARAMS = common_params(
        dimension=ParamInfo(dtype=str, desc="judged dimension, e.g. 'correctness'"),
        scale=ParamInfo(dtype=str, choices=["reteco", "ikat"], default="reteco", desc="score scale"),
        judgments=ParamInfo(dtype=str, desc="path of a judgments JSONL file"),
    )


Likert = _Likert()
register(Likert)
