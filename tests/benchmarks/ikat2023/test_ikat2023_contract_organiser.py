"""iKAT 2023, organiser-exact: the organisers' run conversion (``generate_run.py``: provenance score
/ (response rank + 1) in single precision, then trec_eval's order) and the organisers' validator
severities (exit 255 → error, logged warning → warning, our own checks → note).

Expected orderings are computed by hand in the comments, or by the rule re-written here in plain
Python (loop over responses in file order, numpy float32, sort by score then passage id descending);
measure values by pytrec_eval on that independently built run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import reteco_measures as rm
from reteco_measures.benchmarks.ikat2023.contract import convert_ikat_run

P = [f"clueweb22-en0000-00-0000{i}:0" for i in range(10)]


def _resp(rank, passages, ptkb=(("1", 1.0),), text="an answer", **extra):
    return {"rank": rank, "text": text,
            "passage_provenance": [{"id": p, "text": "t", "score": s, "used": True} for p, s in passages],
            "ptkb_provenance": [{"id": i, "text": "x", "score": s} for i, s in ptkb], **extra}


def _run(*responses, turn_id="9-1_1", **top):
    return {"run_name": "r", "run_type": "automatic", "turns": [{"turn_id": turn_id, "responses": list(responses)}],
            **top}


def _order(report):
    return report.run.sort_values(["query_id", "rank"])["doc_id"].tolist()


def test_issue_example_p1_p3_p2():
    # response 1: p1 = 10, p2 = 9 → 10/2 = 5, 9/2 = 4.5; response 2: p3 = 14 → 14/3 = 4.667
    report = convert_ikat_run(_run(_resp(1, [(P[1], 10), (P[2], 9)]), _resp(2, [(P[3], 14)])))
    assert _order(report) == [P[1], P[3], P[2]]
    assert report.run.set_index("doc_id")["score"].to_dict() == {P[1]: 5.0, P[2]: 4.5,
                                                                  P[3]: float(np.float32(14 / 3))}
    assert report.extra["passage_score"] == "organisers"  # the default
    assert _order(convert_ikat_run(_run(_resp(1, [(P[1], 10), (P[2], 9)]), _resp(2, [(P[3], 14)])),
                                   passage_score="position")) == [P[1], P[2], P[3]]


def test_first_occurrence_in_file_order_wins_with_its_own_rank():
    # listed first: rank 3 response with P0 = 8 → 8/4 = 2; listed second: rank 1 with P0 = 100 (dropped:
    # P0 already seen) and P1 = 3 → 1.5. Scores are not summed or maxed: P0 = 2 > P1 = 1.5
    report = convert_ikat_run(_run(_resp(3, [(P[0], 8)]), _resp(1, [(P[0], 100), (P[1], 3)])))
    assert report.run.set_index("doc_id")["score"].to_dict() == {P[0]: 2.0, P[1]: 1.5}
    assert _order(report) == [P[0], P[1]]
    # 'position' takes responses by rank: P0 (from rank 1), P1
    assert _order(convert_ikat_run(_run(_resp(3, [(P[0], 8)]), _resp(1, [(P[0], 100), (P[1], 3)])),
                                   passage_score="position")) == [P[0], P[1]]


def test_missing_rank_and_score_use_the_schema_defaults():
    # rank missing → 0 → divide by 1; score missing → 0
    r0 = {"text": "a", "passage_provenance": [{"id": P[4], "score": 0.75, "used": True}, {"id": P[5], "used": True}],
          "ptkb_provenance": [{"id": "1", "text": "x", "score": 1.0}]}
    report = convert_ikat_run(_run(r0, _resp(1, [(P[6], 1.0)])))
    assert report.run.set_index("doc_id")["score"].to_dict() == {P[4]: 0.75, P[5]: 0.0, P[6]: 0.5}
    assert _order(report) == [P[4], P[6], P[5]]
    sev = {(p.kind, p.severity) for p in report.errors}
    assert ("order", "warning") in sev  # rank missing or 0: the organisers warn
    assert ("score", "note") in sev  # missing score read as 0: only we say so


def test_single_precision_ties_fall_back_to_passage_id_descending():
    # 1.0/2 = 0.5 and 1.5000000001/3 = 0.50000000003: equal in single precision → passage id descending
    report = convert_ikat_run(_run(_resp(1, [(P[1], 1.0)]), _resp(2, [(P[2], 1.5000000001)])))
    assert report.run["score"].nunique() == 1
    assert _order(report) == [P[2], P[1]]


def _organisers_rule(run: dict) -> dict[str, list[str]]:
    """The rule written out independently: generate_run.py's loop, then trec_eval's sort."""
    out = {}
    for turn in run["turns"]:
        seen, rows = set(), []
        for resp in turn["responses"]:
            for p in resp["passage_provenance"]:
                if p["id"] not in seen:
                    seen.add(p["id"])
                    score = np.float32((1 / (resp["rank"] + 1)) * float(np.float32(p["score"])))
                    rows.append((p["id"], float(score)))
        # trec_eval: score descending, then docno descending (ids are ASCII: str order = strcmp)
        rows.sort(key=lambda r: r[0], reverse=True)
        rows.sort(key=lambda r: r[1], reverse=True)
        out[turn["turn_id"]] = rows
    return out


def _noisy_run(qrels: pd.DataFrame, seed: int = 7) -> dict:
    """Three responses per judged turn, each listing judged passages with noisy descending scores."""
    rng = np.random.default_rng(seed)
    turns = []
    for qid, group in qrels.groupby("query_id", sort=True):
        docs = group.sort_values("doc_id")["doc_id"].tolist()
        responses = []
        for rank in (1, 2, 3):
            pick = rng.permutation(len(docs))[: min(8, len(docs))]
            scores = np.sort(rng.uniform(0, 20, len(pick)))[::-1]
            responses.append({"rank": rank, "text": "x", "ptkb_provenance": [],
                              "passage_provenance": [{"id": docs[i], "score": float(s), "used": True}
                                                     for i, s in zip(pick, scores, strict=True)]})
        turns.append({"turn_id": qid, "responses": responses})
    return {"run_name": "noisy", "run_type": "automatic", "turns": turns}


def test_real_sample_and_a_noisy_run_against_the_rule_and_pytrec_eval(ikat2023_dir: Path):
    from reteco_measures.benchmarks.ikat2023.data import ikat_qrels

    sample = json.loads((ikat2023_dir / "2023_sample_run.json").read_text(encoding="utf-8"))
    converted = convert_ikat_run(sample)
    want = _organisers_rule(sample)
    for turn, rows in want.items():
        got = converted.run[converted.run["query_id"] == turn].sort_values("rank")
        assert got["doc_id"].tolist() == [d for d, _ in rows]
        assert got["score"].tolist() == [s for _, s in rows]
    position = convert_ikat_run(sample, passage_score="position").run
    differ = sum(position[position["query_id"] == t].sort_values("rank")["doc_id"].tolist() != [d for d, _ in r]
                 for t, r in want.items())
    assert differ == len(want) == 6  # every turn of the sample is ordered differently

    root = ikat2023_dir.parent
    qrels = ikat_qrels(root=root)
    noisy = _noisy_run(qrels)
    rule = _organisers_rule(noisy)
    trec_run = {q: {d: s for d, s in rows} for q, rows in rule.items()}
    qrels_dict = {q: dict(zip(g["doc_id"], g["relevance"].astype(int), strict=True))
                  for q, g in qrels.groupby("query_id")}
    expected = np.mean([v["ndcg_cut_3"] for v in
                        pytrec_eval.RelevanceEvaluator(qrels_dict, {"ndcg_cut.3"}).evaluate(trec_run).values()])
    ours = convert_ikat_run(noisy)
    assert ours.valid is not None
    got = rm.calc_aggregate(["nDCG@3"], qrels, ours.run[["query_id", "doc_id", "score"]])
    assert list(got.values())[0] == pytest.approx(expected, abs=1e-12)
    pos = rm.calc_aggregate(["nDCG@3"], qrels, convert_ikat_run(noisy, passage_score="position").run[
        ["query_id", "doc_id", "score"]])
    assert list(pos.values())[0] != pytest.approx(expected)  # the conversion changes the number


# ------------------------------------------------------------------------------------------------
# severities


def _sev(report, needle):
    hits = [p.severity for p in report.errors if needle in p.message]
    assert hits, (needle, [str(p) for p in report.errors])
    return hits[0]


TOPICS = pd.DataFrame({"query_id": ["9-1_1", "9-1_2"], "conversation_id": ["9-1", "9-1"],
                       "ptkb": [{"1": "I am vegan.", "2": "I live in Paris."}] * 2})


def _two_turns(**changes):
    good = _resp(1, [(P[0], 2.0), (P[1], 1.0)], ptkb=())
    good["ptkb_provenance"] = [{"id": "1", "text": "I am vegan.", "score": 1.0}]
    run = {"run_name": "r", "run_type": "automatic",
           "turns": [{"turn_id": "9-1_1", "responses": [json.loads(json.dumps(good))]},
                     {"turn_id": "9-1_2", "responses": [json.loads(json.dumps(good))]}]}
    for path, value in changes.items():
        target = run
        keys = path.split(".")
        for k in keys[:-1]:
            target = target[int(k)] if k.isdigit() else target[k]
        if value is _DROP:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
    return run


_DROP = object()
R0 = "turns.0.responses.0"


@pytest.mark.parametrize(("changes", "needle", "severity"), [
    # the organisers' validator exits 255
    ({"run_name": _DROP}, "run_name: missing", "error"),
    ({f"{R0}.passage_provenance.0.extra": 1}, "extra: not a field", "error"),
    ({f"{R0}.passage_provenance.0.score": float("nan")}, "not a finite number", "error"),
    ({f"{R0}.passage_provenance.0.used": "yes"}, "used: must be true or false", "error"),
    ({f"{R0}.ptkb_provenance.0.text": "I am Vegan."}, "does not match PTKB statement 1", "error"),
    ({f"{R0}.ptkb_provenance.0.id": "7"}, "'7' is not a statement", "error"),
    ({f"{R0}.ptkb_provenance.0.id": 1}, "ptkb_provenance[0].id: must be a string", "error"),
    ({"turns.1.turn_id": "9-1_1"}, "turn_id: repeated", "error"),
    ({"turns.1.turn_id": "9-1_9"}, "not a turn of the topics", "error"),
    ({f"{R0}.rank": 1.5}, "rank: must be an integer", "error"),
    # the organisers' validator warns
    ({"run_name": ""}, "run_name: empty", "warning"),
    ({"run_type": "semi"}, "run_type: must be 'automatic' or 'manual'", "warning"),
    ({f"{R0}.ptkb_provenance": []}, "ptkb_provenance: empty", "warning"),
    ({f"{R0}.passage_provenance.0.used": False, f"{R0}.passage_provenance.1.used": False},
     "no passage is marked used", "warning"),
    ({f"{R0}.passage_provenance.0.score": 0.5}, "greater than the previous score", "warning"),
    ({f"{R0}.passage_provenance.0.id": "doc-7:1"}, "does not start with 'clueweb22-'", "warning"),
    ({f"{R0}.text": ""}, "text: empty", "warning"),
    # only we check
    ({f"{R0}.passage_provenance.0.score": "2.0"}, "is a string", "note"),
    ({f"{R0}.passage_provenance.0.id": "clueweb22-x:y"}, "passage number", "note"),
    ({"turns.0.turnId": "9-1_1", "turns.0.turn_id": _DROP}, "read as 'turn_id'", "note"),
])
def test_severity_of_each_check(changes, needle, severity):
    report = convert_ikat_run(_two_turns(**changes), queries=TOPICS)
    assert _sev(report, needle) == severity
    assert report.valid == (not any(p.severity == "error" for p in report.errors))
    assert report.valid == (severity != "error")


def test_clean_run_missing_turn_and_too_many_passages():
    assert convert_ikat_run(_two_turns(), queries=TOPICS).ok
    one = _two_turns()
    one["turns"].pop()
    report = convert_ikat_run(one, queries=TOPICS)
    assert [(p.query_id, p.kind, p.severity) for p in report.errors] == [("9-1_2", "missing_query", "error")]
    big = _two_turns(**{f"{R0}.passage_provenance": [
        {"id": f"clueweb22-en0000-00-{i:05d}:0", "score": 1.0, "used": True} for i in range(1001)]})
    report = convert_ikat_run(big, queries=TOPICS)
    assert _sev(report, "1001 entries (more than 1000)") == "warning" and report.valid


def test_too_many_warnings_is_an_error():
    run = _two_turns(**{f"{R0}.passage_provenance.0.used": False, f"{R0}.passage_provenance.1.used": False})
    assert convert_ikat_run(run, queries=TOPICS, max_warnings=1).valid  # one warning: not more than 1
    report = convert_ikat_run(run, queries=TOPICS, max_warnings=0)
    assert not report.valid and _sev(report, "more than 0") == "error"


def test_severity_in_json_and_summaries():
    report = convert_ikat_run(_two_turns(run_name=""), queries=TOPICS)
    doc = report.as_dict()
    assert doc["severity_counts"] == {"error": 0, "warning": 1, "note": 0}
    assert doc["problems"][0]["severity"] == "warning"
    assert "warning: " in report.summary() and "valid with corrections" in report.summary()
    assert list(report.problems_frame()["severity"]) == ["warning"]


# ------------------------------------------------------------------------------------------------
# the other contracts


def test_reteco_removals_are_warnings_and_an_empty_run_an_error():
    report = rm.validate_run("q1 Q0 d1 1 2.0 r\nq1 Q0 d1 2 1.0 r\nq1 Q0 dx 3 0.5 r\nbad line\n", "reteco",
                             corpus=["d1", "d2"])
    assert {p.kind: p.severity for p in report.errors} == {"format": "warning", "duplicate": "warning",
                                                            "unknown_doc": "warning"}
    assert report.valid and not report.ok
    empty = rm.validate_run("bad line\n", "reteco")
    assert not empty.valid and [p.severity for p in empty.errors][0] == "error"


def test_chunqiu_violations_are_errors_and_spoken_row_problems_warnings():
    line = '{"query_id": "q1", "results": [{"doc_id": "d1", "score": 1}, {"doc_id": "d1", "score": 0.5}]}\n'
    ok = '{"query_id": "q2", "results": [{"doc_id": "d2", "score": 1}]}\n'
    cq = rm.validate_run(line + ok, "chunqiu")
    assert cq.errors and {p.severity for p in cq.errors} == {"error"} and not cq.valid
    sp = rm.validate_run(line + ok, "spoken")
    assert sp.errors and {p.severity for p in sp.errors} == {"warning"} and sp.valid
    assert sp.invalid_queries == ["q1"]
