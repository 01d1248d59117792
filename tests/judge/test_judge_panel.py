"""Judge panels (``reteco_measures.judge.panel``) on a small table computed by hand: pairwise
kappa against scikit-learn, alpha against ``krippendorff``, error correlations against
``numpy.corrcoef``, the effective committee size by hand, the PPI mean against ``ppi_py``; and
the same on the bundled sample's judge panel (``runs/reteco_track2_panel``, read here with the
standard library), with Fleiss' kappa against ``statsmodels``."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from reteco_measures.judge import panel
from reteco_measures.judge.panel import effective_size

# 8 items, three judges, correctness on 1-5; items i0..i5 also have two human raters
J = {"g1": [5, 4, 3, 2, 1, 4, 3, 5], "g2": [5, 3, 3, 2, 2, 4, 2, 5], "g3": [4, 4, 2, 1, 1, 5, 3, 4]}
H = {"r1": [5, 4, 2, 2, 1, 4], "r2": [4, 4, 3, 1, 1, 5]}
ITEMS = [f"i{i}" for i in range(8)]


def _frames():
    judg = pd.DataFrame([{"judge": j, "turn_id": t, "dimension": "correctness", "score": s}
                         for j, v in J.items() for t, s in zip(ITEMS, v, strict=True)])
    hum = pd.DataFrame([{"turn_id": ITEMS[i], "dimension": "correctness", "rater": r, "score": s}
                        for r, v in H.items() for i, s in enumerate(v)])
    return judg, hum


def test_panel_reproduces_a_hand_computation():
    sklearn = pytest.importorskip("sklearn.metrics")
    krippendorff = pytest.importorskip("krippendorff")
    judg, hum = _frames()
    p = panel(judg, hum, n_resamples=200)
    row = p.agreement.query("judge_a == 'g1' and judge_b == 'g2'").iloc[0]
    assert row["n"] == 8
    assert row["kappa_quadratic"] == pytest.approx(
        sklearn.cohen_kappa_score(J["g1"], J["g2"], weights="quadratic", labels=[1, 2, 3, 4, 5]))
    assert row["alpha_ordinal"] == pytest.approx(krippendorff.alpha(
        reliability_data=np.array([J["g1"], J["g2"]], float), level_of_measurement="ordinal",
        value_domain=[1, 2, 3, 4, 5]))
    m = p.matrix("correctness")
    assert m.loc["g2", "g1"] == m.loc["g1", "g2"] == row["kappa_quadratic"] and m.loc["g3", "g3"] == 1.0
    # errors against the raters' mean, by hand: human = 4.5, 4, 2.5, 1.5, 1, 4.5
    human = np.array([4.5, 4, 2.5, 1.5, 1, 4.5])
    E = np.array([np.array(J[j][:6]) - human for j in ("g1", "g2", "g3")]).T
    err = p.errors.set_index("judge")
    assert err.loc["g1", "bias"] == pytest.approx(E[:, 0].mean())  # (0.5 + 0 + 0.5 + 0.5 + 0 - 0.5) / 6
    assert err.loc["g1", "bias"] == pytest.approx(1 / 6)
    assert err.loc["g2", "mae"] == pytest.approx(np.abs(E[:, 1]).mean())
    assert err.loc["g3", "rmse"] == pytest.approx(np.sqrt((E[:, 2] ** 2).mean()))
    R = np.corrcoef(E.T)
    corr = p.error_correlation.set_index(["judge_a", "judge_b"])["r"]
    assert corr[("g1", "g3")] == pytest.approx(R[0, 2])
    rho_bar = (R[0, 1] + R[0, 2] + R[1, 2]) / 3
    eff = p.effective.iloc[0]
    assert eff["rho_bar"] == pytest.approx(rho_bar)
    assert eff["effective_size"] == pytest.approx(3 / (1 + 2 * rho_bar))
    assert eff["ci_low"] <= eff["effective_size"] <= eff["ci_high"] or np.isnan(eff["ci_low"])


def test_panel_aggregates_and_their_calibrated_means_against_ppi_py():
    ppi_py = pytest.importorskip("ppi_py")
    judg, hum = _frames()
    p = panel(judg, hum, method="ppi", n_resamples=0)
    S = np.array([J[j] for j in ("g1", "g2", "g3")], float).T
    by_hand = {"mean": S.mean(axis=1), "median": np.median(S, axis=1),
               # most frequent score, ties to the lowest: item 2 (3, 3, 2) -> 3, item 4 (1, 2, 1) -> 1
               "majority": np.array([5, 4, 3, 2, 1, 4, 3, 5], float)}
    human = np.array([4.5, 4, 2.5, 1.5, 1, 4.5])
    for name, v in by_hand.items():
        row = p.aggregate[p.aggregate["aggregate"] == name].iloc[0]
        assert row["panel_mean"] == pytest.approx(v.mean())
        assert row["n_human"] == 6 and row["n"] == 8
        est = ppi_py.ppi_mean_pointestimate(human, v[:6], v[6:], lam=1)
        lo, hi = ppi_py.ppi_mean_ci(human, v[:6], v[6:], alpha=0.05, lam=1)
        assert row["calibrated"] == pytest.approx(float(np.ravel(est)[0]))
        assert row["ci_low"] == pytest.approx(float(np.ravel(lo)[0]), rel=1e-6)
        assert row["ci_high"] == pytest.approx(float(np.ravel(hi)[0]), rel=1e-6)


def test_effective_size_formula_and_inputs():
    assert effective_size(4, 0.0) == 4.0
    assert effective_size(4, 1.0) == 1.0
    assert effective_size(5, 0.25) == pytest.approx(5 / 2)
    judg, _ = _frames()
    p = panel(judg)  # without humans: agreement and uncalibrated means only
    assert p.errors.empty and p.effective.empty and p.aggregate["calibrated"].isna().all()
    with pytest.raises(ValueError, match="at least two judges"):
        panel(judg[judg["judge"] == "g1"])
    with pytest.raises(ValueError, match="'judge' column"):
        panel(judg.drop(columns=["judge"]))
    assert panel({j: g.drop(columns=["judge"]) for j, g in judg.groupby("judge")}).judges == ["g1", "g2", "g3"]


def test_panel_and_repeats_commands(tmp_path, capsys):
    from reteco_measures.cli.main import main as cli_main

    judg, hum = _frames()
    for j in J:
        judg[judg["judge"] == j].drop(columns=["judge"]).to_json(tmp_path / f"{j}.jsonl", orient="records",
                                                                   lines=True)
    hum.to_csv(tmp_path / "h.csv", index=False)
    assert cli_main(["judge", "panel", "--judge", *(str(tmp_path / f"{j}.jsonl") for j in J), "--human",
                     str(tmp_path / "h.csv"), "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    kappa = panel(judg, hum, n_resamples=0).matrix("correctness").loc["g1", "g2"]
    assert f"{kappa:.4f}" in out and "effective committee size" in out
    # repeats: g1's and g3's scores as two repeats of one judge; gate g2 (baseline) -> the same items
    rep = pd.concat([judg[judg["judge"] == "g1"].assign(repeat=0), judg[judg["judge"] == "g3"].assign(repeat=1)])
    rep.drop(columns=["judge"]).to_json(tmp_path / "rep.jsonl", orient="records", lines=True)
    code = cli_main(["judge", "repeats", "--judgments", str(tmp_path / "rep.jsonl"), "--baseline",
                     str(tmp_path / "g2.jsonl"), "--dimension", "correctness"])
    out = capsys.readouterr().out
    assert code == 2 and "cannot_tell" in out  # 8 items: fewer than the 10 units a verdict needs


# -- the bundled sample's panel ------------------------------------------------------------------
SAMPLE_JUDGES = ("m1-rubric", "m1-stepwise", "m2-rubric")


def _sample_panel():
    """(items, S: items x judges scores, rated: item -> {rater: score}) read with json and csv."""
    import csv
    import json

    from reteco_measures.sample import sample_path

    folder = sample_path("runs", "reteco_track2_panel")
    by_judge = {}
    for j in SAMPLE_JUDGES:
        with open(folder / f"{j}.jsonl", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        assert {r["dimension"] for r in rows} == {"correctness"}
        by_judge[j] = {r["turn_id"]: r["score"] for r in rows}
    items = list(by_judge[SAMPLE_JUDGES[0]])
    S = np.array([[by_judge[j][t] for j in SAMPLE_JUDGES] for t in items], float)
    rated: dict[str, dict[str, int]] = {}
    with open(folder / "human.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            rated.setdefault(row["turn_id"], {})[row["rater"]] = int(row["score"])
    return folder, items, S, rated


def _effective_by_hand(E: np.ndarray) -> float:
    R = np.corrcoef(E.T)
    k = E.shape[1]
    rho = (R.sum() - k) / (k * (k - 1))
    den = 1 + (k - 1) * rho
    return k / den if den > 0 else np.nan  # the documented rule: no size where 1 + (k - 1) rho <= 0


def test_panel_on_the_bundled_sample_against_independent_computations():
    sklearn = pytest.importorskip("sklearn.metrics")
    krippendorff = pytest.importorskip("krippendorff")
    folder, items, S, rated = _sample_panel()
    assert S.shape == (43, 3) and len(rated) == 22 and all(len(r) == 2 for r in rated.values())
    p = panel({j: folder / f"{j}.jsonl" for j in SAMPLE_JUDGES}, folder / "human.csv", n_resamples=300, seed=0)
    for (a, b), row in zip(itertools.combinations(range(3), 2), p.agreement.itertuples(), strict=True):
        assert (row.judge_a, row.judge_b, row.n) == (SAMPLE_JUDGES[a], SAMPLE_JUDGES[b], 43)
        assert row.kappa_quadratic == pytest.approx(sklearn.cohen_kappa_score(
            S[:, a], S[:, b], weights="quadratic", labels=[1, 2, 3, 4, 5]), abs=1e-12)
        assert row.alpha_ordinal == pytest.approx(krippendorff.alpha(
            reliability_data=S[:, [a, b]].T, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]), abs=1e-9)
    # errors against the people's mean, on the rated items
    lab = np.array([t in rated for t in items])
    human = np.array([np.mean(list(rated[t].values())) for t in np.array(items)[lab]])
    E = S[lab] - human[:, None]
    err = p.errors.set_index("judge")
    for c, j in enumerate(SAMPLE_JUDGES):
        assert err.loc[j, "n"] == 22
        assert err.loc[j, "bias"] == pytest.approx(E[:, c].mean(), abs=1e-12)
        assert err.loc[j, "mae"] == pytest.approx(np.abs(E[:, c]).mean(), abs=1e-12)
        assert err.loc[j, "rmse"] == pytest.approx(np.sqrt((E[:, c] ** 2).mean()), abs=1e-12)
    R = np.corrcoef(E.T)
    for row in p.error_correlation.itertuples():
        a, b = SAMPLE_JUDGES.index(row.judge_a), SAMPLE_JUDGES.index(row.judge_b)
        assert row.r == pytest.approx(R[a, b], abs=1e-12)
    # effective committee size k / (1 + (k - 1) rho_bar); its percentile bootstrap over the rated
    # items redone here draw by draw (numpy seeded with [seed, 0] for the first dimension)
    eff = p.effective.iloc[0]
    assert eff["rho_bar"] == pytest.approx((R[0, 1] + R[0, 2] + R[1, 2]) / 3, abs=1e-12)
    assert eff["effective_size"] == pytest.approx(_effective_by_hand(E), abs=1e-12)
    assert 1 < eff["effective_size"] < 3  # correlated errors: fewer than three independent judges
    idx = np.random.default_rng([0, 0]).integers(0, 22, (300, 22))
    with np.errstate(invalid="ignore", divide="ignore"):
        sizes = np.array([_effective_by_hand(E[i]) for i in idx])
    lo, hi = np.quantile(sizes[~np.isnan(sizes)], [0.025, 0.975])
    assert (eff["ci_low"], eff["ci_high"]) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))


@pytest.mark.parametrize("method,lam", [("ppi++", None), ("ppi", 1.0)])
def test_panel_calibrated_means_on_the_bundled_sample_against_ppi_py(method, lam):
    ppi_py = pytest.importorskip("ppi_py")
    folder, items, S, rated = _sample_panel()
    p = panel({j: folder / f"{j}.jsonl" for j in SAMPLE_JUDGES}, folder / "human.csv", method=method, n_resamples=0)
    lab = np.array([t in rated for t in items])
    human = np.array([np.mean(list(rated[t].values())) for t in np.array(items)[lab]])
    majority = [min(set(r), key=lambda c: (-list(r).count(c), c)) for r in S]  # most frequent, ties to the lowest
    for name, v in {"mean": S.mean(axis=1), "median": np.median(S, axis=1), "majority": np.array(majority)}.items():
        row = p.aggregate[p.aggregate["aggregate"] == name].iloc[0]
        assert (row["n"], row["n_human"]) == (43, 22)
        assert row["panel_mean"] == pytest.approx(v.mean(), abs=1e-12)
        est = ppi_py.ppi_mean_pointestimate(human, v[lab], v[~lab], lam=lam)
        lo, hi = ppi_py.ppi_mean_ci(human, v[lab], v[~lab], alpha=0.05, lam=lam)
        assert row["calibrated"] == pytest.approx(float(np.ravel(est)[0]), abs=1e-9)
        assert row["ci_low"] == pytest.approx(float(np.ravel(lo)[0]), abs=1e-9)
        assert row["ci_high"] == pytest.approx(float(np.ravel(hi)[0]), abs=1e-9)
        assert row["calibrated"] < row["panel_mean"]  # lenient judges: the people pull the mean down


def test_fleiss_kappa_on_the_bundled_sample_against_statsmodels():
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    from reteco_measures.judge import agreement, fleiss_kappa

    folder, items, S, rated = _sample_panel()
    table, _ = inter_rater.aggregate_raters(S.astype(int), n_cat=None)
    counts = np.stack([(S == c).sum(axis=1) for c in range(1, 6)], axis=1)  # as the docs page builds it
    assert fleiss_kappa(counts) == pytest.approx(inter_rater.fleiss_kappa(table, method="fleiss"), abs=1e-12)
    # judge.agreement's fleiss_kappa: one judge and the two people over the 22 rated items
    lab = [i for i, t in enumerate(items) if t in rated]
    three = np.array([[S[i, 0], rated[items[i]]["r1"], rated[items[i]]["r2"]] for i in lab], int)
    table3, _ = inter_rater.aggregate_raters(three)
    row = agreement(folder / "m1-rubric.jsonl", folder / "human.csv", bootstrap=0).iloc[0]
    assert row["n"] == 22
    assert row["fleiss_kappa"] == pytest.approx(inter_rater.fleiss_kappa(table3, method="fleiss"), abs=1e-12)


def test_the_worked_example_of_the_panels_page_prints_what_the_page_shows(worked_example, capsys):
    import contextlib
    import io
    import re
    import shlex

    from reteco_measures.cli.main import main as cli_main

    page = worked_example("judge-panels.md")
    assert page["printed"] == page["text"][0]
    # the page's command: P from its python one-liner, then the command itself
    (bash,) = page["bash"]
    first, command = bash.split("\n", 1)
    code = re.fullmatch(r'P=\$\(python -c "(.*)"\)', first).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {})
    argv = shlex.split(command.replace("\\\n", " ").replace("$P", out.getvalue().strip()))
    assert argv[0] == "reteco-measures"
    capsys.readouterr()
    assert cli_main(argv[1:]) == 0
    printed = capsys.readouterr().out
    lines = page["text"][0].splitlines()  # the page prints the kappa matrix, then the error correlations
    assert "\n".join(lines[0:4]) in printed and "\n".join(lines[4:8]) in printed
