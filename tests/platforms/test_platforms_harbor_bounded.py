"""Harbor's ``score BENCH RUN --reward-json PATH`` reads the submission through the bounded reader
(platforms/submission.py): a decompression bomb, a zip bomb and a symbolic link end in reward 0 in
both reward files, the reason in the details file and exit 1; a valid run scores as before (the
same reward as without the bounded reader, checked against the piecewise mapping by hand in
test_platform_harbor.py)."""

from __future__ import annotations

import gzip
import json
import os
import zipfile
from pathlib import Path

import pytest

from reteco_measures.cli.main import main
from reteco_measures.platforms.submission import SubmissionLimits
from reteco_measures.sample import sample_root

SAMPLE = sample_root()
RUNS = SAMPLE / "runs"


def _score(capsys, run: Path, reward: Path, bench: str = "chunqiu") -> tuple[int, str]:
    capsys.readouterr()
    code = main(["score", bench, str(run), "--data", str(SAMPLE), "--reward-json", str(reward), "--format", "json"])
    return code, capsys.readouterr().err


def _reward_zero(reward: Path) -> dict:
    """Reward 0 in reward.json and the identical value in reward.txt; the details."""
    assert json.loads(reward.read_text()) == {"reward": 0.0}
    assert reward.with_suffix(".txt").read_text().strip() == "0.0"
    details = json.loads((reward.parent / "reward_details.json").read_text())
    assert details["reward"] == 0.0 and details["valid"] is False and details["gated_to_zero_by"] == ["scoring failed"]
    return details


def _gzip_bomb(path: Path, size: int) -> Path:
    """``size`` newlines, gzip-compressed (about 1,000 times smaller), written in pieces."""
    with gzip.open(path, "wb", compresslevel=9) as f:
        piece = b"\n" * (1 << 20)
        for _ in range(size // len(piece)):
            f.write(piece)
    return path


def test_gzip_bomb_reward_zero(tmp_path: Path, capsys):
    limit = SubmissionLimits().max_bytes
    bomb = _gzip_bomb(tmp_path / "results.jsonl.gz", limit + (1 << 20))
    assert bomb.stat().st_size < limit // 500  # small on disk, over the limit once decompressed
    reward = tmp_path / "verifier" / "reward.json"
    code, err = _score(capsys, bomb, reward)
    assert code == 1  # refused submission: exit 1, as an invalid one
    details = _reward_zero(reward)
    assert "submission refused" in details["error"] and "the limit for one submission" in details["error"]
    assert "results.jsonl.gz" in details["error"] and "submission refused" in err


def test_zip_bomb_reward_zero(tmp_path: Path, capsys):
    bomb = tmp_path / "results.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("results.jsonl", "w", force_zip64=True) as f:
            piece = b"\n" * (1 << 20)
            for _ in range(SubmissionLimits().max_bytes // len(piece) + 1):
                f.write(piece)
    reward = tmp_path / "reward.json"
    code, _ = _score(capsys, bomb, reward)
    assert code == 1
    assert "the limit for one submission" in _reward_zero(reward)["error"]


def test_symlink_reward_zero_target_never_read(tmp_path: Path, capsys):
    secret = tmp_path / "qrels.txt"
    secret.write_text("q1 0 SECRET-DOC 1\n")
    link = tmp_path / "results.jsonl"
    os.symlink(secret, link)
    reward = tmp_path / "v" / "reward.json"
    code, err = _score(capsys, link, reward)
    assert code == 1
    details = _reward_zero(reward)
    assert "symbolic link" in details["error"] and "SECRET-DOC" not in json.dumps(details) + err


def test_link_to_a_valid_run_is_refused_too(tmp_path: Path, capsys):
    link = tmp_path / "results.jsonl"
    os.symlink(RUNS / "chunqiu.jsonl", link)
    code, _ = _score(capsys, link, tmp_path / "reward.json")
    assert code == 1 and "symbolic link" in _reward_zero(tmp_path / "reward.json")["error"]


@pytest.mark.parametrize("wrap", ["plain", "gzip", "zip"])
def test_valid_run_scores_as_before(wrap: str, tmp_path: Path, capsys):
    """The same reward as ``score chunqiu`` without --reward-json (the mean nDCG@10), whether the
    run is plain, gzip-compressed or zipped; the details name the participant's file, never the
    scratch folder."""
    capsys.readouterr()
    main(["score", "chunqiu", str(RUNS / "chunqiu.jsonl"), "--data", str(SAMPLE), "--format", "json"])
    expected = json.loads(capsys.readouterr().out)["metrics"]["ndcg_10"]
    data = (RUNS / "chunqiu.jsonl").read_bytes()
    run = tmp_path / "results.jsonl"
    if wrap == "plain":
        run.write_bytes(data)
    elif wrap == "gzip":
        run = tmp_path / "results.jsonl.gz"
        run.write_bytes(gzip.compress(data))
    else:
        run = tmp_path / "results.zip"
        with zipfile.ZipFile(run, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("results.jsonl", data)
    reward = tmp_path / "out" / "reward.json"
    code, _ = _score(capsys, run, reward)
    assert code == 0
    value = json.loads(reward.read_text())["reward"]
    assert value == expected > 0 and reward.with_suffix(".txt").read_text().strip() == repr(value)
    details = (reward.parent / "reward_details.json").read_text()
    assert "reteco-harbor-" not in details and json.loads(details)["valid"] is True


def test_a_folder_holding_one_run_is_read(tmp_path: Path, capsys):
    folder = tmp_path / "res"
    folder.mkdir()
    (folder / "results.jsonl").write_bytes((RUNS / "chunqiu.jsonl").read_bytes())
    code, _ = _score(capsys, folder, tmp_path / "reward.json")
    assert code == 0 and json.loads((tmp_path / "reward.json").read_text())["reward"] > 0


def test_scoring_runs_within_the_time_and_memory_limits(tmp_path: Path, capsys):
    """The valid sample run is scored in a child process (``run_bounded``, as on Codabench, whose
    tests cover the memory limit): a time limit it cannot meet (1 ms) ends in reward 0, the reason
    in the details file and exit 1; without limits (0) it scores as with the defaults."""
    run = RUNS / "chunqiu.jsonl"
    outcomes = {}
    for name, extra in {"time": ["--max-seconds", "0.001"],
                        "none": ["--max-seconds", "0", "--max-memory", "0"], "default": []}.items():
        reward = tmp_path / name / "reward.json"
        capsys.readouterr()
        code = main(["score", "chunqiu", str(run), "--data", str(SAMPLE), "--reward-json", str(reward),
                     "--format", "json", *extra])
        outcomes[name] = (code, reward, capsys.readouterr().err)
    code, reward, err = outcomes["time"]
    assert code == 1, err
    details = _reward_zero(reward)
    assert "submission refused" in details["error"] and "scoring stopped" in details["error"], details["error"]
    assert outcomes["none"][0] == outcomes["default"][0]
    assert json.loads(outcomes["none"][1].read_text()) == json.loads(outcomes["default"][1].read_text())
    assert json.loads(outcomes["default"][1].read_text())["reward"] > 0
