"""The ``spoken`` output contract (Spoken-Query Document Search) — judged row by row.

One JSON object per line, one line per request::

    {"query_id": "sq-0001", "results": [{"doc_id": "med-0042", "score": 12.5}, ...]}

The Spoken-Query task description: "Return query_id and at most ten distinct doc_id/finite score results from the
requested domain, in nonincreasing score order. Requests must be processed independently ...
Completed valid JSONL rows remain usable ...; missing or invalid rows score zero."

A row (request) is **invalid** — its request scores 0, the other rows still count — when:

* the line is not UTF-8 JSON, not an object, or lacks a string ``query_id`` / an array
  ``results`` of objects with a string ``doc_id`` and a numeric ``score`` (a line whose query id
  cannot be read cannot be attributed: its request is then *missing*, which also scores 0);
* it has more than ``top_k`` (10) results, a repeated doc id, a doc id unknown to the corpus, a
  doc from another domain than the request's (when the corpus and the queries carry
  ``domain``), a non-finite or non-numeric score, or an increasing score (ties are allowed, in
  any order);
* its query id is not among the requests (the row is ignored), or the request already had a row
  (``repeated='invalid'`` (default): every row of that request is rejected and it scores 0;
  ``repeated='first'``: the first row is judged, later ones are ignored).

Lines are read as by the ``chunqiu`` contract (`parse_results`):
a line that is not UTF-8, not JSON or not a JSON object is reported in the same words, with the
same line and kind, as by ``rm.read_run(format="jsonl")``; a key twice in one object invalidates
its row.

Every problem is reported with its line; ``report.invalid_queries`` lists the requests that
score 0 because of their row, ``report.missing_queries`` those without a row. The batch itself
stays scorable (``report.valid`` True): the cleaned run holds the valid rows only.

Severities (``Problem.severity``): a row-level violation costs its request (it scores 0) but not
the batch, so it is a ``warning``, like a missing request, an ignored row of an unknown request
and a blank line (with ``blank_lines='error'``). The one ``error`` is a batch without a single
valid row (empty, or every row rejected): nothing of it can be scored.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...contracts.base import ValidationReport, contract, id_frame, with_severity
from ...errors import Problem
from ...kernels.ranking import corpus_positions
from ..chunqiu.contract import cleaned_run, item_problems, parse_results, sort_problems

__all__ = ["validate_spoken"]


@contract("spoken")
def validate_spoken(
    run: Any,
    *,
    corpus: Any = None,
    queries: Any = None,
    top_k: int = 10,
    repeated: str = "invalid",
    blank_lines: str = "ignore",
) -> ValidationReport:
    """Validate Spoken-Query results row by row (an invalid row scores 0, the rest count).

    Args:
        run: results JSONL (path, text, bytes, open file), a list of records or a DataFrame
            ``query_id, doc_id, score`` (lists in row order).
        corpus: the documents: a DataFrame with ``doc_id`` and ``domain`` (domain check), doc
            ids only (unknown-id check), or a JSONL path with ``doc_id``/``id`` (+ ``domain``).
        queries: the requests: a DataFrame with ``query_id`` and ``domain``, ids only, or a
            requests JSONL path.
        top_k: maximum results per request (10).
        repeated: ``'invalid'`` (default) or ``'first'``; see the module docstring.
        blank_lines: ``'ignore'`` (default) or ``'error'`` (a blank line is then a problem that
            belongs to no request).

    Returns:
        `ValidationReport` with ``valid`` True (unless no row is valid), ``errors``
            (sorted by line; each a ``warning``),
        ``run`` (rows of the valid requests: ``query_id, doc_id, score, rank, line``),
        ``invalid_queries``, ``missing_queries`` and ``extra["checks_skipped"]``.
    """
    if repeated not in ("invalid", "first"):
        raise ValueError(f"repeated must be 'invalid' or 'first', not {repeated!r}")
    parsed = parse_results(run, blank_lines=blank_lines)
    path, records, items = parsed.path, parsed.records, parsed.items
    n = len(records)
    bad_record = np.zeros(n, dtype=bool)
    problems: list[Problem] = list(parsed.problems)
    for k, rec in enumerate(records):
        if rec.problems:
            bad_record[k] = True
            problems += rec.problems
        if rec.results is not None and len(rec.results) > top_k:
            bad_record[k] = True
            problems.append(Problem(f"{len(rec.results)} results, more than {top_k}; the request scores 0",
                                    line=rec.line, query_id=rec.query_id, path=path, kind="too_many"))
    skipped: list[str] = []

    corpus_frame = id_frame(corpus, "doc_id")
    query_frame = id_frame(queries, "query_id")
    doc_ids = pd.Series(items["doc_id"].fillna("").astype(str))
    corpus_pos = None
    if corpus_frame is not None:
        corpus_pos = corpus_positions(doc_ids, corpus_frame["doc_id"])
    else:
        skipped.append("unknown_doc")
    for k, p in item_problems(items, path, corpus_pos=corpus_pos, check_ties=False):
        bad_record[k] = True
        problems.append(p)

    # the requested domain
    if (corpus_frame is not None and "domain" in corpus_frame.columns and query_frame is not None
            and "domain" in query_frame.columns):
        doc_domain = corpus_frame.drop_duplicates("doc_id").set_index("doc_id")["domain"].astype(str)
        req_domain = query_frame.drop_duplicates("query_id").set_index("query_id")["domain"].astype(str)
        dd = doc_domain.reindex(doc_ids.to_numpy()).to_numpy(dtype=object)
        rd = req_domain.reindex(items["query_id"].fillna("").astype(str).to_numpy()).to_numpy(dtype=object)
        known = pd.notna(dd) & pd.notna(rd) & items["doc_id"].notna().to_numpy()
        wrong = known & (dd != rd)
        for i in np.flatnonzero(wrong).tolist():
            bad_record[items["record"].iat[i]] = True
            problems.append(Problem(
                f"result {items['pos'].iat[i]}: document {doc_ids.iat[i]} is from domain {dd[i]!r}, not the "
                f"requested domain {rd[i]!r}; the request scores 0",
                line=int(items["line"].iat[i]) or None, query_id=items["query_id"].iat[i], path=path,
                kind="domain", doc_id=doc_ids.iat[i]))
    else:
        skipped.append("domain")

    # requests: known, answered once
    expected = set(query_frame["query_id"].tolist()) if query_frame is not None else None
    if expected is None:
        skipped.append("unknown_query")
    rows_of: dict[str, list[int]] = {}
    for k, rec in enumerate(records):
        q = rec.query_id
        if q is None:
            continue  # unreadable line: its request (if any) counts as missing
        if expected is not None and q not in expected:
            problems.append(Problem("unknown request id (not among the queries); row ignored", line=rec.line,
                                    query_id=q, path=path, kind="unknown_query"))
            continue
        rows_of.setdefault(q, []).append(k)
    judged = np.zeros(n, dtype=bool)  # the row that decides its request
    invalid: list[str] = []
    for q, rows in rows_of.items():
        first = records[rows[0]].line
        where = f" (first at line {first})" if first is not None else ""
        for k in rows[1:]:
            consequence = ("every row of it is rejected and it scores 0" if repeated == "invalid"
                           else "this row is ignored")
            problems.append(Problem(f"request answered more than once{where}; {consequence}",
                                    line=records[k].line, query_id=q, path=path, kind="repeated_query"))
        if len(rows) > 1 and repeated == "invalid":
            invalid.append(q)
            continue
        judged[rows[0]] = True
        if bad_record[rows[0]]:
            invalid.append(q)
    invalid.sort()
    ok_rows = judged & ~bad_record
    keep = ok_rows[items["record"].to_numpy()] if len(items) else np.zeros(0, dtype=bool)
    keep &= items["score_ok"].to_numpy() & items["doc_id"].notna().to_numpy()
    cleaned = cleaned_run(items, keep)

    missing: list[str] = []
    if query_frame is not None:
        missing = [q for q in query_frame["query_id"].tolist() if q not in rows_of]
        problems += [Problem("request missing from the results (scores 0)", query_id=q, path=path,
                             kind="missing_query") for q in missing]
    else:
        skipped.append("missing_query")
    problems = with_severity(sort_problems(problems), "warning")
    if len(rows_of) == len(invalid):  # no request has a valid row (an empty results list is valid)
        what = "every row was rejected" if n else "the file holds no result line"
        problems.insert(0, Problem(f"no valid row: {what}; there is nothing to score", path=path,
                                   kind="empty", severity="error"))
    return ValidationReport(
        "spoken",
        problems,
        cleaned,
        invalid_queries=invalid,
        missing_queries=missing,
        extra={"checks_skipped": skipped, "lines": n, "requests_answered": len(rows_of),
               "valid_requests": len(rows_of) - len(invalid)},
    )
