"""ERR@k through gdeval for any query id; a cutoff that is not a positive integer is a clear message;
``python -m reteco_measures.cli.main`` has every sub-command.

Expected ERR values: the cascade formula of Chapelle et al. (CIKM 2009) as gdeval.pl writes it,
R = (2**g - 1) / 2**4, computed by hand below; and gdeval.pl itself run on the same data with
integer topic ids (the only ids it accepts).
"""

from __future__ import annotations

import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import reteco_measures as rm
from reteco_measures.cli.main import main

perl = pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval needs perl")

QRELS = "9-1_3 0 d1 2\n9-1_3 0 d2 1\nex_3025#turn1 0 d3 4\nex_3025#turn1 0 d1 1\n"
RUN = ("9-1_3 Q0 d1 1 2.0 r\n9-1_3 Q0 d2 2 1.0 r\n"
       "ex_3025#turn1 Q0 d1 1 3.0 r\nex_3025#turn1 Q0 d3 2 2.0 r\n")


def _err(grades: list[int]) -> float:  # by hand: sum_r 1/r * R_r * prod_{i<r} (1 - R_i)
    score, decay = 0.0, 1.0
    for r, g in enumerate(grades, start=1):
        stop = (2**g - 1) / 16
        score += decay * stop / r
        decay *= 1 - stop
    return score


@perl
def test_err_with_string_ids(tmp_path: Path, capsys):
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text(QRELS)
    r.write_text(RUN)
    per_query = {m.query_id: m.value for m in rm.iter_calc(["ERR@10"], str(q), str(r))}
    assert per_query == pytest.approx({"9-1_3": _err([2, 1]), "ex_3025#turn1": _err([1, 4])}, abs=5e-6)  # gdeval prints 5 decimals
    assert "amean" not in per_query
    code = main(["eval", str(q), str(r), "ERR@10"])
    assert code == 0 and f"{(_err([2, 1]) + _err([1, 4])) / 2:.4f}" in capsys.readouterr().out


@perl
def test_err_equals_gdeval_on_integer_ids(tmp_path: Path):
    """gdeval.pl run directly on the same data with the ids it accepts (1, 2) gives the same values."""
    script = tmp_path / "gdeval.pl"
    script.write_bytes(pkgutil.get_data("ir_measures", "bin/gdeval.pl"))
    numbered = {"9-1_3": "1", "ex_3025#turn1": "2"}
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text("".join(f"{numbered[t.split()[0]]} {' '.join(t.split()[1:])}\n" for t in QRELS.splitlines()))
    r.write_text("".join(f"{numbered[t.split()[0]]} {' '.join(t.split()[1:])}\n" for t in RUN.splitlines()))
    out = subprocess.run(["perl", str(script), str(q), str(r), "10"], capture_output=True, text=True, check=True)
    direct = {row.split(",")[1]: float(row.split(",")[3]) for row in out.stdout.splitlines()[1:]}
    q.write_text(QRELS)
    r.write_text(RUN)
    ours = {m.query_id: m.value for m in rm.iter_calc(["ERR@10"], str(q), str(r))}
    assert ours == {"9-1_3": direct["1"], "ex_3025#turn1": direct["2"]}


@perl
def test_err_grade_above_four_is_named(tmp_path: Path, capsys):
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text(QRELS + "9-1_3 0 d9 7\n")
    r.write_text(RUN)
    code = main(["eval", str(q), str(r), "ERR@10"])
    err = capsys.readouterr().err
    assert code == 2 and "internal error" not in err
    assert "grades up to 4" in err and "'d9'" in err and "9-1_3" in err


@pytest.mark.parametrize("text, shown", [("nDCG@-1", "'-1'"), ("P@x", "'x'"), ("nDCG@2.5", "'2.5'"),
                                         ("nDCG(dcg='exp-log2')@-3", "'-3'")])
def test_cutoff_not_a_positive_integer(text: str, shown: str, tmp_path: Path, capsys):
    with pytest.raises(ValueError, match="cutoff after '@' must be a positive integer"):
        rm.parse_measures(text)
    q, r = tmp_path / "q.txt", tmp_path / "r.txt"
    q.write_text(QRELS)
    r.write_text(RUN)
    code = main(["eval", str(q), str(r), text])
    err = capsys.readouterr().err
    assert code == 2 and "positive integer" in err and shown in err and text in err


def test_python_m_cli_main_has_every_command():
    env = {**os.environ, "PYTHONPATH": str(Path(rm.__file__).parent.parent)}
    out = subprocess.run([sys.executable, "-m", "reteco_measures.cli.main", "--help"], capture_output=True,
                         text=True, env=env, timeout=120).stdout
    script = subprocess.run([sys.executable, "-c", "import sys; from reteco_measures.cli.main import main; "
                             "sys.argv[0] = 'reteco-measures'; sys.exit(main(['--help']))"],
                            capture_output=True, text=True, env=env, timeout=120).stdout
    for name in ("judge", "leaderboard", "compare", "codabench", "eval", "score"):
        assert f"    {name}" in out, name
    assert out == script


def test_gdeval_replacement_is_opt_in() -> None:
    # a fresh interpreter: importing the package leaves ir_measures' gdeval provider in place;
    # rm.* calls use ours through gdeval.pipeline(); gdeval.install() is the explicit opt-in
    code = (
        "import ir_measures\n"
        "upstream = ir_measures.providers.registry['gdeval']\n"
        "import reteco_measures as rm\n"
        "from reteco_measures.providers import gdeval\n"
        "assert ir_measures.providers.registry['gdeval'] is upstream\n"
        "assert upstream in ir_measures.DefaultPipeline.providers\n"
        "assert gdeval.PROVIDER in gdeval.pipeline().providers and upstream not in gdeval.pipeline().providers\n"
        "gdeval.install(); gdeval.install()\n"
        "assert ir_measures.providers.registry['gdeval'] is gdeval.PROVIDER\n"
        "assert ir_measures.DefaultPipeline.providers.count(gdeval.PROVIDER) == 1\n"
        "assert upstream not in ir_measures.DefaultPipeline.providers\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.stdout.strip() == "ok", done.stderr
