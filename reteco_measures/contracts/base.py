"""Shared pieces of the run contracts: the report type and input normalisation."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import SEVERITIES, DataFormatError, Problem, count_problems
from ..io.jsonl import JSONTextError, iter_jsonl, read_json_document
from ..io.lines import split_lines, strip_compression_suffix
from ..io.readers import read_qrels

__all__ = ["ValidationReport", "CONTRACTS", "contract", "id_frame", "read_ids", "with_severity"]


@dataclass
class ValidationReport:
    """What `reteco_measures.validate_run` found.

    Attributes:
        contract: the contract checked (``reteco``, ``chunqiu``, ``spoken``, ``ikat``).
        errors: every problem (of every severity), each with ``.line``, ``.query_id``,
            ``.message`` and ``.severity`` (``'error'``, ``'warning'`` or ``'note'``).
        run: the cleaned run in the file's order: ``query_id, doc_id, score, rank, line``
            (``rank`` = the rank the contract's tie policy gives the row).
        invalid_queries: queries whose rows were rejected as a whole (``spoken``: they score 0).
        missing_queries: expected queries absent from the run (they score 0).
        extra: contract-specific results (e.g. the iKAT PTKB ranking).

    Derived:
        ok: True when the submission conforms completely (no problem of any severity).
        valid: True iff no problem has severity ``'error'``: the submission can be scored
            officially. A ``reteco`` run with duplicates is not ``ok`` but still ``valid`` (the
            duplicates are removed: a warning); a ``chunqiu`` batch with any violation is
            neither (every violation is an error; official score 0).
    """

    contract: str
    errors: list[Problem]
    run: pd.DataFrame
    invalid_queries: list[str] = field(default_factory=list)
    missing_queries: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def valid(self) -> bool:
        return not any(p.severity == "error" for p in self.errors)

    def __bool__(self) -> bool:
        return self.ok

    @property
    def rows_kept(self) -> int:
        """How many rows the contract kept: ``len(run)``, or ``extra["rows_kept"]`` when ``run``
        holds only some of them (a run scored in blocks keeps the rows that can reach a cutoff)."""
        return int(self.extra.get("rows_kept", len(self.run)))

    def problems_of(self, severity: str) -> list[Problem]:
        """The problems of one severity (``'error'``, ``'warning'`` or ``'note'``), in order."""
        if severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {severity!r}")
        return [p for p in self.errors if p.severity == severity]

    def problem_counts(self) -> dict[str, int]:
        """How many problems of each kind (``duplicate``, ``unknown_doc``, ``other_domain_doc``, ...),
        by kind name (`reteco_measures.errors.describe_kinds` puts them in words); a reader's
        summary problem counts as the problems it stands for (``Problem.count``)."""
        return dict(sorted(count_problems(self.errors, by="kind").items()))

    def severity_counts(self) -> dict[str, int]:
        """How many problems of each severity: ``{'error': n, 'warning': n, 'note': n}``."""
        counts = count_problems(self.errors, by="severity")
        return {s: counts.get(s, 0) for s in SEVERITIES}

    def state(self) -> str:
        """``'ok'``, ``'valid with corrections'`` (warnings/notes only) or ``'INVALID'``."""
        return "ok" if self.ok else ("valid with corrections" if self.valid else "INVALID")

    def as_dict(self, rows_key: str = "rows_kept") -> dict[str, Any]:
        """The report for JSON output: ok, valid, rows kept (under ``rows_key``), problem counts
        by severity and by kind, and every problem as a dict (with its ``severity``)."""
        return {"ok": self.ok, "valid": self.valid, rows_key: self.rows_kept,
                "severity_counts": self.severity_counts(),
                "problem_counts": self.problem_counts(), "problems": [p.as_dict() for p in self.errors]}

    def summary(self, limit: int = 20) -> str:
        """A readable multi-line summary (first ``limit`` problems, errors first, each with its
        severity)."""
        counts = self.severity_counts()
        tally = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
        lines = [
            f"contract {self.contract}: {self.state()}; {self.rows_kept} row(s) kept, "
            f"{count_problems(self.errors)} problem(s)" + (f" ({tally})" if tally else "")
        ]
        shown = sorted(self.errors, key=lambda p: SEVERITIES.index(p.severity))[:limit]
        lines += [f"  {p.severity}: {p}" for p in shown]
        if len(self.errors) > limit:
            lines.append(f"  ... and {len(self.errors) - limit} more")
        return "\n".join(lines)

    def problems_frame(self) -> pd.DataFrame:
        """The problems as a DataFrame (path, line, query_id, doc_id, kind, severity, message)."""
        cols = ["path", "line", "query_id", "doc_id", "kind", "severity", "message"]
        return pd.DataFrame([p.as_dict() for p in self.errors], columns=cols)


def with_severity(problems: list[Problem], severity: str | Callable[[Problem], str]) -> list[Problem]:
    """The problems with their ``severity`` set: one severity for all, or ``severity(problem)``."""
    pick = severity if callable(severity) else (lambda _p: severity)
    out = []
    for p in problems:
        s = pick(p)
        out.append(p if p.severity == s else replace(p, severity=s))
    return out


ContractFn = Callable[..., ValidationReport]
#: contract name -> validator ``fn(run, *, corpus, queries, top_k) -> ValidationReport``
CONTRACTS: dict[str, ContractFn] = {}


def contract(name: str) -> Callable[[ContractFn], ContractFn]:
    """Decorator registering a contract validator under ``name``."""

    def deco(fn: ContractFn) -> ContractFn:
        CONTRACTS[name] = fn
        return fn

    return deco


def read_ids(path: str | os.PathLike, column: str) -> pd.DataFrame:
    """Ids from a file or folder, in file order: JSONL / JSON records (``column``, ``id``,
    ``doc_id``, ``query_id`` or ``turn_id`` field, other fields such as ``domain`` kept), a folder
    of ``*.jsonl`` files (sorted by name, concatenated: a corpus split per collection), TREC qrels
    (their query ids, for ``column='query_id'``), or one id per line (first field)."""

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise ValueError(f"{path}: folder holds no *.jsonl file")
        return pd.concat([read_ids(f, column) for f in files], ignore_index=True)
    name = strip_compression_suffix(path.name)
    if name.endswith((".jsonl", ".json")):
        problems: list[Problem] = []
        if name.endswith(".json"):
            try:
                records = read_json_document(path)
            except JSONTextError as exc:
                raise DataFormatError([Problem(str(exc), line=exc.lineno, path=str(path))]) from None
            records = records if isinstance(records, list) else [records]
        else:
            records = [rec for _, rec in iter_jsonl(path, problems)]
        if problems:
            raise DataFormatError(problems)
        frame = pd.DataFrame([r for r in records if isinstance(r, dict)])
        for alt in (column, "id", "doc_id", "query_id", "turn_id"):
            if alt in frame.columns:
                return frame.rename(columns={alt: column})
        raise ValueError(f"{path}: no {column!r} / 'id' field")
    if column == "query_id":
        q = read_qrels(path, on_bad_lines="skip")
        if len(q):
            return pd.DataFrame({"query_id": pd.unique(q["query_id"])})
    lines = split_lines(path, 1)
    if lines.undecodable:
        raise DataFormatError(lines.encoding_problems(str(path)))
    return pd.DataFrame({column: lines.column(0, lines.n_fields > 0).to_pylist()})


def id_frame(values: Any, column: str) -> pd.DataFrame | None:
    """Ids given as a sequence / Series / Index / DataFrame (with ``column`` (+ ``domain``)) or a
    path to a JSONL / TREC file → DataFrame with ``column`` (str), ``position`` (the order
    given) and, when present, ``domain``. None stays None."""
    if values is None:
        return None
    if isinstance(values, (str, os.PathLike)):
        values = read_ids(values, column)
    if isinstance(values, pd.DataFrame):
        if column not in values.columns:
            alt = next((c for c in ("id", "doc_id", "query_id", "docno") if c in values.columns), None)
            if alt is None:
                raise ValueError(f"expected a column {column!r} (found {list(values.columns)})")
            values = values.rename(columns={alt: column})
        frame = values.copy()
    else:
        if isinstance(values, (set, frozenset)):
            values = sorted(values)
        frame = pd.DataFrame({column: list(values) if not isinstance(values, (pd.Series, pd.Index)) else values})
    frame[column] = frame[column].astype(str)
    frame["position"] = range(len(frame))
    return frame.reset_index(drop=True)

