"""Measure definitions of reteco-measures (one module per measure).

Importing this package registers every measure (long name and alias) with ir_measures.
"""

from .base import REGISTERED, RetecoMeasure, WeightedMeanAgg, WeightedValue
from .likert import Likert
from .ndcg_fc import nDCG_FC
from .spoken_macro_ndcg import SpokenMacroNDCG
from .step_ndcg import StepNDCG
from .temporal_coverage import TC, TemporalCoverage
from .temporal_precision import TP, TemporalPrecision
from .temporal_relevance import TR, TemporalRelevance
from .turn_ndcg import TurnNDCG

__all__ = [
    "REGISTERED",
    "RetecoMeasure",
    "WeightedMeanAgg",
    "WeightedValue",
    "Likert",
    "nDCG_FC",
    "SpokenMacroNDCG",
    "StepNDCG",
    "TC",
    "TemporalCoverage",
    "TP",
    "TemporalPrecision",
    "TR",
    "TemporalRelevance",
    "TurnNDCG",
]
