"""The ``ikat`` run contract: TREC iKAT 2023 run JSON → passage run + PTKB ranking.

A run is one JSON object::

    {"run_name": str, "run_type": "automatic" | "manual",
     "turns": [{"turn_id": "9-1_3",
                "responses": [{"rank": 1, "text": str,
                               "passage_provenance": [{"id", "text", "score", "used"}],
                               "ptkb_provenance": [{"id", "text", "score"}]}]}]}

Checks (each problem names the turn and the field, e.g. ``run.json:57: 9-1_3:
responses[0].passage_provenance[4].score: ...``; the line is the line of the turn's
``turn_id``): JSON syntax; ``run_name`` non-empty; ``run_type`` ``automatic``/``manual``;
``turns`` a list; every turn id a string, known (when ``queries`` is given) and not repeated;
``responses`` a non-empty list; per response a positive integer ``rank`` greater than the
previous one, a non-empty ``text``, a ``passage_provenance`` list with 1–1000 entries, each with a
non-empty string ``id`` of the form ``clueweb22-…:<n>``, a finite ``score`` not greater than the
previous one and a boolean ``used``; a non-empty ``ptkb_provenance`` list whose ids exist in that
conversation's PTKB (when the topics are given), whose ``text`` matches the PTKB statement and
whose scores do not increase. These follow the organisers' 2023 run validator.

Only problems that make an entry unusable remove it: a passage without a string id (or, with
``passage_score='provenance'``, without a finite score), a passage not in ``corpus`` (when given),
a PTKB id that is not in the conversation's PTKB, a whole turn that is unknown, repeated or has no
usable responses. Everything else is reported and kept. Structural failure (not JSON, no
``turns`` list) makes the report invalid (nothing to score).

Conversion (documented choice; the iKAT 2023 material available to us does not fix it):

* **passage run** — the turn's responses in ascending ``rank`` (file order among equal ranks),
  each response's ``passage_provenance`` in listed order, concatenated; the first occurrence of a
  passage wins (later ones are dropped). All passages count, ``used`` or not.
  ``passage_score='position'`` (default): the TREC score is 1/position, so the converted order
  is exactly the order above under trec_eval's tie policy; ``'provenance'``: the submitted
  score of the first occurrence (trec_eval then orders by those scores, ties by doc id);
* **PTKB ranking** (``report.extra["ptkb_run"]``) — the same rule over ``ptkb_provenance``
  statement ids (always ``1/position``).

``report.extra`` also holds ``run_name``, ``run_type``, ``passage_score`` and ``responses`` (one
row per response: ``query_id, rank, text, used_passages``), for generation judging.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..errors import DataFormatError, Problem
from ..io._lines import is_inline_text, read_source_bytes
from ..io.jsonl import JSONTextError, loads, read_json_document
from ..kernels.ranking import group_rank, rank_run
from .base import ValidationReport, contract, id_frame

__all__ = ["validate_ikat", "convert_ikat_run", "MAX_PASSAGES_PER_RESPONSE", "PASSAGE_ID_PATTERN"]

#: the organisers' validator warns above this many passages per response
MAX_PASSAGES_PER_RESPONSE = 1000
#: ClueWeb22 passage ids: ``clueweb22-<doc id>:<passage number>`` (a single colon)
PASSAGE_ID_PATTERN = re.compile(r"^clueweb22-[^:\s]+:\d+$")
RUN_TYPES = ("automatic", "manual")

PassageScore = Literal["position", "provenance"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


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
        from ..datasets.base import TOPICS_FACTORIES

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
    """Accumulates problems with a fixed path."""

    def __init__(self, path: str | None):
        self.path = path
        self.problems: list[Problem] = []

    def add(
        self,
        message: str,
        *,
        line: int | None = None,
        turn: str | None = None,
        kind: str = "field",
        doc_id: str | None = None,
    ) -> None:
        self.problems.append(
            Problem(message, line=line, query_id=turn, path=self.path, kind=kind, doc_id=doc_id)
        )


def convert_ikat_run(
    run: Any,
    *,
    queries: Any = None,
    corpus: Any = None,
    passage_score: PassageScore = "position",
) -> ValidationReport:
    """Validate an iKAT 2023 run JSON and convert it (see the module docs for every rule).

    Args:
        run: path of the run JSON, its text, bytes, a file object or the parsed dict.
        queries: the topics (dataset name such as ``'ikat/2023/test'``, topics JSON path or
            DataFrame with ``query_id`` and ``ptkb``) for turn-id and PTKB-id checks; None skips them.
        corpus: passage ids; when given, passages outside it are discarded and reported.
        passage_score: ``'position'`` (default, 1/position) or ``'provenance'`` (submitted scores).

    Returns:
        :class:`ValidationReport` with ``run`` = the passage run (``query_id, doc_id, score, rank,
        line``) and ``extra["ptkb_run"]`` = the PTKB ranking (``query_id, doc_id, score, rank``).
    """
    if passage_score not in ("position", "provenance"):
        raise ValueError(f"passage_score must be 'position' or 'provenance', not {passage_score!r}")
    data, path, text, problem = _load_json(run)
    out = _Collector(path)
    empty = _empty_run()
    extra: dict[str, Any] = {
        "passage_score": passage_score,
        "ptkb_run": empty.drop(columns="line"),
        "responses": pd.DataFrame(columns=["query_id", "rank", "text", "used_passages"]),
    }
    if problem is not None:
        return ValidationReport("ikat", [problem], empty, valid=False, extra=extra)
    if not isinstance(data, dict):
        out.add("the run must be a JSON object with run_name, run_type and turns", kind="format")
        return ValidationReport("ikat", out.problems, empty, valid=False, extra=extra)

    run_name, run_type = data.get("run_name"), data.get("run_type")
    extra.update(run_name=run_name, run_type=run_type)
    if not isinstance(run_name, str) or not run_name.strip():
        out.add(f"run_name: must be a non-empty string (found {run_name!r})")
    if run_type not in RUN_TYPES:
        out.add(f"run_type: must be 'automatic' or 'manual' (found {run_type!r})")
    turns = data.get("turns")
    if not isinstance(turns, list):
        out.add(f"turns: must be a list of turns (found {type(turns).__name__})", kind="format")
        return ValidationReport("ikat", out.problems, empty, valid=False, extra=extra)

    known, ptkb = _topic_tables(queries)
    known_docs = id_frame(corpus, "doc_id")
    known_doc_set = set(known_docs["doc_id"].tolist()) if known_docs is not None else None
    lines = _turn_lines(text, len(turns))

    # flat records; a Python loop over the parsed JSON is the parse itself
    p_turn, p_doc, p_score, p_line, p_resp, p_pos = [], [], [], [], [], []
    k_turn, k_doc, k_resp, k_pos = [], [], [], []
    resp_rows: list[dict[str, Any]] = []
    seen_turns: dict[str, int] = {}
    for t_index, turn in enumerate(turns):
        line = lines[t_index]
        if not isinstance(turn, dict):
            out.add(f"turns[{t_index}]: must be an object", line=line, kind="format")
            continue
        tid = turn.get("turn_id")
        if not isinstance(tid, str) or not tid.strip():
            out.add(
                f"turns[{t_index}].turn_id: must be a non-empty string (found {tid!r}); turn skipped",
                line=line,
            )
            continue
        if known is not None and tid not in known:
            out.add(
                "turn_id: not a turn of the topics; turn skipped", line=line, turn=tid, kind="unknown_query"
            )
            continue
        if tid in seen_turns:
            out.add(
                f"turn_id: repeated (first at turns[{seen_turns[tid]}]); this copy skipped",
                line=line,
                turn=tid,
                kind="duplicate",
            )
            continue
        seen_turns[tid] = t_index
        conv_id = tid.rsplit("_", 1)[0]
        statements = ptkb.get(conv_id) if ptkb is not None else None
        responses = turn.get("responses")
        if not isinstance(responses, list) or not responses:
            out.add("responses: must be a non-empty list; the turn scores 0", line=line, turn=tid)
            continue
        previous_rank = 0
        for r_index, resp in enumerate(responses):
            where = f"responses[{r_index}]"
            if not isinstance(resp, dict):
                out.add(f"{where}: must be an object; skipped", line=line, turn=tid)
                continue
            rank = resp.get("rank")
            if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
                out.add(f"{where}.rank: must be a positive integer (found {rank!r})", line=line, turn=tid)
                rank_key = float("inf")
            else:
                if rank <= previous_rank:
                    out.add(
                        f"{where}.rank: {rank} does not increase (previous {previous_rank})",
                        line=line,
                        turn=tid,
                        kind="order",
                    )
                previous_rank = max(previous_rank, rank)
                rank_key = float(rank)
            text_value = resp.get("text")
            if not isinstance(text_value, str) or not text_value.strip():
                out.add(f"{where}.text: must be a non-empty string", line=line, turn=tid)
            passages = resp.get("passage_provenance")
            used: list[str] = []
            if not isinstance(passages, list):
                out.add(f"{where}.passage_provenance: must be a list", line=line, turn=tid)
                passages = []
            elif not passages:
                out.add(
                    f"{where}.passage_provenance: empty (the response has no passages)", line=line, turn=tid
                )
            elif len(passages) > MAX_PASSAGES_PER_RESPONSE:
                out.add(
                    f"{where}.passage_provenance: {len(passages)} entries (more than "
                    f"{MAX_PASSAGES_PER_RESPONSE})",
                    line=line,
                    turn=tid,
                )
            previous_score = math.inf
            for p_index, entry in enumerate(passages):
                pw = f"{where}.passage_provenance[{p_index}]"
                if not isinstance(entry, dict):
                    out.add(f"{pw}: must be an object; skipped", line=line, turn=tid)
                    continue
                pid = entry.get("id")
                if not isinstance(pid, str) or not pid.strip():
                    out.add(
                        f"{pw}.id: must be a non-empty string (found {pid!r}); skipped", line=line, turn=tid
                    )
                    continue
                if not PASSAGE_ID_PATTERN.match(pid):
                    out.add(
                        f"{pw}.id: {pid!r} is not a passage id 'clueweb22-<doc>:<n>'",
                        line=line,
                        turn=tid,
                        kind="format",
                        doc_id=pid,
                    )
                score = entry.get("score")
                if not _is_number(score):
                    out.add(
                        f"{pw}.score: must be a finite number (found {score!r})"
                        + ("; skipped" if passage_score == "provenance" else ""),
                        line=line,
                        turn=tid,
                        kind="score",
                        doc_id=pid,
                    )
                    if passage_score == "provenance":
                        continue
                    score = math.nan
                elif score > previous_score:
                    out.add(
                        f"{pw}.score: {score!r} is greater than the previous score {previous_score!r}",
                        line=line,
                        turn=tid,
                        kind="order",
                        doc_id=pid,
                    )
                if _is_number(score):
                    previous_score = score
                flag = entry.get("used")
                if "used" in entry and not isinstance(flag, bool):
                    out.add(
                        f"{pw}.used: must be true or false (found {flag!r})", line=line, turn=tid, doc_id=pid
                    )
                if flag is True:
                    used.append(pid)
                p_turn.append(tid)
                p_doc.append(pid)
                p_score.append(float(score))
                p_line.append(line or 0)
                p_resp.append((rank_key, r_index))
                p_pos.append(p_index)
            if passages and not used:
                out.add(f"{where}.passage_provenance: no passage is marked used", line=line, turn=tid)
            resp_rows.append(
                {
                    "query_id": tid,
                    "rank": rank if rank_key != float("inf") else None,
                    "text": text_value if isinstance(text_value, str) else "",
                    "used_passages": used,
                }
            )
            _check_ptkb(
                resp.get("ptkb_provenance", None),
                "ptkb_provenance" in resp,
                where,
                tid,
                line,
                statements,
                out,
                k_turn,
                k_doc,
                k_resp,
                k_pos,
                (rank_key, r_index),
            )

    passage_run = _first_occurrence(p_turn, p_doc, p_score, p_line, p_resp, p_pos, passage_score)
    if known_doc_set is not None and len(passage_run):
        unknown = ~passage_run["doc_id"].isin(known_doc_set).to_numpy()
        for row in passage_run[unknown].itertuples(index=False):
            out.add(
                f"passage {row.doc_id} is not in the collection; discarded",
                line=int(row.line) or None,
                turn=row.query_id,
                kind="unknown_doc",
                doc_id=row.doc_id,
            )
        passage_run = _renumber(passage_run[~unknown], passage_score)
    ptkb_run = _first_occurrence(
        k_turn, k_doc, [0.0] * len(k_doc), [0] * len(k_doc), k_resp, k_pos, "position"
    )
    missing: list[str] = []
    if known is not None:
        present = set(seen_turns)
        missing = sorted(q for q in known if q not in present)
        if missing and len(missing) <= 20:
            for q in missing:
                out.add("turn missing from the run (scores 0)", turn=q, kind="missing_query")
        elif missing:
            out.add(
                f"{len(missing)} turns of the topics are missing from the run (they score 0), e.g. "
                f"{', '.join(missing[:5])}",
                kind="missing_query",
            )
    extra["ptkb_run"] = ptkb_run.drop(columns="line")
    extra["responses"] = pd.DataFrame(resp_rows, columns=["query_id", "rank", "text", "used_passages"])
    return ValidationReport(
        "ikat", out.problems, passage_run, valid=True, missing_queries=missing, extra=extra
    )


def _check_ptkb(
    entries: Any,
    present: bool,
    where: str,
    tid: str,
    line: int | None,
    statements: dict[str, str] | None,
    out: _Collector,
    k_turn: list,
    k_doc: list,
    k_resp: list,
    k_pos: list,
    resp_key: tuple[float, int],
) -> None:
    """Check one response's ``ptkb_provenance`` and collect its usable statement ids."""
    field = f"{where}.ptkb_provenance"
    if not present:
        out.add(f"{field}: missing", line=line, turn=tid)
        return
    if not isinstance(entries, list):
        out.add(f"{field}: must be a list", line=line, turn=tid)
        return
    if not entries:
        out.add(f"{field}: empty (no PTKB statement listed)", line=line, turn=tid)
        return
    previous = math.inf
    for i, entry in enumerate(entries):
        ew = f"{field}[{i}]"
        if not isinstance(entry, dict):
            out.add(f"{ew}: must be an object; skipped", line=line, turn=tid)
            continue
        sid = entry.get("id")
        if isinstance(sid, int) and not isinstance(sid, bool):
            sid = str(sid)
        if not isinstance(sid, str) or not sid.strip():
            out.add(
                f"{ew}.id: must be a non-empty string (found {entry.get('id')!r}); skipped",
                line=line,
                turn=tid,
            )
            continue
        if statements is not None:
            if sid not in statements:
                out.add(
                    f"{ew}.id: {sid!r} is not a statement of this conversation's PTKB "
                    f"(ids {', '.join(sorted(statements, key=_natural))}); skipped",
                    line=line,
                    turn=tid,
                    kind="unknown_doc",
                    doc_id=sid,
                )
                continue
            given = entry.get("text")
            if isinstance(given, str) and given.strip() != statements[sid].strip():
                out.add(f"{ew}.text: does not match PTKB statement {sid}", line=line, turn=tid, doc_id=sid)
        score = entry.get("score")
        if not _is_number(score):
            out.add(
                f"{ew}.score: must be a finite number (found {score!r})",
                line=line,
                turn=tid,
                kind="score",
                doc_id=sid,
            )
        elif score > previous:
            out.add(
                f"{ew}.score: {score!r} is greater than the previous score {previous!r}",
                line=line,
                turn=tid,
                kind="order",
                doc_id=sid,
            )
        else:
            previous = score
        k_turn.append(tid)
        k_doc.append(sid)
        k_resp.append(resp_key)
        k_pos.append(i)


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


def _first_occurrence(
    turn: list, doc: list, score: list, line: list, resp: list, pos: list, passage_score: str
) -> pd.DataFrame:
    """Order by (turn, response rank, response index, position); keep first (turn, doc); rank."""
    if not doc:
        return _empty_run()
    resp_arr = np.asarray(resp, dtype=np.float64).reshape(-1, 2)
    frame = pd.DataFrame(
        {
            "query_id": pd.array(turn, dtype="str"),
            "doc_id": pd.array(doc, dtype="str"),
            "score": np.asarray(score, dtype=np.float64),
            "line": np.asarray(line, dtype=np.int64),
            "_rrank": resp_arr[:, 0],
            "_ridx": resp_arr[:, 1],
            "_pos": np.asarray(pos, dtype=np.int64),
            "_order": np.arange(len(doc)),
        }
    )
    # keep the turn order of the file: sort by first appearance of the turn
    frame["_turn"] = frame.groupby("query_id", sort=False).ngroup()
    frame = frame.sort_values(["_turn", "_rrank", "_ridx", "_pos"], kind="stable")
    frame = frame.drop_duplicates(["query_id", "doc_id"], keep="first")
    return _renumber(frame, passage_score)


def _renumber(frame: pd.DataFrame, passage_score: str) -> pd.DataFrame:
    """Rank rows (grouped by turn, in converted order): by position, or by trec_eval's order of
    the submitted scores (``'provenance'``)."""
    frame = frame.reset_index(drop=True)
    if passage_score == "position":
        frame["rank"] = group_rank(frame["query_id"].to_numpy(dtype=object))
        frame["score"] = 1.0 / frame["rank"].to_numpy(dtype=np.float64)
    elif len(frame):
        ranked = rank_run(frame.assign(_row=np.arange(len(frame))), "trec_eval")
        frame.loc[ranked["_row"].to_numpy(), "rank"] = ranked["rank"].to_numpy()
        frame["rank"] = frame["rank"].astype(np.int64)
    else:
        frame["rank"] = np.zeros(0, dtype=np.int64)
    return frame[["query_id", "doc_id", "score", "rank", "line"]]


@contract("ikat")
def validate_ikat(run: Any, *, corpus: Any = None, queries: Any = None, top_k: int = 10) -> ValidationReport:
    """The ``ikat`` contract of :func:`reteco_measures.validate_run` (``top_k`` is not used: the
    organisers' limit of 1000 passages per response applies). See :func:`convert_ikat_run`."""
    return convert_ikat_run(run, queries=queries, corpus=corpus)
