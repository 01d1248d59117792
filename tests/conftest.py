"""Shared fixtures: the oracle data in ../shared/data (read in place, never copied).

The oracles (trec_eval's test files, small hand-checked cases, real iKAT 2023 files, the RETECO
organisers' public sample) live beside the repository, in ``../shared/data``. A fresh clone does
not have them: every test that reads them gets its path from a fixture below, which *skips* the
test with a reason naming the missing folder or file. With ``RETECO_MEASURES_REQUIRE_ORACLES=1``
(CI sets it) a missing oracle *fails* the test instead, so CI never passes by skipping.
``RETECO_MEASURES_ORACLE_DIR`` points the tests at another copy of the oracle folder.

Tests never build paths to ``../shared`` themselves: they ask for a fixture, or call
:func:`require_oracle` through the ``oracle`` fixture for a single file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
#: set to 1 (CI does) to turn "oracle missing" skips into failures
REQUIRE_ENV = "RETECO_MEASURES_REQUIRE_ORACLES"
#: another place for the oracle folder (default: ../shared/data beside the repository)
DIR_ENV = "RETECO_MEASURES_ORACLE_DIR"
SHARED_DATA = Path(os.environ.get(DIR_ENV) or REPO.parent / "shared" / "data")


def oracles_required() -> bool:
    """True when the environment asks for every oracle to be present (``RETECO_MEASURES_REQUIRE_ORACLES``
    set to anything but empty, ``0``, ``false``, ``no``)."""
    return os.environ.get(REQUIRE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def missing_oracle(what: str, path: Path) -> NoReturn:
    """Skip (or, when oracles are required, fail) the running test: ``what`` at ``path`` is absent."""
    message = (f"oracle data missing: {what} not found at {path} "
               f"(the oracles are read from ../shared/data beside the repository, or from ${DIR_ENV})")
    if oracles_required():
        pytest.fail(f"{message}; {REQUIRE_ENV} is set, so a missing oracle is a failure", pytrace=False)
    pytest.skip(message)


def require_oracle(*parts: str, what: str | None = None, base: Path | None = None) -> Path:
    """``base/parts...`` (``base`` defaults to ``../shared/data``) if it exists; otherwise skip or fail
    the test through :func:`missing_oracle`. The base folder is checked first, so the reason names
    the outermost missing piece."""
    root = SHARED_DATA if base is None else Path(base)
    if not root.is_dir():
        missing_oracle("the shared oracle folder", root)
    path = root.joinpath(*parts)
    if not path.exists():
        missing_oracle(what or "/".join(parts), path)
    return path


#: the on-disk caches of the package (parsed corpus ids); the tests never write the user's own
CACHE_ENV = "RETECO_MEASURES_CACHE"


@pytest.fixture(scope="session", autouse=True)
def private_package_cache(tmp_path_factory: pytest.TempPathFactory):
    """Point ``$RETECO_MEASURES_CACHE`` at a fresh folder for the whole session (also seen by CLI
    subprocesses), so no test writes into ``~/.cache/reteco-measures``."""
    old = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("reteco-measures-cache"))
    yield Path(os.environ[CACHE_ENV])
    if old is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = old


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real oracles (trec_eval tests, small cases, iKAT 2023, RETECO samples)."""
    return require_oracle()


@pytest.fixture(scope="session")
def oracle() -> Callable[..., Path]:
    """``oracle("ikat2023", "2023_sample_run.json")``: one oracle file or folder, or skip/fail."""
    return require_oracle


@pytest.fixture(scope="session")
def trec_eval_dir() -> Path:
    """trec_eval 10's own test files (``qrels.test``, ``results.test``, ``out.test.*``)."""
    return require_oracle("trec_eval_tests", what="trec_eval's test files")


@pytest.fixture(scope="session")
def ir_small_cases_dir() -> Path:
    """Small hand-checked nDCG cases (``cases.json``)."""
    return require_oracle("ir_small_cases", what="the small nDCG cases")


@pytest.fixture(scope="session")
def ikat2023_dir() -> Path:
    """Real TREC iKAT 2023 topics, passage and PTKB qrels, and the organisers' sample run."""
    return require_oracle("ikat2023", what="the real iKAT 2023 files")


@pytest.fixture(scope="session")
def tempo_sample_dir() -> Path:
    """The RETECO organisers' public TEMPO sample (``examples``/``steps``/``documents.jsonl``, ``qrels.txt``)."""
    return require_oracle("recor_tempo_samples", "reteco_sample", "track1_tempo",
                          what="the organisers' TEMPO sample")


@pytest.fixture(scope="session")
def recor_sample_dir() -> Path:
    """The RETECO organisers' public RECOR sample (``benchmark.jsonl``, ``documents.jsonl``, ``qrels.txt``)."""
    return require_oracle("recor_tempo_samples", "reteco_sample", "track2_recor",
                          what="the organisers' RECOR sample")


@pytest.fixture()
def ikat_root(tmp_path: Path, ikat2023_dir: Path, monkeypatch) -> Path:
    """A data root (``$RETECO_DATA`` set to it) whose ``ikat2023/`` is the real iKAT 2023 folder."""
    (tmp_path / "ikat2023").symlink_to(ikat2023_dir, target_is_directory=True)
    monkeypatch.setenv("RETECO_DATA", str(tmp_path))
    return tmp_path


@pytest.fixture()
def tempo_sample_release(tempo_sample_dir: Path, tmp_path: Path) -> Path:
    """The organisers' TEMPO sample laid out as a release under a fresh data root (returned): one
    ``reteco/track1_tempo/<domain>/`` folder per domain prefix of a query's first gold id, holding
    that query's ``examples_dev.jsonl`` line and ``qrels_dev.txt`` rows (its gold ids, grade 1) and
    the domain's documents."""
    def records(name: str) -> list[dict]:
        text = (tempo_sample_dir / name).read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def write(path: Path, rows: list[dict]) -> None:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")

    root = tmp_path / "tempo_release"
    docs = records("documents.jsonl")
    for ex in records("examples.jsonl"):
        dom = ex["gold_ids"][0].split("/")[0]
        folder = root / "reteco" / "track1_tempo" / dom
        folder.mkdir(parents=True, exist_ok=True)
        write(folder / "examples_dev.jsonl", [ex])
        write(folder / "documents.jsonl", [d for d in docs if d["id"].startswith(dom + "/")])
        (folder / "qrels_dev.txt").write_text("".join(f"{ex['id']} 0 {g} 1\n" for g in ex["gold_ids"]),
                                              encoding="utf-8")
    return root


@pytest.fixture
def worked_example(tmp_path: Path, monkeypatch) -> Callable[[str], dict]:
    """``worked_example("statistics.md")``: the page's "Worked example on the bundled sample"
    section, its Python block run in a scratch folder: ``{"printed", "text", "bash"}`` — what the
    code printed, the page's ``text`` blocks and its ``bash`` commands (as written)."""
    import contextlib
    import io
    import re

    def run(page: str) -> dict:
        text = (REPO / "docs" / page).read_text(encoding="utf-8")
        part = text.split("### Worked example on the bundled sample", 1)[1]
        code = re.search(r"```python\n(.*?)```", part, re.S).group(1)
        monkeypatch.chdir(tmp_path)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, page, "exec"), {})
        return {"printed": out.getvalue(), "text": re.findall(r"```text\n(.*?)```", part, re.S),
                "bash": re.findall(r"```bash\n(.*?)\n```", part, re.S)}

    return run
