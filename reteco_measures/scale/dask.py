"""Distributed evaluation of a Dask DataFrame run on the cluster's workers.

``rm.calc_aggregate / iter_calc / evaluate(measures, qrels, ddf)`` with a ``dask.dataframe``
run (columns ``query_id, doc_id, score``) call into this module:

1. The run is made *query aligned*: every query's rows in one partition. A run indexed by
   ``query_id`` with known divisions already is; otherwise it is shuffled on ``query_id``
   (``partitioned=True`` skips this when you know your partitions hold whole queries). A shuffle
   does not keep the row order, and a repeated (query, doc) pair keeps its *last* score (file
   order), as in memory and in pytrec_eval: so each row first gets its position in the run
   (partition number and row within the partition, the order ``ddf.compute()`` gives), and each
   partition puts its rows back in that order before it is evaluated. The numbers are those of
   the in-memory path on ``ddf.compute()``, repeated pairs included.
2. The qrels (and topics / labels) enter the graph once, as one key each, and reach each
   worker once (the broadcast).
3. One task per partition evaluates it with the in-memory path (same tie policy, same kernels)
   and returns only that partition's per-query values (with their weights). Task keys start
   with ``reteco-`` (``reteco-partition-<token>-<i>``), so they are easy to find in the dashboard.
4. The client collects the per-query values only (never the run), adds the qrels queries no
   partition reported (their empty-run value, as in memory), and aggregates exactly: a weighted
   mean per measure, the same numbers as the pandas path.

``dask[distributed]`` is the optional extra ``scale``: ``pip install "reteco-measures[scale]"``.
"""

from __future__ import annotations

import warnings
from typing import Any

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric

from ..engine.evaluate import iter_calc, qrels_order
from ..engine.results import aggregates, metrics_frame
from ..errors import DataFormatWarning, QueryIdMismatchWarning
from ..io.convert import as_qrels_frame
from ..measures.base import WeightedValue
from ..measures.names import parse_measures
from ..query_ids import check_query_ids, match_query_ids
from .stream import unreported_metrics

__all__ = ["is_dask_frame", "dask_per_query_frame", "dask_frame", "dask_iter_calc", "dask_calc_aggregate"]

_HINT = 'evaluating a Dask DataFrame needs dask: pip install "reteco-measures[scale]"'


def is_dask_frame(obj: Any) -> bool:
    """True for a ``dask.dataframe`` DataFrame (checked without importing dask)."""
    module = type(obj).__module__ or ""
    return module.startswith(("dask.", "dask_expr")) and hasattr(obj, "map_partitions") and hasattr(obj, "npartitions")


def _import_dask():
    try:
        import dask
        import dask.dataframe  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(_HINT) from exc
    return dask


#: the column that carries each row's position in the run through the shuffle
_ROW = "_reteco_row"
#: a row's position: partition number << _ROW_BITS | row within the partition
_ROW_BITS = 40


def _number_rows(part: pd.DataFrame, partition_info: dict | None = None) -> pd.DataFrame:
    """``part`` with its rows' positions in the run (partition number, then row in the partition)."""
    if partition_info is None:  # pragma: no cover - every dask version we support passes it
        raise RuntimeError("dask did not pass partition_info: the row order of the run cannot be kept")
    start = np.int64(partition_info["number"]) << np.int64(_ROW_BITS)
    return part.assign(**{_ROW: start + np.arange(len(part), dtype=np.int64)})


def _evaluate_partition(part: pd.DataFrame, qrels: pd.DataFrame, measures: list[str],
                        kwargs: dict) -> tuple[pd.DataFrame, list[str] | None]:
    """Per-query values of one query-aligned partition (runs on a worker), and the partition's
    query ids when none of them meets the qrels (``[]`` for an empty partition; None when some
    id meets the qrels).

    A partition may hold only queries the qrels do not judge; that is no mismatch of the run, so
    the partition's "share no query id" warning is held back and the client decides on the
    whole run (`_warn_if_no_partition_matched`)."""
    if _ROW in part.columns:  # shuffled: back to the run's row order (the last repeated pair wins)
        part = part.sort_values(_ROW, kind="stable")
    part = part[["query_id", "doc_id", "score"]]
    own_ids = pd.unique(part["query_id"].astype(str).to_numpy()).tolist()
    own = set(own_ids)
    rows = []
    unmatched: list[str] | None = [] if not len(part) else None  # an empty partition meets nothing
    if len(part):
        match = match_query_ids(own_ids, qrels["query_id"])
        shared = match.n_normalized if kwargs.get("query_ids", "exact") == "normalize" else match.n_exact
        if shared == 0 and len(qrels):
            unmatched = own_ids
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataFormatWarning)
            if unmatched is not None:
                warnings.simplefilter("ignore", QueryIdMismatchWarning)
            for m in iter_calc(measures, qrels, part, **kwargs):
                if m.query_id in own:
                    rows.append((m.query_id, str(m.measure), float(m.value), getattr(m.value, "weight", 1.0)))
    return pd.DataFrame(rows, columns=["query_id", "measure", "value", "weight"]), unmatched


def _warn_if_no_partition_matched(results: list, qrels: pd.DataFrame, mode: str) -> None:
    """The run's query-id check, made once on the client: when no non-empty partition shares a
    query id with the qrels, the warning the in-memory path gives for the whole run."""
    held = [ids for _, ids in results]
    if not results or any(ids is None for ids in held):
        return
    ids = [q for part_ids in held for q in part_ids]
    if ids:
        check_query_ids(ids, qrels["query_id"], mode=mode)


def _aligned(ddf: Any, partitioned: bool | None, tie_break: str) -> Any:
    if ddf.index.name == "query_id":
        if partitioned is None and ddf.known_divisions:
            partitioned = True
        ddf = ddf.reset_index()
    missing = {"query_id", "doc_id", "score"} - set(ddf.columns)
    if missing:
        raise ValueError(f"the Dask run lacks column(s) {sorted(missing)} (found {list(ddf.columns)})")
    ddf = ddf[["query_id", "doc_id", "score"]]
    if partitioned:
        return ddf
    if tie_break in ("run_order", "stable", "corpus_order"):
        raise ValueError(
            f"tie_break={tie_break!r} needs the rows in file order, which a shuffle does not keep: give a run "
            "whose partitions already hold whole queries and pass partitioned=True"
        )
    meta = ddf._meta.assign(**{_ROW: np.zeros(0, dtype=np.int64)})
    return ddf.map_partitions(_number_rows, meta=meta).shuffle(on="query_id")


def dask_per_query_frame(
    measures: Any, qrels: Any, run: Any, *, partitioned: bool | None = None, **kwargs: Any
) -> pd.DataFrame:
    """Per-query values of a Dask run, computed on the workers: ``query_id, measure, value,
    weight`` (``measure``: ir_measures objects), including the qrels queries the run lacks.

    ``kwargs`` go to `reteco_measures.iter_calc` (topics, labels, corpus, tie_break,
    query_ids). This is the frame ``rm.compare`` and ``rm.evaluate`` build on.
    """
    return _dask_values(measures, qrels, run, partitioned=partitioned, **kwargs)[0]


def _dask_values(measures: Any, qrels: Any, run: Any, *, partitioned: bool | None = None,
                 **kwargs: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    dask = _import_dask()
    from dask.base import tokenize

    measures = parse_measures(measures)
    names = [str(m) for m in measures]
    by_name = dict(zip(names, measures))
    qrels_frame = as_qrels_frame(qrels)
    side = dict(kwargs)
    ddf = _aligned(run, partitioned, side.get("tie_break", "trec_eval"))
    token = tokenize(names, ddf._name, qrels_frame, sorted(side.keys()))
    qrels_key = dask.delayed(qrels_frame, name=f"reteco-qrels-{token}")
    side_key = dask.delayed(side, name=f"reteco-side-{token}")
    tasks = [
        dask.delayed(_evaluate_partition, pure=True)(part, qrels_key, names, side_key,
                                                     dask_key_name=f"reteco-partition-{token}-{i}")
        for i, part in enumerate(ddf.to_delayed())
    ]
    results = list(dask.compute(*tasks)) if tasks else []
    parts = [values for values, _ in results]
    _warn_if_no_partition_matched(results, qrels_frame, side.get("query_ids", "exact"))
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["query_id", "measure", "value", "weight"])
    seen = set(frame["query_id"].tolist())
    rest = unreported_metrics(measures, qrels_frame, seen, kwargs)
    extra = pd.DataFrame([(m.query_id, str(m.measure), float(m.value), getattr(m.value, "weight", 1.0))
                          for m in rest], columns=["query_id", "measure", "value", "weight"])
    frame = pd.concat([frame, extra], ignore_index=True) if len(extra) else frame
    frame["measure"] = frame["measure"].map(by_name)
    return frame, qrels_frame


def dask_frame(measures: Any, qrels: Any, run: Any, *, label: Any = None, topics_frame: pd.DataFrame | None = None,
               by: list[str] | tuple = (), **kwargs: Any) -> pd.DataFrame:
    """The long per-query frame (`metrics_frame`, in the
    in-memory path's row order) of a Dask run; ``kwargs`` as `dask_per_query_frame`."""
    measures = parse_measures(measures)
    values, qrels_frame = _dask_values(measures, qrels, run, **kwargs)
    return metrics_frame(values, measures=measures, label=label, order=qrels_order(qrels_frame), topics=topics_frame,
                         by=by)


def _to_metrics(frame: pd.DataFrame) -> list[Metric]:
    out = []
    for q, m, v, w in zip(frame["query_id"], frame["measure"], frame["value"], frame["weight"]):
        value = float(v) if w == 1.0 and not getattr(m, "_RETECO", False) else WeightedValue(v, w)
        out.append(Metric(query_id=q, measure=m, value=value))
    return out


def dask_iter_calc(measures: Any, qrels: Any, run: Any, **kwargs: Any) -> list[Metric]:
    """Per-query ``Metric`` values of a Dask run (see `dask_per_query_frame`)."""
    return _to_metrics(dask_per_query_frame(measures, qrels, run, **kwargs))


def dask_calc_aggregate(measures: Any, qrels: Any, run: Any, **kwargs: Any) -> dict[ir_measures.Measure, float]:
    """Aggregates of a Dask run: weighted means of the per-query values from the workers, summed
    as in memory (same order, same summation: the in-memory aggregates, bit for bit)."""
    measures = parse_measures(measures)
    return aggregates(dask_frame(measures, qrels, run, **kwargs), measures)
