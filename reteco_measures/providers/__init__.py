"""ir_measures providers: how measures reach their computation.

* `.reteco` — `PROVIDER`, the provider of reteco-measures' own measures (light: importing
  `reteco_measures` registers it); `.evaluator` computes them with the kernels declared in
  `reteco_measures.kernels`;
* `.native` — the native kernels of nDCG, AP, P, R, RR (``SUPPORTED_MEASURES`` declared by
  `reteco_measures.kernels.standard`), the routing of ``rm.*`` calls between them and
  pytrec_eval, and `use_native_kernels` for plain ir_measures calls;
* `.gdeval` — opt-in: `reteco_measures.providers.gdeval.install` makes plain ir_measures calls
  compute ERR@k for any query id;
* `.pyterrier` — opt-in: `reteco_measures.providers.pyterrier.patch_pyterrier` makes PyTerrier
  average our measures with their own aggregators.

Importing this package imports only `.reteco`; the other names load on first use.
"""

from typing import TYPE_CHECKING, Any

from .reteco import PROVIDER, RetecoProvider, install

if TYPE_CHECKING:
    from .native import NATIVE_PROVIDER, NativeStandardProvider, use_native_kernels

__all__ = ["PROVIDER", "RetecoProvider", "install", "NATIVE_PROVIDER", "NativeStandardProvider", "use_native_kernels"]


def __getattr__(name: str) -> Any:
    """PEP 562: the native provider's names load (with pandas and the kernels) on first use."""
    if name in ("NATIVE_PROVIDER", "NativeStandardProvider", "use_native_kernels"):
        from . import native

        return getattr(native, name)
    raise AttributeError(f"module 'reteco_measures.providers' has no attribute {name!r}")
