"""``io/convert.py``: the converters' "no such file" check, and inline text that is not a path."""

from __future__ import annotations

import os

import pytest

from reteco_measures.io.convert import as_qrels_frame, as_run_frame, run_frame_with_problems


@pytest.mark.parametrize("convert, what", [(as_run_frame, "run"), (run_frame_with_problems, "run"),
                                           (as_qrels_frame, "qrels")])
def test_missing_file_message(tmp_path, convert, what):
    missing = str(tmp_path / "nothere.txt")
    with pytest.raises(FileNotFoundError, match=f"nothere.txt: no such {what} file"):
        convert(missing)
    assert not os.path.exists(missing)


def test_inline_text_is_not_taken_for_a_path():
    assert as_run_frame("q1 Q0 d1 1 2.5 x\n")["doc_id"].tolist() == ["d1"]
    assert as_qrels_frame("q1 0 d1 2\n")["relevance"].tolist() == [2]


def test_dicts_give_the_columns_a_frame_gives():
    """Dict-of-dicts in (built in one pass) = the same rows written as a DataFrame, in dict order;
    keys that are not strings become their ``str``; ints and floats mixed read as float scores."""
    import numpy as np
    import pandas as pd

    from reteco_measures.errors import DataFormatError

    run = {"q1": {"a": 1.5, "b": 2, 7: 0.25}, 3: {"x": -1.0}, "empty": {}}
    frame = as_run_frame(run)
    expected = pd.DataFrame({"query_id": ["q1", "q1", "q1", "3"], "doc_id": ["a", "b", "7", "x"],
                             "score": [1.5, 2.0, 0.25, -1.0]})
    assert frame["query_id"].tolist() == expected["query_id"].tolist()
    assert frame["doc_id"].tolist() == expected["doc_id"].tolist()
    assert frame["score"].dtype == np.float64 and frame["score"].tolist() == expected["score"].tolist()
    assert as_run_frame(expected).equals(frame)
    qrels = as_qrels_frame({"q1": {"a": 1, "b": 0}, 2: {"c": 2.0}})
    assert qrels["relevance"].tolist() == [1, 0, 2] and qrels["relevance"].dtype == np.int64
    assert qrels["query_id"].tolist() == ["q1", "q1", "2"]
    # values that are not numbers are still named row by row
    with pytest.raises(DataFormatError, match="row 2"):
        as_run_frame({"q": {"a": 1.0, "b": None}})
    with pytest.raises(DataFormatError, match="row 1"):
        as_qrels_frame({"q": {"a": 1.5}})
    # an int beyond int64 is refused by the grade bound, as before (not wrapped around)
    with pytest.raises(DataFormatError):
        as_qrels_frame({"q": {"a": 2**70}})
