"""``reteco-measures score BENCHMARK RUN --stream`` and ``leaderboard ... --stream``: the output of
the in-memory command (the same numbers, the same problems), or a clear refusal (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reteco_measures.benchmarks import streaming
from reteco_measures.cli.main import main
from reteco_measures.cli.score_cmd import demo_argv
from reteco_measures.sample import sample_root


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A few hundred bytes per block: the bundled runs are cut into many blocks."""
    monkeypatch.setattr(streaming, "STREAM_BLOCK_BYTES", 300)


def _json(capsys, argv: list[str]) -> tuple[int, dict, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    data = json.loads(out) if out.strip() else {}
    if "validation" in data:  # the same problems; a streamed score lists them block by block
        data["validation"]["problems"] = sorted(json.dumps(p, sort_keys=True) for p in data["validation"]["problems"])
    return code, data, err


@pytest.mark.parametrize("name", ["reteco-1a", pytest.param("reteco-1b", marks=pytest.mark.slow),
                                  pytest.param("reteco-2a", marks=pytest.mark.slow)])
def test_score_stream_prints_the_in_memory_score(name: str, capsys, small_blocks) -> None:
    argv = ["score", name, *demo_argv(name, sample_root()), "--format", "json"]
    code, memory, _ = _json(capsys, argv)
    code_s, streamed, _ = _json(capsys, [*argv, "--stream"])
    assert (code, code_s) == (0, 0)
    assert memory["validation"]["problems"] and memory["validation"]["rows_kept"] > 0
    assert streamed == memory


def test_score_stream_table_has_the_same_numbers(capsys, small_blocks) -> None:
    argv = ["score", "reteco-2a", *demo_argv("reteco-2a", sample_root())]
    assert main(argv) == 0
    memory = capsys.readouterr().out.splitlines()
    assert main([*argv, "--stream"]) == 0
    streamed = capsys.readouterr().out.splitlines()
    assert sorted(memory) == sorted(streamed)  # the problem lines may come in another order
    counts = [line for line in memory if "row(s) kept" in line]
    assert counts and counts == [line for line in streamed if "row(s) kept" in line]


@pytest.mark.parametrize(("name", "why"), [("chunqiu", "valid or invalid as a whole"),
                                           ("spoken", "checks the whole results file")])
def test_score_stream_refused_with_the_reason(name: str, why: str, capsys) -> None:
    assert main(["score", name, *demo_argv(name, sample_root()), "--stream"]) == 2
    err = capsys.readouterr().err
    assert f"{name} cannot be scored in blocks" in err and why in err and "Traceback" not in err


def test_score_stream_of_several_files_is_refused(capsys, tmp_path: Path) -> None:
    argv = demo_argv("reteco-2a", sample_root())
    assert main(["score", "reteco-2a", argv[0], argv[0], *argv[1:], "--stream"]) == 2
    assert "reads a run *file*" in capsys.readouterr().err


def test_score_stream_of_an_ungrouped_run_names_the_line(capsys, tmp_path: Path, small_blocks) -> None:
    argv = demo_argv("reteco-1a", sample_root())
    lines = Path(argv[0]).read_text(encoding="utf-8").splitlines()
    first = lines[0].split()[0]
    path = tmp_path / "ungrouped.txt"
    path.write_text("\n".join(lines[1:] + lines[:1]) + "\n", encoding="utf-8")
    assert main(["score", "reteco-1a", str(path), *argv[1:], "--stream"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{len(lines)}: {first}: the rows of query" in err and "sort the run by query" in err


@pytest.mark.slow  # 3-4 s; the Python-level board equality stays in the inner loop
def test_leaderboard_stream_prints_the_same_board(capsys, tmp_path: Path, small_blocks) -> None:
    argv = demo_argv("reteco-1a", sample_root())
    lines = Path(argv[0]).read_text(encoding="utf-8").splitlines()
    other = tmp_path / "other.txt"
    other.write_text("\n".join(" ".join(f[:4] + [str(float(f[4]) * (1 + (i % 3)))] + f[5:])
                               for i, f in enumerate(line.split() for line in lines)) + "\n", encoding="utf-8")
    board = ["leaderboard", "reteco-1a", argv[0], str(other), *argv[1:], "--format", "json", "--workers", "1"]
    code, memory, _ = _json(capsys, board)
    code_s, streamed, _ = _json(capsys, [*board, "--stream"])
    assert (code, code_s) == (0, 0)
    assert memory["ranking"] and streamed == memory
    assert main(["leaderboard", "chunqiu", *demo_argv("chunqiu", sample_root())[:1] * 2,
                 *demo_argv("chunqiu", sample_root())[1:], "--stream"]) == 2
    assert "chunqiu cannot be scored in blocks" in capsys.readouterr().err
