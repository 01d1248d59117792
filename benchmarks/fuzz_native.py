"""Fuzz the C tokenizer of ``rm.read_run`` under AddressSanitizer and UndefinedBehaviorSanitizer.

    python benchmarks/fuzz_native.py [--seconds 120] [--seed 0]

Builds ``reteco_measures/io/_runparse.c`` with ``-fsanitize=address,undefined`` into a temporary
folder (needs gcc), then runs itself again with the sanitizer runtimes preloaded and calls
``parse_chunk`` and ``count_lines`` directly on random inputs: byte soup, fragments of run lines
(long digit strings, huge exponents, control and non-ASCII bytes), random ranges, and output
buffers of random, often too small, sizes. Any out-of-bounds access or undefined behaviour
aborts with the sanitizer's report; otherwise the number of cases is printed. ``ValueError``
(a buffer the function refuses) is an allowed outcome. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "reteco_measures" / "io" / "_runparse.c"

PIECES = [b"q", b"Q0", b"doc", b" ", b"  ", b"\n", b"\t", b"1", b"-", b"+", b".", b"e", b"E", b"9" * 25,
          b"0" * 30, b"\x80", b"\xff", b"\x00", b"\x7f", b"#", b"1e400", b"1e-400", b"123456789012345678",
          b"0.1", b"x" * 20, b"12345678901234567", b"e99999999", b"q Q0 d 1 1 r\n",
          b"q Q0 d 1 0.123456789012345678 r\n", b"q Q0 d 999999999999999999 1 r\n"]


def build(folder: str) -> None:
    include = sysconfig.get_paths()["include"]
    target = Path(folder) / ("_runparse" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-g", "-fsanitize=address,undefined",
                    "-fno-omit-frame-pointer", f"-I{include}", str(SOURCE), "-o", str(target)], check=True)


def fuzz(folder: str, seconds: float, seed: int) -> int:
    import numpy as np

    sys.path.insert(0, folder)
    sys.path.insert(1, str(HERE.parent))
    import _runparse as rp  # the sanitized build

    from reteco_measures.io.readers import _power_table

    rp.set_powers(_power_table())
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    cases = 0
    while time.monotonic() < deadline:
        if rng.random() < 0.3:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 200)))
        else:
            data = b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 60)))
        buf = np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8)
        start = rng.randint(0, len(data))
        end = rng.randint(start, len(data))

        def rows() -> int:
            return rng.randint(0, 12)

        def text(size: int = len(data)) -> np.ndarray:
            return np.empty(rng.randint(0, size + 2), np.uint8)

        args = [np.empty(rows(), np.int64), text(), np.empty(rows(), np.int64), text(), np.empty(rows(), np.int64),
                text(), np.empty(rows(), np.int64), np.empty(rows(), np.float64), np.empty(rows(), np.int64),
                np.empty(rows(), np.int64), text()]
        try:
            rp.parse_chunk(buf, start, end, *args)
        except ValueError:
            pass
        rp.count_lines(buf, start, end)
        cases += 1
    print(f"fuzz_native: {cases} cases in {seconds:.0f} s (seed {seed}), no sanitizer report")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--build-dir", help=argparse.SUPPRESS)  # set when re-run with the runtimes preloaded
    args = ap.parse_args()
    if args.build_dir:
        return fuzz(args.build_dir, args.seconds, args.seed)
    with tempfile.TemporaryDirectory(prefix="fuzz-native-") as folder:
        build(folder)
        runtimes = [subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True, text=True,
                                   check=True).stdout.strip() for lib in ("libasan.so", "libubsan.so")]
        env = dict(os.environ, LD_PRELOAD=":".join(runtimes),
                   ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0",
                   UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
        return subprocess.run([sys.executable, __file__, "--seconds", str(args.seconds), "--seed", str(args.seed),
                               "--build-dir", folder], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
