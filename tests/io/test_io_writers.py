"""The TREC run writer: six columns, the frame's order, each score as Python's ``repr`` of the
double (the shortest text that reads back as the same value), so the file scores as the frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reteco_measures.io.readers import read_run
from reteco_measures.io.writers import write_trec_run


def test_write_trec_run_as_repr_writes_it(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    scores = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-30, 30, 500),
                             [0.0, -0.0, 1.0, 1e16, 1e22, 5e-324, 1.7976931348623157e308, 0.1]])
    run = pd.DataFrame({"query_id": [f"q{i % 7}" for i in range(len(scores))],
                        "doc_id": [f"d{i}" for i in range(len(scores))],
                        "rank": np.arange(1, len(scores) + 1), "score": scores})
    path = tmp_path / "run.txt"
    assert write_trec_run(run, path, run_id="cleaned") == len(run)
    expected = [f"{q} Q0 {d} {r} {float(s)!r} cleaned" for q, d, r, s in
                zip(run["query_id"], run["doc_id"], run["rank"].tolist(), scores.tolist())]
    assert path.read_text().splitlines() == expected
    back = read_run(path)
    assert back["score"].to_numpy().tolist() == scores.tolist()  # every double read back as written


def test_write_an_empty_run(tmp_path: Path) -> None:
    empty = pd.DataFrame({"query_id": [], "doc_id": [], "rank": pd.Series([], dtype="int64"),
                          "score": pd.Series([], dtype="float64")})
    assert write_trec_run(empty, tmp_path / "e.txt") == 0 and (tmp_path / "e.txt").read_text() == ""
