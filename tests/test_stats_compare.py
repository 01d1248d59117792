"""stats/compare: the per-query frame of ``rm.compare`` is engine.results' (issue 18).

Expected values: ``rm.calc_aggregate`` on each run alone (the in-memory engine, a separate call
path), to the last bit: the point estimates sum the same per-query values in the same order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import reteco_measures as rm

MEASURES = ["nDCG@10", "AP", "RR", "P@5", "Rprec", "TurnNDCG@10", "ERR@10", "Judged@10"]


@pytest.mark.parametrize("seed", range(3))
def test_point_estimates_equal_calc_aggregate_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_q = 80
    qids = [f"c{q // 3}_turn_{q % 3 + 1}" for q in range(n_q)]
    # qrels and runs list the queries in different orders
    qrels = pd.DataFrame([(qids[q], f"d{d}", int(rng.integers(0, 4))) for q in rng.permutation(n_q)
                          for d in rng.choice(30, 6, replace=False)], columns=["query_id", "doc_id", "relevance"])
    runs = {f"r{r}": pd.DataFrame([(qids[q], f"d{d}", float(np.round(rng.random(), 3)))
                                   for q in rng.permutation(n_q)[: n_q - 5] for d in rng.choice(30, 15, replace=False)],
                                  columns=["query_id", "doc_id", "score"]) for r in range(2)}
    comparison = rm.compare(runs, qrels, MEASURES, n_resamples=10)
    for name, run in runs.items():
        want = list(rm.calc_aggregate(MEASURES, qrels, run).values())
        got = comparison.summary[comparison.summary["run"] == name]["value"].tolist()
        assert got == want, name
    per_query = comparison.per_query
    # rows: per run, measures in the order asked, queries in the qrels' order of first appearance
    first = per_query[per_query["run"] == "r0"]
    assert list(dict.fromkeys(first["measure"])) == comparison.measures
    order = list(dict.fromkeys(qrels["query_id"]))
    seen = first[first["measure"] == "nDCG@10"]["query_id"].tolist()
    assert seen == [q for q in order if q in set(seen)]
