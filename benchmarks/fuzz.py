"""Long mutation-fuzzing run with a time budget: readers, contracts and the command line.

    python benchmarks/fuzz.py --seconds 600 [--oracles DIR] [--seed 0] [--out fuzz-failures]

The same mutators, reference parsers and invariants as the bounded fuzz tests in ``tests/``
(``tests/fuzzing.py``, ``tests/quality/test_fuzz_*.py``), run round-robin over every target with fresh
random seeds until the budget is spent. Seeds: the bundled sample runs, the generated iKAT-like
sample and, with ``--oracles DIR`` (a folder holding ``trec_eval_tests/`` and ``ikat2023/``),
trec_eval's own test files and the real iKAT 2023 sample run. Every failing case is written to
``--out`` (the damaged input and the error) and the run exits 1; a summary line per target is
printed. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "quality"))  # test_fuzz_readers.py

from fuzzing import file_data_lines, mutate_json_value, mutate_jsonl, mutate_lines  # noqa: E402
from test_fuzz_readers import check_jsonl_run, check_trec_qrels, check_trec_run  # noqa: E402

import reteco_measures as rm  # noqa: E402
from reteco_measures.cli.main import main as cli_main  # noqa: E402
from reteco_measures.io import readers  # noqa: E402
from reteco_measures.sample import ikat_sample_root, sample_root  # noqa: E402


def build_targets(oracles: Path | None) -> dict[str, Callable[[random.Random, Path], bytes]]:
    """name -> function(rng, scratch folder) that builds one damaged case, checks it, and returns
    the damaged input (raising on a broken invariant)."""
    runs = sample_root() / "runs"
    trec_runs = [file_data_lines(runs / n)
                 for n in ("reteco_track2.txt", "reteco_track1a_dev.txt", "reteco_track1b_dev.txt")]
    jsonl_runs = [file_data_lines(runs / n) for n in ("chunqiu.jsonl", "spoken.jsonl")]
    ikat_runs = [json.loads((ikat_sample_root() / "runs" / "ikat2023_run.json").read_text())]
    qrels_seeds: list[list[bytes]] = []
    if oracles is not None:
        trec_runs.append(file_data_lines(oracles / "trec_eval_tests" / "results.test"))
        qrels_seeds.append(file_data_lines(oracles / "trec_eval_tests" / "qrels.test"))
        ikat_runs.append(json.loads((oracles / "ikat2023" / "2023_sample_run.json").read_text()))
    if not qrels_seeds:
        qrels_seeds.append([b"q%d 0 d%d %d" % (i // 7, i, i % 4) for i in range(400)])

    def window(lines: list[bytes], rng: random.Random, size: int) -> list[bytes]:
        start = rng.randrange(max(1, len(lines) - size))
        return lines[start:start + size]

    def trec_run(rng: random.Random, tmp: Path) -> bytes:
        data = mutate_lines(window(rng.choice(trec_runs), rng, 400), rng, rng.randint(1, 20)).data
        path = tmp / "run.txt"
        path.write_bytes(data)
        check_trec_run(data, path)
        return data

    def trec_run_paths(rng: random.Random, tmp: Path) -> bytes:
        """Gentle damage (a field replaced, single spaces or single tabs kept) so that the arrow
        path often accepts the file; the frame and problems must equal, bit for bit, those of
        the checking path alone (the arrow path switched off), and every line the reference
        parser's."""
        sep = rng.choice([b" ", b"\t"])
        lines = [sep.join(line.split()) for line in window(rng.choice(trec_runs), rng, 400)]
        data = mutate_lines(lines, rng, rng.randint(0, 3)).data
        path = tmp / "run.txt"
        path.write_bytes(data)
        check_trec_run(data, path)
        both = readers.read_run_with_problems(path, "trec")
        fast = readers._fast_trec_run
        readers._fast_trec_run = lambda *a, **k: None
        try:
            checking = readers.read_run_with_problems(path, "trec")
        finally:
            readers._fast_trec_run = fast
        assert both[0].equals(checking[0]), "the arrow and checking paths differ"
        assert np.array_equal(both[0]["score"].to_numpy().view(np.int64), checking[0]["score"].to_numpy().view(np.int64))
        assert [(p.line, p.message) for p in both[1]] == [(p.line, p.message) for p in checking[1]]
        return data

    def trec_qrels(rng: random.Random, tmp: Path) -> bytes:
        data = mutate_lines(window(rng.choice(qrels_seeds), rng, 400), rng, rng.randint(1, 20)).data
        check_trec_qrels(data)
        return data

    def jsonl_run(rng: random.Random, tmp: Path) -> bytes:
        data = mutate_jsonl(window(rng.choice(jsonl_runs), rng, 60), rng, rng.randint(1, 12)).data
        check_jsonl_run(data)
        return data

    def contract(rng: random.Random, tmp: Path) -> bytes:
        name = rng.choice(["reteco", "chunqiu", "spoken", "ikat"])
        if name == "reteco":
            data, file = mutate_lines(window(rng.choice(trec_runs), rng, 300), rng, rng.randint(1, 12)).data, "run.txt"
        elif name == "ikat":
            data, file = mutate_json_value(rng.choice(ikat_runs), rng, rng.randint(1, 8)).encode(
                "utf-8", errors="surrogatepass"), "run.json"
        else:
            lines = file_data_lines(runs / f"{name}.jsonl")[:40]
            data, file = mutate_jsonl(lines, rng, rng.randint(1, 10)).data, "run.jsonl"
        path = tmp / file
        path.write_bytes(data)
        report = rm.validate_run(path, name)
        for p in report.errors:
            assert p.path == str(path), p
        return data

    def cli(rng: random.Random, tmp: Path) -> bytes:
        run, qrels = tmp / "run.txt", tmp / "qrels.txt"
        data = mutate_lines(window(rng.choice(trec_runs), rng, 300), rng, rng.randint(0, 10)).data
        run.write_bytes(data)
        qrels.write_bytes(mutate_lines(window(rng.choice(qrels_seeds), rng, 300), rng, rng.randint(0, 5)).data)
        argv = rng.choice([["eval", str(qrels), str(run), "nDCG@10", "P@5", "AP"],
                           ["validate", str(run), "--contract", "reteco", "--format", "json"]])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main(argv)
        text = out.getvalue() + err.getvalue()
        assert "Traceback" not in text, text[-2000:]
        assert code in (0, 1, 2), (code, err.getvalue()[-2000:])
        return data

    return {"trec_run": trec_run, "trec_run_paths": trec_run_paths, "trec_qrels": trec_qrels, "jsonl_run": jsonl_run, "contract": contract, "cli": cli}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=None, help="master seed (default: time based)")
    ap.add_argument("--oracles", type=Path, help="folder with trec_eval_tests/ and ikat2023/ (optional seeds)")
    ap.add_argument("--out", type=Path, default=Path("fuzz-failures"), help="where failing cases are written")
    args = ap.parse_args()

    master = args.seed if args.seed is not None else int(time.time())
    targets = build_targets(args.oracles)
    cases: Counter[str] = Counter()
    failures: list[tuple[str, int, str]] = []
    deadline = time.monotonic() + args.seconds
    started = time.monotonic()
    i = 0
    warnings.simplefilter("ignore")
    while time.monotonic() < deadline:
        name = list(targets)[i % len(targets)]
        case_seed = master * 1_000_003 + i
        i += 1
        with tempfile.TemporaryDirectory() as tmp:
            rng = random.Random(case_seed)
            try:
                targets[name](rng, Path(tmp))
            except Exception:  # noqa: BLE001  (every failure is recorded with its input)
                error = traceback.format_exc()
                failures.append((name, case_seed, error.strip().splitlines()[-1]))
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / f"{name}-{case_seed}.txt").write_text(error)
        cases[name] += 1
    elapsed = time.monotonic() - started
    print(f"fuzz: {sum(cases.values())} cases in {elapsed:.0f} s (master seed {master}; "
          f"oracle seeds {'used' if args.oracles else 'not used'})")
    for name in targets:
        bad = sum(1 for f in failures if f[0] == name)
        print(f"  {name:16s} {cases[name]:6d} cases  {bad} failure(s)")
    for name, seed, last in failures[:20]:
        print(f"  FAIL {name} case seed {seed}: {last}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
