"""Never a silent zero: query ids that only meet in another form warn, and one switch maps them.

The organisers' public RECOR sample writes its qrels topics as ``<conversation>#turn<t>`` while runs
use ``<conversation>_turn_<t>``; the all-domains loader qualifies ids as ``<domain>/<id>``. Expected
values are worked out by hand from the qrels (a designed run retrieves one relevant document per
turn at rank 2), never from our own output.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.benchmarks.recor.data import load_organiser_sample
from reteco_measures.cli.main import main
from reteco_measures.errors import (
    EmptyInputWarning,
    GroupMismatchWarning,
    InputMismatchError,
    QueryIdFormWarning,
    QueryIdMismatchWarning,
)
from reteco_measures.query_ids import canonical_query_ids, match_query_ids


def _sample(recor_sample_dir: Path):
    qrels_path = recor_sample_dir / "qrels.txt"
    raw = pd.read_csv(qrels_path, sep=r"\s+", header=None, names=["q", "it", "d", "r"], dtype=str)
    release = raw["q"].str.replace("#turn", "_turn_", regex=False)  # the release form, by hand
    first = raw.groupby("q", sort=False)["d"].first()
    n_rel = raw.groupby("q", sort=False).size()
    rows = []
    for q, doc in first.items():
        rel_id = q.replace("#turn", "_turn_")
        rows += [(rel_id, "not-relevant", 2.0), (rel_id, doc, 1.0)]
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    # binary nDCG@10 of each turn: one relevant document at rank 2 over the ideal of its R relevant ones
    by_hand = {
        q.replace("#turn", "_turn_"): (1 / math.log2(3)) / sum(1 / math.log2(i + 1) for i in range(1, min(r, 10) + 1))
        for q, r in n_rel.items()
    }
    assert set(by_hand) == set(release)
    return qrels_path, run, by_hand


def test_organiser_sample_warns_then_scores_with_normalize(recor_sample_dir: Path):
    qrels_path, run, by_hand = _sample(recor_sample_dir)
    # by default the number that the id forms would make 0 is refused, naming the switch
    with pytest.raises(InputMismatchError, match="query_ids='normalize'") as refused:
        rm.calc_aggregate(["TurnNDCG@10"], str(qrels_path), run)
    assert isinstance(refused.value.warning, QueryIdFormWarning)
    with pytest.warns(QueryIdMismatchWarning) as caught:
        value = rm.calc_aggregate(["TurnNDCG@10"], str(qrels_path), run, on_mismatch="warn")
    message = str(caught[0].message)
    assert "#turn" in message and "_turn_" in message and "query_ids='normalize'" in message
    assert "--normalize-ids" in message
    assert list(value.values()) == [0.0]  # what it is without the switch: loud, not silent
    with warnings.catch_warnings():
        warnings.simplefilter("error", QueryIdMismatchWarning)
        got = rm.calc_aggregate(["TurnNDCG@10", "nDCG@10"], str(qrels_path), run, query_ids="normalize")
    expected = sum(by_hand.values()) / len(by_hand)
    assert list(got.values()) == [pytest.approx(expected, abs=1e-12)] * 2


def test_organiser_sample_by_domain(recor_sample_dir: Path):
    qrels_path, run, by_hand = _sample(recor_sample_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader reports the '#turn' rows it normalised
        data = load_organiser_sample(recor_sample_dir)
    with pytest.raises(InputMismatchError, match="query_ids='normalize'"):
        rm.evaluate(["TurnNDCG@10"], data.qrels, run, topics=data.topics, by="domain")
    with pytest.warns(QueryIdMismatchWarning, match="law/"):
        frame = rm.evaluate(["TurnNDCG@10"], data.qrels, run, topics=data.topics, by="domain",
                            on_mismatch="warn")
    assert (frame["value"] == 0.0).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", QueryIdMismatchWarning)
        warnings.simplefilter("error", GroupMismatchWarning)
        frame = rm.evaluate(["TurnNDCG@10"], data.qrels, run, topics=data.topics, by="domain",
                            query_ids="normalize")
    domain_of = dict(zip(data.topics["release_query_id"], data.topics["domain"]))
    got = frame.set_index("domain")["value"]
    means = {}
    for dom in set(domain_of.values()):
        vals = [v for q, v in by_hand.items() if domain_of[q] == dom]
        means[dom] = sum(vals) / len(vals)
        assert got[dom] == pytest.approx(means[dom], abs=1e-12)
    assert got["(macro)"] == pytest.approx(sum(means.values()) / len(means), abs=1e-12)
    assert got["(all)"] == pytest.approx(sum(by_hand.values()) / len(by_hand), abs=1e-12)


def test_cli_refuses_then_normalizes(recor_sample_dir: Path, tmp_path: Path, capsys):
    qrels_path, run, by_hand = _sample(recor_sample_dir)
    run_path = tmp_path / "run.txt"
    run_path.write_text("".join(f"{r.query_id} Q0 {r.doc_id} 0 {r.score} x\n" for r in run.itertuples()))
    assert main(["eval", str(qrels_path), str(run_path), "TurnNDCG@10"]) == 1
    err = capsys.readouterr().err
    assert "share no query id" in err and "--normalize-ids" in err and "Traceback" not in err
    assert main(["eval", str(qrels_path), str(run_path), "TurnNDCG@10", "--normalize-ids", "--format", "tsv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split("\t")[:2] == ["TurnNDCG@10", f"{sum(by_hand.values()) / len(by_hand):.4f}"]


def test_canonical_forms():
    got = canonical_query_ids(["law/ex_1_turn_1", "ex_1#turn1", "ex_1#turn01", "ex_1_turn_01", "001", "1.0", "00"])
    assert got.tolist() == ["ex_1_turn_1"] * 4 + ["1", "1", "0"]


def test_ikat_turn_ids_with_a_hyphen_for_the_underscore():
    # iKAT turns are <topic>-<subtree>_<turn> (9-1_3); some qrels copies write 9-1-3
    assert canonical_query_ids(["9-1-3", "9-1_3", "10-2-12", "2023-01-05-1"]).tolist() == [
        "9-1_3", "9-1_3", "10-2_12", "2023-01-05-1"]
    qrels = pd.DataFrame({"query_id": ["9-1-3", "9-1-4"], "doc_id": ["p1", "p2"], "relevance": [1, 1]})
    run = pd.DataFrame({"query_id": ["9-1_3", "9-1_4"], "doc_id": ["p1", "p9"], "score": [1.0, 1.0]})
    with pytest.raises(InputMismatchError, match=r"run '9-1_3', qrels '9-1-3'"):
        rm.calc_aggregate(["P@1"], qrels, run)  # a known form: refused by default, named
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = rm.calc_aggregate(["P@1"], qrels, run, query_ids="normalize")
    # 9-1-3 finds p1 at rank 1 -> 1; 9-1-4's p2 is not retrieved -> 0
    assert list(got.values()) == [pytest.approx(1 / 2)]


def _pair(qrels_ids, run_ids):
    qrels = pd.DataFrame({"query_id": qrels_ids, "doc_id": "d", "relevance": 1})
    run = pd.DataFrame({"query_id": run_ids, "doc_id": "d", "score": 1.0})
    return qrels, run


def test_numbers_read_as_ints():
    qrels, run = _pair(["001", "002", "003"], ["1", "2"])
    with pytest.raises(InputMismatchError, match=r"run '1', qrels '001'.*query_ids='normalize'"):
        rm.calc_aggregate(["P@1"], qrels, run)
    with pytest.warns(QueryIdMismatchWarning, match=r"run '1', qrels '001'"):
        rm.calc_aggregate(["P@1"], qrels, run, on_mismatch="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = rm.calc_aggregate(["P@1", "TurnNDCG@1"], qrels, run, query_ids="normalize")
    # 001 and 002 retrieve their relevant document at rank 1 -> 1; 003 is missing from the run -> 0
    # (ir_measures and our measures score every qrels query): (1 + 1 + 0) / 3
    assert list(got.values()) == [pytest.approx(2 / 3), pytest.approx(2 / 3)]


def test_domain_qualified_and_ambiguous_plain_ids():
    qrels, run = _pair(["law/2_turn_1", "bio/2_turn_1", "law/7_turn_1"], ["2_turn_1", "7_turn_1"])
    match = match_query_ids(run["query_id"], qrels["query_id"])
    assert match.mapping == {"7_turn_1": "law/7_turn_1"} and match.ambiguous == ("2_turn_1",)
    with pytest.warns(QueryIdMismatchWarning, match="name several qrels queries"):
        got = rm.calc_aggregate(["TurnNDCG@1"], qrels, run, query_ids="normalize")
    assert list(got.values()) == [pytest.approx(1 / 3)]  # only law/7_turn_1 scores (1 of 3 turns)


def test_unrelated_ids_warn_without_a_mapping():
    qrels, run = _pair(["a", "b"], ["x", "y"])
    with pytest.warns(QueryIdMismatchWarning, match="share no query id") as caught:
        rm.calc_aggregate(["nDCG@10"], qrels, run)
    assert "normalise" not in str(caught[0].message)  # no known form maps them: no false hint


def test_matching_ids_do_not_warn():
    qrels, run = _pair(["a", "b"], ["a"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rm.calc_aggregate(["nDCG@10", "TurnNDCG@10"], qrels, run)


def test_empty_inputs_warn():
    qrels, run = _pair(["a"], ["a"])
    with pytest.warns(EmptyInputWarning, match="run has no usable row"):
        rm.calc_aggregate(["nDCG@10"], qrels, run.iloc[:0])
    with pytest.warns(EmptyInputWarning, match="qrels has no usable row"):
        rm.calc_aggregate(["nDCG@10"], qrels.iloc[:0], run)


def test_topics_ids_stay_strings_and_unmatched_groups_are_counted(tmp_path: Path):
    topics = tmp_path / "topics.tsv"
    topics.write_text("query_id\tdomain\n122291_22\tlaw\n001\tbio\n")
    loaded = rm.load_topics(topics)
    assert loaded["query_id"].tolist() == ["122291_22", "001"]
    qrels, run = _pair(["122291_22", "001", "x9"], ["122291_22", "001", "x9"])
    with pytest.warns(GroupMismatchWarning, match=r"1 of 3 evaluated queries .*no row in the topics .*'x9'"):
        frame = rm.evaluate(["P@1"], qrels, run, topics=str(topics), by="domain")
    got = frame.set_index("domain")["n"]
    assert (got["law"], got["bio"], got["(none)"]) == (1, 1, 1)
    # JSON numbers with gaps are floats: 12.0 is the id "12", never "12.0"
    assert rm.load_topics(pd.DataFrame({"query_id": [12.0, float("nan")]}))["query_id"].tolist()[0] == "12"


def test_topics_and_labels_in_another_form_warn_and_normalize():
    qrels, run = _pair(["c_turn_1", "c_turn_2"], ["c_turn_1", "c_turn_2"])
    topics = pd.DataFrame({"query_id": ["dom/c_turn_1", "dom/c_turn_2"], "domain": ["dom", "dom"]})
    with pytest.raises(InputMismatchError, match="topics 'dom/c_turn_1', qrels 'c_turn_1'"):
        rm.evaluate(["P@1"], qrels, run, topics=topics, by="domain")
    with pytest.warns(QueryIdMismatchWarning, match="topics 'dom/c_turn_1', qrels 'c_turn_1'"):
        with pytest.warns(GroupMismatchWarning, match="2 of 2 evaluated queries"):
            rm.evaluate(["P@1"], qrels, run, topics=topics, by="domain", on_mismatch="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = rm.evaluate(["P@1"], qrels, run, topics=topics, by="domain", query_ids="normalize")
    assert frame.set_index("domain").loc["dom", "n"] == 2
    labels = pd.DataFrame({"query_id": ["C_TURN_9"], "doc_id": ["d"], "temporal": [1], "periods": [["2017"]]})
    with pytest.warns(QueryIdMismatchWarning, match="labels and qrels share no query id"):
        rm.calc_aggregate(["TR@10"], qrels, run, labels=labels)


def test_plain_ir_measures_call_warns_once():
    import ir_measures

    qrels, run = _pair(["001"], ["1"])
    with pytest.warns(QueryIdMismatchWarning, match="run '1', qrels '001'"):
        ir_measures.calc_aggregate([rm.TurnNDCG @ 10], qrels, run)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rm.calc_aggregate([rm.TurnNDCG @ 10], qrels, run, on_mismatch="warn")
    assert len([w for w in caught if issubclass(w.category, QueryIdMismatchWarning)]) == 1


def test_iter_calc_and_align_query_ids_share_the_switch():
    from reteco_measures.query_ids import align_query_ids

    qrels, run = _pair(["c#turn1", "c#turn2"], ["c_turn_1", "c_turn_2"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        per = {m.query_id: float(m.value) for m in rm.iter_calc(["P@1"], qrels, run, query_ids="normalize")}
        aligned = align_query_ids(qrels, run, topics=pd.DataFrame({"query_id": ["c_turn_1"], "domain": ["x"]}),
                                  mode="normalize")
    assert per == {"c#turn1": 1.0, "c#turn2": 1.0}  # reported under the qrels' ids
    assert aligned.run["query_id"].tolist() == ["c#turn1", "c#turn2"]
    assert aligned.topics["query_id"].tolist() == ["c#turn1"] and aligned.labels is None
    assert run["query_id"].tolist() == ["c_turn_1", "c_turn_2"]  # inputs untouched
    with pytest.raises(ValueError, match="query_ids must be one of"):
        rm.calc_aggregate(["P@1"], qrels, run, query_ids="fuzzy")


# ------------------------------------------------------------------------------------------------
# rm.* refuse a number that a known id form would make 0; plain ir_measures keeps the warning


@pytest.mark.parametrize("qrels_ids,run_ids", [
    (["c#turn1", "c#turn2"], ["c_turn_1", "c_turn_2"]),          # organiser sample vs release
    (["law/c_turn_1", "law/c_turn_2"], ["c_turn_1", "c_turn_2"]),  # qualified vs plain
    (["001", "002"], ["1", "2"]),                                  # numbers through a spreadsheet
])
def test_rm_functions_refuse_ids_in_another_known_form(qrels_ids, run_ids):
    import ir_measures

    qrels, run = _pair(qrels_ids, run_ids)
    calls = {
        "calc_aggregate": lambda **kw: rm.calc_aggregate(["P@1", "TurnNDCG@1"], qrels, run, **kw),
        "iter_calc": lambda **kw: list(rm.iter_calc(["P@1", "TurnNDCG@1"], qrels, run, **kw)),
        "evaluate": lambda **kw: rm.evaluate(["P@1", "TurnNDCG@1"], qrels, run, **kw),
    }
    for name, call in calls.items():
        with pytest.raises(InputMismatchError, match="query_ids='normalize'") as refused:
            call()
        assert isinstance(refused.value.warning, QueryIdFormWarning), name
        # the switch named in the refusal gives the number: every run query retrieves its only
        # relevant document at rank 1 -> P@1 = 1 per query (hand computation)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = call(query_ids="normalize")
        if name == "calc_aggregate":
            assert list(got.values()) == [1.0, 1.0]
    # the drop-in ir_measures call through our provider keeps the warning (and its 0)
    with pytest.warns(QueryIdFormWarning, match="query_ids='normalize'"):
        assert list(ir_measures.calc_aggregate([rm.TurnNDCG @ 1], qrels, run).values()) == [0.0]


def test_unrelated_ids_and_empty_runs_still_warn_by_default():
    qrels, run = _pair(["a", "b"], ["x", "y"])
    with pytest.warns(QueryIdMismatchWarning, match="share no query id"):
        assert list(rm.calc_aggregate(["P@1"], qrels, run).values()) == [0.0]
    with pytest.warns(EmptyInputWarning):
        rm.calc_aggregate(["P@1"], qrels, run.iloc[:0])
    with pytest.raises(InputMismatchError, match="share no query id"):
        rm.calc_aggregate(["P@1"], qrels, run, on_mismatch="error")
    with pytest.raises(ValueError, match="on_mismatch must be one of"):
        rm.calc_aggregate(["P@1"], qrels, run, on_mismatch="refuse")
