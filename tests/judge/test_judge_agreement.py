"""Judge-human agreement statistics against the reference implementations: scikit-learn's
``cohen_kappa_score(weights="quadratic")`` and ``confusion_matrix``, the ``krippendorff`` package,
and scipy's ``spearmanr`` / ``kendalltau`` — on random and constructed ratings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

krippendorff = pytest.importorskip("krippendorff")
sklearn_metrics = pytest.importorskip("sklearn.metrics")
from scipy import stats  # noqa: E402

import reteco_measures as rm  # noqa: E402
from reteco_measures.cli.main import main as cli_main  # noqa: E402
from reteco_measures.errors import DataFormatWarning  # noqa: E402
from reteco_measures.judge import agreement, confusion_matrices, read_ratings, self_consistency  # noqa: E402
from reteco_measures.judge.agreement import AGREEMENT_COLUMNS  # noqa: E402

COLUMNS = ["dimension", "n", "kappa_quadratic", "alpha_ordinal", "alpha_humans", "spearman", "kendall", "exact",
           "within_1"]


def make(judge_scores, human_matrix, dimension="correctness"):
    """Frames from a judge vector and an items x raters matrix (NaN = not rated)."""
    items = [f"t{i:03d}" for i in range(len(judge_scores))]
    judge = pd.DataFrame({"turn_id": items, "dimension": dimension, "score": judge_scores})
    rows = [{"turn_id": items[i], "dimension": dimension, "rater": f"r{r}", "score": int(v)}
            for i, row in enumerate(human_matrix) for r, v in enumerate(row) if not np.isnan(v)]
    return judge, pd.DataFrame(rows)


def references(judge_scores, human_matrix, low, high):
    """Every statistic from the reference packages (consensus = lower median, by hand)."""
    j = np.asarray(judge_scores, dtype=float)
    h = np.asarray(human_matrix, dtype=float)
    cons = np.array([np.sort(r[~np.isnan(r)])[(np.sum(~np.isnan(r)) - 1) // 2] for r in h])
    mean = np.nanmean(h, axis=1)
    labels = list(range(low, high + 1))
    return {
        "kappa_quadratic": sklearn_metrics.cohen_kappa_score(j.astype(int), cons.astype(int), weights="quadratic",
                                                             labels=labels),
        "alpha_ordinal": krippendorff.alpha(reliability_data=np.column_stack([j, h]).T,
                                            level_of_measurement="ordinal", value_domain=labels),
        "alpha_humans": krippendorff.alpha(reliability_data=h.T, level_of_measurement="ordinal", value_domain=labels),
        "spearman": stats.spearmanr(j, mean).statistic,
        "kendall": stats.kendalltau(j, mean).statistic,
        "exact": float(np.mean(j == cons)),
        "within_1": float(np.mean(np.abs(j - cons) <= 1)),
        "_cons": cons,
    }


def assert_matches(row, ref):
    for key in ("kappa_quadratic", "alpha_ordinal", "alpha_humans", "spearman", "kendall", "exact", "within_1"):
        assert row[key] == pytest.approx(ref[key], abs=1e-12), key


@pytest.mark.parametrize(("seed", "low", "high", "raters"), [(0, 1, 5, 3), (1, 1, 5, 2), (2, 0, 4, 3), (3, 0, 4, 4),
                                                             (4, 0, 1, 3), (5, 1, 5, 5)])
def test_random_ratings_match_the_reference_implementations(seed, low, high, raters):
    rng = np.random.default_rng(seed)
    n = 80
    truth = rng.integers(low, high + 1, n)
    # raters and judge are noisy copies of a latent score, so the statistics are not all near zero
    noise = rng.integers(-1, 2, (n, raters))
    human = np.clip(truth[:, None] + noise, low, high).astype(float)
    human[rng.random((n, raters)) < 0.25] = np.nan  # some items are not rated by everyone
    human[np.all(np.isnan(human), axis=1), 0] = truth[np.all(np.isnan(human), axis=1)]
    judge = np.clip(truth + rng.integers(-1, 2, n), low, high)
    j, h = make(judge, human)
    scale = {(1, 5): "reteco", (0, 4): "ikat", (0, 1): "binary"}[(low, high)]
    table = agreement(j, h, scale=scale, bootstrap=0)
    assert list(table.columns) == AGREEMENT_COLUMNS == COLUMNS[:3] + [
        "kappa_ci_low", "kappa_ci_high", "alpha_ordinal", "alpha_ci_low", "alpha_ci_high"] + COLUMNS[4:] + ["fleiss_kappa", "note"]
    (row,) = table.to_dict(orient="records")
    assert row["n"] == n and row["dimension"] == "correctness"
    assert_matches(row, references(judge, human, low, high))


def test_perfect_agreement():
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, 40)
    j, h = make(truth, np.column_stack([truth, truth]).astype(float))
    (row,) = agreement(j, h, bootstrap=50).to_dict(orient="records")
    assert row["kappa_quadratic"] == pytest.approx(1.0) and row["alpha_ordinal"] == pytest.approx(1.0)
    assert row["alpha_humans"] == pytest.approx(1.0)
    assert (row["exact"], row["within_1"]) == (1.0, 1.0)
    assert row["spearman"] == pytest.approx(1.0) and row["kendall"] == pytest.approx(1.0)
    assert row["kappa_ci_low"] == pytest.approx(1.0) and row["kappa_ci_high"] == pytest.approx(1.0)


def test_systematic_plus_one_bias():
    rng = np.random.default_rng(11)
    human = rng.integers(1, 5, 60)  # 1..4, so the judge's +1 stays on the scale
    j, h = make(human + 1, np.column_stack([human, human]).astype(float))
    (row,) = agreement(j, h, bootstrap=0).to_dict(orient="records")
    ref = references(human + 1, np.column_stack([human, human]), 1, 5)
    assert_matches(row, ref)
    # a perfect ranking, never the same score, always within one point; kappa and alpha punish the offset
    assert row["spearman"] == pytest.approx(1.0) and row["kendall"] == pytest.approx(1.0)
    assert (row["exact"], row["within_1"]) == (0.0, 1.0)
    assert row["kappa_quadratic"] < 1 and row["alpha_ordinal"] < 1 and row["alpha_humans"] == pytest.approx(1.0)


def test_independent_random_judge_is_near_zero_and_matches():
    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, (300, 2)).astype(float)
    judge = rng.integers(1, 6, 300)
    j, h = make(judge, human)
    (row,) = agreement(j, h, bootstrap=0).to_dict(orient="records")
    assert_matches(row, references(judge, human, 1, 5))
    assert abs(row["kappa_quadratic"]) < 0.15


def test_bootstrap_intervals_follow_the_documented_resampling():
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, 50)
    human = np.clip(truth[:, None] + rng.integers(-1, 2, (50, 2)), 1, 5).astype(float)
    judge = np.clip(truth + rng.integers(-1, 2, 50), 1, 5)
    j, h = make(judge, human)
    B = 200
    (row,) = agreement(j, h, bootstrap=B, seed=9).to_dict(orient="records")
    # the documented scheme: numpy PCG64 seeded with [seed, dimension index]; B resamples of the
    # items (sorted by id) for kappa, then B for alpha; 2.5 / 97.5 percentiles
    ref = references(judge, human, 1, 5)
    cons = ref["_cons"]
    g = np.random.default_rng([9, 0])
    kap = [sklearn_metrics.cohen_kappa_score(judge[i], cons[i].astype(int), weights="quadratic",
                                             labels=[1, 2, 3, 4, 5]) for i in (g.integers(0, 50, 50) for _ in range(B))]
    alp = [krippendorff.alpha(reliability_data=np.column_stack([judge, human])[i].T, level_of_measurement="ordinal",
                              value_domain=[1, 2, 3, 4, 5]) for i in (g.integers(0, 50, 50) for _ in range(B))]
    assert (row["kappa_ci_low"], row["kappa_ci_high"]) == pytest.approx(tuple(np.percentile(kap, [2.5, 97.5])))
    assert (row["alpha_ci_low"], row["alpha_ci_high"]) == pytest.approx(tuple(np.percentile(alp, [2.5, 97.5])))


def test_items_without_both_sides_are_not_counted_and_bad_rows_are_reported():
    judge = pd.DataFrame({"turn_id": ["a", "b", "c", "d", "e"], "dimension": "relevance",
                          "score": [5, 4, None, 3, 2], "error": [None, None, "timeout", None, None]})
    human = pd.DataFrame({"turn_id": ["a", "b", "c", "d", "x", "e"], "dimension": "relevance",
                          "rater": ["r1"] * 6, "score": [5, 4, 3, "four", 2, 9]})
    problems = []
    (row,) = agreement(judge, human, bootstrap=0, problems=problems).to_dict(orient="records")
    # a, b: both sides; c: judge invalid; d: human score not an integer; e: human score off the scale; x: no judge
    assert row["n"] == 2
    assert any("'four'" in p.message for p in problems) and any("outside the 1-5 scale" in p.message for p in problems)
    with pytest.warns(DataFormatWarning):
        agreement(judge, human, bootstrap=0)


def test_repeats_of_the_judge_are_combined_by_the_lower_median():
    judge = pd.DataFrame({"turn_id": ["a"] * 4 + ["b"] * 4 + ["c"] * 4, "dimension": "coherence",
                          "repeat": [0, 1, 2, 3] * 3, "score": [2, 5, 3, 4, 1, 1, 2, 5, 4, 4, 4, 4]})
    human = pd.DataFrame({"turn_id": ["a", "b", "c"], "dimension": "coherence", "rater": "r", "score": [3, 1, 4]})
    (row,) = agreement(judge, human, bootstrap=0).to_dict(orient="records")
    # lower medians: a (2,3,4,5) -> 3, b (1,1,2,5) -> 1, c -> 4: all equal the single rater
    assert row["exact"] == 1.0


def test_confusion_matrix_matches_sklearn():
    rng = np.random.default_rng(2)
    human = rng.integers(0, 5, (70, 3)).astype(float)
    judge = rng.integers(0, 5, 70)
    j, h = make(judge, human, dimension="groundedness")
    m = confusion_matrices(j, h)["groundedness"]
    cons = references(judge, human, 0, 4)["_cons"].astype(int)
    expected = sklearn_metrics.confusion_matrix(judge, cons, labels=[0, 1, 2, 3, 4])
    assert m.shape == (5, 5) and (m.to_numpy() == expected).all()


def test_self_consistency_is_alpha_across_repeats():
    rng = np.random.default_rng(4)
    base = rng.integers(1, 6, 30)
    reps = np.clip(base[:, None] + rng.integers(-1, 2, (30, 3)), 1, 5)
    rows = [{"turn_id": f"t{i}", "dimension": "completeness", "repeat": r, "score": int(reps[i, r]), "error": None}
            for i in range(30) for r in range(3)]
    rows.append({"turn_id": "t0", "dimension": "completeness", "repeat": 3, "score": None, "error": "timeout"})
    (row,) = self_consistency(pd.DataFrame(rows)).to_dict(orient="records")
    ref = krippendorff.alpha(reliability_data=reps.T.astype(float), level_of_measurement="ordinal",
                             value_domain=[1, 2, 3, 4, 5])
    assert row["alpha_repeats"] == pytest.approx(ref) and row["items"] == 30 and row["repeats"] == 3
    assert row["identical"] == pytest.approx(float(np.mean([len(set(r)) == 1 for r in reps.tolist()])))


def test_ratings_files_long_csv_jsonl_and_a_filled_sheet(tmp_path):
    long_csv = tmp_path / "r.csv"
    long_csv.write_text("turn_id,dimension,rater,score\nt1,correctness,ann,4\nt1,correctness,bob,\n"
                        "t2,conversational_coherence,ann,2\n", encoding="utf-8")
    r = read_ratings(long_csv)
    assert r.to_dict(orient="records") == [
        {"turn_id": "t1", "dimension": "correctness", "rater": "ann", "score": 4},
        {"turn_id": "t2", "dimension": "coherence", "rater": "ann", "score": 2}]
    jl = tmp_path / "r.jsonl"
    jl.write_text(json.dumps({"query_id": "q1", "doc_id": "d9", "dimension": "temporal_relevance", "rater": "ann",
                              "score": 1}) + "\n")
    assert read_ratings(jl)["turn_id"].tolist() == ["q1 d9"]
    sheet = tmp_path / "sheet.csv"
    pd.DataFrame({"item": [1, 2], "turn_id": ["t1", "t2"], "dimension": ["relevance", "relevance"],
                  "answer": ["a, with comma", "b\nmultiline"], "score_ann": ["5", ""], "score_bob": ["4", "3"]}
                 ).to_csv(sheet, index=False)
    got = read_ratings(sheet).sort_values(["turn_id", "rater"]).to_dict(orient="records")
    assert got == [{"turn_id": "t1", "dimension": "relevance", "rater": "ann", "score": 5},
                   {"turn_id": "t1", "dimension": "relevance", "rater": "bob", "score": 4},
                   {"turn_id": "t2", "dimension": "relevance", "rater": "bob", "score": 3}]


def test_tempo_verdicts_and_ikat_scale_through_the_cli(tmp_path, capsys):
    rng = np.random.default_rng(8)
    n = 40
    verdict = rng.integers(0, 2, n)
    human_v = np.where(rng.random(n) < 0.8, verdict, 1 - verdict)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"query_id": f"q{i // 4}", "doc_id": f"d{i}", "temporal": int(v),
                                          "periods": [], "error": None}) + "\n" for i, v in enumerate(verdict))
                      + json.dumps({"query_id": "q0", "doc_id": "dX", "temporal": None, "periods": [],
                                    "error": "verdict: timeout"}) + "\n")
    ratings = tmp_path / "ratings.csv"
    pd.DataFrame({"query_id": [f"q{i // 4}" for i in range(n)] + ["q0"], "doc_id": [f"d{i}" for i in range(n)]
                  + ["dX"], "dimension": "temporal_relevance", "rater": "ann",
                  "score": list(human_v) + [1]}).to_csv(ratings, index=False)
    assert cli_main(["judge", "agreement", "--judgments", str(labels), "--human", str(ratings), "--format", "json",
                     "--bootstrap", "0"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["n"] == n  # the invalid verdict (dX) is not compared
    assert row["kappa_quadratic"] == pytest.approx(sklearn_metrics.cohen_kappa_score(verdict, human_v))
    assert row["exact"] == pytest.approx(float(np.mean(verdict == human_v)))

    # iKAT groundedness 0-4 from a judgments file, markdown output and the confusion matrix
    judge = rng.integers(0, 5, 25)
    human = rng.integers(0, 5, 25)
    jf = tmp_path / "ikat.jsonl"
    jf.write_text("".join(json.dumps({"turn_id": f"9-1_{i}", "dimension": "groundedness", "score": int(s),
                                      "error": None}) + "\n" for i, s in enumerate(judge)))
    hf = tmp_path / "ikat_h.csv"
    pd.DataFrame({"turn_id": [f"9-1_{i}" for i in range(25)], "dimension": "groundedness", "rater": "x",
                  "score": human}).to_csv(hf, index=False)
    assert cli_main(["judge", "agreement", "--judgments", str(jf), "--human", str(hf), "--format", "markdown",
                     "--bootstrap", "0", "--confusion"]) == 0
    out = capsys.readouterr().out
    kappa = sklearn_metrics.cohen_kappa_score(judge, human, weights="quadratic", labels=[0, 1, 2, 3, 4])
    assert out.startswith("| dimension | n |") and f"| groundedness | 25 | {kappa:.4f} |" in out
    assert "rows = judge score, columns = human consensus" in out
    assert not math.isnan(kappa)


def test_tempo_judgments_out_sample_and_period_coverage_agreement(tmp_path, capsys):
    """``judge temporal --judgments-out`` rows (query_id, doc_id[, period]) -> rating sheet -> agreement."""
    rows = []
    for i in range(6):
        rows.append({"query_id": "q1", "doc_id": f"d{i}", "dimension": "temporal_relevance", "score": i % 2,
                     "error": None, "inputs": {"question": "When?", "periods": "- 2012", "document": f"doc {i}"}})
        rows.append({"query_id": "q1", "doc_id": f"d{i}", "dimension": "period_coverage", "period": "2012",
                     "score": int(i < 3), "error": None,
                     "inputs": {"question": "When?", "period": "2012", "document": f"doc {i}"}})
    jf = tmp_path / "judgments.jsonl"
    jf.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sheet = tmp_path / "sheet.csv"
    assert cli_main(["judge", "sample", "--judgments", str(jf), "--n", "12", "--raters", "ann", "--out",
                     str(sheet)]) == 0
    s = pd.read_csv(sheet, dtype=str, keep_default_na=False)
    assert sorted(s["turn_id"])[:2] == ["q1 d0", "q1 d0 2012"] and {"document", "period"} <= set(s.columns)
    # the rater agrees on every verdict and disagrees on coverage of d0
    truth = {f"q1 d{i}": str(i % 2) for i in range(6)} | {f"q1 d{i} 2012": str(int(i < 3)) for i in range(6)}
    truth["q1 d0 2012"] = "0"
    s["score_ann"] = [truth[t] for t in s["turn_id"]]
    s.to_csv(sheet, index=False)
    capsys.readouterr()
    assert cli_main(["judge", "agreement", "--judgments", str(jf), "--human", str(sheet), "--format", "json",
                     "--bootstrap", "0"]) == 0
    got = {r["dimension"]: r for r in json.loads(capsys.readouterr().out)}
    assert got["temporal_relevance"]["exact"] == 1.0 and got["temporal_relevance"]["n"] == 6
    judge_cov = [int(i < 3) for i in range(6)]
    human_cov = [0, 1, 1, 0, 0, 0]
    assert got["period_coverage"]["kappa_quadratic"] == pytest.approx(
        sklearn_metrics.cohen_kappa_score(judge_cov, human_cov))


def test_json_records_keep_full_precision():
    """The JSON of `judge agreement` / `judge report` carries every digit of the statistics (the old
    pandas to_json path kept 10 significant digits); NaN becomes null."""
    from reteco_measures.report.text import frame_records

    frame = pd.DataFrame({"dimension": ["x", "y"], "n": np.array([3, 4], dtype=np.int64),
                          "kappa_quadratic": [1 / 3, np.nan], "alpha_ordinal": [0.1234567890123456, 2 / 7]})
    records = frame_records(frame)
    assert records[0]["kappa_quadratic"] == 1 / 3 and records[0]["alpha_ordinal"] == 0.1234567890123456
    assert records[1]["kappa_quadratic"] is None and records[1]["alpha_ordinal"] == 2 / 7
    assert type(records[0]["n"]) is int
    assert json.loads(json.dumps(records)) == records


def test_pooled_row_over_dimensions_of_one_scale_and_small_n_notes():
    """Two 1-5 dimensions with 6 items each (too few for an interval alone) and one 0-4 dimension:
    the pooled 1-5 row equals the reference statistics over the 12 (dimension, item) pairs."""
    rng = np.random.default_rng(21)
    frames = []
    parts = {}
    for dim in ("correctness", "completeness"):
        truth = rng.integers(1, 6, 6)
        human = np.clip(truth[:, None] + rng.integers(-1, 2, (6, 2)), 1, 5).astype(float)
        judge = np.clip(truth + rng.integers(-1, 2, 6), 1, 5)
        frames.append(make(judge, human, dim))
        parts[dim] = (judge, human)
    g_j = np.array([3, 2, 4, 0, 1, 2])
    frames.append(make(g_j, np.column_stack([g_j, g_j]).astype(float), "groundedness"))
    j = pd.concat([f[0] for f in frames], ignore_index=True)
    h = pd.concat([f[1] for f in frames], ignore_index=True)
    table = agreement(j, h, bootstrap=200, seed=4)
    assert table["dimension"].tolist() == ["correctness", "completeness", "groundedness", "(pooled 1-5)"]
    rows = table.set_index("dimension").to_dict(orient="index")
    for dim in ("correctness", "completeness", "groundedness"):
        assert rows[dim]["n"] == 6 and "too small for an interval" in rows[dim]["note"]
        assert math.isnan(rows[dim]["kappa_ci_low"]) and math.isnan(rows[dim]["alpha_ci_high"])
    pooled = rows["(pooled 1-5)"]
    judge = np.concatenate([parts["correctness"][0], parts["completeness"][0]])
    human = np.vstack([parts["correctness"][1], parts["completeness"][1]])
    assert pooled["n"] == 12
    assert_matches(pooled, references(judge, human, 1, 5))
    assert "pooled over correctness, completeness" in pooled["note"]
    assert pooled["kappa_ci_low"] <= pooled["kappa_quadratic"] <= pooled["kappa_ci_high"]
    # no pooled row when asked not to, or for a scale only one dimension uses
    assert agreement(j, h, bootstrap=0, pooled=False)["dimension"].tolist() == [
        "correctness", "completeness", "groundedness"]


# ------------------------------------------------------------------------------------------------
# 2. judge agreement --confusion reads its inputs once


def _agreement_inputs(tmp_path: Path) -> tuple[Path, Path]:
    judgments = tmp_path / "judgments.jsonl"
    rows = [("t1", 4), ("t2", 3), ("t3", 3), ("t4", 0), ("t5", 2)]
    lines = [json.dumps({"turn_id": t, "dimension": "groundedness", "score": s, "error": None}) for t, s in rows]
    lines.insert(2, '{"turn_id": "t9", "dimension": BROKEN')  # line 3: not JSON
    judgments.write_text("\n".join(lines) + "\n")
    human = tmp_path / "human.csv"
    human.write_text("turn_id,dimension,rater,score\n"
                     "t1,groundedness,a,4\n"
                     "t1,groundedness,b,3\n"
                     "t2,groundedness,a,3\n"
                     "t3,groundedness,a,2\n"
                     "t3,groundedness,b,2.5\n"  # line 6: not an integer, left out
                     "t4,groundedness,a,0\n"
                     "t5,groundedness,a,2\n"
                     "t5,groundedness,b,9\n")  # line 9: outside 0-4, left out
    return judgments, human


def test_agreement_confusion_warns_once_and_keeps_the_numbers(tmp_path, capsys):
    judgments, human = _agreement_inputs(tmp_path)
    base = ["judge", "agreement", "--judgments", str(judgments), "--human", str(human), "--format", "json",
            "--bootstrap", "50"]

    assert cli_main(base) == 0
    captured = capsys.readouterr()
    plain = json.loads(captured.out)
    plain_err = captured.err

    assert cli_main([*base, "--confusion"]) == 0
    captured = capsys.readouterr()
    both = json.loads(captured.out)
    err = captured.err

    # each left-out row is reported exactly once, with or without --confusion
    for marker in ("judgments.jsonl:3", "'2.5'", "score 9"):
        assert err.count(marker) == 1, (marker, err)
        assert plain_err.count(marker) == 1, (marker, plain_err)

    # the agreement numbers are those computed without --confusion
    assert both["agreement"] == plain

    # by hand: compared items t1..t5; consensus = lower median of the valid human scores:
    # t1 [3, 4] -> 3, t2 3, t3 2 (2.5 left out), t4 0, t5 2 (9 left out); judge 4, 3, 3, 0, 2
    (row,) = plain
    assert row["n"] == 5
    assert row["exact"] == pytest.approx(3 / 5)  # t2, t4, t5
    assert row["within_1"] == pytest.approx(1.0)
    conf = both["confusion"]["groundedness"]
    assert conf["judge"] == [0, 1, 2, 3, 4] and conf["human_consensus"] == [0, 1, 2, 3, 4]
    expected = [[0] * 5 for _ in range(5)]
    for j, h in [(4, 3), (3, 3), (3, 2), (0, 0), (2, 2)]:
        expected[j][h] += 1
    assert conf["counts"] == expected


def test_agreement_and_confusion_matches_the_separate_functions(tmp_path):
    from reteco_measures.judge.agreement import agreement, agreement_and_confusion, confusion_matrices

    judgments, human = _agreement_inputs(tmp_path)
    problems: list = []
    table, conf = agreement_and_confusion(str(judgments), str(human), bootstrap=30, seed=3, problems=problems)
    assert len(problems) == 3  # the broken line, 2.5 and 9: once each
    with pytest.warns(rm.DataFormatWarning):
        alone = agreement(str(judgments), str(human), bootstrap=30, seed=3)
    assert table.equals(alone)
    with pytest.warns(rm.DataFormatWarning):
        matrices = confusion_matrices(str(judgments), str(human))
    assert conf.keys() == matrices.keys() and conf["groundedness"].equals(matrices["groundedness"])
