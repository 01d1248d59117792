"""Harbor reward files: ``score chunqiu|spoken ... --reward-json PATH``.

Harbor reads ``{"reward": r}`` (full 0–1 precision). The Spoken-Query reward is the piecewise
mapping of the raw quality with b = 0.4530094614433184 and a = 15 (written out by hand below);
ChunQiu's reward is its mean nDCG@10, 0 for an invalid batch; a failed audit gates both to 0
before any mapping.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reteco_measures.cli.main import main
from reteco_measures.sample import sample_root

SAMPLE = sample_root()
RUNS = SAMPLE / "runs"
B = 0.4530094614433184
A = 15


def _piecewise(q: float) -> float:  # the Spoken-Query task description's mapping, by hand
    return (A / 100) * q / B if q <= B else A / 100 + (1 - A / 100) * (q - B) / (1 - B)


def _run(capsys, argv: list[str]) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["score", *argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_spoken_reward_file(tmp_path: Path, capsys):
    path = tmp_path / "logs" / "verifier" / "reward.json"
    code, result = _run(capsys, ["spoken", str(RUNS / "spoken.jsonl"), "--data", str(SAMPLE),
                                 "--reward-json", str(path)])
    assert code == 0
    reward = json.loads(path.read_text())
    assert list(reward) == ["reward"]
    q = result["official"]["value"]
    assert reward["reward"] == pytest.approx(_piecewise(q), abs=1e-15)
    assert reward["reward"] == result["reward"]  # full precision, the same double as the score JSON
    details = json.loads((path.parent / "reward_details.json").read_text())
    assert details["raw_quality"] == q and details["valid"] is True and details["gated_to_zero_by"] == []
    assert details["reward_display"] == round(100 * reward["reward"], 1)
    cells = details["groups"]["grid"]
    assert {(c["collection"], c["condition"]) for c in cells if c["collection"] not in ("(macro)", "(all)")}


def test_spoken_audit_failed_gates_to_zero(tmp_path: Path, capsys):
    path = tmp_path / "reward.json"
    _, result = _run(capsys, ["spoken", str(RUNS / "spoken.jsonl"), "--data", str(SAMPLE), "--audit-failed",
                              "--reward-json", str(path)])
    assert json.loads(path.read_text()) == {"reward": 0.0}
    details = json.loads((tmp_path / "reward_details.json").read_text())
    assert details["audit_failed"] is True and details["gated_to_zero_by"] == ["audit failed"]
    assert details["raw_quality"] == result["official"]["value"] > 0  # quality still reported


def test_chunqiu_reward_is_mean_ndcg(tmp_path: Path, capsys):
    path = tmp_path / "reward.json"
    _, result = _run(capsys, ["chunqiu", str(RUNS / "chunqiu.jsonl"), "--data", str(SAMPLE),
                              "--reward-json", str(path)])
    assert json.loads(path.read_text())["reward"] == result["metrics"]["ndcg_10"] > 0


def test_chunqiu_invalid_batch_reward_zero(tmp_path: Path, capsys):
    lines = (RUNS / "chunqiu.jsonl").read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines[:-1]) + "\n")  # a query left out: the batch is invalid
    path = tmp_path / "reward.json"
    code, _ = _run(capsys, ["chunqiu", str(bad), "--data", str(SAMPLE), "--reward-json", str(path)])
    assert code == 1
    assert json.loads(path.read_text()) == {"reward": 0.0}
    details = json.loads((tmp_path / "reward_details.json").read_text())
    assert details["valid"] is False and "invalid batch" in details["gated_to_zero_by"]
    assert details["validation"]["problems"]


def test_reward_json_only_where_a_reward_exists(capsys):
    with pytest.raises(SystemExit):
        main(["score", "reteco-2a", str(RUNS / "reteco_track2.txt"), "--reward-json", "x.json"])


def _txt_equals_json(path: Path) -> float:
    """reward.txt beside reward.json holds the identical value (Harbor reads one or the other)."""
    value = json.loads(path.read_text())["reward"]
    text = (path.with_suffix(".txt")).read_text().strip()
    assert float(text) == value and text == repr(float(value))
    return value


def test_reward_txt_written_beside_with_the_same_value(tmp_path: Path, capsys):
    path = tmp_path / "logs" / "verifier" / "reward.json"
    _, result = _run(capsys, ["spoken", str(RUNS / "spoken.jsonl"), "--data", str(SAMPLE), "--reward-json", str(path)])
    assert _txt_equals_json(path) == result["reward"] and (path.parent / "reward.txt").is_file()
    path = tmp_path / "c" / "reward.json"
    _run(capsys, ["chunqiu", str(RUNS / "chunqiu.jsonl"), "--data", str(SAMPLE), "--reward-json", str(path)])
    assert _txt_equals_json(path) > 0


@pytest.mark.parametrize("make, reason", [
    (lambda d: d / "missing.jsonl", "no such"),
    (lambda d: (d / "bin.jsonl").write_bytes(b"\x1f\x8b\x08\x00garbage") and d / "bin.jsonl", "gz"),
])
def test_crash_guard_unreadable_submission(make, reason, tmp_path: Path, capsys):
    run = make(tmp_path)
    path = tmp_path / "v" / "reward.json"
    code = main(["score", "chunqiu", str(run), "--data", str(SAMPLE), "--reward-json", str(path)])
    assert code != 0
    assert json.loads(path.read_text()) == {"reward": 0.0} and _txt_equals_json(path) == 0.0
    details = json.loads((path.parent / "reward_details.json").read_text())
    assert details["gated_to_zero_by"] == ["scoring failed"] and reason in details["error"]
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_crash_guard_on_a_bug(tmp_path: Path, capsys, monkeypatch):
    from reteco_measures.benchmarks import Benchmark

    def broken(*args, **kwargs):
        raise RuntimeError("simulated bug in the scorer")

    monkeypatch.setattr(Benchmark, "score", broken)
    path = tmp_path / "reward.json"
    code = main(["score", "spoken", str(RUNS / "spoken.jsonl"), "--data", str(SAMPLE), "--reward-json", str(path)])
    assert code == 3 and "internal error" in capsys.readouterr().err
    assert json.loads(path.read_text()) == {"reward": 0.0} and _txt_equals_json(path) == 0.0
    details = json.loads((tmp_path / "reward_details.json").read_text())
    assert details["error"] == "RuntimeError: simulated bug in the scorer" and details["valid"] is False


def test_score_harbor_from_python(tmp_path: Path):
    """The verifier step without the command line: `score_harbor` writes the reward file (the
    Spoken-Query mapping by hand of the score's raw quality) and returns the score; a symbolic
    link is refused with its reason and reward 0, never read."""
    from reteco_measures.platforms import HarborOutcome, score_harbor

    path = tmp_path / "ok" / "reward.json"
    outcome = score_harbor("spoken", RUNS / "spoken.jsonl", path, data=SAMPLE)
    assert isinstance(outcome, HarborOutcome) and outcome.refused is None
    q = float(outcome.score.official)
    assert json.loads(path.read_text())["reward"] == pytest.approx(_piecewise(q), abs=1e-12)
    assert "reteco-harbor-" not in json.dumps(outcome.score.to_dict(), default=str)  # no scratch path shown
    link = tmp_path / "link.jsonl"
    link.symlink_to(RUNS / "spoken.jsonl")
    bad = tmp_path / "bad" / "reward.json"
    refused = score_harbor("spoken", link, bad, data=SAMPLE)
    assert refused.score is None and "symbolic link" in refused.refused
    assert json.loads(bad.read_text()) == {"reward": 0.0}
    assert "submission refused" in json.loads((bad.parent / "reward_details.json").read_text())["error"]
