"""The package imports quickly: ``import reteco_measures`` loads our modules statically (no module is
loaded by name) but none of the slow third-party packages, which the functions needing them import."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
import reteco_measures as rm
eager = [m for m in ("httpx", "scipy", "scipy.stats", "statsmodels", "matplotlib", "dask", "sklearn",
                     "krippendorff") if m in sys.modules]
assert not eager, eager
assert callable(rm.judge.agreement)
from reteco_measures.benchmarks.compare import compare
assert rm.compare is compare
from reteco_measures import Comparison, tie_sensitivity
assert Comparison.__module__.startswith("reteco_measures.stats")
assert callable(tie_sensitivity)
for name in ("benchmarks", "judge", "platforms", "report", "scale", "stats"):
    assert getattr(rm, name).__name__ == "reteco_measures." + name
    assert name in dir(rm)
try:
    rm.no_such_thing
except AttributeError as exc:
    assert "no_such_thing" in str(exc)
else:
    raise AssertionError("rm.no_such_thing did not raise")
print("ok")
"""


def test_no_slow_third_party_import_in_a_fresh_interpreter() -> None:
    # A fresh interpreter: the test session has imported everything already.
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_every_name_in_all_resolves() -> None:
    import reteco_measures as rm

    for name in rm.__all__:
        assert getattr(rm, name) is not None, name
