"""Out-of-core evaluation: a run file read in blocks of whole queries.

``rm.calc_aggregate / iter_calc / evaluate(..., stream=True)`` call into this module. The run
file is read in byte blocks (``block_bytes``, cut at a line end); the rows of the last query of a
block are held back and joined to the next block, so every block holds whole queries. Each block
is evaluated with the in-memory path (same tie policy, same checks, same kernels) against the
*whole* qrels, topics and labels — so the weights of weighted measures (1/|cell| of
``SpokenMacroNDCG``, 1/|turns| of ``TurnNDCG(average='conversation')``) are the in-memory ones —
and only the per-query values of the block's own queries are kept. Queries of the qrels that
never appear in the run get their value from one evaluation with an empty run (0, or NaN where
a measure is not defined). The aggregate is then the weighted mean of the per-query values, which
is exactly what the in-memory path computes. Peak memory is one block plus the per-query values.

A run whose queries are not grouped (a query's rows interrupted by another query's) is detected
(the first query seen again after its block was finished). With ``ungrouped='partition'``
(default) the file is then split once, out of core, into bucket files by a hash of the query id
(every query lands whole in one bucket; buckets are about one block in size) and the buckets
are evaluated one by one; with ``ungrouped='error'`` a :class:`~reteco_measures.errors.DataFormatError`
names that query. Measures whose reported unit is not a run query (``StepNDCG``, whose query
value averages several step queries) cannot be evaluated block by block and are refused.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric

from ..engine.evaluate import iter_calc, qrels_order
from ..engine.results import aggregates, metrics_frame
from ..errors import (
    DataFormatError,
    DataFormatWarning,
    Problem,
    QueryIdMismatchWarning,
    report_problems,
    user_stacklevel,
)
from ..io.convert import as_qrels_frame
from ..io.readers import read_run, read_run_with_problems
from ..kernels.standard import _ranges, string_key
from ..measures.base import REGISTERED
from ..measures.names import parse_measures

__all__ = [
    "iter_blocks", "stream_iter_calc", "stream_calc_aggregate", "stream_frame", "unreported_metrics",
    "per_query_weights", "aggregate_metrics", "DEFAULT_BLOCK_BYTES",
]

#: bytes read per block (whole lines; the last query of a block waits for the next one)
DEFAULT_BLOCK_BYTES = 4 * 1024 * 1024

_NOT_STREAMABLE = {"StepNDCG"}


class _Ungrouped(Exception):
    def __init__(self, query_id: str, line: int | None):
        super().__init__(query_id)
        self.query_id = query_id
        self.line = line


def _open(path: str | os.PathLike):
    path = os.fspath(path)
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _format_of(path: str | os.PathLike) -> str:
    name = os.fspath(path).lower().removesuffix(".gz")
    return "jsonl" if name.endswith((".jsonl", ".json", ".ndjson")) else "auto"


def _parse(chunk: bytes, path: str, first_line: int, fmt: str, problems: list[Problem]) -> pd.DataFrame:
    frame, found = read_run_with_problems(chunk, format=fmt)  # type: ignore[arg-type]
    for p in found:
        line = p.line + first_line - 1 if p.line is not None else None
        problems.append(Problem(p.message, line, p.query_id, path, p.kind, p.doc_id, p.severity))
    return frame


def _first_token(line: bytes) -> bytes:
    parts = line.split(None, 1)
    return parts[0] if parts else b""


def _query_cut(data: bytes) -> int:
    """Offset where the lines of the chunk's last query begin (0: the chunk is one query).

    Walks back over that query's lines only (a few thousand at most), never the whole chunk."""
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    start = data.rfind(b"\n", 0, end) + 1
    qid = _first_token(data[start:end])
    while start > 0:
        prev = data.rfind(b"\n", 0, start - 1) + 1
        line = data[prev : start - 1]
        if line.strip() and _first_token(line) != qid:
            return start
        start = prev
    return 0


def iter_blocks(
    path: str | os.PathLike, *, block_bytes: int = DEFAULT_BLOCK_BYTES, problems: list[Problem] | None = None,
    check_grouped: bool = True,
) -> Iterator[pd.DataFrame]:
    """Blocks of whole queries of a run file (``query_id, doc_id, score`` frames, file order).

    The bytes are cut before parsing: at the last line end, then (TREC files) before the lines
    of the chunk's last query, which wait for the next chunk. Raises ``_Ungrouped`` (internal)
    when a query reappears after its block was finished. Bad lines are collected into
    ``problems`` with their line numbers in the file.
    """
    problems = problems if problems is not None else []
    fmt = _format_of(path)
    jsonl = fmt == "jsonl"
    name = os.fspath(path)
    finished: set = set()
    rest = b""
    line_no = 1  # file line number of the first line of the next chunk
    with _open(path) as fh:
        while True:
            data = fh.read(block_bytes)
            eof = not data
            if rest:
                data = rest + data
            if eof:
                chunk, rest = data, b""
            else:
                cut = data.rfind(b"\n") + 1
                if cut and not jsonl:
                    cut = _query_cut(data[:cut]) or 0
                if cut == 0:  # one query so far (or no line end): read on
                    rest = data
                    continue
                chunk, rest = data[:cut], data[cut:]
            del data
            if chunk.strip():
                frame = _parse(chunk, name, line_no, fmt, problems)[["query_id", "doc_id", "score"]]
                line_no += chunk.count(b"\n")
                del chunk
                if len(frame):
                    if check_grouped:
                        q = frame["query_id"].to_numpy()
                        heads = q[np.r_[True, q[1:] != q[:-1]]].tolist()
                        again = [h for h in heads if h in finished]
                        if not again and len(set(heads)) != len(heads):
                            seen: set = set()
                            again = [h for h in heads if h in seen or seen.add(h)]
                        if again:
                            raise _Ungrouped(str(again[0]), None)
                        finished.update(heads)
                    yield frame
                    del frame
                    _release_memory()
            if eof:
                break


def _release_memory() -> None:
    """Give freed arrow buffers back to the system between blocks (arrow's allocator keeps them)."""
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - an allocator without the call: nothing to release
        pass


def _partition(path: str | os.PathLike, tmp: str, n_buckets: int, block_bytes: int, problems: list[Problem]) -> list[str]:
    """Split a run into bucket files by a hash of the query id (each query whole in one bucket)."""
    paths = [os.path.join(tmp, f"bucket{i:04d}.txt") for i in range(n_buckets)]
    handles = [open(p, "w", encoding="utf-8") for p in paths]
    try:
        for block in iter_blocks(path, block_bytes=block_bytes, problems=problems, check_grouped=False):
            bucket = (string_key(block["query_id"]) % np.uint64(n_buckets)).astype(np.int64)
            for b in np.unique(bucket):
                part = block[bucket == b]
                text = part.assign(q0="Q0", rank=0, run="stream")[["query_id", "q0", "doc_id", "rank", "score", "run"]]
                # repr floats (to_csv's default) round-trip exactly
                text.to_csv(handles[b], sep=" ", header=False, index=False)
    finally:
        for h in handles:
            h.close()
    return paths


def _check_streamable(measures: list[ir_measures.Measure]) -> None:
    bad = [str(m) for m in measures if m.NAME in _NOT_STREAMABLE]
    if bad:
        raise ValueError(
            f"{', '.join(bad)} cannot be computed block by block (a query's value combines several run "
            "queries); evaluate it without stream=True"
        )


class _QrelsByQuery:
    """The qrels sorted by query once, so a block takes its own queries' judgments by slicing."""

    def __init__(self, qrels: pd.DataFrame):
        import pyarrow as pa
        import pyarrow.compute as pc

        q = pa.array(qrels["query_id"].astype(str).to_numpy(dtype=object), type=pa.string())
        order = pc.sort_indices(q).to_numpy()
        self.sorted = qrels.iloc[order].reset_index(drop=True)
        qs = self.sorted["query_id"].to_numpy(dtype=object)
        starts = np.flatnonzero(np.r_[True, qs[1:] != qs[:-1]]) if len(qs) else np.zeros(0, dtype=np.int64)
        self.starts = starts
        self.ends = np.r_[starts[1:], len(qs)].astype(np.int64)
        self.pos = {qid: i for i, qid in enumerate(qs[starts].tolist())}

    def subset(self, queries: set[str]) -> pd.DataFrame:
        idx = np.array(sorted(self.pos[q] for q in queries if q in self.pos), dtype=np.int64)
        if len(idx) == 0:
            return self.sorted.iloc[:0]
        return self.sorted.iloc[_ranges(self.starts[idx], self.ends[idx] - self.starts[idx])]


def _evaluate_blocks(blocks, measures, qrels, kwargs) -> tuple[list[Metric], set[str]]:
    """Per-query values of each block's own queries. Standard measures (a query's value needs
    only that query's judgments) see the block's slice of the qrels; our measures see the whole
    qrels, topics and labels (their weights are defined over all of them)."""
    ours = [m for m in measures if m.NAME in REGISTERED]
    standard_ms = [m for m in measures if m.NAME not in REGISTERED]
    by_query = _QrelsByQuery(qrels) if standard_ms else None
    kept: list[Metric] = []
    seen: set[str] = set()
    for block in blocks:
        block_q = set(pd.unique(block["query_id"].to_numpy()).tolist())
        seen |= block_q
        with warnings.catch_warnings():
            # per-block id checks would repeat (and mislead: a block holds few queries); the
            # whole-run check is made once at the end
            warnings.simplefilter("ignore", DataFormatWarning)
            if standard_ms:
                sub = by_query.subset(block_q)
                if len(sub):
                    kept.extend(m for m in iter_calc(standard_ms, sub, block, **kwargs) if m.query_id in block_q)
            if ours:
                kept.extend(m for m in iter_calc(ours, qrels, block, **kwargs) if m.query_id in block_q)
    return kept, seen


def stream_iter_calc(
    measures: Any, qrels: Any, run: str | os.PathLike, *, block_bytes: int = DEFAULT_BLOCK_BYTES,
    ungrouped: str = "partition", on_bad_lines: str = "warn", **kwargs: Any,
) -> list[Metric]:
    """Per-query values of a run *file* evaluated in blocks of whole queries (see the module doc).

    ``kwargs`` go to :func:`reteco_measures.iter_calc` (topics, labels, corpus, tie_break,
    query_ids). ``ungrouped``: ``'partition'`` (split by query hash out of core, then evaluate)
    or ``'error'``. Values are those of the in-memory path, unit for unit.
    """
    return _stream(measures, qrels, run, block_bytes=block_bytes, ungrouped=ungrouped, on_bad_lines=on_bad_lines,
                   **kwargs)[0]


def stream_frame(measures: Any, qrels: Any, run: str | os.PathLike, *, label: Any = None,
                 topics_frame: pd.DataFrame | None = None, by: list[str] | tuple = (), **kwargs: Any) -> pd.DataFrame:
    """The long per-query frame (:func:`~reteco_measures.engine.results.metrics_frame`, in the
    in-memory path's row order) of a run file evaluated in blocks; ``kwargs`` as
    :func:`stream_iter_calc`; ``topics_frame`` / ``by``: grouping columns."""
    measures = parse_measures(measures)
    metrics, qrels_frame = _stream(measures, qrels, run, **kwargs)
    return metrics_frame(metrics, measures=measures, label=label, order=qrels_order(qrels_frame), topics=topics_frame,
                         by=by)


def _stream(
    measures: Any, qrels: Any, run: str | os.PathLike, *, block_bytes: int = DEFAULT_BLOCK_BYTES,
    ungrouped: str = "partition", on_bad_lines: str = "warn", **kwargs: Any,
) -> tuple[list[Metric], pd.DataFrame]:
    if ungrouped not in ("partition", "error"):
        raise ValueError(f"ungrouped must be 'partition' or 'error', not {ungrouped!r}")
    if not isinstance(run, (str, os.PathLike)) or not os.path.exists(run):
        raise ValueError("stream=True reads a run *file*: give its path")
    measures = parse_measures(measures)
    _check_streamable(measures)
    qrels_frame = as_qrels_frame(qrels)
    problems: list[Problem] = []
    try:
        kept, seen = _evaluate_blocks(iter_blocks(run, block_bytes=block_bytes, problems=problems),
                                      measures, qrels_frame, kwargs)
    except _Ungrouped as exc:
        if ungrouped == "error":
            raise DataFormatError(
                [Problem(f"the run is not grouped by query: query {exc.query_id!r} appears again after "
                         "other queries; sort the file by query or use ungrouped='partition'",
                         None, exc.query_id, os.fspath(run), "order")]
            ) from None
        problems = []
        size = os.path.getsize(run)
        n_buckets = max(1, int(np.ceil(size / max(block_bytes, 1))))
        with tempfile.TemporaryDirectory(prefix="reteco-stream-") as tmp:
            paths = _partition(run, tmp, n_buckets, block_bytes, problems)

            def buckets() -> Iterator[pd.DataFrame]:
                for p in paths:
                    if os.path.getsize(p):
                        frame = read_run(p, format="trec", on_bad_lines="error")
                        yield frame[["query_id", "doc_id", "score"]]

            kept, seen = _evaluate_blocks(buckets(), measures, qrels_frame, kwargs)
    report_problems(problems, on_bad_lines, what=os.fspath(run))
    rest = unreported_metrics(measures, qrels_frame, seen, kwargs)
    qrels_q = set(pd.unique(qrels_frame["query_id"].to_numpy()).tolist())
    if seen and qrels_q and not (seen & qrels_q):
        warnings.warn(f"{os.fspath(run)}: no query of the run is in the qrels (every value is 0)",
                      QueryIdMismatchWarning, stacklevel=user_stacklevel())
    order = {m: i for i, m in enumerate(measures)}
    out = kept + rest
    out.sort(key=lambda m: order.get(m.measure, len(order)))
    return out, qrels_frame


def unreported_metrics(
    measures: list[ir_measures.Measure], qrels: pd.DataFrame, seen: set[str], kwargs: dict
) -> list[Metric]:
    """The values of the queries of the qrels (and units of our measures) that no block or
    partition reported (``seen``): those of an empty run. ``kwargs`` as
    :func:`reteco_measures.iter_calc`."""
    empty = pd.DataFrame({"query_id": pd.Series([], dtype="str"), "doc_id": pd.Series([], dtype="str"),
                          "score": pd.Series([], dtype="float64")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataFormatWarning)
        return [m for m in iter_calc(measures, qrels, empty, **kwargs) if m.query_id not in seen]


def per_query_weights(metrics: list[Metric]) -> pd.DataFrame:
    """``query_id, measure, value, weight`` from metrics (weight 1 unless the value carries one),
    in their order (:func:`~reteco_measures.engine.results.metrics_frame` without a canonical order)."""
    return metrics_frame(metrics)


def aggregate_metrics(measures: list[ir_measures.Measure], metrics: list[Metric]) -> dict:
    """Weighted mean per measure of per-query values (NaN skipped), summed in the metrics' order
    (:func:`~reteco_measures.engine.results.aggregate`)."""
    return aggregates(metrics_frame(metrics, measures=measures), measures)


def stream_calc_aggregate(measures: Any, qrels: Any, run: str | os.PathLike, **kwargs: Any) -> dict:
    """Aggregates of a run file evaluated in blocks (see :func:`stream_iter_calc`): the in-memory
    aggregates, bit for bit (same values, same order, same summation)."""
    measures = parse_measures(measures)
    return aggregates(stream_frame(measures, qrels, run, **kwargs), measures)
