"""Native vectorised kernels for trec_eval's standard measures: nDCG, AP, P, R, RR.

They compute, per query, exactly what pytrec_eval (trec_eval 9/10) computes for the same
qrels and run, without building pytrec_eval's dict-of-dicts:

* ``nDCG@k`` / ``nDCG`` (``ndcg_cut_k`` / ``ndcg``): gain = the qrels grade (0 for unjudged and
  negative grades), discount 1/log₂(rank+1), ideal DCG from *all* judged documents of the query
  with a positive grade (sorted by grade, cut at k); 0 when the ideal DCG is 0. ``gains={...}``
  maps grades before anything else (as ir_measures does before calling pytrec_eval).
* ``AP@k`` / ``AP`` (``map_cut_k`` / ``map``): Σ over relevant documents at rank r ≤ k of
  (relevant documents at ranks ≤ r)/r, divided by the number of relevant documents in the qrels
  (not by min(k, R)).
* ``P@k`` (``P_k``): relevant documents in the top k divided by k.
* ``R@k`` (``recall_k``): relevant documents in the top k divided by the number of relevant
  documents in the qrels (0 when there are none).
* ``RR`` (``recip_rank``): 1/rank of the first relevant document, 0 if none is retrieved;
  ``RR@k`` (MS MARCO's ``MRR@k``): the same, 0 when that rank is above k.
* ``Judged@k`` (ir_measures' ``judged`` provider): documents with a judgment of any grade
  (negative ones too) among the top min(k, retrieved), divided by min(k, retrieved).

"Relevant" means a qrels grade ≥ ``rel`` (trec_eval ``-l``; default 1). ``judged_only=True``
(trec_eval ``-J``) drops retrieved documents without a non-negative judgment before ranking.
Negative grades follow trec_eval's reading of the qrels: a document with a negative grade is
"in the pool but not judged" (never relevant, no gain, dropped by ``-J``), and a query whose
grades are all negative has no relevant document (every measure is 0).

Ranking is trec_eval's: score descending compared at single precision (``float``), ties by
doc id descending in byte order — the ``'trec_eval'`` policy of `.ranking`. A repeated
(query, doc) pair keeps its last score (pytrec_eval takes dictionaries). Queries: one value
per query of the qrels; a query of the qrels absent from the run scores 0 (ir_measures' filler
value, i.e. trec_eval ``-c``); run queries without qrels are not reported.

"Sort once, cheaply": most runs arrive sorted by score within each query. One vectorised pass
detects that (and whether the run is grouped by query); only then is an integer sort on
(query, float32 score) needed. Doc ids are compared only inside the tie groups that can change
a value (those reaching into the top k, or holding a relevant document), and the qrels are
looked up only for the rows a measure needs (the top k; for RR, deeper only for queries
without a relevant document so far), through a 64-bit hash of the doc id verified by an
exact string comparison.

Which parameter combinations are native is declared in `SUPPORTED_MEASURES`; everything else
(and inputs with NaN scores) goes to pytrec_eval. Per-query equality with pytrec_eval to 1e-9
is tested on trec_eval's own test files, hand-checked small cases and tie-heavy random runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import ir_measures
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from ir_measures import Metric
from ir_measures.providers.base import NOT_PROVIDED, Choices

from ..errors import NativeFallback
from ..io.convert import as_qrels_frame, as_run_frame
from ..measures.params import param
from ..side import current_side_info

__all__ = [
    "SUPPORTED_MEASURES",
    "NATIVE_MEASURES",
    "supports",
    "split_measures",
    "NativeFallback",
    "PreparedRun",
    "per_query",
    "per_query_frame",
    "iter_metrics",
    "aggregate",
    "top_rows",
    "UNIQUE_PAIRS",
    "ideal_dcg",
    "prepare_run",
    "PREPARED_RUNS",
    "HandedRun",
]

#: ``side_info`` key under which the evaluation engine names a run frame that holds no repeated
#: (query, doc) pair (a run contract removed them, or the engine did before ranking): `per_query`
#: skips its duplicate check for that very frame
UNIQUE_PAIRS = "_reteco_unique_pairs"

#: ``side_info`` key under which a caller hands `per_query` a list to fill: for every run it
#: prepares, `per_query` appends a `HandedRun` (the frame it was given, that run's `PreparedRun`
#: with its repeated pairs dropped, and the frame it was built from), so that a later step on the
#: same run (compare's tie bounds, `reteco_measures.kernels.bounds`) does not group, order and
#: hash the run again. Nothing is appended when the run cannot be prepared (`NativeFallback`).
PREPARED_RUNS = "_reteco_prepared_runs"

_FILTER_MULT = np.uint64(0x9E3779B97F4A7C15)


# ------------------------------------------------------------------------------------------
# which measures


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class PositiveInt:
    """Parameter spec (as ir_measures' ``Any`` / ``Choices``): an integer ≥ 1, or not given
    unless ``required``."""

    def __init__(self, required: bool = False):
        self.required = required

    def validate(self, value: Any) -> bool:
        if value is NOT_PROVIDED:
            return not self.required
        return _is_int(value) and value >= 1

    def __repr__(self) -> str:
        return "POSITIVE_INT" + (" (required)" if self.required else "")


class IsBool:
    """Parameter spec: a ``bool``."""

    def validate(self, value: Any) -> bool:
        return isinstance(value, bool)

    def __repr__(self) -> str:
        return "BOOL"


class IntMapping:
    """Parameter spec: a ``dict`` of int → int, or not given (nDCG's ``gains``)."""

    def validate(self, value: Any) -> bool:
        return value is NOT_PROVIDED or (isinstance(value, dict) and all(_is_int(k) and _is_int(v)
                                                                          for k, v in value.items()))

    def __repr__(self) -> str:
        return "INT_TO_INT"


#: The measures and parameter values the native kernels compute, verified against pytrec_eval,
#: declared as ir_measures' providers declare theirs (``SUPPORTED_MEASURES``): ``nDCG`` with the
#: ``log2`` discount, an optional cutoff, an optional int → int ``gains`` mapping and
#: ``judged_only``; ``AP`` (optional cutoff); ``P@k`` and ``R@k`` (cutoff required); ``RR`` with
#: or without a cutoff (``RR@k`` is not a pytrec_eval measure: its value is MS MARCO's
#: ``MRR@k`` per query, 1/rank of the first relevant document when that rank is ≤ k, else 0);
#: ``Judged@k`` (the share of the top min(k, retrieved) documents that have a judgment of any
#: grade, as ir_measures' ``judged`` provider defines it; no cutoff: all retrieved).
#: Cutoffs and ``rel`` are integers ≥ 1 (pytrec_eval refuses relevance levels below 1).
#: Every one of them ranks by trec_eval's order (ties: doc id descending), whichever
#: provider would otherwise compute it.
SUPPORTED_MEASURES: list[ir_measures.Measure] = [
    ir_measures.measures._nDCG(cutoff=PositiveInt(), dcg=Choices("log2"), gains=IntMapping(), judged_only=IsBool()),
    ir_measures.measures._AP(cutoff=PositiveInt(), rel=PositiveInt(), judged_only=IsBool()),
    ir_measures.measures._P(cutoff=PositiveInt(required=True), rel=PositiveInt(), judged_only=IsBool()),
    ir_measures.measures._R(cutoff=PositiveInt(required=True), rel=PositiveInt(), judged_only=IsBool()),
    ir_measures.measures._RR(cutoff=PositiveInt(), rel=PositiveInt(), judged_only=IsBool()),
    ir_measures.measures._Judged(cutoff=PositiveInt()),
]

#: measure names with a native kernel (parameter values: `SUPPORTED_MEASURES`)
NATIVE_MEASURES = tuple(m.NAME for m in SUPPORTED_MEASURES)


def supports(measure: ir_measures.Measure) -> bool:
    """True when `SUPPORTED_MEASURES` declares ``measure`` (ir_measures' rule: same name,
    every declared parameter valid); a measure whose parameters do not validate is not claimed
    (ir_measures reports the error), nor is one of reteco-measures' own."""
    if getattr(measure, "_RETECO", False):
        return False
    try:
        measure.validate_params()
    except Exception:  # noqa: BLE001 - invalid parameters: leave the error to ir_measures
        return False
    return any(decl.NAME == measure.NAME and all(spec.validate(param(measure, p, NOT_PROVIDED)) for p, spec in decl.params.items())
               for decl in SUPPORTED_MEASURES)


def split_measures(
    measures: Iterable[ir_measures.Measure],
) -> tuple[list[ir_measures.Measure], list[ir_measures.Measure]]:
    """``(native, other)``: the measures `supports` claims, and all the others (order kept)."""
    native: list[ir_measures.Measure] = []
    other: list[ir_measures.Measure] = []
    for m in measures:
        (native if supports(m) else other).append(m)
    return native, other


# ------------------------------------------------------------------------------------------
# strings


def _large_strings(values: Any, combine: bool = True) -> pa.Array | pa.ChunkedArray:
    """A ``large_string`` arrow array from a pandas column / arrow / numpy values; contiguous
    unless ``combine=False`` (then a chunked column stays chunked: no copy of its strings)."""
    if isinstance(values, pd.Series):
        arr = values.array
        if hasattr(arr, "_pa_array"):
            values = arr._pa_array
        else:
            values = pa.array(values.astype(str).to_numpy(dtype=object), type=pa.large_string())
    elif isinstance(values, np.ndarray):
        values = pa.array(values.astype(str).astype(object) if len(values) else [], type=pa.large_string())
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 1:
            values = values.chunk(0)
        elif combine or values.num_chunks == 0:
            values = values.combine_chunks()
    if values.type != pa.large_string():
        values = values.cast(pa.large_string())
    if values.null_count:
        values = pc.fill_null(values, "")
    return values


def string_key(values: pa.Array) -> np.ndarray:
    """A 64-bit key of every string (uint64) that mixes every byte of it and its length.

    Equal strings give equal keys. Every 8-byte word of a string goes through its own bijective
    multiply-xorshift step (its multiplier depends on the word's position), the steps are summed
    and the sum, with the length, goes through a 64-bit finaliser in the manner of MurmurHash3's
    ``fmix64``: ids that differ anywhere (in the middle too) get unrelated keys, so different
    strings share a key about as rarely as random 64-bit numbers would. It is no cryptographic
    hash (ids crafted to collide can), and callers treat equal keys as *candidates* confirmed by
    comparing the strings: the key only decides speed, never a value.

    Vectorised: per 8-byte word position (⌈longest / 8⌉ passes) one aligned gather over the
    arrow data buffer for all the strings, 16,384 strings at a time (the temporaries, about ten
    arrays of 8 bytes a string, stay near 1 MB beside the keys themselves).
    """
    values = _large_strings(values, combine=False)
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]  # each chunk where it lies
    out = np.empty(len(values), dtype=np.uint64)
    at = 0
    scratch: list[np.ndarray] = []  # the aligned copy of a slice's bytes, reused from slice to slice
    for chunk in chunks:
        for lo in range(0, len(chunk), _KEY_ROWS):
            part = chunk.slice(lo, _KEY_ROWS)
            _string_key_into(part, out[at: at + len(part)], scratch)
            at += len(part)
    return out


#: strings keyed at a time by `string_key` (its temporaries: about ten arrays of this length)
_KEY_ROWS = 1 << 14
#: ``_BYTE_MASKS[r]``: the low ``r`` bytes of a little-endian word (r = 0..8)
_BYTE_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)
#: odd multipliers of the word positions (cycled): a word's contribution depends on where it lies
_WORD_MULTS = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                        0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x27D4EB2F165667C5, 0x94D049BB133111EB],
                       dtype=np.uint64)


def _string_key_into(values: pa.Array, out: np.ndarray, scratch: list[np.ndarray] | None = None) -> None:
    """`string_key` of the ``large_string`` array ``values`` (not chunked), written to ``out``;
    ``scratch`` may hold a uint64 buffer to reuse (replaced by a larger one when too small)."""
    n = len(values)
    if n == 0:
        return
    buffers = values.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64, count=n + 1, offset=values.offset * 8)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    base = int(offsets[0])
    size = int(offsets[-1]) - base
    lens = np.diff(offsets)
    max_len, min_len = int(lens.max()), int(lens.min())
    # the bytes copied into aligned 8-byte words (zeros after them): the word at byte p is
    # (a[p >> 3] >> 8(p & 7)) | (a[(p >> 3) + 1] << 64 - 8(p & 7)), two gathers of aligned words
    n_words = size // 8 + 2
    if scratch is not None and scratch and len(scratch[0]) >= n_words:
        aligned = scratch[0][:n_words]
    else:
        aligned = np.empty(max(n_words, 1 << 14), dtype=np.uint64)
        if scratch is not None:
            scratch[:] = [aligned]
        aligned = aligned[:n_words]
    aligned[-2:] = 0
    aligned.view(np.uint8)[:size] = data[base: base + size]
    start = offsets[:-1] - base
    q = start >> 3  # the aligned word holding each string's next byte
    sh = ((start & 7) << 3).view(np.uint64)  # its bit offset there (0, 8, ..., 56)
    sh2 = np.uint64(56) - sh  # (the high word's shift, applied as sh2 then 8: never a shift by 64)
    h = out
    h[:] = 0
    t = np.empty(n, dtype=np.uint64)
    lo_word = aligned[q]
    last = n_words - 1
    with np.errstate(over="ignore"):
        for k in range(0, max_len, 8):
            # the 8 bytes of every string at byte k; bytes past a string's end masked to 0 (a
            # string already ended adds 0: the sum does not depend on the longest string)
            q += 1
            hi_word = aligned[q] if k + 8 <= min_len else aligned[np.minimum(q, last)]
            w = lo_word >> sh
            np.left_shift(hi_word, sh2, out=t)
            t <<= np.uint64(8)
            w |= t
            lo_word = hi_word
            if k + 8 > min_len:
                w &= _BYTE_MASKS[np.clip(lens - k, 0, 8)]
            w *= _WORD_MULTS[(k // 8) % len(_WORD_MULTS)]  # bijective steps: 0 stays 0
            np.right_shift(w, np.uint64(32), out=t)
            w ^= t
            w *= np.uint64(0xFF51AFD7ED558CCD)
            np.right_shift(w, np.uint64(29), out=t)
            w ^= t
            h += w
        h += lens.view(np.uint64) * np.uint64(0xD6E8FEB86659FD93)
        np.right_shift(h, np.uint64(33), out=t)
        h ^= t
        h *= np.uint64(0xC4CEB9FE1A85EC53)
        np.right_shift(h, np.uint64(29), out=t)
        h ^= t
        h *= np.uint64(0x94D049BB133111EB)
        np.right_shift(h, np.uint64(32), out=t)
        h ^= t


def rows_with_keys(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions of the ``keys`` equal to one of the (few) ``wanted`` keys, ascending: a binary
    search of every key in the sorted wanted ones (``np.isin`` would sort all the keys)."""
    if len(wanted) > 1 and not bool(np.all(wanted[1:] > wanted[:-1])):
        wanted = np.unique(wanted)
    if len(wanted) == 0:
        return np.zeros(0, dtype=np.int64)
    at = np.searchsorted(wanted, keys)
    np.minimum(at, len(wanted) - 1, out=at)
    return np.flatnonzero(wanted[at] == keys)


def _desc_bits(s32: np.ndarray) -> np.ndarray:
    """uint32 keys whose ascending order is the float32 scores' descending order (±0 equal)."""
    bits = (s32 + np.float32(0.0)).view(np.uint32)  # -0.0 + 0.0 == +0.0
    neg = (bits >> np.uint32(31)).astype(bool)
    ordered = np.where(neg, ~bits, bits | np.uint32(0x80000000))  # ascending with the score
    return ~ordered


def segment_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + l)`` for every (s, l), vectorised."""
    lengths = np.maximum(lengths, 0)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    if len(starts) and np.array_equal(starts[1:], starts[:-1] + lengths[:-1]):
        # one contiguous stretch (every row of every query): no per-row temporaries
        return np.arange(int(starts[0]), int(starts[0]) + total, dtype=np.int64)
    offs = np.cumsum(lengths) - lengths
    return np.repeat(starts - offs, lengths) + np.arange(total, dtype=np.int64)


def index_dtype(n: int) -> type[np.signedinteger]:
    """The integer type of an array of row numbers, codes or positions below ``n``: ``int32``
    (4 bytes a row) unless ``n`` needs 64 bits."""
    return np.int32 if n < np.iinfo(np.int32).max else np.int64


# ------------------------------------------------------------------------------------------
# the prepared run


class PreparedRun:
    """A run ready for the native kernels: grouped by query, ordered by float32 score.

    Built once per (run, judged-only filter); every measure of a call shares it. Rows are
    addressed in *score order* (query by query, score descending, equal float32 scores in
    arbitrary order); a *tie group* is a maximal stretch of equal scores in one query. A row's
    exact trec_eval rank is (position of its tie group in the query) + 1 + (rows of its tie
    group with a larger doc id in byte order).
    """

    def __init__(self, query_id: Any, doc_id: Any, score: np.ndarray):
        qid = _large_strings(query_id, combine=False)
        self.doc = _large_strings(doc_id, combine=False)
        score = np.asarray(score, dtype=np.float64)
        n = len(qid)
        self.n = n
        idx = index_dtype(n)  # row numbers and codes: 4 bytes a row unless the run needs 8
        if n and np.isnan(score).any():
            raise NativeFallback("NaN scores")
        with np.errstate(over="ignore"):  # beyond single precision: ±inf, as trec_eval's (float) cast
            desc = _desc_bits(score.astype(np.float32))
        # -- query grouping: one comparison of neighbouring ids
        if n:
            change = np.asarray(pc.not_equal(qid[1:], qid[:-1]), dtype=bool)
            starts = np.flatnonzero(np.r_[True, change])
        else:
            starts = np.zeros(0, dtype=np.int64)
        heads = qid.take(pa.array(starts, type=pa.int64()))
        if isinstance(heads, pa.ChunkedArray):
            heads = heads.combine_chunks()
        grouped = pc.count_distinct(heads).as_py() == len(heads) if n else True
        if grouped:
            self.query_ids = heads
            nq = len(heads)
            qcode = np.repeat(np.arange(nq, dtype=idx), np.diff(np.r_[starts, n]))
        else:
            if isinstance(qid, pa.ChunkedArray):
                qid = qid.combine_chunks()
            enc = pc.dictionary_encode(qid)
            self.query_ids = enc.dictionary.cast(pa.large_string())
            nq = len(self.query_ids)
            qcode = np.asarray(enc.indices).astype(idx, copy=False)
        self.nq = nq
        self.qcode = qcode  # query code of each input row
        # the common number of rows per query when the run is grouped and all are equal
        self.width = n // nq if (grouped and nq and n % nq == 0 and bool(np.all(np.diff(starts) == n // nq))) else 0
        # -- score order: already sorted within each query? (one vectorised pass)
        in_order = grouped
        if grouped and n > 1:
            new_q = np.zeros(n - 1, dtype=bool)
            new_q[starts[1:] - 1] = True
            in_order = not bool(np.any((desc[1:] < desc[:-1]) & ~new_q))
        if in_order:
            self.perm = None
            ds = desc
            counts = np.diff(np.r_[starts, n]).astype(np.int64)
            boundary = np.zeros(n, dtype=bool)
            boundary[starts] = True
        elif self.width:
            # every query has the same number of rows (the usual top-1000 run): sort each
            # query's scores as one row of a matrix, cache-friendly and without a global sort
            width = self.width
            matrix = desc.reshape(nq, width)
            self.perm = np.empty(n, dtype=idx)
            step = max(1, LOOKUP_ROWS // width)  # queries sorted at a time (numpy's argsort gives int64)
            for a in range(0, nq, step):
                order = np.argsort(matrix[a: a + step], axis=1)
                order += (np.arange(a, a + len(order), dtype=np.int64) * width)[:, None]
                self.perm[a * width: (a + len(order)) * width] = order.ravel()
            del order
            ds = desc[self.perm]
            counts = np.full(nq, width, dtype=np.int64)
            boundary = np.zeros(n, dtype=bool)
            boundary[::width] = True
        else:
            key = qcode.astype(np.uint64)  # (query code, score bits) in one word, made in place
            key <<= np.uint64(32)
            key |= desc
            perm = np.argsort(key)
            del key
            self.perm = perm.astype(idx, copy=False)
            del perm
            ds = desc[self.perm]  # the sorted keys' two halves, gathered from their 4-byte sources
            qs = qcode[self.perm]
            counts = np.bincount(qs, minlength=nq).astype(np.int64)
            boundary = np.ones(n, dtype=bool)
            boundary[1:] = qs[1:] != qs[:-1]
            del qs
        self.seg_len = counts
        self.seg_start = (np.cumsum(counts) - counts).astype(np.int64)
        # tie groups: first row of each (query, float32 score) stretch, in score order
        group_first = boundary
        if n > 1:
            group_first[1:] |= ds[1:] != ds[:-1]
        self.group_starts = np.flatnonzero(group_first).astype(idx, copy=False)
        self.has_ties = len(self.group_starts) < n

    # -- helpers --------------------------------------------------------------------------
    def orig(self, rows: np.ndarray) -> np.ndarray:
        """Input-row indices of score-order rows."""
        return rows if self.perm is None else self.perm[rows]

    def group_end(self, rows: np.ndarray) -> np.ndarray:
        """Score-order index one past the tie group of each row."""
        gs = self.group_starts
        at = np.searchsorted(gs, rows, side="right")
        return np.where(at < len(gs), gs[np.minimum(at, len(gs) - 1)], self.n)

    def group_start(self, rows: np.ndarray) -> np.ndarray:
        return self.group_starts[np.searchsorted(self.group_starts, rows, side="right") - 1]

    def depth_end(self, k: int | None) -> np.ndarray:
        """Per query: score-order index one past the tie group holding position k-1 (the rows
        that can be in the top k), or the query's end for k None."""
        end = self.seg_start + self.seg_len
        if k is None:
            return end
        last = self.seg_start + np.minimum(self.seg_len, k) - 1
        out = end.copy()
        has = self.seg_len > 0
        out[has] = np.minimum(self.group_end(last[has]), end[has]) if self.has_ties else last[has] + 1
        return out

    def rows_between(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score-order rows in ``[lo[q], hi[q])`` of every query, with their query codes."""
        lens = np.maximum(hi - lo, 0)
        rows = segment_ranges(lo, lens)
        codes = np.repeat(np.arange(self.nq, dtype=np.int64), lens)
        return rows, codes

    def row_blocks(self, lo: np.ndarray, hi: np.ndarray, size: int | None = None
                   ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """`rows_between` in consecutive pieces of at most ``size`` rows (`LOOKUP_ROWS`), cut
        anywhere (a query may span two pieces): the pieces joined are `rows_between`'s arrays,
        and a measure that reads every row holds the per-row arrays of one piece at a time."""
        size = int(size or LOOKUP_ROWS)
        lens = np.maximum(hi - lo, 0)
        ends = np.cumsum(lens)
        total = int(ends[-1]) if len(ends) else 0
        if total <= size:
            if total:
                yield self.rows_between(lo, hi)
            return
        offs = ends - lens
        for a in range(0, total, size):
            b = min(a + size, total)
            q0 = int(np.searchsorted(ends, a, side="right"))  # the first query ending after a
            q1 = int(np.searchsorted(ends, b, side="left")) + 1  # one past the query holding row b-1
            first = np.maximum(offs[q0:q1], a)
            part = np.minimum(ends[q0:q1], b) - first
            rows = segment_ranges(lo[q0:q1] + (first - offs[q0:q1]), part)
            yield rows, np.repeat(np.arange(q0, q1, dtype=np.int64), np.maximum(part, 0))

    @property
    def keys(self) -> np.ndarray:
        """uint64 (query code, doc key) of each input row: made at each call, not kept (8 bytes
        a row); the lookups make the keys of the rows they read (`row_keys`)."""
        return self.row_keys(None)

    def row_keys(self, rows: np.ndarray | None) -> np.ndarray:
        """uint64 (query code, doc key) of the input rows ``rows`` (None: every row), equal to
        ``keys[rows]``: the query code in the top bits, the doc id's `string_key` below."""
        if rows is None:
            return self._keys_of(string_key(self.doc), self.qcode)
        return self._keys_of(string_key(self.doc.take(pa.array(rows))), self.qcode[rows])

    def _keys_of(self, h: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """The (query code, doc key) keys from the doc ids' `string_key` ``h`` (changed in place)
        and the rows' query codes."""
        bq = max(1, int(self.nq).bit_length())
        h >>= np.uint64(bq)
        h |= codes.astype(np.uint64) << np.uint64(64 - bq)
        return h

    def duplicate_rows(self) -> np.ndarray | None:
        """Input rows repeating a (query, doc) pair of a *later* row (to drop: the last score
        wins, as in pytrec_eval's dictionaries), or None when there is no repeated pair."""
        if self.n < 2:
            return None
        sk = self.keys  # a fresh array, sorted in place
        if self.width:  # equal-size queries: sort each query's keys as a matrix row
            sk.reshape(-1, self.width).sort(axis=1)
        else:
            sk.sort()
        eq = sk[1:] == sk[:-1]
        if not eq.any():
            return None
        repeated = np.unique(sk[1:][eq])
        del sk, eq
        # the rows holding a repeated key, the keys made again slice by slice (8 bytes a row
        # at most: the sorted keys are gone)
        found = []
        for lo in range(0, self.n, LOOKUP_ROWS):
            part = self.doc.slice(lo, LOOKUP_ROWS)
            found.append(lo + rows_with_keys(self._keys_of(string_key(part), self.qcode[lo: lo + len(part)]),
                                             repeated))
        suspects = np.concatenate(found)
        frame = pd.DataFrame(
            {"q": self.qcode[suspects], "d": self.doc.take(pa.array(suspects)).to_numpy(zero_copy_only=False)}
        )
        dup = frame.duplicated(["q", "d"], keep="last").to_numpy()
        return suspects[dup] if dup.any() else None

    def tie_ranks(self, rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Exact 1-based trec_eval ranks of score-order rows (``codes``: their query codes)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return np.zeros(0, dtype=np.int64)
        g = self.group_start(rows)
        ranks = g - self.seg_start[codes] + 1
        if not self.has_ties:
            return ranks
        gend = self.group_end(rows)
        multi = gend - g > 1
        if not multi.any():
            return ranks
        groups, first = np.unique(g[multi], return_index=True)
        sizes = gend[multi][first] - groups
        members = segment_ranges(groups, sizes)
        gid = np.repeat(np.arange(len(groups)), sizes)
        table = pa.table({"g": pa.array(gid), "d": self.doc.take(pa.array(self.orig(members)))})
        order = pc.sort_indices(table, sort_keys=[("g", "ascending"), ("d", "descending")]).to_numpy()
        offs = np.cumsum(sizes) - sizes
        within = np.empty(len(members), dtype=np.int64)
        within[order] = np.arange(len(members)) - np.repeat(offs, sizes)
        loc = np.searchsorted(members, rows[multi])
        ranks[multi] += within[loc]
        return ranks


# ------------------------------------------------------------------------------------------
# qrels aligned with a prepared run


class _Qrels:
    """Qrels keyed like the run's rows (query code, doc key); last judgment of a pair wins."""

    def __init__(self, qrels: pd.DataFrame, run: PreparedRun):
        qid = _large_strings(qrels["query_id"])
        doc = _large_strings(qrels["doc_id"])
        rel = np.asarray(qrels["relevance"], dtype=np.int64)
        # every query of the qrels (first-appearance order): the reported queries
        if len(qid):
            enc = pc.dictionary_encode(qid)
            self.query_ids = enc.dictionary.cast(pa.large_string())
            qq = np.asarray(enc.indices, dtype=np.int64)
        else:
            self.query_ids = pa.array([], pa.large_string())
            qq = np.zeros(0, np.int64)
        self.nq = len(self.query_ids)
        if self.nq and run.nq:
            to_run = pc.index_in(self.query_ids, value_set=run.query_ids)
            self.run_code = np.asarray(pc.fill_null(to_run, -1), dtype=np.int64)
        else:
            self.run_code = np.full(self.nq, -1, dtype=np.int64)
        rc = self.run_code[qq] if len(qq) else qq
        rows = np.flatnonzero(rc >= 0)
        bq = max(1, int(run.nq).bit_length())
        h = string_key(doc.take(pa.array(rows, type=pa.int64())))
        keys = (rc[rows].astype(np.uint64) << np.uint64(64 - bq)) | (h >> np.uint64(bq))
        order = np.argsort(keys, kind="stable")
        keys, rows = keys[order], rows[order]
        if len(keys) > 1 and bool(np.any(keys[1:] == keys[:-1])):
            # equal keys: repeated judgments (keep the last) or different docs sharing a key
            frame = pd.DataFrame({"q": rc[rows], "d": doc.take(pa.array(rows)).to_numpy(zero_copy_only=False),
                                  "row": rows})
            last = ~frame.sort_values("row", kind="stable").duplicated(["q", "d"], keep="last")
            keep = last.reindex(frame.index).to_numpy()
            keys, rows = keys[keep], rows[keep]
        self.keys = keys
        self.rows = rows  # qrels row of each key (keys sorted)
        # a one-bit-per-slot filter of the keys: most run rows are rejected by one gather
        bits = max(16, int(8 * max(len(keys), 1)).bit_length())
        self._shift = np.uint64(64 - bits)
        self._filter = np.zeros(1 << bits, dtype=bool)
        with np.errstate(over="ignore"):
            self._filter[(keys * _FILTER_MULT) >> self._shift] = True
        self.doc = doc
        self.rel = rel
        self.row_run_code = rc

    def lookup(self, run: PreparedRun, rows_orig: np.ndarray) -> np.ndarray:
        """qrels row judging each input run row (-1 when the pair is not in the qrels)."""
        out = np.full(len(rows_orig), -1, dtype=np.int64)
        if len(self.keys) == 0 or len(rows_orig) == 0:
            return out
        keys = run.row_keys(rows_orig)
        with np.errstate(over="ignore"):
            maybe = np.flatnonzero(self._filter[(keys * _FILTER_MULT) >> self._shift])
        if len(maybe) == 0:
            return out
        rows_orig, keys = rows_orig[maybe], keys[maybe]
        found = np.full(len(maybe), -1, dtype=np.int64)
        lo = np.searchsorted(self.keys, keys, side="left")
        hi = np.searchsorted(self.keys, keys, side="right")
        cnt = hi - lo
        cand = np.flatnonzero(cnt > 0)
        if len(cand) == 0:
            return out
        # candidate pairs (run row, qrels row with the same key), confirmed by the strings
        pair_run = np.repeat(cand, cnt[cand])
        pair_q = self.rows[segment_ranges(lo[cand], cnt[cand])]
        equal = np.asarray(
            pc.equal(run.doc.take(pa.array(rows_orig[pair_run])), self.doc.take(pa.array(pair_q))), dtype=bool
        )
        found[pair_run[equal]] = pair_q[equal]
        out[maybe] = found
        return out


#: run rows looked up in the qrels, or read by a measure, at a time (see `_Context.grades` and
#: `PreparedRun.row_blocks`): the per-row temporaries stay a few MB however deep a run is
LOOKUP_ROWS = 1 << 16

#: `_Context`'s mark of a row not looked up in the qrels yet
_UNSEEN = -2


class _Context:
    """One (qrels, run) evaluation: caches the qrels lookups of score-order rows."""

    def __init__(self, qrels: pd.DataFrame, run: PreparedRun, gains: dict | None = None):
        self.run = run
        self.q = _Qrels(qrels, run)
        rel = self.q.rel
        if gains and len(rel):
            uniq, inv = np.unique(rel, return_inverse=True)
            rel = np.array([gains.get(int(v), int(v)) for v in uniq.tolist()], dtype=np.int64)[inv]
        self.rel = rel  # grade of each qrels row (after a gains mapping)
        # the qrels row of each score-order row once looked up (-1: not judged), `_UNSEEN` before
        self._qrow = np.full(run.n, _UNSEEN, dtype=index_dtype(len(rel)))
        kept = self.q.rows
        self.kept_code = self.q.row_run_code[kept]
        self.kept_rel = rel[kept]

    def grades(self, rows: np.ndarray) -> np.ndarray:
        """Grade of each score-order row (-1 when not in the qrels: trec_eval's 'not in pool')."""
        # the lookups in slices of `LOOKUP_ROWS` rows: their temporaries (keys, hashes, candidate
        # pairs) stay a few MB however many rows a measure reads (peak memory on deep runs)
        out = np.full(len(rows), -1, dtype=np.int64)
        for lo in range(0, len(rows), LOOKUP_ROWS):
            part = rows[lo: lo + LOOKUP_ROWS]
            need = part[self._qrow[part] == _UNSEEN]
            if len(need):
                self._qrow[need] = self.q.lookup(self.run, self.run.orig(need))
            if len(self.rel):  # empty qrels: nothing is judged (and rel[0] does not exist)
                qrow = self._qrow[part]
                out[lo: lo + len(part)] = np.where(qrow >= 0, self.rel[np.maximum(qrow, 0)], -1)
        return out

    def judged_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, grades)``: every score-order row with a qrels entry (ascending) and its
        grade; the rows looked up already are not looked up again."""
        unseen = np.flatnonzero(self._qrow == _UNSEEN)
        if len(unseen):
            self.grades(unseen)  # looked up now
        rows = np.flatnonzero(self._qrow >= 0)
        return rows, self.rel[self._qrow[rows]].astype(np.int64, copy=False)

    def num_rel(self, level: int) -> np.ndarray:
        """Relevant judged documents (grade ≥ level) per run query."""
        ok = self.kept_rel >= max(level, 0)
        return np.bincount(self.kept_code[ok], minlength=self.run.nq).astype(np.float64)

    def ideal_dcg(self, k: int | None) -> np.ndarray:
        """Ideal DCG@k per run query: the query's positive grades sorted descending."""
        return ideal_dcg(self.kept_code, self.kept_rel, k, self.run.nq)

    def scored_rows(self, k: int | None, relevant) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(query code, exact rank, grade)`` of the rows with ``relevant(grade)`` and rank ≤ k,
        sorted by (query, rank)."""
        run = self.run
        kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for rows, codes in run.row_blocks(run.seg_start, run.depth_end(k)):  # one piece of rows at a time
            g = self.grades(rows)
            sel = relevant(g)
            rows, codes, g = rows[sel], codes[sel], g[sel]
            ranks = run.tie_ranks(rows, codes)
            if k is not None:
                ok = ranks <= k
                codes, ranks, g = codes[ok], ranks[ok], g[ok]
            kept.append((codes, ranks, g))
        if not kept:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        codes, ranks, g = (np.concatenate(c) for c in zip(*kept)) if len(kept) > 1 else kept[0]
        order = np.lexsort((ranks, codes))
        return codes[order], ranks[order], g[order]

    def judged_in_top(self, k: int | None) -> tuple[np.ndarray, np.ndarray]:
        """``(judged, depth)`` per run query: documents with a qrels entry (any grade) among
        the top ``depth`` = min(k, retrieved) ranks (k None: all retrieved)."""
        run = self.run
        count = np.zeros(run.nq, dtype=np.int64)
        for rows, codes in run.row_blocks(run.seg_start, run.depth_end(k)):
            self.grades(rows)  # fills the qrels lookup of these rows
            judged = self._qrow[rows] >= 0
            rows, codes = rows[judged], codes[judged]
            if k is not None and len(rows):
                ok = run.tie_ranks(rows, codes) <= k
                codes = codes[ok]
            count += np.bincount(codes, minlength=run.nq)
        depth = run.seg_len if k is None else np.minimum(run.seg_len, k)
        return count.astype(np.float64), depth.astype(np.float64)

    def first_relevant_rank(self, level: int, k: int | None = None) -> np.ndarray:
        """Rank of the first relevant document per run query (0: none retrieved, or none in
        the top ``k``). Looks ten times deeper at each step (never below rank ``k``), and only
        into the queries still without one."""
        run = self.run
        best = np.zeros(run.nq, dtype=np.int64)
        lo = run.seg_start.copy()
        end = run.seg_start + run.seg_len
        open_q = run.seg_len > 0
        depth = 10
        lvl = max(level, 0)
        while open_q.any():
            last = k is not None and depth >= k
            hi = np.where(open_q, run.depth_end(k if last else depth), lo)
            mins = np.full(run.nq, np.iinfo(np.int64).max)
            for rows, codes in run.row_blocks(lo, hi):
                hit = self.grades(rows) >= lvl
                if hit.any():
                    np.minimum.at(mins, codes[hit], run.tie_ranks(rows[hit], codes[hit]))
            found = mins < np.iinfo(np.int64).max
            best[found] = mins[found]
            open_q &= ~found
            lo = hi
            open_q &= hi < end
            if last:
                break
            depth *= 10
        if k is not None:
            best[best > k] = 0
        return best

# ------------------------------------------------------------------------------------------
# measures


def _cutoff(measure: ir_measures.Measure) -> int | None:
    c = param(measure, "cutoff")
    return None if c is None else int(c)


def _values(measure: ir_measures.Measure, ctx: _Context) -> np.ndarray:
    """Value per run query."""
    run = ctx.run
    name = measure.NAME
    k = _cutoff(measure)
    level = int(param(measure, "rel", NOT_PROVIDED)) if name not in ("nDCG", "Judged") else 1
    lvl = max(level, 0)
    if name == "nDCG":
        codes, ranks, g = ctx.scored_rows(k, lambda x: x > 0)
        dcg = np.bincount(codes, weights=g / np.log2(ranks + 1.0), minlength=run.nq)
        idcg = ctx.ideal_dcg(k)
        return np.divide(dcg, idcg, out=np.zeros(run.nq), where=idcg > 0)
    if name == "RR":
        first = ctx.first_relevant_rank(level, k)
        return np.divide(1.0, first, out=np.zeros(run.nq), where=first > 0)
    if name == "Judged":
        judged, depth = ctx.judged_in_top(k)
        return np.divide(judged, depth, out=np.zeros(run.nq), where=depth > 0)
    codes, ranks, g = ctx.scored_rows(k, lambda x: x >= lvl)
    if name == "P":
        return np.bincount(codes, minlength=run.nq) / float(k)
    nrel = ctx.num_rel(level)
    if name == "R":
        found = np.bincount(codes, minlength=run.nq).astype(np.float64)
        return np.divide(found, nrel, out=np.zeros(run.nq), where=nrel > 0)
    # AP: precision at each relevant rank, summed, over the number of relevant documents
    if len(codes):
        first = np.r_[True, codes[1:] != codes[:-1]]
        start = np.maximum.accumulate(np.where(first, np.arange(len(codes)), 0))
        so_far = np.arange(len(codes)) - start + 1
        total = np.bincount(codes, weights=so_far / ranks.astype(np.float64), minlength=run.nq)
    else:
        total = np.zeros(run.nq)
    return np.divide(total, nrel, out=np.zeros(run.nq), where=nrel > 0)


def ideal_dcg(code: np.ndarray, rel: np.ndarray, k: int | None, nq: int) -> np.ndarray:
    """Ideal DCG@k per query code ``0..nq-1`` from judged rows (query ``code``, grade ``rel``):
    each query's positive grades sorted descending, gain ``rel / log2(rank + 1)`` (trec_eval's
    ``ndcg_cut``); ``k=None`` is no cutoff. The one ideal DCG of the native kernels."""
    ok = rel > 0
    code, gain = code[ok], rel[ok]
    if len(code) == 0:
        return np.zeros(nq)
    order = np.lexsort((-gain, code))
    code, gain = code[order], gain[order].astype(np.float64)
    first = np.r_[True, code[1:] != code[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(code)), 0))
    rank = np.arange(len(code)) - start + 1
    keep = rank <= k if k is not None else np.ones(len(rank), dtype=bool)
    return np.bincount(code[keep], weights=gain[keep] / np.log2(rank[keep] + 1.0), minlength=nq)


def _frames(qrels: Any, run: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    q = qrels if isinstance(qrels, pd.DataFrame) and {"query_id", "doc_id", "relevance"} <= set(qrels.columns) \
        else as_qrels_frame(qrels)
    r = run if isinstance(run, pd.DataFrame) and {"query_id", "doc_id", "score"} <= set(run.columns) \
        else as_run_frame(run)
    return q, r


class HandedRun(NamedTuple):
    """What `per_query` prepared for one run, handed to the caller through `PREPARED_RUNS`.

    Attributes:
        run: the run frame `per_query` was given (compare it by identity: ``handed.run is run``).
        prepared: the `PreparedRun` of that run, a repeated (query, doc) pair keeping its last
            score (unless the caller declared the run free of them with `UNIQUE_PAIRS`).
        frame: the rows ``prepared`` was built from (``run`` itself when no pair was repeated).
        judged_rows: ``judged_rows()`` gives ``(rows, grades)``: the score-order rows of
            ``prepared`` that the qrels judge (any grade; the last judgment of a repeated pair),
            ascending, and their grades, reusing the qrels lookups the measures made; None when
            every measure of the call mapped grades (``gains``) or kept judged documents only.
    """

    run: pd.DataFrame
    prepared: PreparedRun
    frame: pd.DataFrame
    judged_rows: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None


def prepare_run(run: pd.DataFrame) -> tuple[PreparedRun, pd.DataFrame]:
    """The prepared run of a run frame and the frame it was built from (a repeated (query, doc)
    pair keeps its last score, as pytrec_eval's dictionaries keep it)."""
    prepared = PreparedRun(run["query_id"], run["doc_id"], run["score"].to_numpy(dtype=np.float64))
    if current_side_info().extra.get(UNIQUE_PAIRS) is run:  # no repeated pair, the caller says
        return prepared, run
    drop = prepared.duplicate_rows()
    if drop is not None:
        keep = np.ones(len(run), dtype=bool)
        keep[drop] = False
        run = run[keep]
        prepared = PreparedRun(run["query_id"], run["doc_id"], run["score"].to_numpy(dtype=np.float64))
    return prepared, run


def _judged_subset(run: pd.DataFrame, prepared: PreparedRun, qrels: pd.DataFrame, gains: dict | None) -> PreparedRun:
    """The run restricted to documents with a non-negative judgment (trec_eval ``-J``); the
    order of the kept rows (and so every tie) is unchanged."""
    ctx = _Context(qrels, prepared, gains)
    keep = np.zeros(prepared.n, dtype=bool)
    for lo in range(0, prepared.n, LOOKUP_ROWS):  # the per-row arrays of one piece at a time
        rows = np.arange(lo, min(lo + LOOKUP_ROWS, prepared.n))
        keep[prepared.orig(rows[ctx.grades(rows) >= 0])] = True
    sub = run[keep]
    return PreparedRun(sub["query_id"], sub["doc_id"], sub["score"].to_numpy(dtype=np.float64))


def per_query(
    measures: Sequence[ir_measures.Measure], qrels: Any, run: Any
) -> tuple[pa.Array, dict[ir_measures.Measure, np.ndarray]]:
    """Per-query values of native measures: ``(query_ids, {measure: values})``.

    ``query_ids`` are the qrels' queries (first-appearance order); a query absent from the
    run has value 0 (ir_measures' default). Raises `NativeFallback` when the input
    cannot be computed natively with certainty, ``ValueError`` for a measure that is not native.
    """
    measures = list(measures)
    for m in measures:
        if not supports(m):
            raise ValueError(f"{m} has no native kernel")
    qrels_df, run_df = _frames(qrels, run)
    given = run_df
    prepared, run_df = prepare_run(run_df)
    variants: dict[tuple, list[ir_measures.Measure]] = {}
    for m in measures:
        gains = param(m, "gains", NOT_PROVIDED) if m.NAME == "nDCG" else NOT_PROVIDED
        gkey = tuple(sorted(gains.items())) if isinstance(gains, dict) else None
        variants.setdefault((gkey, param(m, "judged_only", NOT_PROVIDED) is True), []).append(m)
    out: dict[ir_measures.Measure, np.ndarray] = {}
    query_ids: pa.Array | None = None
    plain: _Context | None = None  # the context of the run as it is, grades as they are
    for (gkey, judged_only), ms in variants.items():
        gains = dict(gkey) if gkey is not None else None
        pr = _judged_subset(run_df, prepared, qrels_df, gains) if judged_only else prepared
        ctx = _Context(qrels_df, pr, gains)
        if gkey is None and not judged_only:
            plain = ctx
        if query_ids is None:
            query_ids = ctx.q.query_ids
        code = ctx.q.run_code
        present = code >= 0
        for m in ms:
            vals = _values(m, ctx)
            full = np.zeros(ctx.q.nq, dtype=np.float64)
            full[present] = vals[code[present]]
            out[m] = full
    if query_ids is None:
        query_ids = pa.array([], pa.large_string())
    sink = current_side_info().extra.get(PREPARED_RUNS)
    if sink is not None:  # the caller keeps this preparation for a later step on the same run
        sink.append(HandedRun(given, prepared, run_df, plain.judged_rows if plain is not None else None))
    return query_ids, {m: out[m] for m in measures}


def per_query_frame(measures: Sequence[ir_measures.Measure], qrels: Any, run: Any) -> pd.DataFrame:
    """Per-query values as a tidy frame ``query_id, measure, value`` (measure objects)."""
    qids, values = per_query(measures, qrels, run)
    q = qids.to_numpy(zero_copy_only=False)
    parts = [pd.DataFrame({"query_id": q, "measure": [m] * len(q), "value": v}) for m, v in values.items()]
    if not parts:
        return pd.DataFrame(columns=["query_id", "measure", "value"])
    return pd.concat(parts, ignore_index=True)


def iter_metrics(measures: Sequence[ir_measures.Measure], qrels: Any, run: Any) -> Iterator[Metric]:
    """``ir_measures.Metric(query_id, measure, value)`` per query and measure (plain floats).

    The values are computed at the call (a `NativeFallback` is raised there, not while
    iterating); the iterator only wraps them."""
    qids, values = per_query(measures, qrels, run)
    q = qids.to_pylist()
    return (Metric(query_id=qid, measure=m, value=value)
            for m, v in values.items() for qid, value in zip(q, v.tolist()))


def aggregate(measures: Sequence[ir_measures.Measure], qrels: Any, run: Any) -> dict[ir_measures.Measure, float]:
    """Mean over the qrels' queries (missing ones 0), as ``ir_measures.calc_aggregate``; NaN
    when the qrels have no query. The values are summed left to right (``np.add.accumulate``,
    not ``np.mean``'s pairwise sum), as ir_measures' mean does, so the aggregate equals the mean
    of `iter_metrics`' values to the last bit."""
    _, values = per_query(measures, qrels, run)
    return {m: float(np.add.accumulate(v)[-1] / len(v)) if len(v) else float("nan")
            for m, v in values.items()}


def top_rows(run: Any, k: int | None) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """``(query_ids, doc_ids, ranks)`` of each query's rows ranked 1..k in trec_eval's order
    (all rows for k None; a repeated pair keeps its last score), sorted by (query, rank): what a
    provider with another tie rule needs to see our order. Only the tie groups reaching into the
    top k are ordered by doc id. Raises `NativeFallback` for NaN scores."""
    frame = run if isinstance(run, pd.DataFrame) and {"query_id", "doc_id", "score"} <= set(run.columns) \
        else as_run_frame(run)
    prepared, _ = prepare_run(frame)
    rows, codes = prepared.rows_between(prepared.seg_start, prepared.depth_end(k))
    ranks = prepared.tie_ranks(rows, codes)
    if k is not None:
        keep = ranks <= k
        rows, codes, ranks = rows[keep], codes[keep], ranks[keep]
    order = np.lexsort((ranks, codes))
    rows, codes, ranks = rows[order], codes[order], ranks[order]
    docs = prepared.doc.take(pa.array(prepared.orig(rows), type=pa.int64()))
    qids = prepared.query_ids.take(pa.array(codes, type=pa.int64()))
    return qids, docs, ranks
