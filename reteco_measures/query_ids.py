"""Query-id forms: detect a run and qrels that name the same queries differently, and map them.

The same query is written in several forms by the files a participant meets:

* RECOR turns as ``<conversation_id>_turn_<t>`` (release, runs) or ``<conversation_id>#turn<t>``
  (the organisers' public sample qrels);
* domain-qualified ``<domain>/<id>`` (all-domains datasets) or plain ``<id>`` (one domain);
* TREC iKAT turns as ``<topic>-<subtree>_<turn>`` (``9-1_3``: the organisers' topics, runs and
  NIST qrels) or ``<topic>-<subtree>-<turn>`` (``9-1-3``: copies of the qrels that write the
  last separator as a hyphen);
* numbers as text: ``001`` or ``1`` (a spreadsheet or a numeric column drops leading zeros,
  ``1.0`` where it went through floating point).

Compared as they are, such a pair shares no query id and a correct run scores 0. This module finds
that case (`check_query_ids` warns with a `QueryIdMismatchWarning`
showing one id of each side) and, when asked (``query_ids="normalize"``), maps each id of the run
(topics, labels) to the reference id (the qrels') that has the same *canonical form* — only where
exactly one reference id has it; an ambiguous id (the same plain id in two domains) is left alone
and reported.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .errors import (
    EmptyInputWarning,
    InputMismatchError,
    QueryIdFormWarning,
    QueryIdMismatchWarning,
    user_stacklevel,
)

__all__ = [
    "QUERY_ID_MODES",
    "NORMALIZE_HINT",
    "canonical_query_ids",
    "IdMatch",
    "match_query_ids",
    "map_query_ids",
    "check_query_ids",
    "check_not_empty",
    "Aligned",
    "align_query_ids",
    "ON_MISMATCH",
    "SINGLE_RUN_ON_MISMATCH",
    "check_on_mismatch",
    "mismatch_policy",
    "AlignedRuns",
    "align_runs",
]

#: ``"exact"`` (default): ids are compared as written, a mismatch warns; ``"normalize"``: ids of
#: the run, topics and labels are mapped to the qrels' form of the same query.
QUERY_ID_MODES: tuple[str, ...] = ("exact", "normalize")

#: what a multi-run entry point (``rm.compare``, ``rm.leaderboard``) does with inputs that do not
#: match: ``"error"`` (default) raises `InputMismatchError`,
#: ``"warn"`` gives the warning and computes the numbers anyway
ON_MISMATCH: tuple[str, ...] = ("error", "warn")

#: what a single-run function (``rm.calc_aggregate``, ``rm.iter_calc``, ``rm.evaluate``) does with
#: inputs that do not match: ``"refuse_forms"`` (default) raises `InputMismatchError` when
#: the ids differ only in a known form (`QueryIdFormWarning`: a number that ``query_ids="normalize"``
#: would make right) and warns on the other cases, as ``ir_measures`` would compute them;
#: ``"error"`` refuses every case; ``"warn"`` warns on every case and computes the numbers
SINGLE_RUN_ON_MISMATCH: tuple[str, ...] = ("refuse_forms", "error", "warn")

#: how to switch normalisation on, for messages
NORMALIZE_HINT = "pass query_ids='normalize' (command line: --normalize-ids)"


def canonical_query_ids(ids: Iterable[str] | pd.Series) -> pd.Series:
    """The canonical form of each id: the part after the last ``/``, ``#turn<t>`` read as
    ``_turn_<t>`` (turn number without leading zeros), an iKAT turn ``<n>-<n>-<n>`` read as
    ``<n>-<n>_<n>``, and an all-digit id (or ``<digits>.0``) without leading zeros. Vectorised
    over a Series of str."""
    s = pd.Series(ids, dtype="str") if not isinstance(ids, pd.Series) else ids.astype("str")
    s = s.str.replace(r"^.*/", "", regex=True)
    s = s.str.replace(r"#turn_?0*(\d)", r"_turn_\1", regex=True)
    s = s.str.replace(r"_turn_0+(\d)", r"_turn_\1", regex=True)
    s = s.str.replace(r"^(\d+-\d+)-(\d+)$", r"\1_\2", regex=True)
    s = s.str.replace(r"^(\d+)\.0*$", r"\1", regex=True)
    s = s.str.replace(r"^0+(\d)", r"\1", regex=True)
    return s


@dataclass(frozen=True)
class IdMatch:
    """How the query ids of one side (``ids``) meet those of a reference side (``reference``).

    Attributes:
        n_ids: distinct ids of the side.
        n_reference: distinct ids of the reference side.
        n_exact: of those, ids present in the reference as written.
        n_normalized: ids that match the reference as written or through their canonical form.
        mapping: id -> reference id for every id matched only through its canonical form.
        ambiguous: ids whose canonical form names several reference ids (never mapped).
        example: one id of the side (a mappable one when there is one).
        reference_example: one reference id (the target of ``example`` when mappable).
    """

    n_ids: int
    n_reference: int
    n_exact: int
    n_normalized: int
    mapping: dict[str, str]
    ambiguous: tuple[str, ...]
    example: str | None
    reference_example: str | None


def _distinct(values: Iterable[str] | pd.Series) -> pd.Index:
    s = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype="str")
    return pd.Index(s.unique()).astype("str")


def _isin(side: pd.Index, ref: pd.Index) -> np.ndarray:
    """``side.isin(ref)`` for string indexes by arrow's hash lookup (pandas' isin on arrow-backed
    strings converts ``ref`` one Python object at a time: ~30 times slower on 1,000 ids)."""
    try:
        arr = pa.array(side.to_numpy(dtype=object), type=pa.large_string(), from_pandas=True)
        value_set = pa.array(ref.to_numpy(dtype=object), type=pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return np.asarray(side.isin(ref))
    return pc.is_in(arr, value_set=value_set).to_numpy(zero_copy_only=False).astype(bool)


def match_query_ids(ids: Iterable[str] | pd.Series, reference: Iterable[str] | pd.Series) -> IdMatch:
    """Compare the distinct ids of one side with those of the reference side."""
    side = _distinct(ids)
    ref = _distinct(reference)
    exact = _isin(side, ref)
    rest = side[~exact]
    mapping: dict[str, str] = {}
    ambiguous: tuple[str, ...] = ()
    if len(rest) and len(ref):
        ref_canon = canonical_query_ids(pd.Series(ref, dtype="str"))
        counts = ref_canon.value_counts()
        unique_canon = pd.Series(ref.to_numpy(), index=ref_canon.to_numpy())[
            ref_canon.map(counts).to_numpy() == 1
        ]
        rest_canon = canonical_query_ids(pd.Series(rest, dtype="str"))
        target = rest_canon.map(unique_canon)
        ok = target.notna().to_numpy()
        mapping = dict(zip(np.asarray(rest)[ok].tolist(), target[ok].astype(str).tolist()))
        amb = rest_canon.map(counts).fillna(0).to_numpy() > 1
        ambiguous = tuple(np.asarray(rest)[amb].tolist())
    if mapping:
        example, reference_example = next(iter(mapping.items()))
    else:
        example = str(side[0]) if len(side) else None
        reference_example = str(ref[0]) if len(ref) else None
    return IdMatch(
        n_ids=len(side),
        n_reference=len(ref),
        n_exact=int(exact.sum()),
        n_normalized=int(exact.sum()) + len(mapping),
        mapping=mapping,
        ambiguous=ambiguous,
        example=example,
        reference_example=reference_example,
    )


def map_query_ids(frame: pd.DataFrame, match: IdMatch, column: str = "query_id") -> pd.DataFrame:
    """``frame`` with the ids of ``column`` rewritten by ``match.mapping`` (a copy; unchanged
    when there is nothing to map)."""
    if not match.mapping or frame is None or column not in frame.columns:
        return frame
    out = frame.copy()
    col = out[column].astype("str")
    mapped = col.map(match.mapping)
    out[column] = mapped.where(mapped.notna(), col).astype("str")
    return out


def check_query_ids(
    ids: Iterable[str] | pd.Series,
    reference: Iterable[str] | pd.Series,
    *,
    what: str = "run",
    reference_what: str = "qrels",
    mode: str = "exact",
) -> IdMatch:
    """Compare query ids and warn (`QueryIdMismatchWarning`) when
    ``mode='exact'`` and the sides share no id, or fewer than the canonical forms would give.

    With ``mode='normalize'`` a warning is given only when the sides share no id even after
    normalisation, or some ids are ambiguous. Returns the `IdMatch` (whose ``mapping`` the
    caller applies in ``normalize`` mode). Either side being empty gives no warning here (see
    `check_not_empty`). Every warning points at the first line outside the package.
    """
    if mode not in QUERY_ID_MODES:
        raise ValueError(f"query_ids must be one of {QUERY_ID_MODES}, not {mode!r}")
    match = match_query_ids(ids, reference)
    if match.n_ids == 0 or match.n_reference == 0:
        return match
    pair = f"{what} {match.example!r}, {reference_what} {match.reference_example!r}"
    if mode == "exact":
        if match.n_normalized > match.n_exact:
            head = (
                f"{what} and {reference_what} share no query id"
                if match.n_exact == 0
                else f"only {match.n_exact} of {match.n_ids} {what} query ids are in the {reference_what}"
            )
            warnings.warn(
                f"{head}, but {match.n_normalized} match once the id forms are normalised (e.g. {pair}); "
                f"{NORMALIZE_HINT}",
                QueryIdFormWarning,
                stacklevel=user_stacklevel(),
            )
        elif match.n_exact == 0:
            warnings.warn(
                f"{what} and {reference_what} share no query id (e.g. {pair}); every value would be 0 or "
                f"undefined. Check that the files belong together (and their order: qrels first, then run)",
                QueryIdMismatchWarning,
                stacklevel=user_stacklevel(),
            )
    else:
        if match.n_normalized == 0:
            warnings.warn(
                f"{what} and {reference_what} share no query id, even with normalised id forms (e.g. {pair})",
                QueryIdMismatchWarning,
                stacklevel=user_stacklevel(),
            )
        elif match.ambiguous:
            warnings.warn(
                f"{len(match.ambiguous)} {what} query id(s) name several {reference_what} queries once "
                f"normalised and are left as they are (e.g. {match.ambiguous[0]!r}); use the qualified form",
                QueryIdMismatchWarning,
                stacklevel=user_stacklevel(),
            )
    return match


def check_not_empty(frame: pd.DataFrame, what: str) -> bool:
    """Warn (`EmptyInputWarning`) when ``frame`` has no row (the warning points at the first line
    outside the package)."""
    if len(frame):
        return True
    warnings.warn(
        f"the {what} has no usable row: every value would be 0 or undefined",
        EmptyInputWarning,
        stacklevel=user_stacklevel(),
    )
    return False


class Aligned(NamedTuple):
    """A run, topics and labels whose query ids were checked (and, in ``normalize`` mode, mapped)
    against the qrels."""

    run: pd.DataFrame
    topics: pd.DataFrame | None
    labels: pd.DataFrame | None


def align_query_ids(
    qrels: pd.DataFrame,
    run: pd.DataFrame,
    *,
    topics: pd.DataFrame | None = None,
    labels: pd.DataFrame | None = None,
    mode: str = "exact",
) -> Aligned:
    """Check a run (and topics / labels) against the qrels' query ids in one call, as
    `reteco_measures.calc_aggregate` does: empty inputs and ids that do not meet warn;
    with ``mode='normalize'`` the run's, topics' and labels' ids are rewritten to the qrels' form
    of the same query. All frames have a ``query_id`` column; the inputs are not modified.
    Every warning points at the first line outside the package."""
    if mode not in QUERY_ID_MODES:
        raise ValueError(f"query_ids must be one of {QUERY_ID_MODES}, not {mode!r}")
    check_not_empty(qrels, "qrels")
    check_not_empty(run, "run")
    reference = qrels["query_id"]
    match = check_query_ids(run["query_id"], reference, mode=mode)
    if mode == "normalize":
        run = map_query_ids(run, match)
    sides = {"topics": topics, "labels": labels}
    for name, side in sides.items():
        if side is None or "query_id" not in side.columns:
            continue
        side_match = check_query_ids(side["query_id"], reference, what=name, mode=mode)
        if mode == "normalize":
            sides[name] = map_query_ids(side, side_match)
    return Aligned(run, sides["topics"], sides["labels"])


def check_on_mismatch(on_mismatch: str) -> None:
    """``ValueError`` for an ``on_mismatch`` not in `ON_MISMATCH`."""
    if on_mismatch not in ON_MISMATCH:
        raise ValueError(f"on_mismatch must be one of {ON_MISMATCH}, not {on_mismatch!r}")


@contextmanager
def mismatch_policy(on_mismatch: str) -> Iterator[None]:
    """Apply ``on_mismatch`` (one of `SINGLE_RUN_ON_MISMATCH`) to the checks run inside the
    block: ``'warn'`` leaves their warnings as they are; ``'error'`` turns the first
    `QueryIdMismatchWarning` or `EmptyInputWarning` into an `InputMismatchError` (nothing is
    computed after it); ``'refuse_forms'`` does so only for a `QueryIdFormWarning` (ids that a
    known form mapping repairs) and leaves the other warnings as they are. The single-run
    functions (``rm.calc_aggregate``, ``rm.iter_calc``, ``rm.evaluate``) take their
    ``on_mismatch`` through it."""
    if on_mismatch not in SINGLE_RUN_ON_MISMATCH:
        raise ValueError(f"on_mismatch must be one of {SINGLE_RUN_ON_MISMATCH}, not {on_mismatch!r}")
    if on_mismatch == "warn":
        yield
        return
    refused: tuple[type[Warning], ...] = (
        (QueryIdMismatchWarning, EmptyInputWarning) if on_mismatch == "error" else (QueryIdFormWarning,))
    with warnings.catch_warnings():
        for category in refused:
            warnings.simplefilter("error", category)
        try:
            yield
        except refused as exc:
            raise InputMismatchError(str(exc), exc) from None


class AlignedRuns(NamedTuple):
    """Several runs, topics and labels checked (and, in ``normalize`` mode, mapped) against one
    qrels by `align_runs`."""

    runs: list[tuple[str, pd.DataFrame]]
    topics: pd.DataFrame | None
    labels: pd.DataFrame | None


_REFUSED = (QueryIdMismatchWarning, EmptyInputWarning)


def align_runs(
    qrels: pd.DataFrame,
    runs: Sequence[tuple[str, pd.DataFrame]],
    *,
    topics: pd.DataFrame | None = None,
    labels: pd.DataFrame | None = None,
    mode: str = "exact",
    on_mismatch: str = "error",
) -> AlignedRuns:
    """The single-run checks of `align_query_ids` for every run of a multi-run entry point
    (``rm.compare``, ``rm.leaderboard``), against one qrels.

    ``runs`` is ``[(name, run frame)]``; topics and labels are checked (and mapped) once. With
    ``mode='normalize'`` the ids of every run, the topics and the labels are rewritten to the
    qrels' form of the same query. Inputs that do not match (an empty run or qrels; a run, topics
    or labels sharing no query id with the qrels, or fewer than the canonical forms would give;
    ambiguous ids in ``normalize`` mode) are refused with an
    `InputMismatchError` naming the run when
    ``on_mismatch='error'`` (default); with ``on_mismatch='warn'`` each gives its warning
    (naming the run) and the frames are returned. The inputs are not modified."""
    if mode not in QUERY_ID_MODES:
        raise ValueError(f"query_ids must be one of {QUERY_ID_MODES}, not {mode!r}")
    check_on_mismatch(on_mismatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_not_empty(qrels, "qrels")
        reference = qrels["query_id"]
        sides = {"topics": topics, "labels": labels}
        for name, side in sides.items():
            if side is None or "query_id" not in side.columns:
                continue
            side_match = check_query_ids(side["query_id"], reference, what=name, mode=mode)
            if mode == "normalize":
                sides[name] = map_query_ids(side, side_match)
        out: list[tuple[str, pd.DataFrame]] = []
        for name, run in runs:
            what = f"run {name!r}"
            check_not_empty(run, what)
            match = check_query_ids(run["query_id"], reference, what=what, mode=mode)
            out.append((name, map_query_ids(run, match) if mode == "normalize" else run))
    for w in caught:
        refused = issubclass(w.category, _REFUSED)
        if refused and on_mismatch == "error":
            raise InputMismatchError(str(w.message), w.message if isinstance(w.message, Warning) else None)
        warnings.warn(w.message, w.category, stacklevel=user_stacklevel())
    return AlignedRuns(out, sides["topics"], sides["labels"])
