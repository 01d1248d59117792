"""Mutation fuzzing of the readers against independent reference parsers (see ``fuzzing.py``).

Invariants, on every line of every damaged file: a line the format allows is kept with exactly
its values; a line it does not allow is reported at its line number (with the file's path when
read from a file) and loses nothing else; blank and comment lines are skipped; no exception.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from fuzzing import (
    BAD,
    SKIP,
    file_data_lines,
    mutate_jsonl,
    mutate_lines,
    ref_jsonl_run_line,
    ref_trec_qrels_line,
    ref_trec_run_line,
    split_data_lines,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.sample import sample_root

# fuzzing: thousands of generated files (run by CI; skipped by -m 'not slow')
pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=100, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SEEDS = st.integers(0, 2**32 - 1)


def check_lines(data: bytes, rows: dict[int, tuple], bad_lines: set[int | None],
                ref_line: Callable[[bytes], object]) -> None:
    """Every line of ``data`` against the reference parser ``ref_line``: skipped, reported, or kept as is."""
    for no, line in enumerate(split_data_lines(data), start=1):
        ref = ref_line(line)
        if ref == SKIP:
            assert no not in rows and no not in bad_lines, (no, line[:80])
        elif ref == BAD:
            assert no not in rows and no in bad_lines, (no, line[:80])
        else:
            assert rows.get(no) == ref, (no, line[:80], rows.get(no))


def check_trec_run(data: bytes, path: Path | None = None) -> None:
    source = data if path is None else path
    frame = rm.read_run(source, format="trec", on_bad_lines="skip", line_numbers=True)
    rows = {int(r.line): (r.query_id, r.doc_id, r.score, int(r.rank)) for r in frame.itertuples()}
    problems = frame.attrs["problems"]
    bad_lines = {p.line for p in problems}
    assert len(rows) == len(frame), "two rows claim one line"
    for p in problems:
        assert p.line is not None
        assert p.path == (str(path) if path is not None else None)
    check_lines(data, rows, bad_lines, ref_trec_run_line)


def check_trec_qrels(data: bytes) -> None:
    frame = rm.read_qrels(data, format="trec", on_bad_lines="skip", line_numbers=True)
    rows = {int(r.line): (r.query_id, r.doc_id, int(r.relevance)) for r in frame.itertuples()}
    bad_lines = {p.line for p in frame.attrs["problems"]}
    check_lines(data, rows, bad_lines, ref_trec_qrels_line)


def check_jsonl_run(data: bytes) -> None:
    frame = rm.read_run(data, format="jsonl", on_bad_lines="skip", line_numbers=True)
    got: dict[int, list] = {}
    for r in frame.itertuples():
        got.setdefault(int(r.line), []).append((r.query_id, r.doc_id, r.score, int(r.rank)))
    bad_lines = {p.line for p in frame.attrs["problems"]}
    for no, line in enumerate(split_data_lines(data), start=1):
        ref = ref_jsonl_run_line(line)
        if ref == SKIP:
            assert no not in got and no not in bad_lines
        elif ref == BAD:
            assert no not in got and no in bad_lines, (no, line[:80])
        else:
            rows, problem = ref
            assert got.get(no, []) == rows, (no, line[:80])
            assert (no in bad_lines) == problem, (no, line[:80])


@pytest.fixture(scope="module")
def trec_run_seed(trec_eval_dir: Path) -> list[bytes]:
    return file_data_lines(trec_eval_dir / "results.test")


@pytest.fixture(scope="module")
def trec_qrels_seed(trec_eval_dir: Path) -> list[bytes]:
    return file_data_lines(trec_eval_dir / "qrels.test")


def test_seeds_read_cleanly(trec_run_seed: list[bytes], trec_qrels_seed: list[bytes]) -> None:
    check_trec_run(b"\n".join(trec_run_seed) + b"\n")
    check_trec_qrels(b"\n".join(trec_qrels_seed) + b"\n")


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 12))
def test_fuzz_trec_run_trec_eval_seed(trec_run_seed: list[bytes], seed: int, n: int) -> None:
    rng = random.Random(seed)
    start = rng.randrange(max(1, len(trec_run_seed) - 200))
    check_trec_run(mutate_lines(trec_run_seed[start:start + 200], rng, n).data)


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 6))
def test_fuzz_trec_run_sample_seed_from_a_file(seed: int, n: int) -> None:
    rng = random.Random(seed)
    lines = file_data_lines(sample_root() / "runs" / "reteco_track2.txt")[:300]
    mutated = mutate_lines(lines, rng, n)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.txt"
        path.write_bytes(mutated.data)
        check_trec_run(mutated.data, path)


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 12))
def test_fuzz_trec_qrels(trec_qrels_seed: list[bytes], seed: int, n: int) -> None:
    rng = random.Random(seed)
    start = rng.randrange(max(1, len(trec_qrels_seed) - 200))
    check_trec_qrels(mutate_lines(trec_qrels_seed[start:start + 200], rng, n).data)


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 8))
def test_fuzz_jsonl_run(seed: int, n: int) -> None:
    rng = random.Random(seed)
    lines = file_data_lines(sample_root() / "runs" / rng.choice(["chunqiu.jsonl", "spoken.jsonl"]))[:40]
    check_jsonl_run(mutate_jsonl(lines, rng, n).data)


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 8))
def test_fuzz_jsonl_qrels_and_id_files(seed: int, n: int) -> None:
    from reteco_measures.contracts.base import read_ids

    rng = random.Random(seed)
    text = b'{"query_id": "q0", "doc_id": "d0", "relevance": 1}\n' + b"".join(
        b'{"query_id": "q%d", "doc_id": "d%d", "relevance": %d}\n' % (i, i, i % 3) for i in range(1, 30))
    mutated = mutate_jsonl(split_data_lines(text), rng, n)
    qrels = rm.read_qrels(mutated.data, format="jsonl", on_bad_lines="skip", line_numbers=True)
    bad = {p.line for p in qrels.attrs["problems"]}
    kept = set(qrels["line"].tolist())
    for no in range(1, len(mutated.lines) + 1):
        if no not in mutated.mutated:  # an undamaged line is kept as it was
            assert no in kept and no not in bad
        elif mutated.lines[no - 1].strip():
            assert no in kept or no in bad  # a damaged line is kept or named
    # id files: a damaged file is read or refused with a DataFormatError, nothing else
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("ids.jsonl", "ids.txt", "ids.json"):
            path = Path(tmp) / name
            path.write_bytes(mutated.data if name != "ids.json" else mutated.lines[rng.randrange(len(mutated.lines))])
            try:
                read_ids(path, "doc_id")
            except (rm.DataFormatError, ValueError):
                pass
