"""The strict ``chunqiu`` contract: every violation, all at once, with line numbers."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.benchmarks.chunqiu.contract import parse_results
from reteco_measures.cli.main import main

# corpus order deliberately neither ascending nor descending by id
CORPUS = ["d5", "d2", "d9", "d1", "d7", "d3"]
QUERIES = ["q1", "q2", "q3"]


def write(tmp_path: Path, lines: list[str], name: str = "results.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def line(qid, results) -> str:
    return json.dumps({"query_id": qid, "results": [{"doc_id": d, "score": s} for d, s in results]})


GOOD = [
    line("q1", [("d9", 3.0), ("d2", 2.0), ("d1", 2.0), ("d3", 1.5)]),  # tie d2 (pos 2) before d1 (pos 4)
    line("q2", []),  # empty results are valid
    line("q3", [("d5", 0.5), ("d7", 0.5), ("d3", 0.5)]),  # three-way tie in corpus order
]


def validate(path, **kw):
    kw.setdefault("corpus", CORPUS)
    kw.setdefault("queries", QUERIES)
    return rm.validate_run(path, "chunqiu", **kw)


def kinds(report) -> set[tuple[int | None, str]]:
    return {(p.line, p.kind) for p in report.errors}


def test_valid_batch(tmp_path):
    report = validate(write(tmp_path, GOOD))
    assert report.ok and report.valid and report.errors == []
    assert report.run["query_id"].tolist() == ["q1"] * 4 + ["q3"] * 3
    assert report.run["doc_id"].tolist() == ["d9", "d2", "d1", "d3", "d5", "d7", "d3"]
    assert report.run["rank"].tolist() == [1, 2, 3, 4, 1, 2, 3]
    assert report.run["line"].tolist() == [1, 1, 1, 1, 3, 3, 3]
    assert report.extra["checks_skipped"] == []


def test_row_order_is_free(tmp_path):
    assert validate(write(tmp_path, GOOD[::-1])).valid


def test_corpus_as_dataframe_and_file(tmp_path):
    path = write(tmp_path, GOOD)
    frame = pd.DataFrame({"doc_id": CORPUS, "text": ["t"] * len(CORPUS)})
    assert validate(path, corpus=frame).valid
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text("".join(json.dumps({"doc_id": d, "text": "t"}) + "\n" for d in CORPUS), encoding="utf-8")
    assert validate(path, corpus=str(corpus_file)).valid
    # with the corpus reversed, the ties of q1 and q3 are out of order
    bad = validate(path, corpus=CORPUS[::-1])
    assert not bad.valid
    assert {p.kind for p in bad.errors} == {"tie_order"}
    assert sorted(p.line for p in bad.errors) == [1, 3, 3]


@pytest.mark.parametrize(
    "lines,expected",
    [
        # a query missing
        (GOOD[:2], {(None, "missing_query")}),
        # repeated query
        (GOOD + [line("q2", [])], {(4, "repeated_query")}),
        # unknown query
        (GOOD + [line("q4", [])], {(4, "unknown_query")}),
        # more than top_k (k = 4 below)
        ([line("q1", [("d9", 5), ("d2", 4), ("d1", 3), ("d3", 2), ("d7", 1)]), GOOD[1], GOOD[2]],
         {(1, "too_many")}),
        # repeated doc id
        ([line("q1", [("d9", 3), ("d9", 2)]), GOOD[1], GOOD[2]], {(1, "duplicate")}),
        # unknown doc id
        ([line("q1", [("d9", 3), ("zz", 2)]), GOOD[1], GOOD[2]], {(1, "unknown_doc")}),
        # scores not descending
        ([line("q1", [("d9", 1), ("d2", 2)]), GOOD[1], GOOD[2]], {(1, "order")}),
        # tie not in corpus order (d1 is at corpus position 4, d2 at 2)
        ([line("q1", [("d1", 2), ("d2", 2)]), GOOD[1], GOOD[2]], {(1, "tie_order")}),
    ],
)
def test_each_violation(tmp_path, lines, expected):
    report = validate(write(tmp_path, lines), top_k=4)
    assert not report.valid and not report.ok
    assert kinds(report) == expected


@pytest.mark.parametrize(
    "raw,kind,fragment",
    [
        ('{"query_id": "q1", "results": [{"doc_id": "d9", "score": NaN}]}', "score", "not finite (NaN)"),
        ('{"query_id": "q1", "results": [{"doc_id": "d9", "score": Infinity}]}', "score", "Infinity"),
        ('{"query_id": "q1", "results": [{"doc_id": "d9", "score": -Infinity}]}', "score", "-Infinity"),
        ('{"query_id": "q1", "results": [{"doc_id": "d9", "score": 1e400}]}', "score", "not finite"),
        ('{"query_id": "q1", "results": [{"doc_id": "d9", "score": ' + "9" * 400 + "}]}", "score", "too large"),
        ('{"query_id": "q1", "results": [{"doc_id": "d9", "score": true}]}', "score", "boolean"),
        ('{"query_id": "q1", "results": [{"doc_id": "d9", "score": "0.5"}]}', "score", "string"),
        ('{"query_id": "q1", "results": [{"doc_id": "d9", "score": null}]}', "score", "null"),
        ('{"query_id": "q1", "results": [{"doc_id": "d9"}]}', "field", "lacks 'score'"),
        ('{"query_id": "q1", "results": [{"score": 1.0}]}', "field", "lacks 'doc_id'"),
        ('{"query_id": "q1", "results": [{"doc_id": 9, "score": 1.0}]}', "field", "'doc_id' must be a JSON string"),
        ('{"query_id": "q1", "results": ["d9"]}', "field", "must be a JSON object"),
        ('{"query_id": "q1"}', "field", "missing field 'results'"),
        ('{"query_id": "q1", "results": {"d9": 1}}', "field", "'results' must be a JSON array"),
        ('{"results": []}', "field", "missing field 'query_id'"),
        ('{"query_id": 1, "results": []}', "field", "'query_id' must be a JSON string"),
        ('{"query_id": "q1", "query_id": "q1", "results": []}', "format", "appears twice"),
        ('["q1", []]', "format", "must be a JSON object"),
        ('{"query_id": "q1", "results": [', "format", "not valid JSON"),
        ("q1 Q0 d9 1 1.0 run", "format", "not valid JSON"),
    ],
)
def test_malformed_lines(tmp_path, raw, kind, fragment):
    report = validate(write(tmp_path, [raw, GOOD[1], GOOD[2]]))
    assert not report.valid
    first = [p for p in report.errors if p.line == 1]
    assert first, report.summary()
    assert any(p.kind == kind and fragment in p.message for p in first), [str(p) for p in first]
    # the good lines around the bad one are still read
    assert "q3" in report.run["query_id"].tolist()


def test_invalid_utf8_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(GOOD[0].encode() + b"\n" + b'{"query_id": "q2", "results": []}\xff\n' + GOOD[2].encode() + b"\n")
    report = validate(path)
    assert kinds(report) == {(2, "encoding"), (None, "missing_query")}


def test_every_violation_at_once_with_line_numbers(tmp_path):
    lines = [
        line("q1", [("d9", 3), ("d9", 2), ("zz", 1), ("d7", 5)]),  # 1: dup, unknown, order, too many
        "not json",  # 2
        '{"query_id": "q2", "results": [{"doc_id": "d5", "score": NaN}]}',  # 3
        line("q2", []),  # 4: repeated
        line("q8", []),  # 5: unknown query
        "",  # 6: blank (ignored)
        line("q1", [("d1", 1), ("d2", 1)]),  # 7: repeated query + tie out of corpus order
    ]
    report = validate(write(tmp_path, lines), top_k=3)
    assert not report.valid
    assert kinds(report) == {
        (1, "too_many"), (1, "duplicate"), (1, "unknown_doc"), (1, "order"),
        (2, "format"), (3, "score"), (4, "repeated_query"), (5, "unknown_query"),
        (7, "repeated_query"), (7, "tie_order"), (None, "missing_query"),
    }
    assert [p.query_id for p in report.errors if p.kind == "missing_query"] == ["q3"]
    # sorted by line, problems without a line last
    lines_seen = [p.line for p in report.errors]
    assert lines_seen == sorted(lines_seen, key=lambda v: v if v is not None else 10**9)
    # the printable form is path:line: query_id: message
    dup = next(p for p in report.errors if p.kind == "duplicate")
    assert str(dup) == f"{tmp_path / 'results.jsonl'}:1: q1: result 2: document d9 repeated (first at result 1)"
    assert report.missing_queries == ["q3"]


def test_blank_lines_policy(tmp_path):
    path = write(tmp_path, [GOOD[0], "   ", GOOD[1], GOOD[2]])
    assert validate(path).valid
    strict = rm.benchmarks.chunqiu.validate_chunqiu(path, corpus=CORPUS, queries=QUERIES, blank_lines="error")
    assert kinds(strict) == {(2, "format")}


def test_extra_fields_policy(tmp_path):
    raw = '{"query_id": "q2", "results": [], "latency_ms": 3}'
    path = write(tmp_path, [GOOD[0], raw, GOOD[2]])
    assert validate(path).valid
    strict = rm.benchmarks.chunqiu.validate_chunqiu(path, corpus=CORPUS, queries=QUERIES, allow_extra_fields=False)
    assert kinds(strict) == {(2, "field")}


def test_without_corpus_and_queries_checks_are_skipped_and_said(tmp_path):
    path = write(tmp_path, [line("q1", [("zz", 1), ("d1", 1)])])
    report = rm.validate_run(path, "chunqiu")
    assert report.valid
    assert set(report.extra["checks_skipped"]) == {"unknown_doc", "tie_order", "missing_query", "unknown_query"}


def test_in_memory_inputs():
    records = [json.loads(x) for x in GOOD]
    assert rm.validate_run(records, "chunqiu", corpus=CORPUS, queries=QUERIES).valid
    bad = records + [{"query_id": "q1", "results": []}]
    report = rm.validate_run(bad, "chunqiu", corpus=CORPUS, queries=QUERIES)
    assert kinds(report) == {(4, "repeated_query")}
    frame = pd.DataFrame({"query_id": ["q3", "q1", "q3"], "doc_id": ["d5", "d9", "d3"], "score": [2.0, 1.0, 1.0]})
    report = rm.validate_run(frame, "chunqiu", corpus=CORPUS, queries=["q1", "q3"])
    assert report.valid and report.run["doc_id"].tolist() == ["d5", "d3", "d9"]
    frame.loc[2, "score"] = 3.0
    report = rm.validate_run(frame, "chunqiu", corpus=CORPUS, queries=["q1", "q3"])
    assert kinds(report) == {(None, "order")}


def test_missing_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        rm.validate_run(str(tmp_path / "nope.jsonl"), "chunqiu")


def test_cli_validate(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "text": "t"}) + "\n" for d in CORPUS), encoding="utf-8")
    good = write(tmp_path, GOOD, "good.jsonl")
    assert main(["validate", str(good), "--contract", "chunqiu", "--corpus", str(corpus)]) == 0
    bad = write(tmp_path, [line("q1", [("d1", 1), ("d2", 1)])], "bad.jsonl")
    assert main(["validate", str(bad), "--contract", "chunqiu", "--corpus", str(corpus)]) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and f"{bad}:1: q1: tie not in corpus order" in out


def test_cli_validate_keeps_numeric_looking_ids_as_strings(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "text": "t"}) + "\n" for d in ["007", "001"]),
                      encoding="utf-8")
    good = write(tmp_path, [line("q1", [("007", 1.0), ("001", 1.0)])], "good.jsonl")
    assert main(["validate", str(good), "--contract", "chunqiu", "--corpus", str(corpus)]) == 0
    bad = write(tmp_path, [line("q1", [("001", 1.0), ("007", 1.0)])], "bad.jsonl")
    assert main(["validate", str(bad), "--contract", "chunqiu", "--corpus", str(corpus)]) == 1
    assert "tie not in corpus order" in capsys.readouterr().out


# ---- properties ----------------------------------------------------------------------------------

DOCS = [f"doc{i:02d}" for i in range(30)]


@st.composite
def valid_batches(draw):
    corpus = draw(st.permutations(DOCS))
    n_q = draw(st.integers(1, 6))
    queries = [f"q{i}" for i in range(n_q)]
    position = {d: i for i, d in enumerate(corpus)}
    lines = []
    for q in queries:
        docs = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=10))
        scores = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, -1.0, 7.0]), min_size=len(docs),
                               max_size=len(docs)))
        ranked = sorted(zip(docs, scores, strict=True), key=lambda ds: (-ds[1], position[ds[0]]))
        lines.append({"query_id": q, "results": [{"doc_id": d, "score": s} for d, s in ranked]})
    order = draw(st.permutations(range(n_q)))
    return corpus, queries, [lines[i] for i in order]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_batches())
def test_property_valid_batches_pass(batch):
    corpus, queries, lines = batch
    text = "\n".join(json.dumps(x) for x in lines) + "\n"
    report = rm.validate_run(text, "chunqiu", corpus=corpus, queries=queries)
    assert report.valid, report.summary()
    assert len(report.run) == sum(len(x["results"]) for x in lines)


MUTATIONS = ["nan", "bool", "dup", "unknown", "too_many", "drop_field", "garbage", "rising"]


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_batches(), st.sampled_from(MUTATIONS), st.randoms(use_true_random=False))
def test_property_one_mutation_is_caught_on_its_line(batch, mutation, rnd: random.Random):
    corpus, queries, lines = batch
    i = rnd.randrange(len(lines))
    rec = json.loads(json.dumps(lines[i]))
    res = rec["results"]
    if mutation in ("nan", "bool", "dup", "rising") and not res:
        res.append({"doc_id": corpus[0], "score": 1.0})
    if mutation == "rising" and len(res) < 2:
        extra = next(d for d in corpus if d != res[0]["doc_id"])
        res.append({"doc_id": extra, "score": res[0]["score"]})
    if mutation == "nan":
        res[rnd.randrange(len(res))]["score"] = float("nan")
    elif mutation == "bool":
        res[rnd.randrange(len(res))]["score"] = True
    elif mutation == "dup":
        res.append(dict(res[0], score=min(r["score"] for r in res) - 1))
    elif mutation == "unknown":
        res.append({"doc_id": "not-a-doc", "score": -100.0})
    elif mutation == "too_many":
        rec["results"] = [{"doc_id": d, "score": -float(k)} for k, d in enumerate(corpus[:11])]
    elif mutation == "drop_field":
        del rec["results"]
    elif mutation == "rising":
        res[-1]["score"] = res[-2]["score"] + 1.0
    mutated = list(lines)
    text_lines = [json.dumps(x) for x in mutated]
    text_lines[i] = "{{{" if mutation == "garbage" else json.dumps(rec)
    report = rm.validate_run("\n".join(text_lines) + "\n", "chunqiu", corpus=corpus, queries=queries)
    assert not report.valid
    assert i + 1 in {p.line for p in report.errors}
    assert all(p.line == i + 1 for p in report.errors if p.kind != "missing_query")


def test_parse_results_items_frame():
    parsed = parse_results(GOOD[0] + "\n" + '{"query_id": "q2", "results": [{"doc_id": "d1", "score": "x"}]}\n')
    assert parsed.items["pos"].tolist() == [1, 2, 3, 4, 1]
    assert parsed.items["score_ok"].tolist() == [True, True, True, True, False]
    assert [r.line for r in parsed.records] == [1, 2]
