"""Kernels of the RETECO Track 1 / TEMPO temporal diagnostics: TP, TR, TC and nDCG|FC.

Where the temporal judgments come from (RETECO evaluation plan; TEMPO paper, arXiv:2601.09523):

* **frozen labels** (``labels=`` table or JSONL file; the hidden-test path of RETECO and the TEMPO
  paper): one row per (``query_id``, ``doc_id``) with ``temporal`` (0/1 verdict) and ``periods``
  (the required periods the document covers). The required periods of a query come from the
  topics column ``required_periods`` (if a query has no such value, the ids of its ``steps``).
* **the starter-kit oracle** (no labels): the relevance qrels (grade ≥ 1) are the temporal
  verdicts, and every 1b step of a query is one required period, covered iff a top-k document is
  in that step's gold set. The steps and their gold sets come from the topics column ``steps`` —
  exactly the records of the release file ``steps_<split>.jsonl`` (``{"id", "query", "steps":
  [{"step_id", "step", "step_instruction", "gold_ids"}]}``), so
  ``rm.calc_aggregate(["TC@10"], "qrels_dev.txt", run, topics="steps_dev.jsonl")`` is the
  library form of the starter kit's ``scorer.py --steps steps_dev.jsonl``. ``rm.topics(dataset)``
  of a ``reteco/tempo/...`` dataset carries the same column. A step may also be given as a plain
  list of gold doc ids.

A document missing from the labels has verdict 0 and covers no period. A period counts as covered
by a document whatever the document's verdict (coverage and verdict are separate judgments, as in
TEMPO's judge prompt). Queries of the qrels that are missing from the run score 0 wherever the
measure is defined; queries with no required period are not scored by TC and nDCG|FC (NaN).

Everything is computed for the whole run at once with joins and group-bys on the ranked run
(`EvalContext.top`); the only Python loop walks the topics' step lists (one pass per call).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import ir_measures
import numpy as np
import pandas as pd

from ..errors import user_stacklevel
from ..measures.params import param
from .context import EvalContext, implements
from .ndcg import ndcg_at_k

__all__ = [
    "verdict_frame",
    "period_gold_frame",
    "required_periods_frame",
    "coverage_frame",
    "temporal_precision",
    "temporal_relevance",
    "temporal_coverage",
    "ndcg_fc",
    "reference_for",
    "tempo_query_frame",
]


# ------------------------------------------------------------------------------------------------
# helpers: label sources


def _str(values: Any) -> np.ndarray:
    return np.asarray(pd.Series(values, dtype="str").to_numpy(dtype=object), dtype=object)


def verdict_frame(qrels: pd.DataFrame, labels: pd.DataFrame | None) -> pd.DataFrame:
    """``query_id, doc_id, v`` (0/1): frozen label verdicts, or (no labels) qrels grade ≥ 1.

    A repeated (query, doc) pair keeps its last row, as qrels do.
    """
    if labels is not None:
        lab = labels.drop_duplicates(["query_id", "doc_id"], keep="last")
        v = pd.to_numeric(lab["temporal"], errors="coerce").fillna(0).to_numpy() >= 1
        return pd.DataFrame({"query_id": _str(lab["query_id"]), "doc_id": _str(lab["doc_id"]),
                             "v": v.astype(np.float64)})
    q = qrels.drop_duplicates(["query_id", "doc_id"], keep="last")
    v = q["relevance"].to_numpy(dtype=np.int64) >= 1
    return pd.DataFrame({"query_id": _str(q["query_id"]), "doc_id": _str(q["doc_id"]), "v": v.astype(np.float64)})


def _topics_rows(topics: pd.DataFrame | None, column: str, query_ids: pd.Index) -> pd.DataFrame | None:
    if topics is None or column not in topics.columns:
        return None
    t = topics.drop_duplicates("query_id", keep="first")
    t = t[t["query_id"].astype(str).isin(query_ids)]
    return t[["query_id", column]]


def _is_listlike(value: Any) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


def _step_period_id(query_id: str, position: int, step: Any) -> str:
    if isinstance(step, dict):
        if step.get("step_id") is not None:
            return str(step["step_id"])
        if step.get("step") is not None:
            return f"{query_id}_step{step['step']}"
    return f"{query_id}_step{position}"


def _step_gold(step: Any) -> list:
    if isinstance(step, dict):
        for key in ("gold_ids", "gold_doc_ids", "doc_ids"):
            if _is_listlike(step.get(key)):
                return list(step[key])
        return []
    return list(step) if _is_listlike(step) else []


def period_gold_frame(topics: pd.DataFrame | None, query_ids: pd.Index) -> pd.DataFrame:
    """The oracle's periods: one row per (``query_id``, ``period``, ``doc_id``) gold pair from the
    topics' ``steps`` column, plus a row with ``doc_id`` None for a step without gold documents
    (it counts as a period that cannot be covered)."""
    rows = _topics_rows(topics, "steps", query_ids)
    qs: list[str] = []
    ps: list[str] = []
    ds: list[Any] = []
    if rows is not None:
        for qid, steps in zip(rows["query_id"].astype(str).tolist(), rows["steps"].tolist(), strict=True):
            if not _is_listlike(steps):
                continue
            for position, step in enumerate(steps, start=1):
                pid = _step_period_id(qid, position, step)
                gold = _step_gold(step) or [None]
                qs.extend([qid] * len(gold))
                ps.extend([pid] * len(gold))
                ds.extend(None if d is None else str(d) for d in gold)
    return pd.DataFrame({"query_id": pd.Series(qs, dtype=object), "period": pd.Series(ps, dtype=object),
                         "doc_id": pd.Series(ds, dtype=object)})


def required_periods_frame(topics: pd.DataFrame | None, query_ids: pd.Index) -> pd.DataFrame:
    """Required periods for frozen labels: ``query_id, period`` from the topics'
    ``required_periods`` lists; a query without that value (missing column, None/NaN) falls back
    to the ids of its ``steps``. An explicit empty list means "no required period"."""
    qs: list[str] = []
    ps: list[str] = []
    done: set[str] = set()
    rows = _topics_rows(topics, "required_periods", query_ids)
    if rows is not None:
        for qid, periods in zip(rows["query_id"].astype(str).tolist(), rows["required_periods"].tolist(), strict=True):
            if isinstance(periods, str):
                periods = [periods]
            if not _is_listlike(periods):
                continue
            done.add(qid)
            unique = list(dict.fromkeys(str(p) for p in periods))
            qs.extend([qid] * len(unique))
            ps.extend(unique)
    steps = _topics_rows(topics, "steps", query_ids)
    if steps is not None:
        for qid, step_list in zip(steps["query_id"].astype(str).tolist(), steps["steps"].tolist(), strict=True):
            if qid in done or not _is_listlike(step_list):
                continue
            unique = list(dict.fromkeys(_step_period_id(qid, i, s) for i, s in enumerate(step_list, start=1)))
            qs.extend([qid] * len(unique))
            ps.extend(unique)
    return pd.DataFrame({"query_id": pd.Series(qs, dtype=object), "period": pd.Series(ps, dtype=object)})


def _label_periods(labels: pd.DataFrame) -> pd.DataFrame:
    """``query_id, doc_id, period`` rows of the labels' ``periods`` lists."""
    lab = labels.drop_duplicates(["query_id", "doc_id"], keep="last")[["query_id", "doc_id", "periods"]]
    lab = lab.explode("periods").dropna(subset=["periods"])
    return pd.DataFrame({"query_id": _str(lab["query_id"]), "doc_id": _str(lab["doc_id"]),
                         "period": _str(lab["periods"])})


def _ranked_top(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    top = ctx.top(measure)
    return pd.DataFrame({"query_id": _str(top["query_id"]), "doc_id": _str(top["doc_id"]),
                         "rank": top["rank"].to_numpy(dtype=np.int64)})


def coverage_frame(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    """Per evaluated query: ``required`` (number of required periods M) and ``covered`` (how many
    of them a top-k document covers), indexed by ``query_id``. Cached per (cutoff, tie policy,
    label source) on the context, so TC and nDCG|FC of one call share it."""
    labels = ctx.labels_for(measure)
    topics = ctx.topics_for(measure)
    key = ("coverage", param(measure, "cutoff"), ctx.tie_break_for(measure), id(labels), id(topics),
           reference_for(measure, ctx))
    cache = ctx.cache
    if key in cache:
        return cache[key]
    if key[-1] == "tempo":
        cache[key] = _tempo_coverage(measure, ctx, labels, topics)
        return cache[key]
    qids = ctx.query_ids
    top = _ranked_top(measure, ctx)[["query_id", "doc_id"]]
    if labels is not None:
        req = required_periods_frame(topics, qids)
        required = req.groupby("query_id").size()
        hits = _label_periods(labels).merge(top, on=["query_id", "doc_id"], how="inner")
        hits = hits.merge(req, on=["query_id", "period"], how="inner")
    else:
        gold = period_gold_frame(topics, qids)
        required = gold.groupby("query_id")["period"].nunique()
        hits = gold.dropna(subset=["doc_id"]).merge(top, on=["query_id", "doc_id"], how="inner")
    covered = hits.groupby("query_id")["period"].nunique() if len(hits) else pd.Series(dtype=np.int64)
    frame = pd.DataFrame(index=pd.Index(qids, name="query_id"))
    frame["required"] = required.reindex(frame.index, fill_value=0).to_numpy(dtype=np.int64)
    frame["covered"] = covered.reindex(frame.index, fill_value=0).to_numpy(dtype=np.int64)
    if len(frame) and not (frame["required"] > 0).any():
        _warn_no_periods(measure, labels is not None, topics)
    cache[key] = frame
    return frame


def _warn_no_periods(measure: ir_measures.Measure, with_labels: bool, topics: pd.DataFrame | None) -> None:
    if with_labels:
        need = "topics with 'required_periods' (list of str) or 'steps'"
    else:
        need = "topics with 'steps' (the records of steps_<split>.jsonl: [{step_id, gold_ids}, ...])"
    columns = ("required_periods", "steps") if with_labels else ("steps",)
    if topics is None:
        have = "no topics were given"
    elif not any(c in topics.columns for c in columns):
        have = (f"the topics have no {' or '.join(repr(c) for c in columns)} column (their columns: "
                f"{list(topics.columns)})")
    else:
        present = " and ".join(repr(c) for c in columns if c in topics.columns)
        have = f"the topics' {present} {'are' if ' and ' in present else 'is'} empty for every evaluated query"
    warnings.warn(f"{measure}: no evaluated query has a required period, so the measure is not defined "
                  f"(NaN); it needs {need}, but {have}", UserWarning, stacklevel=user_stacklevel())


def _with_verdicts(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    top = _ranked_top(measure, ctx)
    verdicts = verdict_frame(ctx.qrels, ctx.labels_for(measure))
    out = top.merge(verdicts, on=["query_id", "doc_id"], how="left", sort=False)
    out["v"] = out["v"].fillna(0.0)
    return out


def _result(index: pd.Index, values: pd.Series | np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"query_id": np.asarray(index, dtype=object), "value": np.asarray(values, dtype=np.float64)})


# ------------------------------------------------------------------------------------------------
# TEMPO reference mode (``reference='tempo'``): TEMPO's ``temporal_metrics.py``, query by query

#: TEMPO's words that make a query cross-period, and its recency words (comparison anchor fallback)
_TEMPO_CROSS_WORDS = ("since", "over the last", "changed", "trend")
_TEMPO_RECENCY_WORDS = ("now", "nowadays", "today", "currently", "recent", "lately", "as of", "up-to-date",
                        "latest", "present")
_TEMPO_YEAR = re.compile(r"\b(19\d{2}|20\d{2})\b")
_TEMPO_CROSS_CLASS = "trends_changes_and_cross_period"


def reference_for(measure: ir_measures.Measure, ctx: EvalContext) -> str:
    """``'reteco'`` (default) or ``'tempo'``: the measure's ``reference`` parameter, else the active
    ``side_info(temporal_reference=...)``."""
    ref = param(measure, "reference") or ctx.side.extra.get("temporal_reference") or "reteco"
    if ref not in ("reteco", "tempo"):
        raise ValueError(f"temporal reference must be 'reteco' or 'tempo', not {ref!r}")
    return ref


def _guidance_value(row: dict, key: str) -> Any:
    value = row.get(key)
    guidance = row.get("query_guidance")
    if (value is None or (isinstance(value, float) and np.isnan(value))) and isinstance(guidance, dict):
        value = guidance.get(key)
    return None if isinstance(value, float) and np.isnan(value) else value


def tempo_query_frame(topics: pd.DataFrame | None, query_ids: pd.Index) -> pd.DataFrame:
    """Per evaluated query, TEMPO's gates and anchors: ``temporal`` (the judge's temporal intent or
    the guidance's ``is_temporal_query``), ``cross`` (TEMPO's ``is_cross_period_query``),
    ``baseline`` and ``comparison`` (TEMPO's ``get_anchors``: the first two ``key_time_anchors``,
    duplicates kept, else its text fallbacks). Topics columns read (directly or inside a
    ``query_guidance`` dict): ``has_temporal_intent``, ``is_temporal_query``, ``temporal_focus``,
    ``temporal_reasoning_class_primary``, ``key_time_anchors``, ``query``; an explicit boolean
    ``cross_period`` column overrides TEMPO's cross-period test. A query without any intent column
    counts as temporal."""
    frame = pd.DataFrame(index=pd.Index(query_ids, name="query_id"))
    frame["temporal"], frame["cross"], frame["baseline"], frame["comparison"] = True, False, "", ""
    if topics is None:
        return frame
    t = topics.drop_duplicates("query_id", keep="first")
    t = t[t["query_id"].astype(str).isin(frame.index)]
    for row in t.to_dict("records"):
        qid = str(row["query_id"])
        intent = [_guidance_value(row, k) for k in ("has_temporal_intent", "is_temporal_query")]
        given = [v for v in intent if v is not None]
        temporal = any(bool(v) for v in given) if given else True
        text = str(row.get("query") or "")
        explicit = row.get("cross_period")
        if isinstance(explicit, (bool, np.bool_)):
            cross = bool(explicit)
        else:
            ql = text.lower()
            cross = (_guidance_value(row, "temporal_reasoning_class_primary") == _TEMPO_CROSS_CLASS
                     or _guidance_value(row, "temporal_focus") == "change_over_time"
                     or any(w in ql for w in _TEMPO_CROSS_WORDS))
        anchors = _guidance_value(row, "key_time_anchors")
        anchors = list(anchors) if _is_listlike(anchors) else []
        if len(anchors) >= 2:
            baseline, comparison = str(anchors[0]), str(anchors[1])
        else:
            years = _TEMPO_YEAR.findall(text)
            baseline = years[0] if years else "historical baseline"
            ql = text.lower()
            comparison = ("nowadays / current period" if any(w in ql for w in _TEMPO_RECENCY_WORDS)
                          else "later / recent period")
        frame.loc[qid, ["temporal", "cross", "baseline", "comparison"]] = [temporal, cross, baseline, comparison]
    frame["temporal"] = frame["temporal"].astype(bool)
    frame["cross"] = frame["cross"].astype(bool) & frame["temporal"]
    return frame


def _tempo_gates(ctx: EvalContext, topics: pd.DataFrame | None) -> pd.DataFrame:
    """`tempo_query_frame` of the evaluated queries, built once per call and topics table
    (TP, TR, TC and nDCG|FC of one call share it)."""
    cache = ctx.cache
    key = ("tempo_gates", id(topics))
    if key not in cache:
        cache[key] = tempo_query_frame(topics, ctx.query_ids)
    return cache[key]


def _tempo_roles(labels: pd.DataFrame, anchors: pd.DataFrame) -> pd.DataFrame:
    """``query_id, doc_id, b, c`` (0/1): does the labelled document cover the baseline / the
    comparison period? Columns ``covers_baseline`` / ``covers_comparison`` (TEMPO's judge output)
    when present; otherwise the ``periods`` list names the role (``'baseline'``, ``'comparison'``)
    or the anchor (an anchor equal for both roles covers both)."""
    lab = labels.drop_duplicates(["query_id", "doc_id"], keep="last")
    out = pd.DataFrame({"query_id": _str(lab["query_id"]), "doc_id": _str(lab["doc_id"])})
    if "covers_baseline" in lab.columns or "covers_comparison" in lab.columns:
        for col, key in (("covers_baseline", "b"), ("covers_comparison", "c")):
            values = lab[col] if col in lab.columns else pd.Series(False, index=lab.index)
            out[key] = values.fillna(False).astype(bool).to_numpy().astype(np.float64)
        return out
    ex = lab[["query_id", "doc_id", "periods"]].explode("periods").dropna(subset=["periods"])
    ex = pd.DataFrame({"query_id": _str(ex["query_id"]), "doc_id": _str(ex["doc_id"]), "p": _str(ex["periods"])})
    ex = ex.merge(anchors[["baseline", "comparison"]], left_on="query_id", right_index=True, how="left")
    ex["b"] = ((ex["p"] == "baseline") | (ex["p"] == ex["baseline"])).astype(np.float64)
    ex["c"] = ((ex["p"] == "comparison") | (ex["p"] == ex["comparison"])).astype(np.float64)
    flags = ex.groupby(["query_id", "doc_id"], sort=False)[["b", "c"]].max().reset_index()
    return out.merge(flags, on=["query_id", "doc_id"], how="left").fillna({"b": 0.0, "c": 0.0})


def _tempo_coverage(measure: ir_measures.Measure, ctx: EvalContext, labels: pd.DataFrame | None,
                    topics: pd.DataFrame | None) -> pd.DataFrame:
    """TEMPO's coverage: 2 required periods (baseline, comparison) for a temporal cross-period
    query, none otherwise; covered = roles covered by a top-k document."""
    qids = ctx.query_ids
    gates = _tempo_gates(ctx, topics)
    frame = pd.DataFrame(index=pd.Index(qids, name="query_id"))
    frame["required"] = np.where(gates["cross"].to_numpy(), 2, 0).astype(np.int64)
    frame["covered"] = 0
    if labels is not None and len(labels):
        top = _ranked_top(measure, ctx)[["query_id", "doc_id"]]
        hits = top.merge(_tempo_roles(labels, gates), on=["query_id", "doc_id"], how="inner")
        if len(hits):
            roles = hits.groupby("query_id")[["b", "c"]].max().sum(axis=1)
            frame["covered"] = roles.reindex(frame.index, fill_value=0).to_numpy(dtype=np.int64)
    frame.loc[frame["required"] == 0, "covered"] = 0
    return frame


def _tempo_mask(measure: ir_measures.Measure, ctx: EvalContext, values: np.ndarray) -> np.ndarray:
    """TP/TR under ``reference='tempo'``: not defined (NaN) for queries TEMPO's judge calls non-temporal."""
    if reference_for(measure, ctx) != "tempo":
        return values
    gates = _tempo_gates(ctx, ctx.topics_for(measure))
    return np.where(gates["temporal"].to_numpy(), values, np.nan)


# ------------------------------------------------------------------------------------------------
# kernels


@implements("TemporalPrecision")
def temporal_precision(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    """TP@k per query (``form='dcg'`` or ``'ap'``); empty or missing ranking → 0."""
    tempo = reference_for(measure, ctx) == "tempo"
    form = param(measure, "form", "dcg") if "form" in measure.params or not tempo else "ap"
    rows = _with_verdicts(measure, ctx)
    qids = ctx.query_ids
    if rows.empty:
        return _result(qids, _tempo_mask(measure, ctx, np.zeros(len(qids))))
    g = rows["query_id"].to_numpy()
    rank = rows["rank"].to_numpy(dtype=np.float64)
    v = rows["v"].to_numpy()
    if form == "dcg":
        w = 1.0 / np.log2(rank + 1.0)
        num = pd.Series(w * v).groupby(g, sort=False).sum()
        den = pd.Series(w).groupby(g, sort=False).sum()
        value = num / den
    elif form == "ap":
        # rows are sorted by query, then rank: running count of verdicts within each query
        cum = pd.Series(v).groupby(g, sort=False).cumsum().to_numpy()
        num = pd.Series(v * cum / rank).groupby(g, sort=False).sum()
        n_rel = pd.Series(v).groupby(g, sort=False).sum()
        value = (num / n_rel.where(n_rel > 0)).fillna(0.0)
    else:  # pragma: no cover - the parameter is validated by ir_measures
        raise ValueError(f"TemporalPrecision form must be 'dcg' or 'ap', not {form!r}")
    return _result(qids, _tempo_mask(measure, ctx, value.reindex(qids, fill_value=0.0).to_numpy()))


@implements("TemporalRelevance")
def temporal_relevance(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    """TR@k per query: Σ verdicts / n, n = returned docs in the top k (``over='returned'``) or k."""
    over = param(measure, "over", "returned")
    k = param(measure, "cutoff")
    if over == "k" and k is None:
        raise ValueError("TemporalRelevance(over='k') needs a cutoff, e.g. TR(over='k')@10")
    rows = _with_verdicts(measure, ctx)
    qids = ctx.query_ids
    g = rows["query_id"].to_numpy()
    hits = pd.Series(rows["v"].to_numpy()).groupby(g, sort=False).sum().reindex(qids, fill_value=0.0)
    if over == "k":
        denom = pd.Series(float(k), index=qids)
    else:
        denom = pd.Series(np.ones(len(rows))).groupby(g, sort=False).sum().reindex(qids, fill_value=0.0)
    value = np.divide(hits.to_numpy(), denom.to_numpy(), out=np.zeros(len(qids)), where=denom.to_numpy() > 0)
    return _result(qids, _tempo_mask(measure, ctx, value))


@implements("TemporalCoverage")
def temporal_coverage(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    """TC@k per query: covered / required periods; NaN for a query without required periods."""
    cov = coverage_frame(measure, ctx)
    req = cov["required"].to_numpy(dtype=np.float64)
    value = np.divide(cov["covered"].to_numpy(dtype=np.float64), req, out=np.full(len(cov), np.nan), where=req > 0)
    return _result(cov.index, value)


@implements("nDCG_FC")
def ndcg_fc(measure: ir_measures.Measure, ctx: EvalContext) -> pd.DataFrame:
    """nDCG|FC@k per query: binary nDCG@k (grade ≥ ``rel``) where TC@k = 1, else NaN."""
    cov = coverage_frame(measure, ctx)
    rel = int(param(measure, "rel", 1))
    nd = ndcg_at_k(ctx.ranked_for(measure), ctx.gains(binary=True, rel=rel), param(measure, "cutoff"),
                   cov.index)
    full = (cov["required"].to_numpy() > 0) & (cov["covered"].to_numpy() == cov["required"].to_numpy())
    return _result(cov.index, np.where(full, nd.to_numpy(), np.nan))
