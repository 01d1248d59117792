"""Bounded reading (reteco_measures.io.limits): line, size and ratio limits, over-long lines,
conflicting qrels grades, and the display of user values in every output."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.errors import DataFormatWarning, InputTooLargeError, Problem, display
from reteco_measures.io.limits import MiB, ReadLimits, guard_long_lines, parse_size, read_limits
from reteco_measures.io.lines import iter_text_chunks
from reteco_measures.sample import sample_root
from reteco_measures.stats.compare import file_run_name

SD = sample_root()
RUN_1A = SD / "runs" / "reteco_track1a_dev.txt"


def cli(*argv: str, cwd: Path | None = None, preexec: str = "") -> subprocess.CompletedProcess:
    """The command line in a subprocess (exit codes, resource limits); ``preexec``: Python run first."""
    code = f"{preexec}\nimport sys\nfrom reteco_measures.cli.main import main\nsys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, cwd=cwd, env=env, timeout=300)


# ------------------------------------------------------------------------------------------------
# display: one place that shows a user value


def test_display_escapes_control_characters_and_cuts_long_values():
    assert display("301\x1b[2J\x1b]0;pwned\x07\x00") == "301\\x1b[2J\\x1b]0;pwned\\x07\\x00"
    assert display("a\tb\nc\r\x7f\x85\u202e") == "a\\tb\\nc\\r\\x7f\\x85\\u202e"
    value = "q" * 104_857_600
    shown = display(value)
    assert shown == "q" * 80 + "… (104,857,600 characters)"
    assert display("é" * 80) == "é" * 80  # 80 characters: shown whole
    assert display("x" * 200, None) == "x" * 200


def test_problem_prefix_and_dict_are_escaped_and_bounded():
    p = Problem("rank 'x' is not an integer", line=1, query_id="301\x1b[2J\x07", path="e\x1b.txt")
    assert str(p) == "e\\x1b.txt:1: 301\\x1b[2J\\x07: rank 'x' is not an integer"
    big = Problem("query id not in the topics", line=1, query_id="z" * 1_000_000, doc_id="d" * 500_000)
    d = big.as_dict()
    assert len(json.dumps(d)) < 1000
    assert d["query_id"].endswith("… (1,000,000 characters)") and d["doc_id"].endswith("… (500,000 characters)")
    assert len(str(big)) < 300
    frame = rm.validate_run(pd.DataFrame({"query_id": ["q\x1b"], "doc_id": ["d"], "score": [1.0]}), "reteco",
                            queries=["q1"]).problems_frame()
    assert "\x1b" not in frame.to_string()


def test_eval_escapes_the_prefix_on_stderr(tmp_path: Path):
    # the reproducer: ESC and BEL in the query id reached the terminal raw
    (tmp_path / "esc.txt").write_bytes(b"301\x1b[2J\x1b]0;pwned\x07 Q0 d1 x 1.0 r\n301 Q0 d2 1 0.5 r\n")
    (tmp_path / "qrels").write_bytes(b"301 0 d2 1\n")
    out = cli("eval", "qrels", "esc.txt", "nDCG@10", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert b"esc.txt:1: 301\\x1b[2J\\x1b]0;pwned\\x07: rank 'x'" in out.stderr
    assert not any(c in out.stderr + out.stdout for c in (b"\x1b", b"\x07", b"\x00"))


def test_run_names_from_file_names_are_escaped():
    assert file_run_name("runs/bm25\x1b[2J.run.gz") == "bm25\\x1b[2J"
    assert file_run_name("runs/bm25.run.gz") == "bm25"


def test_a_huge_query_id_is_never_echoed_whole(tmp_path: Path):
    run = tmp_path / "big.jsonl"
    qid = "z" * 2_000_000
    run.write_text(json.dumps({"query_id": qid, "results": [{"doc_id": "d1", "score": 1.0}]}) + "\n"
                   + json.dumps({"query_id": "q1", "results": [{"doc_id": "d1", "score": 1.0}]}) + "\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    out = cli("eval", "qrels", str(run), "nDCG@10", "--max-line-bytes", "4M", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(out.stderr) + len(out.stdout) < 20_000, len(out.stderr)


# ------------------------------------------------------------------------------------------------
# over-long lines


def test_a_line_over_the_limit_is_a_problem_of_that_line(tmp_path: Path):
    path = tmp_path / "long.txt"
    path.write_bytes(b"q1 Q0 d1 1 1.0 r\n" + b"q1 Q0 " + b"x" * (2 * MiB) + b" 2 0.5 r\nq1 Q0 d3 3 0.2 r\n")
    for source in (path, path.read_bytes()):
        frame = rm.read_run(source, on_bad_lines="skip", line_numbers=True)
        assert frame["doc_id"].tolist() == ["d1", "d3"] and frame["line"].tolist() == [1, 3]
        (p,) = frame.attrs["problems"]
        assert (p.line, p.kind, p.severity) == (2, "long_line", "error")
        assert "1,048,576 bytes" in p.message
    assert len(rm.read_run(path, on_bad_lines="skip", max_line_bytes=4 * MiB)) == 3
    with read_limits(max_line_bytes=4 * MiB):
        assert len(rm.read_run(path, on_bad_lines="skip")) == 3
    with pytest.raises(rm.DataFormatError, match="long.txt:2: -: line longer than"):
        rm.read_run(path, on_bad_lines="error")
    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes(b"q1 0 d1 1\n" + b"q1 0 " + b"d" * (2 * MiB) + b" 1\n")
    frame = rm.read_qrels(qrels, on_bad_lines="skip")
    assert len(frame) == 1 and [p.kind for p in frame.attrs["problems"]] == ["long_line"]


def test_guard_long_lines_matches_a_plain_split():
    """Pieces cut anywhere: the output is the input with every line over the limit emptied."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        lines = [b"a" * rng.choice([0, 1, 5, 9, 10, 11, 30]) for _ in range(rng.randrange(1, 12))]
        data = b"\n".join(lines) + rng.choice([b"", b"\n"])
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(0, 6)))) if len(data) > 1 else []
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
        problems: list = []
        got = b"".join(guard_long_lines(pieces, 10, "f", problems))
        parts = data.split(b"\n")
        want = b"\n".join(b"" if len(x) > 10 else x for x in parts)
        assert got == want, (pieces, got, want)
        assert [p.line for p in problems] == [i + 1 for i, x in enumerate(parts) if len(x) > 10]


def test_the_checking_path_rereads_with_the_same_guard(tmp_path: Path):
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1\tQ0 d1 1 1.0 r\n" + b"y" * (3 * MiB) + b"\nq1 Q0 d2 2 0.5 r\n")
    chunks = b"".join(iter_text_chunks(path, 1 << 16, max_line_bytes=MiB))
    assert chunks == b"q1\tQ0 d1 1 1.0 r\n\nq1 Q0 d2 2 0.5 r\n"
    frame = rm.read_run(path, on_bad_lines="skip")
    assert frame["doc_id"].tolist() == ["d1", "d2"]


@pytest.mark.slow
def test_one_100mb_line_stays_near_its_size(tmp_path: Path):
    """The reproducer: a file of one 100 MB line peaked at 1.96 GB; it is now refused as a line."""
    path = tmp_path / "one.txt"
    path.write_bytes(b"q1 Q0 " + b"x" * 100_000_000 + b" 1 1.0 r\n")
    # the peak resident memory of the child itself: VmHWM of its own address space (ru_maxrss of a
    # child started by fork can still count the parent's pages, i.e. the test process's size)
    code = ("import reteco_measures as rm\n"
            f"f = rm.read_run({str(path)!r}, on_bad_lines='skip')\n"
            "hwm = next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:'))\n"
            "print(len(f), f.attrs['problems'][0].kind, hwm)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    rows, kind, rss_kb = out.stdout.split()
    assert (rows, kind) == ("0", "long_line")
    assert int(rss_kb) * 1024 < 600_000_000, rss_kb  # interpreter + libraries + the file's bytes


# ------------------------------------------------------------------------------------------------
# size, line and ratio limits: every entry point, exit 1


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gzip file of 256 MiB of newlines (about 260 KB compressed: a ratio of about 1,000)."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.txt.gz"
    with gzip.open(path, "wb", compresslevel=9) as f:
        block = b"\n" * MiB
        for _ in range(256):
            f.write(block)
    return path


def test_the_bomb_is_refused_in_python(bomb: Path):
    with pytest.raises(InputTooLargeError, match="decompresses to more than 200 times its size") as info:
        rm.read_run(bomb)
    assert info.value.problems[0].kind == "too_large" and info.value.problems[0].path == str(bomb)
    with read_limits(max_ratio=None, max_lines=1000):
        with pytest.raises(InputTooLargeError, match="more than 1,000 lines"):
            rm.read_qrels(bomb)


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["eval", "{qrels}", "{bomb}", "nDCG@10"],
    ["compare", "{qrels}", "{run}", "{bomb}", "nDCG@10"],
    ["score", "reteco-1a", "{bomb}", "--data", "{sd}", "--split", "dev"],
])
def test_every_entry_point_stops_the_bomb(bomb: Path, tmp_path: Path, argv: list[str]):
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\n")
    run = tmp_path / "a.txt"
    run.write_text("q1 Q0 d1 1 1.0 r\n")
    args = [a.format(qrels=qrels, bomb=bomb, run=run, sd=SD) for a in argv]
    out = cli(*args, preexec="import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))")
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    assert b"decompresses to more than 200 times its size" in out.stderr and b"--max-ratio" in out.stderr
    assert b"internal error" not in out.stderr


@pytest.mark.slow
def test_leaderboard_does_not_rank_the_bomb(bomb: Path, tmp_path: Path):
    out = cli("leaderboard", "reteco-1a", str(RUN_1A), str(bomb), "--data", str(SD), "--split", "dev")
    assert out.returncode in (1, 2), out.stderr[-2000:]
    assert b"decompresses to more than 200 times its size" in out.stderr + out.stdout


@pytest.mark.slow
def test_max_lines_and_max_unpacked_flags(tmp_path: Path):
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 1.0 r\n" * 3)
    ok = cli("eval", "qrels", "run.txt", "P@1", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    out = cli("eval", "qrels", "run.txt", "P@1", "--max-lines", "2", cwd=tmp_path)
    assert out.returncode == 1 and b"run.txt: -: more than 2 lines" in out.stderr and b"--max-lines" in out.stderr
    out = cli("eval", "qrels", "run.txt", "P@1", "--max-unpacked", "20", cwd=tmp_path)
    assert out.returncode == 1 and b"--max-unpacked" in out.stderr
    assert parse_size("4G") == 4 << 30 and parse_size("512M") == 512 << 20 and parse_size("100") == 100


def test_a_ten_million_line_run_is_within_the_defaults(tmp_path: Path):
    limits = ReadLimits()
    assert limits.max_lines >= 10_000_000
    # 10 million lines (blank but one) compressed: read, not refused
    path = tmp_path / "ten.txt.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b"\n" * 9_999_999 + b"q1 Q0 d1 1 1.0 r\n")
    frame = rm.read_run(path, line_numbers=True)
    assert frame["line"].tolist() == [10_000_000]


def test_memory_error_is_named_with_the_file(tmp_path: Path):
    """Under an address-space limit too small for the file, the command names the file and what to
    change, exit 1 (never 'internal error', exit 3)."""
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1\tQ0 d1 1 1.0 r\n" * 2_000_000)  # 36 MB, the checking path
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    pre = ("import resource, reteco_measures.cli.main, pandas, pyarrow, numpy, ir_measures\n"
           "import reteco_measures.io.readers, reteco_measures.api, reteco_measures.engine.evaluate\n"
           "used = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()\n"
           "resource.setrlimit(resource.RLIMIT_AS, (used + (40 << 20), used + (40 << 20)))")
    out = cli("eval", "qrels", "run.txt", "nDCG@10", cwd=tmp_path, preexec=pre)
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    assert b"internal error" not in out.stderr
    assert b"run.txt" in out.stderr and b"did not fit in memory" in out.stderr and b"--stream" in out.stderr


# ------------------------------------------------------------------------------------------------
# qrels judging a pair twice


def test_conflicting_grades_warn_with_both_lines(tmp_path: Path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 0\nq1 0 d1 -1\nq1 0 d2 1\nq1 0 d2 1\nq2 0 d1 2\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = rm.read_qrels(path)
    assert len(frame) == 5  # rows kept, as pytrec_eval reads them
    conflict, repeat = frame.attrs["problems"]
    assert (conflict.kind, conflict.severity, conflict.line, conflict.query_id, conflict.doc_id) == (
        "conflicting_grade", "warning", 2, "q1", "d1")
    assert "line 1 grade 0, line 2 grade -1; grade -1" in conflict.message
    assert (repeat.kind, repeat.severity, repeat.line) == ("repeated_judgment", "note", 4)
    msgs = [str(w.message) for w in caught if issubclass(w.category, DataFormatWarning)]
    assert len(msgs) == 1 and "qrels.txt:2: q1: document d1 judged twice" in msgs[0]
    # not an error under on_bad_lines='error', and pytrec_eval's reading (last grade) is what is used
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataFormatWarning)
        rm.read_qrels(path, on_bad_lines="error")
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator({"q1": {"d1": -1, "d2": 1}}, {"ndcg"})
    want = ev.evaluate({"q1": {"d1": 2.0, "d2": 1.0}})["q1"]["ndcg"]
    got = rm.calc_aggregate(["nDCG"], rm.read_qrels(path, on_bad_lines="skip")
                            .query("query_id == 'q1'"),
                            pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]}))
    assert abs(list(got.values())[0] - want) < 1e-9


def test_conflicting_grades_on_the_command_line(tmp_path: Path):
    (tmp_path / "qrels").write_text("q1 0 d1 0\nq1 0 d1 -1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 r\n")
    out = cli("eval", "qrels", "run", "P@1", cwd=tmp_path)
    assert b"qrels:2: q1: document d1 judged twice with different grades: line 1 grade 0, line 2 grade -1" \
        in out.stderr


def test_conflicting_grades_reach_the_scorers_readers(tmp_path: Path):
    """The benchmark scorers read their qrels with the same reader: TEMPO warns, RECOR keeps the
    problem among the data problems."""
    from reteco_measures.benchmarks.recor.data import read_recor_qrels
    from reteco_measures.benchmarks.tempo.data import read_tempo_qrels

    path = tmp_path / "qrels.txt"
    path.write_text("q1_turn_1 0 d1 1\nq1_turn_1 0 d1 0\n")
    with pytest.warns(DataFormatWarning, match="judged twice with different grades: line 1 grade 1, line 2 grade 0"):
        read_tempo_qrels(path)
    _, problems = read_recor_qrels(path)
    assert [p.kind for p in problems] == ["conflicting_grade"]
