"""Tables of a Comparison: ranx-style significance superscripts, booktabs LaTeX, markdown, the wide
frame and JSON; every number is the summary's."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from reteco_measures.report.tables import run_letters
from reteco_measures.stats import compare_frame

RNG = np.random.default_rng(2)
BASE = RNG.random(50) * 0.5
VALUES = {"weak": BASE, "strong": BASE + 0.2 + RNG.normal(0, 0.02, 50), "same": BASE + RNG.normal(0, 0.001, 50)}


def frame(values=VALUES) -> pd.DataFrame:
    return pd.concat([pd.DataFrame({"run": k, "measure": m, "query_id": [f"q{i}" for i in range(len(v))],
                                    "value": v, "weight": 1.0})
                      for m in ("nDCG@10", "nDCG|FC@10") for k, v in values.items()], ignore_index=True)


C = compare_frame(frame(), n_resamples=200)


def test_letters() -> None:
    assert list(run_letters([f"r{i}" for i in range(28)]).values())[:3] == ["a", "b", "c"]
    assert list(run_letters([f"r{i}" for i in range(28)]).values())[26:] == ["aa", "ab"]


def test_latex_booktabs_with_superscripts_and_bold_best() -> None:
    tex = C.to_latex(caption="Runs", label="tab:runs")
    for token in ("\\toprule", "\\midrule", "\\bottomrule", "\\caption{Runs}", "\\label{tab:runs}"):
        assert token in tex
    strong_value = C.summary.query("run == 'strong' and measure == 'nDCG@10'")["value"].iloc[0]
    # strong (b) beats weak (a) and same (c) significantly: superscript "ac"; best value bold
    assert f"(b) strong & \\textbf{{{strong_value:.4f}}}$^{{ac}}$" in tex
    assert "nDCG\\textbar{}FC@10" in tex
    weak_line = next(line for line in tex.splitlines() if line.startswith("(a) weak"))
    assert "$^" not in weak_line


def test_markdown_marks_and_legend() -> None:
    md = C.to_markdown()
    assert "| (b) strong | **" in md and "<sup>ac</sup>" in md
    assert "holm correction" in md and "nDCG\\|FC@10" in md.splitlines()[0]


def test_baseline_only_marks_the_baseline_letter() -> None:
    c = compare_frame(frame(), baseline="same", n_resamples=200)
    md = c.to_markdown()
    assert "<sup>c</sup>" in md and "<sup>ac</sup>" not in md


def test_wide_frame_and_ci_columns() -> None:
    wide = C.to_frame()
    assert list(wide.columns) == ["run", "nDCG@10", "nDCG|FC@10"]
    assert wide["run"].tolist() == ["weak", "strong", "same"]
    s = C.summary.set_index(["run", "measure"])
    assert wide.set_index("run").loc["strong", "nDCG@10"] == s.loc[("strong", "nDCG@10"), "value"]
    with_ci = C.to_frame(ci=True)
    assert list(with_ci.columns)[:4] == ["run", "nDCG@10", "nDCG@10 ci_low", "nDCG@10 ci_high"]


def test_json_uses_parseable_names_and_null_for_nan() -> None:
    values = dict(VALUES)
    values["empty"] = np.full(50, np.nan)
    doc = json.loads(compare_frame(frame(values), n_resamples=100).to_json())
    assert doc["measures"] == ["nDCG@10", "nDCG_FC@10"]
    assert {r["measure"] for r in doc["summary"]} == {"nDCG@10", "nDCG_FC@10"}
    empty = [r for r in doc["summary"] if r["run"] == "empty"]
    assert all(r["value"] is None and r["n"] == 0 for r in empty)


def test_text_and_csv() -> None:
    assert C.to_text().startswith("summary")
    assert "pairwise" in repr(C)
    from reteco_measures.report import to_csv

    assert to_csv(C).splitlines()[0] == "run,measure,value,ci_low,ci_high,n"


def test_compare_accepts_a_dask_run() -> None:
    import dask.dataframe as dd

    import reteco_measures as rm

    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["x", "a", "b"], "score": [2.0, 1.0, 1.0]})
    c = rm.compare({"pandas": run, "dask": dd.from_pandas(run, npartitions=2)}, qrels, ["nDCG@10"], n_resamples=50)
    s = c.summary.set_index("run")["value"]
    assert s["dask"] == s["pandas"]
    assert s["pandas"] == pytest.approx(rm.calc_aggregate(["nDCG@10"], qrels, run)[rm.parse_measures("nDCG@10")[0]],
                                        rel=1e-15)


def test_html_table() -> None:
    html = C._repr_html_()
    assert html.startswith("<table>") and "<sup>ac</sup>" in html and "<b>" in html
    lo = C.summary.query("run == 'weak' and measure == 'nDCG@10'")["ci_low"].iloc[0]
    assert f"[{lo:.4f}, " in html
