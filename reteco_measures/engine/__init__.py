"""The evaluation engine: inputs checked and prepared once, per-query values, one results frame.

* `.evaluate` — prepare a call (measures parsed, inputs read, ids aligned, the run ranked
  once) and compute per-query values in memory (our provider, native kernels, pytrec_eval);
* `.results` — `metrics_frame` (THE per-query long frame, with weights and
  grouping columns) and `aggregate` (THE aggregation: groups, ``(macro)`` and
  ``(all)`` margins, one summation);
* `.grouping` — the grouping columns (topics columns, conversation depth).

`reteco_measures.scale` (streaming, Dask) builds on this engine; `reteco_measures.api`
checks arguments and dispatches to one or the other.
"""
