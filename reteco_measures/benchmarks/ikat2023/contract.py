"""The ``ikat`` run contract: TREC iKAT 2023 run JSON → passage run + PTKB ranking.

A run is one JSON object::

    {"run_name": str, "run_type": "automatic" | "manual",
     "turns": [{"turn_id": "9-1_3",
                "responses": [{"rank": 1, "text": str,
                               "passage_provenance": [{"id", "text", "score", "used"}],
                               "ptkb_provenance": [{"id", "text", "score"}]}]}]}

Each problem names the turn and the field (``run.json:57: 9-1_3:
responses[0].passage_provenance[4].score: ...``; the line is the line of the turn's ``turn_id``)
and carries the severity the organisers' 2023 run validator (iKAT repository,
``2023/scripts/run_validation``: ``main.py``, ``utils.py`` and the run schema ``run.proto`` it
parses the JSON into) gives it:

* ``error`` — the organisers' validator stops with exit status 255: not JSON; no ``run_name``,
  ``run_type`` or ``turns`` key; a field the schema does not have (at any level); a value of the
  wrong JSON type (a string field given a number, ``used`` given a string, a non-integral
  ``rank``, a PTKB id given as a number); a NaN or infinite score or one beyond single precision;
  a turn id that is not ``<topic>_<n>``; with the topics: a turn that is not a topic turn and a
  missing turn (the organisers find both only through counts: the run's number of turns, of
  topics and of turns per topic, and each turn number's range), a PTKB id that is empty or not in
  the conversation's PTKB, a PTKB
  ``text`` that differs from the statement (exact comparison; a missing text is empty); a
  ``rank`` outside the schema's 32-bit range; more warnings than ``max_warnings`` (the
  validator's default 2000), counted as it counts them (below); and, for the ``'organisers'``
  conversion, a response ``rank`` of -1 (its division by rank + 1 fails). Two errors are ours
  alone, as the organisers' validator does not stop on them: a run with no turn (it logs an
  error, validates nothing and exits with status 0), and a repeated turn (it sees turns only
  through the number of turns per topic and the turn-number range, so a repeated turn is caught
  only when it changes those counts). ``report.valid`` is False iff there is an error.
* ``warning`` — the organisers' validator warns: empty ``run_name``; an empty ``run_type`` (two
  warnings: empty, and not ``automatic``/``manual``); a ``run_type`` other than ``automatic`` or
  ``manual`` (``only_response`` is a 2024 type); a response ``rank`` of 0 or missing (two
  warnings: their rank-0 check and their check of every rank against 0) or negative (one); an empty
  ``text``; a response without passages, with more than 1000, or with none marked ``used``; a
  passage id without the ``clueweb22-`` prefix or without exactly one ``:``; a score greater than
  the previous one in a provenance list; a missing or empty ``ptkb_provenance``; a passage that
  is not in ``corpus`` (when given; it is discarded).
* ``note`` — checks only we make (nothing is lost): response ranks that do not increase (the
  organisers' check compares every rank with 0 only), a passage id that has the prefix and one
  colon but no passage number, a score or rank written as a string or a boolean (read as the
  organisers' parser reads it), a missing score (read as 0, the schema's default), a
  lowerCamelCase field name (``turnId``; accepted by the parser), a turn without responses.

Conversion (``passage_score``):

* ``'organisers'`` (default) — what the organisers' ``generate_run.py`` does (the version
  published with the iKAT run validator, which normalises provenance scores): the turn's
  responses *in file order*, each response's ``passage_provenance`` in listed order, the first
  occurrence of a passage wins (later ones, and their scores, are dropped); its score is the
  submitted score (read into single precision) times ``1 / (response rank + 1)``, rounded to
  single precision. trec_eval then orders the passages: score descending (single precision),
  ties by passage id descending. Example: response 1 lists p1 = 10, p2 = 9, response 2 lists
  p3 = 14 → 5, 4.5, 4.667 → p1, p3, p2.
* ``'position'`` — responses in ascending ``rank`` (file order among equal ranks), passages in
  listed order, first occurrence wins; the TREC score is 1/position, so the converted order is
  exactly that order.
* ``'provenance'`` — as ``'position'``, but each passage keeps the submitted score of its first
  occurrence (trec_eval then orders by those scores, ties by passage id).

All passages count, ``used`` or not. Passages without a usable id (or, for the score-based modes,
without a usable score) cannot be ranked and are left out. The **PTKB ranking**
(``report.extra["ptkb_run"]``) applies the ``'position'`` rule to the ``ptkb_provenance``
statement ids. ``report.extra`` also holds ``run_name``, ``run_type``, ``passage_score`` and
``responses`` (one row per response: ``query_id, rank, text, used_passages``), for generation
judging.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ...contracts.base import ValidationReport, contract, id_frame, with_severity
from ...datasets.base import TOPICS_FACTORIES
from ...errors import DataFormatError, Problem, Severity
from ...io.jsonl import JSONTextError, loads, read_json_document
from ...io.lines import is_inline_text, read_source_bytes
from ...kernels.ranking import group_rank, row_ranks

__all__ = ["validate_ikat", "convert_ikat_run", "MAX_PASSAGES_PER_RESPONSE", "PASSAGE_ID_PATTERN", "PASSAGE_SCORES",
           "ORGANISERS_MAX_WARNINGS"]

#: the organisers' validator warns above this many passages per response
MAX_PASSAGES_PER_RESPONSE = 1000
#: ClueWeb22 passage ids: ``clueweb22-<doc id>:<passage number>`` (a single colon)
PASSAGE_ID_PATTERN = re.compile(r"^clueweb22-[^:\s]+:\d+$")
#: run types the organisers' 2023 validator accepts without a warning (``only_response`` came with
#: the 2024 validator; the 2023 one warns on it)
RUN_TYPES = ("automatic", "manual")
#: the range of the run schema's ``int32`` rank; the organisers' parser refuses a rank outside it
_INT32 = (-(2**31), 2**31 - 1)
#: the organisers' validator aborts (exit 255) above this many warnings (its ``--max_warnings`` default)
ORGANISERS_MAX_WARNINGS = 2000
#: the largest finite single-precision float: the run schema stores scores as ``float``
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: the organisers' validator starts each descending-score check from this "previous" score
_ORGANISERS_FIRST_PREVIOUS = 1e9
#: a turn id the organisers' validator can split: ``<topic>_<turn number>``
_TURN_ID = re.compile(r"^[^_]+_[+-]?\d+$")

PassageScore = Literal["organisers", "position", "provenance"]
PASSAGE_SCORES: tuple[str, ...] = ("organisers", "position", "provenance")

#: the fields of the organisers' run schema (its protocol-buffer messages), by level
_FIELDS: dict[str, tuple[str, ...]] = {
    "run": ("run_name", "run_type", "turns"),
    "turn": ("turn_id", "responses"),
    "response": ("text", "rank", "passage_provenance", "ptkb_provenance"),
    "passage": ("id", "text", "score", "used"),
    "ptkb": ("id", "text", "score"),
}
#: the lowerCamelCase spellings the organisers' JSON parser also accepts
_CAMEL = {"turnId": "turn_id", "passageProvenance": "passage_provenance", "ptkbProvenance": "ptkb_provenance",
          "runName": "run_name", "runType": "run_type"}


def _load_json(run: Any) -> tuple[Any, str | None, str, Problem | None]:
    """(parsed object, path, raw text, problem). ``run`` may be a path, JSON text, bytes or a dict."""
    if isinstance(run, (dict, list)):
        return run, None, "", None
    path: str | None = None
    if isinstance(run, bytes):
        text = run.decode("utf-8-sig", errors="replace")
    elif isinstance(run, str) and (is_inline_text(run) or run.lstrip().startswith(("{", "["))):
        text = run
    elif isinstance(run, (str, os.PathLike)):
        path = os.fspath(run)
        # a missing file or a folder: FileNotFoundError; .gz / .bz2 / .xz read transparently
        text = read_source_bytes(path).decode("utf-8-sig", errors="replace")
    elif hasattr(run, "read"):
        data = run.read()
        text = data.decode("utf-8-sig", errors="replace") if isinstance(data, bytes) else data
        path = getattr(run, "name", None) if isinstance(getattr(run, "name", None), str) else None
    else:
        raise TypeError(f"an iKAT run is a path, JSON text or a dict, not {type(run).__name__}")
    try:  # every JSON failure (deep nesting, a 5000-digit number included) is one problem
        return loads(text), path, text, None
    except JSONTextError as exc:
        return None, path, text, Problem(str(exc), line=exc.lineno, path=path, kind="format")


def _turn_lines(text: str, n_turns: int) -> list[int | None]:
    """Line of each turn's ``"turn_id"`` key (matched in file order), when they can be located."""
    if not text:
        return [None] * n_turns
    starts = [m.start() for m in re.finditer(r'"turn_id"\s*:', text)]
    if len(starts) != n_turns:
        return [None] * n_turns
    result, line, previous = [], 1, 0
    for start in starts:
        line += text.count("\n", previous, start)
        previous = start
        result.append(line)
    return result


def _topic_tables(queries: Any) -> tuple[set[str] | None, dict[str, dict[str, str]] | None]:
    """Known turn ids and ``{conversation_id: {statement_id: statement}}`` from ``queries``.

    ``queries``: None; a registered dataset name (``'ikat/2023/test'``); a path to an iKAT topics
    JSON file; a DataFrame with ``query_id`` (+ ``ptkb`` dicts, + ``conversation_id``); or ids.
    """
    if queries is None:
        return None, None
    if isinstance(queries, (str, os.PathLike)):
        if isinstance(queries, str) and queries in TOPICS_FACTORIES:
            queries = TOPICS_FACTORIES[queries]()
        else:
            try:
                data = read_json_document(queries)
            except JSONTextError as exc:
                raise DataFormatError([Problem(f"topics: {exc}", line=exc.lineno, path=os.fspath(queries))]) from None
            if not isinstance(data, list) or not all(
                isinstance(c, dict) and "number" in c and isinstance(c.get("turns", []), list)
                and all(isinstance(t, dict) and "turn_id" in t for t in c.get("turns", [])) for c in data
            ):
                raise DataFormatError([Problem("topics: expected a list of conversations, each with a 'number' "
                                               "and 'turns' objects with a 'turn_id'", path=os.fspath(queries))])
            rows = [
                {
                    "query_id": f"{c['number']}_{t['turn_id']}",
                    "conversation_id": str(c["number"]),
                    "ptkb": {str(k): str(v) for k, v in (c.get("ptkb") or {}).items()},
                }
                for c in data
                for t in c.get("turns", [])
            ]
            queries = pd.DataFrame(rows, columns=["query_id", "conversation_id", "ptkb"])
    if isinstance(queries, pd.DataFrame):
        frame = id_frame(queries, "query_id")
        known = set(frame["query_id"].tolist())
        if "ptkb" not in frame.columns:
            return known, None
        conv = (
            frame["conversation_id"].astype(str)
            if "conversation_id" in frame.columns
            else frame["query_id"].str.rsplit("_", n=1).str[0]
        )
        ptkb: dict[str, dict[str, str]] = {}
        for c, statements in zip(conv.tolist(), frame["ptkb"].tolist(), strict=True):
            if isinstance(statements, dict) and c not in ptkb:
                ptkb[c] = {str(k): str(v) for k, v in statements.items()}
        return known, ptkb
    frame = id_frame(queries, "query_id")
    return set(frame["query_id"].tolist()), None


class _Collector:
    """Accumulates problems with a fixed path; counts warnings as the organisers' validator does."""

    def __init__(self, path: str | None):
        self.path = path
        self.problems: list[Problem] = []

    def add(
        self,
        message: str,
        severity: Severity,
        *,
        line: int | None = None,
        turn: str | None = None,
        kind: str = "field",
        doc_id: str | None = None,
        count: int = 1,
    ) -> None:
        self.problems.append(
            Problem(message, line=line, query_id=turn, path=self.path, kind=kind, doc_id=doc_id, severity=severity,
                    count=count)
        )

    def warnings(self) -> int:
        return sum(p.severity == "warning" for p in self.problems)


def _fields(obj: dict, level: str, where: str, out: _Collector, line: int | None, turn: str | None) -> dict:
    """``obj`` with lowerCamelCase field names read as the schema's names (the organisers' JSON
    parser accepts both: a note); a field the schema does not have is an error."""
    known = _FIELDS[level]
    result: dict[str, Any] = {}
    for key, value in obj.items():
        name = _CAMEL.get(key, key) if level != "run" else key
        if name not in known:
            out.add(f"{where}{key}: not a field of the iKAT run schema (fields: {', '.join(known)})", "error",
                    line=line, turn=turn, kind="unknown_field")
            continue
        if name != key:
            out.add(f"{where}{key}: read as {name!r} (the schema's name)", "note", line=line, turn=turn)
            if name in obj:
                continue  # the schema's own spelling wins
        result[name] = value
    return result


def _string(value: Any, field: str, out: _Collector, line: int | None, turn: str | None) -> str | None:
    """A string field: null reads as '' (the schema's default); another type is an error (None)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    out.add(f"{field}: must be a string (found {value!r})", "error", line=line, turn=turn)
    return None


def _rank_value(value: Any, field: str, out: _Collector, line: int | None, turn: str | None) -> int | None:
    """An integer field as the organisers' parser reads it: null → 0; an integral number or a
    numeric string within the schema's ``int32`` range is accepted; a fraction, a boolean, a
    number outside that range or another type is an error (None)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        out.add(f"{field}: must be an integer (found {value!r})", "error", line=line, turn=turn)
        return None
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip() == value:
        try:
            number = int(value)
        except ValueError:
            pass
    if number is None:
        out.add(f"{field}: must be an integer (found {value!r})", "error", line=line, turn=turn)
        return None
    if not _INT32[0] <= number <= _INT32[1]:
        out.add(f"{field}: {value!r} is outside the run schema's 32-bit integer range", "error", line=line,
                turn=turn)
        return None
    if isinstance(value, str):
        out.add(f"{field}: {value!r} is a string; read as {number}", "note", line=line, turn=turn)
    return number


#: the strings protobuf's JSON format uses for non-finite floats (accepted by its parser)
_PROTOBUF_SPECIAL_FLOATS = ("NaN", "Infinity", "-Infinity")


def _score_value(
    value: Any, present: bool, field: str, out: _Collector, line: int | None, turn: str | None, doc: str | None
) -> float | None:
    """A score as the organisers' parser reads it (the schema stores it in single precision;
    comparisons and the ``'organisers'`` conversion round it so): missing/null → 0.0 (a note); numbers, booleans and numeric strings are read
    (strings and booleans with a note); NaN, infinities, values beyond single precision and other
    strings are errors (None)."""
    if value is None:
        out.add(f"{field}: {'null' if present else 'missing'}; read as 0 (the schema's default)", "note",
                line=line, turn=turn, kind="score", doc_id=doc)
        return 0.0
    number: float | None = None
    if isinstance(value, bool):
        number = float(value)
        out.add(f"{field}: {value!r} is a boolean; read as {number}", "note", line=line, turn=turn, kind="score",
                doc_id=doc)
    elif isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range
            number = math.inf if value > 0 else -math.inf
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
        else:
            if math.isfinite(number):
                out.add(f"{field}: {value!r} is a string; read as {number!r}", "note", line=line, turn=turn,
                        kind="score", doc_id=doc)
    if isinstance(value, str) and number is not None and value.strip() in _PROTOBUF_SPECIAL_FLOATS:
        # protobuf's JSON format writes NaN and the infinities as these strings and the organisers'
        # validator (which parses the run with protobuf) accepts them; a NaN has no place in a
        # ranking (trec_eval's sort is undefined on it) and an infinity ties every other one, so
        # we refuse them - our check alone, said in the message
        out.add(f"{field}: {value!r} is protobuf's JSON spelling of a non-finite float; the organisers' validator "
                "accepts it, reteco-measures refuses it (a ranking needs finite scores)", "error", line=line,
                turn=turn, kind="score", doc_id=doc)
        return None
    if number is None or not math.isfinite(number) or abs(number) > FLOAT32_MAX:
        why = "beyond single precision" if number is not None and math.isfinite(number) else "not a finite number"
        out.add(f"{field}: {value!r} is {why}", "error", line=line, turn=turn, kind="score", doc_id=doc)
        return None
    return number


def convert_ikat_run(
    run: Any,
    *,
    queries: Any = None,
    corpus: Any = None,
    passage_score: PassageScore = "organisers",
    max_warnings: int | None = ORGANISERS_MAX_WARNINGS,
) -> ValidationReport:
    """Validate an iKAT 2023 run JSON and convert it (see the module docs for every rule).

    Args:
        run: path of the run JSON, its text, bytes, a file object or the parsed dict.
        queries: the topics (dataset name such as ``'ikat/2023/test'``, topics JSON path or
            DataFrame with ``query_id`` and ``ptkb``) for turn-id and PTKB checks; None skips them.
        corpus: passage ids; when given, passages outside it are discarded and reported.
        passage_score: ``'organisers'`` (default: the organisers' ``generate_run.py`` rule, each
            passage scored provenance score / (response rank + 1) in single precision, ordered as
            trec_eval orders it), ``'position'`` (1/position, responses in rank order) or
            ``'provenance'`` (the submitted scores).
        max_warnings: the organisers' validator aborts above this many warnings (its default,
            2000); more warnings than that add an error. None disables the check.

    Returns:
        `ValidationReport` with ``run`` = the passage run (``query_id, doc_id, score, rank,
        line``) and ``extra["ptkb_run"]`` = the PTKB ranking (``query_id, doc_id, score, rank``).
        Every problem has a ``severity`` (module docs); ``report.valid`` is False iff one is an
        ``error``.
    """
    if passage_score not in PASSAGE_SCORES:
        raise ValueError(f"passage_score must be one of {PASSAGE_SCORES}, not {passage_score!r}")
    data, path, text, problem = _load_json(run)
    out = _Collector(path)
    empty = _empty_run()
    extra: dict[str, Any] = {
        "passage_score": passage_score,
        "ptkb_run": empty.drop(columns="line"),
        "responses": pd.DataFrame(columns=["query_id", "rank", "text", "used_passages"]),
    }
    if problem is not None:
        return ValidationReport("ikat", with_severity([problem], "error"), empty, extra=extra)
    if not isinstance(data, dict):
        out.add("the run must be a JSON object with run_name, run_type and turns", "error", kind="format")
        return ValidationReport("ikat", out.problems, empty, extra=extra)
    data = _read_run_fields(data, out, extra)
    turns = _turn_list(data, out)
    if turns is None:
        return ValidationReport("ikat", out.problems, empty, extra=extra)

    known, ptkb = _topic_tables(queries)
    known_docs = id_frame(corpus, "doc_id")
    walk = _Walk(out, known, ptkb, passage_score)
    for t_index, (turn, line) in enumerate(zip(turns, _turn_lines(text, len(turns)), strict=True)):
        _read_turn(walk, t_index, turn, line)

    passage_run = _convert(walk.p_turn, walk.p_doc, walk.p_score, walk.p_line, walk.p_resp, walk.p_pos,
                           passage_score)
    if known_docs is not None:
        passage_run = _discard_unknown_passages(passage_run, set(known_docs["doc_id"].tolist()), out, passage_score)
    ptkb_run = _convert(walk.k_turn, walk.k_doc, [0.0] * len(walk.k_doc), [0] * len(walk.k_doc), walk.k_resp,
                        walk.k_pos, "position")
    missing = _missing_turns(known, walk.seen_turns, out)
    if max_warnings is not None:
        _check_warning_count(out, list(walk.seen_turns), max_warnings)
    extra["ptkb_run"] = ptkb_run.drop(columns="line")
    extra["responses"] = pd.DataFrame(walk.resp_rows, columns=["query_id", "rank", "text", "used_passages"])
    return ValidationReport("ikat", out.problems, passage_run, missing_queries=missing, extra=extra)


@dataclass
class _Walk:
    """One walk over a run's turns: what it checks against, where problems go, and the flat
    records it collects (passages ``p_*``, PTKB statements ``k_*``, responses, turns seen)."""

    out: _Collector
    known: set[str] | None
    ptkb: dict[str, dict[str, str]] | None
    passage_score: str
    p_turn: list[str] = field(default_factory=list)
    p_doc: list[str] = field(default_factory=list)
    p_score: list[float] = field(default_factory=list)
    p_line: list[int] = field(default_factory=list)
    p_resp: list[tuple] = field(default_factory=list)
    p_pos: list[int] = field(default_factory=list)
    k_turn: list[str] = field(default_factory=list)
    k_doc: list[str] = field(default_factory=list)
    k_resp: list[tuple] = field(default_factory=list)
    k_pos: list[int] = field(default_factory=list)
    resp_rows: list[dict[str, Any]] = field(default_factory=list)
    seen_turns: dict[str, int] = field(default_factory=dict)


def _read_run_fields(data: dict, out: _Collector, extra: dict[str, Any]) -> dict:
    """The run level: required keys, field names, ``run_name`` and ``run_type`` (into ``extra``);
    returns the run object with the schema's field names."""
    for key in ("run_name", "run_type", "turns"):
        if key not in data:
            out.add(f"{key}: missing (the run must have run_name, run_type and turns)", "error", kind="format")
    data = _fields(data, "run", "", out, None, None)
    run_name = _string(data.get("run_name"), "run_name", out, None, None)
    run_type = _string(data.get("run_type"), "run_type", out, None, None)
    extra.update(run_name=run_name, run_type=run_type)
    if "run_name" in data and run_name == "":
        out.add("run_name: empty", "warning")
    if "run_type" in data and run_type is not None:
        # the organisers warn twice on an empty type (empty, then not automatic/manual)
        if run_type == "":
            out.add("run_type: empty", "warning")
        if run_type not in RUN_TYPES:
            later = " (a 2024 run type; the 2023 validator warns on it)" if run_type == "only_response" else ""
            out.add(f"run_type: must be 'automatic' or 'manual' (found {run_type!r}){later}", "warning")
    return data


def _turn_list(data: dict, out: _Collector) -> list | None:
    """The run's ``turns`` (null reads as none); None when it is not a list (an error)."""
    turns = data.get("turns")
    if turns is None:
        turns = []
    if not isinstance(turns, list):
        out.add(f"turns: must be a list of turns (found {type(turns).__name__})", "error", kind="format")
        return None
    if not turns and "turns" in data:
        out.add("turns: the run has no turn", "error", kind="format")
    return turns


def _read_turn(walk: _Walk, t_index: int, turn: Any, line: int | None) -> None:
    """One turn: its id (form, topics, repetition), then each of its responses."""
    out = walk.out
    if not isinstance(turn, dict):
        out.add(f"turns[{t_index}]: must be an object", "error", line=line, kind="format")
        return
    turn = _fields(turn, "turn", f"turns[{t_index}].", out, line, None)
    tid = _string(turn.get("turn_id"), f"turns[{t_index}].turn_id", out, line, None)
    if tid is None:
        return
    if not _TURN_ID.match(tid):
        out.add(f"turns[{t_index}].turn_id: {tid!r} is not '<topic>_<turn number>'; turn skipped", "error",
                line=line, turn=tid or None)
        return
    if walk.known is not None and tid not in walk.known:
        out.add("turn_id: not a turn of the topics; turn skipped", "error", line=line, turn=tid,
                kind="unknown_query")
        return
    if tid in walk.seen_turns:
        out.add(f"turn_id: repeated (first at turns[{walk.seen_turns[tid]}]); this copy skipped", "error",
                line=line, turn=tid, kind="duplicate")
        return
    walk.seen_turns[tid] = t_index
    conv_id = tid.rsplit("_", 1)[0]
    statements = walk.ptkb.get(conv_id) if walk.ptkb is not None else None
    responses = turn.get("responses")
    if responses is None:
        responses = []
    if not isinstance(responses, list):
        out.add("responses: must be a list", "error", line=line, turn=tid)
        return
    if not responses:
        out.add("responses: none; the turn has no passage and scores 0", "note", line=line, turn=tid)
        return
    previous_rank = 0
    for r_index, resp in enumerate(responses):
        previous_rank = _read_response(walk, r_index, resp, tid, line, statements, previous_rank)


def _response_rank(walk: _Walk, resp: dict, where: str, tid: str, line: int | None,
                   previous_rank: int) -> tuple[int | None, int]:
    """A response's rank and the organisers' rank checks; returns (rank, the largest rank so far)."""
    out = walk.out
    rank = _rank_value(resp.get("rank"), f"{where}.rank", out, line, tid)
    # the organisers' two rank checks: rank == 0, then rank <= the previous rank, which
    # their validator never updates from 0 (a rank of 0 is two warnings, a negative one one)
    if rank == 0:
        out.add(f"{where}.rank: missing or 0", "warning", line=line, turn=tid, kind="order")
    if rank is not None and rank <= 0:
        out.add(f"{where}.rank: {rank} is not greater than 0 (the organisers' validator compares "
                "every rank with 0)", "warning", line=line, turn=tid, kind="order")
    elif rank is not None and rank <= previous_rank:
        out.add(f"{where}.rank: {rank} does not increase (previous {previous_rank})", "note", line=line,
                turn=tid, kind="order")
    if rank is not None:
        previous_rank = max(previous_rank, rank)
    if walk.passage_score == "organisers" and rank == -1:
        out.add(f"{where}.rank: -1 makes the organisers' conversion divide by rank + 1 = 0", "error",
                line=line, turn=tid)
    return rank, previous_rank


def _read_response(walk: _Walk, r_index: int, resp: Any, tid: str, line: int | None,
                   statements: dict[str, str] | None, previous_rank: int) -> int:
    """One response: rank, text, passages, PTKB statements; returns the largest rank so far."""
    out = walk.out
    where = f"responses[{r_index}]"
    if not isinstance(resp, dict):
        out.add(f"{where}: must be an object; skipped", "error", line=line, turn=tid)
        return previous_rank
    resp = _fields(resp, "response", f"{where}.", out, line, tid)
    rank, previous_rank = _response_rank(walk, resp, where, tid, line, previous_rank)
    rank_key = float(rank) if rank is not None and rank > 0 else float("inf")
    text_value = _string(resp.get("text"), f"{where}.text", out, line, tid)
    if text_value == "":
        out.add(f"{where}.text: empty", "warning", line=line, turn=tid)
    passages = resp.get("passage_provenance")
    passages = [] if passages is None else passages
    if not isinstance(passages, list):
        out.add(f"{where}.passage_provenance: must be a list", "error", line=line, turn=tid)
        passages = []
    used = _read_passages(walk, passages, where, tid, line,
                          (rank_key, r_index, float(rank) if rank is not None else 0.0))
    if not used:
        out.add(f"{where}.passage_provenance: no passage is marked used", "warning", line=line, turn=tid)
    if not passages:
        out.add(f"{where}.passage_provenance: empty (the response has no passages)", "warning",
                line=line, turn=tid)
    elif len(passages) > MAX_PASSAGES_PER_RESPONSE:
        out.add(f"{where}.passage_provenance: {len(passages)} entries (more than "
                f"{MAX_PASSAGES_PER_RESPONSE})", "warning", line=line, turn=tid)
    walk.resp_rows.append({"query_id": tid, "rank": rank if rank_key != float("inf") else None,
                           "text": text_value or "", "used_passages": used})
    _check_ptkb(resp.get("ptkb_provenance"), where, tid, line, statements, out, walk.k_turn, walk.k_doc,
                walk.k_resp, walk.k_pos, (rank_key, r_index, 0.0))
    return previous_rank


def _read_passages(walk: _Walk, passages: list, where: str, tid: str, line: int | None,
                   resp_key: tuple[float, int, float]) -> list[str]:
    """A response's passage provenance: each entry checked and, when it can be ranked, recorded
    (``resp_key``: the response's order key); returns the ids marked used."""
    out = walk.out
    score_based = walk.passage_score != "position"
    used: list[str] = []
    previous_score = _ORGANISERS_FIRST_PREVIOUS
    for p_index, entry in enumerate(passages):
        pw = f"{where}.passage_provenance[{p_index}]"
        if not isinstance(entry, dict):
            out.add(f"{pw}: must be an object; skipped", "error", line=line, turn=tid)
            continue
        present = "score" in entry or "score" in {_CAMEL.get(k, k) for k in entry}
        entry = _fields(entry, "passage", f"{pw}.", out, line, tid)
        pid = _string(entry.get("id"), f"{pw}.id", out, line, tid)
        _string(entry.get("text"), f"{pw}.text", out, line, tid)
        if pid is not None:
            _check_passage_id(pid, pw, out, line, tid)
        score = _score_value(entry.get("score"), present, f"{pw}.score", out, line, tid, pid)
        if score is not None:
            if _f32(score) > previous_score:
                out.add(f"{pw}.score: {score!r} is greater than the previous score {previous_score!r}",
                        "warning", line=line, turn=tid, kind="order", doc_id=pid)
            previous_score = _f32(score)
        flag = entry.get("used")
        if flag is not None and not isinstance(flag, bool):
            out.add(f"{pw}.used: must be true or false (found {flag!r})", "error", line=line, turn=tid,
                    doc_id=pid)
        if flag is True and pid:
            used.append(pid)
        if not pid or (score is None and score_based):
            continue  # cannot be ranked
        walk.p_turn.append(tid)
        walk.p_doc.append(pid)
        walk.p_score.append(math.nan if score is None else score)
        walk.p_line.append(line or 0)
        walk.p_resp.append(resp_key)
        walk.p_pos.append(p_index)
    return used


def _discard_unknown_passages(passage_run: pd.DataFrame, known_docs: set[str], out: _Collector,
                              passage_score: str) -> pd.DataFrame:
    """The passage run without passages outside the collection (each reported), renumbered."""
    if not len(passage_run):
        return passage_run
    unknown = ~passage_run["doc_id"].isin(known_docs).to_numpy()
    for row in passage_run[unknown].itertuples(index=False):
        out.add(f"passage {row.doc_id} is not in the collection; discarded", "warning",
                line=int(row.line) or None, turn=row.query_id, kind="unknown_doc", doc_id=row.doc_id)
    return _renumber(passage_run[~unknown], passage_score)


def _missing_turns(known: set[str] | None, seen_turns: dict[str, int], out: _Collector) -> list[str]:
    """Turns of the topics the run does not answer (an error each, or one error naming five)."""
    if known is None:
        return []
    missing = sorted(q for q in known if q not in seen_turns)
    if missing and len(missing) <= 20:
        for q in missing:
            out.add("turn missing from the run (the run must answer every turn of the topics)", "error",
                    turn=q, kind="missing_query")
    elif missing:
        out.add(
            f"{len(missing)} turns of the topics are missing from the run (the run must answer every "
            f"turn), e.g. {', '.join(missing[:5])}",
            "error",
            kind="missing_query",
            count=len(missing),  # one summary standing for every missing turn
        )
    return missing


def _check_warning_count(out: _Collector, turns: list[str], max_warnings: int) -> None:
    """An error where the organisers' validator aborts: it counts the run's warnings first, then
    validates the turns topic by topic (topics in order of first appearance in the run, each
    topic's turns in file order) and stops with exit status 255 after the first turn that brings
    the count above ``max_warnings``. A run with no turn is not validated (no abort)."""
    if not turns:
        return
    position = {tid: i for i, tid in enumerate(turns)}
    topics = list(dict.fromkeys(tid.split("_")[0] for tid in turns))
    topic_rank = {t: i for i, t in enumerate(topics)}
    order = sorted(turns, key=lambda tid: (topic_rank[tid.split("_")[0]], position[tid]))
    turn_of = np.array([p.query_id if p.query_id in position else "" for p in out.problems
                        if p.severity == "warning"], dtype=object)
    if len(turn_of) <= max_warnings:
        return
    run_level = int((turn_of == "").sum())
    per_turn = pd.Series(turn_of[turn_of != ""]).value_counts().reindex(order, fill_value=0).to_numpy()
    running = run_level + np.cumsum(per_turn)
    stop = int(np.argmax(running > max_warnings))
    if running[stop] <= max_warnings:
        return
    out.add(f"{int(running[stop])} warnings after turn {order[stop]}, more than {max_warnings}: the organisers' "
            f"validator aborts there (exit status 255); {len(turn_of)} warnings in the whole run", "error",
            turn=order[stop], kind="too_many")


def _check_passage_id(pid: str, pw: str, out: _Collector, line: int | None, tid: str) -> None:
    """The organisers warn on a missing ``clueweb22-`` prefix and on a colon count other than one;
    our stricter pattern (a passage number after the colon, no whitespace) only adds a note."""
    if not pid.startswith("clueweb22-"):
        out.add(f"{pw}.id: {pid!r} does not start with 'clueweb22-'", "warning", line=line, turn=tid,
                kind="format", doc_id=pid or None)
    if pid.count(":") != 1:
        out.add(f"{pw}.id: {pid!r} does not have exactly one ':' ('clueweb22-<doc>:<n>')", "warning", line=line,
                turn=tid, kind="format", doc_id=pid or None)
    elif pid.startswith("clueweb22-") and not PASSAGE_ID_PATTERN.match(pid):
        out.add(f"{pw}.id: {pid!r} is not of the form 'clueweb22-<doc>:<passage number>'", "note", line=line,
                turn=tid, kind="format", doc_id=pid)


def _check_ptkb(
    entries: Any,
    where: str,
    tid: str,
    line: int | None,
    statements: dict[str, str] | None,
    out: _Collector,
    k_turn: list,
    k_doc: list,
    k_resp: list,
    k_pos: list,
    resp_key: tuple[float, int, float],
) -> None:
    """Check one response's ``ptkb_provenance`` and collect its usable statement ids."""
    field = f"{where}.ptkb_provenance"
    if entries is None or (isinstance(entries, list) and not entries):
        out.add(f"{field}: {'missing or null' if entries is None else 'empty'} (no PTKB statement listed)",
                "warning", line=line, turn=tid)
        return
    if not isinstance(entries, list):
        out.add(f"{field}: must be a list", "error", line=line, turn=tid)
        return
    previous = _ORGANISERS_FIRST_PREVIOUS
    for i, entry in enumerate(entries):
        ew = f"{field}[{i}]"
        if not isinstance(entry, dict):
            out.add(f"{ew}: must be an object; skipped", "error", line=line, turn=tid)
            continue
        present = "score" in entry
        entry = _fields(entry, "ptkb", f"{ew}.", out, line, tid)
        sid = _string(entry.get("id"), f"{ew}.id", out, line, tid)
        given = _string(entry.get("text"), f"{ew}.text", out, line, tid)
        score = _score_value(entry.get("score"), present, f"{ew}.score", out, line, tid, sid)
        if sid is None:
            continue
        if not sid:
            out.add(f"{ew}.id: empty; skipped", "error", line=line, turn=tid)
            continue
        if statements is not None:
            if sid not in statements:
                out.add(
                    f"{ew}.id: {sid!r} is not a statement of this conversation's PTKB "
                    f"(ids {', '.join(sorted(statements, key=_natural))}); skipped",
                    "error", line=line, turn=tid, kind="unknown_doc", doc_id=sid)
                continue
            if given is not None and given != statements[sid]:
                out.add(f"{ew}.text: does not match PTKB statement {sid} exactly", "error", line=line, turn=tid,
                        doc_id=sid)
        if score is not None:
            if _f32(score) > previous:
                out.add(f"{ew}.score: {score!r} is greater than the previous score {previous!r}", "warning",
                        line=line, turn=tid, kind="order", doc_id=sid)
            previous = _f32(score)
        k_turn.append(tid)
        k_doc.append(sid)
        k_resp.append(resp_key)
        k_pos.append(i)


def _f32(value: float) -> float:
    """``value`` rounded to single precision (as the run schema's ``float`` stores it)."""
    return float(np.float32(value))


def _natural(value: str) -> tuple[int, str]:
    return (int(value), "") if value.isdigit() else (1 << 30, value)


def _empty_run() -> pd.DataFrame:
    """A run with no row, with the columns and dtypes of a converted passage run."""
    return pd.DataFrame(
        {
            "query_id": pd.array([], dtype="str"),
            "doc_id": pd.array([], dtype="str"),
            "score": np.zeros(0),
            "rank": np.zeros(0, dtype=np.int64),
            "line": np.zeros(0, dtype=np.int64),
        }
    )


def _convert(
    turn: list, doc: list, score: list, line: list, resp: list, pos: list, passage_score: str
) -> pd.DataFrame:
    """Concatenate each turn's passages, keep the first occurrence of a (turn, passage), rank.

    ``'organisers'``: responses in file order (as ``generate_run.py`` loops over them), score =
    single-precision ``score / (response rank + 1)``; the other modes: responses in rank order
    (file order among equal ranks). ``resp`` holds ``(rank key, response index, raw rank)``."""
    if not doc:
        return _empty_run()
    resp_arr = np.asarray(resp, dtype=np.float64).reshape(-1, 3)
    frame = pd.DataFrame(
        {
            "query_id": pd.array(turn, dtype="str"),
            "doc_id": pd.array(doc, dtype="str"),
            "score": np.asarray(score, dtype=np.float64),
            "line": np.asarray(line, dtype=np.int64),
            "_rrank": resp_arr[:, 0],
            "_ridx": resp_arr[:, 1],
            "_pos": np.asarray(pos, dtype=np.int64),
        }
    )
    # keep the turn order of the file: sort by first appearance of the turn
    frame["_turn"] = frame.groupby("query_id", sort=False).ngroup()
    by = ["_turn", "_ridx", "_pos"] if passage_score == "organisers" else ["_turn", "_rrank", "_ridx", "_pos"]
    frame = frame.sort_values(by, kind="stable")
    frame = frame.drop_duplicates(["query_id", "doc_id"], keep="first")
    if passage_score == "organisers":
        # Python: (1 / (rank + 1)) * score in double precision, stored in a single-precision field
        raw_rank = resp_arr[frame.index.to_numpy(), 2]
        score32 = frame["score"].to_numpy(dtype=np.float64).astype(np.float32).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = (1.0 / (raw_rank + 1.0)) * score32
        frame["score"] = scaled.astype(np.float32).astype(np.float64)
        frame = frame[np.isfinite(frame["score"].to_numpy())]
    return _renumber(frame, passage_score)


def _renumber(frame: pd.DataFrame, passage_score: str) -> pd.DataFrame:
    """Rank rows (grouped by turn, in converted order): by position, or by trec_eval's order of
    the scores (``'organisers'``, ``'provenance'``)."""
    frame = frame.reset_index(drop=True)
    if passage_score == "position":
        frame["rank"] = group_rank(frame["query_id"].to_numpy(dtype=object))
        frame["score"] = 1.0 / frame["rank"].to_numpy(dtype=np.float64)
    elif len(frame):
        frame["rank"] = row_ranks(frame, "trec_eval")
    else:
        frame["rank"] = np.zeros(0, dtype=np.int64)
    return frame[["query_id", "doc_id", "score", "rank", "line"]]


@contract("ikat")
def validate_ikat(run: Any, *, corpus: Any = None, queries: Any = None, top_k: int = 10) -> ValidationReport:
    """The ``ikat`` contract of `reteco_measures.validate_run` (``top_k`` is not used: the
    organisers' limit of 1000 passages per response applies). See `convert_ikat_run`."""
    return convert_ikat_run(run, queries=queries, corpus=corpus)
