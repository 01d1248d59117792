"""The generation tracks, judged by an LLM: ``reteco-2b``, ``reteco-2c`` and ``ikat-2023-generation``.

* ``reteco-2b`` (gold-passage generation) and ``reteco-2c`` (full conversational RAG) of RETECO
  Track 2 are judged on five dimensions, each its own prompt and an integer 1–5: correctness,
  completeness, relevance, coherence, faithfulness; a turn's value is (s − 1)/4.
* ``ikat-2023-generation``: the TREC iKAT 2023 response assessment (Aliannejadi et al. 2024,
  "TREC iKAT 2023: A Test Collection for Evaluating Conversational and Interactive Knowledge
  Assistants", arXiv:2401.01330) judges groundedness and naturalness, 0–4; a turn's value is s/4.

A *submission* here is its judgments file: the JSONL that ``reteco-measures judge generation`` /
``judge ikat`` wrote for the submission's answers (or a DataFrame with the same fields). It is
read by `reteco_measures.judge.read_judgments`, whose rules decide which judgments are valid
(problems of the file are the submission's validation problems, each with its line); repeated
judgments of a turn are combined by ``aggregate`` (default the mean, as ``judge aggregate``).

Per-query values are the turns' normalised judge scores, one measure per dimension
(``Likert(dimension='correctness')``, the name ``ir_measures`` reads back); an invalid or missing
judgment is NaN and left out of the mean (counted in the notes), as the ``Likert`` measure does,
unless ``on_missing='zero'`` (``--on-missing zero``) scores it 0, the lowest value: the RETECO
plan's rule that missing target turns receive zero (with ``targets``, every target turn then
counts, so every run is averaged over the same turns). The default stays ``'exclude'``, so a
number scored before keeps its value; a leaderboard shows each run's ``n``, ``invalid`` and
``missing`` counts and marks means over different turn sets.
The evaluated turns are ``targets`` (a file of target turn ids: JSONL, TREC qrels or one id per
line) when given — a target the submission did not judge is then counted as missing — else the
turns the submission judged. The statistical unit is the turn.

The RETECO plan names five dimensions and no single official one; these boards rank by the first
(correctness) unless ``measure=`` / ``--measure`` chooses another. The iKAT overview's response
measure of the track is groundedness, which the iKAT board ranks by. The leaderboards of these
tracks take human spot-check ratings (``human=`` / ``--human``) and then rank by the
prediction-powered (calibrated) means: see `reteco_measures.benchmarks.leaderboard`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..contracts.base import ValidationReport
from ..errors import Problem
from ..io.judgments import collapse_repeats, read_judgments, read_targets
from ..measures.likert import Likert
from .declaration import Benchmark, CliSpec, Inputs, Option, StatsSpec, TableSpec
from .registry import register

__all__ = ["RETECO_2B", "RETECO_2C", "IKAT_2023_GENERATION", "GENERATION_SCALES", "RETECO_DIMENSIONS",
           "IKAT_DIMENSIONS", "ON_MISSING"]

# The dimensions and repeat aggregates are named here; tests/benchmarks/test_benchmarks_generation.py checks that they are
# the judge's (``judge.FAMILIES``, ``judge.AGGREGATES``).

#: the RETECO generation dimensions, in the order of the judge's prompts
RETECO_DIMENSIONS = ("correctness", "completeness", "relevance", "coherence", "faithfulness")
#: the iKAT 2023 response dimensions, the ranking one (groundedness) first
IKAT_DIMENSIONS = ("groundedness", "naturalness")
_AGGREGATES = ("mean", "median", "mode")
#: what a turn without a valid judgment scores: left out of the mean, or 0
ON_MISSING = ("exclude", "zero")

#: benchmark name -> judge scale (``reteco`` 1-5, ``ikat`` 0-4)
GENERATION_SCALES = {"reteco-2b": "reteco", "reteco-2c": "reteco", "ikat-2023-generation": "ikat"}

_OPTIONS = (
    Option("targets", None, "target turn ids (JSONL, TREC qrels or one id per line); a target without a "
           "judgment is counted missing (default: the turns each submission judged)", data=True),
    Option("aggregate", "mean", "how repeated judgments of a turn are combined", choices=_AGGREGATES),
    Option("on_missing", "exclude", "a turn without a valid judgment (a target not answered or not judged, or an "
           "invalid judgment): 'exclude' leaves it out of the mean (default; each run's mean is then over its own "
           "turns); 'zero' scores it 0, the lowest value (RETECO's rule: missing target turns receive zero)",
           choices=ON_MISSING),
)


def _display(measure: Any) -> str:
    return f"Likert(dimension='{measure.params['dimension']}')" if not isinstance(measure, str) else measure


def _loader(name: str):
    def load(data: Any, split: str | None, opts: dict) -> Inputs:
        if data is not None:
            raise ValueError(f"{name} reads no reference data (--data): a submission is its judgments file; "
                             "give the target turns with --targets (targets=)")
        targets = read_targets(opts["targets"]) if opts.get("targets") else None
        qrels = pd.DataFrame({"query_id": pd.array(targets or [], dtype=object), "doc_id": "", "relevance": 0})
        return Inputs(qrels=qrels, query_ids=targets, meta={"scale": GENERATION_SCALES[name]})
    return load


def _validate(run: Any, inputs: Inputs, opts: dict) -> ValidationReport:
    scale = inputs.meta["scale"]
    frame, problems = read_judgments(run, scale=scale, keep_invalid=True)
    problems = list(problems)
    if inputs.query_ids is not None:
        targets = pd.Index(inputs.query_ids)
        judged = pd.Index(frame["turn_id"].astype(str).unique())
        path = None if isinstance(run, pd.DataFrame) else str(run)
        for tid in judged.difference(targets, sort=False)[:1000]:
            problems.append(Problem("judgment for a turn that is not a target; left out", path=path, query_id=tid,
                                    kind="unknown_query", severity="warning"))
        frame = frame[frame["turn_id"].astype(str).isin(targets)].reset_index(drop=True)
    return ValidationReport(contract="judgments", errors=problems, run=frame,
                            missing_queries=[] if inputs.query_ids is None else
                            [t for t in inputs.query_ids if t not in set(frame["turn_id"].astype(str))])


def _measures_for(dimensions: tuple[str, ...]):
    def measures(opts: dict) -> list:
        return [Likert(dimension=d) for d in dimensions]
    return measures


def _per_query(measures: list, inputs: Inputs, report: ValidationReport, opts: dict):
    items = collapse_repeats(report.run, opts["aggregate"]) if len(report.run) else \
        pd.DataFrame({"turn_id": [], "dimension": [], "value": [], "valid": []})
    items = items.assign(turn_id=items["turn_id"].astype(str))
    units = list(inputs.query_ids) if inputs.query_ids is not None else \
        list(dict.fromkeys(items["turn_id"].tolist()))
    parts = []
    notes = []
    for m in measures:
        dim = m.params["dimension"]
        mine = items[items["dimension"] == dim]
        value = mine.set_index("turn_id")["value"].where(mine.set_index("turn_id")["valid"])
        vals = value.reindex(units).to_numpy(dtype=np.float64)
        judged = pd.Index(units).isin(mine["turn_id"])
        n_missing, n_invalid = int((~judged).sum()), int((judged & np.isnan(vals)).sum())
        # on_missing='zero' applies to a dimension the submission was judged on at all
        zero = opts.get("on_missing", "exclude") == "zero" and len(mine) > 0
        if n_missing or n_invalid:
            notes.append(f"{dim}: of {len(units)} turns, {n_invalid} have an invalid judgment and {n_missing} none "
                         + ("(scored 0: on_missing='zero')" if zero else "(left out of the mean)"))
        if zero:
            vals = np.where(np.isnan(vals), 0.0, vals)
        parts.append(pd.DataFrame({"query_id": pd.array(units, dtype=object), "measure": _display(m), "value": vals,
                                   "weight": 1.0}))
    long = pd.concat(parts, ignore_index=True) if parts else \
        pd.DataFrame({"query_id": [], "measure": [], "value": [], "weight": []})
    long.attrs["notes"] = notes
    long.attrs["empty"] = {_display(m): float("nan") for m in measures}
    return long, None


def _describe(score) -> dict:
    return {"turns": int(score.per_query["query_id"].nunique()) if len(score.per_query) else 0,
            "scale": score.meta.get("scale")}


def _generation(name: str, title: str, help: str, dimensions: tuple[str, ...], aggregation: str) -> Benchmark:
    return register(Benchmark(
        name=name,
        title=title,
        measures=_measures_for(dimensions),
        load=_loader(name),
        validate=_validate,
        per_query=_per_query,
        contract="judgments",
        default_split=None,
        cli=CliSpec(help=help, options=_OPTIONS, run_help="the submission's judgments JSONL (written by "
                    "'reteco-measures judge generation' / 'judge ikat')"),
        tables=TableSpec(display=_display, aggregation=aggregation, describe=_describe),
        stats=StatsSpec(unit="turn"),
    ))



_RETECO = RETECO_DIMENSIONS
RETECO_2B = _generation("reteco-2b", "RETECO 2b (gold-passage generation)",
                        "RETECO Track 2b: LLM-judge Likert dimensions (1-5) of generated answers; "
                        "--human ranks by calibrated means", _RETECO,
                        "mean over the judged turns of the normalised score (s-1)/4")
RETECO_2C = _generation("reteco-2c", "RETECO 2c (conversational RAG)",
                        "RETECO Track 2c: LLM-judge Likert dimensions (1-5) of generated answers; "
                        "--human ranks by calibrated means", _RETECO,
                        "mean over the judged turns of the normalised score (s-1)/4")
IKAT_2023_GENERATION = _generation(
    "ikat-2023-generation", "TREC iKAT 2023 response generation",
    "TREC iKAT 2023 responses: LLM-judge groundedness and naturalness (0-4); --human ranks by calibrated means",
    IKAT_DIMENSIONS, "mean over the judged turns of the normalised score s/4")
