"""PyTerrier averages our measures the way `reteco_measures.calc_aggregate` does.

``pt.Experiment`` evaluates every system per query (``ir_measures.iter_calc``) and then takes,
for each measure, the plain mean of the per-query values over the queries it saw
(``pyterrier._evaluation._rendering._mean_of_measures`` in PyTerrier 1.x). Two of our kinds of
aggregate do not survive a plain mean:

* *conditional* ones, whose per-query value is NaN where the measure is not defined (nDCG|FC on
  a query that is not fully covered, TC on a query without required periods): one NaN makes the
  mean NaN;
* *weighted* ones, whose per-query value carries a weight (``TurnNDCG(average='conversation')``:
  each turn weighs 1/|turns of its conversation|): the plain mean is the turn mean.

Each per-query value of ours is a `WeightedValue` (a
``float`` with a ``weight``), so the right aggregate can be recovered from what PyTerrier holds.
`patch_pyterrier` is opt-in (importing reteco_measures does not change PyTerrier)::

    import pyterrier as pt
    from reteco_measures.providers.pyterrier import patch_pyterrier

    patch_pyterrier()   # once per process

It wraps that averaging function once: measures whose values are ours are averaged with the
measure's own aggregator (NaN-skipping weighted mean, the measure's ``empty`` value when nothing is
defined); every other measure keeps PyTerrier's own mean, unchanged.

PyTerrier's significance tests (``baseline=``) and per-query tables (``perquery=True``) work on
the per-query values themselves; conditional and weighted aggregates cannot be expressed there
(see the PyTerrier page of the documentation and `reteco_measures.compare`).
"""

from __future__ import annotations

import sys
from typing import Any

from ..measures.base import WeightedMeanAgg, WeightedValue
from ..measures.names import parse_measures

__all__ = ["patch_pyterrier"]

_MODULE = "pyterrier._evaluation._rendering"
_FUNCTION = "_mean_of_measures"
_MARK = "_reteco_measures_wrapped"


def _aggregator(name: str) -> Any:
    """The aggregator of the measure printed as ``name`` (ours), else a plain NaN-skipping one."""
    try:
        measure = parse_measures(name)[0]
        if getattr(measure, "_RETECO", False):
            return measure.aggregator()
    except Exception:  # noqa: BLE001  (a name PyTerrier made up: fall back to the weighted mean)
        pass
    return WeightedMeanAgg()


def _wrap(original: Any) -> Any:
    def _mean_of_measures(result: dict, measures: list | None = None, num_q: int | None = None) -> dict:
        if not result:
            return original(result, measures, num_q)
        names = list(measures) if measures is not None else list(next(iter(result.values())).keys())
        ours = [
            n for n in names if any(isinstance(row.get(n), WeightedValue) for row in result.values())
        ]
        if not ours:
            return original(result, measures, num_q)
        rest = [n for n in names if n not in ours]
        means = original(result, rest, num_q) if rest else {}
        out: dict = {}
        for name in names:
            if name in ours:
                agg = _aggregator(name)
                for row in result.values():
                    if name in row:
                        agg.add(row[name])
                out[name] = agg.result()
            elif name in means:
                out[name] = means[name]
        return out

    setattr(_mean_of_measures, _MARK, True)
    _mean_of_measures.__wrapped__ = original  # type: ignore[attr-defined]
    return _mean_of_measures


def patch_pyterrier() -> bool:
    """Make PyTerrier average our measures with their own aggregators (opt-in; idempotent).

    Imports PyTerrier's evaluation module. Returns True when PyTerrier's averaging is (now)
    wrapped, False when PyTerrier is not installed or has no such function (another major
    version: nothing is changed).
    """
    try:
        import pyterrier._evaluation._rendering  # noqa: F401  (heavy: only on this explicit call)
    except ImportError:
        return False
    module = sys.modules.get(_MODULE)
    if module is None:
        return False
    original = getattr(module, _FUNCTION, None)
    if original is None:
        return False
    if not getattr(original, _MARK, False):
        setattr(module, _FUNCTION, _wrap(original))
    return True
