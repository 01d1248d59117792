"""The judgment readers agree: ``read_judgments`` (aggregate), ``read_judgment_rows`` (report) and
``judge_scores`` (agreement) keep the same rows and report the same problems at the same lines,
and every public entry point built on them (``aggregate_judgments``, ``build_report``,
``agreement``, the ``Likert`` measure) gives the numbers worked out by hand in the comments.
"""

from __future__ import annotations

import json
import math
import warnings

import ir_measures
import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.judge import (
    aggregate_judgments,
    agreement,
    build_report,
    read_judgments,
    self_consistency,
)
from reteco_measures.judge.agreement import judge_scores
from reteco_measures.judge.report import read_judgment_rows
from reteco_measures.kernels.likert import LikertWarning

# one small judgments file, one case per line (correctness is on the RETECO 1-5 scale)
LINES = [
    '{"turn_id": "t1", "dimension": "correctness", "score": 4, "normalized": 0.75, "error": null, '
    '"prompt_tokens": 10}',                                                                    # 1 valid: (4-1)/4
    '{"turn_id": "t2", "dimension": "correctness", "score": "four", "error": null}',         # 2 invalid rating
    '{"turn_id": "t3", "dimension": "correctness", "score": 7, "error": null}',              # 3 off the 1-5 scale
    '{"turn_id": "t4", "dimension": "correctness", "score": ',                               # 4 broken JSON
    '{"turn_id": "t1", "dimension": "correctness", "score": 2, "error": null}',              # 5 duplicate of line 1
    '{"turn_id": "t5", "score": 3, "error": null}',                                          # 6 no dimension
    '{"turn_id": "t6", "dimension": "correctness", "score": null, "error": "timeout"}',      # 7 harness-invalid
    '{"turn_id": "t7", "dimension": "conversational_coherence", "score": 2, "error": null}',  # 8 valid: (2-1)/4
]
KEPT_LINES = [1, 2, 3, 7, 8]          # every row without a problem in its structure
KEPT_ITEMS = ["t1", "t2", "t3", "t6", "t7"]
VALID_LINES = [1, 8]
PROBLEM_LINES = [2, 3, 4, 5, 6]       # one problem per bad line, in line order
PROBLEM_KINDS = ["score", "score", "format", "duplicate", "field"]


@pytest.fixture
def judgments(tmp_path):
    path = tmp_path / "judgments.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def _where(problems):
    return [(p.line, p.kind) for p in problems]


def test_read_judgments_by_hand(judgments):
    frame, problems = read_judgments(judgments)
    assert frame["line"].tolist() == KEPT_LINES
    assert frame["turn_id"].tolist() == KEPT_ITEMS
    assert frame["dimension"].tolist() == ["correctness"] * 4 + ["coherence"]  # canonical name
    assert frame["valid"].tolist() == [True, False, False, False, True]
    assert frame["value"].iloc[0] == 0.75 and frame["value"].iloc[4] == 0.25
    assert frame["value"].iloc[1:4].isna().all()
    assert frame["score"].iloc[0] == 4 and frame["score"].iloc[1] == "four"  # scores as read
    assert frame["repeat"].tolist() == [0] * 5 and set(frame["path"]) == {str(judgments)}
    # a harness-invalid row (line 7) is invalid but no problem of the file; the others are problems
    assert frame["problem"].notna().tolist() == [False, True, True, False, False]
    assert _where(problems) == list(zip(PROBLEM_LINES, PROBLEM_KINDS, strict=True))
    assert all(p.path == str(judgments) for p in problems)
    assert [p.query_id for p in problems] == ["t2", "t3", None, "t1", "t5"]
    assert "'four'" in problems[0].message and "1-5" in problems[1].message
    # standard columns only unless all_fields
    assert "prompt_tokens" not in frame.columns


def test_read_judgments_keep_invalid_false_and_all_fields(judgments):
    frame, problems = read_judgments(judgments, keep_invalid=False, all_fields=True)
    assert frame["line"].tolist() == VALID_LINES
    assert frame["prompt_tokens"].iloc[0] == 10 and math.isnan(frame["prompt_tokens"].iloc[1])
    assert _where(problems) == list(zip(PROBLEM_LINES, PROBLEM_KINDS, strict=True))


def test_the_three_readers_agree(judgments):
    frame, p_frame = read_judgments(judgments)
    found_rows: list = []
    rows = read_judgment_rows([judgments], found_rows)
    found_scores: list = []
    scores = judge_scores(judgments, found_scores)
    # the same rows (judge_scores keeps only the valid ones, by design) ...
    assert rows["line"].tolist() == KEPT_LINES and rows["turn_id"].tolist() == KEPT_ITEMS
    assert rows["valid"].tolist() == frame["valid"].tolist()
    assert scores.to_dict(orient="records") == [
        {"turn_id": "t1", "dimension": "correctness", "repeat": 0, "score": 4},
        {"turn_id": "t7", "dimension": "coherence", "repeat": 0, "score": 2}]
    # ... and the same problems at the same lines
    assert [str(p) for p in found_rows] == [str(p) for p in p_frame] == [str(p) for p in found_scores]
    assert [p.line for p in found_scores] == PROBLEM_LINES
    # every field kept by the report's reader
    assert rows["prompt_tokens"].iloc[0] == 10
    # without a list, judge_scores warns once with the problems
    with pytest.warns(rm.DataFormatWarning, match="5 problem"):
        judge_scores(judgments)


def test_aggregate_judgments_by_hand(judgments):
    problems: list = []
    f = aggregate_judgments(judgments, problems=problems).set_index("dimension")
    # correctness rows kept: t1 valid 0.75; t2, t3 (problems), t6 (error) invalid; t7 has no correctness row
    # (default targets = the turns with a kept row: t1, t2, t3, t6, t7)
    assert f.loc["correctness", "value"] == 0.75
    assert tuple(f.loc["correctness", ["n", "n_invalid", "n_missing"]]) == (1, 3, 1)
    assert f.loc["coherence", "value"] == 0.25
    assert tuple(f.loc["coherence", ["n", "n_invalid", "n_missing"]]) == (1, 0, 4)
    assert [p.line for p in problems] == PROBLEM_LINES
    targets = ["t1", "t2", "t3", "t4", "t5", "t6", "t7"]
    g = aggregate_judgments(judgments, targets=targets, dimensions=["correctness"]).set_index("dimension")
    # t4 (broken line), t5 (no dimension), t7 (other dimension) have no correctness row -> missing
    assert tuple(g.loc["correctness", ["n", "n_invalid", "n_missing"]]) == (1, 3, 3)


def test_build_report_by_hand(judgments):
    problems: list = []
    report = build_report(judgments, problems=problems, targets=["t1", "t2", "t3", "t4", "t5", "t6", "t7"])
    dims = {d["dimension"]: d for d in report["dimensions"]}
    c = dims["correctness"]
    assert (c["judgments"], c["items"], c["valid_items"], c["invalid_items"], c["invalid_judgments"]) == (4, 4, 1, 3, 3)
    assert c["missing_items"] == 3  # t4, t5, t7
    assert c["raw_mean"] == 4.0 and c["normalized_mean"] == 0.75
    # reasons: the harness error and the two score problems (numbers written as N)
    assert c["invalid_by_reason"] == {"timeout": 1, "correctness: score 'four' is not an integer in N-N; the "
                                      "judgment is invalid": 1, "correctness: score N is not an integer in N-N; "
                                      "the judgment is invalid": 1}
    assert dims["coherence"]["raw_mean"] == 2.0 and dims["coherence"]["normalized_mean"] == 0.25
    assert [(p["line"], p["kind"]) for p in report["problems"]] == list(zip(PROBLEM_LINES, PROBLEM_KINDS,
                                                                            strict=True))
    assert [p.line for p in problems] == PROBLEM_LINES
    assert report["tokens"]["prompt_tokens"] == 10  # the duplicate (line 5) is not counted


def test_agreement_by_hand(judgments, tmp_path):
    human = tmp_path / "human.csv"
    human.write_text("turn_id,dimension,rater,score\nt1,correctness,a,4\nt2,correctness,a,3\n"
                     "t3,correctness,a,5\nt6,correctness,a,1\n", encoding="utf-8")
    problems: list = []
    (row,) = agreement(judgments, human, bootstrap=0, problems=problems).to_dict(orient="records")
    # only t1 has a valid judge score and a rating: n = 1, judge 4 = consensus 4
    assert row["n"] == 1 and row["exact"] == 1.0 and row["within_1"] == 1.0
    # the judge file's problems, each once, with their lines (the ratings have none)
    assert [p.line for p in problems] == PROBLEM_LINES


def test_report_with_human_and_repeats_reports_each_problem_once(tmp_path):
    path = tmp_path / "j.jsonl"
    rows = [{"turn_id": "a", "dimension": "groundedness", "repeat": 0, "score": 3},
            {"turn_id": "a", "dimension": "groundedness", "repeat": 1, "score": 4},
            {"turn_id": "a", "dimension": "groundedness", "repeat": 1, "score": 0},   # line 3: duplicate
            {"turn_id": "b", "dimension": "groundedness", "repeat": 0, "score": 9},   # line 4: off 0-4
            {"turn_id": "b", "dimension": "groundedness", "repeat": 1, "score": 2},
            {"turn_id": "b", "dimension": "groundedness", "repeat": -1, "score": 2}]  # line 6: bad repeat
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    human = pd.DataFrame({"turn_id": ["a", "b"], "dimension": "groundedness", "rater": "r", "score": [3, 2]})
    problems: list = []
    report = build_report(path, human=human, bootstrap=0, problems=problems)
    assert [(p.line, p.kind) for p in problems] == [(3, "duplicate"), (4, "score"), (6, "field")]
    # lower median of a's repeats (3, 4) is 3; b has one valid repeat, 2: both equal the rater
    (table,) = report["agreement"]["table"]
    assert table["n"] == 2 and table["exact"] == 1.0
    # self-consistency: only a has two valid repeats
    (sc,) = report["repeats"]["self_consistency"]
    assert sc["items"] == 1 and sc["identical"] == 0.0
    assert self_consistency(path, problems=[]).loc[0, "items"] == 1


def test_likert_measure_reads_the_same_rows(judgments):
    qrels = pd.DataFrame({"query_id": ["t1", "t2", "t3", "t4"], "doc_id": "d", "relevance": 1})
    run = pd.DataFrame({"query_id": ["t1"], "doc_id": ["d"], "score": [1.0]})
    m = ir_measures.parse_measure(f"Likert(dimension='correctness', judgments='{judgments}')")
    with pytest.warns(LikertWarning, match=r"2 have an invalid judgment and 1 have none; .* \(5 problem"):
        per_q = {x.query_id: x.value for x in rm.iter_calc([m], qrels, run)}
    assert per_q["t1"] == 0.75  # the first row of t1, not the duplicate
    assert all(math.isnan(per_q[t]) for t in ("t2", "t3", "t4"))


def test_dataframes_and_tempo_rows(tmp_path):
    frame = pd.DataFrame({"turn_id": ["x", "y", None], "dimension": ["completeness", "completeness", "coverage"],
                          "score": [5, True, 1]})
    got, problems = read_judgments(frame)
    # row positions stand for lines; a boolean is not a score; the last row has no item
    assert got["valid"].tolist() == [True, False] and got["value"].tolist()[0] == 1.0
    assert [(p.line, p.kind, p.path) for p in problems] == [(2, "score", None), (3, "field", None)]
    # a 'normalized' that disagrees with the score: (3-1)/4 = 0.5, not 0.6 -> invalid and reported, everywhere
    frame = pd.DataFrame({"turn_id": ["x", "y"], "dimension": "completeness", "score": [3, 3],
                          "normalized": [0.5, 0.6]})
    got, problems = read_judgments(frame)
    assert got["valid"].tolist() == [True, False] and [p.line for p in problems] == [2]
    found: list = []
    assert judge_scores(frame, found)["turn_id"].tolist() == ["x"] and [p.line for p in found] == [2]
    # TEMPO: a labels file (verdict, null = invalid) and --judgments-out rows (item from query, doc, period)
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"query_id": "q1", "doc_id": "d1", "temporal": 1, "periods": [], "error": null}\n'
                      '{"query_id": "q1", "doc_id": "d2", "temporal": null, "error": "verdict: timeout"}\n'
                      '{"query_id": "q2", "doc_id": 7, "dimension": "period_coverage", "period": "1990s", '
                      '"score": 0}\n', encoding="utf-8")
    got, problems = read_judgments(labels)
    assert got["turn_id"].tolist() == ["q1 d1", "q1 d2", "q2 7 1990s"] and problems == []
    assert got["dimension"].tolist() == ["temporal_relevance", "temporal_relevance", "period_coverage"]
    assert got["valid"].tolist() == [True, False, True] and got["value"].tolist()[2] == 0.0
    assert got["error"].tolist()[1] == "verdict: timeout"
    assert judge_scores(labels)["score"].tolist() == [1, 0]


def test_scale_forced_and_unknown_dimension(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"turn_id": "a", "dimension": "fluency", "score": 0}\n'
                    '{"turn_id": "b", "dimension": "fluency", "score": 2.5}\n', encoding="utf-8")
    got, problems = read_judgments(path)
    # no known scale: integers only, no normalised value
    assert got["valid"].tolist() == [True, False] and got["value"].isna().all()
    assert [p.line for p in problems] == [2]
    got, problems = read_judgments(path, scale="reteco")  # 0 is off 1-5
    assert got["valid"].tolist() == [False, False] and [p.line for p in problems] == [1, 2]
    got, _ = read_judgments(path, scale=(0, 4))
    assert got["value"].tolist()[0] == 0.0
    with pytest.raises(ValueError, match="unknown dimension"):
        aggregate_judgments(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = aggregate_judgments(path, scale="ikat", problems=[]).set_index("dimension")
    assert f.loc["fluency", "value"] == 0.0 and f.loc["fluency", "n_invalid"] == 1
