"""A Dask DataFrame run is evaluated on a LocalCluster's worker processes with the pandas numbers;
the per-partition tasks carry keys starting 'reteco-' and the client only receives per-query values."""

from __future__ import annotations

from pathlib import Path

import ir_measures
import pytest

import reteco_measures as rm
from reteco_measures.errors import QueryIdMismatchWarning

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")

MEASURES = ["nDCG@10", "AP", "RR", "P(rel=2)@5", "Rprec", "TR@10"]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cl:
        with distributed.Client(cl) as c:
            yield c


@pytest.mark.slow
def test_from_pandas_and_read_csv_match_pandas(client, trec_eval_dir: Path) -> None:
    qrels = rm.read_qrels(trec_eval_dir / "qrels.rel_level")
    run = rm.read_run(trec_eval_dir / "results.test")
    expected = rm.calc_aggregate(MEASURES, qrels, run)
    per_query = {(m.query_id, str(m.measure)): float(m.value) for m in rm.iter_calc(MEASURES, qrels, run)}

    # partitions that split queries: the run is shuffled on query_id first
    ddf = dd.from_pandas(run[["query_id", "doc_id", "score"]], npartitions=4)
    assert rm.calc_aggregate(MEASURES, qrels, ddf) == pytest.approx(expected, abs=1e-12)
    got = {(m.query_id, str(m.measure)): float(m.value) for m in rm.iter_calc(MEASURES, qrels, ddf)}
    assert got == pytest.approx(per_query, abs=1e-12)

    from_file = dd.read_csv(
        str(trec_eval_dir / "results.test"), sep=r"\s+", header=None, blocksize=15_000,
        names=["query_id", "q0", "doc_id", "rank", "score", "run"], dtype={"query_id": str, "doc_id": str},
    )
    assert from_file.npartitions > 1
    assert rm.calc_aggregate(MEASURES, qrels, from_file) == pytest.approx(expected, abs=1e-12)
    frame = rm.evaluate(MEASURES, qrels, from_file)
    assert frame["value"].tolist() == pytest.approx(rm.evaluate(MEASURES, qrels, run)["value"].tolist())


def test_task_keys_and_missing_queries(client, trec_eval_dir: Path) -> None:
    from reteco_measures.scale.dask import dask_per_query_frame

    qrels = rm.read_qrels(trec_eval_dir / "qrels.test")
    run = rm.read_run(trec_eval_dir / "results.trunc")  # query 302 is missing: 0 as in pandas
    ddf = dd.from_pandas(run[["query_id", "doc_id", "score"]], npartitions=2)
    frame = dask_per_query_frame(["nDCG@10", "RR"], qrels, ddf)
    assert sorted(frame["query_id"].unique()) == ["301", "302", "303"]
    assert frame[frame["query_id"] == "302"]["value"].tolist() == [0.0, 0.0]
    done = client.run_on_scheduler(lambda dask_scheduler: [str(k) for k in dask_scheduler.task_prefixes])
    assert any(k.startswith("reteco-partition") for k in done)
    assert any(k.startswith("reteco-qrels") for k in done)


# -- repeated (query, doc) pairs: the last row in run order wins, as in memory (issue 24, item 5) ----


@pytest.fixture(params=["distributed", "disk", "tasks"])
def scheduler(request):
    """The LocalCluster with its default shuffle; then, without a cluster, the threaded
    scheduler with the disk-based shuffle (its default: the one that reordered the issue's rows)
    and with the task-based shuffle."""
    if request.param == "distributed":
        request.getfixturevalue("client")
        yield request.param
        return
    import dask

    with dask.config.set({"scheduler": "threads", "dataframe.shuffle.method": request.param}):
        yield request.param


def test_repeated_pair_keeps_its_last_score_across_partitions(scheduler) -> None:
    import pandas as pd

    run = pd.DataFrame({"query_id": ["q1", "q1", "q1"], "doc_id": ["a", "b", "a"], "score": [1.0, 2.0, 3.0]})
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [1, 0]})
    # by hand: a keeps its last score 3.0 > b's 2.0, so the relevant a is at rank 1
    assert rm.calc_aggregate(["RR"], qrels, run) == {ir_measures.parse_measure("RR"): 1.0}
    ddf = dd.from_pandas(run, npartitions=3)
    assert ddf.npartitions == 3
    assert rm.calc_aggregate(["RR"], qrels, ddf) == {ir_measures.parse_measure("RR"): 1.0}


def test_shuffled_partitions_with_repeated_pairs_give_the_in_memory_values(scheduler) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(24)
    n = 600
    queries = [f"q{i}" for i in range(12)]
    docs = [f"d{j}" for j in range(30)]
    qrels = pd.DataFrame([(q, d, int(rng.integers(0, 3))) for q in queries for d in docs[:15]],
                         columns=["query_id", "doc_id", "relevance"])
    # few documents per query, so most (query, doc) pairs repeat with different scores; the rows
    # of each query are spread over every partition, and the partitions are in shuffled order
    run = pd.DataFrame({"query_id": rng.choice(queries, n), "doc_id": rng.choice(docs, n),
                        "score": np.round(rng.random(n), 2)})
    assert run.duplicated(["query_id", "doc_id"]).sum() > 200
    measures = ["nDCG@10", "AP", "RR", "P@5", "R@10", "Rprec"]
    ddf = dd.from_pandas(run, npartitions=5, sort=False)
    order = rng.permutation(ddf.npartitions)
    shuffled = dd.concat([ddf.partitions[int(i)] for i in order])
    for dask_run in (ddf, shuffled):
        in_memory = dask_run.compute()  # the run as Dask orders its rows
        expected = {(m.query_id, str(m.measure)): float(m.value) for m in rm.iter_calc(measures, qrels, in_memory)}
        got = {(m.query_id, str(m.measure)): float(m.value) for m in rm.iter_calc(measures, qrels, dask_run)}
        assert got == pytest.approx(expected, abs=1e-12)
    # the two orders differ on some repeated pair, so the values differ too: the check can fail
    first = {(m.query_id, str(m.measure)): float(m.value) for m in rm.iter_calc(measures, qrels, ddf.compute())}
    second = {(m.query_id, str(m.measure)): float(m.value)
              for m in rm.iter_calc(measures, qrels, shuffled.compute())}
    assert first != second


def test_partition_without_judged_queries_is_no_mismatch() -> None:
    """A partition holding only queries the qrels do not judge gives no "share no query id"
    warning; a run none of whose partitions meets the qrels still gives it once."""
    import warnings

    import dask
    import pandas as pd

    run = pd.DataFrame({"query_id": ["q1", "q1", "zz", "zz"], "doc_id": ["a", "b", "a", "b"],
                        "score": [2.0, 1.0, 2.0, 1.0]}).set_index("query_id")
    qrels = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    ddf = dd.from_pandas(run, npartitions=2, sort=True)  # q1 | zz: one partition per query
    assert ddf.npartitions == 2 and ddf.known_divisions
    with dask.config.set({"scheduler": "sync"}), warnings.catch_warnings():
        warnings.simplefilter("error", QueryIdMismatchWarning)
        assert rm.calc_aggregate(["RR", "nDCG@10"], qrels, ddf) == {
            ir_measures.parse_measure("RR"): 1.0, ir_measures.parse_measure("nDCG@10"): 1.0}
    # the worker's task itself (whose warnings a LocalCluster prints in the worker's log) is silent
    from reteco_measures.scale.dask import _evaluate_partition

    with warnings.catch_warnings():
        warnings.simplefilter("error", QueryIdMismatchWarning)
        values, unmatched = _evaluate_partition(run.loc[["zz"]].reset_index(), qrels, ["RR"], {})
    assert values.empty and unmatched == ["zz"]
    other = pd.DataFrame({"query_id": ["x1"], "doc_id": ["a"], "relevance": [1]})
    with dask.config.set({"scheduler": "sync"}), pytest.warns(QueryIdMismatchWarning,
                                                                 match="share no query id") as record:
        rm.calc_aggregate(["RR"], other, ddf)
    assert sum("share no query id" in str(w.message) for w in record) == 1
