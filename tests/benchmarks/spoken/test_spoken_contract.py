"""The ``spoken`` contract: judged row by row; an invalid row scores 0, valid rows still count."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.benchmarks.spoken.contract import validate_spoken

CORPUS = pd.DataFrame({"doc_id": ["m1", "m2", "m3", "l1", "l2"], "domain": ["med", "med", "med", "law", "law"]})
REQUESTS = pd.DataFrame({"query_id": ["r1", "r2", "r3", "r4"], "domain": ["med", "law", "med", "law"]})


def row(qid, results) -> str:
    return json.dumps({"query_id": qid, "results": [{"doc_id": d, "score": s} for d, s in results]})


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def validate(path, **kw):
    return rm.validate_run(path, "spoken", corpus=kw.pop("corpus", CORPUS), queries=kw.pop("queries", REQUESTS), **kw)


GOOD = [
    row("r1", [("m2", 2.0), ("m1", 2.0), ("m3", 0.5)]),  # ties in any order are fine
    row("r2", [("l1", 1.0)]),
    row("r3", []),
    row("r4", [("l2", -1.0), ("l1", -1.0)]),
]


def test_all_valid(tmp_path):
    report = validate(write(tmp_path, GOOD))
    assert report.ok and report.valid
    assert report.invalid_queries == [] and report.missing_queries == []
    assert report.run["doc_id"].tolist() == ["m2", "m1", "m3", "l1", "l2", "l1"]
    assert report.run["rank"].tolist() == [1, 2, 3, 1, 1, 2]


@pytest.mark.parametrize(
    "bad_row,kind",
    [
        (row("r1", [("m1", 1.0), ("l1", 0.5)]), "domain"),  # a law document for a med request
        (row("r1", [("m1", 1.0), ("m1", 0.5)]), "duplicate"),
        (row("r1", [("m1", 1.0), ("zz", 0.5)]), "unknown_doc"),
        (row("r1", [("m1", 1.0), ("m2", 1.5)]), "order"),  # increasing
        ('{"query_id": "r1", "results": [{"doc_id": "m1", "score": NaN}]}', "score"),
        ('{"query_id": "r1", "results": [{"doc_id": "m1", "score": Infinity}]}', "score"),
        ('{"query_id": "r1", "results": [{"doc_id": "m1", "score": "1"}]}', "score"),
        ('{"query_id": "r1", "results": [{"doc_id": "m1", "score": false}]}', "score"),
        ('{"query_id": "r1", "results": [{"doc_id": "m1"}]}', "field"),
        ('{"query_id": "r1", "results": "m1"}', "field"),
        ('{"query_id": "r1"}', "field"),
    ],
)
def test_invalid_row_scores_zero_others_count(tmp_path, bad_row, kind):
    lines = [bad_row, *GOOD[1:]]
    report = validate(write(tmp_path, lines))
    assert report.valid  # the batch stays scorable
    assert report.invalid_queries == ["r1"] and report.missing_queries == []
    assert {(p.line, p.kind) for p in report.errors} == {(1, kind)}
    assert "r1" not in set(report.run["query_id"])
    assert set(report.run["query_id"]) == {"r2", "r4"}  # r3 has an empty (valid) list


def test_more_than_ten(tmp_path):
    corpus = pd.DataFrame({"doc_id": [f"m{i}" for i in range(12)], "domain": "med"})
    queries = pd.DataFrame({"query_id": ["r1"], "domain": ["med"]})
    lines = [row("r1", [(f"m{i}", 12 - i) for i in range(11)])]
    report = validate(write(tmp_path, lines), corpus=corpus, queries=queries)
    assert report.invalid_queries == ["r1"] and [p.kind for p in report.errors] == ["empty", "too_many"]
    # the only request is rejected: nothing is left to score (an error); the row problem is a warning
    assert [p.severity for p in report.errors] == ["error", "warning"] and not report.valid
    report = validate(write(tmp_path, [row("r1", [(f"m{i}", 12 - i) for i in range(10)])]), corpus=corpus,
                      queries=queries)
    assert report.ok


def test_unreadable_line_means_missing_and_unknown_request_ignored(tmp_path):
    lines = [GOOD[0], '{"query_id": "r2", "results": [', GOOD[2], GOOD[3], row("r9", [("m1", 1.0)])]
    report = validate(write(tmp_path, lines))
    assert report.missing_queries == ["r2"] and report.invalid_queries == []
    assert {(p.line, p.kind) for p in report.errors} == {(2, "format"), (5, "unknown_query"), (None, "missing_query")}
    assert set(report.run["query_id"]) == {"r1", "r4"}


def test_repeated_request_policy(tmp_path):
    lines = [*GOOD, row("r2", [("l2", 1.0)])]
    report = validate(write(tmp_path, lines))
    assert report.invalid_queries == ["r2"]
    assert [(p.line, p.kind) for p in report.errors] == [(5, "repeated_query")]
    assert "r2" not in set(report.run["query_id"])
    first = validate_spoken(write(tmp_path, lines), corpus=CORPUS, queries=REQUESTS, repeated="first")
    assert first.invalid_queries == []
    assert first.run[first.run["query_id"] == "r2"]["doc_id"].tolist() == ["l1"]  # the first row counts
    assert [(p.line, p.kind) for p in first.errors] == [(5, "repeated_query")]
    with pytest.raises(ValueError):
        validate_spoken(write(tmp_path, lines), repeated="last")


def test_every_problem_reported_with_its_line(tmp_path):
    lines = [
        row("r1", [("m1", 1.0), ("m1", 2.0), ("l1", 0.0)]),  # 1: duplicate + order + domain
        "garbage",  # 2
        row("r2", [("zz", 1.0)]),  # 3: unknown doc
        GOOD[3],  # 4: fine
    ]
    report = validate(write(tmp_path, lines))
    assert {(p.line, p.kind) for p in report.errors} == {
        (1, "duplicate"), (1, "order"), (1, "domain"), (2, "format"), (3, "unknown_doc"), (None, "missing_query")}
    assert report.invalid_queries == ["r1", "r2"] and report.missing_queries == ["r3"]
    assert report.run["query_id"].unique().tolist() == ["r4"]
    text = [str(p) for p in report.errors]
    assert text[0].startswith(f"{tmp_path / 'results.jsonl'}:1: r1: ")


def test_without_domains_the_domain_check_is_skipped(tmp_path):
    lines = [row("r1", [("l1", 1.0)])]
    report = rm.validate_run(write(tmp_path, lines), "spoken", corpus=CORPUS["doc_id"].tolist(),
                             queries=["r1"])
    assert report.ok and "domain" in report.extra["checks_skipped"]
    report = rm.validate_run(write(tmp_path, lines), "spoken")
    assert report.ok and set(report.extra["checks_skipped"]) >= {"unknown_doc", "domain", "missing_query"}


def test_requests_and_corpus_from_files(tmp_path):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"id": d, "domain": m}) + "\n" for d, m in CORPUS.values), encoding="utf-8")
    reqs = tmp_path / "requests.jsonl"
    reqs.write_text("".join(json.dumps({"query_id": q, "domain": m, "one_best": "x"}) + "\n"
                            for q, m in REQUESTS.values), encoding="utf-8")
    report = rm.validate_run(write(tmp_path, [row("r1", [("l1", 1.0)])]), "spoken", corpus=str(corpus),
                             queries=str(reqs))
    assert report.invalid_queries == ["r1"] and sorted(report.missing_queries) == ["r2", "r3", "r4"]
    assert any(p.kind == "domain" for p in report.errors)


# ---- property: the corrupted rows, and only they, are invalid --------------------------------------

DOCS = pd.DataFrame({"doc_id": [f"{d}{i}" for d in "ab" for i in range(12)], "domain": ["A"] * 12 + ["B"] * 12})
REQS = pd.DataFrame({"query_id": [f"q{i}" for i in range(8)], "domain": ["A", "B"] * 4})


def corrupt(rec: dict, how: str, rnd: random.Random) -> dict:
    res = rec["results"]
    dom = "a" if rec["domain"] == "A" else "b"
    other = "b" if dom == "a" else "a"
    if not res:
        res.append({"doc_id": f"{dom}0", "score": 1.0})
    if how == "domain":
        res.append({"doc_id": f"{other}0", "score": res[-1]["score"] - 1})
    elif how == "dup":
        res.append({"doc_id": res[0]["doc_id"], "score": res[-1]["score"] - 1})
    elif how == "nan":
        res[rnd.randrange(len(res))]["score"] = float("nan")
    elif how == "rising":
        res.append({"doc_id": "zzz", "score": res[-1]["score"] + 5})
    return rec


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["ok", "domain", "dup", "nan", "rising"]), min_size=8, max_size=8),
       st.randoms(use_true_random=False), st.sets(st.integers(0, 7), max_size=3))
@pytest.mark.slow
def test_property_row_independence(plan, rnd, dropped):
    lines, expected_invalid = [], set()
    for i, (qid, dom) in enumerate(REQS.values):
        if i in dropped:
            continue
        pool = [d for d, m in DOCS.values if m == dom]
        docs = rnd.sample(pool, rnd.randint(0, 8))
        scores = sorted((rnd.choice([0.0, 1.0, 2.0, 3.5]) for _ in docs), reverse=True)
        rec = {"query_id": qid, "domain": dom, "results": [{"doc_id": d, "score": s}
                                                            for d, s in zip(docs, scores, strict=True)]}
        if plan[i] != "ok":
            rec = corrupt(rec, plan[i], rnd)
            expected_invalid.add(qid)
        del rec["domain"]
        lines.append(json.dumps(rec))
    report = rm.validate_run("\n".join(lines) + "\n", "spoken", corpus=DOCS, queries=REQS)
    assert set(report.invalid_queries) == expected_invalid
    assert set(report.missing_queries) == {f"q{i}" for i in dropped}
    valid_rows = {json.loads(x)["query_id"] for x in lines} - expected_invalid
    assert set(report.run["query_id"]) <= valid_rows
    kept = sum(len(json.loads(x)["results"]) for x in lines if json.loads(x)["query_id"] in valid_rows)
    assert len(report.run) == kept
