"""A tiny TEMPO (RETECO Track 1) release tree written on disk, for the tests of the TEMPO loaders,
the Track 1 benchmarks and the leaderboards (shared helper, imported by name from tests/)."""

from __future__ import annotations

import json
from pathlib import Path

TRACK = Path("reteco") / "track1_tempo"


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def write_domain(root: Path, dom: str, queries: list[tuple[str, list[list[str]]]], docs: list[str],
                 anchors: dict[str, list[str]] | None = None, split: str = "dev") -> None:
    """queries: (query id, [gold ids of step 1, gold ids of step 2, ...])."""
    folder = root / TRACK / dom
    write_jsonl(folder / "documents.jsonl", [{"id": d, "content": f"<p>Text of {d} &amp; more</p>"} for d in docs])
    examples, steps, qrels, step_qrels, guidance = [], [], [], [], []
    for qid, step_gold in queries:
        gold = [d for g in step_gold for d in g]
        examples.append({"id": qid, "query": f"Title {qid}?\n<p>Body &quot;{qid}&quot;</p>", "gold_ids": gold,
                         "gold_answers": ["answer"]})
        steps.append({"id": qid, "query": f"Title {qid}?", "steps": [
            {"step_id": f"{qid}_step{i}", "step": i, "step_instruction": f"do step {i}", "gold_ids": g}
            for i, g in enumerate(step_gold, start=1)]})
        qrels += [f"{qid}\t0\t{d}\t1\n" for d in gold]
        step_qrels += [f"{qid}_step{i}\t0\t{d}\t1\n" for i, g in enumerate(step_gold, start=1) for d in g]
        guidance.append({"id": qid, "query_guidance": {"key_time_anchors": (anchors or {}).get(qid, []),
                                                       "temporal_reasoning_class_primary": "trends"}})
    write_jsonl(folder / f"examples_{split}.jsonl", examples)
    write_jsonl(folder / f"steps_{split}.jsonl", steps)
    write_jsonl(folder / f"guidance_{split}.jsonl", guidance)
    (folder / f"qrels_{split}.txt").write_text("".join(qrels), encoding="utf-8")
    (folder / f"qrels_steps_{split}.txt").write_text("".join(step_qrels), encoding="utf-8")


def write_two_domain_release(root: Path) -> Path:
    """The release the Track 1 tests share, under ``root``: bitcoin (100_1: gold a, b, c in steps
    {a}, {b, c}, anchored 2017-2021; 101_2: gold d; corpus a-e) and law (200_3: gold x, y in steps
    {x}, {y}; corpus x-z). Returns ``root``."""
    write_domain(root, "bitcoin", [("100_1", [["bitcoin/a.txt"], ["bitcoin/b.txt", "bitcoin/c.txt"]]),
                                   ("101_2", [["bitcoin/d.txt"]])],
                 ["bitcoin/a.txt", "bitcoin/b.txt", "bitcoin/c.txt", "bitcoin/d.txt", "bitcoin/e.txt"],
                 anchors={"100_1": ["2017", "2021"]})
    write_domain(root, "law", [("200_3", [["law/x.txt"], ["law/y.txt"]])], ["law/x.txt", "law/y.txt", "law/z.txt"])
    return root


def write_v11_release(root: Path, split: str = "dev") -> Path:
    """A release in the data v1.1 schema (each domain with its ``duplicate_map.json``) holding every
    case the starter kit's rules treat differently from the evaluation page:

    * bitcoin: 100_1 steps {a}, {b, gone} (``bitcoin/gone.txt`` is gold but not in the corpus);
      101_2 gold {d}; 102_3 gold {ghost} only (no gold in the corpus: the kit drops the topic);
      ``bitcoin/a2.txt`` was removed as a duplicate of ``bitcoin/a.txt``; corpus a-e.
    * law: 200_3 steps {x2}, {y}, where the qrels still name ``law/x2.txt``, removed as a duplicate
      of ``law/x.txt``; 201_4 gold {z} (missing from the test runs); corpus x-z.
    Returns ``root``."""
    write_domain(root, "bitcoin", [("100_1", [["bitcoin/a.txt"], ["bitcoin/b.txt", "bitcoin/gone.txt"]]),
                                   ("101_2", [["bitcoin/d.txt"]]), ("102_3", [["bitcoin/ghost.txt"]])],
                 ["bitcoin/a.txt", "bitcoin/b.txt", "bitcoin/c.txt", "bitcoin/d.txt", "bitcoin/e.txt"],
                 split=split)
    write_domain(root, "law", [("200_3", [["law/x2.txt"], ["law/y.txt"]]), ("201_4", [["law/z.txt"]])],
                 ["law/x.txt", "law/y.txt", "law/z.txt"], split=split)
    (root / TRACK / "bitcoin" / "duplicate_map.json").write_text(json.dumps({"bitcoin/a2.txt": "bitcoin/a.txt"}),
                                                                 encoding="utf-8")
    (root / TRACK / "law" / "duplicate_map.json").write_text(json.dumps({"law/x2.txt": "law/x.txt"}),
                                                             encoding="utf-8")
    return root
