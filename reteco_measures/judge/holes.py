"""Holes in the qrels: measure them, send only them to the relevance judge, keep provenance.

A *hole* is a (query, document) pair ranked in the top ``depth`` of a run (trec_eval tie order)
for a query the qrels judge, whose document the qrels do not judge: every measure counts it as
non-relevant. Pools built for older systems judge newer ones badly.

* `judged_at_k` — the share of each query's top ``k`` documents that the qrels judge (ir_measures'
  ``Judged@k``, which the tests check it against), and `judged_warning`, which flags a run whose
  mean Judged@k is far below the pooled runs' (below `JUDGED_RATIO` = 0.8 of their mean);
* `find_holes` — the holes of several runs (each pair once, first-seen order);
* `fill_holes` — judges only the holes (through the judge runner `run_items` and its cache, so a
  pair judged before is never asked again; pairs the qrels already hold, with any provenance, are
  never holes) and returns the extended qrels with a ``provenance`` column (``human`` for the
  input rows without one, the judge model's name for the filled ones);
* `hole_report` — each run's measure without the holes filled (holes non-relevant) and with them,
  and the prediction-powered mean (PPI++, Angelopoulos, Duchi & Zrnic 2023, via
  `reteco_measures.stats.calibrate.ppi_mean`) that corrects the filled number by the judge's error
  measured where humans judged too: the *labelled* queries are those whose top ``depth`` of the
  run holds only pairs with both a human label and a model label (``model_labels``: model
  judgments of human-judged pairs, by default the calibration sample `fill_holes` has the judge
  label, see `calibration_pairs`); their human measure is the truth, their prediction the measure
  on the human qrels with the model's labels in place of the human ones in the top ``depth`` (the
  query's other judged documents stay, as they do for a filled query: nDCG's ideal ranking is
  built from the same qrels); every other query contributes its filled value as the unlabelled
  prediction. Without such queries the
  calibrated columns are NaN and ``note`` says so.

The relevance judge is the TEMPO temporal-relevance prompt (a 0/1 verdict on the question, its
required periods and the document; `reteco_measures.judge.temporal`); its verdict is the filled
pair's relevance. An invalid verdict leaves the pair a hole (counted in ``invalid``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..api import iter_calc
from ..io.readers import read_qrels, read_run
from ..kernels.ranking import rank_run, top_k
from ..stats.calibrate import ppi_mean
from ..stats.judged import JUDGED_MIN_GAP, JUDGED_RATIO, judged_warning
from .runner import JudgeItem, Outcome, run_items
from .temporal import temporal_items

__all__ = ["read_holes_qrels", "write_extended_qrels", "EXTENDED_HEADER", "judged_at_k", "judged_warning", "find_holes", "fill_holes", "hole_report", "Holes", "JUDGED_RATIO", "JUDGED_MIN_GAP",
           "HOLE_REPORT_COLUMNS", "calibration_pairs", "CALIBRATION_SAMPLE"]

#: the columns of `hole_report`
HOLE_REPORT_COLUMNS = ["run", "measure", "n", "holes", "judged_before", "judged_after", "value_human",
                       "value_filled", "n_labelled", "calibrated", "ci_low", "ci_high", "note"]


#: the header of an extended qrels file (tab-separated; `write_extended_qrels`)
EXTENDED_HEADER = ["query_id", "iteration", "doc_id", "relevance", "provenance"]


def read_holes_qrels(q: Any) -> pd.DataFrame:
    """Qrels from a frame, a TREC qrels file or an extended qrels file (`EXTENDED_HEADER`, as
    `write_extended_qrels` writes it), with text query and document ids."""
    if isinstance(q, (str, os.PathLike)):
        with open(q, encoding="utf-8") as fh:
            first = fh.readline()
        if first.rstrip("\r\n").split("\t") == EXTENDED_HEADER:
            frame = pd.read_csv(q, sep="\t", dtype={"query_id": str, "doc_id": str, "provenance": str},
                                keep_default_na=False)
            bad = pd.to_numeric(frame["relevance"], errors="coerce").isna()
            if bad.any():
                raise ValueError(f"{q}: line {int(np.flatnonzero(bad)[0]) + 2}: relevance is not a number")
            frame["relevance"] = frame["relevance"].astype(np.int64)
        else:
            frame = read_qrels(q)
    else:
        frame = q
    return frame.assign(query_id=frame["query_id"].astype(str), doc_id=frame["doc_id"].astype(str))


def write_extended_qrels(path: str | os.PathLike, qrels: pd.DataFrame) -> None:
    """Qrels with provenance as a tab-separated file with the header `EXTENDED_HEADER` (the
    ``--qrels`` of a later ``judge holes`` reads it back: its rows are not holes)."""
    out = qrels.assign(iteration=qrels["iteration"] if "iteration" in qrels.columns else "0")
    out["iteration"] = out["iteration"].fillna("0").astype(str)
    out[EXTENDED_HEADER].to_csv(path, sep="\t", index=False)


def _run(r: Any) -> pd.DataFrame:
    frame = read_run(r) if isinstance(r, (str, os.PathLike)) else r
    return frame.assign(query_id=frame["query_id"].astype(str), doc_id=frame["doc_id"].astype(str))


def _top(run: pd.DataFrame, k: int, tie_break: str) -> pd.DataFrame:
    if k < 1:
        raise ValueError(f"depth / k must be >= 1, not {k!r}")
    return top_k(rank_run(run, tie_break), k)[["query_id", "doc_id", "rank"]]


def judged_at_k(qrels: Any, run: Any, k: int = 10, *, tie_break: str = "trec_eval") -> pd.Series:
    """Per query of the run that the qrels judge: the share of its top ``k`` documents (of the
    retrieved ones when fewer than ``k``, as ir_measures' ``Judged@k``) that the qrels judge."""
    q, top = read_holes_qrels(qrels), _top(_run(run), k, tie_break)
    top = top[top["query_id"].isin(set(q["query_id"]))]
    judged = top.merge(q[["query_id", "doc_id"]].drop_duplicates(), on=["query_id", "doc_id"], how="left",
                       indicator=True)["_merge"].eq("both").to_numpy()
    return pd.Series(judged, index=top["query_id"].to_numpy(), dtype=np.float64).groupby(level=0, sort=False).mean()


def find_holes(qrels: Any, runs: Sequence[Any], depth: int = 10, *, tie_break: str = "trec_eval") -> pd.DataFrame:
    """``query_id, doc_id`` of every hole of the runs' top ``depth`` (module docs), each once."""
    q = read_holes_qrels(qrels)
    judged = pd.MultiIndex.from_frame(q[["query_id", "doc_id"]])
    parts = [_top(_run(r), depth, tie_break)[["query_id", "doc_id"]] for r in runs]
    pairs = pd.concat(parts, ignore_index=True).drop_duplicates()
    pairs = pairs[pairs["query_id"].isin(set(q["query_id"]))]
    return pairs[~pd.MultiIndex.from_frame(pairs).isin(judged)].reset_index(drop=True)


#: default number of human-judged pairs sent to the judge for the calibration (`fill_holes`)
CALIBRATION_SAMPLE = 200


def calibration_pairs(qrels: Any, runs: Sequence[Any], depth: int = 10, *, sample: int | None = CALIBRATION_SAMPLE,
                      seed: int = 0, tie_break: str = "trec_eval") -> pd.DataFrame:
    """``query_id, doc_id`` of a random sample of human-judged pairs of the runs' top ``depth``
    for the judge to label too, so that `hole_report` can measure its error where humans judged.

    The calibration unit of `hole_report` is the query (a query is labelled when a run's whole
    top ``depth`` has both labels), so the sample is drawn by query: the *eligible* queries are
    those for which at least one run's top ``depth`` holds only human-judged pairs (rows whose
    provenance is ``human`` or absent); they are shuffled with ``seed`` and taken whole (every
    pair of the top ``depth`` of those runs) while the pairs taken stay within ``sample``
    (``None``: every eligible query; ``0``: none). A query with holes in every run cannot be a
    labelled query and is never sampled.
    """
    if sample is not None and sample < 0:
        raise ValueError(f"the calibration sample must be >= 0, not {sample!r}")
    q = read_holes_qrels(qrels)
    if "provenance" in q.columns:
        q = q[q["provenance"].fillna("human").astype(str) == "human"]
    judged = pd.MultiIndex.from_frame(q[["query_id", "doc_id"]])
    qids = set(q["query_id"])
    parts = []
    for r in runs:
        top = _top(_run(r), depth, tie_break)[["query_id", "doc_id"]]
        top = top[top["query_id"].isin(qids)]
        full = pd.Series(pd.MultiIndex.from_frame(top).isin(judged), index=top.index).groupby(top["query_id"]).transform("all")
        parts.append(top[full.to_numpy()])
    empty = pd.DataFrame({"query_id": pd.Series(dtype=str), "doc_id": pd.Series(dtype=str)})
    if not parts or sample == 0:
        return empty
    pairs = pd.concat(parts, ignore_index=True).drop_duplicates(ignore_index=True)
    if not len(pairs):
        return empty
    queries = np.array(sorted(set(pairs["query_id"])), dtype=object)
    order = queries[np.random.default_rng(seed).permutation(len(queries))]
    sizes = pairs.groupby("query_id").size().reindex(order).to_numpy()
    keep = order[np.cumsum(sizes) <= (sample if sample is not None else np.inf)]
    rank = pd.Series(np.arange(len(order)), index=order)
    chosen = pairs[pairs["query_id"].isin(set(keep))]
    chosen = chosen.assign(_o=rank.reindex(chosen["query_id"]).to_numpy()).sort_values("_o", kind="stable")
    return chosen.drop(columns="_o").reset_index(drop=True)


@dataclass
class Holes:
    """The result of `fill_holes`: ``qrels`` (extended, with ``provenance``), ``filled`` (the
    judged holes: ``query_id, doc_id, relevance, provenance``), ``holes`` (every hole), counts
    ``asked`` (sent to the judge, not from the cache), ``cached``, ``invalid``; and the
    calibration sample (`calibration_pairs`): ``model_labels`` (the judge's labels of those
    human-judged pairs, ``query_id, doc_id, relevance, provenance``: the ``model_labels`` of
    `hole_report`; never part of ``qrels``), ``calibration`` (the pairs sent), counts
    ``calibration_asked``, ``calibration_cached``, ``calibration_invalid``."""

    qrels: pd.DataFrame
    filled: pd.DataFrame
    holes: pd.DataFrame
    asked: int = 0
    cached: int = 0
    invalid: int = 0
    outcomes: list[Outcome] = field(default_factory=list)
    model_labels: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["query_id", "doc_id", "relevance", "provenance"]))
    calibration: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["query_id", "doc_id"]))
    calibration_asked: int = 0
    calibration_cached: int = 0
    calibration_invalid: int = 0


def fill_holes(
    qrels: Any,
    runs: Sequence[Any],
    *,
    topics: Mapping[str, Mapping[str, Any]],
    documents: Mapping[str, str],
    judge: Callable[[list[JudgeItem]], list[Outcome]] | None = None,
    client: Any = None,
    cache: Any = None,
    depth: int = 10,
    tie_break: str = "trec_eval",
    prompts_dir: str | os.PathLike | None = None,
    concurrency: int = 4,
    calibration_sample: int | None = CALIBRATION_SAMPLE,
    seed: int = 0,
) -> Holes:
    """Judge only the holes of the runs' top ``depth`` and extend the qrels (module docs).

    Args:
        qrels: the qrels (a file or DataFrame ``query_id, doc_id, relevance`` [+ ``provenance``]);
            rows without provenance are ``human``; rows of an earlier fill keep theirs and are not
            holes.
        runs: run files or DataFrames.
        topics: ``{query_id: {"query", "required_periods"}}`` (`reteco_measures.judge.inputs.read_temporal_topics`).
        documents: ``{doc_id: text}``.
        judge: ``items -> outcomes`` (e.g. a judging session); default: `run_items` with
            ``client`` and ``cache``.
        client, cache, concurrency: for the default judge (a `JudgeClient`-like object with
            ``model`` and ``judge``; a `JudgmentCache`).
        depth, tie_break: the top of each run that is checked.
        prompts_dir: another folder of prompts.
        calibration_sample, seed: the human-judged pairs the judge labels too, for the
            calibration of `hole_report` (`calibration_pairs`: up to ``calibration_sample`` pairs,
            drawn by query with ``seed``; ``0`` none, ``None`` all). They go to the judge in the
            same call as the holes (a pair in the cache is not asked again); their labels are
            ``Holes.model_labels``, never rows of the extended qrels.
    """
    q = read_holes_qrels(qrels)
    if "provenance" not in q.columns:
        q = q.assign(provenance="human")
    q["provenance"] = q["provenance"].fillna("human").astype(str)
    holes = find_holes(q, runs, depth, tie_break=tie_break)
    calib = calibration_pairs(q, runs, depth, sample=calibration_sample, seed=seed, tie_break=tie_break)
    pairs = list(zip(holes["query_id"], holes["doc_id"], strict=True))
    cpairs = list(zip(calib["query_id"], calib["doc_id"], strict=True))
    items = [it for it in temporal_items(pairs + cpairs, dict(topics), dict(documents), prompts_dir=prompts_dir)
             if it.meta.get("dimension") == "temporal_relevance"]
    if judge is None:
        if client is None:
            raise ValueError("fill_holes needs a judge (items -> outcomes) or a client")
        outcomes = run_items(items, client, cache, concurrency=concurrency, progress=False) if items else []
    else:
        outcomes = judge(items) if items else []
    hole_set = set(pairs)  # disjoint from the calibration pairs (those are human-judged)
    hole_out = [o for o in outcomes if (o.item.meta["query_id"], o.item.meta["doc_id"]) in hole_set]
    calib_out = [o for o in outcomes if (o.item.meta["query_id"], o.item.meta["doc_id"]) not in hole_set]

    def labels(outs: list[Outcome]) -> pd.DataFrame:
        rows = [{"query_id": o.item.meta["query_id"], "doc_id": o.item.meta["doc_id"],
                 "relevance": int(o.verdict.score), "provenance": str(o.model)}
                for o in outs if o.verdict.valid and o.verdict.score is not None]
        return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance", "provenance"])

    def invalid(outs: list[Outcome]) -> int:
        return sum(not (o.verdict.valid and o.verdict.score is not None) for o in outs)

    filled = labels(hole_out)
    extended = pd.concat([q, filled], ignore_index=True) if len(filled) else q
    return Holes(extended, filled, holes, asked=sum(not o.cached for o in hole_out),
                 cached=sum(o.cached for o in hole_out), invalid=invalid(hole_out), outcomes=list(outcomes),
                 model_labels=labels(calib_out), calibration=calib,
                 calibration_asked=sum(not o.cached for o in calib_out),
                 calibration_cached=sum(o.cached for o in calib_out), calibration_invalid=invalid(calib_out))


def _per_query(measure: str, qrels: pd.DataFrame, run: pd.DataFrame, queries: list[str]) -> pd.Series:
    q = qrels[["query_id", "doc_id", "relevance"]].drop_duplicates(["query_id", "doc_id"], keep="first")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals = {m.query_id: m.value for m in iter_calc([measure], q, run)}
    return pd.Series([vals.get(qid, 0.0) for qid in queries], index=queries, dtype=np.float64)


def hole_report(
    qrels: Any,
    extended: pd.DataFrame,
    runs: Mapping[str, Any],
    *,
    measure: str = "nDCG@10",
    depth: int = 10,
    model_labels: pd.DataFrame | Sequence[pd.DataFrame] | None = None,
    method: str = "ppi++",
    ci: float = 0.95,
    tie_break: str = "trec_eval",
    ratio: float = JUDGED_RATIO,
) -> pd.DataFrame:
    """Each run's ``measure`` without and with the filled holes, and its PPI-calibrated mean
    (module docs). ``qrels``: the human qrels; ``extended``: `fill_holes`' qrels; ``model_labels``:
    model judgments ``query_id, doc_id, relevance`` of human-judged pairs (for the calibration),
    e.g. `fill_holes`' ``Holes.model_labels``; several frames: the first label of a pair wins.
    Warns (`judged_warning`) about runs whose Judged@``depth`` is far below the pooled runs'."""
    if model_labels is not None and not isinstance(model_labels, pd.DataFrame):
        frames = [read_holes_qrels(m) for m in model_labels if m is not None and len(m)]
        model_labels = (pd.concat(frames, ignore_index=True).drop_duplicates(["query_id", "doc_id"], keep="first")
                        if frames else None)
    human = read_holes_qrels(qrels)
    if "provenance" in human.columns:
        human = human[human["provenance"].fillna("human") == "human"]
    ext = read_holes_qrels(extended)
    model_part = ext[ext.get("provenance", pd.Series("human", index=ext.index)).fillna("human") != "human"]
    rows, before = [], {}
    for name, r in runs.items():
        run = _run(r)
        queries = sorted(set(run["query_id"]) & set(human["query_id"]))
        jb = judged_at_k(human, run, depth, tie_break=tie_break)
        ja = judged_at_k(ext, run, depth, tie_break=tie_break)
        before[name] = float(jb.reindex(queries).fillna(0).mean()) if queries else np.nan
        h = _per_query(measure, human, run, queries)
        f = _per_query(measure, ext, run, queries)
        row = {"run": name, "measure": measure, "n": len(queries),
               "holes": int(len(find_holes(human, [run], depth, tie_break=tie_break))),
               "judged_before": before[name], "judged_after": float(ja.reindex(queries).fillna(0).mean()),
               "value_human": float(h.mean()), "value_filled": float(f.mean()), "n_labelled": 0,
               "calibrated": np.nan, "ci_low": np.nan, "ci_high": np.nan, "note": ""}
        labelled: list[str] = []
        if model_labels is not None and len(model_labels):
            ml = read_holes_qrels(model_labels)
            top = _top(run, depth, tie_break)
            key = top["query_id"] + "\x00" + top["doc_id"]
            hk = set(human["query_id"] + "\x00" + human["doc_id"])
            mk = set(ml["query_id"] + "\x00" + ml["doc_id"])
            ok = key.isin(hk) & key.isin(mk)
            full = ok.groupby(top["query_id"]).all()
            labelled = [qid for qid in queries if full.get(qid, False)]
        if labelled:
            # the prediction of a labelled query is built like a filled one: the human qrels with the
            # judge's labels in the top k (its other judged documents, e.g. nDCG's ideal ranking, stay)
            pred_model = pd.concat([read_holes_qrels(model_labels), human, model_part], ignore_index=True)
            yhat = _per_query(measure, pred_model, run, labelled)
            y = h.reindex(labelled)
            unl = [qid for qid in queries if qid not in set(labelled)]
            res = ppi_mean(y.to_numpy(), yhat.to_numpy(), f.reindex(unl).to_numpy(), method=method, ci=ci)
            row.update({"n_labelled": len(labelled), "calibrated": float(res.estimate),
                        "ci_low": float(res.ci_low), "ci_high": float(res.ci_high)})
        else:
            row["note"] = ("no query whose top k has both human and model labels: no calibration (give model "
                           "judgments of human-judged pairs: a calibration sample or model_labels)")
        rows.append(row)
    if len(before) >= 2:
        judged_warning(before, ratio)
    return pd.DataFrame(rows, columns=HOLE_REPORT_COLUMNS)
