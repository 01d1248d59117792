"""``reteco-measures gate`` and ``rm.gate`` on the bundled sample: a run against itself passes
(exit 0), a run whose rankings are reversed is worse on RECOR's turns (exit 1, delta equal to the
difference of the two runs' official scores), too few units cannot tell (exit 2), JSON for CI."""

from __future__ import annotations

import collections
import json

import pytest

import reteco_measures as rm
from reteco_measures.cli.main import main as cli_main
from reteco_measures.sample import sample_path, sample_root


@pytest.fixture
def reversed_run(tmp_path):
    by = collections.defaultdict(list)
    for line in sample_path("runs", "reteco_track2.txt").read_text().splitlines():
        q, _, d, *_ = line.split()
        by[q].append(d)
    out = tmp_path / "reversed.txt"
    out.write_text("".join(f"{q} Q0 {d} {i + 1} {100 - i} rev\n" for q, docs in by.items()
                           for i, d in enumerate(docs[::-1])))
    return str(out)


@pytest.mark.slow
def test_gate_exit_codes_and_json(reversed_run, capsys):
    base = str(sample_path("runs", "reteco_track2.txt"))
    data = str(sample_root())
    assert cli_main(["gate", base, base, "--benchmark", "reteco-2a", "--data", data, "--resamples", "500"]) == 0
    assert "not_worse" in capsys.readouterr().out
    assert cli_main(["gate", base, reversed_run, "--benchmark", "reteco-2a", "--data", data, "--resamples", "500",
                     "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    a = rm.benchmark("reteco-2a").score(base, data=data).official
    b = rm.benchmark("reteco-2a").score(reversed_run, data=data).official
    assert doc["verdict"] == "worse" and doc["exit_code"] == 1 and doc["delta"] == pytest.approx(b - a, abs=1e-12)
    assert doc["ci_high"] < 0 and doc["params"]["unit"] == "turn" and doc["n"] == 43
    assert cli_main(["gate", base, reversed_run, "--benchmark", "reteco-2a", "--data", data, "--min-units",
                     "100"]) == 2
    # an unreadable input is never "worse"
    assert cli_main(["gate", base, "missing.txt", "--benchmark", "reteco-2a", "--data", data]) == 2
    assert "missing.txt" in capsys.readouterr().err


@pytest.mark.slow
def test_the_worked_example_of_the_gate_page_prints_what_the_page_shows(worked_example):
    page = worked_example("gate.md")
    assert page["printed"] == page["text"][0]
