"""A submission *file* scored in blocks of whole queries: ``Benchmark.score(..., stream=True)``,
``rm.leaderboard(..., stream=True)`` and ``reteco-measures score|leaderboard ... --stream``.

The run file is read in blocks (`reteco_measures.scale.stream.iter_query_chunks`: cut at a
line end, never inside a query's lines) and each block goes through the benchmark's own steps,
unchanged: its contract (``Benchmark.validate``) and its per-query values
(``Benchmark.per_query``, against the *whole* reference data, so that weights defined over all
queries are the in-memory ones). Of each block only the values of its own queries are kept.
Every value comes from the same code on the same rows as in memory, and the frame is put back in
the in-memory row order (the frame of an evaluation without rows gives the order and the values
of the queries no block holds), so the `Score` — summary, group tables, per-query table, reward,
JSON — equals the in-memory one bit for bit (the aggregation sums the same values in the same
order).

What is checked per block and what over the whole run:

* per block (each block holds whole queries, so these are the in-memory verdicts): unreadable
  lines, duplicate documents, unknown queries, documents outside the corpus or the query's domain,
  the run's id form. Every problem keeps its file line number and the file's name; the counts
  (``Score.removed``) add up over the blocks;
* over the run: queries missing from the run (missing from every block), a run without one usable
  row (``empty``), and the rows kept (``report.rows_kept``);
* refused: a query whose rows are not together (seen again after other queries' blocks) raises a
  `DataFormatError` naming the query and the line; sort the run by query (``sort -k1,1 -s``) or
  score it without ``stream``.

What differs from the in-memory `Score`, by design:

* ``score.report.run`` keeps, of each query, only the rows that can reach the deepest cutoff of
  the benchmark's measures under some order of tied scores (the top ``k`` and the rows tied with
  the ``k``-th score, compared at single precision as trec_eval compares them): what a
  leaderboard's tie analysis of the official measure reads. A measure without a cutoff (``RR``)
  is computed block by block on every row, but those rows are not kept. ``report.rows_kept``
  counts every kept row; the whole cleaned run is never held;
* ``score.report.errors`` lists the lines' problems first, then each block's problems in the
  contract's order, block after block, then the missing queries (in memory the contract orders
  them by kind over the whole run): the same problems, in another order.

A benchmark says whether and how its runs stream (``Benchmark.stream_unit``): RETECO 1a and 2a
by run query; 1b by query, a query's step topics being one unit (its ``StepNDCG`` averages
them); the starter kit's rules, whose qrels depend on the whole run's topics, and the
benchmarks whose contract judges the whole submission (ChunQiu, Spoken-Query, iKAT, the
generation tracks) refuse with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ..contracts.base import ValidationReport
from ..errors import DataFormatError, Problem
from ..scale.stream import iter_query_chunks, parse_block, release_memory
from .declaration import ENGINE, Benchmark, Inputs
from .score import Score
from .scoring import score_submission

__all__ = ["stream_score", "STREAM_BLOCK_BYTES", "reachable_rows", "stream_unit"]

#: bytes of run file read per block (whole lines; the rows of the last query wait for the next block)
STREAM_BLOCK_BYTES = 4 * 1024 * 1024

_RUN_COLUMNS = ("query_id", "doc_id", "score", "rank", "line")


def stream_score(bench: Benchmark, run: str | os.PathLike, data: Any = None, split: str | None = None, *,
                 inputs: Inputs | None = None, options: Mapping[str, Any] | None = None,
                 block_bytes: int | None = None) -> Score:
    """Score the run *file* ``run`` to ``bench`` in blocks of whole queries (module docs): the
    `Score` of ``bench.score(run, ...)``, value for value. ``block_bytes``: bytes read per block
    (default `STREAM_BLOCK_BYTES`).

    Raises:
        ValueError: the benchmark (or these options) cannot stream, or ``run`` is not a file.
        DataFormatError: a query's rows are not together in the file.
    """
    return score_submission(bench, run, data, split, inputs=inputs, options=options,
                            evaluate=partial(_evaluate, bench, block_bytes or STREAM_BLOCK_BYTES))


def reachable_rows(run: pd.DataFrame, k: int) -> pd.DataFrame:
    """The rows of ``run`` that can reach the top ``k`` of their query under some order of tied
    scores: every row scoring at least the ``k``-th best score of its query, compared at single
    precision (as trec_eval compares scores). Row order is kept."""
    if not len(run):
        return run
    scores = run["score"].to_numpy(dtype=np.float64).astype(np.float32)
    qcode = pd.factorize(run["query_id"])[0]
    order = np.lexsort((-scores, qcode))
    q = qcode[order]
    starts = np.r_[0, np.flatnonzero(q[1:] != q[:-1]) + 1]
    pos = np.arange(len(q)) - np.repeat(starts, np.diff(np.r_[starts, len(q)]))
    threshold = np.full(qcode.max() + 1, -np.inf, dtype=np.float32)
    at_k = pos == k - 1
    threshold[q[at_k]] = scores[order][at_k]
    return run[scores >= threshold[qcode]].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------


def stream_unit(bench: Benchmark, inputs: Inputs, opts: Mapping[str, Any]) -> Callable | None:
    """The unit a block of ``bench``'s runs holds whole under ``opts`` (None: the run query; else a
    function of run query ids, see ``Benchmark.stream_unit``).

    Raises:
        ValueError: the benchmark, or these options, cannot stream (the message says why).
    """
    why = "its contract judges the whole submission at once"
    if bench.stream_unit is not None:
        unit = bench.stream_unit(inputs, opts)
        if not isinstance(unit, str):
            return unit
        why = unit
    raise ValueError(f"{bench.name} cannot be scored in blocks (--stream, stream=True): {why}; score it without "
                     "--stream")


def _keys(ids: pd.Series, unit: Callable | None) -> pd.Series:
    """Each row's unit id: its query id (as it is: no Python string per row), or ``unit`` of it."""
    ids = ids.astype(str).reset_index(drop=True)
    return ids if unit is None else pd.Series(unit(ids), dtype="str")


def _not_together(name: str, query: str, line: Any) -> DataFormatError:
    line = int(line) if line is not None and int(line) > 0 else None
    return DataFormatError([Problem(
        f"the rows of query {query!r} are not together: they appear again after other queries' rows; "
        "--stream scores the run in blocks of whole queries: sort the run by query, or score without --stream",
        line, query, name, "order")])


def _unit_blocks(path: str, unit: Callable | None, block_bytes: int, problems: list[Problem]
                 ) -> Iterator[pd.DataFrame]:
    """Frames of whole units (run queries, or the units ``unit`` maps them to) in file order,
    with the file's line numbers. The rows of a chunk's last unit wait for the next chunk."""
    finished: set = set()
    pending: pd.DataFrame | None = None

    def emit(frame: pd.DataFrame, keys: pd.Series) -> pd.DataFrame:
        heads = pd.unique(keys).tolist()  # one Python string per unit, not per row
        again = [k for k in heads if k in finished]
        if again:
            row = int(np.flatnonzero((keys == again[0]).to_numpy(dtype=bool))[0])
            raise _not_together(path, str(frame["query_id"].iat[row]), frame["line"].iat[row])
        finished.update(heads)
        return frame

    for chunk, fmt, first_line in iter_query_chunks(path, block_bytes, format="trec"):
        frame = parse_block(chunk, path, first_line, fmt, problems)
        del chunk
        if pending is not None:
            frame = pd.concat([pending, frame], ignore_index=True)
            pending = None
        if not len(frame):
            continue
        keys = _keys(frame["query_id"], unit)
        last = (keys == keys.iat[-1]).to_numpy(dtype=bool)
        pending = frame[last].reset_index(drop=True)
        if last.all():
            continue
        out, out_keys = frame[~last].reset_index(drop=True), keys[~last].reset_index(drop=True)
        del frame, keys, last  # one copy of the block while it is scored
        yield emit(out, out_keys)
        del out, out_keys
        release_memory()
    if pending is not None and len(pending):
        yield emit(pending, _keys(pending["query_id"], unit))


def _deepest_cutoff(measures: list) -> int | None:
    """The largest cutoff of the measures (None when none has one: every row is then kept)."""
    cutoffs = [(getattr(m, "params", None) or {}).get("cutoff") for m in measures]
    return max((int(c) for c in cutoffs if c is not None), default=None)


class _Merged:
    """What the blocks give, added up: problems, values of the blocks' own queries, kept rows."""

    def __init__(self, name: str, cutoff: int | None):
        self.name = name
        self.cutoff = cutoff
        self.contract = ""
        self.problems: list[Problem] = []
        self.missing: dict[str, Problem] | None = None  # query -> its problem, missing from every block so far
        self.missing_ids: list[str] | None = None
        self.empty: list[Problem] = []
        self.invalid: list[str] = []
        self.extra: dict[str, Any] = {}
        self.rows: list[pd.DataFrame] = []
        self.kept = 0
        self.values: list[pd.DataFrame] = []
        self.notes: list[str] = []
        self.seen: set = set()
        self.blocks = 0

    def add(self, report: ValidationReport, long: pd.DataFrame | None, unit: Callable | None) -> None:
        self.blocks += 1
        self.contract = report.contract
        missing: dict[str, Problem] = {}
        for p in report.errors:
            p = p if p.path else replace(p, path=self.name)
            if p.kind == "missing_query":
                missing[str(p.query_id)] = p
            elif p.kind == "empty":
                self.empty.append(p)
            else:
                self.problems.append(p)
        # missing from the run = missing from every block (each block's contract lists the rest)
        self.missing = missing if self.missing is None else {q: p for q, p in self.missing.items() if q in missing}
        ids = set(map(str, report.missing_queries))
        self.missing_ids = list(report.missing_queries) if self.missing_ids is None else \
            [q for q in self.missing_ids if str(q) in ids]
        self.invalid += list(report.invalid_queries)
        for key, value in report.extra.items():
            if key == "doc_positions":  # positions in one block's rows: nothing to add up
                continue
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                self.extra[key] = int(self.extra.get(key, 0)) + int(value)
            else:
                self.extra.setdefault(key, value)
        cleaned = report.run
        self.kept += len(cleaned)
        self.rows.append(reachable_rows(cleaned, self.cutoff) if self.cutoff is not None else cleaned)
        if long is None:
            return
        ids = pd.Series(pd.unique(cleaned["query_id"].astype(str)), dtype=object)
        again = [q for q in ids.tolist() if q in self.seen]
        if again:  # a query in two blocks once the contract has read its ids (e.g. '#turn1' and '_turn_1')
            row = int(np.flatnonzero(cleaned["query_id"].astype(str).to_numpy(dtype=object) == again[0])[0])
            raise _not_together(self.name, again[0], cleaned["line"].iat[row] if "line" in cleaned else None)
        self.seen.update(ids.tolist())
        units = set(_keys(ids, unit).tolist())  # one per query of the block
        self.values.append(long[long["query_id"].astype(str).isin(units)])
        self.notes += [n for n in long.attrs.get("notes", []) if n not in self.notes]

    def report(self, template: ValidationReport) -> ValidationReport:
        empty = self.empty[:1] if not self.kept else []
        errors = [*empty, *self.problems, *(self.missing or {}).values()]
        run = pd.concat(self.rows, ignore_index=True) if self.rows else template.run
        return ValidationReport(self.contract or template.contract, errors, run,
                                invalid_queries=self.invalid, missing_queries=list(self.missing_ids or []),
                                extra={**self.extra, "rows_kept": self.kept})


def _empty_run(columns: Any = _RUN_COLUMNS) -> pd.DataFrame:
    types = {"query_id": "str", "doc_id": "str", "score": "float64", "rank": "int64", "line": "int64",
             "run_id": "str"}
    return pd.DataFrame({c: pd.Series([], dtype=types.get(c, "object")) for c in columns})


def _in_order(template: pd.DataFrame, parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The template frame (every unit and measure, in the in-memory order) with the blocks'
    values in place of its own."""
    out = template.copy()
    out.attrs = dict(template.attrs)
    if not parts:
        return out
    values = pd.concat(parts, ignore_index=True)
    if not len(values):
        return out
    key = pd.MultiIndex.from_arrays([out["query_id"].astype(str), out["measure"].astype(str)])
    if not key.is_unique:
        raise RuntimeError("the per-query frame repeats a (query, measure) pair: it cannot be scored in blocks")
    pos = key.get_indexer(pd.MultiIndex.from_arrays([values["query_id"].astype(str),
                                                     values["measure"].astype(str)]))
    if (pos < 0).any():
        raise RuntimeError("a block gave a (query, measure) pair that the frame of an empty run lacks")
    for col in values.columns:
        if col in ("query_id", "measure"):
            continue
        if col not in out.columns:
            out[col] = pd.Series([np.nan] * len(out), dtype=values[col].dtype)
        column = out[col].to_numpy(copy=True)
        if column.dtype != values[col].dtype:
            column = column.astype(np.result_type(column.dtype, values[col].dtype))
        column[pos] = values[col].to_numpy()
        out[col] = column
    return out


def _evaluate(bench: Benchmark, block_bytes: int, run: Any, inputs: Inputs, opts: Mapping[str, Any],
              measures: list) -> tuple[ValidationReport, pd.DataFrame, Any]:
    """``(report, long, extra)`` of a run file scored block by block (the streamed steps 2 and 3
    of `score_submission`)."""
    unit = stream_unit(bench, inputs, opts)
    if not isinstance(run, (str, os.PathLike)) or not os.path.isfile(run):
        raise ValueError("--stream (stream=True) reads a run *file*: give its path (a run in memory, several files "
                         "or text is scored without it)")
    name = os.fspath(run)
    read_problems: list[Problem] = []
    merged = _Merged(name, _deepest_cutoff(measures))
    first_run: pd.DataFrame | None = None
    for frame in _unit_blocks(name, unit, block_bytes, read_problems):
        report = bench.validate(frame, inputs, opts)
        del frame
        if first_run is None:
            first_run = report.run.iloc[:0]
        long, _ = bench.per_query(measures, inputs, report, opts)
        merged.add(report, long, unit)
        del report, long
    if merged.blocks == 0:  # no readable row: the contract's verdict on an empty run
        merged.add(bench.validate(_empty_run(), inputs, opts), None, unit)
    empty = ValidationReport(merged.contract, [], first_run if first_run is not None else _empty_run())
    template, extra = bench.per_query(measures, inputs, empty, opts)
    long = _in_order(template, merged.values)
    if merged.values:
        long.attrs["notes"] = merged.notes
    report = merged.report(empty)
    # a bad line loses only itself: the lines' problems are warnings, as the contract makes them
    report.errors = [p if p.severity == "warning" else replace(p, severity="warning") for p in read_problems] \
        + report.errors
    return report, long, extra


ENGINE["stream"] = stream_score  # what `Benchmark.score(..., stream=True)` runs
