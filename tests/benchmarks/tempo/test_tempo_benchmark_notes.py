"""Notes of ``score reteco-1a`` that keep a number from being believed wrongly: the organisers'
public TEMPO sample holds, per domain, only its topic's gold documents, so every full ranking
scores 1.0 (checked here with pytrec_eval); the score says so."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import pytrec_eval

import reteco_measures as rm
from reteco_measures.sample import sample_root


def _score(run: Path, data: Path, split: str | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rm.benchmark("reteco-1a").score(str(run), data=data, split=split)


def test_a_domain_corpus_that_is_all_relevant_is_named(tempo_sample_dir: Path, tmp_path: Path) -> None:
    docs = [json.loads(line) for line in (tempo_sample_dir / "documents.jsonl").read_text().splitlines() if line]
    doc_ids = [str(d.get("doc_id", d.get("id"))) for d in docs]
    qrels: dict[str, dict[str, int]] = {}
    for line in (tempo_sample_dir / "qrels.txt").read_text().splitlines():
        q, _, d, r = line.split()
        qrels.setdefault(q, {})[d] = int(r)
    rng = random.Random(3)
    run: dict[str, dict[str, float]] = {}
    for q, rels in qrels.items():
        domain = next(iter(rels)).split("/")[0]
        ranked = [d for d in doc_ids if d.startswith(domain + "/")]
        rng.shuffle(ranked)  # a random ranking of the domain's whole corpus
        run[q] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
    per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    assert all(v["ndcg_cut_10"] == 1.0 for v in per.values())  # what the note warns about
    path = tmp_path / "random.run"
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s} r\n" for q, docs_ in run.items()
                            for i, (d, s) in enumerate(docs_.items())))
    score = _score(path, tempo_sample_dir)
    notes = [n for n in score.notes if "any ranking" in n]
    assert len(notes) == 1 and f"{len(qrels)} of {len(qrels)}" in notes[0] and "use the full release" in notes[0]
    assert "bitcoin" in notes[0]


def test_the_bundled_sample_has_no_such_note() -> None:
    root = sample_root()
    score = _score(root / "runs" / "reteco_track1a_dev.txt", root, "dev")
    assert not [n for n in score.notes if "any ranking" in n]
