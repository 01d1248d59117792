"""Mutation fuzzing of the four run contracts (reteco, chunqiu, spoken, ikat).

Invariants: a contract reports, it never raises on a damaged submission; every problem of a
file names the file, and every problem about a line (format, encoding, score) names the line;
for ``reteco``, every line the TREC grammar allows is kept unless it repeats an earlier
(query, doc) pair, and no other line is kept.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import pytest
from fuzzing import (
    BAD,
    SKIP,
    mutate_json_value,
    mutate_jsonl,
    mutate_lines,
    ref_trec_run_line,
    split_data_lines,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.sample import ikat_sample_root, sample_root

# fuzzing: thousands of generated files (run by CI; skipped by -m 'not slow')
pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SEEDS = st.integers(0, 2**32 - 1)
LINE_KINDS = {"format", "encoding", "score", "field"}


def _check_problems(report: rm.ValidationReport, path: Path) -> None:
    for p in report.errors:
        assert p.path == str(path), p
        if p.kind in ("format", "encoding") and p.query_id is None and p.message.startswith("not valid"):
            assert p.line is not None, p


def _validate(data: bytes, name: str, contract: str, **kw) -> tuple[rm.ValidationReport, Path]:
    tmp = tempfile.mkdtemp()
    path = Path(tmp) / name
    path.write_bytes(data)
    return rm.validate_run(path, contract, **kw), path


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 10))
def test_fuzz_reteco_contract(seed: int, n: int) -> None:
    rng = random.Random(seed)
    name = rng.choice(["reteco_track2.txt", "reteco_track1a_dev.txt", "reteco_track1b_dev.txt"])
    lines = split_data_lines((sample_root() / "runs" / name).read_bytes())[:250]
    mutated = mutate_lines(lines, rng, n)
    report, path = _validate(mutated.data, "run.txt", "reteco")
    _check_problems(report, path)
    expected, seen = [], set()
    for no, line in enumerate(split_data_lines(mutated.data), start=1):
        ref = ref_trec_run_line(line)
        if ref in (SKIP, BAD):
            continue
        if (ref[0], ref[1]) not in seen:
            seen.add((ref[0], ref[1]))
            expected.append((no, ref[0], ref[1], ref[2]))
    got = sorted(zip(report.run["line"].astype(int), report.run["query_id"], report.run["doc_id"],
                     report.run["score"]))
    assert got == expected


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 8))
def test_fuzz_reteco_contract_trec_eval_seed(trec_eval_dir: Path, seed: int, n: int) -> None:
    rng = random.Random(seed)
    lines = split_data_lines((trec_eval_dir / "results.test").read_bytes())
    start = rng.randrange(len(lines) - 150)
    report, path = _validate(mutate_lines(lines[start:start + 150], rng, n).data, "results.test", "reteco")
    _check_problems(report, path)
    # a line with fields after the run id is kept (as trec_eval reads it) and reported: not a bad line
    bad_lines = {p.line for p in report.errors if p.line is not None and p.kind != "extra_fields"}
    assert not bad_lines & set(report.run["line"].tolist())


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 8), contract=st.sampled_from(["chunqiu", "spoken"]))
def test_fuzz_jsonl_contracts(seed: int, n: int, contract: str) -> None:
    rng = random.Random(seed)
    lines = split_data_lines((sample_root() / "runs" / f"{contract}.jsonl").read_bytes())[:30]
    mutated = mutate_jsonl(lines, rng, n)
    report, path = _validate(mutated.data, "run.jsonl", contract)
    _check_problems(report, path)
    # an undamaged line never carries a line-level format problem
    flagged = {p.line for p in report.errors if p.kind in ("format", "encoding")}
    for no in flagged:
        assert no is None or no in mutated.mutated or no > len(lines), no


@pytest.fixture(scope="module")
def ikat_seeds(oracle) -> list[dict]:
    real = json.loads(oracle("ikat2023", "2023_sample_run.json").read_text())
    bundled = json.loads((ikat_sample_root() / "runs" / "ikat2023_run.json").read_text())
    return [real, bundled]


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 6), byte_level=st.booleans())
def test_fuzz_ikat_contract(ikat_seeds: list[dict], seed: int, n: int, byte_level: bool) -> None:
    rng = random.Random(seed)
    run = rng.choice(ikat_seeds)
    if byte_level:
        text = json.dumps(run, indent=1).encode()
        data = mutate_lines(split_data_lines(text), rng, n, long_line=20_000).data
    else:
        data = mutate_json_value(run, rng, n).encode("utf-8", errors="surrogatepass")
    report, path = _validate(data, "run.json", "ikat")
    _check_problems(report, path)
    assert set(report.run.columns) >= {"query_id", "doc_id", "score"}
