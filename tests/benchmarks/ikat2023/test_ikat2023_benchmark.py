"""``score ikat-2023`` on a run built in the test from the real qrels, compared per turn with
pytrec_eval run side by side (1e-9); judged turns missing from the run score 0.

Notes: The iKAT 2023 notes say what happened to an invalid run: it is still scored as read (the
organisers' validator would reject it), and only a run with no passage scores 0 everywhere."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.benchmarks.ikat2023.benchmark import score_ikat_2023
from reteco_measures.benchmarks.ikat2023.data import ikat_qrels, load_ikat_topics, ptkb_qrels
from reteco_measures.cli.main import main
from reteco_measures.sample import ikat_sample_root


@pytest.fixture(scope="module")
def root(ikat2023_dir: Path, tmp_path_factory) -> Path:
    r = tmp_path_factory.mktemp("ikroot")
    (r / "ikat2023").symlink_to(ikat2023_dir, target_is_directory=True)
    return r


@pytest.fixture(scope="module")
def data(root: Path):
    return {
        "topics": load_ikat_topics("test", root=root),
        "qrels": ikat_qrels(root=root),
        "ptkb": {"org": ptkb_qrels("org", root=root), "nist": ptkb_qrels("nist", root=root)},
    }


def _build_run(data) -> tuple[dict, dict[str, list[str]], dict[str, list[str]]]:
    """A run JSON from the qrels: per judged turn a shuffled mix of judged and made-up passages in
    two responses (with overlaps); 10 judged turns left out; PTKB lists from the topics."""
    rng = random.Random(7)
    qrels, topics = data["qrels"], data["topics"]
    by_turn = qrels.groupby("query_id")["doc_id"].agg(list)
    turns, passage_order, ptkb_order = [], {}, {}
    judged = sorted(by_turn.index)
    left_out = set(rng.sample(judged, 10))
    ptkb_of = topics.set_index("query_id")["ptkb"]
    for qid in judged:
        if qid in left_out:
            continue
        docs = list(by_turn[qid])
        rng.shuffle(docs)
        docs = docs[: rng.randint(1, min(len(docs), 700))]
        fake = [f"clueweb22-en9999-00-{i:05d}:{rng.randint(0, 9)}" for i in range(rng.randint(0, 30))]
        pool = docs + fake
        rng.shuffle(pool)
        first, second = pool[: len(pool) // 2 + 1], pool[len(pool) // 3:]  # overlapping responses
        order = list(dict.fromkeys(first + second))
        passage_order[qid] = order
        statements = list(ptkb_of[qid])
        rng.shuffle(statements)
        ptkb_order[qid] = statements[: rng.randint(1, len(statements))]

        def response(rank, ids, qid=qid):
            return {"rank": rank, "text": f"response {rank}",
                    "passage_provenance": [{"id": p, "text": "", "score": float(len(ids) - i), "used": i < 3}
                                           for i, p in enumerate(ids)],
                    "ptkb_provenance": [{"id": s, "text": ptkb_of[qid][s], "score": 1.0 / (i + 1)}
                                        for i, s in enumerate(ptkb_order[qid])]}

        turns.append({"turn_id": qid, "responses": [response(1, first), response(2, second)]})
    return {"run_name": "from_qrels", "run_type": "automatic", "turns": turns}, passage_order, ptkb_order


def _pytrec(qrels: pd.DataFrame, order: dict[str, list[str]], measures: set[str], rel: int = 1) -> dict:
    qd: dict = {}
    for q, d, r in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"], strict=True):
        qd.setdefault(q, {})[d] = int(r)
    # the expected converted run: position i (0-based) gets a strictly decreasing score
    rd = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} for q, ids in order.items()}
    return pytrec_eval.RelevanceEvaluator(qd, measures, relevance_level=rel).evaluate(rd)


def test_passage_and_ptkb_measures_match_pytrec_eval(data, tmp_path: Path):
    run, passage_order, ptkb_order = _build_run(data)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run), encoding="utf-8")
    # _build_run's expected order is the 'position' conversion (the organisers' rule has its own tests)
    result = score_ikat_2023(path, **data, passage_score="position")
    # the run answers the judged turns only: the unjudged turns are missing (errors for the organisers)
    assert {p.kind for p in result.report.problems_of("error")} == {"missing_query"}
    assert not [p for p in result.report.errors if p.kind not in ("missing_query", "format")]
    per = result.per_query
    judged = sorted(data["qrels"]["query_id"].unique())
    assert len(judged) == 176

    graded = _pytrec(data["qrels"], passage_order, {"ndcg_cut.3,5,1000"})
    binary = _pytrec(data["qrels"], passage_order, {"map_cut.1000", "recip_rank", "P.20", "recall.20,1000"}, rel=2)
    pairs = {
        "nDCG@3": (graded, "ndcg_cut_3"),
        "nDCG@5": (graded, "ndcg_cut_5"),
        "nDCG@1000": (graded, "ndcg_cut_1000"),
        "AP(rel=2)@1000": (binary, "map_cut_1000"),
        "RR(rel=2)": (binary, "recip_rank"),
        "P(rel=2)@20": (binary, "P_20"),
        "R(rel=2)@20": (binary, "recall_20"),
        "R(rel=2)@1000": (binary, "recall_1000"),
    }
    passage = per[per["task"] == "passage"].set_index("query_id")
    assert sorted(passage.index) == judged
    scores = result.scores.set_index(["task", "qrels", "measure"])["value"]
    for measure, (expected, key) in pairs.items():
        want = {q: expected.get(q, {}).get(key, 0.0) for q in judged}  # missing judged turn -> 0
        for q in judged:
            assert passage.loc[q, measure] == pytest.approx(want[q], abs=1e-9), (measure, q)
        assert scores[("passage", "nist", measure)] == pytest.approx(sum(want.values()) / 176, abs=1e-9)
        assert result.scores.set_index("measure").loc[measure, "n"].max() == 176
    # the left-out turns really are 0 and counted
    left_out = [q for q in judged if q not in passage_order]
    assert len(left_out) == 10 and (passage.loc[left_out, "nDCG@3"] == 0).all()

    for version in ("org", "nist"):
        q = data["ptkb"][version]
        expected = _pytrec(q, ptkb_order, {"P.3", "recall.3", "map", "ndcg_cut.3"})
        ptkb = per[(per["task"] == "ptkb") & (per["qrels"] == version)].set_index("query_id")
        turns = sorted(q["query_id"].unique())
        assert sorted(ptkb.index) == turns
        for measure, key in (("P@3", "P_3"), ("R@3", "recall_3"), ("AP", "map"), ("nDCG@3", "ndcg_cut_3")):
            want = [expected.get(t, {}).get(key, 0.0) for t in turns]
            assert ptkb.loc[turns, measure].tolist() == pytest.approx(want, abs=1e-9), (version, measure)
            assert scores[("ptkb", version, measure)] == pytest.approx(sum(want) / len(turns), abs=1e-9)


def test_perfect_passage_run_scores_one_on_ndcg(data):
    """Independent anchor: passages of each judged turn sorted by grade give nDCG@k = 1 wherever a
    grade > 0 exists (and 0 elsewhere, trec_eval's convention)."""
    qrels = data["qrels"]
    turns = []
    for qid, group in qrels.sort_values(["query_id", "relevance"], ascending=[True, False]).groupby("query_id"):
        ids = group["doc_id"].tolist()
        turns.append({"turn_id": qid, "responses": [{
            "rank": 1, "text": "x", "ptkb_provenance": [{"id": "1", "text": None, "score": 1.0}],
            "passage_provenance": [{"id": d, "text": "", "score": float(len(ids) - i), "used": True}
                                   for i, d in enumerate(ids)]}]})
    result = score_ikat_2023({"run_name": "ideal", "run_type": "manual", "turns": turns}, **data)
    per = result.per_query[result.per_query["task"] == "passage"].set_index("query_id")
    has_gain = qrels.groupby("query_id")["relevance"].max() > 0
    for measure in ("nDCG@3", "nDCG@5", "nDCG@1000"):
        assert per.loc[has_gain[has_gain].index, measure].tolist() == pytest.approx([1.0] * int(has_gain.sum()))
        assert (per.loc[has_gain[~has_gain].index, measure] == 0).all()
    # R(rel=2)@1000 = 1 on every turn with a grade >= 2 passage (no turn has more than 1000 judged)
    has_rel = qrels.groupby("query_id")["relevance"].max() >= 2
    assert per.loc[has_rel[has_rel].index, "R(rel=2)@1000"].tolist() == pytest.approx([1.0] * int(has_rel.sum()))
    # Judged@10 by hand: every passage of this run is judged, so the share of each turn's top 10
    # that the qrels judge is 1; with an unjudged passage ranked first on one turn, that turn's top
    # min(n + 1, 10) holds one unjudged passage
    assert (per["Judged@10"] == 1.0).all()
    passages = turns[0]["responses"][0]["passage_provenance"]
    n = len(passages)
    passages.insert(0, {"id": "clueweb22-en0000-00-00000:0", "text": "", "score": 1e6, "used": True})
    assert ("clueweb22-en0000-00-00000:0" not in set(qrels["doc_id"]))
    shifted = score_ikat_2023({"run_name": "ideal", "run_type": "manual", "turns": turns}, **data)
    sp = shifted.per_query[shifted.per_query["task"] == "passage"].set_index("query_id")
    top = min(n + 1, 10)
    assert sp.loc[turns[0]["turn_id"], "Judged@10"] == pytest.approx((top - 1) / top, abs=1e-12)


def test_cli(root: Path, ikat2023_dir: Path, capsys, monkeypatch):
    sample = str(ikat2023_dir / "2023_sample_run.json")
    # the organisers' sample answers 6 of the 332 test turns: their validator refuses it (missing turns
    # are errors), so the exit status is 1; the scores are still computed and printed
    assert main(["score", "ikat-2023", sample, "--data", str(root)]) == 1
    out = capsys.readouterr().out
    assert "nDCG@1000" in out and "AP(rel=2)@1000" in out and "nist" in out and "org" in out
    monkeypatch.setenv("RETECO_DATA", str(root))
    assert main(["score", "ikat-2023", sample, "--ptkb-qrels", "nist", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert {s["qrels"] for s in doc["scores"] if s["task"] == "ptkb"} == {"nist"}
    assert [s["measure"] for s in doc["scores"] if s["task"] == "passage"] == [
        "nDCG@3", "nDCG@5", "nDCG@1000", "AP(rel=2)@1000", "RR(rel=2)", "P(rel=2)@20", "R(rel=2)@20",
        "R(rel=2)@1000", "Judged@10"]
    assert all(s["n"] == 176 for s in doc["scores"] if s["task"] == "passage")
    bad = root / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["score", "ikat-2023", str(bad)]) == 1
    assert "not valid JSON" in capsys.readouterr().err  # unscorable: the reason and the problems on stderr


# --------------------------------------------------------------------------------------------
# the bundled synthetic iKAT-like sample (made-up data in the real formats)


def test_bundled_sample_demo_and_determinism(tmp_path: Path, capsys):
    from reteco_measures.cli.score_cmd import demo_argv
    from reteco_measures.sample import generate_ikat2023 as gen
    from reteco_measures.sample import ikat_sample_root

    sample = ikat_sample_root(tmp_path / "sample")
    again = gen.main(tmp_path / "again")  # deterministic: a second generation is byte-identical
    assert again
    for path in again:
        assert path.read_bytes() == (sample / path.relative_to(tmp_path / "again")).read_bytes(), path
    argv = [str(sample / "runs" / "ikat2023_run.json"), "--data", str(sample), "--passage-score", "position"]
    assert demo_argv("ikat-2023", sample)[0].endswith("ikat2023_run.json")
    # the sample's deliberate defects (a PTKB id not in the PTKB, a missing turn) are errors for the
    # organisers' validator: exit status 1, scores still computed
    assert main(["score", "ikat-2023", *argv, "--format", "json", "--per-query"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert not doc["validation"]["valid"] and doc["validation"]["severity_counts"]["error"] == 2
    assert doc["validation"]["problem_counts"] == {"missing_query": 1, "unknown_doc": 1}
    # independent check of one number: nDCG@3 per judged turn with pytrec_eval on the converted run
    qrels = ikat_qrels(root=sample)
    run = json.loads((sample / "runs" / "ikat2023_run.json").read_text(encoding="utf-8"))
    order = {}
    for turn in run["turns"]:
        ids: list[str] = []
        for resp in sorted(turn["responses"], key=lambda r: r["rank"]):
            ids += [p["id"] for p in resp["passage_provenance"] if p["id"] not in ids]
        order[turn["turn_id"]] = ids
    expected = _pytrec(qrels, order, {"ndcg_cut.3"})
    judged = sorted(qrels["query_id"].unique())
    want = sum(expected.get(q, {}).get("ndcg_cut_3", 0.0) for q in judged) / len(judged)
    got = next(s["value"] for s in doc["scores"] if s["measure"] == "nDCG@3")
    assert got == pytest.approx(want, abs=1e-9)


# ------------------------------------------------------------------------------------------------
# Notes


@pytest.fixture(scope="module")
def sample():
    root = ikat_sample_root()
    return root, json.loads((root / "runs" / "ikat2023_run.json").read_text(encoding="utf-8"))


def _score(run, root):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rm.benchmark("ikat-2023").score(run, data=root)


def _invalid_notes(score) -> list[str]:
    return [n for n in score.notes if "invalid" in n]


def test_invalid_run_with_passages_is_scored_and_the_note_says_so(sample):
    root, run = sample
    score = _score(run, root)
    # the sample's two deliberate defects: one turn missing, one PTKB id not in the PTKB
    assert not score.valid and score.report.problem_counts() == {"missing_query": 1, "unknown_doc": 1}
    assert score.official > 0  # scored, not zeroed
    [note] = _invalid_notes(score)
    assert "1 missing turn(s)" in note and "1 unknown document(s)" in note and "scored as read" in note
    assert not any("every" in n and "is 0" in n for n in score.notes)
    assert not any("could not be read" in n for n in score.notes)


def test_a_valid_run_has_no_invalid_note(sample):
    root, run = sample
    topics = load_ikat_topics("test", root=root)
    ptkb = dict(zip(topics["query_id"], topics["ptkb"]))
    fixed = json.loads(json.dumps(run))
    for turn in fixed["turns"]:
        for resp in turn["responses"]:
            resp["ptkb_provenance"] = [p for p in resp["ptkb_provenance"] if p["id"] in ptkb[turn["turn_id"]]]
    present = {t["turn_id"] for t in fixed["turns"]}
    template = fixed["turns"][0]["responses"][0]
    for qid in topics["query_id"]:
        if qid not in present:
            fixed["turns"].append({"turn_id": qid, "responses": [{**template, "ptkb_provenance": []}]})
    score = _score(fixed, root)
    assert score.valid, [str(p) for p in score.report.problems_of("error")]
    assert _invalid_notes(score) == []


def test_run_without_passages_scores_zero_and_the_note_says_why(sample):
    root, run = sample
    score = _score({"run_name": run["run_name"], "run_type": run["run_type"], "turns": []}, root)
    assert not score.valid and len(score.report.run) == 0
    assert score.official == 0.0
    [note] = _invalid_notes(score)
    assert "holds no passage" in note and "every passage score is 0" in note and "format problem" in note


def test_missing_turns_are_one_count_in_turns(root: Path, ikat2023_dir: Path, capsys) -> None:
    """The organisers' sample run answers few turns: the removed count, the note and the printed
    summary all give the number of missing turns, counted here from the two JSON files."""
    topics = json.loads((ikat2023_dir / "2023_test_topics.json").read_text(encoding="utf-8"))
    run = json.loads((ikat2023_dir / "2023_sample_run.json").read_text(encoding="utf-8"))
    answered = {t["turn_id"] for t in run["turns"]}
    missing = {f"{top['number']}_{turn['turn_id']}" for top in topics for turn in top["turns"]} - answered
    assert len(missing) > 20  # the contract summarises them in one problem
    score = _score(str(ikat2023_dir / "2023_sample_run.json"), root)
    assert score.removed["missing_query"] == len(missing)
    [note] = _invalid_notes(score)
    assert f"{len(missing)} missing turn(s)" in note
    main(["score", "ikat-2023", str(ikat2023_dir / "2023_sample_run.json"), "--data", str(root)])
    out = capsys.readouterr().out
    assert f"{len(missing)} missing turn(s) (score 0)" in out and "1 missing" not in out
    assert f"{len(missing)} turns of the topics are missing" in out
