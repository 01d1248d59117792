"""RETECO's two rule sets: the evaluation page (default, numbers unchanged) and the organisers'
starter-kit scoring (``rules='kit'`` / ``--rules kit``), on a release written in the data v1.1
schema (tests/tempo_tree.write_v11_release: several domains, gold outside the corpus, removed
duplicates in runs and qrels, missing topics, ties, steps).

Expected values are computed here without reteco_measures: the files are read with plain Python,
filtered by the rules as the kit's README and BASELINE_RESULTS.md describe them
(github.com/DataScienceUIBK/RETECO, ``starter_kit/``) and scored by pytrec_eval (``ndcg_cut_10``);
the kit's rounding (per-domain mean to 5 decimals) and macro average are written out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval
from tempo_tree import TRACK, write_v11_release

import reteco_measures as rm
from reteco_measures.cli.main import main as cli_main

# bitcoin: 100_1 gold {a, b, gone*}, 101_2 {d}, 102_3 {ghost*}; law: 200_3 {x2†, y}, 201_4 {z}
# (* not in the corpus; † removed as a duplicate of law/x.txt, still named by the qrels)
RUN_1A = """\
100_1 Q0 bitcoin/b.txt 1 0.2 r
100_1 Q0 bitcoin/zzz.txt 2 5 r
100_1 Q0 bitcoin/a2.txt 3 4 r
100_1 Q0 bitcoin/e.txt 4 1 r
100_1 Q0 bitcoin/c.txt 5 1 r
100_1 Q0 bitcoin/b.txt 6 3 r
100_1 Q0 bitcoin/a.txt 7 0.5 r
101_2 Q0 bitcoin/c.txt 1 0.5 r
101_2 Q0 bitcoin/d.txt 2 0.5 r
102_3 Q0 bitcoin/a.txt 1 1 r
200_3 Q0 law/y.txt 1 1 r
200_3 Q0 law/x.txt 2 2 r
"""
# 1b: 100_1_step2 repeats b (last score wins under the kit), 200_3_step2 and 201_4_step1 missing
RUN_1B = """\
100_1_step1 Q0 bitcoin/e.txt 1 2 r
100_1_step1 Q0 bitcoin/a.txt 2 1 r
100_1_step2 Q0 bitcoin/b.txt 1 0.1 r
100_1_step2 Q0 bitcoin/zzz.txt 2 4 r
100_1_step2 Q0 bitcoin/b.txt 3 9 r
101_2_step1 Q0 bitcoin/d.txt 1 1 r
101_2_step1 Q0 bitcoin/c.txt 2 1 r
102_3_step1 Q0 bitcoin/a.txt 1 1 r
200_3_step1 Q0 law/x.txt 1 1 r
"""
DOMAINS = ("bitcoin", "law")


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return write_v11_release(tmp_path_factory.mktemp("v11"))


def _qrels(root: Path, name: str) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    qrels: dict[str, dict[str, int]] = {}
    domain: dict[str, str] = {}
    for dom in DOMAINS:
        for line in (root / TRACK / dom / name).read_text(encoding="utf-8").splitlines():
            q, _, d, r = line.split("\t")
            qrels.setdefault(q, {})[d] = int(r)
            domain[q] = dom
    return qrels, domain


def _corpus(root: Path) -> dict[str, set[str]]:
    return {dom: {json.loads(line)["id"] for line in (root / TRACK / dom / "documents.jsonl").open(encoding="utf-8")}
            for dom in DOMAINS}


def _dup_map(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for dom in DOMAINS:
        out.update(json.loads((root / TRACK / dom / "duplicate_map.json").read_text(encoding="utf-8")))
    return out


def _ndcg(qrels: dict, run: dict) -> dict[str, float]:
    result = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return {q: v["ndcg_cut_10"] for q, v in result.items()}


def _kit_expected(root: Path, qrels_name: str, run_text: str, dup: dict[str, str] | None = None) -> float:
    """The kit, by hand: gold outside the corpus dropped, topics left without gold dropped, the run
    read into a dict (a later line overwrites an earlier one), unknown documents kept, topics
    absent from the run skipped (pytrec_eval only evaluates topics of both), per-domain mean
    rounded to 5 decimals, plain mean over domains."""
    qrels, domain = _qrels(root, qrels_name)
    corpus = _corpus(root)
    dup = dup or {}
    kept: dict[str, dict[str, int]] = {}
    for q, docs in qrels.items():
        gold = {dup.get(d, d): r for d, r in docs.items()}
        gold = {d: r for d, r in gold.items() if d in corpus[domain[q]]}
        if any(r > 0 for r in gold.values()):
            kept[q] = gold
    run: dict[str, dict[str, float]] = {}
    for line in run_text.splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[dup.get(d, d)] = float(s)
    per_topic = _ndcg(kept, run)
    by_domain: dict[str, list[float]] = {}
    for q, v in per_topic.items():
        by_domain.setdefault(domain[q], []).append(v)
    rounded = [round(sum(v) / len(v), 5) for _, v in sorted(by_domain.items())]
    return sum(rounded) / len(rounded)


def _page_expected(root: Path, qrels_name: str, run_text: str) -> float:
    """The evaluation page, by hand: first occurrence kept, documents outside the topic's domain
    corpus discarded, every qrels topic evaluated (missing ones score 0), mean over topics."""
    qrels, domain = _qrels(root, qrels_name)
    corpus = _corpus(root)
    run: dict[str, dict[str, float]] = {}
    for line in run_text.splitlines():
        q, _, d, _, s, _ = line.split()
        if q in domain and d in corpus[domain[q]] and d not in run.get(q, {}):
            run.setdefault(q, {})[d] = float(s)
    per_topic = _ndcg(qrels, run)
    return sum(per_topic.get(q, 0.0) for q in qrels) / len(qrels)


def _write(tmp_path: Path, text: str, name: str = "run.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_kit_rules_1a_reproduce_the_kit(release, tmp_path):
    run = _write(tmp_path, RUN_1A)
    score = rm.benchmark("reteco-1a").score(run, data=release, split="dev", rules="kit")
    expected = _kit_expected(release, "qrels_dev.txt", RUN_1A)
    assert score.official == pytest.approx(expected, abs=1e-12)
    # the kit's topic count: 102_3 (no gold in the corpus) and 201_4 (not in the run) are not evaluated
    assert sorted(score.per_query["query_id"]) == ["100_1", "101_2", "200_3"]
    assert score.meta["rules"] == "kit"
    assert any(n.startswith("rules: kit") for n in score.notes)


def test_page_rules_are_the_default_and_unchanged(release, tmp_path):
    run = _write(tmp_path, RUN_1A)
    default = rm.benchmark("reteco-1a").score(run, data=release, split="dev")
    page = rm.benchmark("reteco-1a").score(run, data=release, split="dev", rules="page")
    expected = _page_expected(release, "qrels_dev.txt", RUN_1A)
    assert default.official == pytest.approx(expected, abs=1e-12)
    assert page.official == default.official
    assert default.meta["rules"] == "page"
    assert any(n.startswith("rules: page") for n in default.notes)
    # the two rule sets really differ on this release
    assert abs(default.official - _kit_expected(release, "qrels_dev.txt", RUN_1A)) > 1e-3


def test_kit_rules_1b_per_step_topic(release, tmp_path):
    run = _write(tmp_path, RUN_1B)
    score = rm.benchmark("reteco-1b").score(run, data=release, split="dev", rules="kit")
    assert score.official == pytest.approx(_kit_expected(release, "qrels_steps_dev.txt", RUN_1B), abs=1e-12)
    assert score.meta["average"] == "step"
    assert sorted(score.per_query["query_id"]) == ["100_1_step1", "100_1_step2", "101_2_step1"]


def test_average_step_under_page_rules(release, tmp_path):
    run = _write(tmp_path, RUN_1B)
    score = rm.benchmark("reteco-1b").score(run, data=release, split="dev", average="step")
    # the mean over every step topic of the step qrels, missing steps scoring 0
    assert score.official == pytest.approx(_page_expected(release, "qrels_steps_dev.txt", RUN_1B), abs=1e-12)
    assert score.meta["n_steps"] == 7
    by_query = rm.benchmark("reteco-1b").score(run, data=release, split="dev")
    assert by_query.meta["average"] == "query"
    assert by_query.official != pytest.approx(score.official)


def test_removed_duplicates_named_with_their_kept_id(release, tmp_path):
    run = _write(tmp_path, RUN_1A)
    score = rm.benchmark("reteco-1a").score(run, data=release, split="dev")
    removed = [p for p in score.report.errors if p.kind == "removed_duplicate"]
    assert [(p.doc_id, p.line) for p in removed] == [("bitcoin/a2.txt", 3)]
    assert "kept as bitcoin/a.txt" in removed[0].message
    assert any("qrels row(s) name a duplicate removed in data v1.1 (law/x2.txt -> law/x.txt)" in n
               for n in score.notes)


def test_map_duplicates(release, tmp_path):
    run = _write(tmp_path, RUN_1A)
    dup = _dup_map(release)
    kit = rm.benchmark("reteco-1a").score(run, data=release, split="dev", rules="kit", map_duplicates=True)
    assert kit.official == pytest.approx(_kit_expected(release, "qrels_dev.txt", RUN_1A, dup), abs=1e-12)
    page = rm.benchmark("reteco-1a").score(run, data=release, split="dev", map_duplicates=True)
    assert not [p for p in page.report.errors if p.kind == "removed_duplicate"]
    assert not any("name a duplicate removed" in n for n in page.notes)


def test_gold_outside_the_corpus_named_in_both_rule_sets(release, tmp_path):
    run = _write(tmp_path, RUN_1A)
    for rules in ("page", "kit"):
        notes = rm.benchmark("reteco-1a").score(run, data=release, split="dev", rules=rules).notes
        assert any(n.startswith("3 gold document(s) are not in the corpus (100_1:bitcoin/gone.txt, "
                                "102_3:bitcoin/ghost.txt, 200_3:law/x2.txt)") for n in notes), notes
        assert any(n.startswith("1 query topic(s) have no gold document in the corpus (102_3)") for n in notes)


def test_published_baseline_beside_the_score(release, tmp_path):
    run = _write(tmp_path, RUN_1A)
    score = rm.benchmark("reteco-1a").score(run, data=release, split="dev", rules="kit")
    # BASELINE_RESULTS.md, 1a dev: bitcoin 0.0370, law 0.0574 -> their mean over the two domains scored
    line = next(n for n in score.notes if n.startswith("published BM25 baseline 1a dev"))
    assert f"{(0.0370 + 0.0574) / 2:.4f}" in line and "BASELINE_RESULTS.md" in line
    page = rm.benchmark("reteco-1a").score(run, data=release, split="dev")
    assert any(n.startswith("published BM25 baseline 1a dev (mean over bitcoin, law): 0.0472, computed with the "
                            "starter kit's rules") for n in page.notes)


def test_cli_rules_kit(release, tmp_path, capsys):
    run = _write(tmp_path, RUN_1A)
    code = cli_main(["score", "reteco-1a", str(run), "--data", str(release), "--split", "dev", "--rules", "kit",
                     "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["official"]["aggregation"].startswith("starter-kit rules")
    assert out["split"] == "dev" and out["rules"] == "kit"
    assert out["official"]["value"] == pytest.approx(_kit_expected(release, "qrels_dev.txt", RUN_1A), abs=1e-12)
    code = cli_main(["score", "reteco-1a", str(run), "--data", str(release), "--split", "dev", "--map-duplicates"])
    captured = capsys.readouterr()
    assert code == 0 and "rules: page" in captured.out + captured.err


# ------------------------------------------------------------------------------------------------
# Track 2a: the kit writes one run file per domain, with plain turn ids

RECOR = Path(rm.__file__).resolve().parent / "sample" / "data"
RECOR_TRACK = RECOR / "reteco" / "track2_recor"
RECOR_RUN = RECOR / "runs" / "reteco_track2.txt"


def _per_domain_files(tmp_path: Path) -> dict[str, Path]:
    """The sample's qualified run split into one file per domain with plain ids (``3_turn_1``);
    a repeated document (last score wins under the kit) and an unknown document are added."""
    lines: dict[str, list[str]] = {}
    for line in RECOR_RUN.read_text(encoding="utf-8").splitlines():
        qid, rest = line.split(" ", 1)
        dom, plain = qid.split("/", 1)
        lines.setdefault(dom, []).append(f"{plain} {rest}")
    first = lines["law"][0].split()
    lines["law"].append(f"{first[0]} Q0 {first[2]} 999 -5 r")  # its first document again, now last
    lines["law"].append(f"{first[0]} Q0 law/not_in_corpus.txt 1000 99 r")
    out = {}
    for dom, rows in lines.items():
        out[dom] = tmp_path / f"bm25_{dom}.txt"
        out[dom].write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out


def _recor_kit_expected(files: dict[str, Path]) -> float:
    qrels: dict[str, dict[str, int]] = {}
    domain: dict[str, str] = {}
    corpus: dict[str, set[str]] = {}
    for folder in sorted(p for p in RECOR_TRACK.iterdir() if p.is_dir()):
        dom = folder.name
        corpus[dom] = {json.loads(line)["doc_id"] for line in (folder / "documents.jsonl").open(encoding="utf-8")}
        for line in (folder / "qrels_dev.txt").open(encoding="utf-8"):
            q, _, d, r = line.split()
            if d in corpus[dom]:  # gold outside the corpus dropped
                qrels.setdefault(f"{dom}/{q}", {})[d] = int(r)
            domain[f"{dom}/{q}"] = dom
    qrels = {q: g for q, g in qrels.items() if any(r > 0 for r in g.values())}
    run: dict[str, dict[str, float]] = {}
    for dom, path in files.items():
        for line in path.read_text(encoding="utf-8").splitlines():
            q, _, d, _, s, _ = line.split()
            run.setdefault(f"{dom}/{q}", {})[d] = float(s)
    by_domain: dict[str, list[float]] = {}
    for q, v in _ndcg(qrels, run).items():
        by_domain.setdefault(domain[q], []).append(v)
    rounded = [round(sum(v) / len(v), 5) for _, v in sorted(by_domain.items())]
    return sum(rounded) / len(rounded)


def test_2a_per_domain_files_under_kit_rules(tmp_path):
    files = _per_domain_files(tmp_path)
    expected = _recor_kit_expected(files)
    bench = rm.benchmark("reteco-2a")
    as_list = bench.score(list(files.values()), data=RECOR, split="dev", rules="kit")
    assert as_list.official == pytest.approx(expected, abs=1e-12)
    as_map = bench.score({d: str(p) for d, p in files.items()}, data=RECOR, split="dev", rules="kit")
    assert as_map.official == as_list.official
    # plain numeric conversation ids repeat across domains: the files keep them apart
    assert not [p for p in as_list.report.errors if p.kind == "ambiguous_query"]
    # the page rules on the same files give the numbers of the one qualified run (its last two lines aside)
    page = bench.score(list(files.values()), data=RECOR, split="dev")
    qualified = bench.score(RECOR_RUN, data=RECOR, split="dev")
    assert page.official == pytest.approx(qualified.official, abs=1e-12)


def test_2a_cli_several_run_files(tmp_path, capsys):
    files = _per_domain_files(tmp_path)
    code = cli_main(["score", "reteco-2a", *map(str, files.values()), "--data", str(RECOR), "--split", "dev",
                     "--rules", "kit", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["official"]["value"] == pytest.approx(_recor_kit_expected(files), abs=1e-12)


# ------------------------------------------------------------------------------------------------
# the starter kit's format checker (validate --rules kit)

def _kit_checker_reference(text: str) -> set[int]:
    """The failing lines as the kit's format_checker.py is described (starter_kit/README.md and
    the RETECO submission rules): 6 whitespace-separated fields, rank = Python int() >= 1 and
    unique within its topic, score = Python float(). Plain Python, line by line."""
    bad, seen = set(), set()
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        f = line.split()
        if len(f) != 6:
            bad.add(no)
            continue
        try:
            rank = int(f[3])
            float(f[4])
        except ValueError:
            bad.add(no)
            continue
        if rank < 1 or (f[0], rank) in seen:
            bad.add(no)
            continue
        seen.add((f[0], rank))
    return bad


KIT_FORMAT_CASES = """\
q1 Q0 d1 1 2.5 r
q1 Q0 d2 2 1.5
q1 Q0 d3 3 1.0 r extra
q1 Q0 d4 0 1.0 r
q1 Q0 d5 -1 1.0 r
q1 Q0 d6 1.0 1.0 r
q1 Q0 d7 1 0.5 r
q1 Q0 d8 8 abc r
q1 Q0 d9 9 3_0 r
q1 Q0 d10 10 nan r
q1 Q0 d11 1_1 -inf r
q2 Q0 d1 1 1e3 r
q2 Q0 d2 +2 .5 r
q2 Q0 d3 03 5. r

q2 Q0 d4 3 0x1 r
"""


def test_kit_format_check_fails_exactly_where_the_kit_fails(tmp_path):
    from reteco_measures.benchmarks.reteco.contract import check_kit_format

    path = _write(tmp_path, KIT_FORMAT_CASES)
    expected = _kit_checker_reference(KIT_FORMAT_CASES)
    assert expected == {2, 3, 4, 5, 6, 7, 8, 16}
    assert {p.line for p in check_kit_format(path)} == expected
    ok = _write(tmp_path, RUN_1A, "ok.txt")
    assert check_kit_format(ok) == [] and _kit_checker_reference(RUN_1A) == set()


def test_validate_rules_kit_cli(tmp_path, capsys):
    bad = _write(tmp_path, KIT_FORMAT_CASES)
    assert cli_main(["validate", str(bad), "--contract", "reteco", "--rules", "kit"]) == 1
    out = capsys.readouterr().out
    assert "starter-kit format check (rules: kit): INVALID, 8 line(s) fail" in out
    # 3_0 passes the kit (Python float reads it); the default reader names it instead
    ok = _write(tmp_path, "q1 Q0 d1 1 3_0 r\n", "sep.txt")
    assert cli_main(["validate", str(ok), "--contract", "reteco", "--rules", "kit"]) == 0
    capsys.readouterr()
    assert cli_main(["validate", str(ok), "--contract", "reteco"]) == 1
    assert "digit separator" in capsys.readouterr().out


def test_leaderboard_ranks_by_the_kit_number(release, tmp_path):
    a = _write(tmp_path, RUN_1A, "a.txt")
    b = _write(tmp_path, "".join(RUN_1A.splitlines(keepends=True)[:9]), "b.txt")  # 100_1 and 101_2 only
    board = rm.benchmark("reteco-1a").leaderboard({"a": a, "b": b}, data=release, split="dev", rules="kit",
                                                  n_resamples=200)
    expected = {"a": _kit_expected(release, "qrels_dev.txt", RUN_1A),
                "b": _kit_expected(release, "qrels_dev.txt", b.read_text(encoding="utf-8"))}
    got = dict(zip(board.ranking["run"], board.ranking["value"], strict=True))
    assert got == pytest.approx(expected, abs=1e-12)
    assert list(board.ranking["run"]) == sorted(expected, key=lambda r: -expected[r])
    # default rules: unchanged, the mean over topics with missing topics 0
    page = rm.benchmark("reteco-1a").leaderboard({"a": a, "b": b}, data=release, split="dev", n_resamples=200)
    got = dict(zip(page.ranking["run"], page.ranking["value"], strict=True))
    assert got["a"] == pytest.approx(_page_expected(release, "qrels_dev.txt", RUN_1A), abs=1e-12)


def test_whole_corpus_topics_by_hand():
    """A topic whose relevant documents are its domain's whole corpus (the organisers' sample),
    counted on the corpus' integer codes: t1 finds both bitcoin documents relevant, t2 one of
    them, t3 the one law document (a gold document outside the corpus does not count)."""
    import pandas as pd

    from reteco_measures.benchmarks.reteco.rules import whole_corpus_topics

    corpus = pd.DataFrame({"doc_id": ["b/1", "b/2", "l/1"], "domain": ["bitcoin", "bitcoin", "law"]})
    qrels = pd.DataFrame({"query_id": ["t1", "t1", "t2", "t2", "t3", "t3", "t1"],
                          "doc_id": ["b/2", "b/1", "b/1", "b/2", "l/1", "l/gone", "b/1"],
                          "relevance": [1, 2, 1, 0, 1, 1, 1],
                          "domain": ["bitcoin", "bitcoin", "bitcoin", "bitcoin", "law", "law", "bitcoin"]})
    assert whole_corpus_topics(qrels, corpus) == [("t1", "bitcoin"), ("t3", "law")]
    assert whole_corpus_topics(qrels.drop(columns="domain"), corpus) == []
    assert whole_corpus_topics(qrels, None) == []


def test_domain_check_renumbers_the_kept_ranks():
    """Rows removed by the domain check after the contract ranked the run: the kept rows' ranks
    are renumbered among themselves (trec_eval's ranks of the rows scored)."""
    import pandas as pd

    from reteco_measures.benchmarks.reteco.rules import domain_check

    corpus = pd.DataFrame({"doc_id": ["b/1", "b/2", "l/1"], "domain": ["bitcoin", "bitcoin", "law"]})
    topics = pd.DataFrame({"query_id": ["q1", "q2"], "domain": ["bitcoin", "law"]})
    cleaned = pd.DataFrame({"query_id": ["q1", "q1", "q1", "q2", "q2"],
                            "doc_id": ["b/1", "l/1", "b/2", "b/1", "l/1"],
                            "score": [2.0, 3.0, 1.0, 5.0, 4.0], "rank": [2, 1, 3, 1, 2], "line": [1, 2, 3, 4, 5]})
    kept, problems, other = domain_check(cleaned, topics, corpus, "run.txt", "{doc} not in the {domain} corpus")
    assert kept[["doc_id", "rank"]].values.tolist() == [["b/1", 1], ["b/2", 2], ["l/1", 1]]
    assert other == 2 and [(p.line, p.kind, p.message) for p in problems] == [
        (2, "other_domain_doc", "l/1 not in the bitcoin corpus"), (4, "other_domain_doc", "b/1 not in the law corpus")]
