"""Shared machinery for reteco-measures' measure definitions.

Every measure lives in its own small module (name, parameters, docstring with the
definition and its source). The computation lives in `reteco_measures.kernels` and
is looked up by measure name by `reteco_measures.providers.reteco.RetecoProvider`.
Shared parameter declarations (tie policies, the cutoff check) live in `.params`,
measure names and their parsing in `.names`.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import ir_measures
from ir_measures.measures.base import Agg, ParamInfo

from .params import TEMPORAL_REFERENCE, check_cutoff, common_params, param

__all__ = [
    "RetecoMeasure",
    "WeightedValue",
    "WeightedMeanAgg",
    "common_params",
    "TEMPORAL_REFERENCE",
    "check_cutoff",
    "register",
    "REGISTERED",
]


class WeightedValue(float):
    """A per-query value that carries its weight in the aggregate.

    It *is* a ``float`` (so ``Metric.value`` behaves as usual for users); the extra
    ``weight`` attribute lets `WeightedMeanAgg` reproduce aggregates that are not a
    plain mean over queries (mean of cell means, mean of conversation means, ...) even inside
    a plain ``ir_measures.calc_aggregate`` call, which only hands the aggregator the values.
    """

    weight: float

    def __new__(cls, value: float, weight: float = 1.0) -> WeightedValue:
        obj = super().__new__(cls, value)
        obj.weight = float(weight)
        return obj

    def __reduce__(self):  # keep pickling / copying working
        return (WeightedValue, (float(self), self.weight))


class WeightedMeanAgg(Agg):
    """Weighted mean that skips NaN ("not defined for this query") values.

    A value without a ``weight`` attribute counts with weight 1, so this reduces to the
    ordinary mean over the defined queries. If no value is defined the result is ``empty``
    (NaN unless the measure says otherwise).
    """

    def __init__(self, empty: float = float("nan")) -> None:
        self.total = 0.0
        self.weight = 0.0
        self.empty = empty

    def add(self, value: float) -> None:
        v = float(value)
        if math.isnan(v):
            return
        w = getattr(value, "weight", 1.0)
        self.total += w * v
        self.weight += w

    def result(self) -> float:
        if self.weight == 0:
            return self.empty
        return self.total / self.weight


class RetecoMeasure(ir_measures.Measure):
    """Base class of our measures.

    * ``DISPLAY_NAME`` is the name printed in reports when the registered identifier cannot
      be used (``nDCG_FC`` prints as ``nDCG|FC``).
    * Aggregation is a NaN-skipping weighted mean (`WeightedMeanAgg`).
    """

    #: ir_measures fills a DEFAULT row for every (measure, qrels query) pair a provider did not
    #: report when several providers share a call. Our kernels already report every query they
    #: define (missing-from-run queries as 0), so a filler means "not defined at this level"
    #: (e.g. step topics under StepNDCG(average='query')): NaN, skipped by the aggregate.
    DEFAULT = float("nan")
    DISPLAY_NAME: str | None = None
    SUPPORTED_PARAMS: dict[str, ParamInfo] = common_params()
    #: True for reteco-measures' own measures; used to make registration idempotent.
    _RETECO = True

    def aggregator(self) -> Agg:
        return WeightedMeanAgg(empty=self.empty_value())

    def empty_value(self) -> float:
        """Aggregate reported when no query is defined for the measure (NaN by default)."""
        return float("nan")

    def __call__(self, **kwargs: Any) -> ir_measures.Measure:
        # keep the spelling the measure was reached by (``TP`` for ``TemporalPrecision``) so it
        # prints as the user wrote it; equality and hashing still use the canonical ``repr``
        out = super().__call__(**kwargs)
        written = getattr(self, "_reteco_written", None)
        if written:
            out._reteco_written = written
        return out

    def display(self) -> str:
        """Human-readable name: ``repr`` with the name as written (an alias such as ``TP``) or
        ``DISPLAY_NAME`` substituted."""
        text = repr(self)
        name = getattr(self, "_reteco_written", None) or self.DISPLAY_NAME
        if name:
            text = name + text[len(self.NAME) :]
        return text

    def param(self, name: str, default: Any = None) -> Any:
        """The parameter value, its declared default, or ``default`` (`reteco_measures.measures.params.param`)."""
        return param(self, name, default)


#: name -> measure singleton, for every measure we registered (long names and aliases).
REGISTERED: dict[str, ir_measures.Measure] = {}


def register(measure: ir_measures.Measure, aliases: tuple[str, ...] = ()) -> ir_measures.Measure:
    """Register ``measure`` (and aliases) with ir_measures, idempotently.

    Re-importing or reloading our modules replaces our own earlier entries; a name taken by
    *another* package's measure is an error, never silently overwritten.

    Each alias is its own instance of the measure that remembers its spelling: it is equal to
    the measure (same ``repr``, same results) but prints as written (``TP@10``, not
    ``TemporalPrecision@10``). A module global of the defining module that holds the measure
    under an alias name (``TP = TemporalPrecision``) is rebound to that instance.
    """
    cls = type(measure)
    module = sys.modules.get(cls.__module__)
    if not cls.__doc__:  # the definition is the module's docstring: make help(rm.TC) show it
        cls.__doc__ = getattr(module, "__doc__", None)
    registry = ir_measures.measures.registry
    instances = {measure.NAME: measure}
    for alias in aliases:
        spelled = type(measure)(**measure.params)
        spelled._reteco_written = alias
        instances[alias] = spelled
        if module is not None and getattr(module, alias, None) is measure:
            setattr(module, alias, spelled)
    for name, inst in instances.items():
        existing = registry.get(name)
        if existing is not None and not getattr(existing, "_RETECO", False):
            raise ValueError(f"measure name {name!r} is already registered by another package")
        registry[name] = inst
        REGISTERED[name] = inst
    # make the measure reachable as ir_measures.<Name> like the built-ins
    for name, inst in instances.items():
        existing = getattr(ir_measures, name, None)
        if existing is None or getattr(existing, "_RETECO", False):
            setattr(ir_measures, name, inst)
    return measure
