"""One-line evaluation functions: ``calc_aggregate``, ``iter_calc``, ``evaluate``.

They accept everything ``ir_measures`` accepts plus file paths and measure strings, route our
measures to :mod:`reteco_measures.provider`, nDCG/AP/P/R/RR to the native kernels of
:mod:`reteco_measures.kernels.standard` (equal to pytrec_eval per query; see
:mod:`reteco_measures.scale.native`) and the other standard ones to ir_measures (pytrec_eval),
with the side information of :func:`reteco_measures.side_info`.

Before anything is computed the inputs are checked, so that a number is either right or loudly
refused:

* a cutoff below 1 (``nDCG@0``) is a ``ValueError`` (pytrec_eval would abort the interpreter);
* an empty run or qrels warns (:class:`~reteco_measures.errors.EmptyInputWarning`);
* a run and qrels (or topics, labels) that share no query id, or fewer than a known id-form
  mapping would give, warn (:class:`~reteco_measures.errors.QueryIdMismatchWarning`);
  ``query_ids="normalize"`` maps them (:mod:`reteco_measures.query_ids`);
* qrels queries whose labels are all negative reach pytrec_eval with one extra unretrieved
  label-0 judgment, because trec_eval's code sizes its relevance-level table by the largest label
  and crashes (or reads stale memory) when it is negative; the values are trec_eval's for a
  query without relevant documents (all 0), see :func:`trec_eval_safe_qrels`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric

from .errors import GroupMismatchWarning, user_stacklevel
from .io.convert import as_qrels_frame, as_run_frame
from .kernels.ranking import TIE_BREAKS, duplicate_pairs, rank_run
from .measures.base import REGISTERED, check_cutoff
from .provider import CHECKED_IDS, PROVIDER, RANKED_RUN, RankedRun
from .query_ids import QUERY_ID_MODES, align_query_ids
from .scale import is_scaled, scaled_calc_aggregate, scaled_iter_calc
from .scale.native import standard_calc_aggregate, standard_iter_calc
from .scale.stream import per_query_weights
from .side import load_labels, load_topics, side_info

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
]

_DISPLAY_TO_NAME = {"nDCG|FC": "nDCG_FC", "MAP": "AP", "MRR": "RR"}


def _parse_one(measure: Any) -> ir_measures.Measure:
    if isinstance(measure, ir_measures.Measure):
        return measure
    if not isinstance(measure, str):
        raise TypeError(f"a measure must be an ir_measures.Measure or a string, not {type(measure).__name__}")
    text = measure.strip()
    head = re.match(r"[^(@\s]+", text)
    written = head.group(0) if head else None
    for display, name in _DISPLAY_TO_NAME.items():
        text = re.sub(rf"^{re.escape(display)}(?=[(@]|$)", name, text)
    try:
        parsed = ir_measures.parse_measure(text)
    except (NameError, SyntaxError, TypeError, AssertionError) as exc:
        raise ValueError(f"unknown measure {measure!r} ({exc})") from None
    if written and written != getattr(parsed, "__name__", None):
        parsed._reteco_written = written  # printed as the user wrote it (measure_name)
    return parsed


def parse_measures(measures: Any) -> list[ir_measures.Measure]:
    """Measures from objects or strings (``'nDCG@10'``, ``'TC@10'``, ``'nDCG|FC@10'``, ``'MAP@10'``).

    A single string may hold several measures separated by spaces or commas outside brackets.
    """
    if isinstance(measures, (str, ir_measures.Measure)):
        measures = [measures]
    out: list[ir_measures.Measure] = []
    for m in measures:
        if isinstance(m, str) and re.search(r"[\s,](?![^()]*\))", m.strip()):
            parts = [p for p in re.split(r"[\s,]+(?![^()]*\))", m.strip()) if p]
            out.extend(_parse_one(p) for p in parts)
        else:
            out.append(_parse_one(m))
    for m in out:
        check_cutoff(m)  # nDCG@0 would abort the interpreter inside pytrec_eval
    return out


def measure_name(measure: Any, machine: bool = True) -> str:
    """The name to print for a measure (object or string), as the user wrote it.

    * ``machine=True`` (JSON, TSV, anything a program reads back): a name that
      ``ir_measures.parse_measure`` (and :func:`parse_measures`) accepts and that gives the same
      measure — ``nDCG_FC@10``; an alias keeps its spelling (``TP@10`` stays ``TP@10``).
    * ``machine=False`` (tables for people): the report name — ``nDCG|FC@10``, ``TP@10``.
    """
    m = _parse_one(measure) if isinstance(measure, str) else measure
    canonical = repr(m)
    base = getattr(m, "__name__", None) or ""
    written = getattr(m, "_reteco_written", None)
    tail = canonical[len(base):] if base and canonical.startswith(base) else None
    if machine:
        if written and tail is not None:
            candidate = written + tail
            try:
                if ir_measures.parse_measure(candidate) == m:
                    return candidate
            except Exception:  # noqa: BLE001  (a spelling that does not parse: use the canonical name)
                pass
        return canonical
    if written and tail is not None:
        return written + tail
    display = getattr(m, "display", None)
    return display() if callable(display) else canonical


def measure_label(measure: ir_measures.Measure) -> str:
    """How a measure is printed in tables for people (``nDCG_FC@10`` → ``nDCG|FC@10``); the same as
    ``measure_name(measure, machine=False)``."""
    return measure_name(measure, machine=False)


def trec_eval_safe_qrels(qrels: pd.DataFrame) -> pd.DataFrame:
    """Qrels that pytrec_eval can evaluate without crashing, with trec_eval's values.

    trec_eval sizes its per-query table of relevance levels by the query's largest label; when
    every label of a query is negative (TREC Web qrels use -2) that size is zero or negative and
    the process crashes or reads stale memory. By trec_eval's rules a negative label is "in the
    pool, not judged": it is never relevant, gives no nDCG gain and is not counted in ``num_rel``.
    Such a query therefore has no relevant document: nDCG, P, AP, R, RR (every measure of relevant
    documents) are 0 on it. Each such query gets one extra label-0 judgment of a document no run
    retrieves, which keeps all of those rules and gives pytrec_eval a valid table. Other queries
    are untouched.
    """
    if qrels.empty:
        return qrels
    rel = qrels["relevance"].to_numpy()
    if rel.min() >= 0:
        return qrels
    top = pd.Series(rel).groupby(qrels["query_id"].to_numpy(), sort=False).max()
    bad = top.index[top.to_numpy() < 0]
    if len(bad) == 0:
        return qrels
    extra = pd.DataFrame(
        {"query_id": pd.Series(bad, dtype="str"), "doc_id": "<reteco-measures:unretrieved>", "relevance": 0}
    )
    return pd.concat([qrels[["query_id", "doc_id", "relevance"]], extra], ignore_index=True)


class _Prepared(NamedTuple):
    measures: list
    ours: list  # measures of our provider
    standard: list  # ir_measures' measures (native kernels / pytrec_eval)
    qrels: pd.DataFrame
    run: pd.DataFrame
    qrels_standard: pd.DataFrame
    run_standard: Any
    topics: pd.DataFrame | None
    labels: pd.DataFrame | None
    ranked: RankedRun | None  # the ranking made for the standard measures, reused by our provider

    def side(self) -> dict[str, Any]:
        """Extra ``side_info`` entries for our provider: ids checked, the ranking to reuse."""
        return {CHECKED_IDS: True, **({RANKED_RUN: self.ranked} if self.ranked is not None else {})}


def _prepare(measures, qrels, run, tie_break, corpus, topics=None, labels=None, query_ids="exact", stacklevel=4):
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, not {tie_break!r}")
    if query_ids not in QUERY_ID_MODES:
        raise ValueError(f"query_ids must be one of {QUERY_ID_MODES}, not {query_ids!r}")
    measures = parse_measures(measures)
    qrels_in = as_qrels_frame(qrels)
    run_in = as_run_frame(run)
    topics_in = load_topics(topics) if topics is not None else None
    labels_in = load_labels(labels) if labels is not None else None
    # never a silent zero: empty inputs and query ids that do not meet warn (or are mapped)
    run_in, topics_in, labels_in = align_query_ids(
        qrels_in, run_in, topics=topics_in, labels=labels_in, mode=query_ids, stacklevel=stacklevel
    )
    ours = [m for m in measures if m.NAME in REGISTERED]
    standard = [m for m in measures if m.NAME not in REGISTERED]
    run_standard = run_in
    shared = None
    if tie_break != "trec_eval" and standard:
        # Standard measures are computed in trec_eval's order (native kernels, pytrec_eval).
        # Re-score the run so that trec_eval's order *is* the requested order: score = -rank.
        # A repeated (query, doc) pair keeps its last score (file order) before ranking, as our
        # provider and pytrec_eval's dictionaries keep it; the run our provider gets is that
        # same run, with this ranking to reuse (the run is sorted once for both).
        dup = duplicate_pairs(run_in, keep="last")
        if dup.any():
            run_in = run_in[~dup].reset_index(drop=True)
        ranked = rank_run(run_in, tie_break, corpus=corpus)
        run_standard = pd.DataFrame(
            {"query_id": ranked["query_id"], "doc_id": ranked["doc_id"], "score": -ranked["rank"].astype(np.float64)}
        )
        if ours:
            shared = RankedRun(run_in, tie_break, ranked)
    # the native kernels take the frames; scale.native converts the run to a dict (vectorised)
    # only for the measures they do not claim
    qrels_standard = trec_eval_safe_qrels(qrels_in) if standard else qrels_in
    return _Prepared(
        measures, ours, standard, qrels_in, run_in, qrels_standard, run_standard, topics_in, labels_in, shared
    )


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
    stream: bool = False,
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
            :class:`~reteco_measures.errors.QueryIdMismatchWarning`; ``'normalize'``: the run's,
            topics' and labels' ids are mapped to the qrels' form of the same query
            (``#turn1`` ↔ ``_turn_1``, ``<domain>/<id>`` ↔ ``<id>``, ``001`` ↔ ``1``; see
            :mod:`reteco_measures.query_ids`).
        stream: read the run *file* in blocks of whole queries (out of core, same numbers; see
            :mod:`reteco_measures.scale.stream`). A Dask DataFrame run is evaluated on its
            cluster's workers (:mod:`reteco_measures.scale.dask`).

    Returns:
        ``{measure: value}``; a measure defined on no query gives NaN (or its ``empty`` value).

    Raises:
        ValueError: a measure with a cutoff below 1, an unknown tie policy or id mode.
    """
    if is_scaled(run, stream):  # out of core or on a Dask cluster: reteco_measures.scale
        return scaled_calc_aggregate(measures, qrels, run, stream=stream, topics=topics, labels=labels,
                                     corpus=corpus, tie_break=tie_break, query_ids=query_ids)
    p = _prepare(measures, qrels, run, tie_break, corpus, topics, labels, query_ids)
    ours, standard = p.ours, p.standard
    result: dict[ir_measures.Measure, float] = {}
    with side_info(topics=p.topics, labels=p.labels, corpus=corpus, tie_break=tie_break, **p.side()):
        if ours:  # straight to our provider: no filler rows from ir_measures' fallback evaluator
            result.update(PROVIDER.calc_aggregate(ours, p.qrels, p.run))
        if standard and p.qrels.empty:  # no qrels query: nothing is defined (ir_measures gives NaN too)
            result.update(dict.fromkeys(standard, float("nan")))
        elif standard:
            result.update(standard_calc_aggregate(standard, p.qrels_standard, p.run_standard))
    return {m: result[m] for m in p.measures}


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
    stream: bool = False,
) -> Iterator[Metric]:
    """Per-query values as ``ir_measures.Metric(query_id, measure, value)``.

    Our measures report NaN where they are not defined for a query (e.g. TC for a query
    without required periods); aggregation skips those. Arguments as :func:`calc_aggregate`.
    """
    if is_scaled(run, stream):  # out of core or on a Dask cluster: reteco_measures.scale
        return iter(scaled_iter_calc(measures, qrels, run, stream=stream, topics=topics, labels=labels,
                                     corpus=corpus, tie_break=tie_break, query_ids=query_ids))
    p = _prepare(measures, qrels, run, tie_break, corpus, topics, labels, query_ids)
    return iter(_iter_prepared(p, corpus, tie_break))


def _iter_prepared(p: _Prepared, corpus, tie_break) -> list[Metric]:
    ours, standard = p.ours, p.standard
    results: list[Metric] = []
    with side_info(topics=p.topics, labels=p.labels, corpus=corpus, tie_break=tie_break, **p.side()):
        if ours:
            results.extend(PROVIDER.iter_calc(ours, p.qrels, p.run))
        if standard and not p.qrels.empty:
            results.extend(standard_iter_calc(standard, p.qrels_standard, p.run_standard))
    return results


def depth_group(turn: Any) -> str:
    """RECOR conversation-depth group of a 1-based turn number: T1..T4, T5+."""
    try:
        t = int(turn)
    except (TypeError, ValueError):
        return "(none)"
    return f"T{t}" if t < 5 else "T5+"


_TURN_ID = re.compile(r"^(?P<conv>.+)_turn_(?P<turn>\d+)$")


def group_frame(query_ids: pd.Series, topics: pd.DataFrame | None, by: list[str]) -> pd.DataFrame:
    """The grouping columns ``by`` for each query id: topics columns joined on ``query_id``, and
    ``depth`` (T1..T4, T5+) from the topics' ``turn`` or the ``<conversation>_turn_<t>`` id form.
    Queries without a value land in ``"(none)"``; an unknown column is a ValueError. This is the
    grouping of :func:`evaluate` (and of the judge aggregation)."""
    frame = pd.DataFrame({"query_id": query_ids.astype(str)})
    if topics is not None:
        cols = [c for c in by if c in topics.columns and c != "query_id"]
        if "turn" in topics.columns and "depth" in by and "turn" not in cols:
            cols.append("turn")
        if cols:
            meta = topics.drop_duplicates("query_id").set_index("query_id")[cols]
            frame = frame.join(meta, on="query_id")
    for col in by:
        if col == "depth":
            # the topics' turn number where given, else the <conversation>_turn_<t> id form
            turns = pd.to_numeric(frame["query_id"].str.extract(_TURN_ID)["turn"], errors="coerce")
            if "turn" in frame.columns:
                turns = pd.to_numeric(frame["turn"], errors="coerce").fillna(turns)
            frame["depth"] = [depth_group(t) for t in turns]
        elif col not in frame.columns:
            raise ValueError(f"cannot group by {col!r}: not a topics column (give topics=... with that column)")
    for col in by:
        frame[col] = frame[col].astype(object).where(frame[col].notna(), "(none)").astype(str)
    return frame


def _warn_unmatched_groups(groups: pd.DataFrame, by: list[str], topics: pd.DataFrame | None) -> None:
    """Count the evaluated queries that landed in ``(none)`` and say why, once per call."""
    per_query = groups.drop_duplicates("query_id")
    none = (per_query[by] == "(none)").any(axis=1).to_numpy()
    if not none.any():
        return
    lost = per_query["query_id"].to_numpy()[none]
    known = set(topics["query_id"].astype(str)) if topics is not None else set()
    missing = [q for q in lost if q not in known]
    parts = []
    if missing:
        parts.append(f"{len(missing)} have no row in the topics (e.g. {missing[0]!r})")
    if len(lost) > len(missing):
        parts.append(f"{len(lost) - len(missing)} have no value for {', '.join(by)}")
    warnings.warn(
        f"{len(lost)} of {len(per_query)} evaluated queries are grouped as '(none)': {'; '.join(parts)}",
        GroupMismatchWarning,
        stacklevel=user_stacklevel(),
    )


def _aggregate(values: np.ndarray, weights: np.ndarray, empty: float) -> tuple[float, int]:
    ok = ~np.isnan(values)
    n = int(ok.sum())
    if n == 0 or weights[ok].sum() == 0:
        return empty, n
    return float(np.sum(values[ok] * weights[ok]) / np.sum(weights[ok])), n


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
    names: str = "human",
    stream: bool = False,
) -> pd.DataFrame:
    """A tidy DataFrame of results: columns ``[*by, "measure", "value", "n"]``.

    * ``by=None``: one row per measure (the same numbers as :func:`calc_aggregate`).
    * ``by="domain"`` (any topics column, a list of them, or ``"depth"`` = T1..T4, T5+ from the
      turn number): one row per group and measure, plus rows whose group value is
      ``"(macro)"`` (mean of the group means, as the published TEMPO/RECOR tables) and
      ``"(all)"`` (mean over queries, as the RETECO evaluation page).

    ``n`` counts the per-query values that entered the number (queries where the measure is
    defined). Topics ids are strings; evaluated queries whose group value is unknown (no topics
    row, or an empty value) land in ``"(none)"`` and are counted in a
    :class:`~reteco_measures.errors.GroupMismatchWarning`.

    ``names``: ``"human"`` (default) prints measures with their report names (``nDCG|FC@10``);
    ``"machine"`` with names that parse back (``nDCG_FC@10``), see :func:`measure_name`.
    Other arguments as :func:`calc_aggregate`.
    """
    if names not in ("human", "machine"):
        raise ValueError(f"names must be 'human' or 'machine', not {names!r}")
    if is_scaled(run, stream):  # out of core or on a Dask cluster: per-query values only
        measures = parse_measures(measures)
        topics_df = load_topics(topics) if topics is not None else None
        metrics = scaled_iter_calc(measures, qrels, run, stream=stream, topics=topics_df, labels=labels,
                                   corpus=corpus, tie_break=tie_break, query_ids=query_ids)
    else:
        p = _prepare(measures, qrels, run, tie_break, corpus, topics, labels, query_ids)
        measures = p.measures
        topics_df = p.topics
        metrics = _iter_prepared(p, corpus, tie_break)
    label_of = {m: measure_name(m, machine=names == "machine") for m in measures}
    frame = per_query_weights(metrics)
    frame["measure"] = [label_of.get(m) or measure_name(m, names == "machine") for m in frame["measure"]]
    empties = {label_of[m]: (m.empty_value() if hasattr(m, "empty_value") else float("nan")) for m in measures}
    order = [label_of[m] for m in measures]
    by_cols = [by] if isinstance(by, str) else list(by or [])
    rows: list[dict[str, Any]] = []

    def overall(label: str, sub: pd.DataFrame) -> tuple[float, int]:
        return _aggregate(sub["value"].to_numpy(), sub["weight"].to_numpy(), empties[label])

    if not by_cols:
        for label in order:
            value, n = overall(label, frame[frame["measure"] == label])
            rows.append({"measure": label, "value": value, "n": n})
        return pd.DataFrame(rows, columns=["measure", "value", "n"])

    groups = group_frame(frame["query_id"], topics_df, by_cols)
    _warn_unmatched_groups(groups, by_cols, topics_df)
    frame = pd.concat([frame.reset_index(drop=True), groups[by_cols].reset_index(drop=True)], axis=1)
    for label in order:
        sub = frame[frame["measure"] == label]
        group_values = []
        for key, part in sub.groupby(by_cols, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            value, n = overall(label, part)
            rows.append({**dict(zip(by_cols, key)), "measure": label, "value": value, "n": n})
            group_values.append(value)
        gv = np.array(group_values, dtype=np.float64)
        macro = float(np.nanmean(gv)) if np.any(~np.isnan(gv)) else empties[label]
        rows.append({**{c: "(macro)" for c in by_cols}, "measure": label, "value": macro,
                     "n": int(np.sum(~np.isnan(gv)))})
        value, n = overall(label, sub)
        rows.append({**{c: "(all)" for c in by_cols}, "measure": label, "value": value, "n": n})
    return pd.DataFrame(rows, columns=[*by_cols, "measure", "value", "n"])

