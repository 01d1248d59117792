"""Golden-case meta-evaluation: does a judge separate good from bad responses?

Each case is a *contrast pair*: the same question, history and passages with a response that
should score high and one that should score low on one dimension only (supported vs unsupported,
complete vs incomplete, coherent vs incoherent, ...). A judge passes a pair when it gives the good
response a strictly higher score. This is the calibration step of the RETECO evaluation plan
("golden-case meta-evaluation checks whether the judge distinguishes supported from unsupported,
complete from incomplete, and coherent from incoherent responses"), run before any submission is
judged. The cases were written for this package.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .inputs import render_history, render_passages
from .prompts import Prompt, canonical, load_prompt
from .runner import JudgeItem, Outcome

__all__ = ["GoldenCase", "GOLDEN_CASES", "golden_items", "meta_eval_frames"]


@dataclass(frozen=True)
class GoldenCase:
    """A contrast pair on one dimension.

    For generation dimensions ``good``/``bad`` are responses; for ``temporal_relevance`` and
    ``period_coverage`` they are documents (``period`` names the period for coverage).
    """

    case_id: str
    dimension: str
    contrast: str
    question: str
    good: str
    bad: str
    history: list[dict[str, str]] = field(default_factory=list)
    passages: list[str] = field(default_factory=list)
    periods: list[str] = field(default_factory=list)
    period: str = ""


_HALVING = [
    "Bitcoin's block subsidy is cut in half every 210,000 blocks. The first halving happened on "
    "28 November 2012 at block 210,000, when the subsidy fell from 50 to 25 BTC. The second "
    "halving, in July 2016, reduced it to 12.5 BTC.",
]
_TEA = [
    "Green tea leaves are steamed or pan-fired soon after picking, which stops oxidation. Black tea "
    "leaves are rolled and left to oxidise fully before drying, which darkens them and changes the "
    "flavour.",
    "Black tea usually contains more caffeine per cup than green tea, although brewing time and "
    "temperature change the amount a great deal.",
]

GOLDEN_CASES: list[GoldenCase] = [
    GoldenCase(
        "faithfulness-1", "faithfulness", "supported vs unsupported",
        "When did the first Bitcoin halving happen, and what did the reward drop to?",
        good="The first halving happened on 28 November 2012, at block 210,000; the block subsidy "
             "dropped from 50 to 25 BTC.",
        bad="The first halving happened in January 2010, when Satoshi Nakamoto lowered the reward "
            "from 100 to 50 BTC to slow inflation.",
        passages=_HALVING,
    ),
    GoldenCase(
        "faithfulness-2", "faithfulness", "supported vs unsupported",
        "Why does black tea taste different from green tea?",
        good="Because black tea leaves are left to oxidise fully before drying, while green tea is "
             "steamed or pan-fired early to stop oxidation; the oxidation darkens the leaves and "
             "changes the flavour.",
        bad="Because black tea is grown only in India at high altitude and green tea only in Japan "
            "near the sea, where the salty air gives it a grassy taste.",
        passages=_TEA,
    ),
    GoldenCase(
        "completeness-1", "completeness", "complete vs incomplete",
        "When did the first Bitcoin halving happen, and what did the reward drop to?",
        good="It happened on 28 November 2012 (block 210,000), and the reward dropped from 50 to 25 BTC.",
        bad="It happened in 2012.",
        passages=_HALVING,
    ),
    GoldenCase(
        "completeness-2", "completeness", "complete vs incomplete",
        "How do green and black tea differ in processing and in caffeine?",
        good="Green tea is steamed or pan-fired soon after picking, so it does not oxidise; black tea "
             "is rolled and fully oxidised before drying. Black tea usually has more caffeine per cup, "
             "though brewing changes the amount.",
        bad="Green tea is steamed or pan-fired soon after picking.",
        passages=_TEA,
    ),
    GoldenCase(
        "coherence-1", "coherence", "coherent vs incoherent",
        "And how much did the second one reduce it to?",
        good="The second halving, in July 2016, reduced the block subsidy from 25 to 12.5 BTC.",
        bad="Green tea is steamed soon after picking, which keeps its leaves green.",
        history=[
            {"role": "user", "content": "When was Bitcoin's first halving?"},
            {"role": "assistant", "content": "On 28 November 2012, when the subsidy fell from 50 to 25 BTC."},
        ],
        passages=_HALVING,
    ),
    GoldenCase(
        "coherence-2", "coherence", "coherent vs incoherent",
        "Which of the two has more caffeine?",
        good="Of the two, black tea usually has more caffeine per cup than green tea, though how you "
             "brew it matters a lot.",
        bad="As I said before, coffee was never discussed, and the first halving of Bitcoin was in 2012.",
        history=[
            {"role": "user", "content": "What is the difference between green and black tea?"},
            {"role": "assistant", "content": "Green tea is not oxidised; black tea is fully oxidised before drying."},
        ],
        passages=_TEA,
    ),
    GoldenCase(
        "correctness-1", "correctness", "accurate vs inaccurate",
        "What is the boiling point of water at sea level in degrees Celsius?",
        good="At sea level, water boils at 100 degrees Celsius.",
        bad="At sea level, water boils at 70 degrees Celsius.",
    ),
    GoldenCase(
        "relevance-1", "relevance", "on the need vs off the need",
        "How often is Bitcoin's block subsidy halved?",
        good="Every 210,000 blocks, which is roughly every four years.",
        bad="Black tea is fully oxidised before drying, which gives it a darker colour.",
        passages=_HALVING,
    ),
    GoldenCase(
        "groundedness-1", "groundedness", "grounded vs ungrounded",
        "Can you tell me when the first Bitcoin halving was?",
        good="Sure. According to the passage, the first halving happened on 28 November 2012 at block "
             "210,000, when the subsidy went from 50 to 25 BTC.",
        bad="Sure. The first halving was announced by the European Central Bank in 2015 to control "
            "the price of gold.",
        passages=_HALVING,
    ),
    GoldenCase(
        "naturalness-1", "naturalness", "natural vs unnatural",
        "Can you tell me when the first Bitcoin halving was?",
        good="Sure! It was on 28 November 2012, when the block reward went from 50 down to 25 BTC.",
        bad="halving halving 2012 2012 block 210000 reward 50 25 BTC BTC answer answer yes date "
            "date the the the.",
    ),
    GoldenCase(
        "temporal-relevance-1", "temporal_relevance", "temporally relevant vs not",
        "How did the Bitcoin block subsidy change between 2012 and 2016?",
        good=_HALVING[0],
        bad="Bitcoin addresses are derived from public keys by hashing; an address can receive coins "
            "from many senders.",
        periods=["2012", "2016"],
    ),
    GoldenCase(
        "period-coverage-1", "period_coverage", "covers the period vs does not",
        "How did the Bitcoin block subsidy change between 2012 and 2016?",
        good="In July 2016 the second Bitcoin halving cut the block subsidy from 25 to 12.5 BTC.",
        bad="Bitcoin addresses are derived from public keys by hashing; an address can receive coins "
            "from many senders.",
        periods=["2012", "2016"],
        period="2016",
    ),
]


def _inputs(case: GoldenCase, text: str, prompt: Prompt) -> dict[str, str]:
    if case.dimension == "temporal_relevance":
        variables = {"question": case.question, "document": text,
                     "periods": "\n".join(f"- {p}" for p in case.periods) or "(none given)"}
    elif case.dimension == "period_coverage":
        variables = {"question": case.question, "document": text, "period": case.period}
    else:
        variables = {"question": case.question, "history": render_history(case.history),
                     "passages": render_passages(case.passages), "answer": text}
    return {k: variables[k] for k in sorted(prompt.placeholders)}


def golden_items(
    dimensions: Sequence[str] | None = None,
    *,
    cases: Sequence[GoldenCase] | None = None,
    prompts_dir: str | Path | None = None,
) -> list[JudgeItem]:
    """Two items (good, bad) per case of the selected dimensions."""
    cases = list(cases if cases is not None else GOLDEN_CASES)
    if dimensions is not None:
        wanted = {canonical(d) for d in dimensions}
        cases = [c for c in cases if c.dimension in wanted]
    prompts: dict[str, Prompt] = {}
    items: list[JudgeItem] = []
    for case in cases:
        prompt = prompts.setdefault(case.dimension, load_prompt(case.dimension, directory=prompts_dir))
        for side, text in (("good", case.good), ("bad", case.bad)):
            items.append(JudgeItem(prompt, _inputs(case, text, prompt),
                                   {"case_id": case.case_id, "dimension": case.dimension,
                                    "contrast": case.contrast, "side": side}))
    return items


def meta_eval_frames(outcomes: Sequence[Outcome]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-case and per-dimension results of a golden-case run.

    Returns:
        ``cases``: case_id, dimension, contrast, good, bad (scores or None), separated (bool: good >
        bad with both valid), error; ``summary``: dimension, pairs, separated, invalid, accuracy
        (separated / pairs, invalid pairs count as not separated), mean_gap (normalised, valid pairs).
    """
    by_case: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        m = o.item.meta
        row = by_case.setdefault(m["case_id"], {"case_id": m["case_id"], "dimension": m["dimension"],
                                                 "contrast": m["contrast"], "good": None, "bad": None,
                                                 "gap": float("nan"), "separated": False, "error": None})
        row[m["side"]] = o.verdict.score
        row[f"_{m['side']}_norm"] = o.normalized
        if not o.verdict.valid:
            row["error"] = f"{m['side']}: {o.verdict.error}"
    for row in by_case.values():
        gn, bn = row.pop("_good_norm", None), row.pop("_bad_norm", None)
        if row["error"] is None and gn is not None and bn is not None:
            row["gap"] = gn - bn
            row["separated"] = bool(row["good"] > row["bad"])
    cases = pd.DataFrame(list(by_case.values()),
                         columns=["case_id", "dimension", "contrast", "good", "bad", "gap", "separated", "error"])
    g = cases.groupby("dimension", sort=False)
    summary = pd.DataFrame({
        "pairs": g.size(),
        "separated": g["separated"].sum().astype(int),
        "invalid": g["error"].apply(lambda s: int(s.notna().sum())),
        "mean_gap": g["gap"].mean(),
    }).rename_axis("dimension").reset_index()
    summary.insert(4, "accuracy", summary["separated"] / summary["pairs"])
    return cases, summary
