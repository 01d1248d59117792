"""Speed and scale: native standard kernels routing, streaming by query blocks, Dask runs."""

from .native import NATIVE_PROVIDER, standard_calc_aggregate, standard_iter_calc, use_native_kernels

__all__ = ["use_native_kernels", "standard_calc_aggregate", "standard_iter_calc", "NATIVE_PROVIDER"]
