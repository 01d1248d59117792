"""The judge disclosure: everything a task report states about LLM judging, from the files.

The RETECO evaluation plan asks the task report to "disclose the sample, agreement results,
prompts, judge version, retry procedure, and invalid or missing outputs". `build_report`
collects, from judgment files (and the ``OUT.run.json`` record written beside them, human ratings
and golden-case results when given):

* per dimension: items, valid, invalid and missing outputs (by kind and by reason), the raw mean
  score and the normalised mean ((s - 1)/4 on the 1-5 scale, s/4 on 0-4);
* the prompts (dimension, version, sha256, full text);
* the model requested and the model names the endpoint returned (with counts);
* decoding settings, and the retry procedure with how often each retry cause occurred;
* repeats, how they are combined, and self-consistency (Krippendorff's alpha across repeats);
* agreement with human raters and the rated sample;
* the judge means calibrated by those ratings (prediction-powered, PPI++) and the judge's bias;
* golden-case meta-evaluation results;
* token totals and the cost estimate.

`report_markdown` renders it as the section to paste into a task report; the dict itself is
the JSON form (`report_json`).

Text that comes from an endpoint (returned and listed model names, error messages quoting a
server's body, retry causes) or from input files is never trusted: every report format escapes it
through one function of its own — `escape_markdown` for Markdown (HTML and Markdown syntax
are shown as text once rendered, e.g. by MkDocs or python-markdown), `escape_json` for JSON
(``<``, ``>``, ``&`` and the line separators as ``\\u`` escapes, so the file can be embedded in an
HTML page).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._version import __version__
from ..errors import Problem
from ..io.jsonl import iter_jsonl
from ..io.judgments import AGGREGATES, DIM_SCALE, SCALES, collapse_repeats, read_judgments
from ..report.text import frame_records
from ..stats.calibrate import calibration_section
from .agreement import agreement, read_ratings, self_consistency
from .ledger import token_totals
from .prompts import prompt_index
from .replies import clean_text
from .session import read_run_records

__all__ = ["build_report", "report_markdown", "report_json", "read_judgment_rows", "escape_markdown", "escape_json",
           "markdown_table"]

PathLike = str | os.PathLike


def read_judgment_rows(paths: PathLike | Sequence[PathLike | pd.DataFrame], problems: list[Problem]) -> pd.DataFrame:
    """The judgment rows of files (or DataFrames) with every field kept, invalid judgments
    included; the problems found are appended to ``problems``.

    This is `read_judgments` with ``all_fields=True`` (and
    ``keep_invalid=True``): the same rows are kept and the same problems reported, at the same
    lines; its ``valid``, ``value`` and ``problem`` columns say which rows count as valid
    judgments. Rows with a problem in their structure (a line that is not JSON, no item or
    dimension, a bad ``repeat``, a second row for the same item, dimension and repeat) are left
    out.
    """
    sources = [paths] if isinstance(paths, (str, os.PathLike, pd.DataFrame)) else list(paths)
    frame, found = read_judgments(sources, all_fields=True)
    problems.extend(found)
    return frame


def _reason(error: str) -> str:
    text = re.sub(r"^invalid after \d+ attempt\(s\): ", "", str(error))
    text = re.sub(r"\d+", "N", text)
    return text[:100]


def _prompts(shas: Sequence[str], prompts_dir: PathLike | None) -> list[dict[str, Any]]:
    index = prompt_index(prompts_dir)
    out = []
    for sha in shas:
        p = index.get(sha)
        if p is None:
            out.append({"sha256": sha, "dimension": None, "version": None, "text": None,
                        "note": "prompt file not found (give --prompts with the folder used for judging)"})
        else:
            out.append({"sha256": sha, "dimension": p.dimension, "family": p.family, "version": p.version,
                        "scale": f"{p.low}-{p.high}", "source": p.source,
                        "text": f"=== system ===\n{p.system}\n=== user ===\n{p.user}"})
    return out


def _dimension_stats(rows: pd.DataFrame, targets: Sequence[str] | None, how: str) -> list[dict[str, Any]]:
    out = []
    rows = rows.copy()
    rows["repeat"] = pd.to_numeric(rows.get("repeat", 0), errors="coerce").fillna(0).astype(int)
    for dim, part in rows.groupby("dimension", sort=False):
        scale = DIM_SCALE.get(str(dim))
        low, high = SCALES[scale] if scale else (None, None)
        valid = part["valid"].astype(bool)
        score = pd.to_numeric(part["score"].where(valid), errors="coerce")
        f = pd.DataFrame({"turn_id": part["turn_id"].astype(str), "dimension": dim, "valid": valid.to_numpy(),
                          "value": score.where(valid).astype("float64").to_numpy()})
        items = collapse_repeats(f, how)
        raw_mean = float(items["value"].mean()) if items["valid"].any() else float("nan")
        kind = part["error_kind"] if "error_kind" in part else pd.Series(["unknown"] * len(part), index=part.index)
        invalid = part[~valid]
        by_kind = Counter(str(k) if isinstance(k, str) else "unknown" for k in kind[~valid])
        why = invalid["error"].where(invalid["error"].notna() & (invalid["error"].astype(str) != ""),
                                     invalid["problem"])
        reasons = Counter(_reason(e) for e in why.dropna())
        missing = None
        if targets is not None:
            missing = len(set(targets) - set(part["turn_id"].astype(str)))
        out.append({
            "dimension": dim, "scale": f"{low}-{high}" if low is not None else None,
            "items": int(len(items)), "valid_items": int(items["valid"].sum()),
            "invalid_items": int((~items["valid"]).sum()), "missing_items": missing,
            "judgments": int(len(part)), "invalid_judgments": int((~valid).sum()),
            "raw_mean": raw_mean,
            "normalized_mean": (raw_mean - low) / (high - low) if low is not None and not math.isnan(raw_mean)
            else float("nan"),
            "invalid_by_kind": dict(sorted(by_kind.items())),
            "invalid_by_reason": dict(reasons.most_common(10)),
        })
    return out


def _echoes(rows: pd.DataFrame) -> dict[str, int]:
    """Replies that copied the prompt's placeholder instead of a rationale: judgments left invalid
    by it, and attempts (including those repaired by a later attempt)."""
    causes = rows["retry_causes"] if "retry_causes" in rows else pd.Series([], dtype=object)
    per_row = causes.map(lambda c: sum(1 for x in c if x == "echoed_placeholder") if isinstance(c, list) else 0)
    error = rows["error"].astype(str) if "error" in rows else pd.Series([], dtype=str)
    final = error.str.contains("placeholder|empty 'rationale'", regex=True) & ~rows.get("valid", True)
    return {"invalid_judgments": int(final.sum()), "attempts": int(per_row.sum())}


def _identity(records: list[dict[str, Any]], requested: list[str], returned: dict[str, int]) -> dict[str, Any]:
    """What the endpoint's ``GET /models`` listed at the start of the runs, beside the returned
    names, and whether the two can tell which weights answered."""
    listed = [r.get("settings", {}).get("served_models") for r in records]
    listed = [x for x in listed if isinstance(x, dict)]
    if not listed:
        return {"listed": None, "note": "no run record with the endpoint's model list: which weights answered is "
                                        "known only from the names the endpoint returned"}
    ids = sorted({str(i) for x in listed for i in (x.get("ids") or [])})
    errors = sorted({str(x["error"]) for x in listed if x.get("error")})
    out: dict[str, Any] = {"listed": ids, "owned_by": sorted({str(o) for x in listed for o in (x.get("owned_by") or [])})}
    if not ids:
        out["note"] = ("the endpoint's GET /models gave no model list (" + "; ".join(errors or ["no answer"]) + "): "
                       "which weights answered is known only from the returned names")
    elif returned and set(returned) <= set(requested) and not set(requested) & set(ids):
        out["note"] = ("the endpoint returned the requested name, which is not a model it lists: it echoes the "
                       "request, so the returned name cannot tell which weights answered; GET /models listed "
                       + ", ".join(ids))
    elif not returned:
        out["note"] = "no returned model name; GET /models listed " + ", ".join(ids)
    else:
        out["note"] = None
    return out


def _golden(path: PathLike, problems: list[Problem]) -> dict[str, Any]:
    cases = pd.DataFrame([obj for _, obj in iter_jsonl(path, problems)])
    if cases.empty or not {"dimension", "separated"} <= set(cases.columns):
        return {"file": str(path), "note": "no golden-case rows (expected the output of judge meta-eval --out)"}
    g = cases.groupby("dimension", sort=False)
    rows = []
    for dim, part in g:
        sep = part["separated"].astype(bool)
        inv = part["error"].notna() if "error" in part else pd.Series(False, index=part.index)
        rows.append({"dimension": dim, "pairs": int(len(part)), "separated": int(sep.sum()),
                     "invalid": int(inv.sum()), "accuracy": float(sep.mean())})
    return {"file": str(path), "pairs": int(len(cases)), "separated": int(cases["separated"].astype(bool).sum()),
            "by_dimension": rows}


def build_report(
    judgments: PathLike | Sequence[PathLike],
    *,
    human: PathLike | pd.DataFrame | None = None,
    golden: PathLike | None = None,
    targets: Sequence[str] | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
    aggregate: str | None = None,
    prompts_dir: PathLike | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    problems: list[Problem] | None = None,
) -> dict[str, Any]:
    """The disclosure as a JSON-ready dict (see the module docstring for its parts).

    Args:
        judgments: judgment JSONL file(s) of ``judge generation`` / ``judge ikat`` (or the
            ``--judgments-out`` file of ``judge temporal``), read by `read_judgment_rows`
            (the rules of `read_judgments`: a judgment is
            valid, invalid or a problem there exactly as in ``aggregate_judgments`` and
            ``agreement``); ``<file>.run.json`` beside each is read for the settings of the run.
        human: human ratings (see `read_ratings`).
        golden: the per-case output of ``judge meta-eval --out``.
        targets: the turns that should have been judged (for missing outputs).
        price_in, price_out: prices per million prompt / completion tokens (default: those
            recorded in the run record, if any).
        aggregate: how repeats are combined (default: the run record's, else ``mean``).
        prompts_dir: the folder of prompt files used for judging, when not the packaged ones.
        bootstrap, seed: bootstrap resamples and seed of the agreement intervals.
        problems: receives problems found in the inputs.
    """
    paths = [judgments] if isinstance(judgments, (str, os.PathLike)) else list(judgments)
    found: list[Problem] = []
    rows, records = _read_inputs(paths, found)
    rec = records[0] if records else {}
    how = aggregate or rec.get("aggregate") or "mean"
    if how not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}")
    price_in = price_in if price_in is not None else rec.get("price_in")
    price_out = price_out if price_out is not None else rec.get("price_out")
    repeats = int(pd.to_numeric(rows["repeat"], errors="coerce").fillna(0).max()) + 1
    settings = rec.get("settings", {})
    report: dict[str, Any] = {
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "reteco_measures_version": __version__,
        "judgment_files": [str(p) for p in paths],
        "run_records": [f"{p}.run.json" for p in paths if Path(f"{p}.run.json").is_file()],
        "dimensions": _dimension_stats(rows, targets, how),
        "prompts": _prompts(list(dict.fromkeys(str(s) for s in rows["prompt_sha256"].dropna())), prompts_dir),
        "model": _model_section(rows, records),
        "decoding": {k: settings.get(k) for k in ("temperature", "seed", "top_p", "structured",
                                                   "max_tokens", "extra_body") if k in settings}
        if settings else {"note": "no run record found: decoding settings unknown"},
        "retry_procedure": _retry_section(rows, settings),
        "echoed_placeholders": _echoes(rows),
        "throughput": [r.get("last_run", {}).get("throughput") for r in records
                       if isinstance(r.get("last_run", {}).get("throughput"), dict)],
        "repeats": {"k": repeats, "aggregate": how},
        "tokens": token_totals(rows, price_in=price_in, price_out=price_out),
    }
    # the rows were read and their problems reported once, above: the statistics get the valid ones
    judge = rows.loc[rows["valid"], ["turn_id", "dimension", "repeat", "score"]]
    if repeats > 1:
        report["repeats"]["self_consistency"] = frame_records(self_consistency(judge, problems=found))
    if human is not None:
        ratings = read_ratings(human, found, keep_lines=True)
        report["agreement"] = _agreement_section(judge, ratings, human, bootstrap, seed, found)
        report["calibration"] = calibration_section(judge, ratings, aggregate=how, problems=found)
    if golden is not None:
        report["golden"] = _golden(golden, found)
    # the agreement and the calibration check the same ratings: a rating they both leave out is one problem
    found = list({(p.path, p.line, p.query_id, p.kind, p.message.split(";")[0]): p for p in reversed(found)}
                 .values())[::-1]
    report["problems"] = [p.as_dict() for p in found[:50]]
    if problems is not None:
        problems.extend(found)
    return report


def _read_inputs(paths: Sequence[PathLike], found: list[Problem]) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The judgment rows of ``paths`` (every audit column present, None when the files lack it)
    and the run records beside them."""
    rows = read_judgment_rows(paths, found)  # TEMPO items are "<query_id> <doc_id>[ <period>]"
    if rows.empty:
        raise ValueError(f"{', '.join(map(str, paths))}: no judgment rows (turn_id, dimension) found")
    for col in ("score", "error", "model", "prompt_sha256", "response_model", "repeat"):
        if col not in rows:
            rows[col] = None
    return rows, read_run_records(paths)


def _model_section(rows: pd.DataFrame, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The model requested, the names the endpoint returned and served, and its model list."""
    requested = sorted({str(m) for m in rows["model"].dropna()})
    returned = dict(Counter(str(m) for m in rows["response_model"].dropna()).most_common())
    return {
        "requested": requested,
        "returned": returned,
        "judgments_without_returned_model": int(rows["response_model"].isna().sum()),
        "served": dict(Counter(str(m) for m in rows["served_model"].dropna()).most_common())
        if "served_model" in rows else {},
        "endpoint_models": _identity(records, requested, returned),
    }


#: the retry procedure, in words (what `JudgeClient.judge` does)
RETRY_DESCRIPTION = (
    "each judgment gets 1 + retries attempts, each with a total deadline counted from sending (time queued at the "
    "server included); timeouts, connection errors and resets, HTTP 5xx and 429 and bodies that are not a chat "
    "completion are retried with exponential backoff (doubling, capped); a 429's Retry-After is honoured up to "
    "--max-wait and pauses every worker; a reply that is not a valid judgment (a placeholder copied as the "
    "rationale included) is retried with a repair message giving the reason and the schema, and an answer "
    "identical to an earlier invalid one ends the retries; HTTP 400-type rejections are not retried; 401/403/404 "
    "and an endpoint that cannot be connected to stop the run")


def _retry_section(rows: pd.DataFrame, settings: dict[str, Any]) -> dict[str, Any]:
    """The retry settings of the run record, the procedure, and how often each cause occurred."""
    retry_causes: Counter = Counter()
    for causes in rows.get("retry_causes", pd.Series([], dtype=object)):
        if isinstance(causes, list):
            retry_causes.update(str(c) for c in causes)
    attempts = pd.to_numeric(rows.get("attempts", pd.Series(dtype=float)), errors="coerce").dropna().astype(int)
    by_cause = Counter(retry_causes)
    answered = int((rows["valid"].astype(bool) & (attempts.reindex(rows.index).fillna(0) > 0)).sum())
    if answered:
        by_cause["answered"] = answered
    return {
        **({k: settings.get(k) for k in ("retries", "timeout", "backoff", "max_backoff", "max_retry_after", "repair")
            if k in settings} if settings else {"note": "no run record found"}),
        "description": RETRY_DESCRIPTION,
        "retry_causes": dict(retry_causes.most_common()),
        "attempts_by_cause": dict(sorted(by_cause.items())),
        "attempts_histogram": {int(k): int(v) for k, v in attempts.value_counts().sort_index().items()},
    }


def _agreement_section(judge: pd.DataFrame, ratings: pd.DataFrame, human: Any, bootstrap: int, seed: int,
                       found: list[Problem]) -> dict[str, Any]:
    """The rated sample and the agreement table of the judge with the human raters."""
    table = agreement(judge, ratings, bootstrap=bootstrap, seed=seed, problems=found)
    return {
        "ratings": str(human) if not isinstance(human, pd.DataFrame) else "(DataFrame)",
        "sample": {"items": int(ratings[["turn_id", "dimension"]].drop_duplicates().shape[0]),
                   "raters": sorted(ratings["rater"].unique().tolist()),
                   "ratings": int(len(ratings)),
                   "items_by_dimension": {str(k): int(v) for k, v in
                                          ratings.drop_duplicates(["turn_id", "dimension"])["dimension"]
                                          .value_counts(sort=False).items()}},
        "consensus": "lower median of the raters' scores",
        "bootstrap": {"resamples": bootstrap, "seed": seed, "level": 0.95},
        "table": frame_records(table),
    }


# ------------------------------------------------------------------------------------------------
# markdown


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|])")


def escape_markdown(text: Any) -> str:
    """``text`` as literal Markdown text, safe to render: ``&``, ``<``, ``>`` become HTML entities
    (no tag, comment or autolink can form), Markdown punctuation (emphasis, code, links, images,
    table bars, headings) is backslash-escaped, line breaks become spaces and control characters
    ``\\uXXXX``. The one function every piece of text in `report_markdown` goes through."""
    t = clean_text(" ".join(str(text).splitlines()))
    t = t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", t)


def escape_json(text: str) -> str:
    """A JSON document with ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\u`` escapes
    (the same JSON value), so it stays inert inside an HTML page or a ``<script>`` block."""
    for ch in ("<", ">", "&", "\u2028", "\u2029"):
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


def _cell(v: Any, places: int = 4) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else f"{v:.{places}f}"
    if isinstance(v, (int, np.integer)):
        return str(v)
    if isinstance(v, dict):
        return ", ".join(f"{escape_markdown(k)}: {_cell(x, places)}" for k, x in v.items()) or "-"
    if isinstance(v, (list, tuple)):
        return ", ".join(_cell(x, places) for x in v) or "-"
    return escape_markdown(v)


def _fence(text: str) -> str:
    """``text`` in a code block whose fence is longer than any run of backticks inside it."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}text\n{clean_text(text)}\n{fence}\n"


def markdown_table(records: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A Markdown table of ``records`` (every cell escaped by `escape_markdown`); ``(none)`` when empty."""
    if not records:
        return "(none)\n"
    cols = list(columns or records[0].keys())
    out = ["| " + " | ".join(_cell(c) for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    out += ["| " + " | ".join(_cell(r.get(c)) for c in cols) + " |" for r in records]
    return "\n".join(out) + "\n"


def report_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown (the section to paste into a task report)."""
    md: list[str] = ["## LLM judge: disclosure", ""]
    md.append(f"Generated {_cell(report['generated'])} by reteco-measures {_cell(report['reteco_measures_version'])} "
              f"from {_cell(report['judgment_files'])}.\n")
    md += ["### Scores and invalid or missing outputs", ""]
    md.append(markdown_table(report["dimensions"], ["dimension", "scale", "items", "valid_items", "invalid_items",
                                            "missing_items", "raw_mean", "normalized_mean"]))
    md.append("Normalised mean: (s - low) / (high - low), i.e. (s - 1)/4 on the 1-5 scale and s/4 on 0-4; "
              "means are over items with a valid judgment.\n")
    for d in report["dimensions"]:
        if d["invalid_judgments"]:
            md.append(f"* {_cell(d['dimension'])}: {d['invalid_judgments']} invalid judgment(s); by kind: "
                      f"{_cell(d['invalid_by_kind'])}; reasons: "
                      + "; ".join(f"{_cell(k)} ({v})" for k, v in d["invalid_by_reason"].items()))
    echo = report.get("echoed_placeholders")
    if echo and (echo["attempts"] or echo["invalid_judgments"]):
        md.append(f"* Replies that copied the prompt's placeholder as their rationale: {echo['attempts']} attempt(s); "
                  f"{echo['invalid_judgments']} judgment(s) left invalid by it")
    md += ["", "### Judge model and decoding", ""]
    m = report["model"]
    md.append(f"* Requested: {_cell(m['requested'])}")
    md.append("* Returned by the endpoint: " + (", ".join(f"{_cell(k)} ({v})" for k, v in m["returned"].items()) or "-")
              + (f"; {m['judgments_without_returned_model']} judgment(s) without a returned name"
                 if m["judgments_without_returned_model"] else ""))
    ident = m.get("endpoint_models") or {}
    if ident.get("listed") is not None:
        md.append(f"* Listed by the endpoint's GET /models at the start of the run: {_cell(ident['listed'])}"
                  + (f" (owned_by {_cell(ident['owned_by'])})" if ident.get("owned_by") else ""))
    if ident.get("note"):
        md.append(f"* Model identity: {_cell(ident['note'])}")
    md.append(f"* Decoding: {_cell(report['decoding'])}")
    for t in report.get("throughput") or []:
        md.append(f"* Throughput of the last run: {_cell(t.get('requests_per_s'))} requests/s over "
                  f"{_cell(t.get('requests'))} answered request(s), concurrency {_cell(t.get('concurrency'))}, "
                  f"parallelism {_cell(t.get('parallelism'))}"
                  + ("; the endpoint answered one request at a time" if t.get("queueing") else ""))
    r = report["retry_procedure"]
    md += ["", "### Retry procedure", "", escape_markdown(r["description"]) + ".", ""]
    shown = ", ".join(f"{k} {_cell(r[k])}" for k in ("retries", "timeout", "backoff", "max_backoff",
                                                      "max_retry_after", "repair") if k in r)
    md.append("* Settings: " + (shown or _cell(r.get("note", "unknown"))))
    md.append(f"* Retry causes (failed attempts): {_cell(r['retry_causes'])}")
    if "attempts_by_cause" in r:
        md.append(f"* Attempts by cause: {_cell(r['attempts_by_cause'])}")
    md.append(f"* Attempts per judgment: {_cell(r['attempts_histogram'])}")
    rep = report["repeats"]
    md += ["", "### Repeats and self-consistency", "",
           f"{rep['k']} judgment(s) per item, combined by the {_cell(rep['aggregate'])}.", ""]
    if "self_consistency" in rep:
        md.append(markdown_table(rep["self_consistency"]))
    if "agreement" in report:
        a = report["agreement"]
        s = a["sample"]
        md += ["### Agreement with human raters", "",
               f"Sample: {s['items']} item(s) rated by {len(s['raters'])} rater(s) ({_cell(s['raters'])}), "
               f"{s['ratings']} rating(s); consensus = {a['consensus']}; 95% percentile bootstrap intervals over "
               f"{a['bootstrap']['resamples']} resamples of the items.", ""]
        md.append(markdown_table(a["table"]))
    if "calibration" in report:
        md += _calibration_markdown(report["calibration"])
    if "golden" in report:
        g = report["golden"]
        md += ["### Golden-case meta-evaluation", ""]
        md.append(markdown_table(g.get("by_dimension", [])) if "by_dimension" in g else _cell(g.get("note", "")) + "\n")
    t = report["tokens"]
    md += ["### Tokens and cost", "",
           f"{t['requests']} request(s); {t['prompt_tokens']} prompt + {t['completion_tokens']} completion = "
           f"{t['total_tokens']} tokens" + (f"; estimated cost {t['cost']:.4f} (at {t['price_in_per_million']} / "
                                             f"{t['price_out_per_million']} per million prompt / completion tokens)"
                                             if t["cost"] is not None else "") + ".", ""]
    md.append(markdown_table(t["by_model"]))
    md += ["### Prompts", ""]
    for p in report["prompts"]:
        md.append(f"#### {_cell(p.get('dimension') or '(unknown)')} v{_cell(p.get('version'))} — sha256 "
                  f"{_cell(p['sha256'])}\n")
        md.append(_fence(p.get("text") or p.get("note", "")))
    if report["problems"]:
        md += ["### Problems in the inputs", ""]
        md += [f"* {_cell(str(Problem(**{k: v for k, v in p.items()})))}" for p in report["problems"]]
    return "\n".join(md).rstrip() + "\n"


def _calibration_markdown(section: dict[str, Any]) -> list[str]:
    """The "calibrated means" section (`calibration_section`)."""
    level = int(round(100 * section["level"]))
    md = ["### Judge means calibrated by the human ratings", "",
          f"{section['definition']} {level}% intervals.", ""]
    md.append(markdown_table(section["table"], ["dimension", "n", "n_human", "judge_mean", "human_mean", "calibrated",
                                        "ci_low", "ci_high", "bias"]))
    md += [f"* {escape_markdown(note)}" for note in section.get("notes", [])]
    return md + ([""] if section.get("notes") else [])


def _nan_to_none(obj: Any) -> Any:
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_nan_to_none(v) for v in obj]
    if isinstance(obj, np.generic):
        return _nan_to_none(obj.item())
    return obj


def report_json(report: dict[str, Any]) -> str:
    """The report as JSON (NaN as null; ``<``, ``>``, ``&`` escaped by `escape_json`)."""
    return escape_json(json.dumps(_nan_to_none(report), indent=2, ensure_ascii=False))
