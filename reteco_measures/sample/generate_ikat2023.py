"""Generate the bundled synthetic TREC-iKAT-2023-like sample (deterministic, seed fixed).

The real iKAT topics and qrels are not bundled (tests read them in place); this made-up sample
has the same file names and formats so that ``reteco-measures score ikat-2023`` and the ``ikat``
contract run out of the box. It is not shipped either: `reteco_measures.sample.ikat_sample_root`
generates it on first use. Writes, under ``ROOT``::

    ikat2023/2023_test_topics.json      3 conversations, 4-7 turns, PTKB of 5-8 statements
    ikat2023/2023_train_topics.json     1 conversation
    ikat2023/2023-qrels.all-turns.txt   passage qrels (grades 0-4) for most, not all, test turns
    ikat2023/2023_ptkb_rel_org.txt      PTKB qrels = the topics' ptkb_provenance
    ikat2023/2023_ptkb_rel_nist.txt     PTKB qrels of a stricter (made-up) assessor, fewer turns
    runs/ikat2023_run.json              a run: 3 responses per turn, passages repeated across
                                        responses, one PTKB id that is not in the PTKB, one
                                        judged turn missing

Passage ids look like ClueWeb22 passage ids (``clueweb22-en0042-17-03311:4``) but are invented;
every text is made up from word lists. Run ``python -m reteco_measures.sample.generate_ikat2023 ROOT``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from .files import write_files

SEED = 20230701

THEMES = {
    "Choosing a bike": (
        ["commute", "gears", "frame", "budget", "rain", "hills", "battery", "lock"],
        [
            "I cycle 12 km to work.",
            "My budget is limited.",
            "I live in a hilly town.",
            "I have a bad knee.",
            "I store my bike outside.",
            "I like vintage design.",
            "I am 1.9 m tall.",
            "It rains a lot where I live.",
        ],
    ),
    "Planning a garden": (
        ["soil", "shade", "tomatoes", "compost", "water", "frost", "herbs", "pests"],
        [
            "My garden faces north.",
            "I have clay soil.",
            "I travel every summer.",
            "I am allergic to bees.",
            "I cook Italian food often.",
            "I have two cats.",
        ],
    ),
    "Learning a language": (
        ["grammar", "podcast", "tutor", "exam", "vocabulary", "accent", "app", "travel"],
        [
            "I move to Lisbon next year.",
            "I learn best by listening.",
            "I have 20 minutes a day.",
            "I already speak Spanish.",
            "I dislike flashcards.",
        ],
    ),
}
QUESTIONS = [
    "Which {a} should I pick?",
    "How does {a} affect {b}?",
    "Is {a} worth it for me?",
    "What about {a}?",
    "Can you compare {a} and {b}?",
    "What should I avoid regarding {a}?",
    "Any tips on {a} given {b}?",
]


def _pid(rng: random.Random) -> str:
    return f"clueweb22-en{rng.randrange(10000):04d}-{rng.randrange(100):02d}-{rng.randrange(100000):05d}:{rng.randrange(30)}"


def _conversations(rng: random.Random, numbers: list[str]) -> list[dict]:
    out = []
    for number, (title, (words, statements)) in zip(numbers, THEMES.items(), strict=False):
        ptkb = {str(i + 1): s for i, s in enumerate(statements)}
        turns = []
        for t in range(1, rng.randint(4, 7) + 1):
            a, b = rng.sample(words, 2)
            utterance = rng.choice(QUESTIONS).format(a=a, b=b)
            relevant = sorted(rng.sample(list(ptkb), rng.randint(0, 2)), key=int)
            resolved = utterance + (" (" + " ".join(ptkb[s] for s in relevant) + ")" if relevant else "")
            turns.append(
                {
                    "turn_id": t,
                    "utterance": utterance,
                    "resolved_utterance": resolved,
                    "response": f"For {a}, consider {b} first; " + " ".join(rng.sample(words, 4)) + ".",
                    "ptkb_provenance": [int(s) for s in relevant],
                    "response_provenance": [_pid(rng) for _ in range(rng.randint(1, 3))],
                }
            )
        out.append({"number": number, "title": title, "ptkb": ptkb, "turns": turns})
    return out


def build(rng: random.Random) -> dict[str, str]:
    """Relative path -> file text."""
    test = _conversations(rng, ["31-1", "32-1", "32-2"])
    train = _conversations(rng, ["1-1"])
    files = {
        "ikat2023/2023_test_topics.json": json.dumps(test, indent=2, ensure_ascii=False) + "\n",
        "ikat2023/2023_train_topics.json": json.dumps(train, indent=2, ensure_ascii=False) + "\n",
    }
    qrels, org, nist = [], [], []
    pools: dict[str, list[str]] = {}
    judged: list[str] = []
    for conv in test:
        for turn in conv["turns"]:
            qid = f"{conv['number']}_{turn['turn_id']}"
            pool = [_pid(rng) for _ in range(rng.randint(8, 20))]
            pools[qid] = pool
            if turn["turn_id"] != 1 or conv["number"] == "31-1":  # first turns of 32-* not assessed
                judged.append(qid)
                qrels += [f"{qid} 0 {p} {rng.choice([0, 0, 0, 1, 1, 2, 2, 3, 4])}" for p in pool]
            relevant = {str(s) for s in turn["ptkb_provenance"]}
            org += [f"{qid} 0 {s} {int(s in relevant)}" for s in conv["ptkb"]]
            if turn["turn_id"] % 2 == 0:  # the stricter assessor judged every other turn
                strict = set(sorted(relevant, key=int)[:1])
                nist += [f"{qid} 0 {s} {int(s in strict)}" for s in conv["ptkb"]]
    files["ikat2023/2023-qrels.all-turns.txt"] = "\n".join(qrels) + "\n"
    # the real PTKB qrels files end without a final newline; so do these
    files["ikat2023/2023_ptkb_rel_org.txt"] = "\n".join(org)
    files["ikat2023/2023_ptkb_rel_nist.txt"] = "\n".join(nist)

    turns_out = []
    for conv in test:
        for turn in conv["turns"]:
            qid = f"{conv['number']}_{turn['turn_id']}"
            if qid == judged[3]:
                continue  # a judged turn missing from the run: scores 0
            pool = pools[qid] + [_pid(rng) for _ in range(6)]
            rng.shuffle(pool)
            responses = []
            for rank in (1, 2, 3):
                start = (rank - 1) * 4  # overlapping windows: passages repeat across responses
                chosen = pool[start : start + 10]
                statements = rng.sample(list(conv["ptkb"]), 3)
                if qid == judged[1] and rank == 2:
                    statements[2] = "99"  # not in this conversation's PTKB: reported and skipped
                responses.append(
                    {
                        "rank": rank,
                        "text": f"Response {rank} to: {turn['utterance']}",
                        "passage_provenance": [
                            {
                                "id": p,
                                "text": "passage text",
                                "score": round(1.0 - i * 0.05, 4),
                                "used": i < 3,
                            }
                            for i, p in enumerate(chosen)
                        ],
                        "ptkb_provenance": [
                            {"id": s, "text": conv["ptkb"].get(s, "?"), "score": round(1.0 / (j + 1), 4)}
                            for j, s in enumerate(statements)
                        ],
                    }
                )
            turns_out.append({"turn_id": qid, "responses": responses})
    run = {"run_name": "sample_bm25_t5", "run_type": "automatic", "turns": turns_out}
    files["runs/ikat2023_run.json"] = json.dumps(run, indent=1, ensure_ascii=False) + "\n"
    return files


def main(root: str | Path) -> list[Path]:
    """Write the sample under ``root``; return the paths."""
    root = Path(root)
    files = build(random.Random(SEED))
    return write_files(root, files)


if __name__ == "__main__":  # pragma: no cover
    if len(sys.argv) != 2:
        sys.exit("usage: python -m reteco_measures.sample.generate_ikat2023 ROOT")
    for p in main(sys.argv[1]):
        print(p)
