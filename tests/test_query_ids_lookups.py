"""The arrow lookups used on the leaderboard's hot path give pandas' answers (pandas run side by side)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from reteco_measures.benchmarks.reteco.rules import positions
from reteco_measures.query_ids import _distinct, _isin

VALUES = ["a", "b/1.txt", "", "é", "a", "zz", None, "b/1.txt"]
INDEX = ["zz", "a", "", "x", "é"]


@pytest.mark.parametrize("dtype", ["str", object, pd.ArrowDtype(pa.large_string()), pd.ArrowDtype(pa.string())])
def test_positions_match_get_indexer(dtype) -> None:
    values = pd.Series(VALUES, dtype=dtype)
    index = pd.Index(np.array(INDEX, dtype=object))
    got = positions(values, index)
    assert got.tolist() == index.get_indexer(values.to_numpy(dtype=object)).tolist()
    assert got.tolist() == [1, -1, 2, 4, 1, 0, -1, -1]  # by hand


def test_positions_on_values_that_are_not_strings() -> None:
    values = pd.Series([3, 1, 7])
    index = pd.Index([1, 2, 3])
    assert positions(values, index).tolist() == [2, 0, -1]


def test_isin_matches_pandas() -> None:
    side = _distinct(pd.Series(["1_1", "2_1", None, "x", "3#turn1"]))
    ref = _distinct(pd.Series(["x", "1_1", "4"]))
    assert _isin(side, ref).tolist() == np.asarray(side.isin(ref)).tolist() == [True, False, False, True, False]
