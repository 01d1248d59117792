"""Generate the bundled synthetic ChunQiu sample (deterministic, seed fixed).

Writes, under ``ROOT`` (default: the package's ``reteco_measures/sample/data``; laid out like ``$RETECO_DATA``)::

    chunqiu/corpus.jsonl           {doc_id, text}
    chunqiu/examples.jsonl         {query_id, text, relevant_doc_ids}
    chunqiu/dated_examples.jsonl   {doc_id, time_text, reign, year, month}
    runs/chunqiu.jsonl             a valid results batch (ties in corpus order)
    runs/chunqiu_invalid.jsonl     the same batch with one violation of each kind

The records imitate the annals' style (reign year, season, month, event) and mix in later
commentary (``君子曰…``) with no date of its own, the distractor the benchmark is about. The
texts are made up; no real annal text is copied. Run ``python tools/generate_chunqiu.py [ROOT]`` from the repository root.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 20270101
#: the bundled sample the package ships (``reteco_measures/sample/data``)
DEFAULT_ROOT = Path(__file__).resolve().parents[1] / "reteco_measures" / "sample" / "data"

REIGNS = [("隱公", 11), ("桓公", 18), ("莊公", 32), ("閔公", 2), ("僖公", 33), ("文公", 18)]
STATES = ["齊", "晉", "宋", "衛", "鄭", "陳", "蔡", "楚", "秦", "曹", "許", "莒", "杞", "邾"]
PLACES = ["艾", "唐", "戚", "蔑", "郎", "棠", "防", "祝丘", "黃", "柯", "首止", "葵丘"]
SEASON_OF_MONTH = {1: "春", 2: "春", 3: "春", 4: "夏", 5: "夏", 6: "夏", 7: "秋", 8: "秋", 9: "秋",
                   10: "冬", 11: "冬", 12: "冬"}
NUMERALS = ["", "一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二"]
EVENTS = [
    "公會{s}侯于{p}",
    "{s}人伐{t}",
    "{s}侯使其弟來聘",
    "公及{s}人盟于{p}",
    "{s}伯卒",
    "城{p}",
    "大水",
    "日有食之",
    "{s}師入{t}",
    "公至自{p}",
    "螟",
    "{s}人來歸{p}之田",
]
COMMENTARY = [
    "君子曰：{s}侯之盟，非禮也",
    "傳曰：書{p}，譏之也",
    "君子謂{s}於是乎知禮",
    "或曰：{s}人之伐，以其不共也",
]


def _year_text(year: int) -> str:
    if year == 1:
        return "元"
    tens, ones = divmod(year, 10)
    if tens == 0:
        return NUMERALS[ones]
    return ("" if tens == 1 else NUMERALS[tens]) + "十" + (NUMERALS[ones] if ones else "")


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def build(rng: random.Random) -> tuple[list[dict], list[dict], list[dict]]:
    """(corpus, dated associations, examples) of the synthetic benchmark."""
    corpus: list[dict] = []
    dates: list[dict] = []
    by_date: dict[tuple[str, int, int], list[str]] = {}
    n = 0
    for reign, years in REIGNS:
        for year in sorted(rng.sample(range(1, years + 1), min(years, 6))):
            for month in sorted(rng.sample(range(1, 13), 3)):
                time_text = f"{reign}{_year_text(year)}年{SEASON_OF_MONTH[month]}{NUMERALS[month]}月"
                for _ in range(rng.choice([1, 1, 2])):
                    n += 1
                    doc_id = f"cq{n:05d}"
                    s, t = rng.sample(STATES, 2)
                    event = rng.choice(EVENTS).format(s=s, t=t, p=rng.choice(PLACES))
                    corpus.append({"doc_id": doc_id, "text": f"{time_text}，{event}。"})
                    dates.append({"doc_id": doc_id, "time_text": time_text, "reign": reign, "year": year,
                                  "month": month})
                    by_date.setdefault((reign, year, month), []).append(doc_id)
                    if rng.random() < 0.15:  # a second, looser association (the season only)
                        dates.append({"doc_id": doc_id, "time_text": f"{reign}{_year_text(year)}年"
                                      f"{SEASON_OF_MONTH[month]}", "reign": reign, "year": year, "month": None})
                if rng.random() < 0.35:  # later commentary on the same event: undated distractor
                    n += 1
                    s = rng.choice(STATES)
                    corpus.append({"doc_id": f"cq{n:05d}", "text": rng.choice(COMMENTARY).format(
                        s=s, p=rng.choice(PLACES)) + "。"})
    examples: list[dict] = []
    keys = sorted(by_date)
    for i, key in enumerate(rng.sample(keys, 40), start=1):
        reign, year, month = key
        form = rng.choice(["{r}{y}年{m}月之事", "{r}{y}年{m}月發生何事", "{r}{y}年{m}月，魯史所書者何"])
        examples.append({"query_id": f"cq-q{i:03d}",
                         "text": form.format(r=reign, y=_year_text(year), m=NUMERALS[month]),
                         "relevant_doc_ids": by_date[key]})
    return corpus, dates, examples


def simulated_run(rng: random.Random, corpus: list[dict], examples: list[dict]) -> list[dict]:
    """A plausible system's results: relevant docs usually near the top, scores rounded to two
    decimals (so ties occur), ties ordered by corpus position, at most 10 results."""
    position = {d["doc_id"]: i for i, d in enumerate(corpus)}
    ids = [d["doc_id"] for d in corpus]
    lines = []
    for ex in examples:
        cands: dict[str, float] = {}
        for doc in ex["relevant_doc_ids"]:
            if rng.random() < 0.85:
                cands[doc] = round(rng.uniform(0.55, 0.95), 2)
        for doc in rng.sample(ids, 12):
            cands.setdefault(doc, round(rng.uniform(0.3, 0.8), 1))
        ranked = sorted(cands.items(), key=lambda kv: (-kv[1], position[kv[0]]))[: rng.choice([6, 8, 10, 10])]
        lines.append({"query_id": ex["query_id"], "results": [{"doc_id": d, "score": s} for d, s in ranked]})
    rng.shuffle(lines)  # output row order is unrestricted
    return lines


def invalid_run_text(lines: list[dict], corpus: list[dict]) -> str:
    """The valid batch with one violation of each kind (see the docs for the list)."""
    bad = [json.loads(json.dumps(line)) for line in lines]
    bad[0]["results"][-1]["doc_id"] = bad[0]["results"][0]["doc_id"]  # repeated doc id
    bad[1]["results"][0]["doc_id"] = "cq99999"  # unknown doc id
    bad[2]["results"][-1]["score"] = 5.0  # scores not descending
    r = bad[3]["results"]  # tie out of corpus order: equal scores, reversed
    r[0]["score"] = r[1]["score"]
    r[0], r[1] = r[1], r[0]
    used = {r["doc_id"] for r in bad[4]["results"]}  # more than 10 results
    extra = [d["doc_id"] for d in corpus if d["doc_id"] not in used][: 11 - len(bad[4]["results"])]
    bad[4]["results"] += [{"doc_id": d, "score": 0.0} for d in extra]
    bad.pop(5)  # a missing query
    text = [json.dumps(line, ensure_ascii=False) for line in bad]
    text[5] = text[5].replace('"score": ', '"score": NaN, "x": ', 1)  # NaN token (and an extra key)
    text.append(text[6])  # a repeated query
    text.append('{"query_id": "cq-q999", "results": []}')  # an unknown query
    text.append('{"query_id": "cq-q001", "results": [{"doc_id": "cq00001"')  # not JSON
    return "\n".join(text) + "\n"


def generate(root: str | Path = DEFAULT_ROOT) -> list[Path]:
    """Write the sample under ``root``; returns the files written."""
    root = Path(root)
    rng = random.Random(SEED)
    corpus, dates, examples = build(rng)
    run = simulated_run(rng, corpus, examples)
    out = [root / "chunqiu" / "corpus.jsonl", root / "chunqiu" / "dated_examples.jsonl",
           root / "chunqiu" / "examples.jsonl", root / "runs" / "chunqiu.jsonl",
           root / "runs" / "chunqiu_invalid.jsonl"]
    _write_jsonl(out[0], corpus)
    _write_jsonl(out[1], dates)
    _write_jsonl(out[2], examples)
    _write_jsonl(out[3], run)
    out[4].write_text(invalid_run_text(run, corpus), encoding="utf-8")
    return out


if __name__ == "__main__":  # pragma: no cover
    for path in generate(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ROOT):
        print(path)
