"""Memory and problem counts of the TREC run reader on files of millions of bad or blank lines.

Peak memory is measured from outside the reader: a child interpreter imports the package, reads a
tiny file (so that lazy imports and allocator arenas are in the baseline), records its peak
resident set (``VmHWM`` in ``/proc/self/status``), reads the big file and records the peak again.
The growth must stay within 5 times the file's size. The files: 5 million lines of ``x`` (10 MB,
every line a bad one), 5 million blank lines (5 MB) and a clean run of 2 million lines (about
60 MB; 2 million rather than 5 to keep the test's time short).

Counts are exact whatever the cap on kept `Problem` values (`MAX_PROBLEMS_PER_KIND`): expected
counts come from how the files are written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import reteco_measures as rm
from reteco_measures.errors import MAX_PROBLEMS_PER_KIND, DataFormatError, count_problems
from reteco_measures.io.readers import read_run_with_problems

# memory: millions of lines read in child processes (run by CI; skipped by -m "not slow")
pytestmark = [pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)"), pytest.mark.slow]

_CHILD = r"""
import json, sys, time
from reteco_measures.errors import count_problems
from reteco_measures.io.readers import read_run_with_problems

def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

read_run_with_problems(sys.argv[2])  # warm-up: lazy imports, allocator arenas
base = peak()
start = time.perf_counter()
frame, problems = read_run_with_problems(sys.argv[1])
print(json.dumps({"growth": peak() - base, "rows": len(frame), "kept": len(problems),
                  "count": count_problems(problems), "by_kind": count_problems(problems, by="kind"),
                  "seconds": time.perf_counter() - start,
                  "first_lines": [p.line for p in problems[:3]]}))
"""


def _measure(path: Path, tmp_path: Path) -> dict:
    tiny = tmp_path / "tiny.txt"
    tiny.write_bytes(b"q 0 d 1 1 r\nx\n\nq 0 d 1 x r\n")
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tiny)], capture_output=True, text=True,
                         timeout=300, check=True)
    return json.loads(out.stdout)


def test_five_million_bad_lines(tmp_path: Path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"x\n" * 5_000_000)
    got = _measure(path, tmp_path)
    assert got["rows"] == 0 and got["count"] == 5_000_000 and got["by_kind"] == {"format": 5_000_000}
    assert got["kept"] == MAX_PROBLEMS_PER_KIND + 1  # the first 1,000 and one summary of the rest
    assert got["first_lines"] == [1, 2, 3]
    assert got["growth"] <= 5 * path.stat().st_size, got
    assert got["seconds"] < 60


def test_five_million_blank_lines(tmp_path: Path):
    path = tmp_path / "blank.txt"
    path.write_bytes(b"\n" * 5_000_000)
    got = _measure(path, tmp_path)
    assert got["rows"] == 0 and got["count"] == 0
    assert got["growth"] <= 5 * path.stat().st_size, got


@pytest.mark.parametrize("sep", [" ", "\t "])  # single spaces: the arrow path; a tab and a space: the checking path
def test_clean_run(sep: str, tmp_path: Path):
    n = 2_000_000
    i = np.arange(n)
    path = tmp_path / "run.txt"
    with open(path, "w") as f:
        step = 200_000
        for lo in range(0, n, step):
            f.write("".join(f"q{a // 1000}{sep}Q0 d{a % 997} {a % 1000 + 1} {1000 - a % 1000}.5 run\n"
                            for a in i[lo:lo + step].tolist()))
    got = _measure(path, tmp_path)
    assert got["rows"] == n and got["count"] == 0
    assert got["growth"] <= 5 * path.stat().st_size, got


def test_counts_exact_across_blocks_and_kinds(tmp_path: Path):
    """300,000 lines over many blocks: line k (1-based) is short when k % 5 == 0, has the score
    ``nan`` when k % 5 == 3, a blank line when k % 7 == 0 (and not short), else good."""
    lines = []
    short = bad_score = blank = good = 0
    for k in range(1, 300_001):
        if k % 5 == 0:
            lines.append("q1 Q0 d1 1")
            short += 1
        elif k % 7 == 0:
            lines.append("   ")
            blank += 1
        elif k % 5 == 3:
            lines.append(f"q1\tQ0 d{k} 1 nan r")
            bad_score += 1
        else:
            lines.append(f"q1\tQ0 d{k} 1 0.5 r")
            good += 1
    path = tmp_path / "run.txt"
    path.write_text("\n".join(lines) + "\n")
    frame, problems = read_run_with_problems(path)
    assert len(frame) == good
    assert count_problems(problems, by="kind") == {"format": short, "score": bad_score}
    assert len(problems) == 2 * MAX_PROBLEMS_PER_KIND + 2
    listed = [p for p in problems if p.count == 1]
    assert [p.line for p in listed if p.kind == "format"][:3] == [5, 10, 15]
    assert [p.line for p in listed if p.kind == "score"][:3] == [3, 8, 13]
    assert all(p.line % 5 == 3 for p in listed if p.kind == "score")
    summary = {p.kind: p for p in problems if p.count > 1}
    assert summary["format"].count == short - MAX_PROBLEMS_PER_KIND and f"{short - 1000:,} more" in summary[
        "format"].message
    # a bad line loses only itself: the good lines are all there, in order
    assert frame["doc_id"].iloc[:3].tolist() == ["d1", "d2", "d4"]
    # every consumer sees the true total
    with pytest.warns(rm.errors.DataFormatWarning, match=f"skipped {short + bad_score} bad row"):
        rm.read_run(path)
    with pytest.raises(DataFormatError, match=f"^{short + bad_score} problem"):
        rm.read_run(path, on_bad_lines="error")
    report = rm.validate_run(path, "reteco")
    assert report.problem_counts()["format"] == short and report.problem_counts()["score"] == bad_score


_QRELS_CHILD = _CHILD.replace("read_run_with_problems", "read_qrels_with_problems").replace(
    "read_qrels_with_problems(sys.argv[1])", "read_qrels_with_problems(sys.argv[1], 'trec')")


@pytest.mark.parametrize("content, bad", [(b"x\n", 5_000_000), (b"\n", 0)])
def test_qrels_five_million_bad_or_blank_lines(content: bytes, bad: int, tmp_path: Path):
    path = tmp_path / "qrels.txt"
    path.write_bytes(content * 5_000_000)
    tiny = tmp_path / "tiny.txt"
    tiny.write_bytes(b"q 0 d 1\nx\n\nq 0 d x\n")
    out = subprocess.run([sys.executable, "-c", _QRELS_CHILD, str(path), str(tiny)], capture_output=True,
                         text=True, timeout=300, check=True)
    got = json.loads(out.stdout)
    assert got["rows"] == 0 and got["count"] == bad
    assert got["growth"] <= 5 * path.stat().st_size, got
