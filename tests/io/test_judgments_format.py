"""The judgment-row format lives in the core (io/): the judge writes it, the Likert measure reads it."""

from __future__ import annotations

import json

import pytest

from reteco_measures.io.judgments import DIM_SCALE, JUDGMENT_FIELDS, SCALES, judgment_row, read_judgments


def test_dim_scale_is_public_and_names_each_dimensions_scale():
    # RETECO 1-5, iKAT 0-4, TEMPO verdicts 0/1 (hand-written from the track descriptions)
    assert DIM_SCALE["correctness"] == "reteco" and SCALES["reteco"] == (1, 5)
    assert DIM_SCALE["groundedness"] == "ikat" and SCALES["ikat"] == (0, 4)
    assert DIM_SCALE["temporal_relevance"] == "binary" and SCALES["binary"] == (0, 1)


def test_a_written_row_reads_back(tmp_path):
    row = judgment_row(turn_id="t1", dimension="correctness", score=4, normalized=0.75, model="m",
                       inputs={"question": "q"})
    assert list(row)[: len(JUDGMENT_FIELDS)] == list(JUDGMENT_FIELDS) and row["inputs"] == {"question": "q"}
    assert row["error"] is None and row["attempts"] is None
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    frame, problems = read_judgments(path)
    assert problems == [] and frame["value"].tolist() == [0.75]  # (4 - 1) / 4


def test_an_unknown_field_is_refused():
    with pytest.raises(TypeError, match="scroe"):
        judgment_row(turn_id="t1", scroe=3)
