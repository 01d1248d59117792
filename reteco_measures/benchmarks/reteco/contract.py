"""The ``reteco`` run contract (RETECO SemEval-2027 Task 1, both tracks).

Rules, from the RETECO evaluation plan ("Deterministic handling"):

* TREC 6 columns ``query_id Q0 doc_id rank score run_id``; malformed lines are reported and
  skipped (the rest of the file still counts);
* duplicate document ids of a query are removed after their first occurrence (file order);
* unknown document ids (not in the organiser corpus, when ``corpus`` is given) are discarded;
* documents of another domain are discarded: when both ``corpus`` and ``queries`` carry a
  ``domain`` column, a document must be in the corpus of its query's own domain (the release
  ships one corpus per domain; the benchmark scorers' default ``corpus_scope='domain'``). A row
  whose query has no domain is checked against the whole corpus only;
* rows of queries that are not expected (when ``queries`` is given) are discarded;
* missing queries / steps / turns score 0 (reported, not an error of the file);
* ordering is trec_eval's (score, then doc id, both descending); the rank column is ignored.

Every removal is reported with its line number. The cleaned run is returned; with a ``corpus``,
``report.extra["doc_positions"]`` holds (the corpus' id index `doc_id_index`, each kept row's
position in it), so that a later check (the benchmarks' domain check) looks nothing up twice. Problem kinds:
``unknown_query``, ``duplicate``, ``unknown_doc`` (a document in no corpus), ``other_domain_doc``
(a document of another domain's corpus), ``missing_query``, ``format``, ``empty``.

Severities (``Problem.severity``): every problem above is a ``warning`` — the rules say what
happens to the row (it is skipped, removed or discarded, or the query scores 0) and the rest of
the run still counts, so the report stays ``valid``. The one ``error`` is a run with no usable
row at all (an empty file, or every row removed): there is nothing to score.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...contracts.base import ValidationReport, contract, id_frame, with_severity
from ...errors import Problem
from ...io.convert import is_source, run_frame_with_problems
from ...io.lines import read_source_bytes, source_name
from ...io.readers import read_run_with_problems
from ...kernels.context import RankedRun
from ...kernels.ranking import group_rank, row_ranks
from ...scale.stream import watch_blocks
from ...side import load_topics

__all__ = ["validate_reteco", "load_run_rows", "discard_counts", "check_kit_format", "doc_id_index", "id_positions",
           "is_in", "CorpusScope", "corpus_scope", "StreamDiscards", "ranked_by_contract", "CheckedRows", "check_rows",
           "reteco_report", "corpus_codes", "ids_only", "declare_distinct_doc_ids"]


def load_run_rows(run: Any, format: str = "auto") -> tuple[pd.DataFrame, list[Problem], str | None]:
    """Rows of a run with a ``line`` column (None-like 0 for in-memory data) and read problems."""
    if is_source(run):
        frame, problems = read_run_with_problems(run, format)  # type: ignore[arg-type]
        return frame, problems, source_name(run)
    # rows whose score is not a finite number are problems (named by row), as bad lines of a file are
    frame, problems = run_frame_with_problems(run, line_numbers=isinstance(run, pd.DataFrame))
    if "line" not in frame.columns:
        frame["line"] = 0
    if "rank" not in frame.columns:
        frame["rank"] = 0
    return frame, problems, None


def _column_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Arrow dictionary codes of a string column (int32, one per row) and the number of distinct
    values (one dictionary for all chunks)."""
    codes, dictionary = _column_dictionary(column)
    return codes, len(dictionary)


def _column_dictionary(column: pd.Series) -> tuple[np.ndarray, pa.Array]:
    """Arrow dictionary codes of a string column (int32, one per row; floats with NaN for a null
    value) and the distinct values in order of first appearance (one dictionary for all chunks)."""
    values = pa.array(column.array)
    encoded = pc.dictionary_encode(values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values]))
    dictionary = encoded.chunk(0).dictionary if encoded.num_chunks else pa.array([], values.type)
    return pa.chunked_array([c.indices for c in encoded.chunks], pa.int32()).to_numpy(), dictionary


def _pair_codes(frame: pd.DataFrame, q: np.ndarray | None = None, doc_pos: np.ndarray | None = None) -> np.ndarray:
    """One int64 per row identifying its (query_id, doc_id) pair: integer codes of each column
    combined (far less memory than hashing the two string columns together); ``q``: the query
    codes when the caller has them; ``doc_pos``: each row's position in the corpus' id index
    (`id_positions`, -1 = not in the corpus) when the caller has them: those are the documents'
    codes, and only the documents outside the corpus are encoded here."""
    if q is None:
        q, _ = _column_codes(frame["query_id"])
    if doc_pos is None:
        d, n_docs = _column_codes(frame["doc_id"])
    else:
        d = doc_pos.astype(np.int64, copy=True)
        outside = np.flatnonzero(d < 0)
        n_docs = int(d.max()) + 1 if len(d) else 0
        if len(outside):
            codes, size = _column_codes(frame["doc_id"].take(outside))
            if codes.dtype.kind == "f":  # a null id (NaN code): one code of its own
                codes = np.where(np.isnan(codes), size, codes)
                size += 1
            d[outside] = n_docs + codes.astype(np.int64)
            n_docs += size
    if q.dtype.kind == "f" or d.dtype.kind == "f":  # a null id: codes as floats, compared as values
        return pd.Series(q.astype(np.float64) * max(n_docs, 1) + d).to_numpy()
    return q.astype(np.int64) * max(n_docs, 1) + d.astype(np.int64)


def _repeats(pair: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows repeating the pair of an earlier row, the first row of each row's pair). Integer
    pairs: one stable sort puts each pair's rows together in row order, so a row repeats an
    earlier one iff it equals the row before it in that order, and its first row is the head of
    its stretch. Float pairs (a null id): one hash factorisation, whose codes come in order of
    first appearance (a null pair is a pair too)."""
    n = len(pair)
    if not n:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    if pair.dtype.kind == "f":
        codes, _ = pd.factorize(pair, use_na_sentinel=False)
        seen = np.empty(n, dtype=codes.dtype)
        seen[0] = -1
        np.maximum.accumulate(codes[:-1], out=seen[1:])
        dup = codes <= seen
        return dup, np.flatnonzero(~dup)[codes]
    order = np.argsort(pair, kind="stable")
    ordered = pair[order]
    same = np.zeros(n, dtype=bool)
    np.equal(ordered[1:], ordered[:-1], out=same[1:])
    dup = np.zeros(n, dtype=bool)
    dup[order[same]] = True
    heads = order[~same]  # each pair's first row
    first = np.empty(n, dtype=np.int64)
    first[order] = heads[np.cumsum(~same) - 1]
    return dup, first


def _unique_strings(column: pd.Series) -> pa.Array | np.ndarray:
    """The distinct values of a text column (an Arrow hash over the column as it is)."""
    arr = _strings(column)
    if arr is None:
        return pd.unique(column.to_numpy(dtype=object))
    return pc.unique(arr).to_numpy(zero_copy_only=False)


def _take_rows(frame: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """``frame[keep]`` built column by column while the columns are removed from ``frame`` (the
    caller's frame is consumed), so that the run is never held twice."""
    if keep.all():
        return frame.reset_index(drop=True)
    out = {}
    for col in list(frame.columns):
        out[col] = frame[col].to_numpy()[keep] if frame[col].dtype.kind in "biuf" else \
            frame[col].array[keep]
        del frame[col]
    return pd.DataFrame(out, copy=False)


def _trec_eval_ranks(frame: pd.DataFrame, block_rows: int = 1 << 20, codes: np.ndarray | None = None) -> np.ndarray:
    """The trec_eval rank of every row, in row order (score descending at single precision, then
    doc id descending in byte order, then row order, as `reteco_measures.kernels.ranking`).
    ``codes``: each row's query code when the caller has them (any integer codes, one per
    distinct query id).

    One integer sort by (query, score) - no string is compared but within a tie - then the tied
    rows alone sorted by doc id. Rows whose query id is null fall back to the string sort, cut
    into blocks of whole queries of about ``block_rows`` rows when the queries are contiguous."""
    n = len(frame)
    if not n:
        return np.zeros(0, dtype=np.int64)
    if codes is None or codes.dtype.kind not in "iu":  # (codes with a null id are floats)
        codes, _ = _column_codes(frame["query_id"])
    score = frame["score"].to_numpy(dtype=np.float64)
    if codes.dtype.kind not in "iu" or np.isnan(score).any():
        return _string_sort_ranks(frame, codes, block_rows)
    with np.errstate(over="ignore"):  # beyond single precision: ±inf, as trec_eval's (float) cast
        desc = _descending_bits(score.astype(np.float32))
    key = (codes.astype(np.uint64) << np.uint64(32)) | desc.astype(np.uint64)
    if n > 1 and bool(np.all(key[1:] >= key[:-1])):  # rows already in (query, score) order: no sort
        order, sk = np.arange(n, dtype=np.int64), key
    else:
        order = np.argsort(key, kind="stable")  # equal keys keep row order
        sk = key[order]
    same = sk[1:] == sk[:-1]
    if same.any():  # tie groups: order each by doc id descending (bytes), then row order
        tied = np.zeros(n, dtype=bool)
        tied[1:] |= same
        tied[:-1] |= same
        at = np.flatnonzero(tied)
        group = np.cumsum(np.r_[True, sk[at[1:]] != sk[at[:-1]]])
        rows = order[at]
        docs = pa.array(frame["doc_id"].take(rows).array)
        table = pa.table({"g": pa.array(group), "d": docs, "p": pa.array(rows)})
        within = pc.sort_indices(table, sort_keys=[("g", "ascending"), ("d", "descending"), ("p", "ascending")])
        order[at] = rows[within.to_numpy()]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = group_rank(codes[order])
    return rank


def _descending_bits(s32: np.ndarray) -> np.ndarray:
    """uint32 keys whose ascending order is the float32 scores' descending order (-0.0 and 0.0
    equal, as C compares them)."""
    bits = (s32 + np.float32(0.0)).view(np.uint32)  # -0.0 + 0.0 == +0.0
    negative = (bits >> np.uint32(31)).astype(bool)
    ascending = np.where(negative, ~bits, bits | np.uint32(0x80000000))
    return ~ascending


def _string_sort_ranks(frame: pd.DataFrame, codes: np.ndarray, block_rows: int) -> np.ndarray:
    """`_trec_eval_ranks` through `row_ranks` (one string sort), in blocks of whole queries when
    each query's rows are contiguous, so that its temporary copies stay small on large runs."""
    n = len(frame)
    rank = np.zeros(n, dtype=np.int64)
    valid = codes[~np.isnan(codes)] if codes.dtype.kind == "f" else codes
    n_queries = len(np.unique(valid)) + int(len(valid) < n)
    change = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    bounds = [0, n]
    if len(change) + 1 == n_queries and n > block_rows:  # contiguous queries: cut between them
        cuts = change[np.minimum(np.searchsorted(change, np.arange(block_rows, n, block_rows)), len(change) - 1)]
        bounds = [0, *sorted({int(c) for c in cuts}), n]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        rank[lo:hi] = row_ranks(frame.iloc[lo:hi], "trec_eval")
    return rank


def ranked_by_contract(run: pd.DataFrame) -> RankedRun | None:
    """The contract's cleaned run (``report.run``: ``query_id, doc_id, score`` and its trec_eval
    ``rank``) as a `RankedRun` for the evaluation, so that the run is ranked once per call.

    ``RankedRun.run`` is ``run[["query_id", "doc_id", "score"]]`` (the frame to evaluate: pass
    that very object on), ``RankedRun.ranked`` the same rows sorted by query id (byte order) then
    rank, with the ``rank`` column: what ``rank_run(run, "trec_eval")`` gives, built from the
    contract's ranks without sorting a string (each row goes to its query's first slot plus its
    rank). None when the ranks are not 1..n within every query (then the evaluation ranks the run
    itself)."""
    cols = ["query_id", "doc_id", "score"]
    if "rank" not in run.columns or not set(cols) <= set(run.columns):
        return None
    frame = run[cols]
    n = len(frame)
    rank = run["rank"].to_numpy()
    if rank.dtype.kind not in "iu":
        return None
    if not n:
        return RankedRun(frame, "trec_eval", frame.assign(rank=np.zeros(0, dtype=np.int64)))
    values = _strings(frame["query_id"])
    if values is None:
        return None
    encoded = pc.dictionary_encode(values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values]))
    if values.null_count or rank.min() < 1:
        return None
    codes = pa.chunked_array([c.indices for c in encoded.chunks], pa.int32()).to_numpy()
    dictionary = encoded.chunk(0).dictionary
    n_queries = len(dictionary)
    # each query's place in byte order (trec_eval's and `rank_run`'s query order)
    by_bytes = np.empty(n_queries, dtype=np.int64)
    by_bytes[pc.sort_indices(dictionary).to_numpy()] = np.arange(n_queries, dtype=np.int64)
    counts = np.bincount(codes, minlength=n_queries)
    sorted_counts = np.zeros(n_queries, dtype=np.int64)
    sorted_counts[by_bytes] = counts  # rows per query, queries in byte order
    starts = (np.cumsum(sorted_counts) - sorted_counts)[by_bytes]  # each query's first slot
    r = rank.astype(np.int64, copy=False)
    if bool(np.any(r > counts[codes])):
        return None
    order = np.full(n, -1, dtype=np.int64)
    order[starts[codes] + r - 1] = np.arange(n, dtype=np.int64)
    if order.min() < 0:  # two rows of a query share a rank
        return None
    ranked = frame.take(order).reset_index(drop=True)
    ranked["rank"] = r[order]
    return RankedRun(frame, "trec_eval", ranked)


class _Lazy:
    """A column's values fetched for chosen rows only: ``fetch(rows)`` loads them (one vectorised
    take) and returns ``rows``; ``lazy[i]`` then gives row i's value."""

    def __init__(self, column: pd.Series):
        self.column = column
        self.values: dict[int, Any] = {}

    def fetch(self, rows: np.ndarray) -> np.ndarray:
        if len(rows):
            self.values.update(zip(rows.tolist(), self.column.take(rows).tolist()))
        return rows

    def __getitem__(self, i: Any) -> Any:
        return self.values[int(i)]


def _strings(column: pd.Series | pd.Index) -> pa.Array | pa.ChunkedArray | None:
    """A string column as Arrow strings (no copy for Arrow-backed columns); None for any other."""
    if column.dtype != object and not isinstance(column.dtype, pd.StringDtype):
        return None
    try:
        arr = pa.array(column.array if isinstance(column, pd.Series) else column, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return arr if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) else None


#: id(corpus frame) -> (the frame, its id index, each corpus row's position in it): holding the
#: frame keeps its id from being reused
_ID_INDEX: dict[int, tuple[pd.DataFrame, pa.Array, np.ndarray]] = {}

#: id(frame) -> (the frame, the corpus frame whose ``doc_id`` column it holds): see `ids_only`
_ID_SOURCE: dict[int, tuple[pd.DataFrame, pd.DataFrame]] = {}


def doc_id_index(corpus: pd.DataFrame) -> pa.Array:
    """The corpus' id index: its distinct ``doc_id`` values (as text) in first-appearance order,
    one Arrow string array, built once per corpus frame (a release's corpus is one frame per
    process, see `reteco_measures.benchmarks.tempo.data.load_tempo`)."""
    return corpus_codes(corpus)[0]


def corpus_codes(corpus: pd.DataFrame) -> tuple[pa.Array, np.ndarray]:
    """(the corpus' id index `doc_id_index`, each corpus row's position in it), from one Arrow
    dictionary encoding of the ``doc_id`` column, built once per corpus frame (and shared by the
    frames `ids_only` derives from it)."""
    source = _ID_SOURCE.get(id(corpus))
    if source is not None and source[0] is corpus:
        corpus = source[1]
    hit = _ID_INDEX.get(id(corpus))
    if hit is not None and hit[0] is corpus:
        return hit[1], hit[2]
    ids = corpus["doc_id"]
    arr = _strings(ids) if isinstance(ids.dtype, pd.StringDtype) else None
    if arr is None:
        arr = pa.array(ids.astype(str).to_numpy(dtype=object), type=pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    encoded = pc.dictionary_encode(arr.cast(pa.large_string()))  # dictionary: first-appearance order
    index = encoded.dictionary
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    if len(_ID_INDEX) > 8:
        _ID_INDEX.clear()
    _ID_INDEX[id(corpus)] = (corpus, index, codes)
    return index, codes


def declare_distinct_doc_ids(corpus: pd.DataFrame) -> None:
    """Declare that the ``doc_id`` values of this corpus frame (this object only) are distinct
    text, as its loader knows (`reteco_measures.benchmarks.tempo.data.load_tempo` checks it per file
    and keeps it with its cached ids): `corpus_codes` then takes the column itself as the id index
    and each row's number as its position, the result its dictionary encoding would give, without
    hashing every id. A column that is not text is left to `corpus_codes`."""
    arr = _strings(corpus["doc_id"]) if isinstance(corpus["doc_id"].dtype, pd.StringDtype) else None
    if arr is None:
        return
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        return
    if len(_ID_INDEX) > 8:
        _ID_INDEX.clear()
    _ID_INDEX[id(corpus)] = (corpus, arr.cast(pa.large_string()), np.arange(len(arr), dtype=np.int64))


def ids_only(corpus: pd.DataFrame) -> pd.DataFrame:
    """The corpus' ``doc_id`` column alone (a check that must not see the corpus' ``domain``), one
    frame per corpus frame, whose id index is the corpus' own (built once for both)."""
    hit = _ID_SOURCE.get(id(corpus))
    if hit is not None and hit[0] is corpus:  # already the ids of a corpus
        return corpus
    for derived, source in list(_ID_SOURCE.values()):
        if source is corpus:
            return derived
    if len(_ID_SOURCE) > 8:
        _ID_SOURCE.clear()
    out = corpus[["doc_id"]]
    _ID_SOURCE[id(out)] = (out, corpus)
    return out


def id_positions(values: pd.Series, index: pa.Array) -> np.ndarray:
    """Each value's position in ``index`` (distinct values, as `doc_id_index` gives), -1 where
    absent: one Arrow hash lookup over the whole column (integer codes; no Python object per row).
    A few values against a large index (a qrels' gold documents against a corpus) hash the values
    and scan the index instead, so that the index is not hashed for every call."""
    arr = _strings(values)
    if arr is None:  # not a text column: hash lookups of the objects (a number is no text id)
        return pd.Index(index.to_numpy(zero_copy_only=False), dtype=object).get_indexer(
            values.to_numpy(dtype=object)).astype(np.int64)
    if not len(values):
        return np.zeros(0, np.int64)
    arr = arr.cast(pa.large_string())
    if 8 * len(arr) < len(index):
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        distinct = pc.unique(arr.drop_null())
        # which index entry holds each distinct value (the first, should the index repeat one)
        hit = pc.index_in(index.cast(pa.large_string()), value_set=distinct)
        at = np.flatnonzero(np.asarray(hit.is_valid(), dtype=bool))
        where = np.full(len(distinct) + 1, -1, dtype=np.int64)  # the last slot: values not found
        which = hit.filter(hit.is_valid()).to_numpy(zero_copy_only=False).astype(np.int64)
        _, first = np.unique(which, return_index=True)
        where[which[first]] = at[first]
        code = pc.index_in(arr, value_set=distinct).fill_null(len(distinct))
        return where[code.to_numpy(zero_copy_only=False).astype(np.int64)]
    found = pc.index_in(arr, value_set=index).fill_null(-1)
    return found.to_numpy(zero_copy_only=False).astype(np.int64)


def is_in(values: pd.Series, allowed: pd.Series) -> np.ndarray:
    """``values.isin(allowed)`` as a boolean array, through an Arrow hash lookup when both are text."""
    arr, value_set = _strings(values), _strings(allowed)
    if arr is None or value_set is None:
        return values.isin(set(allowed.tolist())).to_numpy(dtype=bool)
    if isinstance(value_set, pa.ChunkedArray):
        value_set = value_set.combine_chunks()
    found = pc.is_in(arr.cast(pa.large_string()), value_set=value_set.cast(pa.large_string()))
    return found.fill_null(False).to_numpy(zero_copy_only=False).astype(bool) if len(values) else \
        np.zeros(0, dtype=bool)


def _doc_positions(frame: pd.DataFrame, known: pd.DataFrame, source: Any = None) -> tuple[pa.Array, np.ndarray]:
    """(the corpus' id index, each row's position in it, -1 = unknown document): the index is
    `doc_id_index` of ``source`` when it is the corpus frame ``known`` was read from, so that it is
    built once per corpus."""
    corpus = source if isinstance(source, pd.DataFrame) and "doc_id" in source.columns else known
    index = doc_id_index(corpus)
    return index, id_positions(frame["doc_id"], index)


def _unknown_docs(frame: pd.DataFrame, known: pd.DataFrame, source: Any = None) -> np.ndarray:
    """Rows whose ``doc_id`` is not among ``known['doc_id']`` (see `_doc_positions`)."""
    return _doc_positions(frame, known, source)[1] < 0


def _other_domain_docs(frame: pd.DataFrame, known: pd.DataFrame, expected: pd.DataFrame | None,
                       in_corpus: np.ndarray) -> tuple[np.ndarray, pd.Series | None]:
    """Rows whose document is in the corpus but not in the corpus of the row's query's domain,
    and each row's query domain (None, with no row, when the corpus or the queries carry no
    ``domain``). Rows of a query without a domain are never counted."""
    if expected is None or "domain" not in known.columns or "domain" not in expected.columns:
        return np.zeros(len(frame), dtype=bool), None
    per_query = expected.drop_duplicates("query_id").set_index("query_id")["domain"]
    qdom = frame["query_id"].map(per_query)
    has = qdom.notna().to_numpy()
    corpus_pairs = pd.MultiIndex.from_arrays([known["domain"].astype(str), known["doc_id"]])
    rows = pd.MultiIndex.from_arrays([qdom.fillna("").astype(str), frame["doc_id"].astype(str)])
    in_domain = rows.isin(corpus_pairs)
    return in_corpus & has & ~in_domain, qdom


def discard_counts(run: pd.DataFrame, corpus: Any = None, queries: Any = None) -> dict[str, int]:
    """How many rows of a run the contract discards as ``duplicate`` and (with ``corpus``) as
    ``unknown_doc`` and (with ``corpus`` and ``queries`` that both carry a ``domain``) as
    ``other_domain_doc``, without validating it.

    ``run`` is a run already read into a frame (``query_id``, ``doc_id``; every score finite, as
    `as_run_frame` gives it). The counts are those of
    ``validate_reteco(run, corpus=corpus, queries=queries).problem_counts()`` for these kinds, from
    the same row masks, but no problem is built and the run is neither copied, cleaned nor ranked
    (``queries`` serve only the domains here: rows of unknown queries are not counted). Kinds with
    no such row are left out (``{}``: nothing would be discarded).
    """
    dup = pd.Series(_pair_codes(run)).duplicated(keep="first").to_numpy()
    counts = {"duplicate": int(dup.sum())}
    known = id_frame(corpus, "doc_id")
    if known is not None:
        # a repeated pair is counted as a duplicate only, as the contract reports it
        unknown = _unknown_docs(run, known, corpus)
        counts["unknown_doc"] = int((unknown & ~dup).sum())
        other, _ = _other_domain_docs(run, known, id_frame(queries, "query_id"), ~unknown)
        counts["other_domain_doc"] = int((other & ~dup).sum())
    return {kind: n for kind, n in counts.items() if n}


class _RowProblems:
    """The contract's problem about one run row: a warning (the row is discarded, the rest of the
    run counts) naming the row's line, query, document and file."""

    def __init__(self, lines: np.ndarray, qids: _Lazy, docs: _Lazy, path: str | None):
        self.lines, self.qids, self.docs, self.path = lines, qids, docs, path

    def problem(self, message: str, i: int, kind: str) -> Problem:
        return Problem(message, line=_line(self.lines[i]), query_id=self.qids[i], path=self.path, kind=kind,
                       doc_id=self.docs[i], severity="warning")


def _line(value: Any) -> int | None:
    v = int(value)
    return v if v > 0 else None


class CheckedRows(NamedTuple):
    """A run's rows read and checked by the ``reteco`` contract, not yet taken or ranked
    (`check_rows`; `reteco_report` makes the report). The frame is consumed by `reteco_report`."""

    frame: pd.DataFrame  #: every row read, with its ``line``
    keep: np.ndarray  #: the rows the contract keeps
    problems: list[Problem]  #: the read problems, then one per discarded row, in the contract's order
    path: str | None  #: the file the problems name
    query_codes: np.ndarray  #: each row's query code (position in ``query_values``)
    query_values: pa.Array  #: the run's distinct query ids, in order of first appearance
    doc_index: pa.Array | None  #: the corpus' id index (`doc_id_index`), None without a corpus
    doc_positions: np.ndarray | None  #: each row's position in ``doc_index`` (-1: not in the corpus)
    expected: pd.DataFrame | None  #: the expected queries (`id_frame`), None without them


def check_rows(run: Any, *, corpus: Any = None, queries: Any = None, path: str | None = None) -> CheckedRows:
    """The ``reteco`` contract's row checks (unknown queries, repeated documents, documents outside
    the corpus or outside the query's domain corpus), each discarded row reported with its line,
    without copying or ranking the run: see `validate_reteco`, which is ``reteco_report(check_rows(...))``.
    A benchmark that discards more rows (the domain check of ``reteco-1a``) passes them to
    `reteco_report`, so that the run is taken and ranked once."""
    frame, problems, read_path = load_run_rows(run, "trec")
    path = read_path if read_path is not None else path
    problems = list(problems)
    keep = np.ones(len(frame), dtype=bool)
    # ids are fetched only for the rows a problem names (Python strings for every row of a 5M-row
    # run would cost more memory than the run itself)
    qids, docs = _Lazy(frame["query_id"]), _Lazy(frame["doc_id"])
    lines = frame["line"].to_numpy()
    said = _RowProblems(lines, qids, docs, path)

    expected = id_frame(queries, "query_id")
    if expected is not None:
        unknown_q = ~is_in(frame["query_id"], expected["query_id"])
        for i in qids.fetch(docs.fetch(np.flatnonzero(unknown_q))):
            problems.append(said.problem("query id not in the topics; row discarded", i, "unknown_query"))
        keep &= ~unknown_q

    known = id_frame(corpus, "doc_id")
    doc_index = doc_pos = None
    if known is not None:  # each row's position in the corpus' id index: also the document's code
        doc_index, doc_pos = _doc_positions(frame, known, corpus)
    qcodes, qvalues = _column_dictionary(frame["query_id"])  # once, for the pairs and the ranking
    dup, first_row = _repeats(_pair_codes(frame, qcodes, doc_pos))
    if dup.any():
        for i in qids.fetch(docs.fetch(np.flatnonzero(dup & keep))):
            first = int(lines[first_row[i]])
            where = f" (first at line {first})" if first > 0 else ""
            problems.append(said.problem(f"duplicate document {docs[i]} removed{where}", i, "duplicate"))
        keep &= ~dup
    del first_row

    if known is not None:
        unknown_d = doc_pos < 0
        for i in qids.fetch(docs.fetch(np.flatnonzero(unknown_d & keep))):
            problems.append(said.problem(f"unknown document {docs[i]} discarded (not in the corpus)", i,
                                         "unknown_doc"))
        keep &= ~unknown_d
        other_d, qdom = _other_domain_docs(frame, known, expected, ~unknown_d)
        if other_d.any():
            home = known.drop_duplicates("doc_id").set_index("doc_id")["domain"]
            rows = np.flatnonzero(other_d & keep)
            qd = _Lazy(qdom)
            for i in qids.fetch(docs.fetch(qd.fetch(rows))):
                problems.append(said.problem(f"document {docs[i]} of another domain discarded (in the "
                                             f"{home.get(docs[i])} corpus, not in the {qd[i]} corpus)", i,
                                             "other_domain_doc"))
            keep &= ~other_d
    return CheckedRows(frame, keep, problems, path, qcodes, qvalues, doc_index, doc_pos, expected)


def reteco_report(checked: CheckedRows, discard: np.ndarray | None = None) -> ValidationReport:
    """The ``reteco`` contract's report of `check_rows`' rows: the expected queries without a kept
    row (they score 0), every problem a warning, the empty-run error, and the kept rows as
    ``report.run`` (``query_id, doc_id, score, rank, line``, file order) with their trec_eval ranks.

    ``discard``: rows a further check removes (the benchmarks' domain check, which reports them
    itself): they are neither taken nor ranked, but the missing queries and the empty-run error
    are those of the rows the contract keeps. The checked frame is consumed (its columns are
    released as the kept rows are taken)."""
    keep = checked.keep
    final = keep & ~discard if discard is not None else keep
    n_read = len(checked.frame)
    problems = list(checked.problems)
    missing: list[str] = []
    if checked.expected is not None:
        missing = _missing_queries(checked)
        for q in missing:
            problems.append(Problem("query missing from the run (scores 0)", query_id=q, path=checked.path,
                                    kind="missing_query", severity="warning"))
    # each kept row's position in the corpus' id index, for checks that follow (the domain check)
    extra = {"doc_positions": (checked.doc_index, checked.doc_positions[final])} \
        if checked.doc_positions is not None else {}
    frame = checked.frame
    for col in [c for c in frame.columns if c not in ("query_id", "doc_id", "score", "line")]:
        del frame[col]  # (the file's rank and run name: not copied, the rank is recomputed)
    cleaned = _take_rows(frame, final)
    cleaned["rank"] = _trec_eval_ranks(cleaned, codes=checked.query_codes[final])
    cleaned = cleaned[["query_id", "doc_id", "score", "rank", "line"]]
    problems = with_severity(problems, "warning")
    if not keep.any():
        what = "every row was removed" if n_read else "the run holds no readable row"
        problems.insert(0, Problem(f"no usable row: {what}; there is nothing to score", path=checked.path,
                                   kind="empty", severity="error"))
    report = ValidationReport("reteco", problems, cleaned, missing_queries=missing)
    report.extra.update(extra)
    return report


def _missing_queries(checked: CheckedRows) -> list[str]:
    """The expected query ids no row kept by the contract names, in the expected order."""
    codes = checked.query_codes[checked.keep]
    if codes.dtype.kind in "iu":
        present = checked.query_values.take(pa.array(np.flatnonzero(
            np.bincount(codes, minlength=len(checked.query_values))), type=pa.int64()))
        present = pd.Series(present.to_numpy(zero_copy_only=False), dtype=object)
    else:  # a null query id (float codes)
        present = pd.Series(_unique_strings(checked.frame["query_id"][checked.keep]), dtype=object)
    ids = checked.expected["query_id"]
    return ids[~is_in(ids, present)].tolist()


@contract("reteco")
def validate_reteco(run: Any, *, corpus: Any = None, queries: Any = None, top_k: int = 10,
                    path: str | None = None) -> ValidationReport:
    """The ``reteco`` contract (see the module doc): `reteco_report` of `check_rows`. ``path``: the
    file a run given as a frame was read from (its problems name it; a file names itself)."""
    return reteco_report(check_rows(run, corpus=corpus, queries=queries, path=path))


# ------------------------------------------------------------------------------------------------
# the RETECO starter kit's format check (``validate --rules kit``)

#: Python's ``int()`` of one whitespace-free field: digits (any Unicode decimal digit), an optional
#: sign, ``_`` only between digits
_KIT_DIGITS = r"\d+(?:_\d+)*"
_KIT_INT = rf"[+-]?{_KIT_DIGITS}"
#: Python's ``float()`` of one whitespace-free field: decimal or scientific notation, ``_`` between
#: digits, ``nan`` / ``inf`` / ``infinity`` in any case
_KIT_FLOAT = (rf"[+-]?(?:(?:{_KIT_DIGITS}(?:\.(?:{_KIT_DIGITS})?)?|\.{_KIT_DIGITS})(?:[eE][+-]?{_KIT_DIGITS})?"
              r"|(?i:nan|inf|infinity))")


def check_kit_format(source: Any) -> list[Problem]:
    """The checks of the RETECO starter kit's ``format_checker.py`` (github.com/DataScienceUIBK/
    RETECO, ``starter_kit/``), reimplemented from their description: every non-blank line has
    exactly 6 whitespace-separated fields, the rank (4th) is an integer as Python's ``int`` reads
    it and at least 1, no rank repeats within a topic, and the score (5th) is a number as Python's
    ``float`` reads it (so ``3_0``, ``nan`` and ``inf`` pass, ``1.0`` as a rank fails).

    Returns one ``error`` problem (kind ``kit_format``) per failing line, an empty list when the
    kit's checker would pass the file. Vectorised over the lines (pandas string operations)."""

    path = source_name(source)
    text = read_source_bytes(source).decode("utf-8", errors="replace")
    lines = pd.Series(text.splitlines(), dtype=object)
    numbers = np.arange(1, len(lines) + 1)
    filled = lines.str.strip().str.len().to_numpy() > 0
    lines, numbers = lines[filled].reset_index(drop=True), numbers[filled]
    fields = lines.str.split()
    n = fields.str.len().to_numpy()
    qid = fields.str[0].fillna("")
    rank_s, score_s = fields.str[3].fillna(""), fields.str[4].fillna("")
    six = n == 6
    rank_ok = rank_s.str.fullmatch(_KIT_INT).to_numpy(dtype=bool)
    rank_v = pd.to_numeric(rank_s.str.replace("_", "", regex=False).where(rank_ok), errors="coerce")
    rank_pos = rank_ok & (rank_v.fillna(0).to_numpy() >= 1)
    score_ok = score_s.str.fullmatch(_KIT_FLOAT).to_numpy(dtype=bool)
    repeated = (six & rank_pos) & pd.DataFrame({"q": qid, "r": rank_v}).duplicated().to_numpy()
    why = np.full(len(lines), "", dtype=object)
    why[six & ~score_ok] = "score is not a number"
    why[six & rank_ok & ~rank_pos] = "rank is below 1"
    why[six & ~rank_ok] = "rank is not an integer"
    why[repeated & score_ok] = "rank repeated within the topic"
    why[~six] = "expected 6 fields"
    bad = np.flatnonzero(why != "")
    return [Problem(f"{why[i]}: {lines[i][:80]!r} (starter-kit format check)", line=int(numbers[i]),
                    query_id=str(qid[i]) or None, path=path, kind="kit_format", severity="error")
            for i in bad.tolist()]


class CorpusScope(NamedTuple):
    """The corpus and queries the contract gets, and in words which corpus scope they give."""

    corpus: pd.DataFrame | None  #: ``doc_id`` (and ``domain`` for the domain scope), or None
    queries: Any  #: the expected queries: a frame with ``query_id, domain``, the caller's value, or None
    description: str  #: which scope applies and why (``eval`` prints it)


def corpus_scope(qrels: pd.DataFrame, corpus: Any = None, queries: Any = None, topics: Any = None,
                 scope: str = "domain", domains: Collection[str] = ()) -> CorpusScope:
    """The corpus and queries to hand `validate_reteco` for a run judged by ``qrels``, as the
    benchmark scorers scope the corpus.

    ``scope='domain'`` (the scorers' default): a document counts only in the corpus of its query's
    domain. A document's domain is its corpus record's ``domain`` field, else its id's
    ``<domain>/`` prefix when every corpus id carries one naming one of ``domains`` (the TEMPO
    release's ids, ``bitcoin/25785deb_4434.txt``, with the TEMPO domains). A query's domain is its ``domain`` in
    ``topics`` (or ``queries``), else the domain of its first judged document in ``qrels`` (as the
    Track 1 scorer reads the organisers' sample). Without them the whole corpus is the scope, and
    the description says why. ``scope='all'``: a document of any domain is kept.

    Args:
        qrels: the qrels frame (``query_id``, ``doc_id``).
        corpus: the corpus ids (a path or frame, see `id_frame`); None: nothing to scope.
        queries: the expected query ids (a path or frame), or None (the qrels' queries).
        topics: the topics metadata (a path or frame with ``query_id``, ``domain``), or None.
        scope: ``"domain"`` or ``"all"``.
        domains: the domain names an id prefix may give (the command line passes the TEMPO
            domains); empty (the default): ids give no domain.
    """
    if corpus is None:
        return CorpusScope(None, queries, "no --corpus: unknown documents and documents of another domain are "
                                          "not checked")
    docs = id_frame(corpus, "doc_id")
    if scope == "all":
        return CorpusScope(docs[["doc_id"]], queries, ("corpus scope all (--corpus-scope all): a document of any "
                                                       "domain is kept, as 'score ... --corpus-scope all'"))
    how = []
    if "domain" not in docs.columns or docs["domain"].isna().any():
        prefix = docs["doc_id"].str.extract(r"^([^/]+)/", expand=False)
        if not prefix.isin(list(domains)).all():
            return CorpusScope(docs[["doc_id"]], queries, (
                "corpus scope all: the corpus records carry no domain, so a document of another domain is "
                "kept ('score' keeps only the query's own domain corpus: give the corpus records a 'domain' "
                "field for the same rule)"))
        docs = docs.assign(domain=prefix.to_numpy())
        how.append("a document's domain is its '<domain>/' id prefix")
    else:
        how.append("a document's domain is its corpus 'domain' field")
    expected = id_frame(queries, "query_id") if queries is not None else None
    known = None
    for frame, name in ((load_topics(topics) if topics is not None else None, "--topics"), (expected, "--queries")):
        if frame is not None and "domain" in frame.columns and frame["domain"].notna().all():
            known, where = frame.drop_duplicates("query_id").set_index("query_id")["domain"].astype(str), name
            break
    if known is None:  # the domain of each query's first judged document
        home = docs.drop_duplicates("doc_id").set_index("doc_id")["domain"]
        first = qrels.drop_duplicates("query_id").set_index("query_id")["doc_id"]
        known, where = first.map(home), None
    ids = expected["query_id"] if expected is not None else pd.Series(pd.unique(qrels["query_id"]))
    qdom = ids.map(known)
    if qdom.isna().any():
        lost = ids[qdom.isna()].tolist()
        return CorpusScope(docs[["doc_id"]], queries, (
            f"corpus scope all: {len(lost)} query(ies) have no domain (e.g. {lost[0]}), so a document of "
            "another domain is kept ('score' keeps only the query's own domain corpus)"))
    how.append(f"a query's domain is its {where} 'domain'" if where else
               "a query's domain is the domain of its first judged document in the qrels")
    frame = pd.DataFrame({"query_id": ids.to_numpy(), "domain": qdom.to_numpy()})
    expected_from = "" if expected is not None else "; the expected queries are the qrels' queries"
    return CorpusScope(docs, frame, ("corpus scope domain, as the benchmark scorers ('score reteco-1a', ...): a "
                                     f"document must be in the corpus of its query's domain ({'; '.join(how)}"
                                     f"{expected_from})"))


class StreamDiscards:
    """What the contract would discard from a run that a streamed evaluation reads in blocks
    (`reteco_measures.scale.stream`), counted block by block with `discard_counts`.

    Each block holds whole queries, so a repeated document is within one block; a block read
    again (the evaluation may pass over the file more than once) counts once, and a restart (the
    run was not grouped by query) voids the blocks so far. Use ``with discards.watching():``
    around the evaluation, then read `counts`."""

    def __init__(self, corpus: Any = None, queries: Any = None):
        self.corpus = corpus
        self.queries = queries
        self._by_block: dict[tuple, dict[str, int]] = {}

    def see(self, block: pd.DataFrame | None) -> None:
        """Count one block (None: the blocks so far are void)."""
        if block is None:
            self._by_block.clear()
            return
        if not len(block):
            return
        key = (str(block["query_id"].iat[0]), str(block["query_id"].iat[-1]), len(block))
        self._by_block[key] = discard_counts(block, self.corpus, self.queries)

    @contextmanager
    def watching(self) -> Iterator[StreamDiscards]:
        """Count every block the streamed evaluations in this block of code read."""
        with watch_blocks(self.see):
            yield self

    def counts(self) -> dict[str, int]:
        """Rows per kind over the blocks seen, as `discard_counts` of the whole run gives them."""
        out: dict[str, int] = {}
        for counts in self._by_block.values():
            for kind, n in counts.items():
                out[kind] = out.get(kind, 0) + n
        return out
