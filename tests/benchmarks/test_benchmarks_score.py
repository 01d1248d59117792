"""benchmarks/score.py: one Score class for every benchmark; tables and facts served by name."""

from __future__ import annotations

import inspect
import json

import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks import BENCHMARKS, Score
from reteco_measures.benchmarks.recor.data import load_recor
from reteco_measures.sample import sample_root

SAMPLE = sample_root()

# the names the benchmarks' pages document, written out here: tables (in declaration order) and facts
EXPECTED = {
    "reteco-1a": (["by_domain"], {"domains", "labels", "queries", "n_queries", "steps", "n_steps", "rules"}),
    "reteco-1b": (["by_domain"], {"domains", "labels", "queries", "n_queries", "steps", "n_steps", "rules",
                                  "average"}),
    "reteco-2a": (["by_domain", "by_depth"], {"domains", "turns", "n_turns", "rules"}),
    "ikat-2023": ([], {"run_name", "run_type", "passage_score"}),
    "chunqiu": ([], {"queries", "violations"}),
    "spoken": (["grid", "by_collection", "by_condition"],
               {"quality", "requests", "invalid_queries", "missing_queries", "problems"}),
    "reteco-2b": ([], {"scale", "turns"}),
    "reteco-2c": ([], {"scale", "turns"}),
    "ikat-2023-generation": ([], {"scale", "turns"}),
}


def _score(name: str) -> Score:
    bench = rm.benchmark(name)
    if bench.cli.demo is not None:
        kw = dict(bench.cli.demo(SAMPLE))
        return bench.score(kw.pop("run"), **kw)
    # a judged generation track: two turns judged 4 and 2 on the 1-5 scale
    dimension = bench.measures(bench.resolve_options())[0].params["dimension"]
    return bench.score(pd.DataFrame({"turn_id": ["c1_turn_1", "c1_turn_2"], "dimension": dimension,
                                     "score": [4, 2]}))


@pytest.fixture(scope="module")
def recor_score() -> Score:
    return rm.benchmark("reteco-2a").score(SAMPLE / "runs" / "reteco_track2.txt", data=SAMPLE, split="dev")


def test_every_registered_benchmark_is_covered() -> None:
    assert set(BENCHMARKS) == set(EXPECTED)


def test_score_declares_no_benchmark_specific_name() -> None:
    assert "__getattr__" not in vars(Score)
    names = {n for n, _ in inspect.getmembers(Score)}
    for name in ("by_domain", "by_depth", "grid", "by_collection", "by_condition", "domains", "n_turns",
                 "run_name", "passage_score", "quality", "requests", "violations", "invalid_queries"):
        assert name not in names, name
    for name in ("table", "fact", "table_names", "facts", "declaration", "scores", "to_dict"):
        assert name in names, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_tables_and_facts_by_name_on_every_benchmark(name: str) -> None:
    score = _score(name)
    tables, facts = EXPECTED[name]
    assert score.declaration is rm.benchmark(name)
    assert score.table_names == tables
    for t in tables:
        assert score.table(t) is score.by_group[t]
    assert set(score.facts) == facts
    doc = json.loads(json.dumps(score.to_dict(), default=str))
    for f in facts:
        assert score.fact(f) is score.meta[f]
        assert f in doc  # a fact is also a top-level field of the JSON
    with pytest.raises(KeyError, match=r"no table 'no_such_table'"):
        score.table("no_such_table")
    with pytest.raises(KeyError, match=r"records no fact 'no_such_fact'"):
        score.fact("no_such_fact")
    assert score.fact("no_such_fact", None) is None


def test_generation_facts_by_hand() -> None:
    # judged 4 and 2 on 1-5: (4-1)/4 = 0.75 and (2-1)/4 = 0.25, mean 0.5 over 2 turns
    score = _score("reteco-2b")
    assert score.official == pytest.approx(0.5, abs=1e-12)
    assert score.fact("turns") == 2


def test_recor_tables_and_facts(recor_score: Score) -> None:
    score = recor_score
    assert score.table("by_domain") is score.by_group["by_domain"]
    assert list(score.table("by_depth")["depth"].astype(str))[:1] != []
    # the turns scored: the sample's dev qrels name each evaluated turn once
    turns = load_recor("dev", root=SAMPLE, qualified=True).qrels["query_id"].nunique()
    assert score.fact("n_turns") == score.fact("turns") == turns
    assert list(score.scores.columns) == [c for c in score.summary_columns if c in score.summary.columns]


def test_a_name_the_benchmark_lacks_is_a_key_error_naming_what_it_has(recor_score: Score) -> None:
    with pytest.raises(KeyError, match=r"no table 'grid'.*by_depth.*by_domain"):
        recor_score.table("grid")  # a Spoken-Query table
    with pytest.raises(KeyError, match=r"records no fact 'run_name'.*domains"):
        recor_score.fact("run_name")  # an iKAT fact
    assert not hasattr(recor_score, "grid") and not hasattr(recor_score, "by_domain")
