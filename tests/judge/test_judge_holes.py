"""Qrels holes (``reteco_measures.judge.holes``, ``reteco-measures judge holes``): Judged@k against
ir_measures' ``Judged@k``, the holes of several runs by hand, end to end against the local fake
OpenAI-compatible server: only the holes are asked, a pair it has (in the qrels, in the cache, in an
earlier extended qrels) is never asked again, the extended qrels carry provenance, each run's
measure with and without the filled holes equals ir_measures on the two qrels, and the PPI
calibration against ppi_py."""

from __future__ import annotations

import json
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest
from judge_server import JudgeServer, judged_text, score_reply, write_jsonl

from reteco_measures.cli.main import main as cli_main
from reteco_measures.errors import DataFormatWarning
from reteco_measures.judge.holes import find_holes, hole_report, judged_at_k, judged_warning

QRELS = "q1 0 d1 1\nq1 0 d5 0\nq2 0 d3 2\n"
RUN1 = "q1 Q0 d1 1 9 r1\nq1 Q0 d2 2 8 r1\nq1 Q0 d3 3 7 r1\nq2 Q0 d3 1 9 r1\nq2 Q0 d1 2 8 r1\n"
RUN2 = "q1 Q0 d2 1 9 r2\nq1 Q0 d4 2 8 r2\nq2 Q0 d4 1 9 r2\nq3 Q0 d1 1 9 r2\n"  # q3: not judged, no hole
HOLES = {("q1", "d2"), ("q1", "d3"), ("q1", "d4"), ("q2", "d1"), ("q2", "d4")}


@pytest.fixture
def server(monkeypatch):
    s = JudgeServer()
    monkeypatch.setenv("OPENAI_BASE_URL", s.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")

    def brain(server, body, nth):  # relevant iff the document says REL
        return score_reply(1 if "REL" in judged_text(body["messages"]) else 0)

    s.behaviour = brain
    yield s
    s.close()


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "r1.txt").write_text(RUN1)
    (tmp_path / "r2.txt").write_text(RUN2)
    write_jsonl(tmp_path / "topics.jsonl", [{"query_id": q, "query": f"question {q}", "required_periods": []}
                                           for q in ("q1", "q2", "q3")])
    write_jsonl(tmp_path / "docs.jsonl", [{"id": d, "content": f"doc {d} {'REL' if d in {'d2', 'd4'} else ''}"}
                                          for d in ("d1", "d2", "d3", "d4", "d5")])
    return tmp_path


def _qrels(text):
    return pd.DataFrame([ln.split() for ln in text.strip().splitlines()],
                        columns=["query_id", "iteration", "doc_id", "relevance"]).astype({"relevance": int})


def _run(text):
    return pd.DataFrame([ln.split() for ln in text.strip().splitlines()],
                        columns=["query_id", "q0", "doc_id", "rank", "score", "tag"]).astype({"score": float})


def test_judged_at_k_equals_ir_measures_and_holes_by_hand():
    q = _qrels(QRELS)
    for text in (RUN1, RUN2):
        run = _run(text)
        ours = judged_at_k(q, run, 3)
        ref = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 3], q, run)}
        assert ours.to_dict() == pytest.approx({k: v for k, v in ref.items() if k in ours.index})
    # q1: d1 of d1, d2, d3; q2: d3 of the two retrieved d3, d1
    assert judged_at_k(q, _run(RUN1), 3).to_dict() == pytest.approx({"q1": 1 / 3, "q2": 1 / 2})
    holes = find_holes(q, [_run(RUN1), _run(RUN2)], 3)
    assert set(zip(holes["query_id"], holes["doc_id"], strict=True)) == HOLES and len(holes) == 5


def test_a_run_far_below_the_pool_is_warned_about():
    with pytest.warns(DataFormatWarning, match="'new'.*far below"):
        assert len(judged_warning({"a": 0.95, "b": 0.9, "new": 0.5})) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert judged_warning({"a": 0.95, "b": 0.9, "c": 0.88}) == []
        assert judged_warning({"a": 0.009, "b": 0.008, "c": 0.004}) == []  # below 0.8 x, but by 0.003 only


def test_judge_holes_end_to_end_asks_only_the_holes_and_never_twice(server, files, capsys):
    out = files / "extended.tsv"
    argv = ["judge", "holes", "--qrels", str(files / "qrels.txt"), "--runs", str(files / "r1.txt"),
            str(files / "r2.txt"), "--depth", "3", "--topics", str(files / "topics.jsonl"), "--documents",
            str(files / "docs.jsonl"), "--model", "judge-m", "--out", str(out), "--no-progress", "--retries", "0",
            "--format", "json"]
    assert cli_main(argv) == 0
    asked = [judged_text(r["body"]["messages"]) for r in server.requests]
    assert sorted(asked) == sorted(f"doc {d} {'REL' if d in {'d2', 'd4'} else ''}" for _, d in HOLES)
    assert len(server.requests) == 5  # the five holes, nothing the qrels judge
    ext = pd.read_csv(out, sep="\t", dtype=str)
    assert list(ext.columns) == ["query_id", "iteration", "doc_id", "relevance", "provenance"]
    prov = {(r.query_id, r.doc_id): (int(r.relevance), r.provenance) for r in ext.itertuples()}
    assert prov[("q1", "d1")] == (1, "human") and prov[("q2", "d3")] == (2, "human")
    assert {k for k, v in prov.items() if v[1] == "judge-m"} == HOLES
    assert prov[("q1", "d2")] == (1, "judge-m") and prov[("q1", "d3")] == (0, "judge-m")
    report = pd.DataFrame(json.loads(capsys.readouterr().out)).set_index("run")
    # the measure with and without the filled holes, as ir_measures computes it on the two qrels
    filled = ext.assign(relevance=ext["relevance"].astype(int))[["query_id", "doc_id", "relevance"]]
    for name, text in (("r1.txt", RUN1), ("r2.txt", RUN2)):
        run = _run(text)
        run = run[run["query_id"].isin(["q1", "q2"])]
        for col, qrels in (("value_human", _qrels(QRELS)), ("value_filled", filled)):
            per = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, run)}
            assert report.loc[name, col] == pytest.approx(np.mean([per.get(q, 0.0) for q in ("q1", "q2")]))
    assert report.loc["r2.txt", "judged_before"] == pytest.approx(0.0)
    assert report.loc["r2.txt", "judged_after"] == pytest.approx(1.0)  # every hole of its top 3 filled
    # again with the cache: nothing is asked
    assert cli_main(argv) == 0 and len(server.requests) == 5
    # from the extended qrels without a cache: every pair is judged, nothing is asked
    argv2 = list(argv)
    argv2[argv2.index("--qrels") + 1] = str(out)
    assert cli_main(argv2 + ["--no-cache"]) == 0 and len(server.requests) == 5


def test_calibrated_value_equals_ppi_py():
    ppi_py = pytest.importorskip("ppi_py")
    human = _qrels("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\nq2 0 d4 1\nq3 0 d5 1\n")
    model = _qrels("q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 1\nq2 0 d4 0\n")  # model labels of human-judged pairs
    run = _run("q1 Q0 d1 1 9 r\nq1 Q0 d2 2 8 r\nq2 Q0 d3 1 9 r\nq2 Q0 d4 2 8 r\nq3 Q0 d5 1 9 r\nq3 Q0 d6 2 8 r\n")
    extended = pd.concat([human.assign(provenance="human"),
                          pd.DataFrame({"query_id": ["q3"], "doc_id": ["d6"], "relevance": [1], "provenance": "m"})])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = hole_report(human, extended, {"r": run}, measure="P@2", depth=2, model_labels=model,
                          method="ppi").iloc[0]
    # labelled: q1, q2 (top 2 judged by both); truth P@2 = 0.5, 1; model P@2 = 1, 0.5; unlabelled q3 filled = 1
    y, yhat, unl = np.array([0.5, 1.0]), np.array([1.0, 0.5]), np.array([1.0])
    assert row["n_labelled"] == 2 and row["value_human"] == pytest.approx((0.5 + 1 + 0.5) / 3)
    assert row["value_filled"] == pytest.approx((0.5 + 1 + 1) / 3)
    assert row["calibrated"] == pytest.approx(float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, unl, lam=1))[0]))


def test_the_worked_example_of_the_holes_page_prints_what_the_page_shows(worked_example):
    page = worked_example("qrels-holes.md")
    assert page["printed"] == page["text"][0]


def test_judged_at_10_is_a_diagnostic_of_the_scores_and_the_leaderboard_warns(tmp_path):
    import reteco_measures as rm
    from reteco_measures.sample import sample_path, sample_root

    run = sample_path("runs", "reteco_track2.txt")
    score = rm.benchmark("reteco-2a").score(run, data=sample_root())
    qrels = pd.concat([rm.read_qrels(p) for p in sorted((sample_root() / "reteco" / "track2_recor").glob("*/qrels_dev.txt"))])
    qrels["query_id"] = [f"{p.parent.name}/{q}" for p in sorted((sample_root() / "reteco" / "track2_recor")
                                                               .glob("*/qrels_dev.txt"))
                         for q in rm.read_qrels(p)["query_id"]]
    per = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 10], qrels, rm.read_run(run))}
    summary = score.summary.set_index("measure")
    assert summary.loc["Judged@10", "role"] == "diagnostic"
    assert summary.loc["Judged@10", "value"] == pytest.approx(np.mean([per.get(q, 0.0) for q in score.per_query["query_id"]]))
    # a run made only of unjudged documents of the corpus: Judged@10 far below the pooled runs'
    lines = run.read_text().splitlines()
    judged = set(zip(qrels["query_id"], qrels["doc_id"], strict=True))
    kept = [ln for ln in lines if (ln.split()[0], ln.split()[2]) not in judged]
    (tmp_path / "unjudged.txt").write_text("\n".join(kept) + "\n")
    with pytest.warns(DataFormatWarning, match="unjudged.*far below"):
        rm.leaderboard("reteco-2a", {"sample": run, "sample2": run, "unjudged": tmp_path / "unjudged.txt"},
                       data=sample_root(), n_resamples=50, on_mismatch="warn")


# -- the calibration sample: human-judged pairs the judge labels too -----------------------------
# q1, q2, q3, q6: the run's top 2 fully human-judged (calibration candidates); q4, q5: one hole each.
# The server says relevant iff the document says REL: it disagrees with the humans on d2 and d5.
CAL_QRELS = "q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 1\nq2 0 d4 0\nq3 0 d5 0\nq3 0 d6 0\nq4 0 d7 1\nq5 0 d9 0\nq6 0 d11 1\nq6 0 d12 1\n"
CAL_RUN = "".join(f"q{q} Q0 d{2 * q - 1} 1 9 r\nq{q} Q0 d{2 * q} 2 8 r\n" for q in range(1, 7))
CAL_REL = {"d1", "d3", "d5", "d7", "d9", "d11", "d12"}
CAL_PAIRS = {(f"q{q}", f"d{d}") for q in (1, 2, 3, 6) for d in (2 * q - 1, 2 * q)}
CAL_HOLES = {("q4", "d8"), ("q5", "d10")}


@pytest.fixture
def cal_files(tmp_path):
    (tmp_path / "qrels.txt").write_text(CAL_QRELS)
    (tmp_path / "r.txt").write_text(CAL_RUN)
    write_jsonl(tmp_path / "topics.jsonl", [{"query_id": f"q{q}", "query": f"question q{q}", "required_periods": []}
                                           for q in range(1, 7)])
    write_jsonl(tmp_path / "docs.jsonl", [{"id": f"d{d}", "content": f"doc d{d} {'REL' if f'd{d}' in CAL_REL else ''}"}
                                          for d in range(1, 13)])
    return tmp_path


def _asked_pairs(server, start=0):
    qrels = _qrels(CAL_QRELS)
    by_text = {f"doc {d} {'REL' if d in CAL_REL else ''}": d for d in {f"d{i}" for i in range(1, 13)}}
    docs = [by_text[judged_text(r["body"]["messages"])] for r in server.requests[start:]]
    qid = {d: q for q, d in CAL_PAIRS | CAL_HOLES} | dict(zip(qrels["doc_id"], qrels["query_id"], strict=True))
    return [(qid[d], d) for d in docs]


def test_calibration_pairs_by_hand():
    from reteco_measures.judge.holes import calibration_pairs

    q, run = _qrels(CAL_QRELS), _run(CAL_RUN)
    allp = calibration_pairs(q, [run], 2, sample=None)
    assert set(zip(allp["query_id"], allp["doc_id"], strict=True)) == CAL_PAIRS and len(allp) == 8
    assert len(calibration_pairs(q, [run], 2, sample=0)) == 0
    four = calibration_pairs(q, [run], 2, sample=5, seed=3)  # whole queries only: two of them (4 pairs)
    assert len(four) == 4 and four.groupby("query_id").size().eq(2).all()
    assert four.equals(calibration_pairs(q, [run], 2, sample=5, seed=3))  # the seed fixes the sample
    # a model-labelled row (provenance not human) does not make its query's top 2 human-judged
    extended = q.assign(provenance="human")
    extended.loc[extended["doc_id"] == "d12", "provenance"] = "m"
    got = calibration_pairs(extended, [run], 2, sample=None)
    assert set(got["query_id"]) == {"q1", "q2", "q3"}


def test_judge_holes_calibrates_by_default_against_ppi_py(server, cal_files, capsys):
    ppi_py = pytest.importorskip("ppi_py")
    out = cal_files / "extended.tsv"
    argv = ["judge", "holes", "--qrels", str(cal_files / "qrels.txt"), "--runs", str(cal_files / "r.txt"),
            "--depth", "2", "--measure", "P@2", "--topics", str(cal_files / "topics.jsonl"), "--documents",
            str(cal_files / "docs.jsonl"), "--model", "judge-m", "--out", str(out), "--no-progress", "--retries", "0",
            "--format", "json"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli_main(argv) == 0
    asked = _asked_pairs(server)
    assert sorted(asked) == sorted(CAL_HOLES | CAL_PAIRS) and len(asked) == 10  # each pair once
    captured = capsys.readouterr()
    assert "8 human-judged pair(s) sampled: 8 asked" in captured.err
    row = pd.DataFrame(json.loads(captured.out)).iloc[0]
    ext = pd.read_csv(out, sep="\t", dtype=str)
    assert set(zip(ext.loc[ext["provenance"] != "human", "query_id"],
                   ext.loc[ext["provenance"] != "human", "doc_id"], strict=True)) == CAL_HOLES  # labels stay apart
    # independent: P@2 per query by ir_measures on the human labels, the model labels (REL rule), the filled qrels
    run = _run(CAL_RUN)

    def p2(rows):
        qrels = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
        per = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.P @ 2], qrels, run)}
        return per

    human = p2([(q, d, int(r)) for q, _, d, r in (ln.split() for ln in CAL_QRELS.splitlines())])
    model = p2([(q, d, int(d in CAL_REL)) for q, d in CAL_PAIRS])
    filled = p2([(q, d, int(r)) for q, _, d, r in (ln.split() for ln in CAL_QRELS.splitlines())]
                + [(q, d, int(d in CAL_REL)) for q, d in CAL_HOLES])
    labelled, unlabelled = ["q1", "q2", "q3", "q6"], ["q4", "q5"]
    y = np.array([human[q] for q in labelled])
    yhat = np.array([model[q] for q in labelled])
    fu = np.array([filled[q] for q in unlabelled])
    assert list(y) == [1.0, 0.5, 0.0, 1.0] and list(yhat) == [0.5, 0.5, 0.5, 1.0] and list(fu) == [0.5, 0.0]
    est = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, fu))[0])
    lo, hi = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, yhat, fu, alpha=0.05))
    assert row["n_labelled"] == 4
    assert (row["calibrated"], row["ci_low"], row["ci_high"]) == pytest.approx((est, lo, hi), abs=1e-12)
    # a rerun asks nothing: the holes and the calibration pairs come from the cache
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli_main(argv) == 0
    assert len(server.requests) == 10
    assert "8 human-judged pair(s) sampled: 0 asked, 8 from the cache" in capsys.readouterr().err


def test_a_smaller_calibration_sample_then_a_larger_one_asks_only_the_new_pairs(server, cal_files, capsys):
    argv = ["judge", "holes", "--qrels", str(cal_files / "qrels.txt"), "--runs", str(cal_files / "r.txt"),
            "--depth", "2", "--measure", "P@2", "--topics", str(cal_files / "topics.jsonl"), "--documents",
            str(cal_files / "docs.jsonl"), "--model", "judge-m", "--out", str(cal_files / "e.tsv"), "--no-progress",
            "--retries", "0", "--format", "json"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli_main([*argv, "--calibration-sample", "5"]) == 0
        first = set(_asked_pairs(server)) - CAL_HOLES
        assert len(first) == 4 and first <= CAL_PAIRS and len({q for q, _ in first}) == 2  # two whole queries
        capsys.readouterr()
        assert cli_main([*argv, "--calibration-sample", "0"]) == 0  # no calibration: the columns are empty
        row = pd.DataFrame(json.loads(capsys.readouterr().out)).iloc[0]
        assert row["n_labelled"] == 0 and row["calibrated"] is None and "no calibration" in row["note"]
        n = len(server.requests)
        assert cli_main(argv) == 0
    assert sorted(_asked_pairs(server, n)) == sorted(CAL_PAIRS - first)  # only the pairs not asked before


def test_the_prediction_of_a_labelled_query_keeps_its_other_judged_documents():
    """nDCG@2 of a labelled query whose human qrels hold a relevant document outside the run's top
    2: the prediction replaces only the top 2's labels by the model's, so its ideal ranking still
    counts that document, as a filled query's does. Hand computation: run q1 = d1, d2; human d1 = 1,
    d2 = 0, d9 = 1 (not retrieved); the model agrees (d1 = 1, d2 = 0), so its prediction is the truth
    (on the model labels alone the ideal would lose d9 and the prediction would be 1)."""
    ppi_py = pytest.importorskip("ppi_py")
    human = _qrels("q1 0 d1 1\nq1 0 d2 0\nq1 0 d9 1\nq2 0 d3 1\n")
    model = _qrels("q1 0 d1 1\nq1 0 d2 0\n")
    run = _run("q1 Q0 d1 1 9 r\nq1 Q0 d2 2 8 r\nq2 Q0 d3 1 9 r\nq2 Q0 d4 2 8 r\n")
    extended = pd.concat([human.assign(provenance="human"),
                          pd.DataFrame({"query_id": ["q2"], "doc_id": ["d4"], "relevance": [1], "provenance": "m"})])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = hole_report(human, extended, {"r": run}, measure="nDCG@2", depth=2, model_labels=model,
                          method="ppi").iloc[0]
    idcg2 = 1 + 1 / np.log2(3)
    y = np.array([1 / idcg2])  # human: d1 relevant at rank 1, ideal d1, d9
    yhat = np.array([1 / idcg2])  # the same labels in the top 2, d9 kept
    fu = np.array([1.0])  # q2 filled: d3 = 1, d4 = 1
    assert row["n_labelled"] == 1
    assert row["calibrated"] == pytest.approx(float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, fu, lam=1))[0]))
