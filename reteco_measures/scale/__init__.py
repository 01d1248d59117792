"""Speed and scale: streaming a run file by query blocks, Dask runs on a cluster.

Both are built on `reteco_measures.engine` (the in-memory evaluation of each block or
partition, the one results frame and aggregation), never on `reteco_measures.api`. The
native-kernel routing moved to `reteco_measures.providers.native`; its names stay
importable from here.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from ir_measures import Metric

from ..engine.results import aggregates
from ..measures.names import parse_measures
from ..providers.native import (
    NATIVE_PROVIDER,
    standard_calc_aggregate,
    standard_iter_calc,
    use_native_kernels,
)
from .dask import dask_frame, dask_iter_calc, is_dask_frame
from .stream import stream_frame, stream_iter_calc

__all__ = [
    "use_native_kernels",
    "standard_calc_aggregate",
    "standard_iter_calc",
    "NATIVE_PROVIDER",
    "scaled_iter_calc",
    "scaled_calc_aggregate",
    "scaled_frame",
    "is_scaled",
]


def scaled_iter_calc(measures: Any, qrels: Any, run: Any, *, stream: bool = False, **kwargs: Any) -> list[Metric]:
    """Per-query values of a Dask run (on its workers) or of a run file read in blocks
    (``stream=True``); ``kwargs`` as `reteco_measures.iter_calc`."""
    _check_modes(kwargs)
    if is_dask_frame(run):
        return dask_iter_calc(measures, qrels, run, **kwargs)
    return stream_iter_calc(measures, qrels, run, **kwargs)


def scaled_frame(measures: Any, qrels: Any, run: Any, *, stream: bool = False, label: Any = None,
                 topics_frame: pd.DataFrame | None = None, by: list[str] | tuple = (), **kwargs: Any) -> pd.DataFrame:
    """The long per-query frame (`metrics_frame`, rows in
    the in-memory path's order) of a Dask run or a run file read in blocks."""
    _check_modes(kwargs)
    if is_dask_frame(run):
        return dask_frame(measures, qrels, run, label=label, topics_frame=topics_frame, by=by, **kwargs)
    return stream_frame(measures, qrels, run, label=label, topics_frame=topics_frame, by=by, **kwargs)


def scaled_calc_aggregate(measures: Any, qrels: Any, run: Any, *, stream: bool = False, **kwargs: Any) -> dict:
    """Aggregates of a Dask run or of a run file read in blocks: the in-memory aggregates, bit for
    bit (the same per-query values in the same order, `aggregate`)."""
    measures = parse_measures(measures)
    return aggregates(scaled_frame(measures, qrels, run, stream=stream, **kwargs), measures)


def is_scaled(run: Any, stream: bool) -> bool:
    """Whether ``rm.*`` hands this call to `reteco_measures.scale` (stream=True or a Dask run)."""
    return bool(stream) or is_dask_frame(run)


def _check_modes(kwargs: dict) -> None:
    if kwargs.get("query_ids", "exact") != "exact":
        raise ValueError(
            "query_ids='normalize' is not available with stream=True or a Dask run: normalise the run's "
            "query ids first (reteco_measures.query_ids) and evaluate with query_ids='exact'"
        )
