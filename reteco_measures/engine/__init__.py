"""The evaluation engine: inputs checked and prepared once, per-query values, one results frame.

* :mod:`.evaluate` — prepare a call (measures parsed, inputs read, ids aligned, the run ranked
  once) and compute per-query values in memory (our provider, native kernels, pytrec_eval);
* :mod:`.results` — :func:`~.results.metrics_frame` (THE per-query long frame, with weights and
  grouping columns) and :func:`~.results.aggregate` (THE aggregation: groups, ``(macro)`` and
  ``(all)`` margins, one summation);
* :mod:`.grouping` — the grouping columns (topics columns, conversation depth).

:mod:`reteco_measures.scale` (streaming, Dask) builds on this engine; :mod:`reteco_measures.api`
checks arguments and dispatches to one or the other.
"""
