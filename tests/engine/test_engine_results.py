"""engine/results: the one per-query frame and the one aggregation, and the paths that use them.

Expected values: hand computations written here, ir_measures' own ``MeanAgg`` fed the same values
(the summation peer), and the in-memory ``rm.calc_aggregate`` (the peer of ``stream=True``, Dask
and ``rm.evaluate``: issue 24 item 6, equal to the last bit).
"""

from __future__ import annotations

import math
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from ir_measures import Metric
from ir_measures.measures.base import MeanAgg

import reteco_measures as rm
from reteco_measures.engine.results import aggregate, aggregates, metrics_frame
from reteco_measures.measures.base import WeightedMeanAgg, WeightedValue


def test_aggregate_groups_margins_weights_by_hand() -> None:
    long = pd.DataFrame({
        "query_id": ["a", "b", "c", "d", "e"],
        "measure": ["M"] * 5,
        "value": [1.0, 0.0, 0.5, math.nan, 0.25],
        "weight": [1.0, 3.0, 1.0, 1.0, 2.0],
        "domain": ["x", "x", "y", "y", "z"],
    })
    table = aggregate(long, ["domain"], margins=True)
    got = dict(zip(table["domain"], zip(table["value"], table["n"])))
    assert got["x"] == (pytest.approx((1.0 * 1 + 0.0 * 3) / 4), 2)  # weighted mean
    assert got["y"] == (0.5, 1)  # NaN skipped
    assert got["z"] == (0.25, 1)
    assert got["(macro)"] == (pytest.approx((0.25 + 0.5 + 0.25) / 3), 3)
    assert got["(all)"] == (pytest.approx((1.0 + 0.5 + 0.5) / 7), 4)
    assert table["domain"].tolist() == ["x", "y", "z", "(macro)", "(all)"]


def test_sum_is_left_to_right_as_ir_measures_mean() -> None:
    values = [1e16, 1.0, -1e16, 1.0, 3.0, 1e-3, 7.0, 1e15, -1e15, 0.1, 0.2, 0.3]
    peer = MeanAgg()
    for v in values:
        peer.add(v)
    assert peer.result() != float(np.mean(values))  # pairwise summation differs on these values
    measure = ir_measures.nDCG @ 10
    metrics = [Metric(f"q{i}", measure, v) for i, v in enumerate(values)]
    assert aggregates(metrics_frame(metrics, measures=[measure]), [measure])[measure] == peer.result()
    weighted = [WeightedValue(v, w) for v, w in zip(values, [0.5, 2.0, 1.0] * 4)]
    ours = WeightedMeanAgg()
    for v in weighted:
        ours.add(v)
    frame = metrics_frame([Metric(f"q{i}", measure, v) for i, v in enumerate(weighted)], measures=[measure])
    assert aggregates(frame, [measure])[measure] == ours.result()


def test_frame_order_units_fill_and_sums() -> None:
    m, n = ir_measures.nDCG @ 10, ir_measures.NumRet
    metrics = [Metric("q2", m, 0.5), Metric("q9", m, 0.1), Metric("q1", m, 0.25), Metric("q1", n, 3.0)]
    frame = metrics_frame(metrics, measures=[m, n], order=["q1", "q2"])
    assert frame["query_id"].tolist() == ["q1", "q2", "q9", "q1"]  # qrels order, then the others met
    assert aggregates(frame, [m, n]) == {m: pytest.approx((0.25 + 0.5 + 0.1) / 3), n: 3.0}  # NumRet: a sum
    filled = metrics_frame(metrics, measures=[m, n], label=str, units=["q1", "q2", "q3"], fill=0.0)
    assert filled[["query_id", "measure", "value"]].values.tolist() == [
        ["q1", "nDCG@10", 0.25], ["q2", "nDCG@10", 0.5], ["q3", "nDCG@10", 0.0],
        ["q1", "NumRet", 3.0], ["q2", "NumRet", 0.0], ["q3", "NumRet", 0.0]]
    assert filled.attrs["sum"] == ["NumRet"]


# ------------------------------------------------------------------------------------------------
# issue 24 item 6: stream=True, Dask and rm.evaluate give calc_aggregate's numbers to the last bit


def _case(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n_q = 60
    qids = [f"c{q // 3}_turn_{q % 3 + 1}" for q in range(n_q)]
    order = rng.permutation(n_q)  # qrels, run and topics in different query orders
    q_rows = [(qids[q], f"d{d}", int(rng.integers(0, 4))) for q in order for d in rng.choice(30, 6, replace=False)]
    r_rows = [(qids[q], f"d{d}", float(np.round(rng.random(), 2))) for q in rng.permutation(n_q)[: n_q - 5]
              for d in rng.choice(30, 15, replace=False)]
    topics = pd.DataFrame({"query_id": qids, "domain": rng.choice(["law", "bitcoin", "history"], n_q)})
    return (pd.DataFrame(q_rows, columns=["query_id", "doc_id", "relevance"]),
            pd.DataFrame(r_rows, columns=["query_id", "doc_id", "score"]), topics)


MEASURES = ["nDCG@10", "AP", "RR", "P@5", "R@10", "Rprec", "TurnNDCG(average='conversation')@10", "NumRet"]


@pytest.mark.parametrize("seed", range(3))
def test_scaled_paths_and_evaluate_equal_calc_aggregate_bit_for_bit(seed: int, tmp_path: Path) -> None:
    qrels, run, topics = _case(seed)
    measures = rm.parse_measures(MEASURES)
    memory = rm.calc_aggregate(measures, qrels, run)
    path = tmp_path / "run.txt"
    run.assign(q0="Q0", r=0, n="x")[["query_id", "q0", "doc_id", "r", "score", "n"]].to_csv(
        path, sep=" ", header=False, index=False)
    assert rm.calc_aggregate(measures, qrels, path) == memory
    streamed = rm.calc_aggregate(measures, qrels, path, stream=True)
    assert {str(m): v for m, v in streamed.items()} == {str(m): v for m, v in memory.items()}
    table = rm.evaluate(measures, qrels, run)
    assert table["value"].tolist() == [memory[m] for m in measures]
    grouped = rm.evaluate(measures, qrels, run, topics=topics, by="domain")
    assert grouped[grouped["domain"] == "(all)"]["value"].tolist() == [memory[m] for m in measures]
    streamed_table = rm.evaluate(measures, qrels, path, stream=True, topics=topics, by="domain")
    assert streamed_table["value"].tolist() == grouped["value"].tolist()
    dd = pytest.importorskip("dask.dataframe")
    import dask

    with dask.config.set(scheduler="synchronous"):
        on_dask = rm.calc_aggregate(measures, qrels, dd.from_pandas(run, npartitions=4))
    assert {str(m): v for m, v in on_dask.items()} == {str(m): v for m, v in memory.items()}


def test_counts_are_totalled_per_cell_and_in_the_margins_by_hand() -> None:
    long = pd.DataFrame({
        "query_id": ["a", "b", "c", "d", "e"],
        "measure": ["M"] * 5,
        "value": [1.0, math.nan, 0.5, math.nan, 0.25],
        "bad": [False, True, False, True, False],
        "lost": [0, 0, 0, 1, 2],
        "domain": ["x", "x", "y", "y", "z"],
    })
    table = aggregate(long, ["domain"], margins=True, counts=("bad", "lost")).set_index("domain")
    assert table.columns.tolist() == ["measure", "value", "n", "bad", "lost"]
    # per cell: every row counts, defined value or not; (macro) and (all): the measure's totals
    assert table["bad"].to_dict() == {"x": 1, "y": 1, "z": 0, "(macro)": 2, "(all)": 2}
    assert table["lost"].to_dict() == {"x": 0, "y": 1, "z": 2, "(macro)": 3, "(all)": 3}
    assert table["n"].to_dict() == {"x": 1, "y": 1, "z": 1, "(macro)": 3, "(all)": 3}
    plain = aggregate(long, (), counts=("bad",))
    assert plain[["measure", "n", "bad"]].values.tolist() == [["M", 3, 2]]
