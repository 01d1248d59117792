"""The JSONL line reader on files of many blank or bad lines: blank lines cost no Python object
each, at most `MAX_PROBLEMS_PER_KIND` problems of a kind are kept, and the counts stay exact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reteco_measures.errors import MAX_PROBLEMS_PER_KIND, count_problems
from reteco_measures.io.jsonl import iter_jsonl


def test_bad_lines_capped_counts_exact():
    # line k (1-based): not JSON when k % 3 == 1, a JSON array when k % 3 == 2, an object otherwise
    lines = [("x" if k % 3 == 1 else "[1]" if k % 3 == 2 else json.dumps({"k": k})) for k in range(1, 9001)]
    problems: list = []
    records = list(iter_jsonl(("\n\n".join(lines) + "\n").encode(), problems))
    assert [k for _, rec in records for k in [rec["k"]]] == list(range(3, 9001, 3))
    assert [line for line, _ in records][:2] == [5, 11]  # blank lines between: line of item k is 2k - 1
    assert count_problems(problems) == 6000 and len(problems) == MAX_PROBLEMS_PER_KIND + 1
    assert [p.line for p in problems[:3]] == [1, 3, 7]
    assert problems[-1].count == 6000 - MAX_PROBLEMS_PER_KIND and "5,000 more" in problems[-1].message


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_three_million_blank_lines_memory(tmp_path: Path):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n" * 2_000_000 + b'{"query_id": "q", "results": []}\n' + b" \n" * 1_000_000)
    child = r"""
import json, sys
from reteco_measures.io.jsonl import iter_jsonl
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
list(iter_jsonl(b'{"a": 1}\n\nx\n', []))
base = peak()
problems = []
records = list(iter_jsonl(sys.argv[1], problems))
print(json.dumps({"growth": peak() - base, "lines": [line for line, _ in records], "problems": len(problems)}))
"""
    out = json.loads(subprocess.run([sys.executable, "-c", child, str(path)], capture_output=True, text=True,
                                    check=True, timeout=300).stdout)
    assert out["lines"] == [2_000_001] and out["problems"] == 0
    assert out["growth"] <= 5 * path.stat().st_size, out
