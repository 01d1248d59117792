"""Generate the bundled synthetic TEMPO-like sample (RETECO Track 1; deterministic, seed fixed).

Writes, under ``ROOT`` (default: the package's ``reteco_measures/sample/data``; laid out like ``$RETECO_DATA``)::

    reteco/track1_tempo/<domain>/documents.jsonl          {id, content}
    reteco/track1_tempo/<domain>/examples_{train,dev}.jsonl  {id, query, gold_ids, gold_answers}
    reteco/track1_tempo/<domain>/steps_{train,dev}.jsonl  {id, query, steps: [{step_id, step,
                                                             step_instruction, gold_ids}]}
    reteco/track1_tempo/<domain>/guidance_{train,dev}.jsonl  {id, query_guidance: {key_time_anchors,
                                                             temporal_reasoning_class_primary,
                                                             retrieval_plan}, gold_passage_annotations}
    reteco/track1_tempo/<domain>/qrels_{train,dev}.txt    <query_id> 0 <doc_id> 1   (tab separated)
    reteco/track1_tempo/<domain>/qrels_steps_{train,dev}.txt  <query_id>_step<n> 0 <doc_id> 1
    runs/reteco_track1a_dev.txt          a 1a dev run (TREC)
    runs/reteco_track1b_dev.txt          a 1b dev run over the step topics (TREC)
    runs/reteco_track1a_labels_dev.jsonl frozen "judge" labels for the 1a run:
                                         {query_id, doc_id, temporal, periods}

Three domains (``bitcoin``, ``history``, ``law``) with 4, 5 and 6 dev queries and 3 train queries
each, 2-3 steps per query; document ids look like the release's (``bitcoin/1a2b3c4d_0042.txt``), query ids like
``<post id>_<running number>``, texts are HTML snippets made up from small word lists and
years. About half of the queries have guidance ``key_time_anchors`` (years) — their required
periods — the others fall back to their steps. The runs contain what the ``reteco`` contract must
handle: a repeated document, a document that is not in the corpus, a document of another
domain's corpus, tied scores, a missing query (1a) and a missing step (1b). The labels disagree
with the qrels on a few documents, as a real judge would.

Run ``python tools/generate_reteco_tempo.py [ROOT]`` from the repository root.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 20270101
#: the bundled sample the package ships (``reteco_measures/sample/data``)
DEFAULT_ROOT = Path(__file__).resolve().parents[1] / "reteco_measures" / "sample" / "data"
TRACK = Path("reteco") / "track1_tempo"
N_DOCS = 40
#: queries per split and domain (unequal dev sizes, so the (macro) and (all) rows differ)
SPLITS = {"dev": {"bitcoin": 4, "history": 5, "law": 6}, "train": {"bitcoin": 3, "history": 3, "law": 3}}

DOMAINS = {
    "bitcoin": {
        "subjects": ["block size", "transaction fees", "mining difficulty", "the mempool", "segwit adoption",
                     "the halving", "Lightning channels", "wallet backups"],
        "words": ["block", "miner", "node", "fee", "wallet", "chain", "soft fork", "hash rate", "UTXO set",
                  "relay policy", "signature", "script"],
        "years": list(range(2009, 2025)),
    },
    "history": {
        "subjects": ["the grain trade", "city walls", "the postal service", "guild rules", "river tolls",
                     "coinage reform", "harbour taxes", "the census"],
        "words": ["charter", "treaty", "council", "archive", "merchant", "province", "decree", "chronicle",
                  "estate", "parish", "governor", "ledger"],
        "years": list(range(1450, 1900, 7)),
    },
    "law": {
        "subjects": ["tenancy deposits", "data retention", "copyright terms", "speed limits", "parental leave",
                     "noise rules", "company filings", "jury service"],
        "words": ["statute", "court", "regulation", "amendment", "tenant", "appeal", "ruling", "contract",
                  "directive", "tribunal", "clause", "precedent"],
        "years": list(range(1970, 2025)),
    },
}
CLASSES = ["trends_changes_and_cross_period", "event_analysis_and_localization", "time_period_contextualization"]


def _sentence(rng: random.Random, spec: dict, subject: str, year: int) -> str:
    w = rng.sample(spec["words"], 3)
    forms = [
        f"In {year} the {w[0]} rules for {subject} changed, and the {w[1]} had to follow the new {w[2]}.",
        f"By {year}, {subject} depended on the {w[0]} &amp; the {w[1]}; older {w[2]} records say otherwise.",
        f"Before {year} nobody tracked {subject}; after it, every {w[0]} reported to a {w[1]}.",
        f"The {w[0]} of {year} is still quoted when people discuss {subject} and the {w[2]}.",
    ]
    return rng.choice(forms)


def _document(rng: random.Random, spec: dict, subject: str, years: list[int]) -> str:
    parts = [f"<p>{_sentence(rng, spec, subject, y)}</p>" for y in years]
    if rng.random() < 0.4:
        parts.append(f'<p>See <a href="https://example.org/{rng.randint(100, 999)}">this note</a>.</p>')
    return "\n".join(parts)


def _trec(rows: list[tuple[str, str, int, float]]) -> str:
    return "".join(f"{q} Q0 {d} {r} {s:.4f} synthetic\n" for q, d, r, s in rows)


def generate(root: Path = DEFAULT_ROOT) -> dict[str, int]:
    """Write the sample under ``root``; returns counts (documents, queries, steps, run rows)."""
    rng = random.Random(SEED)
    base = root / TRACK
    counts = {"documents": 0, "queries": 0, "steps": 0, "run_1a": 0, "run_1b": 0, "labels": 0}
    running = 100
    run_1a: list[tuple[str, str, int, float]] = []
    run_1b: list[tuple[str, str, int, float]] = []
    labels: list[dict] = []
    corpora: dict[str, list[str]] = {}
    all_dev: list[tuple[str, dict, dict, list]] = []
    for dom, spec in DOMAINS.items():
        folder = base / dom
        folder.mkdir(parents=True, exist_ok=True)
        # documents: each has a subject and two years
        docs = []
        for i in range(N_DOCS):
            subject = spec["subjects"][i % len(spec["subjects"])]
            years = sorted(rng.sample(spec["years"], 2))
            did = f"{dom}/{rng.getrandbits(32):08x}_{1000 + i:04d}.txt"
            docs.append({"id": did, "subject": subject, "years": years,
                         "content": _document(rng, spec, subject, years)})
        with open(folder / "documents.jsonl", "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps({"id": d["id"], "content": d["content"]}, ensure_ascii=False) + "\n")
        corpora[dom] = [d["id"] for d in docs]
        counts["documents"] += len(docs)
        pool = list(range(N_DOCS))
        rng.shuffle(pool)
        for split, sizes in SPLITS.items():
            n_queries = sizes[dom]
            examples, steps_records, guidance, qrels, step_qrels = [], [], [], [], []
            for _ in range(n_queries):
                running += rng.randint(1, 9)
                qid = f"{rng.randint(10000, 99999)}_{running}"
                subject = rng.choice(spec["subjects"])
                n_steps = rng.choice([2, 2, 3])
                steps = []
                gold: list[str] = []
                for s in range(1, n_steps + 1):
                    picks = [docs[pool.pop()]["id"] for _ in range(rng.choice([1, 1, 2]))]
                    gold += picks
                    steps.append({"step_id": f"{qid}_step{s}", "step": s,
                                  "step_instruction": f"Find what changed for {subject} in period {s} "
                                                      f"({rng.choice(spec['words'])} records).",
                                  "gold_ids": picks})
                if rng.random() < 0.5:  # an extra gold document that no step asks for
                    extra = docs[pool.pop()]["id"]
                    gold.append(extra)
                y1, y2 = sorted(rng.sample(spec["years"], 2))
                text = (f"How did {subject} change between {y1} and {y2}?\n<p>I read that the "
                        f"{rng.choice(spec['words'])} rules were different &quot;back then&quot;. "
                        f"What happened in between?</p>")
                examples.append({"id": qid, "query": text, "gold_ids": gold,
                                 "gold_answers": [f"<p>Between {y1} and {y2} the rules for {subject} changed.</p>"]})
                steps_records.append({"id": qid, "query": text, "steps": steps})
                anchors = [str(y1), str(y2)] if rng.random() < 0.5 else []
                guidance.append({"id": qid, "query_guidance": {
                    "key_time_anchors": anchors, "temporal_reasoning_class_primary": rng.choice(CLASSES),
                    "retrieval_plan": [{"step": s["step"], "action": s["step_instruction"]} for s in steps]},
                    "gold_passage_annotations": [{"doc_id": g, "confidence": 1.0} for g in gold]})
                qrels += [(qid, g) for g in gold]
                step_qrels += [(s["step_id"], g) for s in steps for g in s["gold_ids"]]
                counts["queries"] += 1
                counts["steps"] += len(steps)
                if split == "dev":
                    all_dev.append((dom, examples[-1], steps_records[-1], anchors))
            for name, records in (("examples", examples), ("steps", steps_records), ("guidance", guidance)):
                with open(folder / f"{name}_{split}.jsonl", "w", encoding="utf-8") as f:
                    f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            for name, pairs in (("qrels", qrels), ("qrels_steps", step_qrels)):
                with open(folder / f"{name}_{split}.txt", "w", encoding="utf-8") as f:
                    f.writelines(f"{q}\t0\t{d}\t1\n" for q, d in pairs)

    # runs and labels over the dev queries
    other = {dom: [d for o, ids in corpora.items() if o != dom for d in ids] for dom in corpora}
    for n, (dom, ex, st, anchors) in enumerate(all_dev):
        qid = ex["id"]
        if n == 4:
            continue  # a query missing from the 1a run (it scores 0)
        gold = list(ex["gold_ids"])
        found = [g for g in gold if rng.random() < 0.6]
        noise = rng.sample([d for d in corpora[dom] if d not in gold], 10 - len(found))
        ranking = found + noise
        rng.shuffle(ranking)
        scores = [round(20 - i * rng.choice([0.5, 1.0]), 1) for i in range(len(ranking))]
        if n % 3 == 0:
            scores[3] = scores[2]  # a tie: trec_eval breaks it by doc id
        rows = [(qid, d, i + 1, s) for i, (d, s) in enumerate(zip(ranking, scores, strict=True))]
        if n == 1:
            rows.insert(2, (qid, ranking[0], 3, scores[0] - 0.05))  # repeated document (later copy removed)
        if n == 2:
            rows.insert(1, (qid, f"{dom}/deadbeef_9999.txt", 2, scores[0] - 0.01))  # not in the corpus
        if n == 3:
            rows.insert(0, (qid, rng.choice(other[dom]), 1, scores[0] + 1))  # another domain's document
        run_1a += rows
        # frozen labels for the ranked documents (+ gold): judge mostly agrees with the qrels
        step_of = {g: s["step_id"] for s in st["steps"] for g in s["gold_ids"]}
        for d in dict.fromkeys([r[1] for r in rows] + gold):
            if d not in corpora[dom]:
                continue
            temporal = int(d in gold)
            if rng.random() < 0.12:
                temporal = 1 - temporal  # judge disagreement
            if anchors:
                periods = [a for a in anchors if temporal and rng.random() < 0.6]
            else:
                periods = [step_of[d]] if d in step_of and rng.random() < 0.85 else []
            labels.append({"query_id": qid, "doc_id": d, "temporal": temporal, "periods": periods})
    for n, (dom, _ex, st, _anchors) in enumerate(all_dev):
        for s in st["steps"]:
            if n == 0 and s["step"] == 2:
                continue  # a step missing from the 1b run
            found = [g for g in s["gold_ids"] if rng.random() < 0.7]
            noise = rng.sample([d for d in corpora[dom] if d not in s["gold_ids"]], 10 - len(found))
            ranking = found + noise
            rng.shuffle(ranking)
            rows = [(s["step_id"], d, i + 1, round(15 - i * 0.7, 2)) for i, d in enumerate(ranking)]
            if n == 1:
                rows.append((s["step_id"], ranking[0], 11, 0.5))  # repeated document
            run_1b += rows
    runs = root / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / "reteco_track1a_dev.txt").write_text(_trec(run_1a), encoding="utf-8")
    (runs / "reteco_track1b_dev.txt").write_text(_trec(run_1b), encoding="utf-8")
    with open(runs / "reteco_track1a_labels_dev.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in labels)
    counts.update(run_1a=len(run_1a), run_1b=len(run_1b), labels=len(labels))
    return counts


if __name__ == "__main__":  # pragma: no cover
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ROOT
    print(generate(target))
