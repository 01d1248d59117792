"""The ranking core: sort a whole run once, with one of four tie policies.

``tie_break`` (how documents with equal scores are ordered):

* ``'trec_eval'`` (default) — what trec_eval / pytrec_eval do: score descending, compared at
  *single precision* (trec_eval keeps scores as C ``float``: 1.0 and 1.0+1e-9 tie), then doc id
  descending in byte order (``strcmp``). The rank column of a TREC file is ignored.
* ``'stable'`` — score descending (double precision), equal scores in the order the rows have
  in the file/list: what Python's ``sorted(rows, key=score, reverse=True)`` gives (a stable
  sort), and so what TEMPO's reference ``temporal_metrics.py`` ranks by. NaN scores go last.
* ``'run_order'`` — the order the rows have in the file/list (JSONL results lists); scores
  are ignored entirely.
* ``'corpus_order'`` — score descending (double precision), ties broken by the documents'
  position in the corpus (ChunQiu); documents missing from the corpus go after known ones,
  in run order.

Everything is one multi-key sort (pyarrow's ``sort_indices``, which compares strings as bytes
exactly like ``strcmp``) plus vectorised rank numbering; no Python loop per query or doc.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..measures.params import TIE_BREAKS, TieBreak

__all__ = ["TieBreak", "TIE_BREAKS", "rank_run", "row_ranks", "corpus_positions", "group_rank", "top_k", "duplicate_pairs"]


def _as_arrow_strings(values: pd.Series | np.ndarray) -> pa.Array:
    if isinstance(values, pd.Series):
        arr = values.array
        if hasattr(arr, "_pa_array"):  # ArrowStringArray: zero copy
            return pa.chunked_array(arr._pa_array).combine_chunks().cast(pa.string())
        values = values.to_numpy(dtype=object)
    return pa.array(np.asarray(values, dtype=object).astype(str) if len(values) else [], type=pa.string())


def group_rank(sorted_qids: np.ndarray) -> np.ndarray:
    """1-based position of each row inside its run of equal query ids (input sorted by query)."""
    n = len(sorted_qids)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.r_[True, sorted_qids[1:] != sorted_qids[:-1]]
    start_idx = np.flatnonzero(starts)
    group_start = np.repeat(start_idx, np.diff(np.r_[start_idx, n]))
    return np.arange(n, dtype=np.int64) - group_start + 1


def corpus_positions(doc_ids: pd.Series, corpus: Sequence[str] | pd.Series | pd.Index) -> np.ndarray:
    """Position of each doc id in ``corpus`` (doc ids in corpus order); unknown → max int."""
    index = pd.Index(pd.Series(list(corpus) if not isinstance(corpus, (pd.Series, pd.Index)) else corpus,
                               dtype="str"))
    pos = index.get_indexer(pd.Series(doc_ids, dtype="str"))
    return np.where(pos < 0, np.iinfo(np.int64).max, pos).astype(np.int64)


def _ranked_order(
    run: pd.DataFrame, tie_break: TieBreak, corpus: Sequence[str] | pd.Series | pd.Index | None
) -> tuple[np.ndarray, np.ndarray]:
    """(row positions in ranked order, the 1-based rank of each of them): see `rank_run`."""
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, not {tie_break!r}")
    n = len(run)
    qid = _as_arrow_strings(run["query_id"])
    position = pa.array(np.arange(n, dtype=np.int64))
    if tie_break == "trec_eval":
        with np.errstate(over="ignore"):  # beyond single precision: ±inf, as trec_eval's (float) cast
            score32 = np.asarray(run["score"], dtype=np.float64).astype(np.float32)
        table = pa.table({"q": qid, "s": pa.array(score32), "d": _as_arrow_strings(run["doc_id"]), "p": position})
        keys = [("q", "ascending"), ("s", "descending"), ("d", "descending"), ("p", "ascending")]
    elif tie_break == "stable":
        score = np.asarray(run["score"], dtype=np.float64)
        # NaN last (as null): arrow orders NaN above every number in a descending sort
        table = pa.table({"q": qid, "s": pa.array(score, mask=np.isnan(score)), "p": position})
        keys = [("q", "ascending"), ("s", "descending"), ("p", "ascending")]
    elif tie_break == "run_order":
        table = pa.table({"q": qid, "p": position})
        keys = [("q", "ascending"), ("p", "ascending")]
    else:
        if corpus is None:
            raise ValueError("tie_break='corpus_order' needs the corpus doc ids in corpus order (corpus=...)")
        table = pa.table(
            {
                "q": qid,
                "s": pa.array(np.asarray(run["score"], dtype=np.float64)),
                "c": pa.array(corpus_positions(run["doc_id"], corpus)),
                "p": position,
            }
        )
        keys = [("q", "ascending"), ("s", "descending"), ("c", "ascending"), ("p", "ascending")]
    order = pc.sort_indices(table, sort_keys=keys).to_numpy()
    sorted_q = pc.dictionary_encode(qid).indices.to_numpy()[order]  # int codes, not 1 Python str per row
    return order, group_rank(sorted_q)


def rank_run(
    run: pd.DataFrame,
    tie_break: TieBreak = "trec_eval",
    *,
    corpus: Sequence[str] | pd.Series | pd.Index | None = None,
) -> pd.DataFrame:
    """Sort a run by query and the tie policy; add a 1-based ``rank`` column.

    Args:
        run: DataFrame with ``query_id``, ``doc_id``, ``score`` (other columns are carried).
            Row order matters for ``'run_order'``, among equal scores for ``'stable'`` and
            among unknown docs for ``'corpus_order'``.
        tie_break: ``'trec_eval'``, ``'stable'``, ``'run_order'`` or ``'corpus_order'``.
        corpus: doc ids in corpus order (required for ``'corpus_order'``).

    Returns:
        A new DataFrame sorted by ``query_id`` (byte order) then rank, index reset, with the
        ``rank`` column replaced by the computed one.
    """
    order, rank = _ranked_order(run, tie_break, corpus)
    out = run.iloc[order].reset_index(drop=True)
    out["rank"] = rank
    return out


def row_ranks(
    run: pd.DataFrame,
    tie_break: TieBreak = "trec_eval",
    *,
    corpus: Sequence[str] | pd.Series | pd.Index | None = None,
) -> np.ndarray:
    """The rank `rank_run` gives each row, in the run's own row order (int64); the run
    is not reordered or copied."""
    order, rank = _ranked_order(run, tie_break, corpus)
    out = np.empty(len(run), dtype=np.int64)
    out[order] = rank
    return out


def duplicate_pairs(run: pd.DataFrame, keep: Literal["first", "last"] = "last") -> np.ndarray:
    """Boolean mask of rows repeating a (query_id, doc_id) pair of another row.

    ``keep='last'`` marks all but the last occurrence (pytrec_eval's dictionaries keep the last
    score); ``keep='first'`` all but the first (the RETECO contract). One arrow sort by
    (query, doc, position) puts repeats next to each other; no hashing of Python strings.
    """
    n = len(run)
    if n < 2:
        return np.zeros(n, dtype=bool)
    table = pa.table(
        {"q": _as_arrow_strings(run["query_id"]), "d": _as_arrow_strings(run["doc_id"]),
         "p": pa.array(np.arange(n, dtype=np.int64))}
    )
    order = pc.sort_indices(table, sort_keys=[("q", "ascending"), ("d", "ascending"), ("p", "ascending")])
    q = table["q"].take(order)
    d = table["d"].take(order)
    same = pc.and_(pc.equal(q[1:], q[:-1]), pc.equal(d[1:], d[:-1])).to_numpy(zero_copy_only=False)
    same = np.asarray(same, dtype=bool)
    mask_sorted = np.zeros(n, dtype=bool)
    if keep == "last":
        mask_sorted[:-1] = same  # a row followed by the same pair is not the last occurrence
    else:
        mask_sorted[1:] = same  # a row preceded by the same pair is not the first
    mask = np.zeros(n, dtype=bool)
    mask[order.to_numpy()] = mask_sorted
    return mask


def top_k(ranked: pd.DataFrame, k: int | None) -> pd.DataFrame:
    """Rows of a ranked run with rank ≤ k (all rows when k is None)."""
    if k is None:
        return ranked
    return ranked[ranked["rank"].to_numpy() <= k]
