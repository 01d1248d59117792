"""Every measure name in JSON output parses back with ``ir_measures.parse_measure``.

Tables for people may print ``nDCG|FC@10``; JSON (``score NAME --format json``, ``leaderboard
... --format json``) must carry a name a program can hand back to ir_measures (``nDCG_FC@10``).
The ``key`` fields (``ndcg_fc_10``, ``map_10``) are platform leaderboard keys and must not change.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import ir_measures
import pytest

import reteco_measures  # noqa: F401  (registers TP, TC, nDCG_FC, TurnNDCG, ... with ir_measures)
from reteco_measures.cli.main import main
from reteco_measures.cli.score_cmd import demo_argv
from reteco_measures.sample import sample_root

SAMPLE = sample_root()
BENCHMARKS = ["chunqiu", "ikat-2023", "reteco-1a", "reteco-1b", "reteco-2a", "spoken"]
# Columns of per-query and group tables that are ids, groups or counts, never measures.
NOT_MEASURES = {"query_id", "domain", "conversation_id", "turn", "depth", "steps", "task", "qrels", "collection",
                "condition", "n", "run", "rank", "value", "ci_low", "ci_high", "cluster", "valid", "problems",
                "reward", "stratum", "group", "all", "rank_low", "rank_high", "judge_mean", "judge_ci_low",
                "judge_ci_high", "n_human", "human_mean", "bias", "lam", "reason", "invalid", "missing", "turn_set"}


def _run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main(argv)  # an invalid sample run exits 1 but still prints its score
    return json.loads(capsys.readouterr().out)


def _measure_fields(doc: Any) -> Iterator[tuple[str, str]]:
    """Every ``measure`` value (except the reward row) with where it was found."""
    if isinstance(doc, dict):
        if isinstance(doc.get("measure"), str) and doc.get("role") != "reward":
            yield "measure", doc["measure"]
        for k, v in doc.items():
            yield from ((f"{k}/{p}", m) for p, m in _measure_fields(v))
    elif isinstance(doc, list):
        for v in doc:
            yield from _measure_fields(v)


def _table_columns(rows: list[dict[str, Any]]) -> set[str]:
    return {c for r in rows for c in r} - NOT_MEASURES


def _assert_parse(names: set[tuple[str, str]]) -> None:
    bad = []
    for where, name in sorted(names):
        try:
            ir_measures.parse_measure(name)
        except Exception as exc:  # noqa: BLE001
            bad.append(f"{where}: {name!r} ({exc})")
    assert not bad, bad


@pytest.mark.parametrize("name", BENCHMARKS)
def test_score_json_measure_names_parse(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _run_json(["score", name, *demo_argv(name, SAMPLE), "--format", "json", "--per-query"], capsys)
    names = set(_measure_fields(doc))
    assert ("official/measure", doc["official"]["measure"]) in names
    assert len([m for w, m in names if w.startswith("scores")]) >= 2
    names |= {("per_query column", c) for c in _table_columns(doc["per_query"])}
    for key, value in doc.items():
        if key.startswith("by_") or key == "grid":
            rows = [r for r in value if "measure" not in r]  # wide layout: one column per measure
            names |= {(f"{key} column", c) for c in _table_columns(rows)}
    _assert_parse(names)
    assert all(w != "scores/measure" or "|" not in m for w, m in names)
    assert "reward" not in {m for _, m in names}


def test_reteco_1a_machine_names_and_unchanged_keys(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _run_json(["score", "reteco-1a", *demo_argv("reteco-1a", SAMPLE), "--format", "json", "--per-query"],
                    capsys)
    rows = {r["key"]: r["measure"] for r in doc["scores"]}
    # keys come from the printed names (Codabench leaderboard columns); measures parse back
    assert rows["ndcg_fc_10"] == "nDCG_FC@10"
    assert rows["map_10"] == "MAP@10" and rows["mrr"] == "MRR"
    assert ir_measures.parse_measure(rows["map_10"]) == ir_measures.parse_measure("AP@10")
    assert ir_measures.parse_measure(rows["mrr"]) == ir_measures.parse_measure("RR")
    assert "ndcg_fc_10" in doc["metrics"] and "map_10" in doc["metrics"]
    assert "nDCG_FC@10" in doc["per_query"][0] and "nDCG|FC@10" not in doc["per_query"][0]
    by_domain = doc["by_domain"][0]
    assert "nDCG_FC@10" in by_domain and "nDCG|FC@10" not in by_domain


def test_ikat_names_with_parameters_parse(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _run_json(["score", "ikat-2023", *demo_argv("ikat-2023", SAMPLE), "--format", "json"], capsys)
    measures = {r["measure"] for r in doc["scores"]}
    assert {"AP(rel=2)@1000", "RR(rel=2)", "P(rel=2)@20"} <= measures
    assert ir_measures.parse_measure("AP(rel=2)@1000") == ir_measures.AP(rel=2) @ 1000


@pytest.mark.parametrize("measure", [None, "nDCG|FC@10"])
def test_leaderboard_json_measure_names_parse(measure: str | None, tmp_path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    run = demo_argv("reteco-1a", SAMPLE)[0]
    argv = ["leaderboard", "reteco-1a", run, run, *demo_argv("reteco-1a", SAMPLE)[1:], "--format", "json",
            "--resamples", "50", "--no-ties", "--workers", "1"]
    if measure:
        argv += ["--measure", measure]
    doc = _run_json(argv, capsys)
    names = set(_measure_fields(doc))
    assert ("measure", doc["measure"]) in names
    diagnostics = _table_columns(doc["ranking"]) - {"nDCG@10"}
    assert diagnostics == {"TP@10", "TR@10", "TC@10", "MAP@10", "R@10", "MRR", "Judged@10"} | (
        {"nDCG_FC@10"} - {doc["measure"]})
    names |= {("ranking column", c) for c in diagnostics}
    if measure:
        assert doc["measure"] == "nDCG_FC@10" and doc["key"] == "ndcg_fc_10"
    else:
        assert doc["measure"] == "nDCG@10" and doc["key"] == "ndcg_10"
    _assert_parse(names)


@pytest.mark.parametrize("written", ["TP@10", "TemporalPrecision@10", "MAP@10", "nDCG_FC@10"])
def test_one_printed_form_in_every_command_and_format(written: str, capsys, tmp_path) -> None:
    """A measure prints as the user wrote it in ``eval`` (table, TSV, JSON, per query, streamed)
    and ``compare``, and that name parses back to the same measure (issue: ``TP@10`` used to print
    as ``TemporalPrecision@10`` in one command and ``TP@10`` in another)."""
    root = SAMPLE
    qrels = str(root / "reteco" / "track1_tempo" / "history" / "qrels_dev.txt")
    run = str(root / "runs" / "reteco_track1a_dev.txt")
    other = tmp_path / "other.txt"
    other.write_bytes((root / "runs" / "reteco_track1a_dev.txt").read_bytes())
    seen: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for extra in ([], ["--stream"], ["--per-query"]):
            for fmt in ("tsv", "json"):
                assert main(["eval", qrels, run, written, "--format", fmt, *extra]) == 0
                out = capsys.readouterr().out
                if fmt == "json":
                    seen += [r["measure"] for r in json.loads(out)]
                else:
                    lines = [line.split("\t") for line in out.splitlines()[1:] if line]
                    seen += [cells[1] if "--per-query" in extra else cells[0] for cells in lines]
        assert main(["compare", qrels, run, str(other), written, "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
    seen += [name for _, name in _measure_fields(doc)]
    assert seen and set(seen) == {written}, set(seen)  # machine output keeps the written spelling
    assert ir_measures.parse_measure(written) == reteco_measures.parse_measures(written)[0]
