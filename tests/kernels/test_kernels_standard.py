"""Native kernels for nDCG, AP, P, R, RR against independent oracles: trec_eval 10's own expected
outputs, hand-checked small cases, and pytrec_eval run side by side (one pytrec_eval invocation
per measure, through ir_measures' own parameter mapping) on trec_eval's test files and on
tie-heavy random runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_measures import AP, RR, P, R, Rprec, nDCG

import reteco_measures as rm
from reteco_measures.io.convert import qrels_to_dict, run_to_dict
from reteco_measures.kernels import standard

MEASURES = [
    nDCG @ 10, nDCG @ 5, nDCG @ 1, nDCG, AP @ 10, AP @ 1000, AP, P @ 5, P @ 10, P @ 1000, R @ 10, R @ 1000, RR,
    RR(rel=2), P(rel=2) @ 20, AP(rel=2) @ 1000, R(rel=2) @ 1000, nDCG(judged_only=True) @ 10,
    P(judged_only=True) @ 5, AP(judged_only=True, rel=2), RR(judged_only=True),
    nDCG(gains={0: 0, 1: 1, 2: 5, 3: 10, -1: 2}) @ 10,
]


def _reference(measures, qrels: pd.DataFrame, run: pd.DataFrame) -> dict[tuple[str, str], float]:
    """pytrec_eval through ir_measures, one measure per call (a mixed call lets ir_measures put
    nDCG into another measure's invocation, e.g. one with a gains mapping)."""
    qd, rd = qrels_to_dict(qrels), run_to_dict(run)
    out = {}
    for m in measures:
        for metric in ir_measures.iter_calc([m], qd, rd):
            out[(metric.query_id, str(metric.measure))] = float(metric.value)
    return out


def _native(measures, qrels, run) -> dict[tuple[str, str], float]:
    return {(m.query_id, str(m.measure)): m.value for m in standard.iter_metrics(measures, qrels, run)}


def _assert_same(ref: dict, got: dict) -> None:
    assert set(ref) == set(got), (sorted(set(ref) ^ set(got)))[:5]
    bad = [(k, ref[k], got[k]) for k in ref if abs(ref[k] - got[k]) > 1e-9]
    assert not bad, bad[:5]


def _trec_eval_values(path: Path) -> dict[tuple[str, str], float]:
    out = {}
    for line in path.read_text().splitlines():
        parts = re.split(r"\s+", line.strip())
        if len(parts) == 3:
            try:
                out[(parts[0], parts[1])] = float(parts[2])
            except ValueError:
                pass
    return out


@pytest.mark.parametrize(
    "qrels_name,run_name",
    [("qrels.test", "results.test"), ("qrels.rel_level", "results.test"), ("qrels.test", "results.trunc"),
     ("qrels.comment.test", "results.comment.test"), ("qrels.123", "results.test"),
     ("qrels-302.test", "results-302.test")],
)
def test_equal_to_pytrec_eval_per_query_on_trec_eval_files(trec_eval_dir: Path, qrels_name: str, run_name: str):
    qrels = rm.read_qrels(trec_eval_dir / qrels_name)
    run = rm.read_run(trec_eval_dir / run_name)
    _assert_same(_reference(MEASURES, qrels, run), _native(MEASURES, qrels, run))


# trec_eval measure name -> our measure, per expected-output file (relevance level in brackets)
_AQ = {"map": AP, "recip_rank": RR, "P_5": P @ 5, "P_10": P @ 10, "P_1000": P @ 1000, "recall_10": R @ 10,
       "recall_1000": R @ 1000, "ndcg": nDCG, "ndcg_cut_10": nDCG @ 10, "ndcg_cut_1000": nDCG @ 1000,
       "map_cut_10": AP @ 10, "map_cut_1000": AP @ 1000}
_AQL = {"map": AP(rel=2), "recip_rank": RR(rel=2), "P_5": P(rel=2) @ 5, "P_30": P(rel=2) @ 30,
        "recall_100": R(rel=2) @ 100, "ndcg": nDCG, "ndcg_cut_10": nDCG @ 10, "ndcg_cut_100": nDCG @ 100,
        "map_cut_100": AP(rel=2) @ 100}


@pytest.mark.parametrize(
    "out_name,qrels_name,run_name,names",
    [("out.test.aq", "qrels.test", "results.test", _AQ),
     ("out.test.aql", "qrels.rel_level", "results.test", _AQL),
     ("out.test.aqc", "qrels.test", "results.trunc", _AQ)],
)
def test_equal_to_trec_eval_printed_output(trec_eval_dir: Path, out_name, qrels_name, run_name, names):
    expected = _trec_eval_values(trec_eval_dir / out_name)
    qrels = rm.read_qrels(trec_eval_dir / qrels_name)
    run = rm.read_run(trec_eval_dir / run_name)
    qids, values = standard.per_query(list(names.values()), qrels, run)
    qids = qids.to_pylist()
    checked = 0
    for te_name, measure in names.items():
        for qid, value in zip(qids, values[measure]):
            if (te_name, qid) in expected:  # -c prints the missing query 302 with zeros
                assert round(value, 4) == pytest.approx(expected[(te_name, qid)], abs=1e-12), (te_name, qid)
                checked += 1
        # the 'all' line: mean over the qrels' queries (trec_eval -c; without -c every qrels
        # query of these files is in the run)
        assert round(float(np.mean(values[measure])), 4) == pytest.approx(expected[(te_name, "all")], abs=1e-12)
    assert checked >= 3 * len(names) - 1


def test_comment_files_summary(trec_eval_dir: Path) -> None:
    # out.comment.test: graded RAG qrels read at level 1: P_10 0.7710, recip_rank 0.8595, map 0.2689
    expected = _trec_eval_values(trec_eval_dir / "out.comment.test")
    qrels = rm.read_qrels(trec_eval_dir / "qrels.comment.test")
    run = rm.read_run(trec_eval_dir / "results.comment.test")
    agg = standard.aggregate([P @ 10, RR, AP], qrels, run)
    assert round(agg[P @ 10], 4) == expected[("P_10", "all")]
    assert round(agg[RR], 4) == expected[("recip_rank", "all")]
    assert round(agg[AP], 4) == expected[("map", "all")]


def test_small_cases(shared_data: Path) -> None:
    cases = json.loads((shared_data / "ir_small_cases" / "cases.json").read_text())["cases"]
    pattern = re.compile(r"(ndcg_cut|map_cut|recall|P)_(\d+)|(recip_rank|map|ndcg)")
    checked = 0
    for case in cases:
        qrels = pd.DataFrame([(q, d, r) for q, docs in case["qrels"].items() for d, r in docs.items()],
                             columns=["query_id", "doc_id", "relevance"])
        run = pd.DataFrame([(q, d, s) for q, docs in case["run"].items() for d, s in docs.items()],
                           columns=["query_id", "doc_id", "score"])
        for exp in case["expected"]:
            m = pattern.fullmatch(exp["measure"])
            if not m:
                continue
            level = int(exp.get("relevance_level", 1))
            name, k = (m.group(1), int(m.group(2))) if m.group(1) else (m.group(3), None)
            measure = {"ndcg_cut": nDCG @ k if k else None, "map_cut": AP(rel=level) @ k if k else None,
                       "recall": R(rel=level) @ k if k else None, "P": P(rel=level) @ k if k else None,
                       "recip_rank": RR(rel=level), "map": AP(rel=level), "ndcg": nDCG}[name]
            qids, values = standard.per_query([measure], qrels, run)
            # trec_eval reports the run's queries that have qrels
            present = [i for i, q in enumerate(qids.to_pylist()) if q in case["run"]]
            vals = dict(zip(qids.to_pylist(), values[measure]))
            got = float(np.mean(values[measure][present])) if exp["qid"] == "all" else vals[exp["qid"]]
            assert got == pytest.approx(exp["value"], abs=exp.get("tolerance", 1e-4)), (case["id"], exp)
            checked += 1
    assert checked >= 20


# --- tie-heavy random runs -------------------------------------------------------------------

DOCS = ["a", "b", "c", "é", "ü", "z", "Z", "d1", "d10", "d2", "中", "a_b", "~", "0", "doc-000000000001",
        "doc-000000000002", "x" * 20 + "1", "y" * 20 + "1"]
SCORES = [1.0, 1.0 + 1e-9, 1.0 + 1e-6, 2.0, 0.5, 0.0, -0.0, -1.0, 1e-12, 3.4e38]


@st.composite
def _case(draw):
    n_q = draw(st.integers(1, 4))
    rows = []
    for q in range(n_q):
        docs = draw(st.lists(st.sampled_from(DOCS), max_size=14))  # repeats = duplicate pairs
        for d in docs:
            rows.append((f"q{q}", d, draw(st.sampled_from(SCORES))))
    if draw(st.booleans()):
        rows = draw(st.permutations(rows))  # not grouped, not sorted
    qrows = []
    for q in range(n_q + 1):
        judged = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        for i, d in enumerate(judged):
            # pytrec_eval may hang or crash on a query whose grades are all negative: keep one >= 0
            grade = draw(st.sampled_from([0, 1, 2, 3] if i == 0 else [-1, 0, 1, 2, 3]))
            qrows.append((f"q{q}", d, grade))
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]).astype({"query_id": "str", "doc_id": "str"})
    qrels = pd.DataFrame(qrows, columns=["query_id", "doc_id", "relevance"]).astype(
        {"query_id": "str", "doc_id": "str"})
    return qrels, run


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_equal_to_pytrec_eval_on_tie_heavy_runs(case) -> None:
    qrels, run = case
    _assert_same(_reference(MEASURES, qrels, run), _native(MEASURES, qrels, run))


def test_order_of_rows_does_not_matter() -> None:
    rng = np.random.default_rng(3)
    run = pd.DataFrame({"query_id": np.repeat([f"q{i}" for i in range(30)], 40),
                        "doc_id": [f"d{i}" for i in rng.integers(0, 60, 1200)],
                        "score": np.round(rng.random(1200), 1)}).drop_duplicates(["query_id", "doc_id"])
    qrels = run.sample(300, random_state=1)[["query_id", "doc_id"]].assign(relevance=rng.integers(0, 4, 300))
    ranked = run.sort_values(["query_id", "score"], ascending=[True, False])
    shuffled = run.sample(frac=1.0, random_state=2)
    a = standard.aggregate(MEASURES, qrels, ranked)
    b = standard.aggregate(MEASURES, qrels, shuffled)
    assert a == pytest.approx(b, abs=1e-12)


def test_tie_order_matches_rank_run() -> None:
    # trec_eval: float32 score descending, then doc id descending in byte order
    run = pd.DataFrame({"query_id": ["q"] * 5, "doc_id": ["a", "é", "Z", "b", "c"],
                        "score": [1.0, 1.0 + 1e-9, 1.0, 1.0 + 1e-6, 0.5]})
    order = rm.kernels.rank_run(run)["doc_id"].tolist()
    assert order == ["b", "é", "a", "Z", "c"]
    for rank, doc in enumerate(order, start=1):
        qrels = pd.DataFrame({"query_id": ["q"], "doc_id": [doc], "relevance": [1]})
        assert standard.aggregate([RR], qrels, run)[RR] == pytest.approx(1 / rank)


def test_duplicate_pair_keeps_last_score() -> None:
    # the dictionaries pytrec_eval takes keep the last score of a repeated (query, doc) pair
    run = pd.DataFrame({"query_id": ["q", "q", "q"], "doc_id": ["a", "b", "a"], "score": [3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    assert standard.aggregate([RR, P @ 3], qrels, run) == {RR: 0.5, P @ 3: pytest.approx(1 / 3)}


def test_all_negative_labels_never_crash() -> None:
    # trec_eval reads a negative grade as "in the pool, not judged": no relevant document, no
    # gain, so every measure is 0 for q2 (pytrec_eval itself can crash or hang on such a query)
    qrels = pd.DataFrame({"query_id": ["q1", "q2", "q2"], "doc_id": ["d1", "d1", "d2"], "relevance": [1, -2, -5]})
    run = pd.DataFrame({"query_id": ["q1", "q2", "q2"], "doc_id": ["d1", "d1", "d2"], "score": [1.0, 1.0, 0.5]})
    ms = [nDCG @ 10, AP @ 10, P @ 1, R @ 10, RR, AP, nDCG(judged_only=True) @ 10]
    qids, values = standard.per_query(ms, qrels, run)
    assert qids.to_pylist() == ["q1", "q2"]
    for m in ms:
        expected_q1 = 1.0
        assert values[m].tolist() == [expected_q1, 0.0], m


def test_queries_missing_from_either_side() -> None:
    # qrels query absent from the run: 0 (ir_measures' filler, trec_eval -c); run query without
    # qrels: not reported
    qrels = pd.DataFrame({"query_id": ["q1", "q3"], "doc_id": ["d1", "d1"], "relevance": [1, 1]})
    run = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d1"], "score": [1.0, 1.0]})
    qids, values = standard.per_query([nDCG @ 10, RR], qrels, run)
    assert dict(zip(qids.to_pylist(), values[RR])) == {"q1": 1.0, "q3": 0.0}
    ref = ir_measures.calc_aggregate([RR], qrels_to_dict(qrels), run_to_dict(run))
    assert standard.aggregate([RR], qrels, run)[RR] == ref[RR] == 0.5


def test_supports_only_verified_parameters() -> None:
    from ir_measures import parse_measure

    for text in ["nDCG@10", "nDCG", "AP@10", "AP(rel=2)@1000", "P(rel=2)@20", "R@10", "R(rel=2)@1000", "RR",
                 "RR(rel=2)", "nDCG(judged_only=True)@10", "nDCG(gains={0:0,1:1,2:3})@10", "RR@10",
                 "RR(rel=2)@1000", "Judged@10", "Judged"]:
        assert standard.supports(parse_measure(text)), text
    for text in ["nDCG(dcg='exp-log2')@10", "P(rel=0)@5", "Rprec", "Bpref", "ERR@10", "Success@10"]:
        assert not standard.supports(parse_measure(text)), text
    native, other = standard.split_measures([nDCG @ 10, Rprec, AP @ 10])
    assert native == [nDCG @ 10, AP @ 10] and other == [Rprec]


def test_nan_scores_fall_back() -> None:
    run = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [float("nan")]})
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    with pytest.raises(standard.NativeFallback):
        standard.aggregate([RR], qrels, run)


def test_string_key_equal_strings_equal_keys() -> None:
    import pyarrow as pa

    words = ["", "a", "ab", "abcdefgh", "abcdefghi", "中文", "x" * 40, "a", "x" * 40, "abcdefgh"]
    # the key of a string does not depend on the other strings of the array
    for w in set(words):
        assert standard.string_key(pa.array([w]))[0] == standard.string_key(pa.array(words))[words.index(w)]
    keys = standard.string_key(pa.array(words))
    for i, w in enumerate(words):
        for j, v in enumerate(words):
            if w == v:
                assert keys[i] == keys[j]
    assert len(set(keys.tolist())) == len(set(words))


def _tempo_like_ids(n: int, seed: int = 0) -> list[str]:
    """Doc ids shaped like TEMPO's (``<domain>/<8 hex digits>_<number>.txt``), the part that
    tells them apart in the middle: many share their last 8 bytes and their length."""
    rng = np.random.default_rng(seed)
    doms = ["bitcoin", "history", "hsm"]
    return [f"{doms[i % 3]}/{h:08x}_{i % 10000:04d}.txt" for i, h in enumerate(rng.integers(0, 2**32, n).tolist())]


def test_string_key_mixes_every_byte() -> None:
    import pyarrow as pa

    # equal length, equal last 8 bytes, equal first bytes: they differ in one middle byte only
    base = "bitcoin/25785deb_4434.txt"
    ids = [base[:i] + c + base[i + 1:] for i in range(len(base)) for c in "0aZ/" if base[i] != c]
    ids.append(base)
    keys = standard.string_key(pa.array(ids))
    assert len(set(keys.tolist())) == len(set(ids))
    # long ids differing only in one byte of any 8-byte word
    long = ["p" * 70 + "x" + "p" * (70 - i) + "y" * i for i in range(70)] + ["q" * i for i in range(80)]
    assert len(set(standard.string_key(pa.array(long)).tolist())) == len(set(long))


def test_string_key_tempo_like_ids_do_not_collide() -> None:
    import pyarrow as pa

    ids = _tempo_like_ids(300_000)
    distinct = len(set(ids))
    keys = standard.string_key(pa.array(ids, type=pa.large_string()))
    # the keys the kernels compare keep the top 64 - b bits (b: bits of the query count)
    for drop in (0, 11, 20):
        assert len(np.unique(keys >> np.uint64(drop))) == distinct, drop


def test_string_key_does_not_depend_on_neighbours_slices_or_chunks() -> None:
    import pyarrow as pa

    rng = np.random.default_rng(3)
    n = 5 * (1 << 14) + 1000  # several slices of string_key
    lens = rng.integers(0, 30, n)
    ids = ["".join(chr(97 + int(c)) for c in rng.integers(0, 3, int(k))) for k in lens]
    whole = standard.string_key(pa.array(ids, type=pa.large_string()))
    one_by_one = {w: int(standard.string_key(pa.array([w]))[0]) for w in set(ids[:3000])}
    assert all(int(whole[i]) == one_by_one[w] for i, w in enumerate(ids[:3000]))
    chunked = pa.chunked_array([pa.array(ids[:777]), pa.array(ids[777:40000]), pa.array(ids[40000:])])
    assert np.array_equal(standard.string_key(chunked), whole)
    sliced = pa.array(ids, type=pa.large_string()).slice(12345)  # an array starting at an offset
    assert np.array_equal(standard.string_key(sliced), whole[12345:])
    groups: dict[str, set[int]] = {}
    for w, k in zip(ids, whole.tolist()):
        groups.setdefault(w, set()).add(k)
    assert all(len(v) == 1 for v in groups.values())
    assert len({next(iter(v)) for v in groups.values()}) == len(groups)


def test_rows_with_keys_is_isin() -> None:
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 50, 10_000).astype(np.uint64)
    for wanted in (np.array([], dtype=np.uint64), np.array([7, 7, 3, 99], dtype=np.uint64), keys[:500]):
        assert np.array_equal(standard.rows_with_keys(keys, wanted), np.flatnonzero(np.isin(keys, wanted)))


def test_duplicate_rows_on_tempo_like_ids_as_pandas() -> None:
    ids = _tempo_like_ids(60_000, seed=2)
    rng = np.random.default_rng(2)
    q = np.repeat([f"q{i}" for i in range(60)], 1000)
    d = np.array(ids, dtype=object)
    rep = rng.choice(60_000, 300, replace=False)
    d[rep] = d[rep - 1]  # a pair repeated in the same query (or a doc of the previous query)
    run = pd.DataFrame({"query_id": pd.array(q, dtype="str"), "doc_id": pd.array(d.astype(str), dtype="str"),
                        "score": rng.random(60_000)})
    pr = standard.PreparedRun(run["query_id"], run["doc_id"], run["score"].to_numpy())
    got = pr.duplicate_rows()
    want = np.flatnonzero(run.duplicated(["query_id", "doc_id"], keep="last").to_numpy())
    assert got is not None and np.array_equal(np.sort(got), want)


def test_scores_beyond_single_precision_give_no_numpy_warning() -> None:
    import warnings

    import pytrec_eval

    # 1e39 and -1e39 are legal doubles beyond float32: trec_eval's (float) cast makes them ±inf
    run = {"q": {"a": 1e39, "b": 2e39, "c": 1.0, "d": -1e39}}
    qrels = {"q": {"a": 1, "c": 2, "d": 1}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = standard.aggregate([nDCG @ 10, AP, RR, P @ 2], qrels, run)
        ranked = rm_rank(run)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "map", "recip_rank", "P_2"}).evaluate(run)["q"]
    assert got == pytest.approx({nDCG @ 10: ref["ndcg_cut_10"], AP: ref["map"], RR: ref["recip_rank"],
                                 P @ 2: ref["P_2"]}, abs=1e-12)
    assert ranked == ["b", "a", "c", "d"]  # a and b tie at +inf: doc id descending


def rm_rank(run: dict) -> list[str]:
    from reteco_measures.io.convert import as_run_frame
    from reteco_measures.kernels.ranking import rank_run

    return rank_run(as_run_frame(run), "trec_eval")["doc_id"].tolist()


# ------------------------------------------------------------------------------------------
# memory: the prepared run in 4-byte arrays, every row of a deep run read in slices


def _deep_case(nq: int, per: int, seed: int, shuffle: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A top-``per`` run of ``nq`` queries (distinct docs per query, random scores) and about 50
    judgments per query, as `benchmarks/bench_eval_memory.py` writes them."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.array([f"q{i}" for i in range(nq)]), per)
    d = np.array([f"doc{i:07d}" for i in np.tile(np.arange(per), nq) * 20 + rng.integers(0, 20, nq * per)])
    run = pd.DataFrame({"query_id": pd.array(q, dtype="str"), "doc_id": pd.array(d, dtype="str"),
                        "score": rng.random(nq * per)})
    pick = rng.integers(0, nq * per, nq * 50)
    qrels = pd.DataFrame({"query_id": pd.array(q[pick], dtype="str"), "doc_id": pd.array(d[pick], dtype="str"),
                          "relevance": rng.integers(0, 4, len(pick))}).drop_duplicates(["query_id", "doc_id"])
    if shuffle:
        run = run.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return qrels.reset_index(drop=True), run


@pytest.mark.parametrize("shuffle", [False, True])
def test_prepared_run_keeps_four_bytes_a_row_per_array(shuffle: bool) -> None:
    _, run = _deep_case(20, 100, seed=1, shuffle=shuffle)
    pr = standard.PreparedRun(run["query_id"], run["doc_id"], run["score"].to_numpy())
    for name in ("qcode", "perm", "group_starts"):
        assert getattr(pr, name).dtype == np.int32, name
    # the keys are made on demand (not held), the same for a few rows as for all of them
    rows = np.array([5, 0, len(run) - 1, 17])
    assert np.array_equal(pr.row_keys(rows), pr.keys[rows])
    # equal (query, doc) pairs, and only those here, share a key
    pairs = list(zip(run["query_id"], run["doc_id"]))
    keys = pr.keys.tolist()
    assert len(set(keys)) == len(set(pairs))
    assert all(keys[i] == keys[j] for i, j in ((0, 0), (3, 3)))


def test_row_blocks_join_to_rows_between() -> None:
    rng = np.random.default_rng(4)
    sizes = [0, 1, 5, 13, 2, 0, 9, 1]
    run = pd.DataFrame({"query_id": pd.array([f"q{i}" for i, k in enumerate(sizes) for _ in range(k)], dtype="str"),
                        "doc_id": pd.array([f"d{j}" for k in sizes for j in range(k)], dtype="str"),
                        "score": rng.random(sum(sizes))})
    pr = standard.PreparedRun(run["query_id"], run["doc_id"], run["score"].to_numpy())
    for _ in range(20):
        lo = pr.seg_start + np.array([rng.integers(0, n + 1) for n in pr.seg_len])
        hi = np.minimum(lo + rng.integers(0, 8, pr.nq), pr.seg_start + pr.seg_len)
        expected = [(r, q) for q in range(pr.nq) for r in range(int(lo[q]), int(hi[q]))]  # a plain loop
        for size in (1, 3, 7, 1000):
            pieces = list(pr.row_blocks(lo, hi, size))
            assert all(0 < len(rows) <= size and len(rows) == len(codes) for rows, codes in pieces)
            got = [(int(r), int(c)) for rows, codes in pieces for r, c in zip(rows, codes)]
            assert got == expected


def test_values_read_in_small_pieces_equal_pytrec_eval(monkeypatch) -> None:
    # pieces of 7 rows cut through queries and tie groups (scores rounded to 1 decimal)
    monkeypatch.setattr(standard, "LOOKUP_ROWS", 7)
    rng = np.random.default_rng(8)
    run = pd.DataFrame({"query_id": np.repeat([f"q{i}" for i in range(12)], 40),
                        "doc_id": [f"d{i}" for i in rng.integers(0, 60, 480)],
                        "score": np.round(rng.random(480), 1)}).sample(frac=1.0, random_state=3)
    run = run.astype({"query_id": "str", "doc_id": "str"}).reset_index(drop=True)
    qrels = run.drop_duplicates(["query_id", "doc_id"]).sample(150, random_state=1)[["query_id", "doc_id"]]
    qrels = qrels.assign(relevance=rng.integers(-1, 4, len(qrels))).reset_index(drop=True)
    _assert_same(_reference(MEASURES, qrels, run), _native(MEASURES, qrels, run))
    # Judged@10 (ir_measures' judged provider breaks ties its own way): by hand, in trec_eval's
    # order (float32 score descending, then doc id descending; a repeated pair keeps its last score)
    judged = set(zip(qrels["query_id"], qrels["doc_id"]))
    got = {m.query_id: m.value for m in standard.iter_metrics([ir_measures.Judged @ 10], qrels, run)}
    for q, rows in run.groupby("query_id", sort=False):
        last = dict(zip(rows["doc_id"], rows["score"]))
        order = sorted(sorted(last, reverse=True), key=lambda d: -np.float32(last[d]))  # stable
        top = order[:10]
        assert got[q] == pytest.approx(sum((q, d) in judged for d in top) / len(top), abs=1e-12)


@pytest.mark.parametrize("shuffle", [False, True])
def test_kernels_peak_memory_per_row(shuffle: bool) -> None:
    import tracemalloc

    # numpy's arrays are traced (arrow's are not); the frame exists before tracing starts. The
    # kernels hold 32-bit codes, permutation, tie groups and lookups (16 bytes a row) and read
    # a deep run in slices: about 33-36 bytes a row in all on 300,000 rows, where 64-bit arrays
    # and whole-run temporaries took 78.
    qrels, run = _deep_case(300, 1000, seed=5, shuffle=shuffle)
    tracemalloc.start()
    try:
        standard.per_query([nDCG @ 10, AP, RR], qrels, run)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / len(run) <= 45, f"{peak / len(run):.1f} bytes a row"
