"""Judge pieces that need no endpoint: strict reply parsing, prompt files, input readers,
aggregation of judgment files and the ``Likert`` measure. Expected values are worked out by hand
in the comments."""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.judge import (
    FAMILIES,
    ReplyError,
    aggregate_judgments,
    load_prompt,
    parse_prompt,
    parse_reply,
)
from reteco_measures.judge.inputs import read_answers, read_context, read_targets
from reteco_measures.kernels.likert import LikertWarning

PROMPT_DIR = Path(rm.__file__).parent / "judge" / "prompts"


# ------------------------------------------------------------------------------------------------
# strict parsing


def _own_words(text: str) -> bool:
    """Not empty, not a bare ``<placeholder>``, no ``{{field}}``: a rationale of the model's own."""
    t = " ".join(text.split())
    return bool(t) and not (t.startswith("<") and t.endswith(">") and "<" not in t[1:-1] and ">" not in t[1:-1]) \
        and not re.search(r"\{\{\w+\}\}", t)


@given(score=st.integers(1, 5), rationale=st.text(max_size=50).filter(_own_words))
def test_parse_reply_accepts_every_in_range_integer(score, rationale):
    assert parse_reply(json.dumps({"score": score, "rationale": rationale}), 1, 5) == (score, rationale)


@given(score=st.integers().filter(lambda s: not 0 <= s <= 4))
def test_parse_reply_rejects_out_of_range(score):
    with pytest.raises(ReplyError, match="outside 0-4"):
        parse_reply(json.dumps({"score": score, "rationale": "r"}), 0, 4)


@pytest.mark.parametrize("score", [4.0, 3.5, "4", True, None, [4]])
def test_parse_reply_rejects_non_integers(score):
    with pytest.raises(ReplyError):
        parse_reply(json.dumps({"score": score, "rationale": "r"}), 1, 5)


@pytest.mark.parametrize(
    "content",
    ['{"score": 3}', '{"rationale": "r"}', '[3, "r"]', 'Score: 3', '{"score": 3, "rationale": "r"} thanks',
     '{"score": 3, "rationale": 7}', ""],
)
def test_parse_reply_rejects_malformed(content):
    with pytest.raises(ReplyError):
        parse_reply(content, 1, 5)


def test_parse_reply_allows_whitespace_and_one_code_fence():
    assert parse_reply('\n  {"score": 2, "rationale": "ok"}  \n', 1, 5) == (2, "ok")
    assert parse_reply('```json\n{"score": 2, "rationale": "ok"}\n```', 1, 5) == (2, "ok")


# ------------------------------------------------------------------------------------------------
# prompt files


def test_every_packaged_prompt_loads_with_its_file_hash():
    files = sorted(PROMPT_DIR.glob("*/*.v*.txt"))
    assert len(files) == 9
    for path in files:
        dim = path.name.split(".")[0]
        p = load_prompt(dim)
        assert p.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert p.dimension == dim and p.family == path.parent.name
        assert dim in FAMILIES[p.family]
    assert {d: (load_prompt(d).low, load_prompt(d).high) for d in ("correctness", "groundedness", "period_coverage")} \
        == {"correctness": (1, 5), "groundedness": (0, 4), "period_coverage": (0, 1)}


def test_passage_dimensions_see_the_passages_and_others_do_not_need_them():
    assert "passages" in load_prompt("faithfulness").placeholders
    assert "passages" in load_prompt("groundedness").placeholders
    assert "passages" not in load_prompt("coherence").placeholders
    assert "history" in load_prompt("coherence").placeholders


def test_normalisation_matches_the_spec():
    c, n = load_prompt("correctness"), load_prompt("naturalness")
    # RETECO (s-1)/4, iKAT s/4
    assert [c.normalize(s) for s in (1, 2, 3, 4, 5)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert [n.normalize(s) for s in (0, 1, 2, 3, 4)] == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_render_is_single_pass():
    p = load_prompt("relevance")
    msgs = p.render({"question": "use {{answer}} here", "history": "h", "answer": "A {x}"})
    assert "use {{answer}} here" in msgs[1]["content"]
    assert "A {x}" in msgs[1]["content"]
    with pytest.raises(KeyError):
        p.render({"question": "q"})


def test_own_prompt_folder_and_versions(tmp_path):
    text = "# family: reteco\n# dimension: relevance\n# version: {v}\n# scale: 1-5\n=== system ===\nS{v}\n=== user ===\n{{{{answer}}}}\n"
    (tmp_path / "relevance.v1.txt").write_text(text.format(v=1))
    (tmp_path / "relevance.v2.txt").write_text(text.format(v=2))
    assert load_prompt("relevance", directory=tmp_path).system == "S2"
    assert load_prompt("relevance", directory=tmp_path, version=1).system == "S1"
    (tmp_path / "relevance.v3.txt").write_text(text.format(v=7))
    with pytest.raises(ValueError, match="does not match the file name"):
        load_prompt("relevance", directory=tmp_path)
    with pytest.raises(FileNotFoundError):
        load_prompt("coherence", directory=tmp_path)
    with pytest.raises(ValueError, match="unknown dimension"):
        load_prompt("fluency")


def test_parse_prompt_errors():
    with pytest.raises(ValueError, match="sections"):
        parse_prompt(b"# family: reteco\nno sections")
    with pytest.raises(ValueError, match="scale"):
        parse_prompt(b"# family: x\n# dimension: d\n# version: 1\n# scale: 5-1\n=== system ===\na\n=== user ===\nb\n")


# ------------------------------------------------------------------------------------------------
# input readers keep good rows around bad ones


def test_answers_reader_reports_bad_lines_and_keeps_good_ones(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"turn_id": "t1", "answer": "A1"}\n'
                    'not json\n'
                    '{"answer": "no id"}\n'
                    '{"turn_id": "t2", "answer": 5}\n'
                    '\n'
                    '{"turn_id": "t3", "answer": "A3 \u6625\u79cb"}\n'
                    '{"turn_id": "t1", "answer": "dup"}\n', encoding="utf-8")
    answers, problems = read_answers(path)
    assert {k: v.answer for k, v in answers.items()} == {"t1": "A1", "t3": "A3 \u6625\u79cb"}
    assert [(p.line, p.query_id) for p in problems] == [(2, None), (3, None), (4, "t2"), (7, "t1")]
    assert str(problems[2]).startswith(f"{path}:4: t2: ")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(
    st.builds(lambda i, a: json.dumps({"turn_id": f"t{i}", "answer": a}), st.integers(0, 30), st.text(max_size=20)),
    st.sampled_from(["{", "[]", '{"turn_id": null}', '"x"', "{\"turn_id\": \"q\", \"answer\": []}"]),
), max_size=20))
def test_answers_reader_property(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("a") / "a.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    answers, problems = read_answers(path)
    expected: dict[str, str] = {}
    for line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("turn_id"), str) and isinstance(obj.get("answer"), str):
            expected.setdefault(obj["turn_id"], obj["answer"])
    assert {k: v.answer for k, v in answers.items()} == expected
    assert len(answers) + len(problems) == len(lines)


def test_context_reader_accepts_string_history_and_rejects_bad_passages(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"turn_id": "a", "question": "q", "history": "Q: x\nA: y"}) + "\n"
                    + json.dumps({"turn_id": "b", "question": "q", "passages": "not a list"}) + "\n")
    ctx, problems = read_context(path)
    assert list(ctx) == ["a"] and ctx["a"].history == "Q: x\nA: y" and ctx["a"].passages == []
    assert problems[0].query_id == "b" and "passages" in problems[0].message


def test_targets_from_qrels_and_jsonl(tmp_path):
    q = tmp_path / "q.txt"
    q.write_text("9-1_1 0 d1 1\n9-1_1 0 d2 0\n9-1_3 0 d1 2\n")
    assert read_targets(q) == ["9-1_1", "9-1_3"]
    j = tmp_path / "t.jsonl"
    j.write_text('{"turn_id": "a"}\n{"query_id": "b"}\n')
    assert read_targets(j) == ["a", "b"]


# ------------------------------------------------------------------------------------------------
# aggregation


def _judgments(tmp_path: Path) -> Path:
    rows = [
        {"turn_id": "c1_turn_1", "dimension": "correctness", "score": 5, "normalized": 1.0, "error": None},
        {"turn_id": "c1_turn_2", "dimension": "correctness", "score": 3, "normalized": 0.5, "error": None},
        {"turn_id": "c2_turn_1", "dimension": "correctness", "score": None, "normalized": None,
         "error": "invalid after 4 attempt(s): timeout"},
        {"turn_id": "c1_turn_1", "dimension": "faithfulness", "score": 2, "normalized": 0.25, "error": None},
        {"turn_id": "c1_turn_2", "dimension": "faithfulness", "score": 4, "normalized": 0.75, "error": None},
        {"turn_id": "c2_turn_1", "dimension": "faithfulness", "score": 1, "normalized": 0.0, "error": None},
        {"turn_id": "c2_turn_6", "dimension": "faithfulness", "score": 5, "normalized": 1.0, "error": None},
    ]
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps({**r, "model": "m", "prompt_sha256": "h"}) + "\n" for r in rows))
    return path


def test_aggregate_by_hand(tmp_path):
    path = _judgments(tmp_path)
    frame = aggregate_judgments(path, targets=["c1_turn_1", "c1_turn_2", "c2_turn_1", "c2_turn_6", "c3_turn_1"])
    got = frame.set_index("dimension")
    # correctness: (5-1)/4 = 1.0 and (3-1)/4 = 0.5 -> 0.75 over 2 valid; 1 invalid; c2_turn_6, c3_turn_1 missing
    assert got.loc["correctness", "value"] == pytest.approx(0.75)
    assert tuple(got.loc["correctness", ["n", "n_invalid", "n_missing"]]) == (2, 1, 2)
    # faithfulness: 0.25, 0.75, 0.0, 1.0 -> 0.5 over 4; c3_turn_1 missing
    assert got.loc["faithfulness", "value"] == pytest.approx(0.5)
    assert tuple(got.loc["faithfulness", ["n", "n_invalid", "n_missing"]]) == (4, 0, 1)


def test_aggregate_default_targets_and_by_depth(tmp_path):
    path = _judgments(tmp_path)
    frame = aggregate_judgments(path, by="depth")
    f = frame[frame["dimension"] == "faithfulness"].set_index("depth")
    # T1: c1_turn_1 0.25, c2_turn_1 0.0 -> 0.125; T2: 0.75; T5+: c2_turn_6 1.0
    assert f.loc["T1", "value"] == pytest.approx(0.125)
    assert f.loc["T2", "value"] == pytest.approx(0.75)
    assert f.loc["T5+", "value"] == pytest.approx(1.0)
    assert f.loc["(macro)", "value"] == pytest.approx((0.125 + 0.75 + 1.0) / 3)
    assert f.loc["(all)", "value"] == pytest.approx(0.5)
    c = frame[frame["dimension"] == "correctness"].set_index("depth")
    # without targets, c2_turn_6 (judged for faithfulness only) counts as missing for correctness
    assert tuple(c.loc["(all)", ["n", "n_invalid", "n_missing"]]) == (2, 1, 1)


def test_aggregate_flags_bad_rows_without_losing_good_ones(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(
        json.dumps({"turn_id": "a", "dimension": "relevance", "score": 4, "normalized": 0.75, "error": None}) + "\n"
        + "garbage\n"
        + json.dumps({"turn_id": "b", "dimension": "relevance", "score": 4, "normalized": 0.8, "error": None}) + "\n"
        + json.dumps({"turn_id": "c", "dimension": "relevance", "score": 0, "normalized": 0.0, "error": None}) + "\n"
        + json.dumps({"turn_id": "a", "dimension": "relevance", "score": 1, "normalized": 0.0, "error": None}) + "\n"
        + json.dumps({"turn_id": "d", "dimension": "groundedness", "score": 0, "normalized": 0.0, "error": None})
        + "\n")
    problems: list = []
    frame = aggregate_judgments(path, problems=problems).set_index("dimension")
    # a: 0.75 valid; b: normalized disagrees with (4-1)/4 -> invalid; c: 0 is not on 1-5 -> invalid
    assert frame.loc["relevance", "value"] == pytest.approx(0.75)
    assert tuple(frame.loc["relevance", ["n", "n_invalid"]]) == (1, 2)
    # groundedness is on the iKAT 0-4 scale: 0 is valid -> 0.0
    assert frame.loc["groundedness", "value"] == 0.0 and frame.loc["groundedness", "n"] == 1
    lines = sorted(p.line for p in problems)
    assert lines == [2, 3, 4, 5]
    assert any("duplicate" in p.message for p in problems)


def test_aggregate_by_topics_domain(tmp_path):
    path = _judgments(tmp_path)
    topics = pd.DataFrame({"query_id": ["c1_turn_1", "c1_turn_2", "c2_turn_1", "c2_turn_6"],
                           "domain": ["law", "law", "drones", "drones"]})
    f = aggregate_judgments(path, dimensions=["faithfulness"], topics=topics, by="domain").set_index("domain")
    # law: 0.25, 0.75 -> 0.5; drones: 0.0, 1.0 -> 0.5; macro 0.5; all 0.5
    assert f["value"].to_dict() == pytest.approx({"drones": 0.5, "law": 0.5, "(macro)": 0.5, "(all)": 0.5})
    c = aggregate_judgments(path, dimensions=["correctness"], topics=topics, by="domain").set_index("domain")
    # correctness: law 1.0, 0.5 -> 0.75; drones: invalid + missing -> NaN; macro over defined groups 0.75
    assert c.loc["law", "value"] == pytest.approx(0.75) and math.isnan(c.loc["drones", "value"])
    assert tuple(c.loc["drones", ["n", "n_invalid", "n_missing"]]) == (0, 1, 1)
    assert c.loc["(macro)", "value"] == pytest.approx(0.75)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from(["relevance", "naturalness"]),
                          st.one_of(st.none(), st.integers(-1, 6))), max_size=25))
def test_aggregate_matches_a_plain_loop(rows):
    frame = pd.DataFrame([{"turn_id": f"t{t}", "dimension": d, "score": s, "normalized": None,
                           "error": None if s is not None else "invalid after 4 attempt(s): timeout"}
                          for t, d, s in rows], columns=["turn_id", "dimension", "score", "normalized", "error"])
    targets = [f"t{i}" for i in range(7)]
    out = aggregate_judgments(frame, targets=targets, dimensions=["relevance", "naturalness"]).set_index("dimension")
    for dim, (lo, hi) in (("relevance", (1, 5)), ("naturalness", (0, 4))):
        seen: dict[str, int | None] = {}
        for t, d, s in rows:
            if d == dim:
                seen.setdefault(f"t{t}", s)  # first row of a (turn, dimension) wins
        valid = [(s - lo) / (hi - lo) for s in seen.values() if s is not None and lo <= s <= hi]
        assert out.loc[dim, "n"] == len(valid)
        assert out.loc[dim, "n_invalid"] == len(seen) - len(valid)
        assert out.loc[dim, "n_missing"] == 7 - len(seen)
        if valid:
            assert out.loc[dim, "value"] == pytest.approx(sum(valid) / len(valid))
        else:
            assert math.isnan(out.loc[dim, "value"])


def test_cli_aggregate(tmp_path, capsys):
    from reteco_measures.cli.main import main

    path = _judgments(tmp_path)
    targets = tmp_path / "t.txt"
    targets.write_text("c1_turn_1\nc1_turn_2\nc2_turn_1\nc3_turn_1\n")
    assert main(["judge", "aggregate", str(path), "--targets", str(targets), "--format", "json"]) == 0
    out = capsys.readouterr()
    rows = {r["dimension"]: r for r in json.loads(out.out)}
    # faithfulness over targets: 0.25, 0.75, 0.0 -> 1/3; c2_turn_6 left out (not a target), c3_turn_1 missing
    assert rows["faithfulness"]["value"] == pytest.approx(1 / 3)
    assert (rows["faithfulness"]["n"], rows["faithfulness"]["n_missing"]) == (3, 1)
    assert "c2_turn_6: judgment for a turn that is not a target" in out.err


# ------------------------------------------------------------------------------------------------
# the Likert measure through the provider


def test_likert_measure(tmp_path):
    path = _judgments(tmp_path)
    qrels = pd.DataFrame({"query_id": ["c1_turn_1", "c1_turn_2", "c2_turn_1", "c3_turn_1"],
                          "doc_id": ["d"] * 4, "relevance": [1] * 4})
    run = pd.DataFrame({"query_id": ["c1_turn_1"], "doc_id": ["d"], "score": [1.0]})
    m = ir_measures.parse_measure(f"Likert(dimension='correctness', judgments='{path}')")
    with pytest.warns(LikertWarning, match="1 have an invalid judgment and 1 have none"):
        result = rm.calc_aggregate([m], qrels, run)
    assert result[m] == pytest.approx(0.75)  # (1.0 + 0.5) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LikertWarning)
        per_q = {x.query_id: x.value for x in rm.iter_calc([m], qrels, run)}
    assert per_q["c1_turn_1"] == 1.0 and per_q["c1_turn_2"] == 0.5
    assert math.isnan(per_q["c2_turn_1"]) and math.isnan(per_q["c3_turn_1"])
    # through side_info too, with a DataFrame of judgments
    frame = pd.read_json(path, lines=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LikertWarning)
        with rm.side_info(judgments=frame):
            value = ir_measures.calc_aggregate([rm.Likert(dimension="faithfulness")], qrels, run)
    # faithfulness for the 4 qrels turns: 0.25, 0.75, 0.0, missing -> 1/3
    assert value[rm.Likert(dimension="faithfulness")] == pytest.approx(1 / 3)


def test_likert_measure_errors(tmp_path):
    qrels = pd.DataFrame({"query_id": ["a"], "doc_id": ["d"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["a"], "doc_id": ["d"], "score": [1.0]})
    with pytest.raises(ValueError, match="no judgments"):
        rm.calc_aggregate([rm.Likert(dimension="correctness")], qrels, run)
    with pytest.raises(ValueError, match="needs a dimension"):
        rm.calc_aggregate([rm.Likert(judgments=str(_judgments(tmp_path)))], qrels, run)


def test_means_are_summed_left_to_right_in_target_order(tmp_path):
    """The mean over turns is engine.results' sum: left to right in target order (as ir_measures'
    MeanAgg adds), not numpy's pairwise sum; the values are picked so that the two differ."""
    import functools
    import operator

    from ir_measures.measures.base import MeanAgg

    # three repeats per turn: a turn's value is a third of a sum of quarters (exact), not dyadic
    scores = [[5, 4, 3], [2, 2, 1], [1, 1, 1], [5, 4, 5], [3, 4, 5], [4, 4, 3], [3, 5, 2], [5, 4, 1], [2, 5, 3],
              [1, 4, 4], [5, 1, 1], [5, 1, 3], [1, 2, 3], [3, 3, 1], [1, 1, 1], [4, 3, 4], [2, 4, 4]]
    rows = [{"turn_id": f"c{i}_turn_1", "dimension": "relevance", "score": sc, "normalized": (sc - 1) / 4,
             "error": None, "repeat": rep} for i, reps in enumerate(scores) for rep, sc in enumerate(reps)]
    frame = pd.DataFrame(rows)
    targets = [f"c{i}_turn_1" for i in range(len(scores))][::-1]  # target order, not file order
    values = [sum(sc - 1 for sc in reps) / 4 / 3 for reps in scores][::-1]
    peer = MeanAgg()
    for v in values:
        peer.add(v)
    left_to_right = functools.reduce(operator.add, values) / len(values)
    assert peer.result() == left_to_right
    assert left_to_right != float(np.mean(values))  # pairwise summation differs on these values
    out = aggregate_judgments(frame, targets=targets)
    assert out["value"].tolist() == [left_to_right]
    grouped = aggregate_judgments(frame, targets=targets, by="depth").set_index("depth")
    assert grouped.loc["(all)", "value"] == left_to_right == grouped.loc["T1", "value"]
    assert tuple(grouped.loc["(macro)", ["n", "n_invalid", "n_missing"]]) == (len(scores), 0, 0)
