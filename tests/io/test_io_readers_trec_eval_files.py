"""Run and qrels readers: real trec_eval files, odd whitespace, comments, JSONL, malformed lines."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import ir_measures
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.errors import DataFormatError, DataFormatWarning
from reteco_measures.io.readers import read_run_with_problems


def test_read_run_matches_ir_measures_reader(trec_eval_dir: Path) -> None:
    ours = rm.read_run(trec_eval_dir / "results.test")
    ref = pd.DataFrame(ir_measures.read_trec_run(str(trec_eval_dir / "results.test")))
    assert len(ours) == len(ref) == 1500
    assert ours["query_id"].tolist() == ref["query_id"].tolist()
    assert ours["doc_id"].tolist() == ref["doc_id"].tolist()
    assert ours["score"].tolist() == ref["score"].tolist()
    assert list(ours.columns) == ["query_id", "doc_id", "score", "rank", "run_id"]
    assert set(ours["run_id"]) == {"STANDARD"}


def test_trailing_junk_fields_are_ignored(trec_eval_dir: Path) -> None:
    with pytest.warns(DataFormatWarning, match="fields after the sixth"):
        run = rm.read_run(trec_eval_dir / "results.trunc")
    assert len(run) == 584  # 500 for 301 + 84 for 303 (SOURCE.md)
    assert run["query_id"].value_counts().to_dict() == {"301": 500, "303": 84}
    # every junk line is reported (a warning: the row is kept), never as a lost row
    assert run.attrs["problems"] and {(p.kind, p.severity) for p in run.attrs["problems"]} == {("extra_fields", "warning")}


def test_hash_inside_doc_ids_is_not_a_comment(trec_eval_dir: Path) -> None:
    run = rm.read_run(trec_eval_dir / "results.comment.test")
    assert run["doc_id"].str.contains("#").all()
    qrels = rm.read_qrels(trec_eval_dir / "qrels.comment.test")
    assert qrels["doc_id"].str.contains("#").all()


def test_qrels_comment_lines_are_skipped(trec_eval_dir: Path) -> None:
    plain = rm.read_qrels(trec_eval_dir / "qrels.test")
    commented = rm.read_qrels(trec_eval_dir / "qrels.test.with-comments")
    assert len(plain) == 3681
    assert len(commented) == len(plain)
    # the one changed docno (SOURCE.md) keeps its '#'
    assert "CR#93E-1860" in set(commented["doc_id"])
    assert commented.attrs["problems"] == []


def test_odd_whitespace_and_line_numbers() -> None:
    text = "q1 Q0 d1 1 2.5 run\n\n  q1\tQ0   d2 2 1.5 run extra junk\n# a comment\nq2 Q0 d3 1 -1e-3 r\n"
    frame, problems = read_run_with_problems(text)
    # the fields after the run id are ignored, and said (a note: nothing is lost)
    assert [(p.line, p.kind, p.severity) for p in problems] == [(3, "extra_fields", "warning")]
    assert frame["doc_id"].tolist() == ["d1", "d2", "d3"]
    assert frame["line"].tolist() == [1, 3, 5]
    assert frame["score"].tolist() == [2.5, 1.5, -0.001]


def test_malformed_lines_reported_and_good_rows_kept(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 2.5 r\nq1 Q0 d2 2\nq1 Q0 d3 3 abc r\nq2 Q0 d4 x 1.0 r\nq2 Q0 d5 1 nan r\nq2 Q0 d6 2 0.5 r\n")
    with pytest.warns(DataFormatWarning, match="skipped 4 bad row"):
        run = rm.read_run(path)
    assert run["doc_id"].tolist() == ["d1", "d6"]
    problems = run.attrs["problems"]
    assert [(p.line, p.query_id) for p in problems] == [(2, "q1"), (3, "q1"), (4, "q2"), (5, "q2")]
    assert str(problems[0]).startswith(f"{path}:2: q1: expected 6 columns")
    assert "score 'abc' is not a number" in str(problems[1])
    assert "rank 'x' is not an integer" in str(problems[2])
    with pytest.raises(DataFormatError) as info:
        rm.read_run(path, on_bad_lines="error")
    assert len(info.value.problems) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(rm.read_run(path, on_bad_lines="skip")) == 2


def test_gzip_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "run.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("q Q0 d 1 1.0 r\n")
    assert rm.read_run(path)["doc_id"].tolist() == ["d"]
    with pytest.raises(FileNotFoundError, match="no such file"):
        rm.read_run(tmp_path / "nope.txt")


def test_jsonl_results_and_problems(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    lines = [
        {"query_id": "q1", "results": [{"doc_id": "a", "score": 0.9}, {"doc_id": "b", "score": 0.1}]},
        "not json",
        {"query_id": "q2", "results": [{"doc_id": "c", "score": "high"}, {"doc_id": "d", "score": 1}]},
        {"results": []},
        {"query_id": 7, "results": []},
    ]
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    run = rm.read_run(path, on_bad_lines="skip")
    assert run[["query_id", "doc_id", "rank"]].values.tolist() == [["q1", "a", 1], ["q1", "b", 2], ["q2", "d", 2]]
    msgs = [(p.line, p.query_id, p.kind) for p in run.attrs["problems"]]
    assert msgs == [(2, None, "format"), (3, "q2", "score"), (4, None, "field")]


def test_jsonl_qrels_two_styles(tmp_path: Path) -> None:
    a = tmp_path / "qrels.jsonl"
    a.write_text('{"query_id": "q", "doc_id": "d", "relevance": 2}\n{"query_id": "q", "doc_id": "e", "relevance": 0}\n')
    b = tmp_path / "examples.jsonl"
    b.write_text('{"query_id": "x", "text": "...", "relevant_doc_ids": ["d1", "d2"]}\n{"id": "y", "gold_ids": []}\n')
    qa = rm.read_qrels(a)
    assert qa[["query_id", "doc_id", "relevance"]].values.tolist() == [["q", "d", 2], ["q", "e", 0]]
    qb = rm.read_qrels(b)
    assert qb[["query_id", "doc_id", "relevance"]].values.tolist() == [["x", "d1", 1], ["x", "d2", 1]]


GOOD = st.tuples(
    st.sampled_from(["q1", "q2", "301"]),
    st.sampled_from(["d1", "D-2", "doc#3", "é4"]),
    st.integers(0, 999),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
BAD = st.sampled_from(["q1 Q0 d1", "q1 Q0 d1 1 notanumber r", "q1 Q0 d1 one 1.0 r", "just words", "q Q0 d 1 nan r"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(GOOD, BAD, st.just("")), max_size=30))
def test_property_good_rows_never_lost(rows) -> None:
    text_lines, expected = [], []
    for row in rows:
        if isinstance(row, tuple):
            q, d, r, s = row
            text_lines.append(f"{q} Q0 {d} {r} {s!r} run")
            expected.append((q, d, float(s), len(text_lines)))
        else:
            text_lines.append(row)
    text = "\n".join(text_lines) + "\n"
    frame, problems = read_run_with_problems(text.encode())
    got = list(zip(frame["query_id"], frame["doc_id"], frame["score"], frame["line"]))
    assert got == expected
    bad_lines = {i + 1 for i, row in enumerate(rows) if isinstance(row, str) and row}
    assert {p.line for p in problems} == bad_lines


def test_fast_and_general_paths_agree(trec_eval_dir: Path, tmp_path: Path) -> None:
    from reteco_measures.io.readers import _fast_trec_run

    original = (trec_eval_dir / "results.test").read_bytes()  # tabs, scores padded with spaces
    assert _fast_trec_run(original) is not None
    normalised = b"\n".join(b" ".join(line.split()) for line in original.splitlines()) + b"\n"
    assert _fast_trec_run(normalised) is not None  # single spaces: fast path
    tabbed = normalised.replace(b" ", b"\t")
    assert _fast_trec_run(tabbed) is not None
    general, _ = read_run_with_problems(original + b"\n# a comment line forces the general path\n")
    for data in (original, normalised, tabbed):
        fast, problems = read_run_with_problems(data)
        assert problems == []
        pd.testing.assert_frame_equal(fast.reset_index(drop=True), general.reset_index(drop=True), check_dtype=False)


def test_fast_path_declines_suspicious_files() -> None:
    from reteco_measures.io.readers import _fast_trec_run

    assert _fast_trec_run(b"q Q0  1 0.5 r\nq Q0 d 1 0.5 r\n") is None  # empty doc id field
    assert _fast_trec_run(b"q\tQ0\td x\t1\t0.5\tr\n") is None  # space inside a tab-separated id field
    assert _fast_trec_run(b"q Q0 d\t1 0.5 r\n") is None  # a tab in a space-separated file
    assert _fast_trec_run(b"# c\tQ0\td\t1\t0.5\tr\n") is None  # comment line
    assert _fast_trec_run(b"q Q0 d 1 nan r\n") is None  # NaN score gets reported by the general path


@pytest.mark.parametrize("data, line, words", [
    (b"q Q0 d1 1 0.5 r\nq  d2 2 0.4 r\n", 2, "found 5"),  # a doubled space: Q0 missing, 5 fields
    (b"q Q0 d1 1 0.5 r\nq Q\x800 d2 2 0.4 r\n", 2, "not valid UTF-8"),  # undecodable byte in Q0
    (b"q Q0 d1 1 0.5 r\n#c Q0 d2 2 0.4 r\n", None, None),  # a comment line of six fields
])
def test_the_columns_the_arrow_path_does_not_convert_are_still_checked(data: bytes, line: int | None,
                                                                      words: str | None) -> None:
    """The arrow path does not convert Q0; a file whose Q0 field is missing or undecodable, or
    that holds a comment line, is read by the checking path (the bad line reported, the good one kept)."""
    from reteco_measures.io.readers import _fast_trec_run

    assert _fast_trec_run(data) is None
    frame, problems = read_run_with_problems(data)
    assert frame["doc_id"].tolist() == ["d1"]
    assert [p.line for p in problems] == ([line] if line else [])
    if words:
        assert words in problems[0].message


@pytest.mark.parametrize("fmt", ["{!r}", "{:.17g}", "{:.16e}", "{:.15g}", "{:.19e}"])
@pytest.mark.parametrize("path", ["arrow", "checking"])
def test_scores_of_random_doubles_read_as_float_reads_them(fmt: str, path: str) -> None:
    """5,000 doubles drawn from all bit patterns (every exponent, subnormals included), written as
    Python writes them: each read back bit for bit as Python's float() reads the text, by the
    arrow path (a clean file) and by the checking path (the same file with a comment line)."""
    import math
    import struct

    import numpy as np

    from reteco_measures.io.readers import _fast_trec_run

    rng = np.random.default_rng(7)
    values = rng.integers(0, 2**64, 5_000, dtype=np.uint64).view(np.float64)
    texts = [fmt.format(float(v)) for v in values if math.isfinite(v)]
    data = "".join(f"q Q0 d{i} {i + 1} {t} r\n" for i, t in enumerate(texts)).encode()
    if path == "checking":
        data = b"# forces the checking path\n" + data
    assert (_fast_trec_run(data) is not None) == (path == "arrow")
    frame = rm.read_run(data, on_bad_lines="skip", line_numbers=True)
    got = dict(zip(frame["doc_id"].tolist(), frame["score"].to_numpy().view(np.int64).tolist()))
    for i, t in enumerate(texts):
        want = float(t)
        if math.isfinite(want):  # a text that overflows to infinity is reported, not kept
            assert got[f"d{i}"] == struct.unpack("<q", struct.pack("<d", want))[0], (t, want)
        else:
            assert f"d{i}" not in got
