"""Generate the bundled synthetic Spoken-Query sample (deterministic, seed fixed).

Writes, under ``ROOT`` (default: the package's ``reteco_measures/sample/data``; laid out like ``$RETECO_DATA``,
in the layout defined by `reteco_measures.benchmarks.spoken.data`)::

    spoken/corpus/<collection>.jsonl     6 collections x 24 documents {id, domain, language, title, text}
    spoken/validation/requests.jsonl     6 collections x 4 conditions x 2-4 requests, with n-best
                                         hypotheses (word confidences and time spans) and a condition
    spoken/validation/qrels.jsonl        graded labels 0-3
    runs/spoken.jsonl                    a simulated system's results: one row per request except one
                                         missing request, one row with a document from another domain
                                         and one with a repeated document (both rows score 0)

Recognition noise grows from the ``clean`` to the ``far_field`` condition: words of the spoken
question are replaced by acoustically plausible confusions and their confidences drop, and the
simulated system finds the relevant documents less often. Everything is made up by this script.
Run ``python tools/generate_spoken.py [ROOT]`` from the repository root.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 20270303
#: the bundled sample the package ships (``reteco_measures/sample/data``)
DEFAULT_ROOT = Path(__file__).resolve().parents[1] / "reteco_measures" / "sample" / "data"

CONDITIONS = {"clean": 0.03, "accented": 0.15, "noisy": 0.25, "far_field": 0.35}  # word error rate
DOCS_PER_COLLECTION = 24
REQUESTS_PER_CELL = (2, 3, 4)  # unequal cells: the macro average differs from the plain mean

COLLECTIONS = {
    "cooking": ("en", ["bread", "dough", "oven", "yeast", "flour", "butter", "sauce", "garlic", "onion", "simmer",
                       "roast", "pastry", "spice", "broth", "knead", "bake", "grill", "pepper", "lemon", "rice"]),
    "health": ("en", ["fever", "dose", "vaccine", "allergy", "sleep", "blood", "pressure", "migraine", "diet",
                      "vitamin", "injury", "therapy", "symptom", "infection", "heart", "lung", "cough", "rash",
                      "clinic", "tablet"]),
    "law": ("en", ["contract", "tenant", "lease", "court", "appeal", "liability", "patent", "license", "deposit",
                   "witness", "verdict", "statute", "custody", "claim", "damages", "notice", "landlord", "fine",
                   "permit", "warranty"]),
    "travel": ("en", ["visa", "flight", "luggage", "ferry", "hostel", "border", "passport", "train", "ticket",
                      "museum", "harbor", "island", "hiking", "delay", "refund", "airport", "currency", "beach",
                      "customs", "route"]),
    "technology": ("en", ["router", "battery", "laptop", "update", "firmware", "password", "backup", "screen",
                          "printer", "driver", "network", "cable", "server", "browser", "keyboard", "storage",
                          "cloud", "sensor", "charger", "bluetooth"]),
    "finance": ("en", ["mortgage", "pension", "interest", "budget", "invoice", "tax", "loan", "savings",
                       "dividend", "insurance", "credit", "refund", "salary", "inflation", "bond", "broker",
                       "account", "fee", "deposit", "audit"]),
}
FILLER = ["how", "to", "the", "a", "for", "with", "when", "after", "and", "of", "my", "is", "can", "what"]
CONFUSIONS = {"a": "uh", "to": "two", "for": "four", "the": "a", "of": "off", "is": "his", "my": "might",
              "when": "win", "and": "an", "can": "can't", "what": "watt", "how": "who"}


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def _garble(rng: random.Random, word: str, vocab: list[str]) -> str:
    if word in CONFUSIONS:
        return CONFUSIONS[word]
    if rng.random() < 0.5:
        return rng.choice(vocab)  # a wrong in-domain word
    cut = max(2, len(word) - rng.randint(1, 3))
    return word[:cut]  # a truncated word


def build(rng: random.Random):
    """(corpus by collection, requests, qrels) of the synthetic benchmark."""
    corpus: dict[str, list[dict]] = {}
    requests: list[dict] = []
    qrels: list[dict] = []
    n_req = 0
    for coll, (lang, vocab) in COLLECTIONS.items():
        docs = []
        for i in range(1, DOCS_PER_COLLECTION + 1):
            topic = rng.sample(vocab, 3)
            words = topic * 2 + rng.sample(vocab, 6) + rng.sample(FILLER, 6)
            rng.shuffle(words)
            docs.append({"id": f"{coll}-{i:03d}", "domain": coll, "language": lang,
                         "title": f"{topic[0]} and {topic[1]}".capitalize(), "text": " ".join(words) + ".",
                         "_topic": topic})
        corpus[coll] = docs
        for cond, wer in CONDITIONS.items():
            for target in rng.sample(docs, rng.choice(REQUESTS_PER_CELL)):
                n_req += 1
                qid = f"sq-{n_req:04d}"
                spoken = ["what", "is", target["_topic"][0], "for", target["_topic"][1], "and", target["_topic"][2]]
                hyps = []
                for h in range(3):
                    t = 0.0
                    words = []
                    for w in spoken:
                        err = rng.random() < wer * (1 + 0.5 * h)
                        heard = _garble(rng, w, vocab) if err else w
                        conf = round(rng.uniform(0.3, 0.7) if err else rng.uniform(0.75, 0.99), 3)
                        dur = round(rng.uniform(0.18, 0.45), 2)
                        words.append({"word": heard, "confidence": conf, "start": round(t, 2),
                                      "end": round(t + dur, 2)})
                        t += dur + 0.05
                    hyps.append({"text": " ".join(w["word"] for w in words),
                                 "score": round(-2.0 * (h + 1) - 10 * wer + rng.uniform(-0.5, 0.5), 3),
                                 "words": words})
                hyps.sort(key=lambda x: -x["score"])
                requests.append({"query_id": qid, "domain": coll, "language": lang, "one_best": hyps[0]["text"],
                                 "hypotheses": hyps, "condition": cond})
                # graded labels: the target 3, documents sharing two topic words 2, one word 1, a few 0
                topic = set(target["_topic"])
                for d in docs:
                    overlap = len(topic & set(d["_topic"]))
                    grade = 3 if d is target else (2 if overlap >= 2 else (1 if overlap == 1 else None))
                    if grade is None and rng.random() < 0.1:
                        grade = 0
                    if grade is not None:
                        qrels.append({"query_id": qid, "doc_id": d["id"], "relevance": grade})
    return corpus, requests, qrels


def simulated_run(rng: random.Random, corpus: dict[str, list[dict]], requests: list[dict],
                  qrels: list[dict]) -> list[dict]:
    """A plausible system's results (≤ 10 per request, non-increasing scores, ties possible)."""
    grades: dict[str, dict[str, int]] = {}
    for q in qrels:
        grades.setdefault(q["query_id"], {})[q["doc_id"]] = q["relevance"]
    lines = []
    for req in requests:
        docs = corpus[req["domain"]]
        wer = CONDITIONS[req["condition"]]
        scored = []
        for d in docs:
            g = grades[req["query_id"]].get(d["id"], 0)
            found = rng.random() > wer * 2.5
            scored.append((round(g * (1.5 if found else 0.2) + rng.uniform(0, 3.0), 1), d["id"]))
        scored.sort(key=lambda x: -x[0])  # stable: equal scores keep corpus order
        lines.append({"query_id": req["query_id"],
                      "results": [{"doc_id": d, "score": s} for s, d in scored[:10]]})
    # the three rows that show row-level handling (see the module docstring)
    lines.pop(7)  # a missing request
    other = "law" if requests[3]["domain"] != "law" else "travel"
    lines[3]["results"][4]["doc_id"] = corpus[other][0]["id"]  # a document from another domain
    lines[11]["results"][5]["doc_id"] = lines[11]["results"][2]["doc_id"]  # a repeated document
    return lines


def generate(root: str | Path = DEFAULT_ROOT) -> list[Path]:
    """Write the sample under ``root``; returns the files written."""
    root = Path(root)
    rng = random.Random(SEED)
    corpus, requests, qrels = build(rng)
    run = simulated_run(rng, corpus, requests, qrels)
    written = []
    for coll, docs in corpus.items():
        path = root / "spoken" / "corpus" / f"{coll}.jsonl"
        _write_jsonl(path, [{k: v for k, v in d.items() if not k.startswith("_")} for d in docs])
        written.append(path)
    for name, rows in (("validation/requests.jsonl", requests), ("validation/qrels.jsonl", qrels)):
        _write_jsonl(root / "spoken" / name, rows)
        written.append(root / "spoken" / name)
    _write_jsonl(root / "runs" / "spoken.jsonl", run)
    written.append(root / "runs" / "spoken.jsonl")
    return written


if __name__ == "__main__":  # pragma: no cover
    for path in generate(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ROOT):
        print(path)
