"""Every fenced Python example in ``docs/`` runs, in order per page, on the bundled sample.

Each page's ``python`` blocks run one after the other in one namespace (a later block may use
what an earlier one defined, as a reader does), in a scratch folder that holds the page's data
files copied from the bundled sample (`PAGE_FILES`, under the names the page uses), with
``RETECO_DATA`` set to the bundled sample (the iKAT pages: the generated iKAT sample). A block
that cannot run here says so where the reader sees it: its first line is ``# not run: <reason>``
(it needs a cluster, a server, a package we do not install). A wrong example - a name it never
defines, a keyword that does not exist, a file it does not make - fails this test.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import shutil
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
SAMPLE = REPO / "reteco_measures" / "sample" / "data"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_NOT_RUN = re.compile(r"#\s*not run:\s*(\S.*)")

#: page -> {file name the page uses: the sample's file (relative to the page's data root)}
TEMPO = "reteco/track1_tempo/bitcoin"
PAGE_FILES: dict[str, dict[str, str]] = {
    "getting-started.md": {"qrels_dev.txt": f"{TEMPO}/qrels_dev.txt", "my_run.txt": "runs/reteco_track1a_dev.txt",
                           "steps_dev.jsonl": f"{TEMPO}/steps_dev.jsonl",
                           "labels.jsonl": "runs/reteco_track1a_labels_dev.jsonl",
                           "documents.jsonl": f"{TEMPO}/documents.jsonl"},
    "benchmarks/reteco-track1.md": {"run.txt": "runs/reteco_track1a_dev.txt",
                                    "step_run.txt": "runs/reteco_track1b_dev.txt",
                                    "qrels_dev.txt": f"{TEMPO}/qrels_dev.txt",
                                    "steps_dev.jsonl": f"{TEMPO}/steps_dev.jsonl",
                                    "judge_labels.jsonl": "runs/reteco_track1a_labels_dev.jsonl"},
    "datasets.md": {"examples_dev.jsonl": f"{TEMPO}/examples_dev.jsonl", "steps_dev.jsonl": f"{TEMPO}/steps_dev.jsonl",
                    "documents.jsonl": f"{TEMPO}/documents.jsonl", "qrels_dev.txt": f"{TEMPO}/qrels_dev.txt"},
    "benchmarks/reteco-track2.md": {"run.txt": "runs/reteco_track2.txt"},
    "benchmarks/chunqiu.md": {"results.jsonl": "runs/chunqiu.jsonl"},
    "benchmarks/ikat2023.md": {"run.json": "runs/ikat2023_run.json"},  # of the generated iKAT sample
    "benchmarks/spoken-query.md": {"results.jsonl": "runs/spoken.jsonl"},
    "leaderboard.md": {"run.txt": "runs/reteco_track1a_dev.txt", "a.txt": "runs/reteco_track1a_dev.txt",
                       "b.txt": "runs/reteco_track1a_dev.txt", "c.txt": "runs/reteco_track1a_dev.txt"},
    "statistics.md": {"qrels.txt": f"{TEMPO}/qrels_dev.txt", "steps_dev.jsonl": f"{TEMPO}/steps_dev.jsonl",
                      "bm25.txt": "runs/reteco_track1a_dev.txt", "dense.txt": "runs/reteco_track1a_dev.txt",
                      "hybrid.txt": "runs/reteco_track1a_dev.txt", "a.txt": "runs/reteco_track2.txt",
                      "b.txt": "runs/reteco_track2_plain_ids.txt",
                      "track2_recor/qrels.txt": "reteco/track2_recor/law/qrels_dev.txt"},
    "scale.md": {"qrels.txt": f"{TEMPO}/qrels_dev.txt", "run.txt": "runs/reteco_track1a_dev.txt",
                 "run.txt.gz": "runs/reteco_track1a_dev.txt", "topics.jsonl": "reteco/tempo/bitcoin/dev",
                 "a.txt": "runs/reteco_track1a_dev.txt", "b.txt": "runs/reteco_track1a_dev.txt"},
    "pyterrier.md": {"qrels.txt": f"{TEMPO}/qrels_dev.txt", "run.txt": "runs/reteco_track1a_dev.txt",
                     "dense.txt": "runs/reteco_track1a_dev.txt", "labels.jsonl": "runs/reteco_track1a_labels_dev.jsonl"},
    "judging.md": {"run.txt": "runs/reteco_track2.txt"},
    "gate.md": {"baseline.txt": "runs/reteco_track2.txt", "candidate.txt": "runs/reteco_track2.txt"},
    "platforms.md": {"results.jsonl": "runs/spoken.jsonl"},
    "performance.md": {"qrels.txt": f"{TEMPO}/qrels_dev.txt", "run.txt": "runs/reteco_track1a_dev.txt"},
}


def judge_files(folder: Path) -> None:
    """The files the judging pages name, made from the bundled RECOR dev turns (all-domains ids,
    as the sample run names them): ``qrels.txt``; judge scores ``judgments.jsonl``,
    ``bm25.jsonl``, ``dense.jsonl`` (``turn_id, dimension, score`` on 1-5, three dimensions);
    a human rating sheet ``sheet.csv`` (two raters, 15 turns, correctness)."""
    import json
    import random

    qrels, turns = [], []
    for path in sorted((SAMPLE / "reteco" / "track2_recor").glob("*/qrels_dev.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            q, it, d, r = line.split()
            qid = f"{path.parent.name}/{q}"
            qrels.append(f"{qid} {it} {d} {r}\n")
            if qid not in turns:
                turns.append(qid)
    (folder / "qrels.txt").write_text("".join(qrels))
    rng = random.Random(5)
    for name in ("judgments.jsonl", "bm25.jsonl", "dense.jsonl"):
        rows = [{"turn_id": t, "dimension": dim, "score": rng.randint(1, 5)}
                for t in turns for dim in ("correctness", "faithfulness", "coherence")]
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    sheet = ["turn_id,dimension,rater,score"] + [f"{t},correctness,{rater},{rng.randint(1, 5)}"
                                                  for t in turns[:15] for rater in ("ann", "bob")]
    (folder / "sheet.csv").write_text("\n".join(sheet) + "\n")
    # the panel page's judges and raters: the three judge files and the sheet under its names
    for judge, name in (("gpt", "judgments.jsonl"), ("llama", "bm25.jsonl"), ("qwen", "dense.jsonl")):
        shutil.copy(folder / name, folder / f"{judge}.jsonl")
    shutil.copy(folder / "sheet.csv", folder / "human.csv")


#: pages whose scratch folder also gets `judge_files`
JUDGE_PAGES = {"judge-audit.md", "judging.md", "judge-panels.md"}


def _pages() -> list[str]:
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if _BLOCK.search(p.read_text("utf-8")))


def blocks(page: str) -> list[tuple[int, str, str | None]]:
    """``(line, code, reason)`` of each python block of ``page``: ``reason`` is its visible
    ``# not run: ...`` first line, or None for a block that runs."""
    text = (DOCS / page).read_text(encoding="utf-8")
    out = []
    for m in _BLOCK.finditer(text):
        code = m.group(1)
        first = code.lstrip().splitlines()[0] if code.strip() else ""
        reason = _NOT_RUN.match(first)
        out.append((text.count("\n", 0, m.start()) + 2, code, reason.group(1).strip() if reason else None))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages())
def test_every_python_example_runs(page: str, tmp_path: Path, monkeypatch) -> None:
    from reteco_measures.sample import ikat_sample_root

    data = ikat_sample_root() if page == "benchmarks/ikat2023.md" else SAMPLE
    import reteco_measures as rm

    monkeypatch.setenv("RETECO_DATA", str(data))
    for name, rel in PAGE_FILES.get(page, {}).items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.startswith("reteco/tempo/"):  # a registered topics table, written as JSONL
            rm.topics(rel).to_json(target, orient="records", lines=True)
        elif name.endswith(".gz"):
            target.write_bytes(gzip.compress((data / rel).read_bytes()))
        else:
            shutil.copy(data / rel, target)
    if page in JUDGE_PAGES:
        judge_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__docs__"}
    for line, code, reason in blocks(page):
        if reason is not None:
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(code, f"docs/{page}:{line}", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001  (the page and line of the block, then the error)
            pytest.fail(f"docs/{page}, the python block at line {line}: {type(exc).__name__}: {exc}")


def test_not_run_blocks_say_why() -> None:
    """A block marked not runnable gives its reason in words (visible in the rendered page)."""
    for page in _pages():
        for line, _, reason in blocks(page):
            assert reason is None or len(reason) >= 10, f"docs/{page}:{line}: '# not run:' needs a reason"


def test_the_ikat_page_names_where_the_sample_goes(tmp_path: Path, monkeypatch) -> None:
    """docs/benchmarks/ikat2023.md says where ikat_sample_root() writes: the per-user cache."""
    from reteco_measures.sample import ikat_sample_root

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert ikat_sample_root().parent == tmp_path / "cache" / "reteco-measures"
    text = (DOCS / "benchmarks" / "ikat2023.md").read_text(encoding="utf-8")
    assert "~/.cache/reteco-measures/" in text and "temp dir)" not in text
    assert os.path.isdir(ikat_sample_root())
