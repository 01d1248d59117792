"""Likert — generation judgments normalised to [0, 1] and macro-averaged per dimension.

* ``scale='reteco'``: integer 1–5 → (s − 1)/4 (RETECO 2b/2c: correctness, completeness,
  relevance, coherence, faithfulness);
* ``scale='ikat'``: integer 0–4 → s/4 (TREC iKAT 2023 naturalness, groundedness).

Judgments come from a judgments JSONL file (``judgments=`` path, or ``rm.side_info(judgments=...)``)
written by ``reteco-measures judge generation|ikat``. The evaluated turns are the qrels' queries;
a turn's value is its normalised score. Invalid or missing judgments are left out of the mean and
reported (a ``LikertWarning`` with their counts), never silently dropped; the complete table with
``n_invalid`` / ``n_missing`` is `reteco_measures.judge.aggregate_judgments`.

Example::

    rm.calc_aggregate(["Likert(dimension='faithfulness', judgments='j.jsonl')"], qrels, run)
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
        scale=ParamInfo(dtype=str, choices=["reteco", "ikat"],
                        desc="score scale; default: the dimension's own (RETECO dimensions 1-5, iKAT 0-4)"),
        judgments=ParamInfo(dtype=str, desc="path of a judgments JSONL file (or rm.side_info(judgments=...))"),
    )


Likert = _Likert()
register(Likert)
