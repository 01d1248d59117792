"""``io.readers``: lines that cannot be one record, the bound on relevance grades, and a file of
another benchmark's run format named with the reader to use.

Expected rows and problems are written by hand from the documented rules; the one evaluated
value comes from pytrec_eval on the qrels without the refused line.
"""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.errors import DataFormatError
from reteco_measures.io.readers import (
    MAX_GRADE,
    _fast_trec_run,
    read_qrels_with_problems,
    read_run_with_problems,
)


def _read(tmp_path: Path, data: bytes, name: str = "run.txt") -> tuple[pd.DataFrame, list, Path]:
    path = tmp_path / name
    path.write_bytes(data)
    frame, problems = read_run_with_problems(path)
    return frame, problems, path


# --------------------------------------------------------------------------------------------
# a carriage return inside a line


def test_cr_only_line_ends_are_one_reported_line_not_one_row(tmp_path: Path) -> None:
    """Old Mac line ends: without a newline the file is one line; it used to read as the first
    record, the others lost without a word."""
    frame, problems, path = _read(tmp_path, b"q1 Q0 d1 1 0.5 r\rq1 Q0 d2 2 0.4 r\rq2 Q0 d3 1 0.3 r\r")
    assert len(frame) == 0
    assert [(p.line, p.query_id) for p in problems] == [(1, "q1")]
    assert "carriage return (CR) inside the line" in problems[0].message
    assert str(problems[0]).startswith(f"{path}:1: q1: ")


def test_a_stray_cr_costs_its_own_line_only(tmp_path: Path) -> None:
    data = b"q1 Q0 d1 1 0.5 r\nq1 Q0 d\r2 2 0.4 r\nq1 Q0 d3 3 0.3 r\n# a comment\rq1 Q0 d4 4 0.2 r\n"
    frame, problems, _ = _read(tmp_path, data)
    assert frame["doc_id"].tolist() == ["d1", "d3"]
    assert frame["line"].tolist() == [1, 3]
    assert [p.line for p in problems] == [2, 4]  # a comment line with a CR inside hides a record too
    assert all("carriage return" in p.message for p in problems)


def test_crlf_line_ends_and_trailing_blanks_are_fine(tmp_path: Path) -> None:
    frame, problems, _ = _read(tmp_path, b"q1 Q0 d1 1 0.5 r\r\nq1 Q0 d2 2 0.4 r \r\n\r\n")
    assert problems == []
    assert frame["doc_id"].tolist() == ["d1", "d2"]
    assert frame["score"].tolist() == [0.5, 0.4]


def test_cr_inside_a_qrels_line_is_reported() -> None:
    frame, problems = read_qrels_with_problems(b"q1 0 d1 1\rq1 0 d2 1\nq1 0 d3 2\n")
    assert frame["doc_id"].tolist() == ["d3"]
    assert [(p.line, p.query_id) for p in problems] == [(1, "q1")]
    assert "carriage return" in problems[0].message


# --------------------------------------------------------------------------------------------
# more than six fields


def test_two_records_on_one_line_are_reported(tmp_path: Path) -> None:
    """A lost line break: fields 7-12 are a record of their own (an integer rank, a number as
    score). The line is reported and skipped; the others are kept."""
    data = b"q1 Q0 d1 1 0.5 r\nq1 Q0 d2 2 0.4 r q1 Q0 d3 3 0.3 r\nq1\tQ0\td4\t4\t0.2\tr\tq1\tQ0\td5\t5\t1e-3\tr\n" \
           b"q1 Q0 d6 6 0.1 r\n"
    frame, problems, path = _read(tmp_path, data)
    assert frame["doc_id"].tolist() == ["d1", "d6"]
    assert [(p.line, p.query_id) for p in problems] == [(2, "q1"), (3, "q1")]
    assert problems[0].message.startswith("found 12 fields, and fields 7-12 are another record")
    assert str(problems[1]).startswith(f"{path}:3: q1: found 12 fields")


def test_free_text_after_the_run_id_is_still_ignored() -> None:
    """trec_eval ignores any field after the run id (its own test run results.trunc carries
    'more junk at end of lines'); only a second record is refused. A 7th field is never silently
    accepted: each such line gets a note (the row is kept)."""
    data = b"q1 Q0 d1 1 0.5 r more junk at end of lines\nq1 Q0 d2 2 0.4 r a b c d e f g\nq1 Q0 d3 3 0.3 r x y z 9 w v\n" \
           b"q1 Q0 d4 4 0.2 r 7th\n"
    frame, problems = read_run_with_problems(data)
    assert [(p.line, p.kind, p.severity) for p in problems] == [(i, "extra_fields", "warning") for i in (1, 2, 3, 4)]
    assert problems[3].message.startswith("found 7 fields: the fields after the sixth (the run id) are ignored")
    assert frame["doc_id"].tolist() == ["d1", "d2", "d3", "d4"]
    assert frame["run_id"].tolist() == ["r", "r", "r", "r"]


def test_the_arrow_path_hands_such_files_on() -> None:
    assert _fast_trec_run(b"q1 Q0 d1 1 0.5 r\rq1 Q0 d2 2 0.4 r\r") is None
    assert _fast_trec_run(b"q1 Q0 d1 1 0.5 r q1 Q0 d2 2 0.4 r\n") is None
    assert _fast_trec_run(b"q1 Q0 d1 1 0.5 r\nq1 Q0 d2 2 0.4 r\n") is not None


# --------------------------------------------------------------------------------------------
# relevance grades


def test_trec_qrels_grades_beyond_the_bound_are_refused_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"q1 0 d1 2147483648\nq1 0 d2 1\nq1 0 d3 1000\nq1 0 d4 -1001\nq1 0 d5 -1000\nq1 0 d6 1001\n")
    frame, problems = read_qrels_with_problems(path)
    assert frame["doc_id"].tolist() == ["d2", "d3", "d5"]
    assert frame["relevance"].tolist() == [1, MAX_GRADE, -MAX_GRADE] == [1, 1000, -1000]
    assert [(p.line, p.doc_id) for p in problems] == [(1, "d1"), (4, "d4"), (6, "d6")]
    assert str(problems[0]) == (f"{path}:1: q1: relevance 2147483648 is beyond the largest grade read "
                                "(-1000 to 1000; trec_eval allocates memory by grade)")


def test_jsonl_qrels_grades_beyond_the_bound_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    lines = [{"query_id": "q1", "doc_id": "d1", "relevance": 2**31}, {"query_id": "q1", "doc_id": "d2", "relevance": 3},
             {"query_id": "q1", "doc_id": "d3", "relevance": -5000}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    frame, problems = read_qrels_with_problems(path)
    assert frame["doc_id"].tolist() == ["d2"]
    assert [(p.line, p.doc_id) for p in problems] == [(1, "d1"), (3, "d3")]
    assert "beyond the largest grade read" in problems[0].message


@pytest.mark.parametrize("value", [2**31, -(2**63), 1001, 1e300, 2**64 - 1])
def test_in_memory_grades_beyond_the_bound_raise_naming_the_row(value) -> None:
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": [1, value]})
    with pytest.raises(DataFormatError) as info:
        rm.calc_aggregate(["nDCG@10"], qrels, pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]}))
    problems = info.value.problems
    assert [p.line for p in problems] == [2]
    assert "a grade from -1000 to 1000" in problems[0].message


def test_in_memory_grades_within_the_bound_are_kept() -> None:
    from reteco_measures.io.convert import as_qrels_frame

    qrels = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1000, -1000, 2.0]})
    assert as_qrels_frame(qrels)["relevance"].tolist() == [1000, -1000, 2]


def test_bpref_with_a_huge_grade_scores_the_remaining_judgments(tmp_path: Path) -> None:
    """The reproducer of the report: 'q1 0 d1 2147483648' made pytrec_eval allocate 16 GB for
    Bpref. Now that line is refused (with a warning) and the rest is scored; the value is
    pytrec_eval's on the qrels without it."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2147483648\nq1 0 d2 1\nq1 0 d3 0\nq1 0 d4 1\n")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d3 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq1 Q0 d1 3 0.7 r\nq1 Q0 d4 4 0.6 r\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = rm.calc_aggregate(["Bpref", "nDCG@10"], str(qrels), str(run))
    assert any("2147483648" in str(w.message) and f"{qrels}:1" in str(w.message) for w in seen)
    ref = pytrec_eval.RelevanceEvaluator({"q1": {"d2": 1, "d3": 0, "d4": 1}}, {"bpref", "ndcg_cut.10"}).evaluate(
        {"q1": {"d3": 0.9, "d2": 0.8, "d1": 0.7, "d4": 0.6}})["q1"]
    values = {str(k): v for k, v in got.items()}
    assert values["Bpref"] == pytest.approx(ref["bpref"], abs=1e-12)
    assert values["nDCG@10"] == pytest.approx(ref["ndcg_cut_10"], abs=1e-12)


# another benchmark's run format

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


def test_a_score_with_a_digit_separator_is_named_as_such() -> None:
    """``3_0`` is a number to Python's float (30.0), not a non-finite one: the message says what it is."""
    frame, problems = read_run_with_problems(b"q1 Q0 d1 1 3_0 r\nq1 Q0 d2 2 1e400 r\nq1 Q0 d3 3 x r\n")
    assert float("3_0") == 30.0
    assert [p.line for p in problems] == [1, 2, 3]
    assert "with '_' as a digit separator (Python would read it as 30.0)" in problems[0].message
    assert "not a finite number" not in problems[0].message
    assert "is not a finite number" in problems[1].message
    assert problems[2].message.endswith("is not a number")


# --------------------------------------------------------------------------------------------
# rank=False (what an evaluation reads), Q0 not parsed, ranks beyond 32 bits


_RUN = b"q1 Q0 d1 1 2.5 r\nq1 Q0 d2 2 1.5 r\nq2 Q0 d1 1 0.5 r\n"


@pytest.mark.parametrize("data", [
    _RUN,  # the arrow path
    _RUN + b"q2 Q0 d9 x 0.1 r\n",  # a bad rank: the checking path, the line reported
    _RUN.replace(b" ", b"\t"),  # tab-separated
])
def test_rank_false_leaves_only_the_rank_column_out(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = rm.read_run(path)
        lean = rm.read_run(path, rank=False)
    assert list(lean.columns) == ["query_id", "doc_id", "score", "run_id"]
    pd.testing.assert_frame_equal(lean, full.drop(columns="rank"))
    assert lean.attrs["problems"] == full.attrs["problems"]
    assert [p.line for p in full.attrs["problems"]] == ([4] if b" x " in data else [])
    assert full["rank"].tolist()[:3] == [1, 2, 1] and full["rank"].dtype == "int64"


def test_rank_false_on_jsonl_and_in_memory_runs() -> None:
    from reteco_measures.io.convert import as_run_frame

    text = json.dumps({"query_id": "q1", "results": [{"doc_id": "a", "score": 2}, {"doc_id": "b", "score": 1}]}) + "\n"
    assert "rank" not in rm.read_run(text, rank=False).columns
    assert rm.read_run(text)["rank"].tolist() == [1, 2]
    frame = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0], "rank": [7]})
    assert list(as_run_frame(frame, rank=False).columns) == ["query_id", "doc_id", "score"]
    assert as_run_frame(frame)["rank"].tolist() == [7]


def test_an_empty_q0_field_is_still_a_line_of_five_fields() -> None:
    # Q0 is not parsed on the arrow path: a doubled space (an empty field) sends the file on
    data = _RUN + b"q2  d3 3 0.25 r\n"
    assert _fast_trec_run(data) is None
    frame, problems = read_run_with_problems(data)
    assert frame["doc_id"].tolist() == ["d1", "d2", "d1"]
    assert [p.line for p in problems] == [4] and "found 5" in problems[0].message


def test_ranks_beyond_32_bits_are_read_exactly() -> None:
    data = b"q1 Q0 d1 3000000000 2.5 r\nq1 Q0 d2 -2147483649 1.5 r\n"
    frame, problems = read_run_with_problems(data)
    assert not problems
    assert frame["rank"].tolist() == [3000000000, -2147483649] and frame["rank"].dtype == "int64"


# --------------------------------------------------------------------------------------------
# a large file is parsed in pieces of whole lines: the same frame and problems as read whole


_LINES = [f"q{i // 7} Q0 d{i % 7}-{i} {i % 7 + 1} {1.5 - i / 100:.3f} run".encode() for i in range(60)]


@pytest.mark.parametrize("name,data", [
    ("clean", b"\n".join(_LINES) + b"\n"),
    ("no final newline", b"\n".join(_LINES)),
    ("tabs", (b"\n".join(_LINES) + b"\n").replace(b" ", b"\t")),
    ("tab in a late piece", b"\n".join(_LINES[:50] + [_LINES[50].replace(b" ", b"\t")] + _LINES[51:]) + b"\n"),
    ("bad rank at the end", b"\n".join(_LINES + [b"q9 Q0 dz 1x 0.5 run"]) + b"\n"),
    ("blank line between pieces", b"\n".join(_LINES[:30] + [b""] + _LINES[30:]) + b"\n"),
    ("comment line", b"\n".join(_LINES[:40] + [b"# a comment"] + _LINES[40:]) + b"\n"),
    ("crlf", b"\r\n".join(_LINES) + b"\r\n"),
    ("bom", b"\xef\xbb\xbf" + b"\n".join(_LINES) + b"\n"),
    ("empty q0 field late", b"\n".join(_LINES + [b"q9  dz 1 0.5 run"]) + b"\n"),
    ("long line", b"\n".join(_LINES[:20] + [b"q9 Q0 " + b"d" * 300 + b" 1 0.5 run"] + _LINES[20:]) + b"\n"),
    ("jsonl", b'{"query_id": "q1", "results": [{"doc_id": "a", "score": 1}]}\n' * 40),
    ("gz", gzip.compress(b"\n".join(_LINES) + b"\n")),
])
@pytest.mark.parametrize("rank", [True, False])
def test_a_file_read_in_pieces_reads_as_read_whole(tmp_path: Path, monkeypatch, name: str, data: bytes,
                                                   rank: bool) -> None:
    from reteco_measures.io import readers
    from reteco_measures.io.limits import read_limits

    path = tmp_path / ("run.txt.gz" if name == "gz" else "run.txt")
    path.write_bytes(data)
    with read_limits(max_line_bytes=200):
        whole = read_run_with_problems(path, rank=rank)
        monkeypatch.setattr(readers, "_PIECES_FROM_BYTES", 1)  # every file, in pieces of about 64 bytes
        monkeypatch.setattr(readers, "_PIECE_BYTES", 64)
        calls = []
        real = readers._fast_trec_table
        monkeypatch.setattr(readers, "_fast_trec_table", lambda *a, **k: calls.append(1) or real(*a, **k))
        pieces = read_run_with_problems(path, rank=rank)
    pd.testing.assert_frame_equal(pieces[0], whole[0])
    assert [(p.line, p.kind, p.message) for p in pieces[1]] == [(p.line, p.kind, p.message) for p in whole[1]]
    if name in ("clean", "no final newline", "tabs", "gz"):
        assert len(calls) > 5 and not whole[1]  # read by the arrow path, piece by piece
