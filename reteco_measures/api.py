"""One-line evaluation functions: ``calc_aggregate``, ``iter_calc``, ``evaluate``.

They accept everything ``ir_measures`` accepts plus file paths and measure strings, check the
arguments and hand the call to the in-memory engine (`reteco_measures.engine`) or, for a
run file read in blocks (``stream=True``) or a Dask DataFrame run, to
`reteco_measures.scale`. Our measures go to `reteco_measures.providers.reteco`,
nDCG/AP/P/R/RR to the native kernels of `reteco_measures.kernels.standard` (equal to
pytrec_eval per query; see `reteco_measures.providers.native`) and the other standard ones
to ir_measures (pytrec_eval), with the side information of `reteco_measures.side_info`.

Before anything is computed the inputs are checked, so that a number is either right or loudly
refused (see `reteco_measures.engine.evaluate`): a cutoff below 1 is a ``ValueError``;
empty inputs and query ids that do not meet warn; qrels queries whose labels are all negative
get trec_eval's values without crashing it (`trec_eval_safe_qrels`).

Every aggregate (in memory, streamed, on Dask, grouped by `evaluate`) is
`reteco_measures.engine.results.aggregate` over the same per-query values in the same
order: the numbers agree to the last bit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import ir_measures
import pandas as pd
from ir_measures import Metric

from .engine import evaluate as _engine
from .engine.grouping import depth_group, group_frame
from .errors import DataFormatError
from .io.readers import read_qrels_with_problems
from .measures.names import measure_label, measure_name, parse_measures
from .providers.native import trec_eval_safe_qrels
from .query_ids import mismatch_policy
from .scale import is_scaled, scaled_calc_aggregate, scaled_frame, scaled_iter_calc
from .side import load_topics

__all__ = [
    "parse_measures",
    "calc_aggregate",
    "iter_calc",
    "evaluate",
    "measure_label",
    "measure_name",
    "depth_group",
    "group_frame",
    "trec_eval_safe_qrels",
    "trec_eval_safe_qrels_file",
]

_NAMES = ("human", "machine")


def _exclusion(exclude_label: int | None) -> dict[str, Any]:
    """``exclude_label`` as a keyword for the out-of-core paths (left out when not set)."""
    return {} if exclude_label is None else {"exclude_label": int(exclude_label)}


def calc_aggregate(
    measures: Any,
    qrels: Any,
    run: Any,
    *,
    topics: pd.DataFrame | str | None = None,
    labels: pd.DataFrame | str | None = None,
    corpus: Sequence[str] | None = None,
    tie_break: str = "trec_eval",
    query_ids: str = "exact",
    on_mismatch: str = "refuse_forms",
    stream: bool = False,
    exclude_label: int | None = None,
) -> dict[ir_measures.Measure, float]:
    """Aggregate value of each measure, as ``ir_measures.calc_aggregate``.

    Args:
        measures: measures or strings (``"nDCG@10"``, ``"TC@10"``, ``"nDCG|FC@10"``).
        qrels: DataFrame / dict-of-dict / namedtuples / path of TREC or JSONL qrels.
        run: DataFrame / dict-of-dict / namedtuples / path of a TREC or JSONL run.
        topics: query metadata (DataFrame or file) for measures that need it.
        labels: frozen temporal labels (DataFrame or JSONL file).
        corpus: doc ids in corpus order (for ``tie_break='corpus_order'``).
        tie_break: ``'trec_eval'`` (default), ``'stable'``, ``'run_order'`` or ``'corpus_order'``; applies to
            standard measures too (the run is re-scored so pytrec_eval sees the same order; a
            repeated (query, doc) pair keeps its last score, for every measure). The run is ranked
            once per call under this policy: our measures reuse the ranking made for the standard ones.
        query_ids: ``'exact'`` (default): ids are compared as written and a run / qrels / topics
            / labels that only meet through another id form warn with
            `QueryIdMismatchWarning`; ``'normalize'``: the run's,
            topics' and labels' ids are mapped to the qrels' form of the same query
            (``#turn1`` ↔ ``_turn_1``, ``<domain>/<id>`` ↔ ``<id>``, ``001`` ↔ ``1``,
            ``9-1-3`` ↔ ``9-1_3``; see
            `reteco_measures.query_ids`).
        on_mismatch: ``'refuse_forms'`` (default): ids that differ from the qrels' only in a known
            form (`QueryIdFormWarning`, e.g. ``_turn_1`` vs ``#turn1``: every value would be 0,
            and ``query_ids='normalize'`` makes it right) raise `InputMismatchError` naming
            ``query_ids='normalize'``; the other mismatches (no shared id at all, an empty run
            or qrels) warn and the numbers are computed, as ``ir_measures.calc_aggregate``
            would. ``'warn'``: every case warns and the numbers are computed (a plain
            ``ir_measures`` call through our provider behaves so); ``'error'``: every case
            raises `InputMismatchError` and no number is returned (what ``rm.compare`` and
            ``rm.leaderboard`` do by default, and the command line always).
        stream: read the run *file* in blocks of whole queries (out of core, same numbers; see
            `reteco_measures.scale.stream`). A Dask DataFrame run is evaluated on its
            cluster's workers (`reteco_measures.scale.dask`).
        exclude_label: remove from the run, before evaluation, every document the qrels judge
            with this label for its query (``-100``: the grade ir_datasets gives the documents
            BRIGHT excludes, which BRIGHT's own scoring drops from the ranking). Default
            ``None``: pytrec_eval's reading (a negative label is a judged non-relevant document
            that keeps its rank), with a `DataFormatWarning` note when the qrels hold ``-100``.

    Returns:
        ``{measure: value}``; a measure defined on no query gives NaN (or its ``empty`` value).
        Means are summed left to right over the queries in the qrels' order, as ir_measures'
        mean does (`reteco_measures.engine.results`).

    Raises:
        ValueError: a measure with a cutoff below 1, an unknown tie policy, id mode or
            ``on_mismatch``.
        InputMismatchError: ids in another known form (default ``on_mismatch``), or any
            inputs that do not match with ``on_mismatch='error'``.
    """
    with mismatch_policy(on_mismatch):
        if is_scaled(run, stream):  # out of core or on a Dask cluster: reteco_measures.scale
            _engine.check_modes(tie_break, query_ids)
            return scaled_calc_aggregate(measures, qrels, run, stream=stream, topics=topics, labels=labels,
                                         corpus=corpus, tie_break=tie_break, query_ids=query_ids,
                                         **_exclusion(exclude_label))
        return _engine.calc_aggregate(measures, qrels, run, topics=topics, labels=labels, corpus=corpus,
                                      tie_break=tie_break, query_ids=query_ids, exclude_label=exclude_label)


def iter_calc(
    measures: Any,
    qrels: Any,
    run: Any,
    *,
    topics: pd.DataFrame | str | None = None,
    labels: pd.DataFrame | str | None = None,
    corpus: Sequence[str] | None = None,
    tie_break: str = "trec_eval",
    query_ids: str = "exact",
    on_mismatch: str = "refuse_forms",
    stream: bool = False,
    exclude_label: int | None = None,
) -> Iterator[Metric]:
    """Per-query values as ``ir_measures.Metric(query_id, measure, value)``.

    Our measures report NaN where they are not defined for a query (e.g. TC for a query
    without required periods); aggregation skips those. Arguments as `calc_aggregate`.
    """
    with mismatch_policy(on_mismatch):  # the values are computed here (a list), not lazily
        if is_scaled(run, stream):  # out of core or on a Dask cluster: reteco_measures.scale
            _engine.check_modes(tie_break, query_ids)
            return iter(scaled_iter_calc(measures, qrels, run, stream=stream, topics=topics, labels=labels,
                                         corpus=corpus, tie_break=tie_break, query_ids=query_ids,
                                         **_exclusion(exclude_label)))
        return iter(_engine.iter_calc(measures, qrels, run, topics=topics, labels=labels, corpus=corpus,
                                      tie_break=tie_break, query_ids=query_ids, exclude_label=exclude_label))


def evaluate(
    measures: Any,
    qrels: Any,
    run: Any,
    *,
    topics: pd.DataFrame | str | None = None,
    labels: pd.DataFrame | str | None = None,
    by: str | Iterable[str] | None = None,
    corpus: Sequence[str] | None = None,
    tie_break: str = "trec_eval",
    query_ids: str = "exact",
    on_mismatch: str = "refuse_forms",
    names: str = "human",
    stream: bool = False,
    exclude_label: int | None = None,
) -> pd.DataFrame:
    """A tidy DataFrame of results: columns ``[*by, "measure", "value", "n"]``.

    * ``by=None``: one row per measure (the same numbers as `calc_aggregate`, to the last bit).
    * ``by="domain"`` (any topics column, a list of them, or ``"depth"`` = T1..T4, T5+ from the
      turn number): one row per group and measure, plus rows whose group value is
      ``"(macro)"`` (mean of the group means, as the published TEMPO/RECOR tables) and
      ``"(all)"`` (mean over queries, as the RETECO evaluation page).

    ``n`` counts the per-query values that entered the number (queries where the measure is
    defined). Topics ids are strings; evaluated queries whose group value is unknown (no topics
    row, or an empty value) land in ``"(none)"`` and are counted in a
    `GroupMismatchWarning`.

    ``names``: ``"human"`` (default) prints measures with their report names (``nDCG|FC@10``);
    ``"machine"`` with names that parse back (``nDCG_FC@10``), see `measure_name`.
    Other arguments as `calc_aggregate`.
    """
    if names not in _NAMES:
        raise ValueError(f"names must be 'human' or 'machine', not {names!r}")
    by_cols = [by] if isinstance(by, str) else list(by or [])
    with mismatch_policy(on_mismatch):
        if is_scaled(run, stream):  # out of core or on a Dask cluster: per-query values only
            _engine.check_modes(tie_break, query_ids)
            measures = parse_measures(measures)
            topics_df = load_topics(topics) if topics is not None else None
            values = scaled_frame(measures, qrels, run, stream=stream, topics=topics_df, labels=labels,
                                  corpus=corpus, tie_break=tie_break, query_ids=query_ids, **_exclusion(exclude_label))
            return _engine.evaluate_table(values, measures, order=None, topics=topics_df, by=by_cols, names=names)
        p = _engine.prepare(measures, qrels, run, tie_break=tie_break, corpus=corpus, topics=topics, labels=labels,
                            query_ids=query_ids, exclude_label=exclude_label)
    return _engine.evaluate_table(_engine.iter_prepared(p), p.measures, order=_engine.qrels_order(p.qrels),
                                  topics=p.topics, by=by_cols, names=names)


def trec_eval_safe_qrels_file(path: str | os.PathLike, folder: str | os.PathLike) -> str | None:
    """A copy of the qrels file ``path`` that pytrec_eval (and trec_eval) cannot crash on, written
    into ``folder``, or None when the file needs none.

    A query whose labels are all negative crashes pytrec_eval (see `trec_eval_safe_qrels`); such
    a query gets one unretrieved label-0 judgment, which leaves every trec_eval value as
    trec_eval's rules define it. Only a file read exactly as written is copied: one with a line in
    error, or that cannot be read, gives None (its reader reports its own problems).
    """
    try:
        qrels, problems = read_qrels_with_problems(path)
    except (DataFormatError, ValueError, OSError):
        return None
    if any(p.severity == "error" for p in problems):
        return None
    safe = trec_eval_safe_qrels(qrels)
    if len(safe) == len(qrels):
        return None
    out = os.path.join(folder, "qrels.txt")
    lines = safe["query_id"].astype(str) + " 0 " + safe["doc_id"].astype(str) + " " + safe["relevance"].astype(str)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines.tolist()) + "\n")
    return out
