"""Every JSONL input reports a damaged line the same way: the run and qrels readers, the judge's
input files and the contracts' id files share one loop over lines (io.jsonl.iter_jsonl).

The expected line numbers and messages are written out by hand below (columns counted by hand
in the comments), not taken from the library."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import reteco_measures as rm
from reteco_measures.contracts.base import read_ids
from reteco_measures.io.jsonl import JSONTextError, iter_json_records, iter_jsonl, loads
from reteco_measures.judge.inputs import read_answers


def _valid(n: int) -> bytes:
    """A line every reader accepts: a run line, a qrels line and an answer line at once."""
    return (b'{"query_id": "q%d", "turn_id": "t%d", "answer": "an answer", "doc_id": "d%d", "relevance": 2, '
            b'"results": [{"doc_id": "d%d", "score": 1.5}]}' % (n, n, n, n))


DAMAGED = b"".join([
    b"\xef\xbb\xbf" + _valid(1) + b"\n",         # 1: the file's byte-order mark, then a valid line
    b"   \t\r\n",                                # 2: blank (ASCII whitespace only): skipped
    b'{"query_id": "caf\xe9"}\n',                # 3: a latin-1 byte; '{'=1, '"query_id"'=2-11, ':'=12,
                                                 #    ' '=13, '"'=14, 'caf'=15-17, 0xe9 = column 18
    b'{"query_id": "\\ud800"}\n',                # 4: a lone surrogate escape (valid JSON syntax, no text)
    b"[" * 5000 + b"]" * 5000 + b"\n",           # 5: a 5000-deep array
    b'["q1", "d1"]\n',                           # 6: valid JSON, not an object
    _valid(7) + b"\n",                           # 7: valid
    b"\xef\xbb\xbf" + _valid(8) + b"\n",         # 8: a byte-order mark that does not start the file
    b'{"query_id": }\n',                         # 9: not JSON; '}' is column 14
    b"3\n",                                      # 10: a number
    b"null",                                     # 11: null, no final newline
])

EXPECTED = [
    (3, "encoding", "not valid UTF-8 text (byte 0xe9 at column 18)"),
    (4, "format", "not valid JSON text: a string holds a lone UTF-16 surrogate"),
    (5, "format", "not valid JSON: nested too deeply to read"),
    (6, "format", "a line must be a JSON object, found a JSON array"),
    (8, "format", "not valid JSON: a byte-order mark (U+FEFF) before the value (column 1)"),
    (9, "format", "not valid JSON: Expecting value (column 14)"),
    (10, "format", "a line must be a JSON object, found a JSON number"),
    (11, "format", "a line must be a JSON object, found null"),
]


def _triples(problems: list[rm.Problem]) -> list[tuple]:
    return [(p.line, p.kind, p.message) for p in problems]


@pytest.fixture()
def damaged(tmp_path: Path) -> Path:
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(DAMAGED)
    return path


def test_iter_jsonl_names_each_damaged_line(damaged: Path) -> None:
    problems: list[rm.Problem] = []
    got = [(line, rec["query_id"]) for line, rec in iter_jsonl(damaged, problems)]
    assert got == [(1, "q1"), (7, "q7")]
    assert _triples(problems) == EXPECTED
    assert {p.path for p in problems} == {str(damaged)}


def test_run_reader_reports_the_same_lines_in_the_same_words(damaged: Path) -> None:
    run = rm.read_run(damaged, format="jsonl", on_bad_lines="skip", line_numbers=True)
    assert list(zip(run["line"], run["query_id"], run["doc_id"], run["score"])) == [(1, "q1", "d1", 1.5),
                                                                                 (7, "q7", "d7", 1.5)]
    assert _triples(run.attrs["problems"]) == EXPECTED
    assert {p.path for p in run.attrs["problems"]} == {str(damaged)}
    # the same bytes in memory: same lines and words, no path
    inline = rm.read_run(DAMAGED, format="jsonl", on_bad_lines="skip")
    assert _triples(inline.attrs["problems"]) == EXPECTED
    assert {p.path for p in inline.attrs["problems"]} == {None}


def test_qrels_reader_reports_the_same_lines_in_the_same_words(damaged: Path) -> None:
    qrels = rm.read_qrels(damaged, format="jsonl", on_bad_lines="skip", line_numbers=True)
    assert list(zip(qrels["line"], qrels["query_id"], qrels["doc_id"], qrels["relevance"])) == [
        (1, "q1", "d1", 2), (7, "q7", "d7", 2)]
    assert _triples(qrels.attrs["problems"]) == EXPECTED


def test_judge_answers_report_the_same_lines_in_the_same_words(damaged: Path) -> None:
    answers, problems = read_answers(damaged)
    assert sorted(answers) == ["t1", "t7"]
    assert (answers["t1"].line, answers["t7"].line) == (1, 7)
    assert _triples(problems) == EXPECTED


def test_contract_id_file_reports_the_same_lines_in_the_same_words(damaged: Path) -> None:
    with pytest.raises(rm.DataFormatError) as info:
        read_ids(damaged, "doc_id")
    assert _triples(info.value.problems) == EXPECTED


def test_error_mode_raises_with_every_problem(damaged: Path) -> None:
    with pytest.raises(rm.DataFormatError) as info:
        rm.read_run(damaged, format="jsonl", on_bad_lines="error")
    assert _triples(info.value.problems) == EXPECTED
    assert f"{damaged}:3: -: not valid UTF-8 text (byte 0xe9 at column 18)" in str(info.value)


@pytest.mark.skipif(not hasattr(sys, "get_int_max_str_digits") or sys.get_int_max_str_digits() != 4300,
                    reason="Python's default integer digit limit (4300) is not in force")
def test_a_number_beyond_the_digit_limit_is_named_in_plain_words(tmp_path: Path) -> None:
    data = _valid(1) + b"\n" + b'{"query_id": 1' + b"2" * 5000 + b"}\n" + _valid(3) + b"\n"
    expected = [(2, "format", "not valid JSON: an integer of more than 4300 digits")]
    run = rm.read_run(data, format="jsonl", on_bad_lines="skip")
    assert list(run["query_id"]) == ["q1", "q3"]
    assert _triples(run.attrs["problems"]) == expected
    assert _triples(rm.read_qrels(data, format="jsonl", on_bad_lines="skip").attrs["problems"]) == expected
    path = tmp_path / "answers.jsonl"
    path.write_bytes(data)
    assert _triples(read_answers(path)[1]) == expected


# --- a file starting with '[' ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "message"),
    [
        (b'["q1", "d1"]', "a line must be a JSON object, found a JSON array"),
        (b"[" * 5000 + b"]" * 5000, "not valid JSON: nested too deeply to read"),
    ],
)
def test_a_jsonl_file_whose_first_line_is_an_array_loses_that_line_only(first: bytes, message: str) -> None:
    # (the readers used to take such a file for one JSON array and lose every line of it)
    data = first + b"\n" + _valid(2) + b"\n" + _valid(3) + b"\n"
    run = rm.read_run(data, format="jsonl", on_bad_lines="skip", line_numbers=True)
    assert list(zip(run["line"], run["query_id"])) == [(2, "q2"), (3, "q3")]
    assert _triples(run.attrs["problems"]) == [(1, "format", message)]
    qrels = rm.read_qrels(data, format="jsonl", on_bad_lines="skip", line_numbers=True)
    assert list(zip(qrels["line"], qrels["query_id"])) == [(2, "q2"), (3, "q3")]
    assert _triples(qrels.attrs["problems"]) == [(1, "format", message)]


def test_one_json_array_of_records_is_still_read() -> None:
    data = b"[" + _valid(1) + b", 5,\n " + _valid(2) + b"]\n"
    run = rm.read_run(data, format="jsonl", on_bad_lines="skip")
    assert list(run["query_id"]) == ["q1", "q2"]
    assert _triples(run.attrs["problems"]) == [(None, "format", "array item 2 must be a JSON object, found a JSON number")]


def test_a_damaged_array_spread_over_lines_is_one_problem_at_its_line() -> None:
    # line 3: ' '=1, '{'=2, '"query_id"'=3-12, ':'=13, ' '=14, '}'=15
    data = b"[\n " + _valid(1) + b",\n {\"query_id\": }\n]\n"
    problems: list[rm.Problem] = []
    assert list(iter_json_records(data, problems)) == []
    assert _triples(problems) == [(3, "format", "not valid JSON: Expecting value (line 3, column 15)")]
    run = rm.read_run(data, format="jsonl", on_bad_lines="skip")
    assert len(run) == 0 and _triples(run.attrs["problems"]) == _triples(problems)


def test_invalid_utf8_in_a_document_is_named_by_line_and_column() -> None:
    # line 2: ' '=1, '{'=2, '"a"'=3-5, ':'=6, ' '=7, '"'=8, 0xff = column 9
    with pytest.raises(JSONTextError, match=r"^not valid UTF-8 text \(byte 0xff at line 2, column 9\)$") as info:
        loads(b'[\n {"a": "\xff"}\n]')
    assert info.value.lineno == 2
    # the file's byte-order mark is not part of the text: '{"a": "' is 7 bytes, 0xff is column 8
    # (the reader used to name the byte three places off, 0x22, after a BOM)
    with pytest.raises(JSONTextError, match=r"^not valid UTF-8 text \(byte 0xff at line 1, column 8\)$"):
        loads(b'\xef\xbb\xbf{"a": "\xff"}')
    problems: list[rm.Problem] = []
    assert list(iter_json_records(b'[\n {"a": "\xff"}\n]', problems)) == []
    assert _triples(problems) == [(2, "encoding", "not valid UTF-8 text (byte 0xff at line 2, column 9)")]
