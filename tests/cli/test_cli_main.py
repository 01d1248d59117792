"""``reteco-measures`` command line (``cli/main.py``): ``eval``'s contract path gives the number
``score`` gives, missing extras and missing data are told in CLI words with their own exit codes.

Expected values are computed here by hand from the files (the RETECO evaluation plan's
"Deterministic handling" rules written out in plain Python) and pytrec_eval's ``ndcg_cut_10``,
never from our own output.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval

from reteco_measures.cli.main import main

SAMPLE = Path(__file__).resolve().parents[2] / "reteco_measures" / "sample" / "data"
TEMPO = SAMPLE / "reteco" / "track1_tempo"


# ------------------------------------------------------------------------------------------------
# one official number: eval --contract reteco --corpus == score reteco-1a


def _run_rows(path: Path) -> list[tuple[str, str, float]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        f = line.split()
        if len(f) == 6:
            rows.append((f[0], f[2], float(f[4])))
    return rows


def _by_hand(qrels: dict[str, dict[str, int]], rows: list[tuple[str, str, float]], corpus: set[str],
             domain_of_query: dict[str, str] | None, domain_of_doc: dict[str, str]) -> float:
    """The RETECO rule, written out: the first occurrence of a repeated (query, document) is kept;
    a document in no corpus is discarded; with ``domain_of_query``, a document outside the corpus
    of its query's domain is discarded too. Then pytrec_eval ndcg_cut_10 per query of the qrels (a
    query without a row scores 0), averaged over the queries of the qrels."""
    run: dict[str, dict[str, float]] = {}
    for q, d, s in rows:
        if d in run.get(q, {}):
            continue  # a repeat: the first occurrence stays
        if d not in corpus:
            continue
        if domain_of_query is not None and domain_of_doc[d] != domain_of_query.get(q):
            continue
        run.setdefault(q, {})[d] = s
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(
        {q: r for q, r in run.items() if q in qrels})
    return sum(per_query.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"] for q in qrels) / len(qrels)


def _eval_value(capsys, *argv: str) -> tuple[float, str]:
    assert main(["eval", *argv, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out)[0]["value"], err


def _score_value(capsys, *argv: str) -> float:
    assert main(["score", "reteco-1a", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["official"]["value"]


def test_bundled_sample_eval_contract_equals_score(tmp_path: Path, capsys) -> None:
    # the release layout: one folder per domain; eval gets the domains' qrels and corpora together
    qrels: dict[str, dict[str, int]] = {}
    domain_of_query, domain_of_doc = {}, {}
    qrels_text, docs_text = [], []
    for folder in sorted(p for p in TEMPO.iterdir() if p.is_dir()):
        text = (folder / "qrels_dev.txt").read_text(encoding="utf-8")
        qrels_text.append(text)
        for line in text.splitlines():
            q, _, d, r = line.split()
            qrels.setdefault(q, {})[d] = int(r)
            domain_of_query[q] = folder.name  # the folder the query is released in
        docs = (folder / "documents.jsonl").read_text(encoding="utf-8")
        docs_text.append(docs)
        for line in docs.splitlines():
            domain_of_doc[json.loads(line)["id"]] = folder.name
    (tmp_path / "qrels.txt").write_text("".join(qrels_text))
    (tmp_path / "documents.jsonl").write_text("".join(docs_text))
    run = SAMPLE / "runs" / "reteco_track1a_dev.txt"
    rows = _run_rows(run)
    corpus = set(domain_of_doc)
    expected = _by_hand(qrels, rows, corpus, domain_of_query, domain_of_doc)
    whole = _by_hand(qrels, rows, corpus, None, domain_of_doc)
    assert expected != pytest.approx(whole, abs=1e-6)  # the sample has a document of another domain

    files = [str(tmp_path / "qrels.txt"), str(run), "nDCG@10", "--contract", "reteco",
             "--corpus", str(tmp_path / "documents.jsonl")]
    got, err = _eval_value(capsys, *files)
    assert got == pytest.approx(expected, abs=1e-12)
    assert "corpus scope domain" in err and "1 document(s) of another domain" in err
    assert _score_value(capsys, str(run), "--data", str(SAMPLE), "--split", "dev") == pytest.approx(expected, abs=1e-12)
    # both say the same with the whole corpus as the scope
    got_all, err = _eval_value(capsys, *files, "--corpus-scope", "all")
    assert got_all == pytest.approx(whole, abs=1e-12) and "corpus scope all" in err
    assert _score_value(capsys, str(run), "--data", str(SAMPLE), "--corpus-scope", "all") == pytest.approx(whole, abs=1e-12)


def _organiser_run(folder: Path, path: Path) -> list[str]:
    """Every query ranks all sample documents in a fixed shuffled order, an unknown document on
    top and a repeat (with a higher score) of its third document at the end."""
    docs = [json.loads(line)["id"] for line in (folder / "documents.jsonl").read_text().splitlines() if line.strip()]
    queries = [json.loads(line)["id"] for line in (folder / "examples.jsonl").read_text().splitlines() if line.strip()]
    rng = random.Random(7)
    lines = []
    for q in queries:
        order = docs[:]
        rng.shuffle(order)
        ranked = ["ghost/not_in_corpus.txt", *order, order[2]]
        scores = [100.0, *[float(len(order) - i) for i in range(len(order))], 1000.0]
        lines += [f"{q} Q0 {d} {i + 1} {s} shuffled" for i, (d, s) in enumerate(zip(ranked, scores))]
    path.write_text("\n".join(lines) + "\n")
    return queries


def test_organiser_tempo_sample_eval_contract_equals_score(tempo_sample_dir: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run.txt"
    _organiser_run(tempo_sample_dir, run)
    qrels: dict[str, dict[str, int]] = {}
    for line in (tempo_sample_dir / "qrels.txt").read_text().splitlines():
        q, _, d, r = line.split()
        qrels.setdefault(q, {})[d] = int(r)
    # the organisers' sample: a query's domain is the folder part of its gold document ids
    examples = [json.loads(line) for line in (tempo_sample_dir / "examples.jsonl").read_text().splitlines()]
    domain_of_query = {}
    for ex in examples:
        gold = ex["gold_ids"] if isinstance(ex["gold_ids"], list) else json.loads(ex["gold_ids"].replace("'", '"'))
        domain_of_query[ex["id"]] = gold[0].split("/")[0]
    docs = [json.loads(line)["id"] for line in (tempo_sample_dir / "documents.jsonl").read_text().splitlines()]
    domain_of_doc = {d: d.split("/")[0] for d in docs}
    rows = _run_rows(run)
    expected = _by_hand(qrels, rows, set(docs), domain_of_query, domain_of_doc)
    whole = _by_hand(qrels, rows, set(docs), None, domain_of_doc)
    assert expected > whole + 0.05  # other domains' documents ranked high: the scope matters here

    got, err = _eval_value(capsys, str(tempo_sample_dir / "qrels.txt"), str(run), "nDCG@10", "--contract", "reteco",
                           "--corpus", str(tempo_sample_dir / "documents.jsonl"))
    assert got == pytest.approx(expected, abs=1e-12)
    assert _score_value(capsys, str(run), "--data", str(tempo_sample_dir)) == pytest.approx(expected, abs=1e-12)
    # what was removed, in the words score uses
    assert f"{len(qrels)} duplicate document(s), {len(qrels)} unknown document(s)" in err
    assert "document(s) of another domain" in err


def test_eval_says_when_the_corpus_carries_no_domain(tmp_path: Path, capsys) -> None:
    # ids without a TEMPO '<domain>/' prefix and no 'domain' field: the whole corpus is the scope,
    # and eval says so (score would check each query against its own domain's corpus)
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\nq2 0 b 1\n")
    (tmp_path / "docs.txt").write_text("a\nb\n")
    (tmp_path / "run.txt").write_text("q1 Q0 b 1 2.0 r\nq1 Q0 a 2 1.0 r\nq2 Q0 b 1 1.0 r\n")
    got, err = _eval_value(capsys, str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), "nDCG@10",
                           "--contract", "reteco", "--corpus", str(tmp_path / "docs.txt"))
    assert got == pytest.approx((1 / 1.5849625007211563 + 1) / 2, abs=1e-12)  # q1: a at rank 2; q2: 1
    assert "corpus scope all: the corpus records carry no domain" in err
    # with a 'domain' field in the corpus, the query's domain is that of its first judged document
    (tmp_path / "docs.jsonl").write_text('{"id": "a", "domain": "x"}\n{"id": "b", "domain": "y"}\n')
    got, err = _eval_value(capsys, str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), "nDCG@10",
                           "--contract", "reteco", "--corpus", str(tmp_path / "docs.jsonl"))
    assert got == 1.0 and "corpus scope domain" in err and "1 document(s) of another domain" in err


# ------------------------------------------------------------------------------------------------
# one vocabulary for what the contract removes


KEYS = ("unknown_doc", "other_domain_doc", "missing_query", "unknown_query")


def test_removals_are_named_in_one_vocabulary(tmp_path: Path, capsys) -> None:
    run = SAMPLE / "runs" / "reteco_track1a_dev.txt"
    assert main(["score", "reteco-1a", str(run), "--data", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    checks = [line for line in out.splitlines() if line.startswith(("run checks", "removed by the contract"))]
    assert len(checks) == 2
    for line in checks:  # the sample: one document in no corpus, one of another domain's corpus
        assert not any(key in line for key in KEYS), line
        assert "1 unknown document(s)" in line and "1 document(s) of another domain" in line, line
    # the problem kinds (machine keys, documented in the JSON output) say the same
    assert main(["score", "reteco-1a", str(run), "--data", str(SAMPLE), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    kinds = [p["kind"] for p in data["validation"]["problems"]]
    assert kinds.count("unknown_doc") == 1 and kinds.count("other_domain_doc") == 1
    assert data["removed"]["unknown_doc"] == 1 and data["removed"]["other_domain_doc"] == 1
    # eval's notes use the same words
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join((f / "qrels_dev.txt").read_text() for f in sorted(TEMPO.iterdir()) if f.is_dir()))
    docs = tmp_path / "documents.jsonl"
    docs.write_text("".join((f / "documents.jsonl").read_text() for f in sorted(TEMPO.iterdir()) if f.is_dir()))
    for extra in ([], ["--contract", "reteco"]):
        assert main(["eval", str(qrels), str(run), "nDCG@10", "--corpus", str(docs), *extra]) == 0
        err = capsys.readouterr().err
        assert not any(key in err for key in KEYS), err
        assert "1 unknown document(s)" in err and "1 document(s) of another domain" in err


# ------------------------------------------------------------------------------------------------
# a missing optional extra: its install hint, exit code 5


def _cli_without(module: str, argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``reteco-measures ARGV`` in a fresh interpreter where importing ``module`` fails (as when its
    extra is not installed): ``sys.modules[module] = None`` makes every import of it raise."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from reteco_measures.cli.main import main\n"
            f"sys.exit(main({argv!r}))\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("RETECO_MEASURES_DEBUG", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)


def test_compare_plot_without_matplotlib_prints_the_install_hint(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 1\n")
    for name, first in (("a.txt", "d1"), ("b.txt", "d9")):
        (tmp_path / name).write_text("".join(f"q{i} Q0 {first if i == 1 else f'd{i}'} 1 1.0 r\n" for i in (1, 2, 3)))
    done = _cli_without("matplotlib", ["compare", str(qrels), str(tmp_path / "a.txt"), str(tmp_path / "b.txt"),
                                       "nDCG@10", "--plot", str(tmp_path / "plot.png")], tmp_path)
    assert done.returncode == 5, done.stderr
    assert "pip install 'reteco-measures[plot]'" in done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "plot.png").exists()


def test_a_missing_module_of_an_extra_without_our_hint_is_still_worded() -> None:
    from reteco_measures.cli.messages import install_hint

    exc = ModuleNotFoundError("No module named 'httpx'", name="httpx")
    assert install_hint(exc) == "this needs the optional package httpx: pip install 'reteco-measures[judge]'"
    assert install_hint(ModuleNotFoundError("No module named 'nothere'", name="nothere")) is None  # a bug: exit 3


def test_a_broken_import_of_ours_stays_an_internal_error(monkeypatch, capsys, tmp_path: Path) -> None:
    import reteco_measures.cli.main as cli

    def broken(args):
        raise ImportError("cannot import name 'x' from 'reteco_measures.api'")

    monkeypatch.setattr(cli, "_cmd_reward", broken)
    monkeypatch.delenv("RETECO_MEASURES_DEBUG", raising=False)
    assert main(["reward", "0.5"]) == 3
    assert "internal error" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------
# missing data: the flag to pass, not the Python parameter


def test_missing_data_messages_name_the_flags(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("RETECO_DATA", raising=False)
    run = SAMPLE / "runs" / "reteco_track1a_dev.txt"
    assert main(["score", "reteco-1a", str(run)]) == 2
    err = capsys.readouterr().err
    assert "--data DIR" in err and "root=" not in err
    qrels = tmp_path / "qrels.txt"
    qrels.write_text((TEMPO / "bitcoin" / "qrels_dev.txt").read_text())
    assert main(["eval", str(qrels), str(run), "nDCG@10", "--by", "domain"]) == 2
    err = capsys.readouterr().err
    assert "give --topics FILE with that column" in err and "topics=" not in err


def test_cli_message_uses_one_table_and_only_flags_the_command_has() -> None:
    import argparse

    from reteco_measures.cli.messages import cli_message

    hint = "ids differ in form; pass query_ids='normalize' (command line: --normalize-ids), or rename"
    assert cli_message(hint, argparse.Namespace(normalize_ids=False)) == "ids differ in form; pass --normalize-ids, or rename"
    assert cli_message(hint, argparse.Namespace(query_ids="exact")) == "ids differ in form; pass --normalize-ids, or rename"
    # a command without the flag keeps the Python wording (it names no flag that does not exist)
    assert cli_message("give topics=... with that column", argparse.Namespace(runs=[])) == \
        "give topics=... with that column"
    assert cli_message("or pass root=...", argparse.Namespace(data=None)) == "or pass --data DIR"


def test_judge_help_names_the_endpoint_variables(capsys) -> None:
    pytest.importorskip("httpx", reason="the judge command needs the judge extra")
    with pytest.raises(SystemExit) as done:
        main(["judge", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "OPENAI_API_KEY" in out and "OPENAI_BASE_URL" in out
