"""Readers for the judge's inputs. Bad rows become `Problem` values
(``path:line: turn_id: what``); the good rows around them are kept.

* answers: JSONL ``{"turn_id", "answer"}`` (the RETECO generation submission form), or an iKAT 2023 run JSON
  (``turns[] -> responses[]``; the rank-1 response is the answer, its ``used`` provenance passages
  are the passages judged for groundedness);
* context: JSONL ``{"turn_id", "history": [{"role", "content"}] | str, "question", "passages": [str]}``
  (what the judge prompts show), or iKAT 2023 topics JSON (history = the earlier utterances and canonical responses);
* targets: which turns are judged (JSONL with ``turn_id``/``query_id``, TREC qrels, or one id per
  line);
* temporal: topics JSONL ``{"query_id"|"id", "query"|"text", "required_periods": [str]}`` and
  documents JSONL ``{"doc_id"|"id", "content"|"text"|"contents"}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Problem
from ..io.jsonl import iter_jsonl
from ..io.judgments import read_targets, text_lines  # noqa: F401  (read_targets: the judge's public name too)

__all__ = [
    "Answer",
    "Context",
    "read_answers",
    "read_context",
    "read_targets",
    "read_pairs",
    "read_passages",
    "read_temporal_topics",
    "read_documents",
    "render_history",
    "render_passages",
]


@dataclass
class Answer:
    """A generated answer; ``passages`` are the answer's own provenance passages (iKAT runs) when
    known, ``missing_passages`` the provenance ids whose text is still unknown."""

    turn_id: str
    answer: str
    line: int | None = None
    passages: list[str] | None = None
    provenance_ids: list[str] = field(default_factory=list)
    missing_passages: list[str] = field(default_factory=list)


@dataclass
class Context:
    """What the judge sees besides the answer."""

    turn_id: str
    question: str
    history: list[dict[str, str]] | str = field(default_factory=list)
    passages: list[str] = field(default_factory=list)
    line: int | None = None


def _first_json_char(path: str | Path) -> str:
    """The first non-blank character of a file (after a UTF-8 BOM), read as bytes so that an
    undecodable byte later in the file cannot fail this peek."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    text = head.lstrip()
    return chr(text[0]) if text and text[0] < 128 else ""


def _load_json_file(path: str | Path, problems: list[Problem]) -> Any:
    """The whole file as one JSON value, or None with a problem naming the file (undecodable
    UTF-8 with its line, invalid JSON with its line, nesting too deep, absurd numbers)."""
    p = str(path)
    data = Path(path).read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problems.append(Problem(f"not valid UTF-8 ({exc.reason}); the file was not read", line=line, path=p,
                                kind="encoding"))
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(Problem(f"not valid JSON ({exc.msg})", line=exc.lineno, path=p))
    except RecursionError:
        problems.append(Problem("JSON nested too deeply; the file was not read", path=p))
    except ValueError as exc:  # e.g. an integer beyond the digit limit
        problems.append(Problem(f"not readable JSON ({str(exc)[:100]})", path=p))
    return None


def _id(obj: dict[str, Any], names: Iterable[str]) -> str | None:
    for name in names:
        value = obj.get(name)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) != "":
            return str(value)
    return None


def read_answers(path: str | Path, passages: dict[str, str] | None = None) -> tuple[dict[str, Answer], list[Problem]]:
    """Answers keyed by turn id (first occurrence wins; later duplicates are problems).

    ``passages`` (id -> text) fills in provenance passages of an iKAT run that carry no text.
    """
    problems: list[Problem] = []
    if _first_json_char(path) == "{" and _looks_like_ikat_run(path):
        return _read_ikat_run(path, passages or {}, problems), problems
    out: dict[str, Answer] = {}
    p = str(path)
    for line, obj in iter_jsonl(path, problems):
        tid = _id(obj, ("turn_id",))
        if tid is None:
            problems.append(Problem("no 'turn_id'", line=line, path=p))
            continue
        answer = obj.get("answer")
        if not isinstance(answer, str):
            problems.append(Problem("'answer' must be a string", line=line, path=p, query_id=tid))
            continue
        if tid in out:
            problems.append(Problem(f"duplicate answer (first at line {out[tid].line}); this one is ignored",
                                    line=line, path=p, query_id=tid, kind="duplicate"))
            continue
        out[tid] = Answer(tid, answer, line)
    return out, problems


def _is_json_document(path: str | Path, kind: type) -> bool:
    """Whether the whole file is one JSON value of ``kind`` (else it is read as JSONL)."""
    try:
        return isinstance(json.loads(Path(path).read_bytes().decode("utf-8-sig")), kind)
    except (ValueError, RecursionError):
        return False


def _looks_like_ikat_run(path: str | Path) -> bool:
    """True only for a JSON document with a ``turns`` list; anything else is read as JSONL (one
    object per line), so a bad line loses only itself and is reported with its number."""
    try:
        obj = json.loads(Path(path).read_bytes().decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and isinstance(obj.get("turns"), list)


def _read_ikat_run(path: str | Path, passages: dict[str, str], problems: list[Problem]) -> dict[str, Answer]:
    p = str(path)
    run = _load_json_file(path, problems)
    if run is None:
        return {}
    if not isinstance(run, dict) or not isinstance(run.get("turns"), list):
        problems.append(Problem("an iKAT run must be a JSON object with a 'turns' list", path=p))
        return {}
    out: dict[str, Answer] = {}
    for n, turn in enumerate(run["turns"]):
        where = f"turns[{n}]"
        if not isinstance(turn, dict):
            problems.append(Problem(f"{where} is not an object", path=p))
            continue
        tid = _id(turn, ("turn_id",))
        if tid is None:
            problems.append(Problem(f"{where} has no turn_id", path=p))
            continue
        responses = turn.get("responses")
        if not isinstance(responses, list) or not responses:
            problems.append(Problem(f"{where}.responses is missing or empty", path=p, query_id=tid))
            continue
        ranked = [r for r in responses if isinstance(r, dict) and isinstance(r.get("rank"), int)]
        if len(ranked) != len(responses):
            problems.append(Problem(f"{where}.responses: every response needs an integer rank", path=p, query_id=tid))
            continue
        best = min(ranked, key=lambda r: r["rank"])
        text = best.get("text")
        if not isinstance(text, str):
            problems.append(Problem(f"{where}: rank-{best['rank']} response has no text", path=p, query_id=tid))
            continue
        texts: list[str] = []
        ids: list[str] = []
        missing: list[str] = []
        for prov in best.get("passage_provenance") or []:
            if not isinstance(prov, dict) or prov.get("used") is False:
                continue
            pid = str(prov.get("id", ""))
            ids.append(pid)
            body = prov.get("text") if isinstance(prov.get("text"), str) and prov.get("text").strip() else None
            body = body or passages.get(pid)
            if body is None:
                missing.append(pid)
            else:
                texts.append(body)
        if tid in out:
            problems.append(Problem(f"{where}: duplicate turn; ignored", path=p, query_id=tid, kind="duplicate"))
            continue
        out[tid] = Answer(tid, text, None, texts, ids, missing)
    return out


def read_context(path: str | Path) -> tuple[dict[str, Context], list[Problem]]:
    """Context rows keyed by turn id, in file order (iKAT topics JSON is accepted too: a file that
    is one JSON list; anything else is JSONL, where a bad line loses only itself)."""
    problems: list[Problem] = []
    if _first_json_char(path) == "[" and _is_json_document(path, list):
        return _read_ikat_topics(path, problems), problems
    out: dict[str, Context] = {}
    p = str(path)
    for line, obj in iter_jsonl(path, problems):
        tid = _id(obj, ("turn_id",))
        if tid is None:
            problems.append(Problem("no 'turn_id'", line=line, path=p))
            continue
        question = obj.get("question")
        if not isinstance(question, str):
            problems.append(Problem("'question' must be a string", line=line, path=p, query_id=tid))
            continue
        history = obj.get("history", [])
        if history is None:
            history = []
        if isinstance(history, list):
            bad = [h for h in history if not (isinstance(h, dict) and isinstance(h.get("content"), str))]
            if bad:
                problems.append(Problem("'history' entries must be {role, content} objects", line=line, path=p,
                                        query_id=tid))
                continue
        elif not isinstance(history, str):
            problems.append(Problem("'history' must be a list of {role, content} or a string", line=line,
                                    path=p, query_id=tid))
            continue
        passages = obj.get("passages", [])
        if passages is None:
            passages = []
        if not isinstance(passages, list) or not all(isinstance(x, str) for x in passages):
            problems.append(Problem("'passages' must be a list of strings", line=line, path=p, query_id=tid))
            continue
        if tid in out:
            problems.append(Problem(f"duplicate turn (first at line {out[tid].line}); this one is ignored",
                                    line=line, path=p, query_id=tid, kind="duplicate"))
            continue
        out[tid] = Context(tid, question, history, passages, line)
    return out, problems


def _read_ikat_topics(path: str | Path, problems: list[Problem]) -> dict[str, Context]:
    p = str(path)
    data = _load_json_file(path, problems)
    if data is None:
        return {}
    if not isinstance(data, list):
        problems.append(Problem("iKAT topics must be a JSON list of conversations", path=p))
        return {}
    out: dict[str, Context] = {}
    for n, conv in enumerate(data):
        number = conv.get("number") if isinstance(conv, dict) else None
        if number is None or not isinstance(conv.get("turns"), list):
            problems.append(Problem(f"conversation [{n}] needs 'number' and 'turns'", path=p))
            continue
        history: list[dict[str, str]] = []
        for k, turn in enumerate(conv["turns"]):
            if not isinstance(turn, dict):
                problems.append(Problem(f"conversation {number}: turns[{k}] is not an object "
                                        f"({type(turn).__name__}); skipped", path=p))
                continue
            tid = f"{number}_{turn.get('turn_id')}"
            utterance = turn.get("utterance")
            if not isinstance(utterance, str):
                problems.append(Problem("turn has no utterance", path=p, query_id=tid))
                continue
            out[tid] = Context(tid, utterance, list(history), [])
            history.append({"role": "user", "content": utterance})
            if isinstance(turn.get("response"), str):
                history.append({"role": "assistant", "content": turn["response"]})
    return out


def read_pairs(path: str | Path) -> list[tuple[str, str]]:
    """(query_id, doc_id) pairs from JSONL (``query_id``, ``doc_id``), ``query_id doc_id`` lines,
    TREC qrels or a TREC run, in first-seen order without repeats.

    Raises:
        ValueError: naming the file and line of an undecodable or malformed line.
    """
    pairs: dict[tuple[str, str], None] = {}
    for i, s in text_lines(path):
        if s.startswith("{"):
            try:
                obj = json.loads(s)
                pair = (str(obj["query_id"]), str(obj["doc_id"]))
            except (ValueError, RecursionError, KeyError, TypeError):
                raise ValueError(f"{path}:{i}: a JSON pair needs query_id and doc_id") from None
        else:
            cols = s.split()
            if len(cols) == 2:
                pair = (cols[0], cols[1])
            elif len(cols) in (4, 6):
                pair = (cols[0], cols[2])
            else:
                raise ValueError(f"{path}:{i}: expected 'query_id doc_id', qrels or a TREC run line")
        pairs.setdefault(pair, None)
    return list(pairs)


def read_passages(path: str | Path) -> dict[str, str]:
    """Passage texts (id -> text) from JSONL with ``doc_id``/``passage_id``/``id`` and
    ``text``/``passage_text``/``contents``/``content``."""
    problems: list[Problem] = []
    out: dict[str, str] = {}
    for line, obj in iter_jsonl(path, problems):
        pid = _id(obj, ("passage_id", "doc_id", "id"))
        text = next((obj[k] for k in ("text", "passage_text", "contents", "content") if isinstance(obj.get(k), str)),
                    None)
        if pid is None or text is None:
            problems.append(Problem("needs an id and a text field", line=line, path=str(path)))
            continue
        out.setdefault(pid, text)
    if problems:
        raise ValueError("\n".join(str(p) for p in problems[:10]))
    return out


def read_temporal_topics(path: str | Path) -> tuple[dict[str, dict[str, Any]], list[Problem]]:
    """Temporal topics: query id -> ``{"query": str, "required_periods": [str]}``."""
    problems: list[Problem] = []
    out: dict[str, dict[str, Any]] = {}
    p = str(path)
    for line, obj in iter_jsonl(path, problems):
        qid = _id(obj, ("query_id", "id", "qid"))
        if qid is None:
            problems.append(Problem("no 'query_id' / 'id'", line=line, path=p))
            continue
        query = next((obj[k] for k in ("query", "text", "question") if isinstance(obj.get(k), str)), None)
        if query is None:
            problems.append(Problem("no query text ('query' / 'text')", line=line, path=p, query_id=qid))
            continue
        periods = obj.get("required_periods", [])
        if periods is None:
            periods = []
        if not isinstance(periods, list) or not all(isinstance(x, str) for x in periods):
            problems.append(Problem("'required_periods' must be a list of strings", line=line, path=p, query_id=qid))
            continue
        if qid in out:
            problems.append(Problem("duplicate query; ignored", line=line, path=p, query_id=qid, kind="duplicate"))
            continue
        out[qid] = {"query": query, "required_periods": list(dict.fromkeys(periods)), "line": line}
    return out, problems


def read_documents(path: str | Path, wanted: set[str] | None = None) -> tuple[dict[str, str], list[Problem]]:
    """Document texts (id -> text), streaming; with ``wanted`` only those ids are kept."""
    problems: list[Problem] = []
    out: dict[str, str] = {}
    p = str(path)
    for line, obj in iter_jsonl(path, problems):
        did = _id(obj, ("doc_id", "id", "docid"))
        if did is None:
            problems.append(Problem("no 'doc_id' / 'id'", line=line, path=p))
            continue
        if wanted is not None and did not in wanted:
            continue
        text = next((obj[k] for k in ("content", "text", "contents", "body") if isinstance(obj.get(k), str)), None)
        if text is None:
            problems.append(Problem("no text ('content' / 'text' / 'contents')", line=line, path=p, doc_id=did))
            continue
        out.setdefault(did, text)
    return out, problems


_ROLE = {"user": "User", "assistant": "Assistant", "system": "System"}


def render_history(history: list[dict[str, str]] | str) -> str:
    """The conversation so far as text for a prompt."""
    if isinstance(history, str):
        return history.strip() or "(no previous turns)"
    lines = [f"{_ROLE.get(str(h.get('role', '')).lower(), str(h.get('role', 'Speaker')).title())}: {h['content']}"
             for h in history]
    return "\n".join(lines) if lines else "(no previous turns)"


def render_passages(passages: list[str]) -> str:
    """Numbered passages for a prompt."""
    if not passages:
        return "(no passages)"
    return "\n\n".join(f"[{i}] {text.strip()}" for i, text in enumerate(passages, start=1))
