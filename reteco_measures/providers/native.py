"""Routing of the standard measures to the native kernels, and the switch for plain ir_measures.

``rm.calc_aggregate`` / ``iter_calc`` / ``evaluate`` (and everything built on them) compute nDCG,
AP, P, R and RR with `reteco_measures.kernels.standard` whenever the measure's parameters are
ones the kernels are verified for; every other standard measure goes to ir_measures (pytrec_eval)
in the same call. A plain ``ir_measures.calc_aggregate`` call keeps pytrec_eval unless the user
opts in with `use_native_kernels`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric
from ir_measures.providers.base import Evaluator, Provider

from ..errors import DataFormatError
from ..io.convert import as_qrels_frame, as_run_frame, is_source, qrels_to_dict, run_to_dict
from ..kernels import standard
from ..kernels.ranking import duplicate_pairs
from . import gdeval  # ERR@k for any query id, without replacing ir_measures' provider

__all__ = [
    "use_native_kernels",
    "native_enabled",
    "standard_calc_aggregate",
    "standard_iter_calc",
    "standard_frame",
    "trec_eval_safe_qrels",
    "NativeStandardProvider",
    "NATIVE_PROVIDER",
]

_STATE = {"api": True, "ir_measures": False}


class use_native_kernels:  # noqa: N801 - used like a function
    """Switch the native kernels for nDCG, AP, P, R, RR on or off.

    ``scope='ir_measures'`` (default): plain ``ir_measures.calc_aggregate`` / ``iter_calc`` calls
    (and PyTerrier experiments) use the native kernels for the measures they support (off by
    default: pytrec_eval stays the reference unless you opt in). ``scope='api'``: ``rm.*``
    functions (on by default). ``scope='all'``: both. Works as a call (the setting stays) or as a
    context manager (the previous setting is restored on exit)::

        rm.use_native_kernels()                     # plain ir_measures calls go native from now on
        with rm.use_native_kernels(False, scope="api"):
            rm.calc_aggregate(["nDCG@10"], qrels, run)  # pytrec_eval for this block
    """

    def __init__(self, enabled: bool = True, *, scope: str = "ir_measures"):
        if scope not in ("ir_measures", "api", "all"):
            raise ValueError(f"scope must be 'ir_measures', 'api' or 'all', not {scope!r}")
        self._previous = dict(_STATE)
        keys = ["api", "ir_measures"] if scope == "all" else [scope]
        for key in keys:
            _STATE[key] = bool(enabled)
        _sync_pipeline()

    def __enter__(self) -> use_native_kernels:
        return self

    def __exit__(self, *exc: object) -> None:
        _STATE.update(self._previous)
        _sync_pipeline()


def native_enabled(scope: str = "api") -> bool:
    """Whether the native kernels are on for ``scope`` (``'api'`` or ``'ir_measures'``)."""
    return _STATE[scope]


def _split(measures: list[ir_measures.Measure]) -> tuple[list, list]:
    if not _STATE["api"]:
        return [], list(measures)
    return standard.split_measures(measures)


#: ranks up to this depth are exact as single-precision scores (trec_eval compares ``float``)
_EXACT_RANKS = 1 << 24


def provider_depth(measures: Iterable[ir_measures.Measure]) -> int | None:
    """How many top rows of each query a fallback provider needs for ``measures``: the largest
    cutoff; None (all rows) when a measure has no cutoff or ranks only judged documents
    (``judged_only=True`` drops rows before the cutoff applies)."""
    depth = 0
    for m in measures:
        cutoff = m.params.get("cutoff", ir_measures.providers.base.NOT_PROVIDED)
        if not isinstance(cutoff, (int, np.integer)) or isinstance(cutoff, bool) or m.params.get("judged_only"):
            return None
        depth = max(depth, int(cutoff))
    return depth or None


def _pytrec_eval_only(measures: Iterable[ir_measures.Measure]) -> bool:
    """True when pytrec_eval (whose order is trec_eval's) computes every one of ``measures``."""
    pipeline = [p for p in ir_measures.DefaultPipeline.providers
                if getattr(p, "NAME", None) != NativeStandardProvider.NAME]
    for m in measures:
        prov = next((p for p in pipeline if _claims(p, m)), None)
        if getattr(prov, "NAME", None) != "pytrec_eval":
            return False
    return True


def _claims(provider: Provider, measure: ir_measures.Measure) -> bool:
    try:
        return bool(provider.supports(measure)) and bool(provider.is_available())
    except Exception:  # noqa: BLE001 - a provider that cannot judge the measure does not claim it
        return False


def provider_run(run: Any, depth: int | None, measures: Iterable[ir_measures.Measure] = ()) -> Any:
    """The run a fallback provider gets (``{query: {doc: score}}``): each query's top ``depth``
    rows in trec_eval's order (float32 score descending, ties by doc id descending; a repeated
    pair keeps its last score), re-scored ``-rank`` so that every provider's own sort, whatever
    its tie rule (MS MARCO's and ir_measures' ``judged`` break ties by doc id *ascending*),
    reproduces that order. When pytrec_eval computes all of ``measures`` (it ranks by trec_eval's
    rule itself) and every row is needed, the run is handed over as it is. Runs with NaN
    scores, and queries deeper than 2**24 rows (where ``-rank`` would tie in single precision),
    are handed over whole, as they are."""
    if not isinstance(run, pd.DataFrame):
        try:
            run = as_run_frame(run)
        except DataFormatError:
            return run  # non-finite scores: pytrec_eval's own reading, as documented
    frame = run[["query_id", "doc_id", "score"]]
    if len(frame) == 0:
        return {}
    if depth is None and measures and _pytrec_eval_only(measures):
        return run_to_dict(as_run_frame(frame))
    try:
        qids, docs, ranks = standard.top_rows(frame, depth)
    except standard.NativeFallback:  # NaN scores
        return run_to_dict(as_run_frame(frame))
    if len(ranks) and int(ranks.max()) > _EXACT_RANKS:
        return run_to_dict(as_run_frame(frame))
    return run_to_dict(pd.DataFrame({"query_id": pd.array(qids, dtype="str"), "doc_id": pd.array(docs, dtype="str"),
                                     "score": -ranks.astype(np.float64)}))


def trec_eval_safe_qrels(qrels: pd.DataFrame, gains: dict | None = None) -> pd.DataFrame:
    """Qrels that pytrec_eval can evaluate without crashing or hanging, with trec_eval's values.

    The check reads exactly what pytrec_eval receives: a repeated (query, doc) judgment keeps its
    *last* label (pytrec_eval takes a dictionary), so the earlier ones are dropped first (a
    ``0`` then ``-1`` made a query all-negative behind a check that saw the ``0``).

    trec_eval sizes its per-query table of relevance levels by the query's largest label; when
    every label of a query is negative (TREC Web qrels use -2) that size is zero or negative and
    the process crashes, hangs or reads stale memory. By trec_eval's rules a negative label is
    "in the pool, not judged": it is never relevant, gives no nDCG gain and is not counted in
    ``num_rel``. Such a query therefore has no relevant document: nDCG, P, AP, R, RR (every
    measure of relevant documents) are 0 on it. Each such query gets one extra label-0 judgment
    of a document no run retrieves, which keeps all of those rules and gives pytrec_eval a valid
    table. Other queries are untouched.

    ``gains``: the ``gains`` mapping of an nDCG measure, which ir_measures applies to the labels
    *before* pytrec_eval sees them: a query is all-negative when its *mapped* labels are, and the
    extra judgment gets a label the mapping sends to 0 (not relevant), so that it changes nothing
    (TREC's ``nDCG(gains={-2: 5, -1: 2, 0: 1})`` makes a -1/-2 query an ordinary one). When no
    label maps to 0 the qrels are returned without the extra judgment: map the labels first and
    pass ``gains=None`` (as `standard_calc_aggregate` does for every nDCG with ``gains``).
    """
    if qrels.empty:
        return qrels
    dup = duplicate_pairs(qrels, keep="last")
    if dup.any():
        qrels = qrels[~dup].reset_index(drop=True)
    rel = qrels["relevance"].to_numpy()
    placeholder = 0
    if gains:
        rel = _mapped(rel, gains)
        if gains.get(0, 0) != 0:
            zero = [k for k, v in gains.items() if v == 0]
            if not zero:
                return qrels
            placeholder = zero[0]
    if rel.min() >= 0:
        return qrels
    top = pd.Series(rel).groupby(qrels["query_id"].to_numpy(), sort=False).max()
    bad = top.index[top.to_numpy() < 0]
    if len(bad) == 0:
        return qrels
    extra = pd.DataFrame(
        {"query_id": pd.Series(bad, dtype="str"), "doc_id": "<reteco-measures:unretrieved>", "relevance": placeholder}
    )
    return pd.concat([qrels[["query_id", "doc_id", "relevance"]], extra], ignore_index=True)


def _mapped(rel: np.ndarray, gains: dict) -> np.ndarray:
    """Labels after a ``gains`` mapping (labels it does not name stay as they are)."""
    uniq, inv = np.unique(rel, return_inverse=True)
    return np.array([gains.get(int(v), int(v)) for v in uniq.tolist()], dtype=np.int64)[inv.ravel()]


def _gains_of(measure: ir_measures.Measure) -> dict | None:
    gains = measure.params.get("gains") if measure.NAME == "nDCG" else None
    return gains if isinstance(gains, dict) else None


def _restore(part: Any, back: dict) -> Any:
    """A provider's results with the measures it was given replaced by the caller's ones."""
    if not back:
        return part
    if isinstance(part, dict):
        return {back.get(m, m): v for m, v in part.items()}
    if isinstance(part, pd.DataFrame):
        col = np.empty(len(part), dtype=object)
        col[:] = [back.get(m, m) for m in part["measure"].tolist()]
        return part.assign(measure=col)
    return [Metric(m.query_id, back.get(m.measure, m.measure), m.value) for m in part]


def _routed(measures: Iterable[ir_measures.Measure], qrels: Any, run: Any, native_fn, ir_fn) -> list:
    """The results of ``native_fn`` for the measures the kernels claim and of ``ir_fn``
    (ir_measures) for the others, as ``[native results, ir_measures results...]``; everything
    goes to ``ir_fn`` when the kernels raise `NativeFallback`
    (raised by the call itself: ``native_fn`` computes before it returns).

    The native kernels take the qrels as they are (a negative label is "not judged"; gains are
    mapped first). ir_measures (other providers, pytrec_eval) gets:

    * the run as `provider_run`: dicts, each query's top rows only (`provider_depth`), ranked in
      trec_eval's order and re-scored so that the provider's own tie rule cannot change it;
    * the qrels as dicts, after `trec_eval_safe_qrels`, per ``gains`` mapping: an nDCG with
      ``gains`` gets its labels mapped here and is computed as the same nDCG without ``gains``
      (what ir_measures does before calling pytrec_eval), so the guard sees the labels
      pytrec_eval sees; its results carry the original measure."""
    native, other = _split(list(measures))
    parts = []
    if native:
        try:
            parts.append(native_fn(native, qrels, run))
        except standard.NativeFallback:
            other = native + other
    if other:
        frame = qrels if isinstance(qrels, pd.DataFrame) else as_qrels_frame(qrels)
        groups: dict[Any, list] = {}
        for m in other:
            gains = _gains_of(m)
            groups.setdefault(tuple(sorted(gains.items())) if gains else None, []).append(m)
        run_in = provider_run(run, provider_depth(other), other)
        for key, group in groups.items():
            back: dict = {}
            q = frame
            if key is not None:
                q = frame[["query_id", "doc_id", "relevance"]].copy()
                if len(q):
                    q["relevance"] = _mapped(q["relevance"].to_numpy(), dict(key))
                plain = []
                for m in group:
                    stripped = type(m)(**{k: v for k, v in m.params.items() if k != "gains"})
                    back[stripped] = m
                    plain.append(stripped)
                group = plain
            parts.append(_restore(ir_fn(group, qrels_to_dict(trec_eval_safe_qrels(q)), run_in), back))
    return parts


def standard_calc_aggregate(measures: Iterable[ir_measures.Measure], qrels: Any, run: Any) -> dict:
    """``ir_measures.calc_aggregate`` for standard measures: native kernels where verified (mean
    over the qrels' queries, missing ones 0, as ir_measures), ir_measures for the rest."""
    result: dict = {}
    for part in _routed(measures, qrels, run, standard.aggregate, gdeval.pipeline().calc_aggregate):
        result.update(part)
    return result


def standard_iter_calc(measures: Iterable[ir_measures.Measure], qrels: Any, run: Any) -> list[Metric]:
    """``ir_measures.iter_calc`` for standard measures, routed as `standard_calc_aggregate`;
    per-query values are plain floats."""
    results: list[Metric] = []
    for part in _routed(measures, qrels, run, standard.iter_metrics, gdeval.pipeline().iter_calc):
        results.extend(part)
    return results


def _ir_frame(measures: list[ir_measures.Measure], qrels: Any, run: Any) -> pd.DataFrame:
    """``ir_measures.iter_calc`` as a frame ``query_id, measure, value`` (in its order)."""
    metrics = list(gdeval.pipeline().iter_calc(measures, qrels, run))
    col = np.empty(len(metrics), dtype=object)
    col[:] = [m.measure for m in metrics]
    return pd.DataFrame({"query_id": np.array([str(m.query_id) for m in metrics], dtype=object), "measure": col,
                         "value": np.array([float(m.value) for m in metrics], dtype=np.float64)})


def standard_frame(measures: Iterable[ir_measures.Measure], qrels: Any, run: Any) -> pd.DataFrame:
    """Per-query values of standard measures as a frame ``query_id, measure, value`` (measure
    objects), routed as `standard_calc_aggregate`: the native kernels' values in the
    qrels' query order, then ir_measures' in its order."""
    parts = _routed(measures, qrels, run, standard.per_query_frame, _ir_frame)
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0] if parts else _ir_frame([], qrels, [])


# ------------------------------------------------------------------------------------------
# the opt-in provider for plain ir_measures calls


class _NativeEvaluator(Evaluator):
    def __init__(self, measures: Iterable[ir_measures.Measure], qrels: Any):
        self.qrels_frame = as_qrels_frame(qrels)
        measures = list(measures)
        super().__init__(measures, set(self.qrels_frame["query_id"].tolist()))

    def _iter_calc(self, run: Any) -> Iterator[Metric]:
        try:
            frame = as_run_frame(run)
        except DataFormatError:
            if is_source(run):  # a run file with bad lines: its reader's error stands
                raise
            # scores that are not finite numbers (NaN, ±inf): pytrec_eval's own reading of them,
            # as without the native kernels (the documented fallback)
            yield from self._pytrec_eval(run)
            return
        try:
            yield from standard.iter_metrics(self.measures, self.qrels_frame, frame)
        except standard.NativeFallback:
            yield from self._pytrec_eval(provider_run(frame, provider_depth(self.measures), self.measures))

    def _pytrec_eval(self, run: Any) -> Iterator[Metric]:
        """The measures through ir_measures' other providers (pytrec_eval first; ``RR@k`` and
        ``Judged@k``, which pytrec_eval lacks, through the next provider that has them)."""
        pipeline = [p for p in ir_measures.DefaultPipeline.providers
                    if getattr(p, "NAME", None) != NativeStandardProvider.NAME]
        qrels = qrels_to_dict(trec_eval_safe_qrels(self.qrels_frame))
        groups: dict[str, tuple[Provider, list]] = {}
        for m in self.measures:
            prov = next(p for p in pipeline if p.supports(m) and p.is_available())
            groups.setdefault(prov.NAME, (prov, []))[1].append(m)
        for prov, ms in groups.values():
            yield from prov.evaluator(ms, qrels).iter_calc(run)


class NativeStandardProvider(Provider):
    """ir_measures provider of the native kernels; claims measures only after
    `use_native_kernels` (scope ``'ir_measures'``)."""

    NAME = "reteco_native"
    #: what the kernels declare (`reteco_measures.kernels.standard.SUPPORTED_MEASURES`)
    SUPPORTED_MEASURES = standard.SUPPORTED_MEASURES

    def supports(self, measure: ir_measures.Measure) -> bool:
        return _STATE["ir_measures"] and standard.supports(measure)

    def _evaluator(self, measures: Iterable[ir_measures.Measure], qrels: Any) -> Evaluator:
        return _NativeEvaluator(measures, qrels)


NATIVE_PROVIDER = NativeStandardProvider()


def _sync_pipeline() -> None:
    """Put `NATIVE_PROVIDER` in ir_measures' default pipeline (before pytrec_eval) while
    the ir_measures scope is on; take it out otherwise."""
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) != NativeStandardProvider.NAME]
    if _STATE["ir_measures"]:
        ir_measures.providers.registry[NATIVE_PROVIDER.NAME] = NATIVE_PROVIDER
        names = [getattr(p, "NAME", None) for p in pipeline]
        at = names.index("pytrec_eval") if "pytrec_eval" in names else 0
        pipeline.insert(at, NATIVE_PROVIDER)



