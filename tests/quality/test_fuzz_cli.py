"""Mutation fuzzing of the command line, run in-process (``reteco_measures.cli.main.main``).

Invariants: on damaged runs, qrels and submissions the command returns a documented exit code
(0 ok, 1 invalid input / failed check, 2 usage error or missing data; 3 is an internal error, a
bug) and never prints a traceback.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import pytest
from fuzzing import mutate_json_value, mutate_jsonl, mutate_lines, split_data_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reteco_measures.cli.main import main
from reteco_measures.sample import sample_root

# fuzzing: thousands of generated files (run by CI; skipped by -m 'not slow')
pytestmark = pytest.mark.slow

FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SEEDS = st.integers(0, 2**32 - 1)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture) -> int:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, (argv, err[-2000:])
    assert code in (0, 1, 2), (argv, code, err[-2000:])
    if code == 1 or code == 2:
        assert err.strip() or out.strip(), argv  # a failure always says why
    return code


@pytest.fixture(scope="module")
def seeds(trec_eval_dir: Path) -> dict[str, list[bytes]]:
    return {
        "run": split_data_lines((trec_eval_dir / "results.test").read_bytes()),
        "qrels": split_data_lines((trec_eval_dir / "qrels.test").read_bytes()),
    }


@FUZZ
@given(seed=SEEDS, n_run=st.integers(0, 8), n_qrels=st.integers(0, 8),
       measures=st.sampled_from([["nDCG@10"], ["P@5", "AP"], ["RR", "R@100"], ["nDCG@10", "TurnNDCG@10"]]))
def test_fuzz_cli_eval(seeds: dict[str, list[bytes]], capsys: pytest.CaptureFixture, seed: int, n_run: int,
                       n_qrels: int, measures: list[str]) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        run, qrels = Path(tmp) / "run.txt", Path(tmp) / "qrels.txt"
        run.write_bytes(mutate_lines(seeds["run"][:300], rng, n_run).data)
        qrels.write_bytes(mutate_lines(seeds["qrels"][:600], rng, n_qrels).data)
        run_cli(["eval", str(qrels), str(run), *measures], capsys)


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 8), contract=st.sampled_from(["reteco", "chunqiu", "spoken"]))
def test_fuzz_cli_validate(capsys: pytest.CaptureFixture, seed: int, n: int, contract: str) -> None:
    rng = random.Random(seed)
    name = {"reteco": "reteco_track2.txt", "chunqiu": "chunqiu.jsonl", "spoken": "spoken.jsonl"}[contract]
    lines = split_data_lines((sample_root() / "runs" / name).read_bytes())[:200]
    mutated = mutate_lines(lines, rng, n) if contract == "reteco" else mutate_jsonl(lines, rng, n)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(mutated.data)
        run_cli(["validate", str(path), "--contract", contract, "--format", rng.choice(["text", "json"])], capsys)


@FUZZ
@given(seed=SEEDS, n=st.integers(1, 5))
def test_fuzz_cli_validate_ikat(oracle, capsys: pytest.CaptureFixture, seed: int, n: int) -> None:
    rng = random.Random(seed)
    run = json.loads(oracle("ikat2023", "2023_sample_run.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        path.write_bytes(mutate_json_value(run, rng, n).encode("utf-8", errors="surrogatepass"))
        run_cli(["validate", str(path), "--contract", "ikat"], capsys)


@pytest.mark.parametrize("bad", ["folder", "missing", "empty", "binary"])
def test_cli_hostile_paths(tmp_path: Path, capsys: pytest.CaptureFixture, bad: str) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    target = {"folder": tmp_path, "missing": tmp_path / "nope.txt"}.get(bad, tmp_path / "run.txt")
    if bad == "empty":
        target.write_bytes(b"")
    elif bad == "binary":
        target.write_bytes(bytes(range(256)) * 64)
    assert run_cli(["eval", str(qrels), str(target), "nDCG@10"], capsys) != 0
    assert run_cli(["validate", str(target), "--contract", "reteco"], capsys) != 0


def test_eval_stream_prints_the_notes_of_eval(seeds: dict[str, list[bytes]], capsys: pytest.CaptureFixture) -> None:
    """``eval --stream`` said nothing where ``eval`` notes the rows the RETECO contract would discard
    (a repeated document): on the fuzz corpus' runs with duplicate lines, stderr is the same."""
    rng = random.Random(31)
    compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        qrels = Path(tmp) / "qrels.txt"
        qrels.write_bytes(b"\n".join(seeds["qrels"]) + b"\n")
        for case in range(12):
            lines = list(seeds["run"][:300])
            mutated = mutate_lines(lines, rng, case % 4).lines
            for _ in range(1 + case % 3):  # duplicate lines: a line repeated right after itself
                i = rng.randrange(len(mutated))
                mutated.insert(i + 1, mutated[i])
            run = Path(tmp) / f"run{case}.txt"
            run.write_bytes(b"\n".join(mutated) + b"\n")
            outputs = []
            for extra in ([], ["--stream"]):
                capsys.readouterr()
                code = main(["eval", str(qrels), str(run), "nDCG@10", "P@5", *extra])
                out, err = capsys.readouterr()
                outputs.append((code, out, err))
            (code_a, out_a, err_a), (code_b, out_b, err_b) = outputs
            assert (code_a, err_a) == (code_b, err_b), (case, err_a, err_b)
            if code_a == 0:
                assert out_a == out_b
                compared += "would be discarded by the RETECO contract" in err_a
    assert compared >= 6
