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
