"""``benchmarks/reteco_track2.py``: ``--hash-turn-ids`` is about the run's ids; the organisers'
own qrels (written ``<conversation_id>#turn<t>``) are read under either policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reteco_measures.cli.main import main


def _qrels_rows(folder: Path) -> list[tuple[str, str, int]]:
    rows = []
    for line in (folder / "qrels.txt").read_text().splitlines():
        if line.strip():
            q, _, d, r = line.split()
            rows.append((q, d, int(r)))
    return rows


def _official(capsys, argv: list[str]) -> float:
    assert main(argv + ["--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["official"]["value"]


def test_reject_policy_accepts_the_organisers_qrels(recor_sample_dir: Path, tmp_path: Path, capsys) -> None:
    rows = _qrels_rows(recor_sample_dir)
    assert any("#turn" in q for q, _, _ in rows)  # the organisers' form
    # a perfect run in the release form: every judged document of every turn, relevant ones first
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q.replace('#turn', '_turn_')} Q0 {d} 1 {1.0 + r} r\n" for q, d, r in rows))
    argv = ["score", "reteco-2a", str(run), "--data", str(recor_sample_dir)]
    assert _official(capsys, argv) == pytest.approx(1.0)
    assert _official(capsys, [*argv, "--hash-turn-ids", "reject"]) == pytest.approx(1.0)


def test_reject_policy_still_rejects_the_runs_hash_ids(recor_sample_dir: Path, tmp_path: Path, capsys) -> None:
    rows = _qrels_rows(recor_sample_dir)
    turns = sorted({q for q, _, _ in rows})
    # the first turn of each conversation written in the '#turn' form in the run
    first = {q for q in turns if q.endswith("#turn1")}
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q if q in first else q.replace('#turn', '_turn_')} Q0 {d} 1 {1.0 + r} r\n"
                           for q, d, r in rows))
    argv = ["score", "reteco-2a", str(run), "--data", str(recor_sample_dir)]
    assert _official(capsys, argv) == pytest.approx(1.0)  # normalised
    # rejected: those turns score 0, every other turn 1 (TurnNDCG: the mean over the qrels' turns)
    assert _official(capsys, [*argv, "--hash-turn-ids", "reject"]) == pytest.approx(1 - len(first) / len(turns))
