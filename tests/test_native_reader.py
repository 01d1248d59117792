"""The native (C) path of ``rm.read_run``: built when it can be, used for clean single-space
runs, and never a different answer from the other readers.

Expected values come from outside the package: Python's own ``float()`` and ``int()`` (correctly
rounded), the plain-Python reference parser of the documented grammar (``fuzzing.py``), and hand-
written frames; and on every generated file the native path must return exactly (bit for bit,
the sign of zero included) what the arrow and checking paths return with the native path off.
"""

from __future__ import annotations

import gzip
import math
import shutil
import struct
import sysconfig
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fuzzing import BAD, SKIP, ref_trec_run_line, split_data_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.io import readers

needs_native = pytest.mark.skipif(readers._runparse is None, reason="the C tokenizer was not built (no C compiler)")

FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _can_build() -> bool:
    include = sysconfig.get_paths().get("include")
    return bool((shutil.which("cc") or shutil.which("gcc")) and include and Path(include, "Python.h").exists())


def test_tokenizer_is_built_wherever_it_can_be() -> None:
    """A machine with a C compiler and Python's headers gets the native path at install."""
    if _can_build():
        assert readers._runparse is not None, "a C compiler is present but the tokenizer was not built"
        assert rm.native_reader_available()
        source = Path(readers.__file__).with_name("_runparse.c")
        built = Path(readers._runparse.__file__)
        if source.exists() and built.parent == source.parent:  # an in-place (editable) build
            assert built.stat().st_mtime >= source.stat().st_mtime, "stale build: run `pip install -e .` again"


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the native parses that succeeded and the calls of the arrow path."""
    calls = {"native": 0, "arrow": 0}
    native, arrow = readers._native_frame, readers._fast_trec_run

    def native_spy(*a, **k):
        out = native(*a, **k)
        calls["native"] += out is not None
        return out

    def arrow_spy(*a, **k):
        calls["arrow"] += 1
        return arrow(*a, **k)

    monkeypatch.setattr(readers, "_native_frame", native_spy)
    monkeypatch.setattr(readers, "_fast_trec_run", arrow_spy)
    return calls


@pytest.fixture
def two_shares(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split even tiny inputs between two threads (lines straddling the shares included)."""
    monkeypatch.setattr(readers, "_NATIVE_SPLIT_BYTES", 1)
    monkeypatch.setattr(readers.os, "cpu_count", lambda: 2)


def _read_both(source, monkeypatch: pytest.MonkeyPatch, **kw):
    kw.setdefault("line_numbers", True)
    with monkeypatch.context() as m:
        m.setenv(readers.NATIVE_READER_ENV, "0")
        off = readers.read_run_with_problems(source, **kw)
    on = readers.read_run_with_problems(source, **kw)
    return on, off


def _assert_same(on, off) -> None:
    (f_on, p_on), (f_off, p_off) = on, off
    if "line" not in f_on.columns and "line" in f_off.columns:
        f_off = f_off.drop(columns="line")
    pd.testing.assert_frame_equal(f_on.reset_index(drop=True), f_off.reset_index(drop=True))
    assert np.array_equal(f_on["score"].to_numpy().view(np.int64), f_off["score"].to_numpy().view(np.int64))
    assert [(p.line, p.message) for p in p_on] == [(p.line, p.message) for p in p_off]


# --------------------------------------------------------------------------------------------
# hand-checked


@needs_native
def test_clean_run_by_hand(tmp_path: Path, spy: dict[str, int]) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(
        b"301 Q0 d\xc3\xa9c-7 1 12.5 bm25\n"
        b"301 Q0 FBIS3-1 2 -0 bm25\n"
        b"q.2 Q0 x 007 1e-3 run-b\n"
        b"q.2 Q0 y -4 .5 run-b\n"
        b"q.2 Q0 z +9 0.1000000000000000055511151231257827 run-b"  # no final newline; 34 digits
    )
    frame = rm.read_run(path, line_numbers=True)
    assert spy == {"native": 1, "arrow": 0}
    assert frame["query_id"].tolist() == ["301", "301", "q.2", "q.2", "q.2"]
    assert frame["doc_id"].tolist() == ["d\u00e9c-7", "FBIS3-1", "x", "y", "z"]
    assert frame["rank"].tolist() == [1, 2, 7, -4, 9]
    assert frame["run_id"].tolist() == ["bm25", "bm25", "run-b", "run-b", "run-b"]
    assert frame["line"].tolist() == [1, 2, 3, 4, 5]
    assert frame["score"].tolist() == [12.5, 0.0, 0.001, 0.5, 0.1]
    assert math.copysign(1.0, frame["score"].iloc[1]) == -1.0  # "-0" keeps its sign
    assert str(frame["query_id"].dtype) == str(pd.Series(["a"]).dtype)  # pandas' string dtype
    assert frame["score"].dtype == np.float64 and frame["rank"].dtype == np.int64


@needs_native
@pytest.mark.parametrize("content", [
    b"q Q0 d 1 1 r\nq  Q0 d 2 1 r\n",          # a doubled space
    b"q\tQ0\td\t1\t1\tr\n",                    # tabs
    b"q Q0 d 1 1 r\r\n",                       # CRLF
    b"q Q0 d 1 1 r\n\nq Q0 e 2 1 r\n",         # a blank line
    b"# comment\nq Q0 d 1 1 r\n",              # a comment
    b"q Q0 d 1 1 r extra\n",                   # a seventh field
    b"q Q0 d 1 nan r\n",                       # not a finite number
    b"q Q0 d 1 1e400 r\n",                     # beyond float64
    b"q Q0 d 0x10 1 r\n",                      # hexadecimal rank
    b"q Q0 d 1234567890123456789 1 r\n",       # 19 digits
    b"q Q0 d\x80 1 1 r\n",                     # invalid UTF-8
    b"q Q0 d\x1f 1 1 r\n",                     # a control byte (part of the id elsewhere)
    b"q Q0 d\x7f 1 1 r\n",
    b"\xef\xbb\xbfq Q0 d 1 1 r\n",             # a byte-order mark
    b"q Q0 d 1 1\n",                           # five fields
])
def test_other_lines_go_to_the_other_readers(content: bytes, tmp_path: Path, spy: dict[str, int],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(content)
    on = readers.read_run_with_problems(path)
    assert spy["native"] == 0
    with monkeypatch.context() as m:
        m.setenv(readers.NATIVE_READER_ENV, "0")
        off = readers.read_run_with_problems(path)
    _assert_same(on, off)


@needs_native
def test_switched_off_by_the_environment(tmp_path: Path, spy: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(b"q Q0 d 1 1.5 r\n")
    monkeypatch.setenv(readers.NATIVE_READER_ENV, "0")
    assert not rm.native_reader_available()
    assert rm.read_run(path)["score"].tolist() == [1.5]
    assert spy == {"native": 0, "arrow": 1}


@needs_native
def test_format_detection_and_compression(tmp_path: Path, spy: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    # a run whose first query id starts with "{": JSONL by auto-detection, TREC when asked
    braces = tmp_path / "braces.txt"
    braces.write_bytes(b"{q} Q0 d 1 1 r\n")
    on, off = _read_both(braces, monkeypatch, format="trec")
    _assert_same(on, off)
    assert on[0]["query_id"].tolist() == ["{q}"]
    on, off = _read_both(braces, monkeypatch)
    _assert_same(on, off)
    assert len(on[0]) == 0 and on[1]  # read as JSONL: one bad line
    # gzip bytes without a .gz suffix are recognised by their signature, not parsed as text
    packed = tmp_path / "packed.run"
    packed.write_bytes(gzip.compress(b"q Q0 d 1 2.5 r\n"))
    frame = rm.read_run(packed)
    assert frame["score"].tolist() == [2.5]


@needs_native
def test_a_file_that_shrinks_while_read_falls_back(tmp_path: Path, spy: dict[str, int],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(b"q Q0 d 1 1.5 r\n" * 10)
    reads: list[int] = []

    def short_read(fd: int, buffers: list, offset: int) -> int:
        reads.append(offset)
        return 0  # as if the file had been truncated after its size was taken

    monkeypatch.setattr(readers.os, "preadv", short_read)
    assert readers._native_trec_file(path) is None
    frame = rm.read_run(path)  # read again, whole, then parsed from memory
    assert reads and frame["score"].tolist() == [1.5] * 10


@needs_native
def test_parallel_shares_and_straddling_lines(tmp_path: Path, two_shares: None, spy: dict[str, int]) -> None:
    lines = [f"q{i // 7} Q0 doc{i} {i % 7 + 1} {i / 3:.6f} run".encode() for i in range(1000)]
    lines[500] = b"q Q0 " + b"x" * 40_000 + b" 1 1 run"  # a line longer than the shares' seam
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    frame = rm.read_run(path, line_numbers=True)
    assert spy["native"] == 1
    expected = [ref_trec_run_line(line) for line in lines]
    assert list(zip(frame["query_id"], frame["doc_id"], frame["score"], frame["rank"])) == expected
    assert frame["line"].tolist() == list(range(1, 1001))
    # the same bytes in memory take the same path
    frame2 = rm.read_run(data, line_numbers=True)
    pd.testing.assert_frame_equal(frame, frame2)
    assert spy["native"] == 2


@needs_native
@pytest.mark.parametrize("layout", ["giant-last", "giant-first", "one-line", "no-final-newline", "tiny-lines"])
def test_shares_without_a_line_of_their_own(layout: str, tmp_path: Path, two_shares: None,
                                            spy: dict[str, int]) -> None:
    """A share holding no whole line (a giant line across the seam, one line in all) leaves its
    lines to the pass over the seams; every line still read once, in order."""
    giant = b"q Q0 " + b"x" * 100_000 + b" 3 0.5 r"
    lines = {
        "giant-last": [b"a Q0 d 1 1 r", giant],
        "giant-first": [giant, b"a Q0 d 1 1 r"],
        "one-line": [giant],
        "no-final-newline": [b"a Q0 d 1 1 r", b"b Q0 e 2 2 r"],
        "tiny-lines": [b"a Q0 d %d 1 r" % i for i in range(7)],
    }[layout]
    data = b"\n".join(lines) + (b"" if layout == "no-final-newline" else b"\n")
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    frame = rm.read_run(path, line_numbers=True)
    assert spy["native"] == 1
    assert list(zip(frame["query_id"], frame["doc_id"], frame["score"], frame["rank"])) == [
        ref_trec_run_line(line) for line in lines]
    assert frame["line"].tolist() == list(range(1, len(lines) + 1))


# --------------------------------------------------------------------------------------------
# generated


_ID_CHARS = st.sampled_from(list("abcXYZ019-_.:/") + ["\u00e9", "\u4e2d", "\U0001f600"])
_IDS = st.text(_ID_CHARS, min_size=1, max_size=12)
_DIGITS = r"\A[+-]?([0-9]{1,22}\.?[0-9]{0,22}|\.[0-9]{1,22})([eE][+-]?[0-9]{1,3})?\Z"


@st.composite
def score_text(draw) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.from_regex(_DIGITS))
    x = draw(st.floats(allow_nan=False, allow_infinity=False, width=draw(st.sampled_from([32, 64]))))
    fmt = draw(st.sampled_from(["{!r}", "{:.3f}", "{:.6f}", "{:.17g}", "{:e}", "{:.0f}", "{:+.2E}", "{:.15g}"]))
    return fmt.format(x)


def _assert_read_as_float(texts: list[str]) -> None:
    """Each text as the score of one line: a finite float() value is read bit for bit; an
    overflow to infinity is reported (its line is not kept)."""
    data = "".join(f"q Q0 d{i} {i + 1} {t} r\n" for i, t in enumerate(texts)).encode()
    frame = rm.read_run(data, on_bad_lines="skip", line_numbers=True)
    got = dict(zip(frame["line"].tolist(), frame["score"].to_numpy().view(np.int64).tolist()))
    for i, t in enumerate(texts, start=1):
        want = float(t)
        if math.isfinite(want):
            assert got[i] == struct.unpack("<q", struct.pack("<d", want))[0], (t, want)
        else:
            assert i not in got


@needs_native
@FUZZ
@given(texts=st.lists(score_text(), min_size=1, max_size=40))
def test_scores_are_correctly_rounded(texts: list[str], tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every score equals Python's float() of its text, bit for bit (a finite value: kept; an
    overflow to infinity: reported)."""
    _assert_read_as_float(texts)


@needs_native
def test_scores_at_the_edges_of_the_exact_conversion() -> None:
    """Mantissas around 2**53 and 19 digits, exponents around +-22 (where one multiplication or
    division stops being exact): every value equals Python's float() bit for bit."""
    mantissas = [1, 3, 7, 9, 123456789, 2**53 - 1, 2**53, 2**53 + 1, 10**15 + 1, 10**16 + 3, 10**19 - 1,
                 12345678901234567, 98765432109876543210]
    texts = [f"{m}e{e}" for m in mantissas for e in range(-45, 46)]
    texts += [f"0.{'0' * z}{m}" for m in mantissas for z in (0, 5, 20, 30)]
    texts += [f"{m}.{'0' * z}" for m in mantissas for z in (0, 3, 25)]
    _assert_read_as_float(texts)


@needs_native
def test_power_table_matches_published_values() -> None:
    """The 128-bit approximations of powers of ten behind the Eisel-Lemire conversion, against
    published constants: the 64-bit significands of the cached powers used by Grisu (Loitsch,
    2010; the same in double-conversion, RapidJSON and others) for 10^-348, 10^-340, 10^-300,
    and the full 128 bits of 10^43 given in Go's strconv documentation."""
    table = readers._power_table()

    def entry(e: int) -> tuple[int, int]:
        i = e + 348
        return int(table[2 * i + 1]), int(table[2 * i])

    assert entry(-348)[0] == 0xFA8FD5A0081C0288
    assert entry(-340)[0] == 0xBAAEE17FA23EBF76
    assert entry(-300)[0] == 0xAB70FE17C79AC6CA
    assert entry(43) == (0xE596B7B0C643C719, 0x6D9CCD05D0000000)
    assert entry(0) == (1 << 63, 0) and entry(1) == (0xA << 60, 0)


@needs_native
@pytest.mark.parametrize("fmt", ["{!r}", "{:.17g}", "{:.16e}", "{:.15g}", "{:.19e}"])
def test_scores_of_random_doubles(fmt: str) -> None:
    """20,000 doubles drawn from all bit patterns (every exponent, subnormals included), written
    as Python writes them: read back bit for bit as Python's float() reads the text."""
    rng = np.random.default_rng(7)
    values = rng.integers(0, 2**64, 20_000, dtype=np.uint64).view(np.float64)
    texts = [fmt.format(float(v)) for v in values if math.isfinite(v)]
    _assert_read_as_float(texts)


_TOKENS = [b"", b"#", b"\t", b"  ", b"\r", b"\x80", b"\xc3", b"\x00", b"\x1f", b"\x7f", b"nan", b"inf",
           b"1e400", b"0x10", b"+5", b"-0", b"1.", b".5", b"1e5", b"9" * 19, b"9" * 18, b"{", b"\xef\xbb\xbf"]


@st.composite
def run_line(draw) -> bytes:
    fields = [draw(_IDS).encode(), b"Q0", draw(_IDS).encode(), str(draw(st.integers(-99, 10**6))).encode(),
              draw(score_text()).encode(), draw(_IDS).encode()]
    if draw(st.integers(0, 9)) == 0:  # damage the line
        i = draw(st.integers(0, 5))
        token = draw(st.sampled_from(_TOKENS))
        fields[i] = token if draw(st.booleans()) else fields[i] + token
    sep = b" " if draw(st.integers(0, 19)) else draw(st.sampled_from([b"\t", b"  "]))
    return sep.join(fields)


@needs_native
@FUZZ
@given(lines=st.lists(run_line(), min_size=1, max_size=30), final_newline=st.booleans(),
       split=st.booleans(), from_file=st.booleans())
def test_native_equals_the_other_readers(lines: list[bytes], final_newline: bool, split: bool, from_file: bool,
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    """On every generated file: the same frame and problems with the native path on and off, and
    every line as the reference parser of the documented grammar says."""
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    source: object = data
    if from_file:
        source = tmp_path_factory.mktemp("runs") / "run.txt"
        source.write_bytes(data)  # type: ignore[union-attr]
    with pytest.MonkeyPatch.context() as m:
        if split:
            m.setattr(readers, "_NATIVE_SPLIT_BYTES", 1)
            m.setattr(readers.os, "cpu_count", lambda: 2)
        on, off = _read_both(source, m, format="trec")
    _assert_same(on, off)
    frame, problems = on
    rows = {int(r.line): (r.query_id, r.doc_id, r.score, int(r.rank)) for r in frame.itertuples()}
    bad = {p.line for p in problems}
    for no, line in enumerate(split_data_lines(data), start=1):
        ref = ref_trec_run_line(line)
        if ref == SKIP:
            assert no not in rows and no not in bad
        elif ref == BAD:
            assert no not in rows and no in bad, (no, line)
        else:
            assert rows.get(no) == ref, (no, line, rows.get(no))


@needs_native
def test_the_tokenizer_refuses_buffers_too_small_to_hold_an_offset() -> None:
    """Direct calls with an empty offsets buffer are refused (found by fuzzing the C code under
    AddressSanitizer: the first offset was written before any size check)."""
    from reteco_measures.io import _runparse

    data = np.frombuffer(b"q Q0 d 1 1 r\n", np.uint8)
    ok = [np.empty(2, np.int64), np.empty(16, np.uint8)] * 3
    for k in (0, 2, 4):
        args = list(ok) + [np.empty(1, np.int64), np.empty(1), np.empty(1, np.int64), np.empty(2, np.int64),
                           np.empty(16, np.uint8)]
        args[k] = np.empty(0, np.int64)
        with pytest.raises(ValueError, match="offsets"):
            _runparse.parse_chunk(data, 0, 0, *args)
    args = list(ok) + [np.empty(1, np.int64), np.empty(1), np.empty(1, np.int64), np.empty(0, np.int64),
                       np.empty(16, np.uint8)]
    with pytest.raises(ValueError, match="offsets"):
        _runparse.parse_chunk(data, 0, 0, *args)
    # a sound call reads the line
    args = list(ok) + [np.empty(1, np.int64), np.empty(1), np.empty(1, np.int64), np.empty(2, np.int64),
                       np.empty(16, np.uint8)]
    status, rows = _runparse.parse_chunk(data, 0, len(data), *args)[:2]
    assert (status, rows) == (0, 1) and args[6][0] == 1 and args[7][0] == 1.0
