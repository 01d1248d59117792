"""The ``chunqiu`` and ``spoken`` contracts read results lines with the loop every JSONL reader
uses (io.jsonl.iter_jsonl): a damaged line gets the same number, words and kind as in
``rm.read_run(format="jsonl")``; the format's own rules (string ids, a key twice in one object)
stay contract problems.

Every expected line number, message and kind below is written out by hand (columns counted in
the comments), not taken from the library."""

from __future__ import annotations

from pathlib import Path

import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.chunqiu.contract import validate_chunqiu
from reteco_measures.io.jsonl import iter_jsonl

DAMAGED = b"".join([
    b'\xef\xbb\xbf{"query_id": "q1", "results": [{"doc_id": "d1", "score": 2}]}\n',  # 1: file BOM, valid
    b"  \t\r\n",                                         # 2: blank (ASCII whitespace only)
    b'{"query_id": "caf\xe9", "results": []}\n',         # 3: latin-1 byte; '{'=1, '"query_id"'=2-11,
                                                         #    ':'=12, ' '=13, '"'=14, 'caf'=15-17, 0xe9=18
    b'{"query_id": "\\ud800", "results": []}\n',         # 4: a lone surrogate escape
    b"[" * 5000 + b"]" * 5000 + b"\n",                   # 5: a 5000-deep array
    b'["q1", "d1"]\n',                                   # 6: valid JSON, not an object
    b'{"query_id": 7, "results": []}\n',                 # 7: contract fault: an integer query id
    b'{"query_id": "q8", "query_id": "q9", "results": []}\n',  # 8: contract fault: a key twice
    b'\xef\xbb\xbf{"query_id": "q9", "results": []}\n',  # 9: a BOM that does not start the file
    b'"x"\n',                                            # 10: a JSON string
    b'{"query_id": "q11", "results": [{"doc_id": "d2", "score": 1}]}\r\n',  # 11: valid, CRLF
])

#: the problems of the decoding loop, in rm.read_run's words
DECODING = [
    (3, "encoding", "not valid UTF-8 text (byte 0xe9 at column 18)"),
    (4, "format", "not valid JSON text: a string holds a lone UTF-16 surrogate"),
    (5, "format", "not valid JSON: nested too deeply to read"),
    (6, "format", "a line must be a JSON object, found a JSON array"),
    (9, "format", "not valid JSON: a byte-order mark (U+FEFF) before the value (column 1)"),
    (10, "format", "a line must be a JSON object, found a JSON string"),
]

#: the ChunQiu / Spoken format's own rules
CONTRACT = [
    (7, "field", "'query_id' must be a JSON string, found 7"),
    (8, "format", 'the key "query_id" appears twice in one object'),
]

ROWS = [(1, "q1", "d1", 2.0), (11, "q11", "d2", 1.0)]


def _triples(problems: list[rm.Problem]) -> list[tuple]:
    return [(p.line, p.kind, p.message) for p in problems]


@pytest.fixture()
def damaged(tmp_path: Path) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_bytes(DAMAGED)
    return path


def test_run_reader_reference(damaged: Path) -> None:
    """The reference: rm.read_run reports the decoding problems only (an integer id and a key
    twice are accepted by the lenient reader, and lines 7-8 hold no result)."""
    run = rm.read_run(damaged, format="jsonl", on_bad_lines="skip", line_numbers=True)
    assert _triples(run.attrs["problems"]) == DECODING
    assert list(zip(run["line"], run["query_id"], run["doc_id"], run["score"])) == ROWS


@pytest.mark.parametrize("contract,severity,valid", [("chunqiu", "error", False), ("spoken", "warning", True)])
def test_contracts_report_damaged_lines_like_the_run_reader(damaged: Path, contract: str, severity: str,
                                                            valid: bool) -> None:
    report = rm.validate_run(damaged, contract)
    # problems sorted by line: decoding problems in read_run's words, contract faults in the contract's
    assert _triples(report.errors) == sorted(DECODING + CONTRACT)
    assert {p.severity for p in report.errors} == {severity}
    assert {p.path for p in report.errors} == {str(damaged)}
    assert all(p.query_id is None for p in report.errors)  # no line of them has a readable query id
    assert report.valid is valid  # chunqiu: any violation refuses the batch; spoken: rows q1, q11 count
    assert list(zip(report.run["line"], report.run["query_id"], report.run["doc_id"], report.run["score"])) == ROWS


def test_same_words_in_memory_and_from_a_file(damaged: Path) -> None:
    inline = rm.validate_run(DAMAGED, "chunqiu")
    assert _triples(inline.errors) == sorted(DECODING + CONTRACT)
    assert {p.path for p in inline.errors} == {None}
    assert _triples(rm.read_run(DAMAGED, format="jsonl", on_bad_lines="skip").attrs["problems"]) == DECODING


def test_every_non_blank_line_is_a_record(damaged: Path) -> None:
    # 11 lines, one of them blank
    assert validate_chunqiu(damaged).extra["lines"] == 10
    assert rm.validate_run(damaged, "spoken").extra["lines"] == 10


def test_blank_lines_error_policy_names_the_blank_line_only(damaged: Path) -> None:
    report = validate_chunqiu(damaged, blank_lines="error")
    assert _triples(report.errors) == sorted(DECODING + CONTRACT + [(2, "format", "blank line")])
    spoken = rm.benchmarks.spoken.validate_spoken(damaged, blank_lines="error")
    assert (2, "format", "blank line") in _triples(spoken.errors)


def test_a_key_twice_deep_inside_a_line(tmp_path: Path) -> None:
    # the contract rule reaches nested objects: "score" twice in the second result
    line = b'{"query_id": "q1", "results": [{"doc_id": "d1", "score": 2}, {"doc_id": "d2", "score": 1, "score": 3}]}\n'
    report = validate_chunqiu(line)
    assert _triples(report.errors) == [(1, "format", 'the key "score" appears twice in one object')]
    assert rm.read_run(line, format="jsonl").shape[0] == 2  # the lenient reader keeps the last value


@pytest.mark.parametrize("data,blank", [
    (b'{"a": 1}\n \n\n{"b": 2}\n', [2, 3]),   # the empty piece after the final newline is no line
    (b'{"a": 1}\n\t\r', [2]),                  # a whitespace last line without a newline is one
    (b"\xef\xbb\xbf\n", [1]),                  # the file's BOM dropped, then an empty first line
    (b"", []),
    (b"\n", [1]),
])
def test_iter_jsonl_lists_blank_lines(data: bytes, blank: list[int]) -> None:
    problems: list[rm.Problem] = []
    found: list[int] = []
    list(iter_jsonl(data, problems, blank_lines=found))
    assert found == blank and problems == []
    # and the contract's blank-line policy names the same lines
    assert [p.line for p in validate_chunqiu(data, blank_lines="error").errors if p.message == "blank line"] == blank
