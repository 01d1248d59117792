"""The ``reteco`` run contract (RETECO SemEval-2027 Task 1, both tracks).

Rules, from the RETECO evaluation plan ("Deterministic handling"):

* TREC 6 columns ``query_id Q0 doc_id rank score run_id``; malformed lines are reported and
  skipped (the rest of the file still counts);
* duplicate document ids of a query are removed after their first occurrence (file order);
* unknown document ids (not in the organiser corpus, when ``corpus`` is given) are discarded;
* rows of queries that are not expected (when ``queries`` is given) are discarded;
* missing queries / steps / turns score 0 (reported, not an error of the file);
* ordering is trec_eval's (score, then doc id, both descending); the rank column is ignored.

Every removal is reported with its line number. The cleaned run is returned.

Severities (``Problem.severity``): every problem above is a ``warning`` — the rules say what
happens to the row (it is skipped, removed or discarded, or the query scores 0) and the rest of
the run still counts, so the report stays ``valid``. The one ``error`` is a run with no usable
row at all (an empty file, or every row removed): there is nothing to score.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import Problem
from ..io._lines import source_name
from ..io.convert import is_source, run_frame_with_problems
from ..io.readers import read_run_with_problems
from ..kernels.ranking import rank_run
from .base import ValidationReport, contract, id_frame, with_severity

__all__ = ["validate_reteco", "load_run_rows"]


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


def _line(value: Any) -> int | None:
    v = int(value)
    return v if v > 0 else None


@contract("reteco")
def validate_reteco(run: Any, *, corpus: Any = None, queries: Any = None, top_k: int = 10) -> ValidationReport:
    frame, problems, path = load_run_rows(run, "trec")
    problems = list(problems)
    keep = np.ones(len(frame), dtype=bool)
    qids = frame["query_id"].to_numpy(dtype=object)
    docs = frame["doc_id"].to_numpy(dtype=object)
    lines = frame["line"].to_numpy()

    expected = id_frame(queries, "query_id")
    if expected is not None:
        # hash-based membership: np.isin on object arrays is O(rows x ids)
        unknown_q = ~frame["query_id"].isin(set(expected["query_id"].tolist())).to_numpy()
        for i in np.flatnonzero(unknown_q):
            problems.append(Problem("query id not in the topics; row discarded", line=_line(lines[i]),
                                    query_id=qids[i], path=path, kind="unknown_query", doc_id=docs[i]))
        keep &= ~unknown_q

    dup = frame.duplicated(["query_id", "doc_id"], keep="first").to_numpy()
    if dup.any():
        first_line = frame.drop_duplicates(["query_id", "doc_id"]).set_index(["query_id", "doc_id"])["line"]
        for i in np.flatnonzero(dup & keep):
            first = first_line.get((qids[i], docs[i]))
            where = f" (first at line {int(first)})" if first is not None and int(first) > 0 else ""
            problems.append(Problem(f"duplicate document {docs[i]} removed{where}", line=_line(lines[i]),
                                    query_id=qids[i], path=path, kind="duplicate", doc_id=docs[i]))
        keep &= ~dup

    known = id_frame(corpus, "doc_id")
    if known is not None:
        unknown_d = ~frame["doc_id"].isin(set(known["doc_id"].tolist())).to_numpy()
        for i in np.flatnonzero(unknown_d & keep):
            problems.append(Problem(f"unknown document {docs[i]} discarded (not in the corpus)",
                                    line=_line(lines[i]), query_id=qids[i], path=path, kind="unknown_doc",
                                    doc_id=docs[i]))
        keep &= ~unknown_d

    cleaned = frame[keep].reset_index(drop=True)
    cleaned["rank"] = 0
    if len(cleaned):
        ranked = rank_run(cleaned.assign(_pos=np.arange(len(cleaned))), "trec_eval")
        cleaned.loc[ranked["_pos"].to_numpy(), "rank"] = ranked["rank"].to_numpy()
    missing: list[str] = []
    if expected is not None:
        present = set(cleaned["query_id"].tolist())
        missing = [q for q in expected["query_id"].tolist() if q not in present]
        for q in missing:
            problems.append(Problem("query missing from the run (scores 0)", query_id=q, path=path,
                                    kind="missing_query"))
    cleaned = cleaned[["query_id", "doc_id", "score", "rank", "line"]]
    problems = with_severity(problems, "warning")
    if not len(cleaned):
        what = "every row was removed" if len(frame) else "the run holds no readable row"
        problems.insert(0, Problem(f"no usable row: {what}; there is nothing to score", path=path,
                                   kind="empty", severity="error"))
    return ValidationReport("reteco", problems, cleaned, missing_queries=missing)
