"""A Dask DataFrame run is evaluated on a LocalCluster's worker processes with the pandas numbers;
the per-partition tasks carry keys starting 'reteco-' and the client only receives per-query values."""

from __future__ import annotations

from pathlib import Path

import pytest

import reteco_measures as rm

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")

MEASURES = ["nDCG@10", "AP", "RR", "P(rel=2)@5", "Rprec", "TR@10"]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cl:
        with distributed.Client(cl) as c:
            yield c


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
