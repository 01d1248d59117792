"""The iKAT 2023 notes say what happened to an invalid run: it is still scored as read (the
organisers' validator would reject it), and only a run with no passage scores 0 everywhere."""

from __future__ import annotations

import json
import warnings

import pytest

import reteco_measures as rm
from reteco_measures.datasets.ikat2023 import load_ikat_topics
from reteco_measures.sample import ikat_sample_root


@pytest.fixture(scope="module")
def sample():
    root = ikat_sample_root()
    return root, json.loads((root / "runs" / "ikat2023_run.json").read_text(encoding="utf-8"))


def _score(run, root):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rm.benchmark("ikat-2023").score(run, data=root)


def _invalid_notes(score) -> list[str]:
    return [n for n in score.notes if "invalid" in n]


def test_invalid_run_with_passages_is_scored_and_the_note_says_so(sample):
    root, run = sample
    score = _score(run, root)
    # the sample's two deliberate defects: one turn missing, one PTKB id not in the PTKB
    assert not score.valid and score.report.problem_counts() == {"missing_query": 1, "unknown_doc": 1}
    assert score.official > 0  # scored, not zeroed
    [note] = _invalid_notes(score)
    assert "1 missing_query" in note and "1 unknown_doc" in note and "scored as read" in note
    assert not any("every" in n and "is 0" in n for n in score.notes)
    assert not any("could not be read" in n for n in score.notes)


def test_a_valid_run_has_no_invalid_note(sample):
    root, run = sample
    topics = load_ikat_topics("test", root=root)
    ptkb = dict(zip(topics["query_id"], topics["ptkb"]))
    fixed = json.loads(json.dumps(run))
    for turn in fixed["turns"]:
        for resp in turn["responses"]:
            resp["ptkb_provenance"] = [p for p in resp["ptkb_provenance"] if p["id"] in ptkb[turn["turn_id"]]]
    present = {t["turn_id"] for t in fixed["turns"]}
    template = fixed["turns"][0]["responses"][0]
    for qid in topics["query_id"]:
        if qid not in present:
            fixed["turns"].append({"turn_id": qid, "responses": [{**template, "ptkb_provenance": []}]})
    score = _score(fixed, root)
    assert score.valid, [str(p) for p in score.report.problems_of("error")]
    assert _invalid_notes(score) == []


def test_run_without_passages_scores_zero_and_the_note_says_why(sample):
    root, run = sample
    score = _score({"run_name": run["run_name"], "run_type": run["run_type"], "turns": []}, root)
    assert not score.valid and len(score.report.run) == 0
    assert score.official == 0.0
    [note] = _invalid_notes(score)
    assert "holds no passage" in note and "every passage score is 0" in note and "format" in note
