"""Judge input readers on hostile files: a bad byte loses only its line, problems name the file
and line, and malformed iKAT structures are reported problems, never exceptions."""

from __future__ import annotations

import json

import pytest

from reteco_measures.cli.main import main as cli_main
from reteco_measures.judge.inputs import read_answers, read_context, read_targets


def answers_bytes(n: int) -> list[bytes]:
    return [json.dumps({"turn_id": f"t{i}", "answer": f"answer {i}"}).encode() + b"\n" for i in range(n)]


def test_one_invalid_byte_loses_only_its_line(tmp_path):
    lines = answers_bytes(400)
    lines[300] = b'{"turn_id": "t300", "answer": "caf\xe9"}\n'  # latin-1, not UTF-8
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"".join(lines))
    answers, problems = read_answers(path)
    assert len(answers) == 399 and "t300" not in answers
    assert answers["t299"].answer == "answer 299" and answers["t399"].answer == "answer 399"
    (p,) = problems
    assert p.line == 301 and p.path == str(path) and "UTF-8" in p.message


def test_invalid_utf8_at_the_start_names_the_file(tmp_path, capsys):
    lines = answers_bytes(3)
    bad = tmp_path / "answers.jsonl"
    bad.write_bytes(b"\xff\xfe" + b"".join(lines))
    answers, problems = read_answers(bad)
    assert set(answers) == {"t1", "t2"}
    assert problems[0].line == 1 and problems[0].path == str(bad)
    ctx = tmp_path / "ctx.jsonl"
    ctx.write_bytes(b"\x80" + json.dumps({"turn_id": "t0", "question": "q"}).encode() + b"\n")
    contexts, problems = read_context(ctx)
    assert contexts == {} and problems[0].path == str(ctx) and problems[0].line == 1
    targets = tmp_path / "targets.txt"
    targets.write_bytes(b"t0\n\xc3(\n")
    with pytest.raises(ValueError, match=r"targets\.txt:2: not valid UTF-8"):
        read_targets(targets)
    # through the CLI: a clear message naming the file, no traceback
    assert cli_main(["judge", "generation", "--answers", str(bad), "--context", str(ctx), "--targets", str(targets),
                     "--model", "m", "--out", str(tmp_path / "o.jsonl"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "targets.txt:2" in err and "Traceback" not in err


def test_ikat_topics_with_a_non_object_turn_is_a_problem(tmp_path):
    topics = [{"number": "9-1", "turns": [{"turn_id": 1, "utterance": "first?", "response": "yes"},
                                         "not a turn", 42,
                                         {"turn_id": 2, "utterance": "second?"}]},
              "not a conversation"]
    path = tmp_path / "topics.json"
    path.write_text(json.dumps(topics))
    contexts, problems = read_context(path)
    assert list(contexts) == ["9-1_1", "9-1_2"]
    assert contexts["9-1_2"].history == [{"role": "user", "content": "first?"}, {"role": "assistant", "content": "yes"}]
    msgs = [p.message for p in problems]
    assert any("turns[1] is not an object (str)" in m for m in msgs)
    assert any("turns[2] is not an object (int)" in m for m in msgs)
    assert any("conversation [1]" in m for m in msgs)
    assert all(p.path == str(path) for p in problems)


@pytest.mark.parametrize("content", [b"[" * 100000, b"[1, " + b"9" * 5000 + b"]", b"[\n  {\"number\": \xff}\n]",
                                     b"{\"a\": 1}"], ids=["deep", "huge-number", "bad-utf8", "object"])
def test_hostile_ikat_topics_files_are_problems(tmp_path, content):
    path = tmp_path / "topics.json"
    path.write_bytes(content if content.startswith(b"[") else b"[" + content + b"]")
    contexts, problems = read_context(path)
    assert problems and all(p.path == str(path) for p in problems)


@pytest.mark.parametrize("content", [b"{" + b"[" * 100000, b'{"turns": [' + b"7" * 5000 + b"]}",
                                     b'{\n "turns": [\xff]\n}', b'{"turns": 3}'],
                         ids=["deep", "huge-number", "bad-utf8", "turns-not-list"])
def test_hostile_ikat_run_files_are_problems(tmp_path, content):
    path = tmp_path / "run.json"
    path.write_bytes(content)
    answers, problems = read_answers(path)
    assert answers == {} and problems and all(p.path == str(path) for p in problems)


def test_temporal_pairs_file_with_a_bad_byte_names_file_and_line(tmp_path, capsys):
    topics = tmp_path / "t.jsonl"
    topics.write_text(json.dumps({"query_id": "q1", "query": "When?"}) + "\n")
    docs = tmp_path / "d.jsonl"
    docs.write_text(json.dumps({"id": "d1", "content": "text"}) + "\n")
    pairs = tmp_path / "pairs.txt"
    pairs.write_bytes(b"q1 d1\nq1 d\xff2\n")
    assert cli_main(["judge", "temporal", "--topics", str(topics), "--documents", str(docs), "--pairs", str(pairs),
                     "--model", "m", "--out", str(tmp_path / "o.jsonl"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "pairs.txt:2: not valid UTF-8" in err and "Traceback" not in err


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_noise = st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"") or b"\xff")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), _noise, st.just(b"[" * 5000), st.just(b'{"turn_id": "x", "answer": 1' + b"9" * 5000
                                                                            + b"}")),
                min_size=1, max_size=12))
def test_mutated_judge_files_keep_every_untouched_line(tmp_path_factory, mutations):
    """Replace some lines of valid answers/context files with noise (bytes, deep JSON, huge numbers):
    every untouched line is kept, every replaced line is at most one problem, nothing raises."""
    tmp = tmp_path_factory.mktemp("fuzz")
    answers, contexts = [], []
    for i, m in enumerate(mutations):
        a = json.dumps({"turn_id": f"t{i}", "answer": f"answer {i}"}).encode()
        c = json.dumps({"turn_id": f"t{i}", "question": f"q{i}", "passages": ["p"]}).encode()
        answers.append(a if m is None else m)
        contexts.append(c if m is None else m)
    good = {f"t{i}" for i, m in enumerate(mutations) if m is None}
    pa, pc = tmp / "a.jsonl", tmp / "c.jsonl"
    pa.write_bytes(b"\n".join(answers) + b"\n")
    pc.write_bytes(b"\n".join(contexts) + b"\n")
    got, problems = read_answers(pa)
    assert good <= set(got) and len(problems) <= len(mutations) - len(good)
    assert all(p.path == str(pa) and p.line is not None for p in problems)
    ctx, problems = read_context(pc)
    assert good <= set(ctx) and all(p.path == str(pc) for p in problems)
