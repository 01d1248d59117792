"""The ``reteco`` run contract: duplicates after the first occurrence, unknown docs and queries
discarded, missing queries reported, every removal with its line number, never a crash."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import reteco_measures as rm

RUN_TEXT = """\
q1 Q0 d1 1 0.9 r
q1 Q0 d2 2 0.8 r
q1 Q0 d1 3 0.95 r
q1 Q0 ghost 4 0.7 r
q1 Q0 d3 5 0.8 r
broken line here
q9 Q0 d1 1 0.5 r
q2 Q0 d2 1 0.3 r
"""


def test_reteco_contract_rules(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text(RUN_TEXT)
    report = rm.validate_run(path, "reteco", corpus=["d1", "d2", "d3"], queries=["q1", "q2", "q3"])
    assert report.valid and not report.ok
    kinds = [(p.kind, p.line, p.query_id) for p in report.errors]
    assert kinds == [
        ("format", 6, "broken"),
        ("unknown_query", 7, "q9"),
        ("duplicate", 3, "q1"),
        ("unknown_doc", 4, "q1"),
        ("missing_query", None, "q3"),
    ]
    dup = next(p for p in report.errors if p.kind == "duplicate")
    assert "first at line 1" in dup.message and str(dup).startswith(f"{path}:3: q1: duplicate document d1")
    run = report.run
    # file order kept; the first d1 (score 0.9) survives, not the later 0.95
    assert run[["query_id", "doc_id", "score", "line"]].values.tolist() == [
        ["q1", "d1", 0.9, 1], ["q1", "d2", 0.8, 2], ["q1", "d3", 0.8, 5], ["q2", "d2", 0.3, 8]
    ]
    # trec_eval order: d1 (0.9), then the 0.8 tie broken by doc id descending: d3 before d2
    assert run["rank"].tolist() == [1, 3, 2, 1]
    assert report.missing_queries == ["q3"]


def test_reteco_contract_scores_the_cleaned_run(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text(RUN_TEXT)
    qrels = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "doc_id": ["d3", "d2", "d1"], "relevance": [1, 1, 1]})
    report = rm.validate_run(path, "reteco", corpus=["d1", "d2", "d3"], queries=["q1", "q2", "q3"])
    res = rm.calc_aggregate(["nDCG@10"], qrels, report.run)
    # q1: d3 at rank 2 -> 1/log2(3); q2: d2 at rank 1 -> 1; q3 missing -> 0
    import math

    assert list(res.values())[0] == (1 / math.log2(3) + 1 + 0) / 3


def test_dataframe_input_without_lines() -> None:
    run = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "score": [1.0, 2.0]})
    report = rm.validate_run(run, "reteco")
    assert [p.line for p in report.errors] == [2]  # row number of the duplicate
    assert report.run["doc_id"].tolist() == ["a"]


def test_unknown_contract() -> None:
    import pytest

    with pytest.raises(ValueError, match="unknown contract"):
        rm.validate_run("x", "nope")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("q1d2 Q0\t\n.#-eé5")), max_size=300))
def test_never_crashes_on_arbitrary_text(text: str) -> None:
    report = rm.validate_run(text + "\n", "reteco", corpus=["d1", "d2"])
    # valid unless nothing at all is left to score (the one error of the reteco contract)
    assert report.valid == (len(report.run) > 0)
    assert all(p.severity == "warning" for p in report.errors if p.kind != "empty")
    assert set(report.run.columns) >= {"query_id", "doc_id", "score", "rank"}
    assert not report.run.duplicated(["query_id", "doc_id"]).any()
    assert report.run["doc_id"].isin(["d1", "d2"]).all()


def test_ids_from_files_and_folders(tmp_path: Path) -> None:
    from reteco_measures.contracts.base import id_frame

    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "b.jsonl").write_text('{"id": "003", "domain": "law"}\n')
    (folder / "a.jsonl").write_text('{"id": "001", "domain": "bio"}\n{"id": "002", "domain": "bio"}\n')
    frame = id_frame(folder, "doc_id")
    assert frame["doc_id"].tolist() == ["001", "002", "003"]  # files by name; ids stay strings
    assert frame["domain"].tolist() == ["bio", "bio", "law"]
    lines = tmp_path / "ids.txt"
    lines.write_text("d1\nd2 extra\n\n")
    assert id_frame(lines, "doc_id")["doc_id"].tolist() == ["d1", "d2"]
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d 1\nq1 0 e 0\nq2 0 d 1\n")
    assert id_frame(str(qrels), "query_id")["query_id"].tolist() == ["q1", "q2"]
    report = rm.validate_run("q1 Q0 d1 1 1.0 r\nq1 Q0 zz 2 0.5 r\n", "reteco", corpus=lines, queries=qrels)
    assert [p.kind for p in report.errors] == ["unknown_doc", "missing_query"]


def test_documents_of_another_domain_are_discarded_when_both_sides_carry_domains() -> None:
    # corpus: a/1, a/2 (domain a), b/1 (domain b); q1 is of domain a, q2 of b, q3 has no domain
    corpus = pd.DataFrame({"doc_id": ["a/1", "a/2", "b/1"], "domain": ["a", "a", "b"]})
    queries = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "domain": ["a", "b", None]})
    run = "q1 Q0 a/1 1 3 r\nq1 Q0 b/1 2 2 r\nq1 Q0 zz 3 1 r\nq1 Q0 b/1 4 0.5 r\nq2 Q0 a/2 1 1 r\nq3 Q0 b/1 1 1 r\n"
    report = rm.validate_run(run, "reteco", corpus=corpus, queries=queries)
    kinds = [(p.kind, p.line, p.query_id, p.doc_id) for p in report.errors]
    # line 4 repeats line 2: a duplicate only; q3 has no domain: checked against the whole corpus
    assert kinds == [("duplicate", 4, "q1", "b/1"), ("unknown_doc", 3, "q1", "zz"),
                     ("other_domain_doc", 2, "q1", "b/1"), ("other_domain_doc", 5, "q2", "a/2"),
                     ("missing_query", None, "q2", None)]  # every row of q2 was discarded
    other = next(p for p in report.errors if p.line == 2)
    assert other.message == "document b/1 of another domain discarded (in the b corpus, not in the a corpus)"
    assert report.run[["query_id", "doc_id"]].values.tolist() == [["q1", "a/1"], ["q3", "b/1"]]
    # the eval note's counts come from the same masks
    from reteco_measures.benchmarks.reteco.contract import discard_counts
    from reteco_measures.io.convert import as_run_frame

    assert discard_counts(as_run_frame(run), corpus, queries) == {"duplicate": 1, "unknown_doc": 1,
                                                                  "other_domain_doc": 2}
    # without a domain on either side the corpus as a whole is the scope (the contract as before)
    plain = rm.validate_run(run, "reteco", corpus=corpus[["doc_id"]], queries=queries)
    assert [p.kind for p in plain.errors] == ["duplicate", "unknown_doc"] and len(plain.run) == 4


def test_membership_on_codes_of_the_corpus_id_index(tmp_path: Path) -> None:
    """Unknown documents are found through positions in the corpus' id index (one index per corpus
    frame, built once), equal to pandas' own hash lookups; a number is never a text id."""
    from reteco_measures.benchmarks.reteco.contract import doc_id_index, id_positions, is_in

    corpus = pd.DataFrame({"doc_id": pd.array(["d3", "d1", "d3", "d2"], dtype="str"), "domain": "x"})
    index = doc_id_index(corpus)
    assert doc_id_index(corpus) is index  # built once per corpus frame
    assert index.to_pylist() == ["d3", "d1", "d2"]  # distinct ids, first-appearance order
    run = pd.Series(["d1", "ghost", "d2", "d3", None], dtype="str")
    expected = pd.Index(["d3", "d1", "d2"]).get_indexer(run.to_numpy(dtype=object))
    assert id_positions(run, index).tolist() == expected.tolist() == [1, -1, 2, 0, -1]
    assert id_positions(pd.Series([1, 2], dtype=object), doc_id_index(pd.DataFrame({"doc_id": ["1"]}))).tolist() \
        == [-1, -1]
    assert is_in(run, pd.Series(["d2", "ghost"])).tolist() == run.isin({"d2", "ghost"}).tolist()
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 1.0 r\nq1 Q0 ghost 2 0.9 r\n")
    report = rm.validate_run(str(path), "reteco", corpus=corpus)
    assert report.run["doc_id"].tolist() == ["d1"] and report.problem_counts() == {"unknown_doc": 1}


def test_corpus_scope_from_the_files() -> None:
    """The benchmark scorers' corpus scope from what ``eval`` is given, by hand: TEMPO-style
    ``<domain>/`` ids give the documents' domains, a query's domain is that of its first judged
    document; without domains (or with 'all') the whole corpus is the scope."""
    from reteco_measures.benchmarks.reteco.contract import CorpusScope, corpus_scope
    from reteco_measures.benchmarks.tempo.data import TEMPO_DOMAINS

    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["bitcoin/1", "law/2", "law/2"],
                          "relevance": [1, 1, 1]})
    corpus = pd.DataFrame({"doc_id": ["bitcoin/1", "bitcoin/2", "law/2"]})
    got = corpus_scope(qrels, corpus, domains=TEMPO_DOMAINS)
    assert isinstance(got, CorpusScope)
    assert got.corpus[["doc_id", "domain"]].values.tolist() == [["bitcoin/1", "bitcoin"], ["bitcoin/2", "bitcoin"],
                                                                ["law/2", "law"]]
    assert got.queries.values.tolist() == [["q1", "bitcoin"], ["q2", "law"]]
    assert got.description.startswith("corpus scope domain") and "'<domain>/' id prefix" in got.description
    # topics name the queries' domains first
    topics = pd.DataFrame({"query_id": ["q1", "q2"], "domain": ["law", "law"]})
    assert corpus_scope(qrels, corpus, topics=topics, domains=TEMPO_DOMAINS).queries["domain"].tolist() == ["law", "law"]
    # ids without a TEMPO domain prefix: the whole corpus, and the reason
    plain = corpus_scope(qrels, pd.DataFrame({"doc_id": ["x1", "x2"]}), domains=TEMPO_DOMAINS)
    # without domain names to read, the prefixes give no domain
    assert corpus_scope(qrels, corpus).description.startswith("corpus scope all")
    assert list(plain.corpus.columns) == ["doc_id"] and plain.description.startswith("corpus scope all")
    assert corpus_scope(qrels, corpus, scope="all").corpus.columns.tolist() == ["doc_id"]
    assert corpus_scope(qrels, None) == (None, None, corpus_scope(qrels, None).description)


def test_stream_discards_add_up_block_by_block(tmp_path: Path) -> None:
    """A streamed evaluation's blocks, counted: the same discards as the whole run holds by hand
    (one repeated pair, one unknown document), however small the blocks."""
    from reteco_measures.benchmarks.reteco.contract import StreamDiscards
    from reteco_measures.scale.stream import stream_iter_calc

    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 3 r\nq1 Q0 d1 2 2 r\nq2 Q0 d2 1 1 r\nq2 Q0 zz 2 0.5 r\nq3 Q0 d3 1 1 r\n")
    qrels = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "doc_id": ["d1", "d2", "d3"], "relevance": [1, 1, 1]})
    corpus = pd.DataFrame({"doc_id": ["d1", "d2", "d3"]})
    for block_bytes in (16, 1 << 20):
        discards = StreamDiscards(corpus)
        with discards.watching():
            stream_iter_calc(["nDCG@10"], qrels, str(run), block_bytes=block_bytes)
        assert discards.counts() == {"duplicate": 1, "unknown_doc": 1}, block_bytes
    assert StreamDiscards(corpus).counts() == {}


# ---- one ranking, one index, one pass -------------------------------------------------------------


def _hand_ranks(frame: pd.DataFrame) -> list[int]:
    """trec_eval's rank of every row, by hand: per query, score descending as a C float, then doc
    id descending (strcmp), then row order."""
    import numpy as np

    rank = {}
    for _, rows in frame.groupby("query_id", sort=False):
        key = sorted(((-float(np.float32(s)), [-b for b in d.encode()] + [1], i)
                      for i, d, s in zip(rows.index, rows["doc_id"], rows["score"], strict=True)))
        rank.update({i: r for r, (_, _, i) in enumerate(key, start=1)})
    return [rank[i] for i in frame.index]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.sampled_from(["d1", "d2", "d10", "é", "D"]),
                          st.sampled_from([0.0, -0.0, 1.0, 1.0 + 1e-9, 0.1, 0.1 + 1e-12, -3.0, 1e39, -1e39, 2.5])),
                min_size=1, max_size=40))
def test_trec_eval_ranks_are_the_hand_sort(rows) -> None:
    """The contract's ranks (one integer sort, ties by doc id) are trec_eval's: float32 ties, -0.0
    and 0.0 equal, scores beyond float32 at infinity, doc ids in byte order."""
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    run = rm.validate_run(frame, "reteco").run
    assert run["rank"].tolist() == _hand_ranks(run)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.sampled_from(["d1", "d2", "d10", "é", "D"]),
                          st.sampled_from([0.0, -0.0, 1.0, 1.0 + 1e-9, 0.1, -3.0, 1e39, 2.5])),
                min_size=1, max_size=40))
def test_trec_eval_ranks_of_a_run_already_in_score_order(rows) -> None:
    """A run written query by query, score descending (the usual file: no sort is needed), ties
    in any doc order: the ranks are still trec_eval's."""
    import numpy as np

    from reteco_measures.benchmarks.reteco.contract import _trec_eval_ranks

    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    frame["s32"] = frame["score"].to_numpy(dtype=np.float64).astype(np.float32) + np.float32(0.0)
    frame = frame.sort_values(["query_id", "s32"], ascending=[True, False], kind="stable")
    frame = frame.drop(columns="s32").reset_index(drop=True)
    assert _trec_eval_ranks(frame).tolist() == _hand_ranks(frame)


def test_ranked_by_contract_is_rank_run(tmp_path: Path) -> None:
    from reteco_measures.benchmarks.reteco.contract import ranked_by_contract
    from reteco_measures.kernels.ranking import rank_run

    path = tmp_path / "run.txt"
    path.write_text("q2 Q0 d1 1 1 r\nq1 Q0 d2 1 2 r\nq1 Q0 d3 2 2 r\nq1 Q0 d1 3 5 r\nq10 Q0 d9 1 0 r\n"
                    "q2 Q0 d2 2 1 r\n")
    report = rm.validate_run(path, "reteco")
    shared = ranked_by_contract(report.run)
    assert list(shared.run.columns) == ["query_id", "doc_id", "score"] and shared.tie_break == "trec_eval"
    expected = rank_run(report.run[["query_id", "doc_id", "score"]], "trec_eval")
    pd.testing.assert_frame_equal(shared.ranked, expected[["query_id", "doc_id", "score", "rank"]])
    # query ids in byte order (q1 < q10 < q2), then rank: d1 (5), then the tie 2/2 by doc id descending
    assert shared.ranked[["query_id", "doc_id"]].values.tolist() == [
        ["q1", "d1"], ["q1", "d3"], ["q1", "d2"], ["q10", "d9"], ["q2", "d2"], ["q2", "d1"]]
    # ranks that are not 1..n per query: no ranking to hand over
    gapped = report.run.assign(rank=report.run["rank"] * 2)
    assert ranked_by_contract(gapped) is None
    assert ranked_by_contract(report.run.drop(columns="rank")) is None


def test_check_rows_and_report_are_the_contract(tmp_path: Path) -> None:
    """``validate_reteco`` is ``reteco_report(check_rows(...))``; rows discarded by a further check
    are neither kept nor ranked, and the queries missing are those of the contract's rows."""
    from reteco_measures.benchmarks.reteco.contract import check_rows, reteco_report

    path = tmp_path / "run.txt"
    path.write_text(RUN_TEXT)
    kwargs = dict(corpus=["d1", "d2", "d3"], queries=["q1", "q2", "q3"])
    report = rm.validate_run(path, "reteco", **kwargs)
    again = reteco_report(check_rows(path, **kwargs))
    assert again.errors == report.errors and again.run.equals(report.run)
    checked = check_rows(path, **kwargs)
    discard = (checked.frame["doc_id"] == "d1").to_numpy()  # q1's top document
    later = reteco_report(checked, discard)
    assert later.run[["doc_id", "rank"]].values.tolist() == [["d2", 2], ["d3", 1], ["d2", 1]]
    assert later.missing_queries == ["q3"] and later.errors == report.errors


def test_duplicates_with_a_corpus_name_the_first_line(tmp_path: Path) -> None:
    """Repeated documents found on the corpus positions (documents outside the corpus too): each
    repeat names the line of the pair's first occurrence."""
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 3 r\nq1 Q0 zz 2 2 r\nq2 Q0 d1 1 1 r\nq1 Q0 zz 3 1 r\nq1 Q0 d1 4 0 r\n"
                    "q2 Q0 zz 2 0 r\n")
    report = rm.validate_run(path, "reteco", corpus=["d1", "d2"])
    assert [(p.kind, p.line, p.message) for p in report.errors] == [
        ("duplicate", 4, "duplicate document zz removed (first at line 2)"),
        ("duplicate", 5, "duplicate document d1 removed (first at line 1)"),
        ("unknown_doc", 2, "unknown document zz discarded (not in the corpus)"),
        ("unknown_doc", 6, "unknown document zz discarded (not in the corpus)"),
    ]
    assert all(p.severity == "warning" and p.path == str(path) for p in report.errors)


def test_ids_only_shares_the_corpus_index() -> None:
    from reteco_measures.benchmarks.reteco.contract import corpus_codes, doc_id_index, ids_only

    corpus = pd.DataFrame({"doc_id": ["b", "a", "b", "c"], "domain": ["x", "x", "y", "y"]})
    ids = ids_only(corpus)
    assert list(ids.columns) == ["doc_id"] and ids_only(corpus) is ids and ids_only(ids) is ids
    assert doc_id_index(ids) is doc_id_index(corpus)  # one index for both frames
    index, codes = corpus_codes(corpus)
    assert index.to_pylist() == ["b", "a", "c"] and codes.tolist() == [0, 1, 0, 2]


def test_id_positions_of_a_few_values_in_a_large_index() -> None:
    """A few values against a large index (the values are hashed, not the index): the same
    positions as a dictionary lookup, -1 for absent and null values."""
    import pyarrow as pa

    from reteco_measures.benchmarks.reteco.contract import id_positions

    index = pa.array([f"doc{i}" for i in range(1000)], pa.large_string())
    values = pd.Series(["doc5", "nope", None, "doc999", "doc5", "doc0"], dtype="str")
    where = {v: i for i, v in enumerate(index.to_pylist())}
    expected = [where.get(v, -1) if isinstance(v, str) else -1 for v in values.tolist()]
    assert id_positions(values, index).tolist() == expected == [5, -1, -1, 999, 5, 0]
    many = pd.Series([f"doc{i}" for i in range(0, 2000, 3)], dtype="str")
    assert id_positions(many, index).tolist() == [where.get(v, -1) for v in many.tolist()]
