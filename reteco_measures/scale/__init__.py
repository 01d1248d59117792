"""Speed and scale: native standard kernels routing, streaming by query blocks, Dask runs."""

from ..providers.native import NATIVE_PROVIDER, standard_calc_aggregate, standard_iter_calc, use_native_kernels

__all__ = [
    "use_native_kernels",
    "standard_calc_aggregate",
    "standard_iter_calc",
    "NATIVE_PROVIDER",
    "scaled_iter_calc",
    "scaled_calc_aggregate",
    "is_scaled",
]


def scaled_iter_calc(measures, qrels, run, *, stream: bool = False, **kwargs):
    """Per-query values of a Dask run (on its workers) or of a run file read in blocks
    (``stream=True``); ``kwargs`` as :func:`reteco_measures.iter_calc`."""
    _check_modes(kwargs)
    from .dask import dask_iter_calc, is_dask_frame

    if is_dask_frame(run):
        return dask_iter_calc(measures, qrels, run, **kwargs)
    from .stream import stream_iter_calc

    return stream_iter_calc(measures, qrels, run, **kwargs)


def scaled_calc_aggregate(measures, qrels, run, *, stream: bool = False, **kwargs):
    """Aggregates of a Dask run or of a run file read in blocks (exact weighted means of the
    per-query values)."""
    from ..api import parse_measures
    from .stream import aggregate_metrics

    measures = parse_measures(measures)
    return aggregate_metrics(measures, scaled_iter_calc(measures, qrels, run, stream=stream, **kwargs))


def is_scaled(run, stream: bool) -> bool:
    """Whether ``rm.*`` hands this call to :mod:`reteco_measures.scale` (stream=True or a Dask run)."""
    from .dask import is_dask_frame

    return bool(stream) or is_dask_frame(run)


def _check_modes(kwargs) -> None:
    if kwargs.get("query_ids", "exact") != "exact":
        raise ValueError(
            "query_ids='normalize' is not available with stream=True or a Dask run: normalise the run's "
            "query ids first (reteco_measures.query_ids) and evaluate with query_ids='exact'"
        )
