"""``io/readers.py``: a file of another benchmark's run format is named, with the reader to use."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import reteco_measures as rm


def test_read_run_on_an_ikat_run_json_points_to_the_ikat_contract(ikat2023_dir: Path) -> None:
    path = ikat2023_dir / "2023_sample_run.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = rm.read_run(path)
    assert len(frame) == 0
    messages = [str(w.message) for w in caught]
    assert any("validate_run(path, 'ikat')" in m and "--contract ikat" in m for m in messages), messages
    assert not any("missing field 'query_id'" in m for m in messages), messages
    with pytest.raises(rm.errors.DataFormatError, match="iKAT 2023 run"):
        rm.read_run(path, on_bad_lines="error")
    # the contract the message names reads it
    assert len(rm.validate_run(path, "ikat").run) > 0


def test_an_ikat_run_object_in_text_is_recognised_too() -> None:
    text = '{"run_name": "r", "run_type": "automatic", "turns": [{"turn_id": "9-1_1", "responses": []}]}\n'
    with pytest.raises(rm.errors.DataFormatError, match=r"validate_run\(path, 'ikat'\)"):
        rm.read_run(text, format="jsonl", on_bad_lines="error")
