"""Generate the bundled synthetic RECOR-like sample (RETECO Track 2; deterministic, seed fixed).

Writes, under ``ROOT`` (default: the package's ``reteco_measures/sample/data``; laid out like ``$RETECO_DATA``)::

    reteco/track2_recor/<domain>/documents.jsonl        {doc_id, content}
    reteco/track2_recor/<domain>/benchmark_{train,dev}.json
                                                        [{id, turns: [{turn_id, query, answer,
                                                          gold_doc_ids, conversation_history}]}]
    reteco/track2_recor/<domain>/qrels_{train,dev}.txt  <conversation_id>_turn_<t> 0 doc_id 1
    runs/reteco_track2.txt             a dev run with all-domains ids <domain>/<conv>_turn_<t>
    runs/reteco_track2_plain_ids.txt   the same run with the release ids <conv>_turn_<t>
    runs/reteco_track2_panel/<judge>.jsonl  a judge panel's correctness scores (1-5) of a RAG
                                        system's answers to the dev turns: judgment rows
                                        {turn_id, dimension, score, model}, one file per judge
    runs/reteco_track2_panel/human.csv  two people's scores of the same answers on a subset of
                                        the turns (turn_id, dimension, rater, score)

Four domains: two "BRIGHT-like" ones (``biology``, ``earth_science``) whose numeric conversation
ids repeat between them, as in the real release, and two "StackExchange-like" ones (``law``,
``drones``) with ``ex_<n>`` ids and ``<domain>_<conversation>_doc_<n>`` document ids.
Conversations have 1-6 turns (so every depth group T1..T5+ occurs). The run has what the
``reteco`` contract must handle: repeated documents, documents that are not in the corpus,
documents of another domain and one missing turn. In the plain-id run the numeric ids are
ambiguous between the BRIGHT-like domains (the scorer reports and discards them). All texts are
made up from small word lists.

The judge panel (`build_panel`, its own seed, so the files above do not depend on it) rates each
dev turn's answer by a latent quality; the two people rate it with independent noise, the judges
with a leniency bias, an error every judge shares (all of them are swayed by the same answers),
an error the two prompts of the same model share, and their own noise. So the judges agree well
with each other, and their errors against the people correlate: more between the two prompts of
one model than across models. Run ``python tools/generate_reteco_recor.py [ROOT]`` from the repository root.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

from reteco_measures.sample.files import write_files

SEED = 20270202
#: the bundled sample the package ships (``reteco_measures/sample/data``)
DEFAULT_ROOT = Path(__file__).resolve().parents[1] / "reteco_measures" / "sample" / "data"
TRACK = Path("reteco") / "track2_recor"

DOMAINS = {
    "biology": {
        "style": "bright",
        "topics": ["smell_receptors", "plant_growth", "cell_division", "bird_migration"],
        "words": [
            "receptor",
            "neuron",
            "protein",
            "cell",
            "gene",
            "enzyme",
            "membrane",
            "signal",
            "tissue",
            "organism",
            "species",
            "molecule",
            "leaf",
            "root",
            "light",
            "energy",
        ],
    },
    "earth_science": {
        "style": "bright",
        "topics": ["cloud_formation", "river_erosion", "volcanic_ash", "ocean_currents"],
        "words": [
            "humidity",
            "pressure",
            "droplet",
            "sediment",
            "magma",
            "current",
            "salinity",
            "vapour",
            "temperature",
            "erosion",
            "basin",
            "plume",
            "wind",
            "layer",
            "crust",
            "rain",
        ],
    },
    "law": {
        "style": "stackexchange",
        "words": [
            "contract",
            "tenant",
            "landlord",
            "court",
            "statute",
            "liability",
            "copyright",
            "licence",
            "damages",
            "appeal",
            "notice",
            "clause",
            "jurisdiction",
            "evidence",
            "employer",
            "claim",
        ],
    },
    "drones": {
        "style": "stackexchange",
        "words": [
            "propeller",
            "battery",
            "motor",
            "controller",
            "firmware",
            "gimbal",
            "altitude",
            "gps",
            "frame",
            "camera",
            "signal",
            "receiver",
            "flight",
            "thrust",
            "payload",
            "sensor",
        ],
    },
}
#: conversations per domain and split (turn counts drawn from 1-6, at least one long one)
CONVERSATIONS = {"train": 2, "dev": 3}
NEGATIVES_PER_DOMAIN = 14
QUESTION_FORMS = [
    "How does the {a} affect the {b}?",
    "Why would a {a} change the {b} in this case?",
    "What is the role of the {a} when the {b} is involved?",
    "Can the {a} be used without the {b}?",
    "Is there a link between the {a} and the {b}?",
    "What happens to the {a} if the {b} fails?",
]


def _sentence(rng: random.Random, words: list[str], n: int) -> str:
    picked = [rng.choice(words) for _ in range(n)]
    return " ".join(picked).capitalize() + "."


def _passage(rng: random.Random, words: list[str]) -> str:
    return " ".join(_sentence(rng, words, rng.randint(6, 11)) for _ in range(rng.randint(2, 4)))


def _doc_ids(
    rng: random.Random, domain: str, spec: dict, conv_id: str, n: int, counter: list[int]
) -> list[str]:
    if spec["style"] == "stackexchange":
        return [f"{domain}_{conv_id}_doc_{i}" for i in range(n)]
    topic = rng.choice(spec["topics"])
    ids = []
    for _ in range(n):
        counter[0] += 1
        ids.append(f"{topic}/{rng.choice(spec['words']).capitalize()}_{counter[0]}.txt")
    return ids


def build(rng: random.Random) -> tuple[dict, dict]:
    """(files: relative path -> text, dev turns per domain for the run)."""
    files: dict[str, str] = {}
    dev_turns: dict[str, list[tuple[str, list[str], list[str]]]] = {}
    next_se_id = [3000]
    for domain, spec in DOMAINS.items():
        words = spec["words"]
        docs: list[tuple[str, str]] = []
        counter = [0]
        numeric_id = 0
        dev_turns[domain] = []
        for split in ("train", "dev"):
            conversations = []
            qrels_lines = []
            for c in range(CONVERSATIONS[split]):
                if spec["style"] == "bright":
                    numeric_id += 1
                    conv_id = str(numeric_id)  # 1, 2, ... in both BRIGHT-like domains: ids repeat
                else:
                    next_se_id[0] += rng.randint(7, 97)
                    conv_id = f"ex_{next_se_id[0]}"
                n_turns = 6 if (split == "dev" and c == 0) else rng.randint(1, 5)
                pool = _doc_ids(rng, domain, spec, conv_id, rng.randint(3, 5), counter)
                docs += [(d, _passage(rng, words)) for d in pool]
                history: list[str] = []
                turns = []
                for t in range(1, n_turns + 1):
                    a, b = rng.sample(words, 2)
                    query = rng.choice(QUESTION_FORMS).format(a=a, b=b)
                    answer = _sentence(rng, words, rng.randint(8, 14))
                    gold = sorted(rng.sample(pool, rng.randint(1, min(3, len(pool)))))
                    turns.append(
                        {
                            "turn_id": t,
                            "query": query,
                            "answer": answer,
                            "gold_doc_ids": gold,
                            "conversation_history": "\n\n".join(history)
                            if history
                            else "No previous conversation.",
                        }
                    )
                    history.append(f"Q: {query}\nA: {answer}")
                    qrels_lines += [f"{conv_id}_turn_{t} 0 {d} 1" for d in gold]
                    if split == "dev":
                        dev_turns[domain].append((f"{conv_id}_turn_{t}", gold, pool))
                conversations.append({"id": conv_id, "turns": turns})
            base = TRACK / domain
            files[str(base / f"benchmark_{split}.json")] = (
                json.dumps(conversations, indent=1, ensure_ascii=False) + "\n"
            )
            files[str(base / f"qrels_{split}.txt")] = "\n".join(qrels_lines) + "\n"
        for i in range(NEGATIVES_PER_DOMAIN):
            did = f"{domain}_neg_{i}" if spec["style"] == "stackexchange" else f"misc/{domain}_page_{i}.txt"
            docs.append((did, _passage(rng, words)))
        files[str(TRACK / domain / "documents.jsonl")] = "".join(
            json.dumps({"doc_id": d, "content": text}, ensure_ascii=False) + "\n" for d, text in docs
        )
    return files, dev_turns


def build_run(rng: random.Random, dev_turns: dict, corpus: dict[str, list[str]]) -> tuple[str, str]:
    """(run with all-domains ids, the same run with plain release ids)."""
    qualified_lines: list[str] = []
    plain_lines: list[str] = []
    domains = list(dev_turns)
    skipped = False
    for d_index, domain in enumerate(domains):
        other = corpus[domains[(d_index + 1) % len(domains)]]
        for t_index, (qid, gold, _pool) in enumerate(dev_turns[domain]):
            if domain == "law" and t_index == 1 and not skipped:
                skipped = True  # a missing turn: scores 0
                continue
            candidates = [d for d in corpus[domain] if d not in gold]
            # some gold docs found, at varied ranks; the rest are distractors
            found = [g for g in gold if rng.random() < 0.7]
            ranked = rng.sample(candidates, 10 - len(found))
            for g in found:
                ranked.insert(rng.randint(0, min(6, len(ranked))), g)
            if t_index % 3 == 0:
                ranked.insert(2, ranked[0])  # repeated document: removed after its first occurrence
            if t_index % 4 == 1:
                ranked.insert(5, f"{domain}_not_in_corpus_{t_index}")  # unknown: discarded
            if t_index % 5 == 2:
                ranked.insert(4, other[t_index % len(other)])  # another domain's document: discarded
            for rank, doc in enumerate(ranked, start=1):
                score = round(20.0 - rank * 0.75 - rng.random() * 0.2, 4)
                qualified_lines.append(f"{domain}/{qid} Q0 {doc} {rank} {score} sample_bm25")
                plain_lines.append(f"{qid} Q0 {doc} {rank} {score} sample_bm25")
    return "\n".join(qualified_lines) + "\n", "\n".join(plain_lines) + "\n"


#: the panel's seed: a draw whose error correlations, kappas and effective size lie near their
#: medians over the seeds 0-29 (the sample shows what is typical of its design, not a lucky draw)
PANEL_SEED = 17
#: the panel's judges: name -> (model, leniency bias in scale points, weight of the model's own error)
PANEL_JUDGES = {"m1-rubric": ("sample-model-1", 0.45, 1.0), "m1-stepwise": ("sample-model-1", 0.25, 1.0),
                "m2-rubric": ("sample-model-2", 0.35, 0.0)}
PANEL_RATERS = ("r1", "r2")
#: every how many dev turns (in domain and turn order) the people rated one
PANEL_HUMAN_EVERY = 2
#: standard deviations (scale points): the people's noise; the error all judges share, the one the
#: two prompts of sample-model-1 share, each judge's own noise
PANEL_SD = {"rater": 0.45, "shared": 0.35, "model": 0.45, "own": 0.5}
PANEL = Path("runs") / "reteco_track2_panel"


def _normal(rng: random.Random, sd: float) -> float:
    """A normal deviate from two uniforms (Box-Muller), so the draws depend only on `random.random`."""
    u, v = rng.random(), rng.random()
    return sd * math.sqrt(-2.0 * math.log(1.0 - u)) * math.cos(2.0 * math.pi * v)


def _on_scale(x: float) -> int:
    return min(5, max(1, math.floor(x + 0.5)))


def build_panel(dev_turns: dict) -> dict[str, str]:
    """The judge panel's files (module docs): relative path -> text."""
    rng = random.Random(PANEL_SEED)
    items = [f"{domain}/{qid}" for domain, turns in dev_turns.items() for qid, _, _ in turns]
    rows: dict[str, list[str]] = {j: [] for j in PANEL_JUDGES}
    human = ["turn_id,dimension,rater,score"]
    for i, item in enumerate(items):
        quality = 1.0 + 4.0 * rng.random()
        shared = _normal(rng, PANEL_SD["shared"])  # what every judge gets wrong about this answer
        model_1 = _normal(rng, PANEL_SD["model"])  # what sample-model-1 gets wrong about it (both its prompts)
        people = [_on_scale(quality + _normal(rng, PANEL_SD["rater"])) for _ in PANEL_RATERS]
        for judge, (model, bias, weight) in PANEL_JUDGES.items():
            score = _on_scale(quality + bias + shared + weight * model_1 + _normal(rng, PANEL_SD["own"]))
            rows[judge].append(json.dumps({"turn_id": item, "dimension": "correctness", "score": score,
                                           "model": model}))
        if i % PANEL_HUMAN_EVERY == 0:
            human += [f"{item},correctness,{rater},{s}" for rater, s in zip(PANEL_RATERS, people, strict=True)]
    files = {str(PANEL / f"{judge}.jsonl"): "\n".join(lines) + "\n" for judge, lines in rows.items()}
    files[str(PANEL / "human.csv")] = "\n".join(human) + "\n"
    return files


def main(root: str | Path | None = None) -> list[Path]:
    """Write the sample under ``root`` (default: the package's ``sample/data``); return the paths."""
    root = Path(root) if root is not None else DEFAULT_ROOT
    rng = random.Random(SEED)
    files, dev_turns = build(rng)
    corpus = {
        domain: [
            json.loads(line)["doc_id"] for line in files[str(TRACK / domain / "documents.jsonl")].splitlines()
        ]
        for domain in DOMAINS
    }
    qualified, plain = build_run(rng, dev_turns, corpus)
    files[str(Path("runs") / "reteco_track2.txt")] = qualified
    files[str(Path("runs") / "reteco_track2_plain_ids.txt")] = plain
    files.update(build_panel(dev_turns))
    return write_files(root, files)


if __name__ == "__main__":  # pragma: no cover
    for p in main(sys.argv[1] if len(sys.argv) > 1 else None):
        print(p)
