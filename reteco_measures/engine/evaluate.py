"""In-memory evaluation: one preparation of the inputs, then per-query values and aggregates.

`prepare` parses the measures, reads the inputs once, checks and aligns their query ids
and ranks the run once under the tie policy; `iter_prepared` computes per-query values
(our measures through `PROVIDER`, the standard ones
through `reteco_measures.providers.native`: native kernels where verified, pytrec_eval
for the rest); `calc_prepared` aggregates them with
`aggregate` (the one summation of the package).

Before anything is computed the inputs are checked, so that a number is either right or loudly
refused:

* a cutoff below 1 (``nDCG@0``) is a ``ValueError`` (pytrec_eval would abort the interpreter);
* an empty run or qrels warns (`EmptyInputWarning`);
* a run and qrels (or topics, labels) that share no query id, or fewer than a known id-form
  mapping would give, warn (`QueryIdMismatchWarning`);
  ``query_ids="normalize"`` maps them (`reteco_measures.query_ids`);
* ``exclude_label`` (e.g. ``-100``): run documents judged with that label for their query are
  removed from the run before anything is ranked (`exclude_judged`); by default
  (``None``) such labels are read as pytrec_eval reads them, and a ``-100`` in the qrels gives a
  `DataFormatWarning` note naming the option;
* qrels queries whose labels are all negative reach pytrec_eval with one extra unretrieved
  label-0 judgment, because trec_eval's code sizes its relevance-level table by the largest label
  and crashes (or reads stale memory) when it is negative; the values are trec_eval's for a
  query without relevant documents (all 0), see
  `trec_eval_safe_qrels` (applied by the routing to what
  goes to pytrec_eval only, after a measure's ``gains`` mapping; the native kernels read
  negative labels themselves).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import ir_measures
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from ir_measures import Metric

from ..errors import DataFormatWarning, user_stacklevel
from ..io.convert import as_qrels_frame, as_run_frame
from ..kernels.context import CHECKED_IDS, RANKED_RUN, RankedRun
from ..kernels.ranking import duplicate_pairs, rank_run
from ..kernels.standard import UNIQUE_PAIRS
from ..measures.base import REGISTERED
from ..measures.names import measure_name, parse_measures
from ..measures.params import TIE_BREAKS
from ..providers.native import standard_frame, standard_iter_calc, trec_eval_safe_qrels
from ..providers.reteco import PROVIDER
from ..query_ids import QUERY_ID_MODES, align_query_ids
from ..side import load_labels, load_topics, side_info
from .grouping import warn_unmatched_groups
from .results import aggregate, aggregates, metrics_frame

__all__ = [
    "Prepared", "prepare", "iter_prepared", "calc_prepared", "iter_calc", "calc_aggregate", "evaluate_table",
    "trec_eval_safe_qrels", "check_modes", "qrels_order", "exclude_judged", "EXCLUDED_LABEL",
]

#: the grade ir_datasets (0.6 on) gives the documents BRIGHT excludes from a query's ranking
#: (``excluded_ids`` of the BRIGHT benchmark, Su et al. 2024, https://github.com/xlang-ai/BRIGHT)
EXCLUDED_LABEL = -100


def _pair_keys(query_id: pd.Series, doc_id: pd.Series) -> pa.Array:
    """One string per (query, doc) pair (a NUL byte between the two ids, which neither holds)."""
    q = pa.array(query_id.astype("str").to_numpy(dtype=object), type=pa.large_string())
    d = pa.array(doc_id.astype("str").to_numpy(dtype=object), type=pa.large_string())
    return pc.binary_join_element_wise(q, d, pa.scalar("\x00", pa.large_string()))


def exclude_judged(qrels: pd.DataFrame, run: pd.DataFrame, label: int | None) -> pd.DataFrame:
    """``run`` without the documents the qrels judge ``label`` for that query (``label=None``:
    the run as it is, with a `DataFormatWarning` note when the qrels hold `EXCLUDED_LABEL`).

    BRIGHT's scoring removes each query's excluded documents from the ranking before it computes
    nDCG; ir_datasets keeps them in the qrels with the grade -100, which pytrec_eval reads as a
    non-relevant judged-negative document (it stays in the ranking and takes a rank). The qrels
    themselves are not changed: a negative grade is never relevant and gives no gain."""
    rel = qrels["relevance"].to_numpy()
    if label is None:
        n = int(np.count_nonzero(rel == EXCLUDED_LABEL)) if len(rel) else 0
        if n:
            warnings.warn(
                f"the qrels hold {n} judgment(s) with the label {EXCLUDED_LABEL} (ir_datasets' mark of the documents "
                "BRIGHT excludes from a query's ranking); they are read as pytrec_eval reads them (judged "
                f"non-relevant, ranked). Pass exclude_label={EXCLUDED_LABEL} (command line: --exclude-label "
                f"{EXCLUDED_LABEL}) to remove them from the run first, as BRIGHT's scoring does",
                DataFormatWarning, stacklevel=user_stacklevel())
        return run
    mark = rel == int(label)
    if not mark.any() or run.empty:
        return run
    excluded = qrels.loc[mark]
    drop = np.asarray(pc.is_in(_pair_keys(run["query_id"], run["doc_id"]),
                               value_set=_pair_keys(excluded["query_id"], excluded["doc_id"])), dtype=bool)
    return run[~drop].reset_index(drop=True) if drop.any() else run


def qrels_order(qrels: pd.DataFrame) -> pd.Index:
    """The qrels' query ids in first-appearance order: the canonical row order of the results
    frame (see `reteco_measures.engine.results`)."""
    return pd.Index(pd.unique(qrels["query_id"].to_numpy(dtype=object)), dtype=object)


def check_modes(tie_break: str, query_ids: str) -> None:
    """``ValueError`` for an unknown tie policy or id mode."""
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, not {tie_break!r}")
    if query_ids not in QUERY_ID_MODES:
        raise ValueError(f"query_ids must be one of {QUERY_ID_MODES}, not {query_ids!r}")


class Prepared(NamedTuple):
    """One call's inputs, read, checked and ranked once."""

    measures: list
    ours: list  # measures of our provider
    standard: list  # ir_measures' measures (native kernels / pytrec_eval)
    qrels: pd.DataFrame
    run: pd.DataFrame
    run_standard: Any
    topics: pd.DataFrame | None
    labels: pd.DataFrame | None
    ranked: RankedRun | None  # the ranking made for the standard measures, reused by our provider
    corpus: Sequence[str] | None = None
    tie_break: str = "trec_eval"
    unique_pairs: bool = False  # run_standard holds no repeated (query, doc) pair

    def side(self) -> dict[str, Any]:
        """Extra ``side_info`` entries for our provider: ids checked, the ranking to reuse; for
        the native kernels, the standard run known to hold no repeated pair."""
        return {CHECKED_IDS: True, **({RANKED_RUN: self.ranked} if self.ranked is not None else {}),
                **({UNIQUE_PAIRS: self.run_standard} if self.unique_pairs else {})}


def prepare(measures: Any, qrels: Any, run: Any, *, tie_break: str = "trec_eval", corpus: Sequence[str] | None = None,
            topics: Any = None, labels: Any = None, query_ids: str = "exact",
            exclude_label: int | None = None, ranked: RankedRun | None = None, ids_checked: bool = False) -> Prepared:
    """Parse, read, check and rank once (see the module doc).

    ``ranked``: a ranking of ``run`` made before the call (e.g. by a run contract that ranks the
    run it cleans, `reteco_measures.benchmarks.reteco.contract.ranked_by_contract`): its ``run``
    must be the very DataFrame passed as ``run``, hold no repeated (query, doc) pair, and its
    ``ranked`` be ``rank_run(run, tie_break, corpus=corpus)``. Our measures then read that ranking
    instead of sorting the run again, and the standard measures read its rows in that order (the
    same rows: the values do not change). It is ignored when it was made under another tie
    policy or when the run changes on the way in (ids mapped by ``query_ids='normalize'``,
    documents removed by ``exclude_label``).

    ``ids_checked``: the caller has already checked the run's, the topics' and the labels' query
    ids against these qrels, and mapped them where asked (`reteco_measures.query_ids.align_runs`,
    as ``rm.compare`` does for all its runs before any is evaluated): no second check is made,
    and the ids are used as they are."""
    check_modes(tie_break, query_ids)
    measures = parse_measures(measures)
    qrels_in = as_qrels_frame(qrels)
    run_in = as_run_frame(run, rank=False)  # a file's rank column is never read (ranks come from scores)
    read = run_in
    topics_in = load_topics(topics) if topics is not None else None
    labels_in = load_labels(labels) if labels is not None else None
    # never a silent zero: empty inputs and query ids that do not meet warn (or are mapped)
    if not ids_checked:
        run_in, topics_in, labels_in = align_query_ids(
            qrels_in, run_in, topics=topics_in, labels=labels_in, mode=query_ids
        )
    run_in = exclude_judged(qrels_in, run_in, exclude_label)
    ours = [m for m in measures if m.NAME in REGISTERED]
    standard = [m for m in measures if m.NAME not in REGISTERED]
    given = ranked if ranked is not None and isinstance(run, pd.DataFrame) and ranked.run is run and \
        run_in is read and ranked.tie_break == tie_break else None
    run_standard = run_in
    shared = None
    unique = given is not None or (tie_break != "trec_eval" and bool(standard))  # repeated pairs removed
    if given is not None:
        # the caller's ranking of this very run (no repeated pair): no sort to make here; the
        # standard measures read its rows in trec_eval's order (their kernels then sort nothing)
        order = given.ranked
        if tie_break == "trec_eval":
            run_standard = order[["query_id", "doc_id", "score"]]
        elif standard:
            run_standard = pd.DataFrame({"query_id": order["query_id"], "doc_id": order["doc_id"],
                                         "score": -order["rank"].astype(np.float64)})
        if ours:
            shared = RankedRun(run_in, tie_break, order)
    elif tie_break != "trec_eval" and standard:
        # Standard measures are computed in trec_eval's order (native kernels, pytrec_eval).
        # Re-score the run so that trec_eval's order *is* the requested order: score = -rank.
        # A repeated (query, doc) pair keeps its last score (file order) before ranking, as our
        # provider and pytrec_eval's dictionaries keep it; the run our provider gets is that
        # same run, with this ranking to reuse (the run is sorted once for both).
        dup = duplicate_pairs(run_in, keep="last")
        if dup.any():
            run_in = run_in[~dup].reset_index(drop=True)
        order = rank_run(run_in, tie_break, corpus=corpus)
        run_standard = pd.DataFrame(
            {"query_id": order["query_id"], "doc_id": order["doc_id"], "score": -order["rank"].astype(np.float64)}
        )
        if ours:
            shared = RankedRun(run_in, tie_break, order)
    # the native kernels take the frames; providers.native converts the run to a dict
    # (vectorised) and makes the qrels safe for pytrec_eval only for the measures they do not claim
    return Prepared(measures, ours, standard, qrels_in, run_in, run_standard, topics_in, labels_in,
                    shared, corpus, tie_break, unique)


def _side(p: Prepared):
    return side_info(topics=p.topics, labels=p.labels, corpus=p.corpus, tie_break=p.tie_break, **p.side())


def iter_prepared(p: Prepared) -> list[Metric]:
    """Per-query values of a prepared call: our measures' first, then the standard ones'."""
    results: list[Metric] = []
    with _side(p):
        if p.ours:
            results.extend(PROVIDER.iter_calc(p.ours, p.qrels, p.run))
        if p.standard and not p.qrels.empty:
            results.extend(standard_iter_calc(p.standard, p.qrels, p.run_standard))
    return results


def values_prepared(p: Prepared) -> pd.DataFrame:
    """The per-query values of a prepared call as one frame ``query_id, measure, value[, weight]``
    (the values `iter_prepared` gives, without a ``Metric`` object per value): our measures'
    rows first, then the standard ones'."""
    parts: list[pd.DataFrame] = []
    with _side(p):
        if p.ours:
            parts.append(metrics_frame(PROVIDER.iter_calc(p.ours, p.qrels, p.run)))
        if p.standard and not p.qrels.empty:
            parts.append(standard_frame(p.standard, p.qrels, p.run_standard))
    if not parts:
        return pd.DataFrame({"query_id": pd.Series([], dtype=object), "measure": pd.Series([], dtype=object),
                             "value": pd.Series([], dtype=np.float64)})
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def calc_prepared(p: Prepared) -> dict[ir_measures.Measure, float]:
    """Aggregate of every measure of a prepared call: `aggregate` over the
    per-query values in canonical order (the qrels' order: for the native kernels and our
    kernels, the order they report in, so the sums are theirs)."""
    parts: list[pd.DataFrame] = []
    with _side(p):
        if p.ours:
            parts.append(metrics_frame(PROVIDER.iter_calc(p.ours, p.qrels, p.run)))
        if p.standard and not p.qrels.empty:
            parts.append(standard_frame(p.standard, p.qrels, p.run_standard))
    values = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0] if parts else None
    if values is None or values.empty:
        values = pd.DataFrame({"query_id": pd.Series([], dtype=object), "measure": pd.Series([], dtype=object),
                               "value": pd.Series([], dtype=np.float64)})
    frame = metrics_frame(values, measures=p.measures, order=qrels_order(p.qrels))
    return aggregates(frame, p.measures)


def iter_calc(measures: Any, qrels: Any, run: Any, *, topics: Any = None, labels: Any = None,
              corpus: Sequence[str] | None = None, tie_break: str = "trec_eval", query_ids: str = "exact",
              exclude_label: int | None = None) -> list[Metric]:
    """Per-query values in memory (``rm.iter_calc`` without ``stream`` or Dask)."""
    p = prepare(measures, qrels, run, tie_break=tie_break, corpus=corpus, topics=topics, labels=labels,
                query_ids=query_ids, exclude_label=exclude_label)
    return iter_prepared(p)


def calc_aggregate(measures: Any, qrels: Any, run: Any, *, topics: Any = None, labels: Any = None,
                   corpus: Sequence[str] | None = None, tie_break: str = "trec_eval", query_ids: str = "exact",
                   exclude_label: int | None = None) -> dict[ir_measures.Measure, float]:
    """Aggregates in memory (``rm.calc_aggregate`` without ``stream`` or Dask)."""
    p = prepare(measures, qrels, run, tie_break=tie_break, corpus=corpus, topics=topics, labels=labels,
                query_ids=query_ids, exclude_label=exclude_label)
    return calc_prepared(p)


def evaluate_table(metrics: Iterable[Metric] | pd.DataFrame, measures: list, *, order: Any,
                   topics: pd.DataFrame | None, by: list[str], names: str = "human") -> pd.DataFrame:
    """The table of ``rm.evaluate``: ``[*by, measure, value, n]`` from per-query values (see
    `reteco_measures.evaluate`); queries grouped as ``(none)`` are counted in a
    `GroupMismatchWarning`."""
    machine = names == "machine"
    labels = [measure_name(m, machine=machine) for m in measures]
    frame = metrics_frame(metrics, measures=measures, label=lambda m: measure_name(m, machine=machine), order=order,
                          topics=topics, by=by)
    if by:
        warn_unmatched_groups(frame[["query_id", *by]], by, topics)
    table = aggregate(frame, by, measures=labels, margins=bool(by))
    return table[[*by, "measure", "value", "n"]]
