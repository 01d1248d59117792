"""benchmarks/score.py: every attribute of a Score is declared on the class (no ``__getattr__``)."""

from __future__ import annotations

import inspect

import pytest

import reteco_measures as rm
from reteco_measures.benchmarks import Score
from reteco_measures.benchmarks.recor.data import load_recor
from reteco_measures.sample import sample_root

SAMPLE = sample_root()


@pytest.fixture(scope="module")
def recor_score() -> Score:
    return rm.benchmark("reteco-2a").score(SAMPLE / "runs" / "reteco_track2.txt", data=SAMPLE, split="dev")


def test_score_has_no_getattr_and_declares_its_names() -> None:
    assert "__getattr__" not in vars(Score)
    names = {n for n, _ in inspect.getmembers(Score)}
    for name in ("scores", "by_domain", "by_depth", "grid", "by_collection", "by_condition", "domains",
                 "n_turns", "run_name", "quality", "requests"):
        assert name in names, name


def test_group_tables_and_facts_read_as_attributes(recor_score: Score) -> None:
    score = recor_score
    assert score.by_domain is score.by_group["by_domain"]
    assert score.by_depth is score.by_group["by_depth"]
    # the turns scored: the sample's dev qrels name each evaluated turn once
    turns = load_recor("dev", root=SAMPLE, qualified=True).qrels["query_id"].nunique()
    assert score.n_turns == score.turns == turns == score.meta["n_turns"]
    assert list(score.scores.columns) == [c for c in score.summary_columns if c in score.summary.columns]


def test_a_name_the_benchmark_lacks_is_an_attribute_error(recor_score: Score) -> None:
    assert not hasattr(recor_score, "grid")  # a Spoken-Query table
    with pytest.raises(AttributeError, match=r"no table 'grid'.*by_depth.*by_domain"):
        _ = recor_score.grid
    with pytest.raises(AttributeError, match="records no 'run_name'"):
        _ = recor_score.run_name
    with pytest.raises(AttributeError):
        _ = recor_score.no_such_thing
