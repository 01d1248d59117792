"""``io.memory``: freed memory goes back to the operating system.

The check is the process's resident size (``/proc/self/statm``), read before and after: a heap
whose freed blocks lie between blocks still in use keeps them resident until ``trim_heap``.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                           reason="malloc_trim is glibc's")

_CHILD = """
from reteco_measures.io.memory import trim_heap

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096

blocks = [bytes(2048) + bytes([i % 256]) for i in range(50_000)]  # 100 MB of small blocks
keep = blocks[::100]  # every hundredth stays: the heap cannot shrink from its top
del blocks
before = rss()
released = trim_heap()
print(released, before - rss())
"""


@glibc
def test_trim_heap_returns_the_free_pages_between_used_blocks() -> None:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
                         ).stdout.split()
    assert out[0] == "True"
    assert int(out[1]) > 50 * 2**20  # about 100 MB freed by the program, resident until trimmed
