"""Run names from file names are the same in ``compare``, leaderboards and the ``compare``
command; ``judge agreement --confusion`` reads its inputs once; the "no such file" checks of
the converters."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
from pathlib import Path

import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.leaderboard import _run_items as leaderboard_run_items
from reteco_measures.cli.compare_cmd import split_runs_and_measures
from reteco_measures.cli.main import main as cli_main
from reteco_measures.io.convert import as_qrels_frame, as_run_frame, run_frame_with_problems
from reteco_measures.stats.compare import RUN_FILE_SUFFIXES, file_run_name

# ------------------------------------------------------------------------------------------------
# 1. one naming rule

#: file name -> run name, written by hand from the documented rule (one compression suffix, then
#: one format suffix, case-insensitive; the rest keeps its case)
NAMES = {
    "bm25.run.gz": "bm25",
    "dense.TSV": "dense",
    "hybrid.res": "hybrid",
    "splade.txt.bz2": "splade",
    "colbert.trec.xz": "colbert",
    "rerank.jsonl": "rerank",
    "mono.ndjson.gz": "mono",
    "duo.v2.json": "duo.v2",
    "plain": "plain",
}

_OPEN = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _write_runs(folder: Path) -> list[Path]:
    """Each file of NAMES holding a run (TREC text or JSONL by its format suffix, compressed by
    its compression suffix); run i ranks doc d{i % 3} first for both queries."""
    paths = []
    for i, name in enumerate(NAMES):
        docs = [f"d{(i + k) % 3}" for k in range(3)]
        is_json = any(s in name for s in (".jsonl", ".ndjson", ".json"))
        if is_json:
            text = "".join(json.dumps({"query_id": q, "results": [{"doc_id": d, "score": 3.0 - r}
                                                                   for r, d in enumerate(docs)]}) + "\n"
                           for q in ("q1", "q2"))
        else:
            text = "".join(f"{q} Q0 {d} {r + 1} {3.0 - r} x\n" for q in ("q1", "q2") for r, d in enumerate(docs))
        path = folder / name
        opener = _OPEN.get(Path(name).suffix, open)
        with opener(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
        paths.append(path)
    return paths


def test_file_run_name_rule():
    for name, expected in NAMES.items():
        assert file_run_name(f"some/dir/{name}") == expected, name
    assert file_run_name("bm25.trec.txt") == "bm25.trec"  # one format suffix only
    assert file_run_name("BM25.TXT.GZ") == "BM25"
    assert file_run_name("a.gz.txt") == "a.gz"  # a compression suffix is only stripped at the end
    assert file_run_name(".txt") == ".txt" and file_run_name(".txt.gz") == ".txt"  # never empty
    assert set(RUN_FILE_SUFFIXES) == {".gz", ".bz2", ".xz", ".txt", ".trec", ".run", ".res", ".tsv", ".jsonl",
                                      ".ndjson", ".json"}


def test_compare_leaderboard_and_cli_name_runs_alike(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "runs"
    folder.mkdir()
    paths = _write_runs(folder)
    expected = list(NAMES.values())
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d0 1\nq1 0 d1 0\nq2 0 d1 1\n")

    # rm.compare with a list of paths
    c = rm.compare(paths, str(qrels), ["P@1"], n_resamples=20)
    assert c.runs == expected
    # every file was read (P@1 by hand: run i puts d{i % 3} first; d0 is relevant for q1, d1 for q2)
    p1 = c.summary.set_index("run")["value"]
    for i, name in enumerate(expected):
        assert p1[name] == pytest.approx({0: 0.5, 1: 0.5, 2: 0.0}[i % 3]), name

    # leaderboards: a list of paths and the folder (sorted file names)
    assert [n for n, _ in leaderboard_run_items(paths)] == expected
    assert dict(leaderboard_run_items(folder)) == {NAMES[p.name]: p for p in paths}

    # the compare command: every file is a run, named alike
    assert split_runs_and_measures([str(p) for p in paths] + ["P@1"]) == ([str(p) for p in paths], ["P@1"])
    assert cli_main(["compare", str(qrels), *map(str, paths), "P@1", "--format", "json", "--resamples", "20"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == expected

    # ... and a missing file with any of these endings is an error, never a measure
    monkeypatch.chdir(tmp_path)
    for name in [*NAMES, "x.RES", "x.bz2", "x.xz", "x.ndjson"]:
        if name == "plain":
            continue
        with pytest.raises(FileNotFoundError, match="no such run file"):
            split_runs_and_measures([name])
    assert split_runs_and_measures(["plain", "nDCG@10"]) == ([], ["plain", "nDCG@10"])


# ------------------------------------------------------------------------------------------------
# 2. judge agreement --confusion reads its inputs once


def _agreement_inputs(tmp_path: Path) -> tuple[Path, Path]:
    judgments = tmp_path / "judgments.jsonl"
    rows = [("t1", 4), ("t2", 3), ("t3", 3), ("t4", 0), ("t5", 2)]
    lines = [json.dumps({"turn_id": t, "dimension": "groundedness", "score": s, "error": None}) for t, s in rows]
    lines.insert(2, '{"turn_id": "t9", "dimension": BROKEN')  # line 3: not JSON
    judgments.write_text("\n".join(lines) + "\n")
    human = tmp_path / "human.csv"
    human.write_text("turn_id,dimension,rater,score\n"
                     "t1,groundedness,a,4\n"
                     "t1,groundedness,b,3\n"
                     "t2,groundedness,a,3\n"
                     "t3,groundedness,a,2\n"
                     "t3,groundedness,b,2.5\n"  # line 6: not an integer, left out
                     "t4,groundedness,a,0\n"
                     "t5,groundedness,a,2\n"
                     "t5,groundedness,b,9\n")  # line 9: outside 0-4, left out
    return judgments, human


def test_agreement_confusion_warns_once_and_keeps_the_numbers(tmp_path, capsys):
    judgments, human = _agreement_inputs(tmp_path)
    base = ["judge", "agreement", "--judgments", str(judgments), "--human", str(human), "--format", "json",
            "--bootstrap", "50"]

    assert cli_main(base) == 0
    captured = capsys.readouterr()
    plain = json.loads(captured.out)
    plain_err = captured.err

    assert cli_main([*base, "--confusion"]) == 0
    captured = capsys.readouterr()
    both = json.loads(captured.out)
    err = captured.err

    # each left-out row is reported exactly once, with or without --confusion
    for marker in ("judgments.jsonl:3", "'2.5'", "score 9"):
        assert err.count(marker) == 1, (marker, err)
        assert plain_err.count(marker) == 1, (marker, plain_err)

    # the agreement numbers are those computed without --confusion
    assert both["agreement"] == plain

    # by hand: compared items t1..t5; consensus = lower median of the valid human scores:
    # t1 [3, 4] -> 3, t2 3, t3 2 (2.5 left out), t4 0, t5 2 (9 left out); judge 4, 3, 3, 0, 2
    (row,) = plain
    assert row["n"] == 5
    assert row["exact"] == pytest.approx(3 / 5)  # t2, t4, t5
    assert row["within_1"] == pytest.approx(1.0)
    conf = both["confusion"]["groundedness"]
    assert conf["judge"] == [0, 1, 2, 3, 4] and conf["human_consensus"] == [0, 1, 2, 3, 4]
    expected = [[0] * 5 for _ in range(5)]
    for j, h in [(4, 3), (3, 3), (3, 2), (0, 0), (2, 2)]:
        expected[j][h] += 1
    assert conf["counts"] == expected


def test_agreement_and_confusion_matches_the_separate_functions(tmp_path):
    from reteco_measures.judge.agreement import agreement, agreement_and_confusion, confusion_matrices

    judgments, human = _agreement_inputs(tmp_path)
    problems: list = []
    table, conf = agreement_and_confusion(str(judgments), str(human), bootstrap=30, seed=3, problems=problems)
    assert len(problems) == 3  # the broken line, 2.5 and 9: once each
    with pytest.warns(rm.DataFormatWarning):
        alone = agreement(str(judgments), str(human), bootstrap=30, seed=3)
    assert table.equals(alone)
    with pytest.warns(rm.DataFormatWarning):
        matrices = confusion_matrices(str(judgments), str(human))
    assert conf.keys() == matrices.keys() and conf["groundedness"].equals(matrices["groundedness"])


# ------------------------------------------------------------------------------------------------
# 3. the converters' "no such file" check


@pytest.mark.parametrize("convert, what", [(as_run_frame, "run"), (run_frame_with_problems, "run"),
                                           (as_qrels_frame, "qrels")])
def test_missing_file_message(tmp_path, convert, what):
    missing = str(tmp_path / "nothere.txt")
    with pytest.raises(FileNotFoundError, match=f"nothere.txt: no such {what} file"):
        convert(missing)
    assert not os.path.exists(missing)


def test_inline_text_is_not_taken_for_a_path():
    assert as_run_frame("q1 Q0 d1 1 2.5 x\n")["doc_id"].tolist() == ["d1"]
    assert as_qrels_frame("q1 0 d1 2\n")["relevance"].tolist() == [2]
