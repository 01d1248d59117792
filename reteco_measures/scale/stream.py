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

The stream shares the in-memory path's reading and checks, not a copy of them: the file is
decompressed by `iter_file_bytes` (through which the in-memory
reader reads a path too) and typed by the reader's format detection; the blocks are parsed by
`read_run_with_problems`; the problems are reported once by
`report_problems`; and once the run is read its query ids go through
`align_query_ids` (empty run or qrels, ids that do not meet),
so the warnings — and the command line's exit codes — are those of the in-memory path. A query
longer than a block is collected piece by piece and joined once (linear time).

A run whose queries are not grouped (a query's rows interrupted by another query's) is detected
(the first query seen again after its block was finished). With ``ungrouped='partition'``
(default) the file is then split once, out of core, into bucket files by a hash of the query id
(every query lands whole in one bucket; buckets are about one block in size) and the buckets
are evaluated one by one; with ``ungrouped='error'`` a `DataFormatError`
names that query. Measures whose reported unit is not a run query (``StepNDCG``, whose query
value averages several step queries) cannot be evaluated block by block and are refused.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import Metric

from ..engine.evaluate import iter_calc, qrels_order
from ..engine.results import aggregates, metrics_frame
from ..errors import DataFormatError, DataFormatWarning, Problem, report_problems
from ..io.convert import as_qrels_frame
from ..io.lines import iter_file_bytes
from ..io.readers import detect_format, read_run_with_problems
from ..kernels.standard import segment_ranges, string_key
from ..measures.base import REGISTERED
from ..measures.names import parse_measures
from ..query_ids import align_query_ids
from ..side import load_labels, load_topics

__all__ = [
    "iter_blocks", "iter_query_chunks", "parse_block", "release_memory", "stream_iter_calc", "stream_calc_aggregate", "stream_frame", "unreported_metrics",
    "per_query_weights", "aggregate_metrics", "DEFAULT_BLOCK_BYTES", "watch_blocks",
]

#: callables shown every block of whole queries the stream evaluates (a frame of ``query_id,
#: doc_id, score``), and ``None`` when the blocks start over (an ungrouped run, partitioned)
_WATCHERS: list[Callable[[pd.DataFrame | None], None]] = []


@contextmanager
def watch_blocks(callback: Callable[[pd.DataFrame | None], None]) -> Iterator[None]:
    """Show ``callback`` every block of whole queries a streamed evaluation reads, in this block
    of code (the command line counts what the RETECO contract would discard, as ``eval`` does
    for a run in memory). ``callback(None)``: the blocks so far are void and start over (the run
    was not grouped by query and is read again, partitioned)."""
    _WATCHERS.append(callback)
    try:
        yield
    finally:
        _WATCHERS.remove(callback)


def _show(frame: pd.DataFrame | None) -> None:
    for watcher in list(_WATCHERS):
        watcher(frame)

#: bytes read per block (whole lines; the last query of a block waits for the next one)
DEFAULT_BLOCK_BYTES = 4 * 1024 * 1024

_NOT_STREAMABLE = {"StepNDCG"}


class _Ungrouped(Exception):
    def __init__(self, query_id: str, line: int | None):
        super().__init__(query_id)
        self.query_id = query_id
        self.line = line


_BOM = b"\xef\xbb\xbf"


def _parse(chunk: bytes, path: str, first_line: int, fmt: str, problems: list[Problem]) -> pd.DataFrame:
    if chunk.startswith(_BOM):
        # the file's own mark was dropped when it was read (_whole_query_chunks): a mark here is
        # the content of a line, not the one the reader drops at the start of a file. Parse the
        # block after a blank line (which no format reports), so that the reader treats it as
        # it does inside the file
        chunk, first_line = b"\n" + chunk, first_line - 1
    frame, found = read_run_with_problems(chunk, format=fmt)  # type: ignore[arg-type]
    for p in found:
        line = p.line + first_line - 1 if p.line is not None else None
        problems.append(Problem(p.message, line, p.query_id, path, p.kind, p.doc_id, p.severity))
    return frame


def _first_token(line: bytes) -> bytes:
    parts = line.split(None, 1)
    return parts[0] if parts else b""


def _last_line_start(data: bytes, end: int) -> int:
    """Offset of the line that ends at ``end`` (``data[end]`` is its line end, or ``end == len``)."""
    return data.rfind(b"\n", 0, end) + 1


def _query_cut(data: bytes) -> tuple[int, bytes]:
    """``(offset, query)``: where the lines of the last query of ``data`` (whole lines) begin
    (0: ``data`` may be that query's only) and that query's id (first field of the last line).

    Walks back over that query's lines within ``data`` only; when the first line of ``data``
    already names the last query, ``data`` is taken as that query's (a different query between
    them would mean the run is not grouped, which the parsed blocks show)."""
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    start = _last_line_start(data, end)
    qid = _first_token(data[start:end])
    first_end = data.find(b"\n")
    if _first_token(data[: first_end if first_end >= 0 else len(data)]) == qid:
        return 0, qid
    while start > 0:
        prev = _last_line_start(data, start - 1)
        line = data[prev : start - 1]
        if line.strip() and _first_token(line) != qid:
            return start, qid
        start = prev
    return 0, qid


def _jsonl_cut(data: bytes) -> int:
    """Where a chunk of JSONL lines may end: the start of its last line that holds more than
    blanks and does not start with ``[`` (0: none). The next chunk then starts with that line,
    never with ``[``, which the reader would take for the start of a file that is one JSON array
    (-1: no such line)."""
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    while end > 0:
        start = _last_line_start(data, end)
        head = data[start:end].lstrip()[:1]
        if head and head != b"[":
            return start
        end = start - 1
    return -1


def _whole_query_chunks(path: str | os.PathLike, block_bytes: int,
                        format: str | None = None) -> Iterator[tuple[bytes, str]]:
    """``(bytes, format)`` of a run file cut into chunks of whole lines (TREC: whole queries),
    in file order; the chunks joined are the file as the in-memory reader reads it (same
    decompression, `iter_file_bytes`; same format detection).

    Every piece read is looked at once and joined once: the lines of a query spanning many reads
    are collected in a list and joined when the query ends (linear in the file). A file that is
    one JSON array (not JSONL) is one chunk, read whole, as the in-memory reader reads it."""
    fmt: str | None = None
    head: list[bytes] = []  # pieces read before the format is known (blank so far)
    pending: list[bytes] = []  # whole lines of the last query, waiting for its end
    pending_qid: bytes | None = None
    partial: list[bytes] = []  # the pieces of an unfinished line
    array = False
    for piece in iter_file_bytes(path, max(block_bytes, 1)):
        if fmt is None:
            head.append(piece)
            if not piece.strip():
                continue
            joined = b"".join(head)
            head = []
            fmt = format or detect_format(path, joined)
            array = fmt == "jsonl" and joined.removeprefix(_BOM).lstrip()[:1] == b"["
            # the byte-order mark of the file is dropped here, as the reader drops it, so that
            # the first line's query id is compared without it when the blocks are cut
            piece = joined.removeprefix(_BOM)
        if array:
            partial.append(piece)
            continue
        nl = piece.rfind(b"\n")
        if nl < 0:
            partial.append(piece)
            continue
        lines = b"".join([*partial, piece[: nl + 1]]) if partial else piece[: nl + 1]
        partial = [piece[nl + 1 :]] if nl + 1 < len(piece) else []
        if fmt == "jsonl":  # a line is a record
            cut = _jsonl_cut(lines)
            if cut < 0 or not (pending or cut):  # no line to start the next chunk with (yet)
                pending.append(lines)
            else:
                pending.append(lines[:cut])
                yield b"".join(pending), fmt
                pending = [lines[cut:]]
            continue
        cut, qid = _query_cut(lines)
        if cut == 0:
            if pending and qid != pending_qid:
                yield b"".join(pending), fmt
                pending = []
            pending.append(lines)
        else:
            pending.append(lines[:cut])
            yield b"".join(pending), fmt
            pending = [lines[cut:]]
        pending_qid = qid
    rest = b"".join([*head, *pending, *partial])
    if rest:
        yield rest, fmt or format or detect_format(path, rest)


def iter_query_chunks(path: str | os.PathLike, block_bytes: int = DEFAULT_BLOCK_BYTES, *,
                      format: str | None = None) -> Iterator[tuple[bytes, str, int]]:
    """``(bytes, format, first_line)`` of a run file cut into chunks of whole lines, in file
    order: TREC files in whole queries (a query's lines are never cut, however long), JSONL files
    in whole records. ``first_line`` is the file line number of the chunk's first line (give it
    to `parse_block`). ``format``: ``'trec'`` or ``'jsonl'`` as the caller reads the file
    (default: the reader's detection). The chunks joined are the file as the in-memory reader
    reads it (same decompression; the file's byte-order mark dropped)."""
    line_no = 1
    for chunk, fmt in _whole_query_chunks(path, block_bytes, format):
        first_line = line_no
        line_no += chunk.count(b"\n")
        yield chunk, fmt, first_line


def parse_block(chunk: bytes, path: str | os.PathLike, first_line: int, fmt: str,
                problems: list[Problem]) -> pd.DataFrame:
    """The rows of one chunk of `iter_query_chunks` as the run reader reads them (``query_id,
    doc_id, score`` and the reader's other columns), with ``line`` the *file's* line numbers;
    the chunk's bad lines are appended to ``problems``, also with their file line numbers and
    ``path``."""
    frame = _parse(chunk, os.fspath(path), first_line, fmt, problems)
    if "line" in frame.columns and len(frame):
        shift = first_line - (2 if chunk.startswith(_BOM) else 1)
        frame["line"] = frame["line"].to_numpy() + shift
    return frame


def iter_blocks(
    path: str | os.PathLike, *, block_bytes: int = DEFAULT_BLOCK_BYTES, problems: list[Problem] | None = None,
    check_grouped: bool = True,
) -> Iterator[pd.DataFrame]:
    """Blocks of whole queries of a run file (``query_id, doc_id, score`` frames, file order).

    The bytes (decompressed and typed as the in-memory reader does) are cut before parsing: at
    the last line end, then (TREC files) before the lines of the chunk's last query, which wait
    for the next chunk. Raises ``_Ungrouped`` (internal) when a query reappears after its block
    was finished. Bad lines are collected into ``problems`` with their line numbers in the file;
    a damaged compressed file raises the reader's
    `DataFormatError`.
    """
    problems = problems if problems is not None else []
    name = os.fspath(path)
    finished: set = set()
    line_no = 1  # file line number of the first line of the next chunk
    for chunk, fmt in _whole_query_chunks(path, block_bytes):
        first_line = line_no
        line_no += chunk.count(b"\n")
        if not chunk.strip():
            continue
        frame = _parse(chunk, name, first_line, fmt, problems)[["query_id", "doc_id", "score"]]
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
            _show(frame)
            yield frame
            del frame
            release_memory()


def release_memory() -> None:
    """Give freed arrow buffers back to the system between blocks (arrow's allocator keeps them)."""
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - an allocator without the call: nothing to release
        pass


def _partition(path: str | os.PathLike, tmp: str, n_buckets: int, block_bytes: int, problems: list[Problem],
               order: dict[str, None]) -> list[str]:
    """Split a run into bucket files by a hash of the query id (each query whole in one bucket);
    the query ids are added to ``order`` in file order."""
    paths = [os.path.join(tmp, f"bucket{i:04d}.txt") for i in range(n_buckets)]
    handles = [open(p, "wb") for p in paths]
    try:
        for block in iter_blocks(path, block_bytes=block_bytes, problems=problems, check_grouped=False):
            order.update(dict.fromkeys(pd.unique(block["query_id"].to_numpy()).tolist()))
            bucket = (string_key(block["query_id"]) % np.uint64(n_buckets)).astype(np.int64)
            # one TREC line per row, the ids as read (no CSV quoting: an id may hold '"'); a
            # float64's str is its shortest repr, which reads back to the same number
            lines = (block["query_id"].astype(str) + " Q0 " + block["doc_id"].astype(str) + " 0 "
                     + block["score"].astype(np.float64).astype(str) + " stream\n")
            for b in np.unique(bucket):
                handles[b].write("".join(lines[bucket == b].tolist()).encode("utf-8", errors="surrogateescape"))
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
        return self.sorted.iloc[segment_ranges(self.starts[idx], self.ends[idx] - self.starts[idx])]


def _evaluate_blocks(blocks, measures, qrels, kwargs) -> tuple[list[Metric], dict[str, None]]:
    """Per-query values of each block's own queries. Standard measures (a query's value needs
    only that query's judgments) see the block's slice of the qrels; our measures see the whole
    qrels, topics and labels (their weights are defined over all of them)."""
    ours = [m for m in measures if m.NAME in REGISTERED]
    standard_ms = [m for m in measures if m.NAME not in REGISTERED]
    by_query = _QrelsByQuery(qrels) if standard_ms else None
    kept: list[Metric] = []
    seen: dict[str, None] = {}  # the run's query ids in file order (the examples of the id check)
    for block in blocks:
        block_ids = pd.unique(block["query_id"].to_numpy()).tolist()
        block_q = set(block_ids)
        seen.update(dict.fromkeys(block_ids))
        with warnings.catch_warnings():
            # per-block id checks would repeat (and mislead: a block holds few queries); the
            # in-memory path's checks are made once, on the whole run's ids, at the end
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

    ``kwargs`` go to `reteco_measures.iter_calc` (topics, labels, corpus, tie_break,
    query_ids). ``ungrouped``: ``'partition'`` (split by query hash out of core, then evaluate)
    or ``'error'``. Values are those of the in-memory path, unit for unit.
    """
    return _stream(measures, qrels, run, block_bytes=block_bytes, ungrouped=ungrouped, on_bad_lines=on_bad_lines,
                   **kwargs)[0]


def stream_frame(measures: Any, qrels: Any, run: str | os.PathLike, *, label: Any = None,
                 topics_frame: pd.DataFrame | None = None, by: list[str] | tuple = (), **kwargs: Any) -> pd.DataFrame:
    """The long per-query frame (`metrics_frame`, in the
    in-memory path's row order) of a run file evaluated in blocks; ``kwargs`` as
    `stream_iter_calc`; ``topics_frame`` / ``by``: grouping columns."""
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
    # topics and labels are read once (not once per block)
    if kwargs.get("topics") is not None:
        kwargs["topics"] = load_topics(kwargs["topics"])
    if kwargs.get("labels") is not None:
        kwargs["labels"] = load_labels(kwargs["labels"])
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
        _show(None)  # the blocks read so far are read again, partitioned
        size = os.path.getsize(run)
        n_buckets = max(1, int(np.ceil(size / max(block_bytes, 1))))
        with tempfile.TemporaryDirectory(prefix="reteco-stream-") as tmp:
            in_file_order: dict[str, None] = {}
            paths = _partition(run, tmp, n_buckets, block_bytes, problems, in_file_order)

            def buckets() -> Iterator[pd.DataFrame]:
                for p in paths:
                    if os.path.getsize(p):
                        with open(p, "rb") as f:
                            data = f.read()
                        # parsed as lines after the file's first (a query id that starts with a
                        # byte-order mark keeps it), by the reader; our own lines hold no problem
                        frame = _parse(data, p, 2, "trec", [])[["query_id", "doc_id", "score"]]
                        _show(frame)
                        yield frame

            kept, seen = _evaluate_blocks(buckets(), measures, qrels_frame, kwargs)
            seen = in_file_order
    report_problems(problems, on_bad_lines, what=os.fspath(run))
    # the in-memory path's checks (empty qrels or run, query ids that do not meet; topics and
    # labels too), on the run's distinct query ids in file order: the same warnings
    align_query_ids(qrels_frame, pd.DataFrame({"query_id": pd.Series(list(seen), dtype="str")}),
                    topics=kwargs.get("topics"), labels=kwargs.get("labels"))
    rest = unreported_metrics(measures, qrels_frame, set(seen), kwargs)
    order = {m: i for i, m in enumerate(measures)}
    out = kept + rest
    out.sort(key=lambda m: order.get(m.measure, len(order)))
    return out, qrels_frame


def unreported_metrics(
    measures: list[ir_measures.Measure], qrels: pd.DataFrame, seen: set[str], kwargs: dict
) -> list[Metric]:
    """The values of the queries of the qrels (and units of our measures) that no block or
    partition reported (``seen``): those of an empty run. ``kwargs`` as
    `reteco_measures.iter_calc`."""
    empty = pd.DataFrame({"query_id": pd.Series([], dtype="str"), "doc_id": pd.Series([], dtype="str"),
                          "score": pd.Series([], dtype="float64")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataFormatWarning)
        return [m for m in iter_calc(measures, qrels, empty, **kwargs) if m.query_id not in seen]


def per_query_weights(metrics: list[Metric]) -> pd.DataFrame:
    """``query_id, measure, value, weight`` from metrics (weight 1 unless the value carries one),
    in their order (`metrics_frame` without a canonical order)."""
    return metrics_frame(metrics)


def aggregate_metrics(measures: list[ir_measures.Measure], metrics: list[Metric]) -> dict:
    """Weighted mean per measure of per-query values (NaN skipped), summed in the metrics' order
    (`aggregate`)."""
    return aggregates(metrics_frame(metrics, measures=measures), measures)


def stream_calc_aggregate(measures: Any, qrels: Any, run: str | os.PathLike, **kwargs: Any) -> dict:
    """Aggregates of a run file evaluated in blocks (see `stream_iter_calc`): the in-memory
    aggregates, bit for bit (same values, same order, same summation)."""
    measures = parse_measures(measures)
    return aggregates(stream_frame(measures, qrels, run, **kwargs), measures)
