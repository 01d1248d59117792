"""Shared by the benchmark scripts: interleaved timing rounds, peak memory, Markdown tables.

Each round runs every path once, in the same order, so a change in the machine's load hits all
paths alike; the median over the rounds is reported. Peak memory is the growth of the process's
resident-set high-water mark (``VmHWM``, reset through ``/proc/self/clear_refs``) while one path
runs, measured after the timing rounds; it is ``None`` where ``/proc`` does not allow the reset.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def status_mb(field: str) -> float:
    """A ``/proc/self/status`` field (``VmRSS``, ``VmHWM``) in MiB; NaN where there is none."""
    kib = _status_kib(field)
    return float("nan") if kib is None else kib / 1024.0


def reset_peak() -> None:
    """Reset the process's peak resident set (``VmHWM``; Linux 4.0 and later), where allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_mib(fn: Callable[[], object]) -> float | None:
    """Growth of the peak resident memory while ``fn()`` runs, in MiB (None: not measurable)."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    base = _status_kib("VmRSS")
    fn()
    peak = _status_kib("VmHWM")
    return None if base is None or peak is None else max(peak - base, 0) / 1024


def interleaved(paths: dict[str, Callable[[], object]], rounds: int = 3) -> dict[str, list[float]]:
    """Seconds per path and round; one warm-up call of every path first."""
    for fn in paths.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name, fn in paths.items():
            gc.collect()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)


def machine() -> str:
    """One line: CPU count, load average, Python and platform."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
    return (f"{os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (shared machine), "
            f"Python {platform.python_version()}, {platform.system()} {platform.machine()}")


def markdown(headers: list[str], rows: list[list[object]]) -> str:
    """A Markdown table."""
    def cell(v: object) -> str:
        if v is None:
            return "–"
        if isinstance(v, float):
            return f"{v:.3f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def peak_in_subprocess(script: str, args: list[str], path: str) -> float | None:
    """`peak_mib` of one path in a fresh interpreter (``script ARGS --peak PATH`` prints it), so
    that memory freed by another path but kept by the allocator does not hide a peak."""
    done = subprocess.run([sys.executable, script, *args, "--peak", path], capture_output=True, text=True,
                          check=False)
    try:
        return float(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def size_parser(doc: str | None, *, queries: int = 1000, docs: int = 1000) -> argparse.ArgumentParser:
    """The options every timing script takes: ``--queries --docs`` (the synthetic size),
    ``--rounds``, ``--md`` (write the table there) and the internal ``--peak PATH``."""
    ap = argparse.ArgumentParser(description=(doc or "").splitlines()[0] if doc else None)
    ap.add_argument("--queries", type=int, default=queries)
    ap.add_argument("--docs", type=int, default=docs)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--md", help="write the Markdown table here")
    ap.add_argument("--peak", help=argparse.SUPPRESS)  # internal: peak memory of one path, printed
    return ap


def report(script: str, paths: dict[str, Callable[[], object]], times: dict[str, list[float]], base: str,
           sizes: list[str], title: str, ratio_header: str, md: str | None) -> str:
    """One row per path (median seconds, ratio to ``base``'s median, peak MiB measured in a fresh
    interpreter), the table under ``title`` with the machine; printed, and written to ``md``."""
    ref = median(times[base])
    rows = [[name, median(times[name]), median(times[name]) / ref, peak_in_subprocess(script, sizes, name)]
            for name in paths]
    table = markdown(["path", "seconds (median)", ratio_header, "peak MiB"], rows)
    text = f"{title}\n\n{table}\n\nMachine: {machine()}\n"
    print(text)
    if md:
        Path(md).write_text(text)
    return text
