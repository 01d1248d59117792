"""The note of an undefined TemporalCoverage says what the topics lack, never contradicting their
columns (a topics table whose 'steps' column holds only empty lists does have the column)."""

from __future__ import annotations

import pandas as pd
import pytest

import reteco_measures as rm

QRELS = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "relevance": [1, 1]})
RUN = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "score": [1.0, 1.0]})


def _note(topics: pd.DataFrame | None) -> str:
    with pytest.warns(UserWarning, match="no evaluated query has a required period") as caught:
        rm.calc_aggregate(["TC@10"], QRELS, RUN, topics=topics)
    return next(str(w.message) for w in caught if "required period" in str(w.message))


def test_empty_steps_are_called_empty_not_missing() -> None:
    note = _note(pd.DataFrame({"query_id": ["q1", "q2"], "steps": [[], []], "domain": ["x", "x"]}))
    assert "'steps' is empty for every evaluated query" in note
    assert "columns" not in note  # no list of columns that names 'steps' after saying it is lacking


def test_missing_column_and_no_topics() -> None:
    note = _note(pd.DataFrame({"query_id": ["q1", "q2"], "domain": ["x", "x"]}))
    assert "the topics have no 'steps' column (their columns: ['query_id', 'domain'])" in note
    assert "no topics were given" in _note(None)
