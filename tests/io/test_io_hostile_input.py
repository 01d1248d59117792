"""Regression tests for hostile input: one per defect, each value checked against a hand-written
expectation (never against our own output)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.cli.main import main
from reteco_measures.errors import DataFormatError, DataFormatWarning

GOOD = ["q1 Q0 d1 1 3.5 r", "q1 Q0 d2 2 2.25 r", "q2 Q0 d3 1 1 r"]


def read(data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rm.read_run(data, **kw)


def rows(frame: pd.DataFrame) -> list[tuple]:
    return list(zip(frame["query_id"], frame["doc_id"], frame["score"]))


# --- defect 3: one byte must not lose a TREC file ------------------------------------------------


def test_minimal_invalid_utf8_is_one_problem() -> None:
    frame = read(b"\x80\n")
    assert len(frame) == 0
    [problem] = frame.attrs["problems"]
    assert problem.line == 1 and problem.kind == "encoding" and "0x80" in problem.message


@pytest.mark.parametrize("bad", [b"q1 Q0 d\x80x 1 1 r", b"\xff\xfe", b"q1 Q0 \xc3 1 1 r"])
def test_invalid_utf8_line_costs_only_itself(bad: bytes, tmp_path: Path) -> None:
    data = "\n".join(GOOD[:2]).encode() + b"\n" + bad + b"\n" + GOOD[2].encode() + b"\n"
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    frame = read(path)
    assert rows(frame) == [("q1", "d1", 3.5), ("q1", "d2", 2.25), ("q2", "d3", 1.0)]
    [problem] = frame.attrs["problems"]
    assert (problem.line, problem.path) == (3, str(path))
    with pytest.raises(DataFormatError, match=r"run.txt:3: -: not valid UTF-8"):
        rm.read_run(path, on_bad_lines="error")


@pytest.mark.parametrize("sep", [" ", "\t"])
def test_invalid_utf8_in_the_q0_field_is_reported_on_the_fast_path(sep: str) -> None:
    # the fast path never reads Q0 into the frame, but must still refuse the undecodable line
    data = sep.join(["q1", "\udcc3", "d1", "1", "1", "r"]).encode("utf-8", "surrogateescape") + b"\n"
    frame = read(data + sep.join(["q1", "Q0", "d2", "2", "1", "r"]).encode() + b"\n")
    assert rows(frame) == [("q1", "d2", 1.0)]
    assert [(p.line, p.kind) for p in frame.attrs["problems"]] == [(1, "encoding")]


def test_invalid_utf8_in_qrels_costs_only_its_line() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qrels = rm.read_qrels(b"q1 0 d1 1\nq1 0 d\xfe2 1\nq1 0 d3 2\n")
    assert list(zip(qrels["doc_id"], qrels["relevance"])) == [("d1", 1), ("d3", 2)]
    assert [p.line for p in qrels.attrs["problems"]] == [2]


def test_unit_separator_byte_is_part_of_an_id() -> None:
    # 0x1F is not whitespace (C isspace), so trec_eval keeps it inside the field; so do we
    frame = read(b"q1 Q0 d\x1f1 1 1 r\nq1 Q0 d2 2 0.5 r\n")
    assert frame["doc_id"].tolist() == ["d\x1f1", "d2"] and frame.attrs["problems"] == []


def test_sixteen_megabyte_line_costs_only_itself() -> None:
    long_line = b"x" * (16 << 20)
    data = GOOD[0].encode() + b"\n" + long_line + b"\n" + GOOD[2].encode() + b"\n"
    frame = read(data)
    assert rows(frame) == [("q1", "d1", 3.5), ("q2", "d3", 1.0)]
    [problem] = frame.attrs["problems"]
    assert problem.line == 2 and len(str(problem)) < 300  # the message stays readable


def test_fast_and_checking_paths_read_the_same_values() -> None:
    lines = ["q1 Q0 d1 1 0.1 r", "q1 Q0 d2 2 -1e-3 r", "q2 Q0 d3 00012 +.5 r", "q2 Q0 d4 3 1.5E2 r"]
    fast = read(("\n".join(lines) + "\n").encode())
    checking = read(("\n".join(ln.replace(" ", "  ") for ln in lines) + "\n").encode())
    assert rows(fast) == rows(checking) == [("q1", "d1", 0.1), ("q1", "d2", -0.001), ("q2", "d3", 0.5),
                                            ("q2", "d4", 150.0)]
    assert fast["rank"].tolist() == checking["rank"].tolist() == [1, 2, 12, 3]


def test_crlf_run_ids_lose_the_carriage_return() -> None:
    frame = read(b"q1 Q0 d1 1 1 r\r\nq1 Q0 d2 2 0.5 r\r\n")
    assert frame["run_id"].tolist() == ["r", "r"]


# --- defect 5: a value is reported, never changed -------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "NaN", "1e400", "inf", "-inf", "99999999999999999999", "0x10", "1.5",
                                   "1.0", "", "+"])
def test_qrels_relevance_that_is_not_an_integer_is_reported(value: str) -> None:
    text = f"q1 0 d1 1\nq1 0 d2 {value}\nq1 0 d3 2\n"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qrels = rm.read_qrels(text)
    if value == "":  # three columns: a column-count problem
        assert [p.line for p in qrels.attrs["problems"]] == [2]
    else:
        assert [(p.line, p.doc_id) for p in qrels.attrs["problems"]] == [(2, "d2")]
    assert list(zip(qrels["doc_id"], qrels["relevance"])) == [("d1", 1), ("d3", 2)]


def test_hexadecimal_relevance_is_refused_whatever_the_other_lines() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = rm.read_qrels("q1 0 d1 0x10\n")
        mixed = rm.read_qrels("q1 0 d1 0x10\nq1 0 d2 x\n")
    assert len(alone) == 0 and len(mixed) == 0
    assert [p.line for p in alone.attrs["problems"]] == [1]


@pytest.mark.parametrize("score", ["nan", "inf", "-Infinity", "1e400", "0x10", "1,5", "--1"])
def test_run_score_that_is_not_a_finite_number_is_reported(score: str) -> None:
    frame = read(f"q1 Q0 d1 1 1 r\nq1 Q0 d2 2 {score} r\n")
    assert rows(frame) == [("q1", "d1", 1.0)]
    assert [(p.line, p.kind) for p in frame.attrs["problems"]] == [(2, "score")]


@pytest.mark.parametrize("rank", ["nan", "0x10", "1.5", "99999999999999999999"])
def test_run_rank_that_is_not_an_integer_is_reported(rank: str) -> None:
    frame = read(f"q1 Q0 d1 {rank} 1 r\nq1 Q0 d2 2 0.5 r\n")
    assert rows(frame) == [("q1", "d2", 0.5)]
    assert [p.line for p in frame.attrs["problems"]] == [1]


@pytest.mark.parametrize(
    "item, fragment",
    [
        ({"doc_id": None, "score": 1}, "lacks 'doc_id'"),
        ({"doc_id": True, "score": 1}, "not a string"),
        ({"doc_id": 1.5, "score": 1}, "not a string"),
        ({"doc_id": "d9", "score": None}, "not a finite number"),
        ({"doc_id": "d9", "score": "1"}, "not a finite number"),
        ({"doc_id": "d9", "score": True}, "not a finite number"),
    ],
)
def test_jsonl_run_values_are_never_made_up(item: dict, fragment: str) -> None:
    text = json.dumps({"query_id": "q1", "results": [{"doc_id": "d1", "score": 2}, item]}) + "\n"
    frame = read(text, format="jsonl")
    assert rows(frame) == [("q1", "d1", 2.0)]
    [problem] = frame.attrs["problems"]
    assert problem.line == 1 and fragment in problem.message


def test_jsonl_integer_ids_are_their_digits() -> None:
    frame = read('{"query_id": 7, "results": [{"doc_id": 12, "score": 1}]}\n', format="jsonl")
    assert rows(frame) == [("7", "12", 1.0)]


# --- defect 4: JSON input never raises ------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_line",
    [
        "[" * 100_000,
        '{"query_id": "q2", "results": [{"doc_id": "d", "score": 1' + "0" * 400 + "}]}",
        '{"query_id": "q2", "results": [{"doc_id": "d", "score": ' + "9" * 5000 + "}]}",
        '{"query_id": "q2", "results": [{"doc_id": "d", "score": Infinity}]}',
        '{"query_id": "q2", "results": [{"doc_id": "d", "score": NaN}]}',
        '{"query_id": ' + "[" * 5000 + "]" * 5000 + ', "results": []}',
    ],
)
def test_jsonl_run_hostile_line_is_one_problem(bad_line: str) -> None:
    good = json.dumps({"query_id": "q1", "results": [{"doc_id": "d1", "score": 1}]})
    frame = read(f"{good}\n{bad_line}\n{good.replace('q1', 'q3')}\n", format="jsonl")
    assert rows(frame) == [("q1", "d1", 1.0), ("q3", "d1", 1.0)]
    assert [p.line for p in frame.attrs["problems"]] == [2]


@pytest.mark.parametrize("relevance", ["18446744073709551616", "1.5", "true", "null", "9" * 5000, "[" * 100_000])
def test_jsonl_qrels_hostile_relevance_is_one_problem(relevance: str) -> None:
    text = ('{"query_id": "q1", "doc_id": "d1", "relevance": 1}\n'
            f'{{"query_id": "q1", "doc_id": "d2", "relevance": {relevance}}}\n'
            '{"query_id": "q1", "doc_id": "d3", "relevance": 2}\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qrels = rm.read_qrels(text, format="jsonl")
    assert list(zip(qrels["doc_id"], qrels["relevance"])) == [("d1", 1), ("d3", 2)]
    assert [p.line for p in qrels.attrs["problems"]] == [2]


def test_iter_jsonl_keeps_every_line_around_an_undecodable_one(tmp_path: Path) -> None:
    from reteco_measures.io.jsonl import iter_jsonl

    lines = [json.dumps({"i": i}).encode() for i in range(300)]
    lines.insert(150, b'{"i": "\xff"}')
    path = tmp_path / "answers.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    problems: list = []
    got = [rec["i"] for _, rec in iter_jsonl(path, problems)]
    assert got == list(range(300))
    assert [(p.line, p.kind) for p in problems] == [(151, "encoding")]


def test_ikat_contract_hostile_json_is_one_problem(tmp_path: Path) -> None:
    for text in ("[" * 100_000, '{"run_name": ' + "9" * 5000 + "}"):
        path = tmp_path / "run.json"
        path.write_text(text)
        report = rm.validate_run(path, "ikat")
        assert not report.valid and len(report.errors) == 1 and "not valid JSON" in report.errors[0].message


def test_ikat_huge_integer_score_is_a_problem() -> None:
    run = {"run_name": "r", "run_type": "automatic", "turns": [{"turn_id": "1-1_1", "responses": [
        {"rank": 1, "text": "t", "ptkb_provenance": [],
         "passage_provenance": [{"id": "clueweb22-en0000-00-00000:1", "text": "", "score": 10**400, "used": True}]}]}]}
    report = rm.validate_run(run, "ikat")
    assert any("score" in p.message and p.severity == "error" for p in report.errors)


# --- defect 6: NaN scores in in-memory runs -------------------------------------------------------

QRELS = {"q1": {"a": 1, "b": 0, "c": 1}}
NAN_RUN = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "score": [0.5, np.nan, 0.1]})


@pytest.mark.parametrize("call", ["calc_aggregate", "iter_calc", "evaluate"])
def test_nan_scores_are_refused_on_every_scoring_path(call: str) -> None:
    fn = getattr(rm, call)
    with pytest.raises(DataFormatError, match=r"row 2: score nan is not a finite number"):
        result = fn(["nDCG@10"], QRELS, NAN_RUN)
        list(result) if call == "iter_calc" else None


def test_nan_scores_in_a_dict_run_are_refused() -> None:
    with pytest.raises(DataFormatError, match="not a finite number"):
        rm.calc_aggregate(["nDCG@10"], QRELS, {"q1": {"a": 0.5, "b": float("nan")}})


def test_nan_scores_are_problems_in_the_contract() -> None:
    report = rm.validate_run(NAN_RUN, "reteco")
    assert [(p.line, p.doc_id, p.kind) for p in report.errors] == [(2, "b", "score")]
    assert report.run["doc_id"].tolist() == ["a", "c"]


def test_non_integer_relevance_in_memory_is_refused() -> None:
    with pytest.raises(DataFormatError, match="relevance"):
        rm.calc_aggregate(["nDCG@10"], {"q1": {"a": float("nan")}}, {"q1": {"a": 1.0}})


# --- defect 14 (data side) ------------------------------------------------------------------------


def test_a_folder_as_run_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(FileNotFoundError, match="is a folder"):
        rm.read_run(tmp_path)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    code = main(["eval", str(qrels), str(tmp_path), "nDCG@10"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and "is a folder" in err


@pytest.mark.parametrize("suffix, compress", [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress)])
def test_compressed_runs(tmp_path: Path, suffix: str, compress) -> None:
    path = tmp_path / f"run.txt{suffix}"
    path.write_bytes(compress(("\n".join(GOOD) + "\n").encode()))
    assert rows(read(path)) == [("q1", "d1", 3.5), ("q1", "d2", 2.25), ("q2", "d3", 1.0)]
    jpath = tmp_path / f"run.jsonl{suffix}"
    jpath.write_bytes(compress(b'{"query_id": "q1", "results": [{"doc_id": "d1", "score": 2}]}\n'))
    assert rows(read(jpath)) == [("q1", "d1", 2.0)]


def test_corrupt_compressed_run_is_a_data_format_error(tmp_path: Path) -> None:
    path = tmp_path / "run.txt.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 1 r\n")[:-6])
    with pytest.raises(DataFormatError, match="not a readable .gz file"):
        rm.read_run(path)


def test_a_text_file_whose_first_line_starts_with_a_gzip_signature_loses_only_that_line(tmp_path: Path) -> None:
    # a damaged first line that happens to start with gzip's two magic bytes: the name does not say
    # .gz and the bytes do not decompress, so the file is read as text and only that line is refused
    path = tmp_path / "run.txt"
    path.write_bytes(b"\x1f\x8b junk\n" + ("\n".join(GOOD) + "\n").encode())
    with pytest.warns(DataFormatWarning):
        run = rm.read_run(path)
    assert rows(run) == [("q1", "d1", 3.5), ("q1", "d2", 2.25), ("q2", "d3", 1.0)]
    assert [p.line for p in run.attrs["problems"]] == [1]


def test_ikat_run_json_gz(tmp_path: Path) -> None:
    run = {"run_name": "r", "run_type": "automatic", "turns": [{"turn_id": "1-1_1", "responses": [
        {"rank": 1, "text": "t", "ptkb_provenance": [],
         "passage_provenance": [{"id": "clueweb22-en0000-00-00000:1", "text": "", "score": 1.0, "used": True}]}]}]}
    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(json.dumps(run).encode()))
    report = rm.validate_run(path, "ikat")
    assert report.run["doc_id"].tolist() == ["clueweb22-en0000-00-00000:1"]


def test_ndcg_kernel_counts_a_repeated_pair_once() -> None:
    from reteco_measures.kernels.ndcg import ndcg

    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "a"], "score": [3.0, 2.0, 1.0]})
    ours = ndcg(qrels, run, 10)["q"]
    # pytrec_eval's dict keeps the last score of a: a=1 ranks below b=2 -> 1/log2(3)
    ref = pytrec_eval.RelevanceEvaluator({"q": {"a": 1}}, {"ndcg_cut.10"}).evaluate({"q": {"a": 1.0, "b": 2.0}})
    assert ours == pytest.approx(ref["q"]["ndcg_cut_10"], abs=1e-12) == pytest.approx(1 / np.log2(3))


def test_import_creates_no_folder_in_the_ir_datasets_home(tmp_path: Path) -> None:
    # importing the package does not import ir_datasets (registering with it is an explicit call)
    env = {**os.environ, "HOME": str(tmp_path), "IR_DATASETS_HOME": str(tmp_path / "ird")}
    code = "import sys, reteco_measures as rm; assert 'reteco/tempo/dev' in rm.datasets.TOPICS_FACTORIES; assert 'ir_datasets' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert not (tmp_path / "ird").exists() and not (tmp_path / ".ir_datasets").exists()


def test_planted_sample_folder_is_not_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reteco_measures.sample import ikat_sample_root

    planted = tmp_path / "tmp" / "reteco-measures-ikat2023-sample"
    (planted / "runs").mkdir(parents=True)
    (planted / ".complete").write_text("20230701")
    (planted / "runs" / "ikat2023_run.json").write_text('{"planted": true}')
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = ikat_sample_root()
    assert planted not in (root, *root.parents)
    run = json.loads((root / "runs" / "ikat2023_run.json").read_text())
    assert "planted" not in run and run["turns"]
    # a tampered cached copy is rewritten, not used
    (root / "runs" / "ikat2023_run.json").write_text('{"tampered": true}')
    again = ikat_sample_root()
    assert "tampered" not in json.loads((again / "runs" / "ikat2023_run.json").read_text())


def test_reteco_contract_ranks_in_query_blocks_equal_whole_ranking() -> None:
    from reteco_measures.benchmarks.reteco.contract import _trec_eval_ranks
    from reteco_measures.kernels.ranking import rank_run

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"query_id": np.repeat([f"q{i}" for i in range(7)], 5),
                          "doc_id": [f"d{i}" for i in rng.integers(0, 9, 35)],
                          "score": rng.integers(0, 3, 35).astype(float)}).astype({"query_id": "str", "doc_id": "str"})
    whole = rank_run(frame.assign(_pos=np.arange(35)), "trec_eval")
    expected = np.zeros(35, dtype=np.int64)
    expected[whole["_pos"].to_numpy()] = whole["rank"].to_numpy()
    assert _trec_eval_ranks(frame, block_rows=4).tolist() == expected.tolist()
    # the query codes the contract already holds (any integer codes) give the same blocks
    codes = np.repeat(np.array([5, 0, 3, 9, 1, 2, 7]), 5)
    assert _trec_eval_ranks(frame, block_rows=4, codes=codes).tolist() == expected.tolist()
