"""The bundled RECOR-like sample (with its judge panel) is what its generator writes
(deterministic), the panel is small, and its files read without a problem."""

from __future__ import annotations

import warnings
from pathlib import Path

import generate_reteco_recor

import reteco_measures as rm
from reteco_measures.io.judgments import read_judgments
from reteco_measures.io.ratings import read_ratings

SAMPLE = Path(rm.__file__).resolve().parent / "sample" / "data"
PANEL = SAMPLE / "runs" / "reteco_track2_panel"


def test_generator_is_deterministic_and_matches_the_bundled_sample(tmp_path):
    written = generate_reteco_recor.main(tmp_path)
    names = {str(p.relative_to(tmp_path)) for p in written}
    assert {"runs/reteco_track2_panel/human.csv", "runs/reteco_track2_panel/m1-rubric.jsonl",
            "runs/reteco_track2_panel/m1-stepwise.jsonl", "runs/reteco_track2_panel/m2-rubric.jsonl"} <= names
    for path in written:
        bundled = SAMPLE / path.relative_to(tmp_path)
        assert bundled.read_bytes() == path.read_bytes(), f"{bundled} differs from the generator's output"
    assert sum(p.stat().st_size for p in PANEL.iterdir()) < 20_000


def test_the_panel_files_read_without_problems():
    dev_turns = rm.benchmark("reteco-2a").score(SAMPLE / "runs" / "reteco_track2.txt", data=SAMPLE).per_query
    turns = set(dev_turns["query_id"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a problem would be a DataFormatWarning
        for judge in ("m1-rubric", "m1-stepwise", "m2-rubric"):
            frame, problems = read_judgments(PANEL / f"{judge}.jsonl")
            assert problems == [] and frame["valid"].all() and len(frame) == 43
            assert set(frame["turn_id"]) == turns  # the judged answers are the dev turns, as the run names them
            assert set(frame["dimension"]) == {"correctness"} and frame["score"].between(1, 5).all()
        human = read_ratings(PANEL / "human.csv")
    assert len(human) == 44 and set(human["rater"]) == {"r1", "r2"} and set(human["turn_id"]) < turns
