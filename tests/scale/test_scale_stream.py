"""stream=True: a run file evaluated in blocks of whole queries gives the in-memory numbers."""

from __future__ import annotations

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
