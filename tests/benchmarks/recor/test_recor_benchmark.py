"""``reteco-measures score reteco-2a`` on the bundled synthetic sample.

The expected numbers are recomputed here independently: the run file is cleaned with plain Python
(the RETECO rules: first occurrence wins, unknown documents of the turn's domain dropped) and
scored with pytrec_eval (ndcg_cut_10, map_cut_10, recall_10, recip_rank); missing turns are 0.

Turn ids: ``benchmarks/recor/benchmark.py``: ``--hash-turn-ids`` is about the run's ids; the organisers'
own qrels (written ``<conversation_id>#turn<t>``) are read under either policy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import generate_reteco_recor as gen
import pandas as pd
import pytest
import pytrec_eval

from reteco_measures.benchmarks.recor.benchmark import score_reteco_2a
from reteco_measures.benchmarks.recor.data import load_recor
from reteco_measures.cli.main import main
from reteco_measures.cli.score_cmd import demo_argv

SAMPLE = gen.DEFAULT_ROOT  # the bundled sample
RUN = SAMPLE / "runs" / "reteco_track2.txt"
TRACK = SAMPLE / "reteco" / "track2_recor"


def _independent(run_path: Path, qualified: bool = True) -> pd.DataFrame:
    """Per-turn values computed without reteco_measures: a DataFrame query_id, domain, turn, measures."""
    qrels: dict[str, dict[str, int]] = {}
    corpus: dict[str, set[str]] = {}
    turns: dict[str, tuple[str, int]] = {}
    for folder in sorted(p for p in TRACK.iterdir() if p.is_dir()):
        dom = folder.name
        corpus[dom] = {json.loads(line)["doc_id"] for line in (folder / "documents.jsonl").open(encoding="utf-8")}
        for conv in json.loads((folder / "benchmark_dev.json").read_text(encoding="utf-8")):
            for t in conv["turns"]:
                turns[f"{dom}/{conv['id']}_turn_{t['turn_id']}"] = (dom, t["turn_id"])
        for line in (folder / "qrels_dev.txt").open(encoding="utf-8"):
            q, _, d, r = line.split()
            qrels.setdefault(f"{dom}/{q}", {})[d] = int(r)
    run: dict[str, dict[str, float]] = {}
    for line in run_path.open(encoding="utf-8"):
        q, _, d, _, s, _ = line.split()
        if q not in turns or d not in corpus[turns[q][0]]:
            continue  # unknown turn / document not in the turn's domain corpus
        run.setdefault(q, {})
        if d not in run[q]:  # first occurrence wins
            run[q][d] = float(s)
    names = {"ndcg_cut_10": "TurnNDCG@10", "map_cut_10": "MAP@10", "recall_10": "R@10", "recip_rank": "MRR"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.10", "recall.10", "recip_rank"})
    result = evaluator.evaluate(run)
    rows = []
    for q in qrels:
        values = result.get(q, {})
        rows.append({"query_id": q, "domain": turns[q][0], "turn": turns[q][1],
                     **{label: values.get(key, 0.0) for key, label in names.items()}})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def expected() -> pd.DataFrame:
    return _independent(RUN)


@pytest.fixture(scope="module")
def scored():
    return score_reteco_2a(RUN, load_recor("dev", root=SAMPLE))


MEASURES = ["TurnNDCG@10", "MAP@10", "R@10", "MRR"]


def test_overall_matches_pytrec_eval(scored, expected):
    assert scored.fact("n_turns") == len(expected)
    got = scored.scores.set_index("measure")["value"]
    for m in MEASURES:
        assert got[m] == pytest.approx(expected[m].mean(), abs=1e-9), m
    assert scored.official == pytest.approx(expected["TurnNDCG@10"].mean(), abs=1e-9)
    # per turn, too
    per = scored.per_query.set_index("query_id")
    for qid, value in expected.set_index("query_id")["TurnNDCG@10"].items():
        assert per.loc[qid, "TurnNDCG@10"] == pytest.approx(value, abs=1e-9)


def test_per_domain_and_per_depth_tables(scored, expected):
    dom = scored.table("by_domain").set_index("domain")
    means = expected.groupby("domain")[MEASURES].mean()
    for d in means.index:
        for m in MEASURES:
            assert dom.loc[d, m] == pytest.approx(means.loc[d, m], abs=1e-9)
        assert dom.loc[d, "n"] == (expected["domain"] == d).sum()
    for m in MEASURES:
        assert dom.loc["(macro)", m] == pytest.approx(means[m].mean(), abs=1e-9)
        assert dom.loc["(all)", m] == pytest.approx(expected[m].mean(), abs=1e-9)
    depth = scored.table("by_depth").set_index("depth")
    groups = expected.assign(depth=[f"T{t}" if t < 5 else "T5+" for t in expected["turn"]])
    dmeans = groups.groupby("depth")[MEASURES].mean()
    assert set(dmeans.index) == {"T1", "T2", "T3", "T4", "T5+"}  # the sample has every depth group
    for g in dmeans.index:
        assert depth.loc[g, "TurnNDCG@10"] == pytest.approx(dmeans.loc[g, "TurnNDCG@10"], abs=1e-9)
        assert depth.loc[g, "MRR"] == pytest.approx(dmeans.loc[g, "MRR"], abs=1e-9)


def test_contract_reports_what_the_sample_contains(scored):
    kinds = {p.kind for p in scored.report.errors}
    assert {"duplicate", "unknown_doc", "other_domain_doc", "missing_query"} <= kinds
    missing = [p.query_id for p in scored.report.errors if p.kind == "missing_query"]
    assert missing == ["law/ex_3161_turn_2"]
    dup = next(p for p in scored.report.errors if p.kind == "duplicate")
    assert str(dup).startswith(f"{RUN}:3: biology/3_turn_1: duplicate document")
    # documents of another domain are discarded for the turn (corpus_scope='domain'), under their own kind
    assert any("not in the biology corpus" in p.message and "/" in (p.doc_id or "")
               for p in scored.report.errors if p.kind == "other_domain_doc")
    assert all("_not_in_corpus_" in p.doc_id for p in scored.report.errors if p.kind == "unknown_doc")


def test_corpus_scope_all_keeps_other_domains_documents():
    data = load_recor("dev", root=SAMPLE)
    strict = score_reteco_2a(RUN, data)
    loose = score_reteco_2a(RUN, data, corpus_scope="all")
    assert len(loose.report.run) > len(strict.report.run)


def test_conversation_average():
    data = load_recor("dev", root=SAMPLE)
    result = score_reteco_2a(RUN, data, average="conversation")
    per = result.per_query
    label = "TurnNDCG(average='conversation')@10"
    assert label in per.columns
    conv_means = per.groupby("conversation_id")[label].mean()
    assert result.official == pytest.approx(conv_means.mean(), abs=1e-9)


def test_plain_ids_map_where_unambiguous(tmp_path: Path):
    plain = SAMPLE / "runs" / "reteco_track2_plain_ids.txt"
    data = load_recor("dev", root=SAMPLE)
    result = score_reteco_2a(plain, data)
    ambiguous = {p.query_id for p in result.report.errors if p.kind == "ambiguous_query"}
    # numeric conversation ids repeat between biology and earth_science
    assert ambiguous and all(q.split("_turn_")[0].isdigit() for q in ambiguous)
    # the law/drones turns are mapped and score exactly as in the qualified run
    qualified = score_reteco_2a(RUN, data).per_query.set_index("query_id")
    per = result.per_query.set_index("query_id")
    for qid in [q for q in per.index if q.startswith(("law/", "drones/"))]:
        assert per.loc[qid, "TurnNDCG@10"] == pytest.approx(qualified.loc[qid, "TurnNDCG@10"], abs=1e-12)


def test_hash_turn_ids_in_a_run_score_like_release_ids(tmp_path: Path):
    text = RUN.read_text(encoding="utf-8").replace("_turn_", "#turn")
    hashed = tmp_path / "hash.txt"
    hashed.write_text(text, encoding="utf-8")
    data = load_recor("dev", root=SAMPLE)
    a = score_reteco_2a(hashed, data)
    b = score_reteco_2a(RUN, data)
    assert a.official == pytest.approx(b.official, abs=1e-12)
    assert any(p.kind == "id_form" for p in a.report.errors)
    rejected = score_reteco_2a(hashed, data, hash_turn_ids="reject")
    assert rejected.official == 0.0 and any("discarded" in p.message for p in rejected.report.errors)


def test_cli_table_and_json(capsys):
    assert main(["score", "reteco-2a", str(RUN), "--data", str(SAMPLE), "--split", "dev"]) == 0
    out = capsys.readouterr().out
    assert "TurnNDCG@10" in out and "MAP@10" in out and "T5+" in out and "(macro)" in out
    assert main(["score", "reteco-2a", str(RUN), "--data", str(SAMPLE), "--format", "json", "--per-query"]) == 0
    doc = json.loads(capsys.readouterr().out)
    expected = _independent(RUN)
    assert doc["official"]["measure"] == "TurnNDCG@10"
    assert doc["official"]["value"] == pytest.approx(expected["TurnNDCG@10"].mean(), abs=1e-9)
    assert {r["domain"] for r in doc["by_domain"]} >= {"biology", "law", "(macro)", "(all)"}
    assert len(doc["per_query"]) == len(expected)
    assert doc["validation"]["problem_counts"]["missing_query"] == 1


def test_cli_data_from_environment_and_missing_data(monkeypatch, tmp_path: Path, capsys):
    monkeypatch.setenv("RETECO_DATA", str(SAMPLE))
    assert main(["score", "reteco-2a", str(RUN), "--domain", "law", "--format", "tsv"]) == 0
    assert capsys.readouterr().out.startswith("measure\tvalue")
    monkeypatch.setenv("RETECO_DATA", str(tmp_path))
    assert main(["score", "reteco-2a", str(RUN)]) == 2
    assert "track2_recor" in capsys.readouterr().err


def test_demo_argv_scores_the_sample(capsys):
    argv = demo_argv("reteco-2a", SAMPLE)
    assert main(["score", "reteco-2a", *argv]) == 0
    assert "TurnNDCG@10" in capsys.readouterr().out


def test_sample_generator_is_deterministic(tmp_path: Path):
    for path in gen.main(tmp_path):
        rel = path.relative_to(tmp_path)
        assert path.read_bytes() == (SAMPLE / rel).read_bytes(), rel


def test_console_script_runs():
    proc = subprocess.run([sys.executable, "-m", "reteco_measures", "score", "reteco-2a", str(RUN), "--data",
                           str(SAMPLE), "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["benchmark"] == "reteco-2a"


# ------------------------------------------------------------------------------------------------
# Turn ids


def _qrels_rows(folder: Path) -> list[tuple[str, str, int]]:
    rows = []
    for line in (folder / "qrels.txt").read_text().splitlines():
        if line.strip():
            q, _, d, r = line.split()
            rows.append((q, d, int(r)))
    return rows


def _official(capsys, argv: list[str]) -> float:
    assert main(argv + ["--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["official"]["value"]


def test_reject_policy_accepts_the_organisers_qrels(recor_sample_dir: Path, tmp_path: Path, capsys) -> None:
    rows = _qrels_rows(recor_sample_dir)
    assert any("#turn" in q for q, _, _ in rows)  # the organisers' form
    # a perfect run in the release form: every judged document of every turn, relevant ones first
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q.replace('#turn', '_turn_')} Q0 {d} 1 {1.0 + r} r\n" for q, d, r in rows))
    argv = ["score", "reteco-2a", str(run), "--data", str(recor_sample_dir)]
    assert _official(capsys, argv) == pytest.approx(1.0)
    assert _official(capsys, [*argv, "--hash-turn-ids", "reject"]) == pytest.approx(1.0)


def test_reject_policy_still_rejects_the_runs_hash_ids(recor_sample_dir: Path, tmp_path: Path, capsys) -> None:
    rows = _qrels_rows(recor_sample_dir)
    turns = sorted({q for q, _, _ in rows})
    # the first turn of each conversation written in the '#turn' form in the run
    first = {q for q in turns if q.endswith("#turn1")}
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q if q in first else q.replace('#turn', '_turn_')} Q0 {d} 1 {1.0 + r} r\n"
                           for q, d, r in rows))
    argv = ["score", "reteco-2a", str(run), "--data", str(recor_sample_dir)]
    assert _official(capsys, argv) == pytest.approx(1.0)  # normalised
    # rejected: those turns score 0, every other turn 1 (TurnNDCG: the mean over the qrels' turns)
    assert _official(capsys, [*argv, "--hash-turn-ids", "reject"]) == pytest.approx(1 - len(first) / len(turns))
