"""Codabench: the scoring program run exactly as Codabench lays out its folders, and the bundle.

Codabench runs ``<command> <input> <output>`` with the reference data in ``<input>/ref`` and the
unzipped submission in ``<input>/res``; it reads ``<output>/scores.json`` (one key per leaderboard
column of ``competition.yaml``) and shows stderr to the participant.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from reteco_measures.cli.main import main
from reteco_measures.platforms.codabench import build_bundle, find_submission, scores_txt
from reteco_measures.sample import ikat_sample_root, sample_root

SAMPLE = sample_root()
RUNS = SAMPLE / "runs"


def _score_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    main(["score", *argv, "--format", "json"])
    return json.loads(capsys.readouterr().out)


def _layout(tmp_path: Path, ref: Path, submission: Path, name: str = "my submission.out") -> tuple[Path, Path]:
    inp, out = tmp_path / "input", tmp_path / "output"
    (inp / "res").mkdir(parents=True)
    shutil.copytree(ref, inp / "ref")
    shutil.copy(submission, inp / "res" / name)
    return inp, out


@pytest.fixture(scope="module")
def bundle_1a(tmp_path_factory) -> Path:
    """A reteco-1a bundle on the bundled sample, unpacked."""
    root = tmp_path_factory.mktemp("bundle")
    zpath = build_bundle("reteco-1a", SAMPLE, root / "bundle.zip", "dev",
                         settings=["labels=runs/reteco_track1a_labels_dev.jsonl"], start="2027-01-10 00:00:00")
    with zipfile.ZipFile(zpath) as zf:
        zf.extractall(root / "unpacked")
    return root / "unpacked"


def test_bundle_layout_and_yaml(bundle_1a: Path):
    comp = yaml.safe_load((bundle_1a / "competition.yaml").read_text())
    assert comp["version"] == 2
    for key in ("title", "image", "terms"):  # required by Codabench's competition.yaml
        assert comp[key]
    assert (bundle_1a / comp["image"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for page in comp["pages"]:
        assert (bundle_1a / page["file"]).is_file()
    task = comp["tasks"][0]
    assert (bundle_1a / task["scoring_program"] / "metadata.yaml").is_file()
    meta = yaml.safe_load((bundle_1a / task["scoring_program"] / "metadata.yaml").read_text())
    assert meta["command"] == "python3 /app/program/score.py /app/input /app/output"
    assert (bundle_1a / task["reference_data"] / "reteco" / "track1_tempo").is_dir()
    assert comp["phases"][0]["tasks"] == [0] and comp["phases"][0]["start"] == "2027-01-10 00:00:00"
    assert "FROM python" in (bundle_1a / "docker" / "Dockerfile").read_text()
    assert "pip install" in (bundle_1a / "docker" / "Dockerfile").read_text()
    cols = comp["leaderboards"][0]["columns"]
    assert cols[0]["key"] == "ndcg_10" and [c["index"] for c in cols] == list(range(len(cols)))
    assert "scores.json" in (bundle_1a / "pages" / "evaluation.md").read_text()


def test_bundle_scoring_program_as_codabench_runs_it(bundle_1a: Path, tmp_path: Path, capsys):
    """score.py run the way Codabench runs it; scores.json equals `score --format json`, and every
    leaderboard key of competition.yaml is produced."""
    comp = yaml.safe_load((bundle_1a / "competition.yaml").read_text())
    inp, out = _layout(tmp_path, bundle_1a / "reference_data", RUNS / "reteco_track1a_dev.txt", "predictions")
    program = bundle_1a / "scoring_program" / "score.py"
    proc = subprocess.run([sys.executable, str(program), str(inp), str(out)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    scores = json.loads((out / "scores.json").read_text())
    expected = _score_json(capsys, ["reteco-1a", str(RUNS / "reteco_track1a_dev.txt"), "--data", str(SAMPLE),
                                    "--split", "dev", "--labels", str(RUNS / "reteco_track1a_labels_dev.jsonl")])
    assert {k: v for k, v in scores.items() if k != "valid"} == expected["metrics"]
    assert scores["valid"] == int(expected["valid"])
    keys = [c["key"] for c in comp["leaderboards"][0]["columns"]]
    assert sorted(keys) == sorted(scores) and len(keys) == len(set(keys))  # every column, nothing else
    assert (out / "scores.txt").read_text() == scores_txt(scores)
    html = (out / "detailed_results.html").read_text()
    assert f"{expected['metrics']['ndcg_10']:.4f}" in html and 'id="group-by_domain"' in html


@pytest.mark.parametrize("bench, run, extra", [
    ("chunqiu", "chunqiu.jsonl", []),
    ("spoken", "spoken.jsonl", []),
    ("reteco-2a", "reteco_track2.txt", ["--split", "dev"]),
])
def test_scores_equal_score_json(bench, run, extra, tmp_path: Path, capsys):
    inp, out = _layout(tmp_path, SAMPLE, RUNS / run)
    split = extra[1:] if extra else []
    code = main(["codabench", "score", str(inp), str(out), "--benchmark", bench, *(["--split", *split] if split else [])])
    assert code == 0
    scores = json.loads((out / "scores.json").read_text())
    expected = _score_json(capsys, [bench, str(RUNS / run), "--data", str(SAMPLE), *extra])
    assert {k: v for k, v in scores.items() if k != "valid"} == expected["metrics"]


def test_ikat_zipped_submission(tmp_path: Path, capsys):
    root = ikat_sample_root()
    run = next((root / "runs").glob("*.json"))
    zpath = tmp_path / "sub.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.write(run, "team_run.json")
    inp, out = _layout(tmp_path, root, zpath, "upload.zip")
    capsys.readouterr()
    # the bundled iKAT-like run carries deliberate errors (a missing turn, an unknown PTKB id): the
    # organisers' validator rejects such a run, so Codabench must mark it failed and say why
    code = main(["codabench", "score", str(inp), str(out), "--benchmark", "ikat-2023"])
    err = capsys.readouterr().err
    assert code == 1 and "turn missing" in err and "team_run.json:" in err
    scores = json.loads((out / "scores.json").read_text())  # still written, for the organisers to inspect
    assert scores["valid"] == 0
    expected = _score_json(capsys, ["ikat-2023", str(run), "--data", str(root)])
    assert {k: v for k, v in scores.items() if k != "valid"} == expected["metrics"]
    assert scores["passage_nist_ndcg_3"] == expected["metrics"]["passage_nist_ndcg_3"]


def test_invalid_chunqiu_batch_scores_zero_with_lines(tmp_path: Path, capsys):
    lines = (RUNS / "chunqiu.jsonl").read_text().splitlines()
    lines[2] = lines[1]  # a query answered twice: the batch is invalid (task rules: 0 overall)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    inp, out = _layout(tmp_path, SAMPLE, bad)
    capsys.readouterr()
    code = main(["codabench", "score", str(inp), str(out), "--benchmark", "chunqiu"])
    err = capsys.readouterr().err
    assert code == 0  # scored: 0 is the official result of an invalid batch
    scores = json.loads((out / "scores.json").read_text())
    assert scores["ndcg_10"] == 0.0 and scores["reward"] == 0.0 and scores["valid"] == 0
    assert ":3:" in err and "Traceback" not in err  # the repeated query is named by its line


@pytest.mark.parametrize("files, message", [
    ({}, "empty"),
    ({"a.txt": "q Q0 d 1 1 r\n", "b.txt": "q Q0 d 1 1 r\n"}, "2 files"),
])
def test_unusable_submission_folder(files, message, tmp_path: Path, capsys):
    inp, out = tmp_path / "input", tmp_path / "output"
    (inp / "res").mkdir(parents=True)
    (inp / "ref").symlink_to(SAMPLE)
    for name, text in files.items():
        (inp / "res" / name).write_text(text)
    (inp / "res" / "metadata").write_text("ignored\n")
    capsys.readouterr()
    code = main(["codabench", "score", str(inp), str(out), "--benchmark", "chunqiu"])
    err = capsys.readouterr().err
    assert code == 1 and message in err and "Traceback" not in err
    assert not (out / "scores.json").exists()
    assert (out / "detailed_results.html").is_file()


def test_missing_reference_data_is_setup_error(tmp_path: Path, capsys):
    (tmp_path / "input" / "res").mkdir(parents=True)
    capsys.readouterr()
    code = main(["codabench", "score", str(tmp_path / "input"), str(tmp_path / "out"), "--benchmark", "chunqiu"])
    assert code == 2 and "reference data" in capsys.readouterr().err


def test_unsafe_zip_refused(tmp_path: Path):
    res = tmp_path / "res"
    res.mkdir()
    with zipfile.ZipFile(res / "evil.zip", "w") as zf:
        zf.writestr("../../escape.txt", "q Q0 d 1 1 r\n")
    with pytest.raises(ValueError, match="unsafe path"):
        find_submission(res, tmp_path / "scratch")
    assert not (tmp_path.parent / "escape.txt").exists()


def test_unknown_setting_is_usage_error(tmp_path: Path, capsys):
    inp, out = _layout(tmp_path, SAMPLE, RUNS / "chunqiu.jsonl")
    capsys.readouterr()
    code = main(["codabench", "score", str(inp), str(out), "--benchmark", "chunqiu", "--set", "nope=1"])
    assert code == 2 and "no option 'nope'" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------
# what the bundle ships: the wheel of this source, an image that installs offline, Markdown pages


def test_bundle_carries_the_wheel_of_this_source(bundle_1a: Path):
    import re

    import reteco_measures

    wheels = sorted((bundle_1a / "docker" / "wheels").glob("reteco_measures-*.whl"))
    assert len(wheels) == 1
    src = Path(reteco_measures.__file__).parent
    with zipfile.ZipFile(wheels[0]) as zf:
        names = set(zf.namelist())
        for rel in ("platforms/submission.py", "platforms/codabench.py", "cli/main.py", "__init__.py"):
            assert zf.read(f"reteco_measures/{rel}") == (src / rel).read_bytes(), rel  # built from this tree
        assert "reteco_measures/sample/data/runs/chunqiu.jsonl" in names
    docker = (bundle_1a / "docker" / "Dockerfile").read_text()
    m = re.search(r"^FROM python:(\d+)\.(\d+)\.(\d+)-slim-bookworm$", docker, re.M)
    assert m and (int(m.group(1)), int(m.group(2))) >= (3, 10)  # pinned, and not Codabench's 3.7 default
    assert f"/tmp/wheels/{wheels[0].name}" in docker and "reteco-measures==" not in docker
    comp = yaml.safe_load((bundle_1a / "competition.yaml").read_text())
    assert comp["version"] == 2 and comp["docker_image"].rsplit(":", 1)[1] not in ("", "latest")


def test_pages_are_markdown_without_rst(bundle_1a: Path):
    import re

    import markdown

    for page in sorted((bundle_1a / "pages").glob("*.md")):
        text = page.read_text()
        assert "``" not in text.replace("```", ""), page.name
        assert not re.search(r":(func|mod|class|meth|data|attr):`", text), page.name
        assert not re.search(r"::\s*$", text, re.M), page.name
        assert not re.search(r"^=+( +=+)+$", text, re.M), page.name
        html = markdown.markdown(text, extensions=["tables", "fenced_code"])
        assert "``" not in html and ":func:" not in html
    html = markdown.markdown((bundle_1a / "pages" / "evaluation.md").read_text(), extensions=["tables", "fenced_code"])
    assert "<code>reteco</code>" in html and "<table>" in html and "<pre><code>import reteco_measures" in html


def test_rst_to_markdown_by_hand():
    from reteco_measures.platforms.codabench import rst_to_markdown

    rst = ("Title\n=====\n\nUse ``x`` and :func:`~a.b.fn` or :class:`Name <a.b.Name>`.\n\nPython::\n\n"
           "    import x\n    x.y()\n\n=====  =====\nid     what\n=====  =====\n``a``  one\nb      two\n=====  =====\n")
    assert rst_to_markdown(rst) == ("## Title\n\nUse `x` and `fn` or `Name`.\n\nPython:\n\n```\nimport x\nx.y()\n```\n\n"
                                    "| id | what |\n|---|---|\n| `a` | one |\n| b | two |")


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """The dependencies' wheels, fetched once per session with ``pip download`` (from pip's cache or
    the configured index); skipped when pip cannot get them."""
    import os

    from reteco_measures.platforms.codabench import build_wheel

    root = tmp_path_factory.mktemp("wheelhouse")
    ours = build_wheel(root / "ours")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", str(ours), "-d", str(root / "deps"), "-q"],
                          capture_output=True, text=True, timeout=900, env={**os.environ})
    if proc.returncode != 0:
        pytest.skip(f"pip download of the dependencies failed (no index or cache): {proc.stderr[-300:]}")
    return root / "deps"


def _offline_env(tmp: Path) -> dict:
    """An environment where pip sees no configured index, link folder or constraint."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1", HOME=str(tmp), PIP_NO_CACHE_DIR="1")
    return env


def _test_site_packages() -> list[str]:
    """The site-packages folders this test's interpreter imports from (in its order)."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


def _expose_site_packages(py: str) -> None:
    """Append this test's site-packages to the fresh venv ``py`` with a ``.pth`` file: its
    dependencies then import from the environment that runs the tests, whatever the base
    interpreter holds. The venv's own site-packages stays first, so a package installed there
    (the bundle's reteco-measures) wins; the lines are plain paths, so the ``.pth`` files of the
    exposed folders (an editable install's finder) are not run."""
    own = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True,
                         text=True, check=True, timeout=60, env={"PATH": "/usr/bin:/bin"}).stdout.strip()
    Path(own, "zz_test_environment.pth").write_text("\n".join(_test_site_packages()) + "\n", encoding="utf-8")


def test_fresh_venv_sees_only_the_test_environment(tmp_path: Path):
    """The bundle test's venv imports the test environment's dependencies (here ir_measures) and
    nothing of the base interpreter's site-packages; a venv made with --system-site-packages
    would see the base interpreter's instead."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    _expose_site_packages(py)
    env = _offline_env(tmp_path)
    out = subprocess.run([py, "-c", "import sys, ir_measures; print(ir_measures.__file__); print(sys.path)"],
                         capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    import ir_measures

    assert Path(out.stdout.splitlines()[0]).resolve() == Path(ir_measures.__file__).resolve()
    base = subprocess.run([sys._base_executable if hasattr(sys, "_base_executable") else sys.executable, "-c",
                           "import site; print('\\n'.join(site.getsitepackages()))"],
                          capture_output=True, text=True, timeout=60, env=env).stdout.split()
    ours = set(_test_site_packages())
    for p in base:
        if p not in ours:  # the base interpreter's folders are not on the venv's path
            assert p not in out.stdout.splitlines()[1], p


def test_test_extra_carries_the_build_backend():
    """`pip wheel --no-build-isolation` (the wheel-building tests, `codabench bundle`) builds with
    the environment's own setuptools: the test extra must require what [build-system] requires."""
    import tomllib

    meta = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    test = {r.split(">")[0].split("=")[0].strip(): r for r in meta["project"]["optional-dependencies"]["test"]}
    for req in meta["build-system"]["requires"]:
        name = req.split(">")[0].split("=")[0].strip()
        assert name in test, f"the test extra lacks {req}"
        assert test[name].replace(" ", "") == req.replace(" ", ""), (test[name], req)


@pytest.mark.slow
def test_bundle_image_installs_from_the_bundle_alone(wheelhouse: Path, tmp_path: Path, capsys):
    """The Dockerfile's install step, run in a fresh virtual environment with --no-index and the
    bundle's wheels as the only source: every dependency resolves from the bundle. By default the
    resolution is checked with ``pip install --dry-run`` (seconds; the full install of pyarrow,
    pandas, scipy... takes about 2 minutes on a 2-core machine) and the wheel itself is then run
    on top of this environment's packages; RETECO_MEASURES_FULL_BUNDLE_TEST=1 installs everything
    and scores with nothing else on the path."""
    import os
    import re
    import shlex

    zpath = build_bundle("reteco-1a", SAMPLE, tmp_path / "b.zip", "dev", wheelhouse=wheelhouse,
                         settings=["labels=runs/reteco_track1a_labels_dev.jsonl"], start="2027-01-10 00:00:00")
    bundle = tmp_path / "bundle"
    with zipfile.ZipFile(zpath) as zf:
        zf.extractall(bundle)
    docker = (bundle / "docker" / "Dockerfile").read_text()
    run = next(line for line in docker.splitlines() if line.startswith("RUN pip install"))
    assert "--no-index" in run and "COPY wheels/ /tmp/wheels/" in docker
    install = shlex.split(run.removeprefix("RUN ").split("&&")[0].replace("/tmp/wheels", str(bundle / "docker" / "wheels")))
    full = os.environ.get("RETECO_MEASURES_FULL_BUNDLE_TEST", "") not in ("", "0")
    env = _offline_env(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    if not full:  # the dependencies from this test's environment (never the base interpreter's)
        _expose_site_packages(py)
    args = [a for a in install[2:] if a != "--no-cache-dir"]
    proc = subprocess.run([py, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--report", "-", "-q",
                           *args], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    got = {item["metadata"]["name"].lower().replace("_", "-") for item in report["install"]}
    assert {"reteco-measures", "ir-measures", "pytrec-eval-terrier", "pandas", "pyarrow", "numpy"} <= got
    for item in report["install"]:  # every file from the bundle
        assert item["download_info"]["url"].startswith((bundle / "docker" / "wheels").as_uri()), item["download_info"]
    if full:
        proc = subprocess.run([py, "-m", "pip", "install", "-q", *args], capture_output=True, text=True,
                              timeout=1800, env=env)
    else:
        proc = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", *args],
                              capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    inp, out = _layout(tmp_path, bundle / "reference_data", RUNS / "reteco_track1a_dev.txt", "predictions")
    proc = subprocess.run([py, str(bundle / "scoring_program" / "score.py"), str(inp), str(out)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    where = subprocess.run([py, "-c", "import reteco_measures; print(reteco_measures.__file__)"], capture_output=True,
                           text=True, env=env, cwd=tmp_path).stdout
    assert re.search(r"venv/lib/python[\d.]+/site-packages/reteco_measures", where), where  # the bundle's copy
    expected = _score_json(capsys, ["reteco-1a", str(RUNS / "reteco_track1a_dev.txt"), "--data", str(SAMPLE),
                                    "--split", "dev", "--labels", str(RUNS / "reteco_track1a_labels_dev.jsonl")])
    scores = json.loads((out / "scores.json").read_text())
    assert {k: v for k, v in scores.items() if k != "valid"} == expected["metrics"]
