"""Judgment rows and their scales: what the ``Likert`` measure is computed from.

`read_judgments` is the one reader of judgment rows: the ``Likert`` kernel
(`reteco_measures.kernels.likert`), `reteco_measures.judge.aggregate_judgments`, the
disclosure report and the agreement statistics all read through it, so they keep the same rows
and report the same problems at the same lines.

The score of a judgment is re-normalised from its integer ``score`` and the dimension's scale
(RETECO 1-5: (s-1)/4, as in the RETECO generation-evaluation plan; iKAT 0-4: s/4, the TREC iKAT
2023 response assessment; TEMPO 0/1) rather than trusted from the file's ``normalized`` field; a
row whose ``normalized`` disagrees, or whose score is not an integer on the scale, is reported as a
problem and counted invalid.

The dimension families (`FAMILIES`) and their accepted spellings (`canonical`) are
declared here too; `reteco_measures.judge.prompts` holds the prompts written for them.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import Problem
from .jsonl import iter_jsonl

__all__ = ["FAMILIES", "ALIASES", "SCALES", "DIM_SCALE", "AGGREGATES", "JUDGMENT_COLUMNS", "JUDGMENT_FIELDS",
           "canonical", "family_of", "read_judgments", "normalize_scores", "collapse_repeats", "int_score",
           "scale_for", "read_targets", "text_lines"]

#: dimension families: name -> (dimensions in report order, score range, normalisation)
FAMILIES: dict[str, tuple[str, ...]] = {
    "reteco": ("correctness", "completeness", "relevance", "coherence", "faithfulness"),
    "ikat": ("naturalness", "groundedness"),
    "tempo": ("temporal_relevance", "period_coverage"),
}

#: accepted spellings of dimension names -> canonical name
ALIASES = {
    "conversational_coherence": "coherence",
    "conversational-coherence": "coherence",
    "temporal-relevance": "temporal_relevance",
    "period-coverage": "period_coverage",
}


def family_of(dimension: str) -> str:
    """The family a (canonical) dimension belongs to."""
    for family, dims in FAMILIES.items():
        if dimension in dims:
            return family
    raise ValueError(f"unknown dimension {dimension!r}; known: {', '.join(d for ds in FAMILIES.values() for d in ds)}")


def canonical(dimension: str) -> str:
    """Canonical spelling of a dimension name (``conversational_coherence`` -> ``coherence``)."""
    d = dimension.strip().lower()
    return ALIASES.get(d, d)


#: scale name -> (low, high)
SCALES: dict[str, tuple[int, int]] = {"reteco": (1, 5), "ikat": (0, 4), "binary": (0, 1)}
#: dimension -> the name of its scale in `SCALES` (TEMPO's verdicts are ``binary``)
DIM_SCALE: dict[str, str] = {d: ("binary" if fam == "tempo" else fam) for fam, dims in FAMILIES.items() for d in dims}

#: the fields of a judgment row as the judge writes them, in this order (``inputs``, the texts the
#: judge saw, follows on a row's first repeat); `read_judgments` reads the first seven and
#: ``repeat``, and keeps the others with ``all_fields=True``
JUDGMENT_FIELDS = ("turn_id", "dimension", "score", "normalized", "model", "prompt_sha256", "error", "rationale",
                   "repeat", "error_kind", "attempts", "retry_causes", "prompt_tokens", "completion_tokens",
                   "response_model", "served_model")


def judgment_row(*, inputs: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    """One judgment row in the written order (`JUDGMENT_FIELDS`, a missing field is null), with
    ``inputs`` last when given.

    Raises:
        TypeError: a field that is not one of `JUDGMENT_FIELDS`.
    """
    unknown = sorted(set(fields) - set(JUDGMENT_FIELDS))
    if unknown:
        raise TypeError(f"not judgment-row fields: {', '.join(unknown)}")
    row = {name: fields.get(name) for name in JUDGMENT_FIELDS}
    if inputs:
        row["inputs"] = dict(inputs)
    return row

JudgmentSource = str | os.PathLike | pd.DataFrame
ScaleArg = str | tuple[int, int] | None

#: the columns of `read_judgments`, in this order (``all_fields=True`` adds the others after them)
JUDGMENT_COLUMNS = ["turn_id", "dimension", "score", "normalized", "model", "prompt_sha256", "error", "repeat",
                    "line", "path", "valid", "value", "problem"]
_FIELDS = JUDGMENT_COLUMNS[:7]


def read_judgments(
    source: JudgmentSource | Sequence[JudgmentSource],
    *,
    scale: ScaleArg = None,
    keep_invalid: bool = True,
    all_fields: bool = False,
) -> tuple[pd.DataFrame, list[Problem]]:
    """Judgment rows as a tidy frame, and the problems found in them.

    This is the one reader of judgment rows in the package; every other reader calls it.

    Args:
        source: a judgments JSONL path (``.gz`` / ``.bz2`` / ``.xz`` read transparently), a
            DataFrame with the same fields, or a list of them. Files written by ``judge
            generation`` / ``judge ikat``, the ``--judgments-out`` file of ``judge temporal`` (rows
            with ``query_id``, ``doc_id`` and, for coverage, ``period``) and TEMPO labels files
            (``temporal`` verdict and no ``dimension``: read as ``temporal_relevance`` rows; a
            ``null`` verdict is an invalid judgment) are all accepted.
        scale: force one scale on every row read: ``"reteco"`` (1-5), ``"ikat"`` (0-4),
            ``"binary"`` (0-1) or ``(low, high)``. Default: each dimension's own scale; a
            dimension with no known scale (a custom prompt's) is only checked for integer scores
            and gets no normalised ``value``.
        keep_invalid: keep invalid judgments as rows with ``valid`` False and ``value`` NaN (the
            default: what coverage counts need); False leaves them out (what agreement
            statistics need). Rows with a problem in their structure are never kept.
        all_fields: also keep every other field of the rows (tokens, ``response_model``,
            ``inputs``, ``error_kind`` ...) after the standard columns.

    Returns:
        ``(frame, problems)``. ``frame`` has `JUDGMENT_COLUMNS`: ``turn_id`` (the item: the
        ``turn_id`` field, else ``"<query_id> <doc_id>[ <period>]"``), ``dimension`` (canonical
        name), ``score``, ``normalized``, ``model``, ``prompt_sha256``, ``error`` as read,
        ``repeat`` (int, 0 when absent), ``line`` (1-based line in the file, or row position in a
        DataFrame) and ``path`` (None for a DataFrame), ``valid``, ``value`` (the normalised
        score, NaN when invalid or the scale is unknown) and ``problem`` (the message of the
        problem that made the row invalid, else None). ``problems`` are
        `Problem` values in source and line order.

    Rules, the same for every caller:

    * a line that is not valid UTF-8 or JSON, or not an object, is a problem (``kind``
      ``encoding`` / ``format``) and is left out;
    * a row without an item (``turn_id``, or ``query_id`` and ``doc_id``) or a ``dimension``, or
      whose id is not a string or an integer, is a problem (``field``) and is left out;
    * a ``repeat`` that is not a non-negative integer is a problem (``field``) and the row is left
      out; a row without ``repeat`` is repeat 0;
    * a second row for the same (item, dimension, repeat) is a problem (``duplicate``) and is left
      out: the first one is kept, in the order of the sources and their lines;
    * a row with a non-empty ``error`` is an invalid judgment (the harness recorded why); it is
      not a problem of the file;
    * a row without an error whose ``score`` is not an integer (``null``, a fraction, a boolean, a
      word) or is off the scale, or whose ``normalized`` disagrees with the score, is a problem
      (``score``) and an invalid judgment. Numeric strings (``"4"``) are read as numbers.
    """
    sources = list(source) if isinstance(source, (list, tuple)) else [source]
    found: list[tuple[int, int, Problem]] = []
    rows: list[dict[str, Any]] = []
    for k, src in enumerate(sources):
        if isinstance(src, pd.DataFrame):
            records = enumerate(src.to_dict(orient="records"), start=1)
            path = None
            read_problems: list[Problem] = []
        else:
            path = os.fspath(src)
            read_problems = []
            records = list(iter_jsonl(path, read_problems))
        for line, obj in records:
            row, problem = _parse_row(obj, line, path, all_fields)
            if problem is not None:
                found.append((k, line, problem))
            else:
                row["_src"] = k
                rows.append(row)
        found.extend((k, p.line or 0, p) for p in read_problems)
    cols = JUDGMENT_COLUMNS[:10]
    extra = list(dict.fromkeys(c for r in rows for c in r if c not in cols and c != "_src")) if all_fields else []
    frame = pd.DataFrame(rows, columns=[*cols, *extra, "_src"])
    frame["repeat"] = frame["repeat"].astype("int64")
    frame["line"] = frame["line"].astype("int64")
    dup = frame.duplicated(["turn_id", "dimension", "repeat"], keep="first")
    d = frame[dup]
    for k, line, path, item, dim, rep in zip(d["_src"], d["line"], d["path"], d["turn_id"], d["dimension"],
                                             d["repeat"], strict=True):
        what = f"dimension {dim!r}" + (f", repeat {rep}" if rep else "")
        found.append((int(k), int(line), Problem(f"duplicate judgment for {what}; the first one is kept",
                                                 line=int(line), path=path, query_id=item, kind="duplicate")))
    frame = frame[~dup].reset_index(drop=True)
    _set_checks(frame, _check_scores(frame, scale))
    for i in np.flatnonzero(frame["problem"].notna().to_numpy()):
        row = frame.iloc[i]
        found.append((int(row["_src"]), int(row["line"]), _score_problem(row)))
    if not keep_invalid:
        frame = frame[frame["valid"]].reset_index(drop=True)
    frame = frame[[*JUDGMENT_COLUMNS, *extra]]
    found.sort(key=lambda t: (t[0], t[1]))  # stable: within a line, in the order found
    return frame, [p for _, _, p in found]


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _id(value: Any) -> str | None:
    """A string or an integer id as a str; None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return str(int(value))
    return None


def _parse_row(obj: dict[str, Any], line: int, path: str | None,
               all_fields: bool) -> tuple[dict[str, Any], Problem | None]:
    """One standard row from a JSON object / DataFrame record, or the problem that leaves it out."""
    if "temporal" in obj and _missing(obj.get("dimension")):  # a TEMPO labels row: its verdict
        verdict = obj.get("temporal")
        sha = obj.get("prompt_sha256")
        obj = {**obj, "dimension": "temporal_relevance", "score": verdict,
               "prompt_sha256": sha.get("temporal_relevance") if isinstance(sha, dict) else sha,
               "error": None if not _missing(verdict) else (obj.get("error") or "no temporal verdict")}
    qid = None
    if not _missing(obj.get("turn_id")):
        item, fields = _id(obj["turn_id"]), ("turn_id",)
    elif not _missing(obj.get("query_id")) and not _missing(obj.get("doc_id")):
        fields = ("query_id", "doc_id") + (("period",) if not _missing(obj.get("period")) else ())
        parts = [_id(obj[f]) for f in fields]
        item = None if None in parts else " ".join(parts)  # type: ignore[arg-type]
        qid = _id(obj["query_id"])
    else:
        item, fields = None, ()
    dim = obj.get("dimension")
    if not fields or _missing(dim):
        return {}, Problem("a judgment needs 'turn_id' (or 'query_id' and 'doc_id') and 'dimension'; row left out",
                           line=line, path=path, query_id=_id(obj.get("turn_id")) or qid, kind="field")
    if item is None:
        bad = next(f for f in fields if _id(obj[f]) is None)
        return {}, Problem(f"{bad!r} {obj[bad]!r} is not a string or an integer; row left out", line=line,
                           path=path, query_id=qid, kind="field")
    if not isinstance(dim, str) or not dim.strip():
        return {}, Problem(f"'dimension' {dim!r} is not a name; row left out", line=line, path=path, query_id=item,
                           kind="field")
    repeat = _repeat(obj.get("repeat"))
    if repeat is None:
        return {}, Problem(f"'repeat' {obj.get('repeat')!r} is not a non-negative integer; row left out", line=line,
                           path=path, query_id=item, kind="field")
    row = {**obj} if all_fields else {}
    row.update({f: obj.get(f) for f in _FIELDS})
    row.update({"turn_id": item, "dimension": canonical(dim), "repeat": repeat, "line": line, "path": path})
    return row, None


def _repeat(value: Any) -> int | None:
    if _missing(value):
        return 0
    number = _number(value)
    if number is None or number < 0 or number != math.floor(number):
        return None
    return int(number)


def _number(value: Any) -> float | None:
    """A finite number (numeric strings included; booleans are not numbers), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, (int, np.integer)):
        return float(value) if abs(value) < 2 ** 53 else None
    if isinstance(value, (float, np.floating)) and math.isfinite(value):
        return float(value)
    return None


def int_score(value: Any) -> int | None:
    """An integer score, or None when the value is not an integer."""
    number = _number(value)
    return int(number) if number is not None and number == math.floor(number) else None


def _bounds(dimension: str, scale: ScaleArg) -> tuple[int, int] | None:
    """(low, high) of a dimension: the forced ``scale``, else the dimension's own, else None."""
    if isinstance(scale, tuple):
        low, high = int(scale[0]), int(scale[1])
        if high <= low:
            raise ValueError(f"a scale needs low < high, not {scale!r}")
        return low, high
    if scale is not None:
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r}; choose one of {sorted(SCALES)}")
        return SCALES[scale]
    name = DIM_SCALE.get(dimension)
    return SCALES[name] if name else None


def _check_scores(frame: pd.DataFrame, scale: ScaleArg) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """Per row: valid, normalised value (NaN when invalid or without scale), problem message or None."""
    n = len(frame)
    valid = np.zeros(n, dtype=bool)
    values = np.full(n, np.nan)
    messages: list[str | None] = [None] * n
    bounds = {d: _bounds(d, scale) for d in dict.fromkeys(frame["dimension"].tolist())}
    errors = frame["error"].tolist() if "error" in frame else [None] * n
    stated = frame["normalized"].tolist() if "normalized" in frame else [None] * n
    for i, (dim, raw, err, norm_field) in enumerate(zip(frame["dimension"].tolist(), frame["score"].tolist(), errors,
                                                        stated, strict=True)):
        if not _missing(err) and str(err) != "":
            continue  # an invalid judgment the harness recorded: not a problem of the file
        b = bounds[dim]
        score = int_score(raw)
        where = f" in {b[0]}-{b[1]}" if b else ""
        if score is None or (b is not None and not b[0] <= score <= b[1]):
            messages[i] = f"{dim}: score {raw!r} is not an integer{where}; the judgment is invalid"
            continue
        if b is None:
            valid[i] = True
            continue
        value = (score - b[0]) / (b[1] - b[0])
        given = _number(norm_field)
        if given is not None and abs(given - value) > 1e-9:
            messages[i] = (f"{dim}: 'normalized' {norm_field!r} disagrees with score {raw!r} on the {b[0]}-{b[1]} "
                           "scale; the judgment is invalid")
            continue
        valid[i] = True
        values[i] = value
    return valid, values, messages


def _set_checks(frame: pd.DataFrame, checked: tuple[np.ndarray, np.ndarray, list[str | None]]) -> None:
    frame["valid"] = checked[0]
    frame["value"] = checked[1]
    frame["problem"] = pd.Series(checked[2], index=frame.index, dtype=object)  # None, not NaN, when no problem


def _score_problem(row: pd.Series) -> Problem:
    return Problem(str(row["problem"]), line=_int_or_none(row.get("line")), path=row.get("path"),
                   query_id=row["turn_id"], kind="score")


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)
    except (TypeError, ValueError):
        return None


def scale_for(dimension: str, scale: str | None) -> tuple[int, int]:
    name = scale or DIM_SCALE.get(dimension)
    if name is None:
        raise ValueError(f"unknown dimension {dimension!r}: give scale='reteco' or 'ikat'")
    if name not in SCALES:
        raise ValueError(f"unknown scale {name!r}; choose one of {sorted(SCALES)}")
    return SCALES[name]


def normalize_scores(frame: pd.DataFrame, scale: str | None = None) -> tuple[pd.DataFrame, list[Problem]]:
    """Set the ``valid`` (bool), ``value`` (normalised score, NaN when invalid) and ``problem``
    columns of judgment rows by the rules of `read_judgments`, on ``scale`` (default: each
    dimension's own; a dimension without a known scale is an error here).

    `read_judgments` already does this; call it to check rows from elsewhere or again on
    another scale. A row whose ``problem`` column already holds a message was reported by its
    reader and is not reported again.
    """
    frame = frame.copy()
    for dim in dict.fromkeys(frame["dimension"].tolist()):
        scale_for(dim, scale)
    before = frame["problem"].tolist() if "problem" in frame else [None] * len(frame)
    for col in ("error", "normalized", "line", "path", "turn_id"):
        if col not in frame:
            frame[col] = None
    _set_checks(frame, _check_scores(frame, scale))
    problems = [_score_problem(frame.iloc[i]) for i in range(len(frame))
                if not _missing(frame["problem"].iat[i]) and _missing(before[i])]
    return frame, problems


#: how repeated judgments of one item are combined; ``mean`` is the default
AGGREGATES = ("mean", "median", "mode")


def collapse_repeats(frame: pd.DataFrame, how: str = "mean") -> pd.DataFrame:
    """One row per (``turn_id``, ``dimension``) from rows with ``valid`` and ``value`` columns and
    any number of repeats.

    ``value`` combines the valid repeats: ``mean`` (the default: the expected score of the judge),
    ``median`` (the middle value; the mean of the two middle values for an even count) or ``mode``
    (the most frequent value; the lowest of tied values). ``valid`` is True when at least one
    repeat is valid; ``n_repeats`` and ``n_valid_repeats`` count them.
    """
    if how not in AGGREGATES:
        raise ValueError(f"--aggregate must be one of {', '.join(AGGREGATES)}, not {how!r}")
    keys = ["turn_id", "dimension"]
    f = frame[[*keys, "valid", "value"]].copy()
    f["value"] = f["value"].where(f["valid"]).astype("float64")
    g = f.groupby(keys, sort=False)
    out = pd.DataFrame({"n_repeats": g.size(), "n_valid_repeats": g["valid"].sum().astype(int)})
    if how == "mean":
        out["value"] = g["value"].mean()
    elif how == "median":
        out["value"] = g["value"].median()
    else:
        counts = f.dropna(subset=["value"]).groupby([*keys, "value"], sort=False).size().rename("c").reset_index()
        counts = counts.sort_values(["c", "value"], ascending=[False, True], kind="stable")
        top = counts.drop_duplicates(keys, keep="first").set_index(keys)["value"]
        out["value"] = top.reindex(out.index)
    out["valid"] = out["n_valid_repeats"] > 0
    return out.reset_index()


# ------------------------------------------------------------------------------------------------
# target items


def text_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(line number, stripped text) of the non-blank lines of a UTF-8 file (a BOM is dropped);
    an undecodable line raises ValueError naming the file and line."""
    with open(path, "rb") as f:
        for i, raw in enumerate(f, start=1):
            try:
                s = raw.decode("utf-8-sig" if i == 1 else "utf-8").strip()
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{i}: not valid UTF-8 ({exc.reason})") from None
            if s:
                yield i, s


def read_targets(path: str | os.PathLike) -> list[str]:
    """Target turn ids from JSONL (``turn_id``/``query_id``/``id``), TREC qrels or one id per line,
    in first-seen order.

    Raises:
        ValueError: naming the file and line of an undecodable or malformed line.
    """
    seen: dict[str, None] = {}
    for i, s in text_lines(path):
        if s.startswith("{"):
            try:
                obj = json.loads(s)
            except (ValueError, RecursionError):
                raise ValueError(f"{path}:{i}: a line starting with '{{' is not valid JSON") from None
            tid = next((str(obj[k]) for k in ("turn_id", "query_id", "id") if isinstance(obj, dict)
                        and isinstance(obj.get(k), (str, int)) and not isinstance(obj.get(k), bool) and str(obj[k]) != ""),
                       None)
            if tid is None:
                raise ValueError(f"{path}:{i}: a JSON line has no turn_id/query_id/id")
        else:
            tid = s.split()[0]
        seen.setdefault(tid, None)
    return list(seen)
