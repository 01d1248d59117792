"""ir_measures providers: how measures reach their computation.

* `.reteco` — `PROVIDER`, the provider of reteco-measures' own measures
  (it reads the kernels declared in `reteco_measures.kernels`);
* `.native` — the native kernels of nDCG, AP, P, R, RR (``SUPPORTED_MEASURES`` declared by
  `reteco_measures.kernels.standard`), the routing of ``rm.*`` calls between them and
  pytrec_eval, and `use_native_kernels` for plain ir_measures calls;
* `.pyterrier` — PyTerrier averages our measures with their own aggregators.
"""

from .native import NATIVE_PROVIDER, NativeStandardProvider, use_native_kernels
from .reteco import PROVIDER, RetecoProvider, install

__all__ = ["PROVIDER", "RetecoProvider", "install", "NATIVE_PROVIDER", "NativeStandardProvider", "use_native_kernels"]
