"""`StatOptions`: the statistical settings of a comparison or a leaderboard, as one value.

``rm.compare``, ``stats.compare_frame`` and ``rm.leaderboard`` take the paired test, the
multiple-testing correction, the significance level, the confidence level of the bootstrap
intervals, the number of resamples and the seed either as one value,
``stats=StatOptions(test="wilcoxon", n_resamples=5_000)``, or as the six keywords of the same
names (``test="wilcoxon", n_resamples=5_000``); the keywords fold into a `StatOptions`. Giving
both is a ``TypeError``: one call has one set of settings.

::

    import reteco_measures as rm

    strict = rm.StatOptions(test="randomization", correction="bonferroni", alpha=0.01)
    rm.compare(runs, qrels, ["nDCG@10"], stats=strict)
    rm.leaderboard("reteco-1a", runs, data="/data", stats=strict)
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from .tests import CORRECTIONS, TESTS

__all__ = ["StatOptions", "KeywordDefault", "KeywordDefaults", "resolve_stat_options", "STAT_KEYWORDS"]


@dataclass(frozen=True)
class StatOptions:
    """The statistical settings of ``rm.compare`` and ``rm.leaderboard``.

    Attributes:
        test: the paired test: ``'t'`` (default), ``'wilcoxon'``, ``'randomization'``,
            ``'bootstrap'`` or ``'tukey'`` (`reteco_measures.stats.tests`).
        correction: the multiple-testing correction over the pairs of a measure: ``'holm'``
            (default), ``'bonferroni'``, ``'bh'`` (Benjamini-Hochberg), or None / ``'none'``.
        alpha: the significance level the adjusted p-values are compared with (default 0.05).
        ci: the confidence level of the percentile bootstrap intervals (default 0.95).
        n_resamples: bootstrap / randomization resamples (default 10,000; a leaderboard given
            no settings uses 2,000).
        seed: the seed of the resampling; the same seed gives the same numbers (default 0).

    Raises:
        ValueError: an unknown test or correction, ``alpha`` or ``ci`` outside (0, 1), fewer
            than one resample.
    """

    test: str = "t"
    correction: str | None = "holm"
    alpha: float = 0.05
    ci: float = 0.95
    n_resamples: int = 10_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise ValueError(f"test must be one of {TESTS}, not {self.test!r}")
        if self.correction not in CORRECTIONS and self.correction != "none":
            raise ValueError(f"correction must be one of {CORRECTIONS}, not {self.correction!r}")
        if not 0 < self.alpha < 1 or not 0 < self.ci < 1:
            raise ValueError("alpha and ci must be in (0, 1)")
        if self.n_resamples < 1:
            raise ValueError("n_resamples must be at least 1")

    def as_dict(self) -> dict[str, Any]:
        """``{test, correction, alpha, ci, n_resamples, seed}``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: the keywords that fold into a `StatOptions`
STAT_KEYWORDS = tuple(f.name for f in fields(StatOptions))


class KeywordDefault:
    """The default of a statistics keyword left out of a call: it shows as the value it stands for
    (``inspect.signature(rm.compare)`` reads ``test='t'``) and tells `resolve_stat_options` that
    the keyword was not given."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


class KeywordDefaults:
    """One `KeywordDefault` per statistics keyword (``.test``, ``.correction``, ...) for a function's
    signature, and the `StatOptions` they stand for (``.options``)::

        _STATS = KeywordDefaults(StatOptions(n_resamples=2_000))

        def leaderboard(..., test: str = _STATS.test, ..., stats: StatOptions | None = None): ...
    """

    def __init__(self, options: StatOptions) -> None:
        self.options = options
        for name in STAT_KEYWORDS:
            setattr(self, name, KeywordDefault(getattr(options, name)))

    def resolve(self, stats: StatOptions | None, **keywords: Any) -> StatOptions:
        """`resolve_stat_options` with these defaults."""
        return resolve_stat_options(stats, self.options, **keywords)


def resolve_stat_options(stats: StatOptions | None, defaults: StatOptions, **keywords: Any) -> StatOptions:
    """The `StatOptions` of a call: ``stats`` as given, or ``defaults`` with the keywords the
    caller gave (those not left at their `KeywordDefault`).

    Raises:
        TypeError: ``stats`` and one of the keywords both given, or ``stats`` not a `StatOptions`.
        ValueError: an invalid setting (see `StatOptions`).
    """
    unknown = sorted(set(keywords) - set(STAT_KEYWORDS))
    if unknown:
        raise TypeError(f"unknown statistics keyword(s) {unknown}; known: {list(STAT_KEYWORDS)}")
    given = {k: v for k, v in keywords.items() if not isinstance(v, KeywordDefault)}
    if stats is None:
        return replace(defaults, **given) if given else defaults
    if not isinstance(stats, StatOptions):
        raise TypeError(f"stats must be a StatOptions, not {type(stats).__name__}")
    if given:
        raise TypeError(f"give the statistical settings either as stats=StatOptions(...) or as keywords, not "
                        f"both (also given: {', '.join(sorted(given))})")
    return stats
