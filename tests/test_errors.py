"""``errors.py``: warnings raised by public functions point at the caller's line (this file), not
at the package's own source lines, however deep in the package they are raised."""

from __future__ import annotations

import warnings
from pathlib import Path

import ir_measures
import pandas as pd
import pytest

import reteco_measures as rm
from reteco_measures.errors import describe_kinds, user_stacklevel

QRELS = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d2"], "relevance": [1, 1]})
RUN = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d2"], "score": [1.0, 1.0]})


def _warned_here(fn) -> list[warnings.WarningMessage]:
    """The warnings ``fn()`` raises; each must name this file as its location."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    assert caught, "the call warned nothing"
    wrong = [(type(w.message).__name__, w.filename, w.lineno) for w in caught if w.filename != __file__]
    assert not wrong, wrong
    return caught


def test_query_id_mismatch_points_at_the_caller() -> None:
    other = RUN.assign(query_id=["zz", "yy"])
    caught = _warned_here(lambda: rm.calc_aggregate(["nDCG@10"], QRELS, other))
    assert any(isinstance(w.message, rm.errors.QueryIdMismatchWarning) for w in caught)
    _warned_here(lambda: list(rm.iter_calc(["nDCG@10"], QRELS, other)))
    forms = pd.DataFrame({"query_id": ["ex_1#turn1"], "doc_id": ["d1"], "relevance": [1]})
    _warned_here(lambda: rm.evaluate(["nDCG@10"], forms, RUN.assign(query_id=["ex_1_turn_1", "ex_1_turn_2"]),
                                     on_mismatch="warn"))


def test_empty_input_points_at_the_caller() -> None:
    empty = RUN.iloc[:0]
    caught = _warned_here(lambda: rm.calc_aggregate(["nDCG@10"], QRELS, empty))
    assert any(isinstance(w.message, rm.errors.EmptyInputWarning) for w in caught)
    _warned_here(lambda: rm.evaluate(["nDCG@10"], QRELS, empty))


def test_reader_problems_point_at_the_caller(tmp_path: Path) -> None:
    _warned_here(lambda: rm.read_run("q1 Q0 d1 1 1.0 r\nbroken\n"))
    _warned_here(lambda: rm.read_qrels("q1 0 d1 1\nbroken\n"))
    # a loader reading several files: the bad line is found three calls down
    from reteco_measures.benchmarks.tempo.data import load_tempo_files

    (tmp_path / "ex.jsonl").write_text('{"id": "q1", "query": "x", "gold_ids": ["a/d1"]}\nnot json\n')
    (tmp_path / "q.txt").write_text("q1 0 a/d1 1\n")
    _warned_here(lambda: load_tempo_files(tmp_path / "ex.jsonl", qrels=tmp_path / "q.txt"))
    (tmp_path / "labels.jsonl").write_text('{"query_id": "q1", "doc_id": "d1", "temporal": 3, "periods": []}\n')
    _warned_here(lambda: rm.calc_aggregate(["TP@10"], QRELS, RUN, labels=str(tmp_path / "labels.jsonl")))


def test_measure_warnings_point_at_the_caller_also_through_ir_measures() -> None:
    # TC without any required period: raised in a kernel, under rm.* and under plain ir_measures
    _warned_here(lambda: rm.calc_aggregate(["TC@10"], QRELS, RUN))
    _warned_here(lambda: ir_measures.calc_aggregate([rm.TC @ 10], QRELS, RUN))
    _warned_here(lambda: rm.calc_aggregate(["StepNDCG@10"], QRELS, RUN))  # steps without a parent query


def test_grouping_and_stream_warnings_point_at_the_caller(tmp_path: Path) -> None:
    topics = pd.DataFrame({"query_id": ["q1"], "domain": ["a"]})
    caught = _warned_here(lambda: rm.evaluate(["nDCG@10"], QRELS, RUN, topics=topics, by="domain"))
    assert any(isinstance(w.message, rm.errors.GroupMismatchWarning) for w in caught)
    (tmp_path / "run.txt").write_text("zz Q0 d1 1 1.0 r\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    _warned_here(lambda: rm.evaluate(["nDCG@10"], str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"),
                                     stream=True))


def test_organiser_recor_qrels_warning_points_at_the_caller(recor_sample_dir: Path) -> None:
    from reteco_measures.benchmarks.recor.data import load_organiser_sample

    _warned_here(lambda: load_organiser_sample(recor_sample_dir))


def test_validate_run_reports_problems_as_values_not_warnings() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = rm.validate_run("q1 Q0 d1 1 1.0 r\nbroken\nq1 Q0 d1 2 0.5 r\n", "reteco")
    assert [p.kind for p in report.errors] == ["format", "duplicate"]
    assert [w.filename for w in caught if w.filename != __file__] == []


def test_user_stacklevel_and_warn_outside_the_package() -> None:
    # called from here (outside the package) the level is that of this very frame
    assert user_stacklevel() == 1
    with pytest.warns(UserWarning, match="plain") as caught:
        rm.errors.warn("plain")
    assert caught[0].filename == __file__


def test_describe_kinds_orders_and_names_the_kinds() -> None:
    counts = {"unknown_doc": 2, "missing_query": 1, "duplicate": 3, "other_domain_doc": 0, "id_form": 1}
    assert describe_kinds(counts) == ("3 duplicate document(s), 2 unknown document(s), 1 missing topic(s) "
                                      "(score 0), 1 id_form")
    assert describe_kinds({}) == "nothing"
