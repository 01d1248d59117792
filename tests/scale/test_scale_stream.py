"""stream=True: a run file evaluated in blocks of whole queries gives the in-memory numbers."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.errors import DataFormatError, DataFormatWarning
from reteco_measures.scale.stream import iter_blocks, stream_calc_aggregate, stream_iter_calc

MEASURES = ["nDCG@10", "AP", "RR", "P(rel=2)@5", "Rprec", "RR@10", "TR@10", "TP@10"]


def _write(run: pd.DataFrame, path: Path) -> Path:
    run.assign(q0="Q0", r=1, n="x")[["query_id", "q0", "doc_id", "r", "score", "n"]].to_csv(
        path, sep=" ", header=False, index=False)
    return path


def _per_query(metrics) -> dict:
    return {(m.query_id, str(m.measure)): float(m.value) for m in metrics}


def test_blocks_hold_whole_queries(trec_eval_dir: Path) -> None:
    blocks = list(iter_blocks(trec_eval_dir / "results.test", block_bytes=4000))
    assert len(blocks) == 3  # 4000-byte reads, but a block never splits a query
    seen = [b["query_id"].unique().tolist() for b in blocks]
    flat = [q for qs in seen for q in qs]
    assert sorted(flat) == ["301", "302", "303"]  # each query in exactly one block
    assert sum(len(b) for b in blocks) == len(rm.read_run(trec_eval_dir / "results.test"))


@pytest.mark.parametrize("run_name", ["results.test", "results.trunc"])
def test_same_numbers_as_in_memory(trec_eval_dir: Path, run_name: str) -> None:
    qrels = rm.read_qrels(trec_eval_dir / "qrels.rel_level")
    run_path = trec_eval_dir / run_name
    memory = rm.calc_aggregate(MEASURES, qrels, run_path)
    streamed = stream_calc_aggregate(MEASURES, qrels, run_path, block_bytes=3000)
    assert streamed == pytest.approx(memory, abs=1e-12)
    assert rm.calc_aggregate(MEASURES, qrels, run_path, stream=True) == pytest.approx(memory, abs=1e-12)
    per_query = _per_query(rm.iter_calc(MEASURES, qrels, run_path))
    assert _per_query(stream_iter_calc(MEASURES, qrels, run_path, block_bytes=3000)) == pytest.approx(per_query)
    frame = rm.evaluate(MEASURES, qrels, run_path, stream=True)
    assert frame["value"].tolist() == pytest.approx(rm.evaluate(MEASURES, qrels, run_path)["value"].tolist())


def _conversations(tmp_path: Path) -> tuple[pd.DataFrame, Path]:
    rng = np.random.default_rng(0)
    rows, judged = [], []
    for c in range(6):
        for t in range(1, 2 + c % 3):
            qid = f"c{c}_turn_{t}"
            rows += [(qid, f"d{d}", float(rng.integers(0, 4))) for d in range(8)]
            judged += [(qid, f"d{d}", int(rng.integers(0, 3))) for d in rng.choice(8, 3, replace=False)]
    judged.append(("c9_turn_1", "d1", 1))  # a turn the run misses: scores 0 in both paths
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    return qrels, _write(run, tmp_path / "conv.txt")


def test_weighted_measures_aggregate_exactly(tmp_path: Path) -> None:
    # TurnNDCG(average='conversation') weighs each turn 1/|turns of its conversation|
    qrels, path = _conversations(tmp_path)
    ms = ["TurnNDCG(average='conversation')@10", "TurnNDCG@10", "nDCG@5"]
    memory = rm.calc_aggregate(ms, qrels, path)
    assert stream_calc_aggregate(ms, qrels, path, block_bytes=150) == pytest.approx(memory, abs=1e-12)


def test_ungrouped_run_is_partitioned_or_refused(trec_eval_dir: Path, tmp_path: Path) -> None:
    qrels = rm.read_qrels(trec_eval_dir / "qrels.rel_level")
    run = rm.read_run(trec_eval_dir / "results.test")
    path = _write(run.sample(frac=1.0, random_state=0), tmp_path / "shuffled.txt")
    memory = rm.calc_aggregate(MEASURES, qrels, path)
    assert stream_calc_aggregate(MEASURES, qrels, path, block_bytes=5000) == pytest.approx(memory, abs=1e-12)
    with pytest.raises(DataFormatError, match="not grouped by query: query '30[123]' appears again"):
        stream_calc_aggregate(MEASURES, qrels, path, block_bytes=5000, ungrouped="error")


def test_bad_line_reported_with_its_file_line(trec_eval_dir: Path, tmp_path: Path) -> None:
    lines = (trec_eval_dir / "results.test").read_text().splitlines()
    lines.insert(700, "301 Q0 broken-line")
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    qrels = rm.read_qrels(trec_eval_dir / "qrels.test")
    with pytest.warns(DataFormatWarning, match=r"bad\.txt:701"):
        streamed = stream_calc_aggregate(["nDCG@10"], qrels, path, block_bytes=4000)
    with pytest.warns(DataFormatWarning):
        memory = rm.calc_aggregate(["nDCG@10"], qrels, path)
    assert streamed == pytest.approx(memory)


def test_not_streamable_measure_and_in_memory_run_are_refused(trec_eval_dir: Path) -> None:
    qrels = rm.read_qrels(trec_eval_dir / "qrels.test")
    with pytest.raises(ValueError, match="StepNDCG"):
        stream_calc_aggregate(["StepNDCG@10"], qrels, trec_eval_dir / "results.test")
    with pytest.raises(ValueError, match="run \\*file\\*"):
        rm.calc_aggregate(["nDCG@10"], qrels, rm.read_run(trec_eval_dir / "results.test"), stream=True)


def test_cli_stream(trec_eval_dir: Path, capsys) -> None:
    from reteco_measures.cli.main import main

    args = ["eval", str(trec_eval_dir / "qrels.test"), str(trec_eval_dir / "results.test"), "nDCG@10", "AP",
            "--format", "tsv"]
    assert main([*args, "--stream"]) == 0
    streamed = capsys.readouterr().out
    assert main(args) == 0
    assert streamed == capsys.readouterr().out


def test_gzip_and_jsonl_runs(trec_eval_dir: Path, tmp_path: Path) -> None:
    import gzip
    import json
    import shutil

    qrels = rm.read_qrels(trec_eval_dir / "qrels.test")
    memory = rm.calc_aggregate(["nDCG@10", "AP", "RR"], qrels, trec_eval_dir / "results.test")
    gz = tmp_path / "run.txt.gz"
    with open(trec_eval_dir / "results.test", "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    run = rm.read_run(trec_eval_dir / "results.test")
    jsonl = tmp_path / "run.jsonl"
    with open(jsonl, "w") as f:
        for qid, group in run.groupby("query_id", sort=False):
            results = [{"doc_id": d, "score": s} for d, s in zip(group["doc_id"], group["score"])]
            f.write(json.dumps({"query_id": qid, "results": results}) + "\n")
    for path in (gz, jsonl):
        assert stream_calc_aggregate(["nDCG@10", "AP", "RR"], qrels, path, block_bytes=3000) == pytest.approx(memory)


# --------------------------------------------------------------------------------------------
# one code path: the stream reads, checks and fails as the in-memory path does (issue 20 item 5)

QRELS_TEXT = "q1 0 a 2\nq1 0 b 0\nq1 0 c 1\nq2 0 a 1\nq2 0 d 1\nq3 0 e 1\n"


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    from reteco_measures.cli.main import main

    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _recorded(fn):
    """``(result or the exception's text, [(category, message)])`` of ``fn()``."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
        except DataFormatError as exc:
            result = f"DataFormatError: {exc}"
    return result, [(w.category.__name__, str(w.message)) for w in caught]


def test_no_shared_query_id_warns_and_exits_1_as_in_memory(tmp_path: Path, capsys) -> None:
    from reteco_measures.errors import QueryIdMismatchWarning

    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS_TEXT)
    run = tmp_path / "run.txt"
    run.write_text("x1 Q0 a 1 2.0 r\nx1 Q0 b 2 1.0 r\nx2 Q0 a 1 1.0 r\n")
    expected = ("run and qrels share no query id (e.g. run 'x1', qrels 'q1'); every value would be 0 or "
                "undefined")  # the in-memory message (query_ids.check_query_ids)
    for stream in (False, True):
        with pytest.warns(QueryIdMismatchWarning, match=re.escape(expected)):
            rm.calc_aggregate(["nDCG@10"], str(qrels), str(run), stream=stream)
    memory = _cli(["eval", str(qrels), str(run), "nDCG@10"], capsys)
    streamed = _cli(["eval", str(qrels), str(run), "nDCG@10", "--stream"], capsys)
    assert memory[0] == 1 and expected in memory[2]
    assert streamed == memory


def test_empty_run_exits_1_as_in_memory(tmp_path: Path, capsys) -> None:
    from reteco_measures.errors import EmptyInputWarning

    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS_TEXT)
    run = tmp_path / "run.txt"
    run.write_text("\n# a comment only\n\n")
    for stream in (False, True):
        with pytest.warns(EmptyInputWarning, match="the run has no usable row"):
            rm.calc_aggregate(["nDCG@10"], str(qrels), str(run), stream=stream)
    memory = _cli(["eval", str(qrels), str(run), "nDCG@10"], capsys)
    streamed = _cli(["eval", str(qrels), str(run), "nDCG@10", "--stream"], capsys)
    assert memory[0] == 1 and "has no usable row" in memory[2]
    assert streamed == memory


def _trec_eval_values(qrels: Path, run: Path, measures: list[str]) -> dict:
    """pytrec_eval (through ir_measures' own reader and provider) on the plain text run."""
    import ir_measures

    parsed = [ir_measures.parse_measure(m) for m in measures]
    values = ir_measures.pytrec_eval.calc_aggregate(parsed, list(ir_measures.read_trec_qrels(str(qrels))),
                                                    list(ir_measures.read_trec_run(str(run))))
    return {str(m): v for m, v in values.items()}


@pytest.mark.parametrize("suffix", [".bz2", ".xz", ".gz"])
def test_compressed_runs_read_with_the_readers_decompressors(trec_eval_dir: Path, tmp_path: Path, suffix: str,
                                                             capsys) -> None:
    import bz2
    import gzip
    import lzma

    plain = trec_eval_dir / "results.test"
    qrels = trec_eval_dir / "qrels.test"
    data = plain.read_bytes()
    packed = {".bz2": bz2.compress, ".xz": lzma.compress, ".gz": gzip.compress}[suffix](data)
    assert b"\n" in packed  # a newline byte inside the compressed bytes (the .xz failure of issue 20)
    path = tmp_path / f"run.txt{suffix}"
    path.write_bytes(packed)
    ms = ["P@10", "AP", "RR"]
    expected = _trec_eval_values(qrels, plain, ms)
    got = stream_calc_aggregate(ms, str(qrels), str(path), block_bytes=2000)
    assert {str(m): v for m, v in got.items()} == pytest.approx(expected, abs=1e-12)
    memory = _cli(["eval", str(qrels), str(path), *ms, "--format", "tsv"], capsys)
    assert _cli(["eval", str(qrels), str(path), *ms, "--format", "tsv", "--stream"], capsys) == memory
    assert memory[0] == 0


def test_damaged_compressed_run_fails_as_in_memory(trec_eval_dir: Path, tmp_path: Path, capsys) -> None:
    import bz2

    packed = bz2.compress((trec_eval_dir / "results.test").read_bytes())
    path = tmp_path / "run.txt.bz2"
    path.write_bytes(packed[: len(packed) // 2])  # truncated
    qrels = str(trec_eval_dir / "qrels.test")
    for stream in (False, True):
        with pytest.raises(DataFormatError, match=r"run\.txt\.bz2: -: not a readable \.bz2 file"):
            rm.calc_aggregate(["P@10"], qrels, str(path), stream=stream)
    memory = _cli(["eval", qrels, str(path), "P@10"], capsys)
    assert memory[0] == 1 and "not a readable .bz2 file" in memory[2]
    assert _cli(["eval", qrels, str(path), "P@10", "--stream"], capsys) == memory


def _jsonl_line(qid: str, docs: list[tuple[str, float]]) -> bytes:
    import json

    return json.dumps({"query_id": qid, "results": [{"doc_id": d, "score": s} for d, s in docs]}).encode() + b"\n"


def test_bom_at_a_later_block_start_is_the_lines(tmp_path: Path) -> None:
    from reteco_measures.io.readers import read_run_with_problems

    bom = b"\xef\xbb\xbf"
    first = _jsonl_line("q1", [("a", 2.0), ("b", 1.0)])
    path = tmp_path / "run.jsonl"
    path.write_bytes(first + bom + _jsonl_line("q2", [("a", 1.0)]) + _jsonl_line("q3", [("e", 1.0)]))
    # the file reader: line 2 is refused for its byte-order mark
    _, problems = read_run_with_problems(str(path))
    assert [(p.line, p.message) for p in problems] == [
        (2, "not valid JSON: a byte-order mark (U+FEFF) before the value (column 1)")]
    found: list = []
    blocks = list(iter_blocks(path, block_bytes=len(first), problems=found))  # block 2 starts with the mark
    assert [(p.line, p.message) for p in found] == [(p.line, p.message) for p in problems]
    assert [b["query_id"].unique().tolist() for b in blocks] == [["q1"], ["q3"]]
    # TREC: the reader keeps the mark in the query id ("\ufeffq2" is not "q2"); so does the stream
    trec = tmp_path / "run.txt"
    head = b"q1 Q0 a 1 2.0 r\n"
    trec.write_bytes(head + bom + b"q2 Q0 a 1 1.0 r\n")
    ids = [q for b in iter_blocks(trec, block_bytes=len(head)) for q in b["query_id"]]
    assert ids == ["q1", "\ufeffq2"] == rm.read_run(trec)["query_id"].tolist()


def _one_query_file(path: Path, n: int) -> Path:
    rows = np.arange(n)
    with open(path, "w") as f:
        f.write("".join(f"q1 Q0 d{i} {i + 1} {1.0 / (i + 1)!r} r\n" for i in rows.tolist()))
    return path


def test_one_query_spanning_many_blocks_is_linear(tmp_path: Path) -> None:
    import time

    def seconds(path: Path) -> float:
        best = float("inf")
        for _ in range(3):  # the best of three (the machine is shared)
            start = time.perf_counter()
            blocks = list(iter_blocks(path, block_bytes=4096))
            best = min(best, time.perf_counter() - start)
        assert len(blocks) == 1  # one query: one block, however many reads
        return best

    small = seconds(_one_query_file(tmp_path / "100k.txt", 100_000))
    large = seconds(_one_query_file(tmp_path / "400k.txt", 400_000))  # ~3,000 reads of 4 KB
    # linear: ~4x (4.2x the bytes; measured 4.1-6x on a loaded machine); the former quadratic
    # cut gave ~16x. The bound leaves room for the load and still tells the two apart
    assert large <= 8 * small + 0.02, (small, large)


def _random_case(rng: np.random.Generator, tmp_path: Path, i: int) -> tuple[Path, Path]:
    """A random qrels file and run file (format, compression, BOM lines, bad lines, ids that do
    or do not meet the qrels, grouped or not, empty) for the differential test."""
    import bz2
    import gzip
    import lzma

    n_q = int(rng.integers(1, 6))
    prefix = "q" if rng.random() < 0.85 else "other"
    qrels_rows = [f"q{q} 0 d{d} {int(rng.integers(0, 3))}" for q in range(n_q + 1) for d in range(int(rng.integers(1, 6)))]
    qrels = tmp_path / f"qrels{i}.txt"
    qrels.write_text("\n".join(qrels_rows) + "\n")
    jsonl = rng.random() < 0.3
    lines: list[bytes] = []
    order = list(range(n_q)) if rng.random() < 0.8 else list(rng.permutation(n_q)) + [0]
    for q in order:
        docs = [(f"d{int(d)}", float(np.round(rng.random(), 3))) for d in rng.integers(0, 8, int(rng.integers(1, 30)))]
        if jsonl:
            lines.append(_jsonl_line(f"{prefix}{q}", docs))
        else:
            lines += [f"{prefix}{q} Q0 {d} {r} {s!r} run\n".encode() for r, (d, s) in enumerate(docs, start=1)]
    if rng.random() < 0.1:
        lines = []
    for _ in range(int(rng.integers(0, 4))):  # a BOM at the start of a later line, or a bad line
        at = int(rng.integers(0, len(lines) + 1))
        bad = b"q1 Q0 broken\n" if rng.random() < 0.5 else b'[{"query_id": "q1", "results": []}]\n'
        lines.insert(at, b"\xef\xbb\xbf" + lines[at] if at < len(lines) and rng.random() < 0.5 else bad)
    data = (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + b"".join(lines)
    suffix = str(rng.choice(["", ".gz", ".bz2", ".xz"]))
    packed = {"": bytes, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix](data)
    run = tmp_path / f"run{i}.{'jsonl' if jsonl else 'txt'}{suffix}"
    run.write_bytes(packed)
    return qrels, run


@pytest.mark.slow
def test_differential_stream_equals_in_memory(tmp_path: Path, capsys) -> None:
    ms = ["nDCG@10", "AP", "P@5"]
    rng = np.random.default_rng(20)
    outcomes = set()
    for i in range(20):
        qrels, run = _random_case(rng, tmp_path, i)
        block = int(rng.integers(40, 400))  # small blocks: queries span several reads
        memory, memory_warnings = _recorded(lambda q=qrels, r=run: _per_query(rm.iter_calc(ms, str(q), str(r))))
        streamed, stream_warnings = _recorded(
            lambda q=qrels, r=run, b=block: _per_query(stream_iter_calc(ms, str(q), str(r), block_bytes=b)))
        assert streamed == (pytest.approx(memory, nan_ok=True) if isinstance(memory, dict) else memory), run
        assert stream_warnings == memory_warnings, run
        args = ["eval", str(qrels), str(run), *ms, "--format", "tsv", "--per-query"]
        code, out, err = _cli(args, capsys)
        s_code, s_out, s_err = _cli([*args, "--stream"], capsys)
        assert (s_code, s_out) == (code, out), run
        # the same warnings and errors (the in-memory command also prints notes on the contract)
        assert [x for x in s_err.splitlines() if not x.startswith("note:")] == [
            x for x in err.splitlines() if not x.startswith("note:")], run
        outcomes.add(code)
    assert outcomes == {0, 1}  # some cases fail (no shared id, empty run), others score


def test_jsonl_array_line_at_a_later_block_start_is_a_bad_line(tmp_path: Path) -> None:
    from reteco_measures.io.readers import read_run_with_problems

    first = _jsonl_line("q1", [("a", 2.0)])
    array = b'[{"query_id": "q2", "results": [{"doc_id": "a", "score": 1.0}]}]\n'
    path = tmp_path / "run.jsonl"
    path.write_bytes(first + array + _jsonl_line("q3", [("e", 1.0)]))
    frame, problems = read_run_with_problems(str(path))
    assert [(p.line, p.message) for p in problems] == [(2, "a line must be a JSON object, found a JSON array")]
    for block_bytes in (len(first), len(first) + len(array), 7):
        found: list = []
        ids = [q for b in iter_blocks(path, block_bytes=block_bytes, problems=found) for q in b["query_id"]]
        assert ids == frame["query_id"].tolist() == ["q1", "q3"]
        assert [(p.line, p.message) for p in found] == [(p.line, p.message) for p in problems]


def test_file_bom_and_partition_buckets_keep_the_ids(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text('q0 0 d1 1\nq0 0 d"2 1\nq1 0 d1 1\n')
    # the file's mark does not make its first line another query: q0 spans blocks, grouped
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(b"q0 Q0 d%d %d %d.0 r\n" % (i, i + 1, 9 - i) for i in range(9)))
    assert [b["query_id"].unique().tolist() for b in iter_blocks(path, block_bytes=30)] == [["q0"]]
    stream_calc_aggregate(["P@5"], str(qrels), str(path), block_bytes=30, ungrouped="error")  # no error
    # an ungrouped run goes through bucket files: a doc id with '"' and a query id that starts
    # with a mark (not q1 for the reader) read back as they were
    run = tmp_path / "ungrouped.txt"
    run.write_bytes(b'q0 Q0 d"2 1 3.0 r\nq1 Q0 d1 1 2.0 r\nq0 Q0 d1 2 1.0 r\n\xef\xbb\xbfq1 Q0 d1 1 5.0 r\n')
    # by hand: q0 ranks d"2, d1 (both relevant): P@5 = 2/5; q1 has d1 at rank 1 (the marked
    # line is another query, not in the qrels, so not reported): P@5 = 1/5
    expected = {("q0", "P@5"): 0.4, ("q1", "P@5"): 0.2}
    assert _per_query(stream_iter_calc(["P@5"], str(qrels), str(run), block_bytes=20)) == pytest.approx(expected)
    assert _per_query(rm.iter_calc(["P@5"], str(qrels), str(run))) == pytest.approx(expected)
