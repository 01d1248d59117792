"""Prediction-powered judge means (``reteco_measures.stats.calibrate``) against the ``ppi-python``
package (``ppi_py.ppi_mean_pointestimate`` / ``ppi_mean_ci``, run side by side), a simulation with
a known truth, hand computations of the degenerate cases, and the command line."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

ppi_py = pytest.importorskip("ppi_py")

from reteco_measures.cli.main import main as cli_main  # noqa: E402
from reteco_measures.errors import DataFormatWarning  # noqa: E402
from reteco_measures.judge import calibrate  # noqa: E402
from reteco_measures.judge.report import build_report, report_markdown  # noqa: E402
from reteco_measures.stats.calibrate import CALIBRATION_COLUMNS, ppi_mean  # noqa: E402


def likert_case(seed: int, n_items: int, n_rated: int, low: int, high: int, raters: int = 2,
                dimension: str = "correctness"):
    """A judge frame (one score per item, biased upwards) and a long human frame (``raters`` per
    rated item, some items with one rater), plus the arrays ppi_py needs, normalised by hand."""
    rng = np.random.default_rng(seed)
    items = [f"t{i:03d}" for i in range(n_items)]
    truth = rng.integers(low, high + 1, n_items)
    judge = np.clip(truth + rng.choice([-1, 0, 1, 1, 2], n_items), low, high)
    rated = rng.choice(n_items, n_rated, replace=False)
    rows = []
    human_mean = {}
    for i in rated:
        k = raters if i % 3 else 1
        scores = np.clip(truth[i] + rng.integers(-1, 2, k), low, high)
        human_mean[items[i]] = (scores.mean() - low) / (high - low)
        rows += [{"turn_id": items[i], "dimension": dimension, "rater": f"r{r}", "score": int(s)}
                 for r, s in enumerate(scores)]
    jframe = pd.DataFrame({"turn_id": items, "dimension": dimension, "score": judge})
    norm = (judge - low) / (high - low)
    lab = np.array([t in human_mean for t in items])
    y = np.array([human_mean[t] for t in np.array(items)[lab]])
    return jframe, pd.DataFrame(rows), y, norm[lab], norm[~lab]


def _ref(y, f, fu, lam, ci=0.95):
    est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)))
    lo, hi = ppi_py.ppi_mean_ci(y, f, fu, alpha=1 - ci, lam=lam)
    return est, float(np.squeeze(lo)), float(np.squeeze(hi))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method,lam", [("ppi", 1.0), ("ppi++", None)])
def test_matches_ppi_python_on_likert_ratings(seed, method, lam):
    rng = np.random.default_rng(100 + seed)
    scale = [(1, 5, "correctness"), (0, 4, "groundedness")][seed % 2]
    n_items, n_rated = int(rng.integers(30, 300)), int(rng.integers(8, 25))
    judge, human, y, f, fu = likert_case(seed, n_items, n_rated, scale[0], scale[1], dimension=scale[2])
    ci = [0.95, 0.9, 0.99][seed % 3]
    row = calibrate(judge, human, method=method, ci=ci).iloc[0]
    est, lo, hi = _ref(y, f, fu, lam, ci)
    assert row["calibrated"] == pytest.approx(est, abs=1e-12)
    assert row["ci_low"] == pytest.approx(lo, abs=1e-12)
    assert row["ci_high"] == pytest.approx(hi, abs=1e-12)
    assert row["n"] == n_items and row["n_human"] == n_rated
    assert row["judge_mean"] == pytest.approx(np.concatenate([f, fu]).mean(), abs=1e-15)
    assert row["human_mean"] == pytest.approx(y.mean(), abs=1e-15)
    assert row["bias"] == pytest.approx(np.mean(f - y), abs=1e-15)  # judge - human on the rated items


def test_power_tuned_lambda_is_interior_and_matches_ppi_python():
    rng = np.random.default_rng(7)
    interior = 0
    for _ in range(20):
        n, N = int(rng.integers(5, 60)), int(rng.integers(5, 400))
        y = rng.random(n)
        f = 0.3 * y + 0.7 * rng.random(n)  # a weak judge: mostly 0 < lambda < 1
        fu = rng.random(N)
        res = ppi_mean(y, f, fu, method="ppi++")
        assert 0 <= res.lam <= 1
        interior += 0 < res.lam < 1
        est, lo, hi = _ref(y, f, fu, None)
        assert (res.estimate, res.ci_low, res.ci_high) == pytest.approx((est, lo, hi), abs=1e-12)
        # lam is what ppi_py uses: its explicit-lambda path gives the same numbers with our lam
        assert _ref(y, f, fu, res.lam) == pytest.approx((est, lo, hi), abs=1e-12)
    assert interior >= 15


def test_batched_estimates_equal_one_at_a_time():
    rng = np.random.default_rng(3)
    y, f, fu = rng.random((5, 20)), rng.random((5, 20)), rng.random((5, 70))
    batch = ppi_mean(y, f, fu)
    for b in range(5):
        one = ppi_mean(y[b], f[b], fu[b])
        assert (batch.estimate[b], batch.ci_low[b], batch.lam[b]) == pytest.approx(
            (one.estimate, one.ci_low, one.lam), abs=1e-14)


@pytest.mark.parametrize("method", ["ppi", "ppi++"])
def test_coverage_of_a_known_truth(method):
    """R = 4000 simulated spot-checks (n = 200 rated of 1,200 judged items, a judge biased by
    about +0.6 points on 0-4) with the true mean known exactly. A correct 95% interval covers it
    in a Binomial(4000, 0.95) share of repetitions: sd 0.0034, so the band 93-97% is 5.8 sd wide
    on each side (a correct procedure fails it with probability < 1e-8), while a procedure with
    true coverage 92% or 98% falls outside it with probability > 0.99. One vectorised call: well
    under a second. The judge's own interval (no calibration) covers the truth almost never."""
    rng = np.random.default_rng(2024)
    R, n, N = 4000, 200, 1000
    p = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    levels = np.arange(5) / 4
    truth = float((p * levels).sum())

    def draw(size):
        y = rng.choice(5, size=size, p=p)
        f = np.clip(y + rng.choice([-1, 0, 0, 1, 1, 2], size=size), 0, 4)
        return levels[y], f / 4

    y, f = draw((R, n))
    _, fu = draw((R, N))
    res = ppi_mean(y, f, fu, method=method, ci=0.95)
    covered = float(np.mean((res.ci_low <= truth) & (truth <= res.ci_high)))
    assert 0.93 <= covered <= 0.97, covered
    allf = np.concatenate([f, fu], axis=1)
    se = allf.std(axis=1) / np.sqrt(n + N)
    naive = float(np.mean(np.abs(allf.mean(axis=1) - truth) <= 1.96 * se))
    assert naive < 0.2


def test_ppi_plus_plus_is_never_wider_here_than_ppi_and_classical():
    judge, human, y, f, fu = likert_case(11, 400, 60, 1, 5)
    rows = {m: calibrate(judge, human, method=m).iloc[0] for m in ("ppi", "ppi++")}
    width = {m: r["ci_high"] - r["ci_low"] for m, r in rows.items()}
    classical = 2 * 1.959963984540054 * y.std() / np.sqrt(len(y))
    assert width["ppi++"] <= min(width["ppi"], classical) + 1e-12


# ------------------------------------------------------------------------------------------------
# edge cases


def test_dimension_without_human_ratings_gets_nan_and_a_warning():
    judge, human, *_ = likert_case(1, 40, 10, 1, 5)
    other = judge.assign(dimension="relevance")
    with pytest.warns(DataFormatWarning, match="relevance: no judged item has a human rating"):
        table = calibrate(pd.concat([judge, other]), human)
    assert list(table.columns) == CALIBRATION_COLUMNS
    row = table.set_index("dimension").loc["relevance"]
    assert row["n"] == 40 and row["n_human"] == 0
    assert np.isnan(row["calibrated"]) and np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])
    assert row["judge_mean"] == pytest.approx(((other["score"] - 1) / 4).mean())


def test_one_human_item_gives_the_ppi_estimate_without_an_interval():
    judge = pd.DataFrame({"turn_id": ["a", "b", "c", "d"], "dimension": "correctness", "score": [5, 4, 4, 2]})
    human = pd.DataFrame({"turn_id": ["a", "a"], "dimension": "correctness", "rater": ["x", "y"], "score": [3, 4]})
    for method in ("ppi", "ppi++"):
        with pytest.warns(DataFormatWarning, match="one human-rated item"):
            row = calibrate(judge, human, method=method).iloc[0]
        # by hand: unlabelled judge mean (3/4 + 3/4 + 1/4)/3 plus the one correction 0.625 - 1.0
        assert row["calibrated"] == pytest.approx((0.75 + 0.75 + 0.25) / 3 + (0.625 - 1.0), abs=1e-15)
        assert row["bias"] == pytest.approx(0.375)
        assert np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])


def test_ties_a_constant_judge_falls_back_to_the_human_mean():
    """Every judge score tied: the judge carries no information, lambda = 0 (ppi_py gives NaN), and
    the interval is the classical normal interval of the human mean (divisor n, as in PPI)."""
    judge = pd.DataFrame({"turn_id": [f"t{i}" for i in range(30)], "dimension": "correctness", "score": 4})
    hs = [1, 2, 2, 3, 3, 3, 4, 5]
    human = pd.DataFrame({"turn_id": [f"t{i}" for i in range(8)], "dimension": "correctness", "rater": "r",
                          "score": hs})
    row = calibrate(judge, human).iloc[0]
    y = (np.array(hs) - 1) / 4
    assert row["lam"] == 0
    assert row["calibrated"] == pytest.approx(y.mean())
    half = 1.959963984540054 * y.std() / np.sqrt(8)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((y.mean() - half, y.mean() + half), abs=1e-12)
    # ties in the human scores too: every value equal, a zero-width interval at that value
    flat = human.assign(score=4)
    row = calibrate(judge, flat, method="ppi").iloc[0]
    assert row["calibrated"] == row["ci_low"] == row["ci_high"] == pytest.approx(0.75)
    assert row["bias"] == 0


def test_every_item_rated_is_the_classical_interval():
    judge, human, y, f, fu = likert_case(4, 20, 20, 1, 5)
    assert len(fu) == 0
    row = calibrate(judge, human).iloc[0]
    half = 1.959963984540054 * y.std() / np.sqrt(len(y))
    assert row["lam"] == 0
    assert (row["calibrated"], row["ci_low"], row["ci_high"]) == pytest.approx(
        (y.mean(), y.mean() - half, y.mean() + half), abs=1e-12)


def test_a_human_score_off_the_scale_is_left_out_with_a_warning_naming_file_and_line(tmp_path, capsys):
    judge, human, *_ = likert_case(2, 20, 5, 1, 5)
    bad = pd.concat([human, pd.DataFrame([{"turn_id": "t000", "dimension": "correctness", "rater": "zz",
                                           "score": 0}])], ignore_index=True)
    clean = calibrate(judge, human)
    with pytest.warns(DataFormatWarning, match=r"t000: human score 0 for 'correctness' by rater 'zz' is outside "
                                               r"the 1-5 scale; left out"):
        got = calibrate(judge, bad)
    pd.testing.assert_frame_equal(got, clean)  # the rest of the sheet is calibrated as without the row
    path = tmp_path / "h.csv"
    bad.to_csv(path, index=False)
    line = len(bad) + 1  # the last row, after the header line
    with pytest.warns(DataFormatWarning, match=rf"h\.csv:{line}: t000: human score 0"):
        calibrate(judge, path)
    # the command line says --scale, names file and line, and calibrates the rest (exit 0)
    jpath = tmp_path / "j.jsonl"
    judge.assign(normalized=(judge["score"] - 1) / 4).to_json(jpath, orient="records", lines=True)
    assert cli_main(["judge", "calibrate", "--judgments", str(jpath), "--human", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"h.csv:{line}: t000: human score 0" in err and "--scale" in err and "<data>" not in err
    # nothing left to calibrate: exit 1
    only = tmp_path / "only.csv"
    only.write_text("turn_id,dimension,rater,score\nt000,correctness,zz,9\n", encoding="utf-8")
    assert cli_main(["judge", "calibrate", "--judgments", str(jpath), "--human", str(only)]) == 1
    assert "only.csv:2: t000: human score 9" in capsys.readouterr().err


def test_agreement_and_report_name_the_ratings_file_not_a_placeholder(tmp_path, capsys):
    judge, human, *_ = likert_case(3, 20, 8, 1, 5)
    jpath, hpath = tmp_path / "j.jsonl", tmp_path / "ratings.csv"
    judge.assign(normalized=(judge["score"] - 1) / 4).to_json(jpath, orient="records", lines=True)
    pd.concat([human, pd.DataFrame([{"turn_id": "t000", "dimension": "correctness", "rater": "zz", "score": 7}])],
              ignore_index=True).to_csv(hpath, index=False)
    line = len(human) + 2
    for command in ("agreement", "report"):
        cli_main(["judge", command, "--judgments", str(jpath), "--human", str(hpath), "--bootstrap", "0"])
        err = capsys.readouterr().err
        assert f"ratings.csv:{line}: t000: human score 7" in err and "<data>" not in err, (command, err)
        assert err.count("human score 7") == 1, (command, err)


def test_an_interval_past_the_scale_is_clipped_and_said(recwarn):
    # humans rate almost every rated item at the top; the normal interval of the mean passes 1
    judge = pd.DataFrame({"turn_id": [f"t{i}" for i in range(12)], "dimension": "correctness", "score": 5})
    human = pd.DataFrame({"turn_id": [f"t{i}" for i in range(6)], "dimension": "correctness", "rater": "a",
                          "score": [5, 5, 5, 5, 5, 4]})
    y = np.array([1, 1, 1, 1, 1, 0.75])
    f, fu = np.ones(6), np.ones(6)
    est, lo, hi = _ref(y, f, fu, lam=0.0)  # a constant judge: lambda = 0, the classical interval
    assert hi > 1  # what ppi_py gives, unclipped
    with pytest.warns(DataFormatWarning, match=r"correctness: ci_high 1\.\d{4} clipped to the 0-1 scale"):
        row = calibrate(judge, human).iloc[0]
    assert (row["calibrated"], row["ci_low"], row["ci_high"]) == pytest.approx((est, lo, 1.0), abs=1e-12)


@pytest.mark.parametrize("kwargs,message", [
    ({"scale": "likert"}, "unknown scale 'likert'"),
    ({"scale": (5, 1)}, "low < high"),
    ({"method": "ppi+"}, "method must be one of ppi, ppi\\+\\+"),
    ({"ci": 1.5}, "ci must be a confidence level"),
    ({"aggregate": "max"}, "aggregate must be one of"),
])
def test_bad_arguments(kwargs, message):
    judge, human, *_ = likert_case(2, 20, 5, 1, 5)
    with pytest.raises(ValueError, match=message):
        calibrate(judge, human, **kwargs)


def test_forced_scale_applies_to_judge_and_human():
    judge, human, y, f, fu = likert_case(5, 50, 12, 0, 4, dimension="correctness")  # iKAT-style 0-4 scores
    row = calibrate(judge, human, scale="ikat").iloc[0]
    assert row["calibrated"] == pytest.approx(_ref(y, f, fu, None)[0], abs=1e-12)


def test_repeats_are_combined_by_their_mean():
    judge = pd.DataFrame({"turn_id": ["a", "a", "b", "c"], "dimension": "correctness", "score": [5, 3, 2, 1],
                          "repeat": [0, 1, 0, 0]})
    human = pd.DataFrame({"turn_id": ["a", "b"], "dimension": "correctness", "rater": "r", "score": [4, 2]})
    row = calibrate(judge, human, method="ppi").iloc[0]
    f = np.array([0.75, 0.25])  # item a: mean of (5, 3) -> 4 -> 0.75
    assert row["judge_mean"] == pytest.approx((0.75 + 0.25 + 0.0) / 3)
    assert row["calibrated"] == pytest.approx(0.0 + np.mean(np.array([0.75, 0.25]) - f))


def test_human_rating_of_an_unjudged_item_is_reported():
    judge, human, *_ = likert_case(2, 20, 5, 1, 5)
    extra = pd.concat([human, pd.DataFrame([{"turn_id": "zzz", "dimension": "correctness", "rater": "r",
                                             "score": 3}])])
    problems = []
    table = calibrate(judge, extra, problems=problems)
    assert table.iloc[0]["n_human"] == 5
    assert [p.query_id for p in problems] == ["zzz"] and "without a valid judge score" in problems[0].message


# ------------------------------------------------------------------------------------------------
# groups


def test_by_run_one_row_per_run_equals_separate_calls():
    ja, ha, *_ = likert_case(21, 60, 15, 1, 5)
    jb, hb, *_ = likert_case(22, 80, 20, 1, 5)
    separate = pd.concat([calibrate(ja, ha).assign(run="A"), calibrate(jb, hb).assign(run="B")])
    separate = separate[["run", *CALIBRATION_COLUMNS]].reset_index(drop=True)
    by_mapping = calibrate({"A": ja, "B": jb}, {"A": ha, "B": hb}, by="run")
    by_columns = calibrate(pd.concat([ja.assign(run="A"), jb.assign(run="B")]),
                           pd.concat([ha.assign(run="A"), hb.assign(run="B")]), by="run")
    pd.testing.assert_frame_equal(by_mapping, separate)
    pd.testing.assert_frame_equal(by_columns, separate)


def test_by_run_from_files_named_by_file_name(tmp_path):
    ja, ha, *_ = likert_case(21, 60, 15, 1, 5)
    jb, hb, *_ = likert_case(22, 80, 20, 1, 5)
    paths = []
    for name, frame in (("bm25", ja), ("dense", jb)):
        p = tmp_path / f"{name}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")), encoding="utf-8")
        paths.append(p)
    hpath = tmp_path / "h.csv"
    pd.concat([ha.assign(run="bm25"), hb.assign(run="dense")]).to_csv(hpath, index=False)
    table = calibrate(paths, hpath, by="run")
    assert table["run"].tolist() == ["bm25", "dense"]
    assert table["calibrated"].tolist() == pytest.approx([calibrate(ja, ha).iloc[0]["calibrated"],
                                                          calibrate(jb, hb).iloc[0]["calibrated"]], abs=1e-15)


def test_shared_ratings_for_several_runs_warn():
    ja, ha, *_ = likert_case(21, 60, 15, 1, 5)
    with pytest.warns(DataFormatWarning, match="judged in several run groups"):
        calibrate({"A": ja, "B": ja}, ha, by="run")


# ------------------------------------------------------------------------------------------------
# command line and report


def _write(tmp_path, judge, human):
    jpath = tmp_path / "judgments.jsonl"
    jpath.write_text("".join(json.dumps(r) + "\n" for r in judge.to_dict("records")), encoding="utf-8")
    hpath = tmp_path / "sheet.csv"
    human.to_csv(hpath, index=False)
    return jpath, hpath


def test_cli_json_equals_python(tmp_path, capsys):
    judge, human, *_ = likert_case(8, 90, 25, 1, 5)
    jpath, hpath = _write(tmp_path, judge, human)
    for method in ("ppi", "ppi++"):
        assert cli_main(["judge", "calibrate", "--judgments", str(jpath), "--human", str(hpath), "--method", method,
                         "--format", "json"]) == 0
        got = json.loads(capsys.readouterr().out)
        want = calibrate(judge, human, method=method).iloc[0]
        assert got[0]["dimension"] == "correctness"
        for key in ("n", "n_human", "calibrated", "ci_low", "ci_high", "bias"):
            assert got[0][key] == pytest.approx(want[key], abs=1e-12), key


def test_cli_errors(tmp_path, capsys):
    judge, human, *_ = likert_case(8, 30, 5, 1, 5)
    jpath, hpath = _write(tmp_path, judge, human.assign(dimension="relevance"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli_main(["judge", "calibrate", "--judgments", str(jpath), "--human", str(hpath),
                         "--dimensions", "correctness"]) == 1
    assert "nothing could be calibrated" in capsys.readouterr().err
    human.loc[0, "score"] = 9
    jpath, hpath = _write(tmp_path, judge, human)
    # one rating off the scale is left out with a warning; the rest is calibrated (exit 0)
    assert cli_main(["judge", "calibrate", "--judgments", str(jpath), "--human", str(hpath)]) == 0
    err = capsys.readouterr().err
    assert "sheet.csv" in err and "human score 9" in err and "1-5 scale" in err and "Traceback" not in err


def test_report_has_the_calibrated_means_and_the_bias(tmp_path):
    judge, human, y, f, fu = likert_case(9, 70, 20, 1, 5)
    jpath, hpath = _write(tmp_path, judge, human)
    report = build_report(jpath, human=hpath, bootstrap=50)
    row = report["calibration"]["table"][0]
    assert row["calibrated"] == pytest.approx(_ref(y, f, fu, None)[0], abs=1e-12)
    assert row["bias"] == pytest.approx(np.mean(f - y), abs=1e-15)
    md = report_markdown(report)
    assert "### Judge means calibrated by the human ratings" in md
    assert f"{row['calibrated']:.4f}" in md and f"{row['bias']:.4f}" in md
    assert "calibration" not in build_report(jpath, bootstrap=50)


def test_the_worked_example_of_the_docs_prints_what_the_page_shows(worked_example, capsys):
    page = worked_example("judge-audit.md")
    assert page["printed"] == page["text"][0]
    assert cli_main(["judge", "calibrate", "--judgments", "judgments.jsonl", "--human", "ratings.csv"]) == 0
    assert capsys.readouterr().out == page["text"][1]
