"""One-line evaluation functions: ``calc_aggregate``, ``iter_calc``, ``evaluate``.

They accept everything ``ir_measures`` accepts plus file paths and measure strings, route our
measures to :mod:`reteco_measures.provider` and the standard ones (nDCG, AP, R, RR, P, ...) to
ir_measures (pytrec_eval), with the side information of :func:`reteco_measures.side_info`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric

from .io.convert import as_qrels_frame, as_run_frame, is_source, run_to_dict
from .kernels.ranking import TIE_BREAKS, rank_run
from .measures.base import REGISTERED
from .provider import PROVIDER
from .side import load_topics, side_info

__all__ = ["parse_measures", "calc_aggregate", "iter_calc", "evaluate", "measure_label", "depth_group", "group_frame"]

_DISPLAY_TO_NAME = {"nDCG|FC": "nDCG_FC", "MAP": "AP", "MRR": "RR"}


def _parse_one(measure: Any) -> ir_measures.Measure:
    if isinstance(measure, ir_measures.Measure):
        return measure
    if not isinstance(measure, str):
        raise TypeError(f"a measure must be an ir_measures.Measure or a string, not {type(measure).__name__}")
    text = measure.strip()
    for display, name in _DISPLAY_TO_NAME.items():
        text = re.sub(rf"^{re.escape(display)}(?=[(@]|$)", name, text)
    try:
        return ir_measures.parse_measure(text)
    except NameError as exc:
        raise ValueError(f"unknown measure {measure!r} ({exc})") from None


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
    return out


def measure_label(measure: ir_measures.Measure) -> str:
    """How a measure is printed in reports (``nDCG_FC@10`` → ``nDCG|FC@10``)."""
    display = getattr(measure, "display", None)
    return display() if callable(display) else str(measure)


def _prepare(measures, qrels, run, tie_break, corpus):
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, not {tie_break!r}")
    measures = parse_measures(measures)
    qrels_in = as_qrels_frame(qrels) if is_source(qrels) else qrels
    run_in = as_run_frame(run) if is_source(run) else run
    standard = [m for m in measures if m.NAME not in REGISTERED]
    if tie_break != "trec_eval" and standard:
        # Standard measures are computed by pytrec_eval, which always breaks ties its own way.
        # Re-score the run so that trec_eval's order *is* the requested order: score = -rank.
        ranked = rank_run(as_run_frame(run_in), tie_break, corpus=corpus)
        run_in = pd.DataFrame(
            {"query_id": ranked["query_id"], "doc_id": ranked["doc_id"], "score": -ranked["rank"].astype(np.float64)}
        )
    run_standard = run_in
    if standard and isinstance(run_in, pd.DataFrame):
        # ir_measures converts DataFrames row by row; a vectorised dict conversion is much faster
        run_standard = run_to_dict(as_run_frame(run_in))
    return measures, qrels_in, run_in, run_standard


def calc_aggregate(
    measures: Any,
    qrels: Any,
    run: Any,
    *,
    topics: pd.DataFrame | str | None = None,
    labels: pd.DataFrame | str | None = None,
    corpus: Sequence[str] | None = None,
    tie_break: str = "trec_eval",
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
            standard measures too (the run is re-scored so pytrec_eval sees the same order).

    Returns:
        ``{measure: value}``; a measure defined on no query gives NaN (or its ``empty`` value).
    """
    measures, qrels_in, run_in, run_standard = _prepare(measures, qrels, run, tie_break, corpus)
    ours = [m for m in measures if m.NAME in REGISTERED]
    standard = [m for m in measures if m.NAME not in REGISTERED]
    result: dict[ir_measures.Measure, float] = {}
    with side_info(topics=topics, labels=labels, corpus=corpus, tie_break=tie_break):
        if ours:  # straight to our provider: no filler rows from ir_measures' fallback evaluator
            result.update(PROVIDER.calc_aggregate(ours, qrels_in, run_in))
        if standard:
            result.update(ir_measures.calc_aggregate(standard, qrels_in, run_standard))
    return {m: result[m] for m in measures}


def iter_calc(
    measures: Any,
    qrels: Any,
    run: Any,
    *,
    topics: pd.DataFrame | str | None = None,
    labels: pd.DataFrame | str | None = None,
    corpus: Sequence[str] | None = None,
    tie_break: str = "trec_eval",
) -> Iterator[Metric]:
    """Per-query values as ``ir_measures.Metric(query_id, measure, value)``.

    Our measures report NaN where they are not defined for a query (e.g. TC for a query
    without required periods); aggregation skips those. Arguments as :func:`calc_aggregate`.
    """
    measures, qrels_in, run_in, run_standard = _prepare(measures, qrels, run, tie_break, corpus)
    ours = [m for m in measures if m.NAME in REGISTERED]
    standard = [m for m in measures if m.NAME not in REGISTERED]
    results: list[Metric] = []
    with side_info(topics=topics, labels=labels, corpus=corpus, tie_break=tie_break):
        if ours:
            results.extend(PROVIDER.iter_calc(ours, qrels_in, run_in))
        if standard:
            results.extend(ir_measures.iter_calc(standard, qrels_in, run_standard))
    return iter(results)


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
) -> pd.DataFrame:
    """A tidy DataFrame of results: columns ``[*by, "measure", "value", "n"]``.

    * ``by=None``: one row per measure (the same numbers as :func:`calc_aggregate`).
    * ``by="domain"`` (any topics column, a list of them, or ``"depth"`` = T1..T4, T5+ from the
      turn number): one row per group and measure, plus rows whose group value is
      ``"(macro)"`` (mean of the group means, as the published TEMPO/RECOR tables) and
      ``"(all)"`` (mean over queries, as the RETECO evaluation page).

    ``n`` counts the per-query values that entered the number (queries where the measure is
    defined). Measures print with their report names (``nDCG|FC@10``).
    """
    measures = parse_measures(measures)
    topics_df = load_topics(topics) if topics is not None else None
    metrics = list(
        iter_calc(measures, qrels, run, topics=topics_df, labels=labels, corpus=corpus, tie_break=tie_break)
    )
    frame = pd.DataFrame(
        {
            "query_id": [m.query_id for m in metrics],
            "measure": [measure_label(m.measure) for m in metrics],
            "value": np.array([float(m.value) for m in metrics], dtype=np.float64),
            "weight": np.array([getattr(m.value, "weight", 1.0) for m in metrics], dtype=np.float64),
        }
    )
    empties = {measure_label(m): (m.empty_value() if hasattr(m, "empty_value") else float("nan")) for m in measures}
    order = [measure_label(m) for m in measures]
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

