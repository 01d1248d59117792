"""Hostile submissions on Codabench and Harbor: set-up faults named as set-up faults, unscorable
runs that say why, the uploaded name instead of the scratch path, no control character or huge
field on any output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reteco_measures.platforms.codabench import MISCONFIGURED, score_codabench
from reteco_measures.platforms.submission import SubmissionLimits
from reteco_measures.sample import sample_root

SD = sample_root()
IN_PROCESS = SubmissionLimits(max_seconds=None, max_memory=None)


def cli(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    code = "import sys\nfrom reteco_measures.cli.main import main\nsys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def _codabench_input(tmp_path: Path, run_text: str, ref: Path | None) -> Path:
    inp = tmp_path / "in"
    (inp / "res").mkdir(parents=True)
    (inp / "res" / "sub.txt").write_text(run_text)
    if ref is None:
        (inp / "ref").mkdir()
    else:
        shutil.copytree(ref, inp / "ref")
    return inp


@pytest.mark.parametrize("benchmark", ["reteco-1a", "ikat-2023"])
def test_empty_reference_folder_is_a_setup_fault(tmp_path: Path, benchmark: str):
    run = (SD / "runs" / "reteco_track1a_dev.txt").read_text()
    inp = _codabench_input(tmp_path, run, None)
    out = cli("codabench", "score", "--benchmark", benchmark, str(inp), str(tmp_path / "out"))
    assert out.returncode == 2, (out.returncode, out.stdout[-2000:], out.stderr[-2000:])
    log = out.stdout + out.stderr
    assert "set-up error" in log and str(inp / "ref") in log  # the organiser learns what is missing
    page = (tmp_path / "out" / "detailed_results.html").read_text()
    assert "scorer is misconfigured" in page and MISCONFIGURED.split(":")[0] in page
    assert str(inp / "ref") not in page and "invalid submission" not in page


def test_wrong_query_ids_list_the_lines(tmp_path: Path):
    lines = (SD / "runs" / "reteco_track2.txt").read_text().splitlines()[:3]
    run = "".join("zz_111149_turn_1 " + line.split(" ", 1)[1] + "\n" for line in lines)
    inp = _codabench_input(tmp_path, run, SD)
    res = score_codabench(inp, tmp_path / "out", "reteco-2a", limits=IN_PROCESS, limit=3)
    assert res.exit_code == 1
    text = "\n".join(res.messages)
    assert "sub.txt:1: zz_111149_turn_1: query id not in the topics" in text
    assert "sub.txt:2: zz_111149_turn_1: query id not in the topics" in text
    assert "... and " in text  # capped at limit=3 lines, with a count
    page = (tmp_path / "out" / "detailed_results.html").read_text()
    assert "sub.txt:3: zz_111149_turn_1: query id not in the topics" in page


def test_no_control_character_reaches_the_page(tmp_path: Path):
    lines = (SD / "runs" / "reteco_track2.txt").read_text().splitlines()[:2]
    run = "".join("zz\x1b[2J\x07\x00 " + line.split(" ", 1)[1] + "\n" for line in lines)
    inp = _codabench_input(tmp_path, run, SD)
    res = score_codabench(inp, tmp_path / "out", "reteco-2a", limits=IN_PROCESS)
    page = (tmp_path / "out" / "detailed_results.html").read_text()
    assert "zz\\x1b[2J\\x07\\x00" in page
    for c in ("\x1b", "\x07", "\x00"):
        assert c not in page and c not in "\n".join(res.messages)


def test_a_huge_query_id_is_cut_in_every_output(tmp_path: Path):
    """The reproducer, scaled to 5 MB: the id was echoed whole in stderr, the page and the details."""
    data = (SD / "runs" / "chunqiu.jsonl").read_text()
    big = json.dumps({"query_id": "z" * 5_000_000, "results": [{"doc_id": "cq00036", "score": 0.8}]})
    (tmp_path / "big.jsonl").write_text(big + "\n" + data)
    out = cli("score", "chunqiu", "big.jsonl", "--data", str(SD), "--reward-json", "o/reward.json",
              "--max-line-bytes", "8M", cwd=tmp_path)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    assert len(out.stdout) + len(out.stderr) < 50_000
    for f in (tmp_path / "o").iterdir():
        assert f.stat().st_size < 200_000, f
    inp = tmp_path / "in"
    (inp / "res").mkdir(parents=True)
    shutil.copy(tmp_path / "big.jsonl", inp / "res" / "big.jsonl")
    shutil.copytree(SD, inp / "ref")
    score_codabench(inp, tmp_path / "out", "chunqiu", limits=IN_PROCESS)
    assert (tmp_path / "out" / "detailed_results.html").stat().st_size < 200_000


def test_harbor_prints_the_uploaded_name(tmp_path: Path):
    data = (SD / "runs" / "chunqiu.jsonl").read_text()
    bad = json.dumps({"query_id": "cq-unknown", "results": [{"doc_id": "cq00036", "score": 0.8}]})
    (tmp_path / "x.jsonl").write_text(bad + "\n" + data)
    out = cli("score", "chunqiu", "x.jsonl", "--data", str(SD), "--reward-json", "o/reward.json", cwd=tmp_path)
    assert "reteco-harbor-" not in out.stdout + out.stderr
    assert "x.jsonl:1: cq-unknown" in out.stdout + out.stderr
