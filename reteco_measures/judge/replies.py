"""A judge's reply, read strictly: the outcome of one judgment (`Verdict`), the schema a reply
must match (`judgment_schema`), the reader of a chat completion (`read_reply`), the parser
of a reply (`parse_reply`) and the message that asks to repair an invalid one
(`repair_messages`), and the text hygiene every message and stored reply goes through
(`clean_text`, `redact`).

`parse_reply` accepts one JSON object with an integer ``score`` on the prompt's scale and a
rationale of the model's own; any text at all either parses or raises `ReplyError` (deeply nested
JSON, numbers of thousands of digits and binary noise included).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ReplyError

__all__ = ["Verdict", "ReplyError", "parse_reply", "echoed_placeholder", "load_json", "clean_text", "redact", "short_repr",
           "judgment_schema", "read_reply", "repair_messages"]

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str, limit: int | None = None) -> str:
    """Endpoint-supplied text made safe to print on a terminal: control characters (terminal escape
    sequences included; line feeds and tabs kept) and bidirectional overrides become ``\\uXXXX``;
    cut to ``limit`` characters when given."""
    text = _CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", str(text))
    return text if limit is None or len(text) <= limit else text[:limit]


@dataclass(frozen=True)
class Verdict:
    """The outcome of one judgment.

    Attributes:
        score: the integer score, or None when invalid.
        rationale: the model's rationale (None when invalid).
        error: None, or why the judgment is invalid.
        kind: ``ok`` | ``response`` | ``transport`` | ``request`` | ``limit`` | ``input`` | ``error``
            (see the module docstring; ``input`` = not sendable, ``error`` = an unexpected failure
            while judging that item).
        attempts: how many requests were sent.
        raw: the last raw reply content (for audit, at most 2000 characters), if any.
        prompt_tokens, completion_tokens: tokens the endpoint reported over all attempts.
        response_model: the model name the endpoint returned (last completion), if any.
        causes: why each failed attempt failed (``timeout``, ``connection`` (could not connect),
            ``reset`` (the connection broke after it was made), ``http_429``, ``http_5xx``,
            ``not_a_completion``, ``too_large``, ``invalid_reply``, ``echoed_placeholder``,
            ``identical_reply``, ``structured_unsupported`` (the server rejected the
            structured-output form sent) ...),
            in order.
        served_model: the model the endpoint's ``GET /models`` listed at the start of the run
            (the requested name when it is listed, else the only listed id), if known.
    """

    score: int | None
    rationale: str | None
    error: str | None
    kind: str
    attempts: int
    raw: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    response_model: str | None = None
    causes: tuple[str, ...] = field(default_factory=tuple)
    served_model: str | None = None

    @property
    def valid(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.score, "rationale": self.rationale, "error": self.error, "kind": self.kind,
                "attempts": self.attempts, "raw": self.raw, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "response_model": self.response_model,
                "causes": list(self.causes), "served_model": self.served_model}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        def _int(x: Any) -> int:
            return int(x) if isinstance(x, int) and not isinstance(x, bool) else 0

        score = d.get("score")
        causes = d.get("causes") or []
        return cls(score=score if isinstance(score, int) and not isinstance(score, bool) else None,
                   rationale=d.get("rationale") if isinstance(d.get("rationale"), str) else None,
                   error=d.get("error") if isinstance(d.get("error"), str) else None,
                   kind=str(d.get("kind", "ok")), attempts=_int(d.get("attempts")),
                   raw=d.get("raw") if isinstance(d.get("raw"), str) else None,
                   prompt_tokens=_int(d.get("prompt_tokens")), completion_tokens=_int(d.get("completion_tokens")),
                   response_model=d.get("response_model") if isinstance(d.get("response_model"), str) else None,
                   causes=tuple(str(c) for c in causes) if isinstance(causes, list) else (),
                   served_model=d.get("served_model") if isinstance(d.get("served_model"), str) else None)


_FENCE = re.compile(r"^```(?:json|JSON)?\s*\n(.*)\n```$", re.S)


def short_repr(value: Any, limit: int = 40) -> str:
    """A short, never-failing rendering of a parsed JSON value for messages."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value) if value.bit_length() < 200 else f"<integer of {len(str(value))} digits>"
    else:
        try:
            text = json.dumps(value)
        except (ValueError, RecursionError, TypeError):
            text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_json(text: str | bytes) -> Any:
    """``json.loads`` whose every failure is a ValueError with a short reason (deep nesting,
    numbers beyond the digit limit and invalid JSON alike)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at char {exc.pos}") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except (ValueError, MemoryError, OverflowError) as exc:  # e.g. integers beyond the digit limit
        raise ValueError(str(exc).split("\n")[0][:120] or type(exc).__name__) from None


_BRACKETED = re.compile(r"^<[^<>]*>$")
_TEMPLATE_FIELD = re.compile(r"\{\{\w+\}\}")


def _plain(text: str) -> str:
    """Lower case, single spaces, without surrounding quotes and angle brackets (for comparing a
    rationale with a placeholder)."""
    t = " ".join(str(text).split()).strip().strip("\"'").strip()
    if t.startswith("<") and t.endswith(">"):
        t = t[1:-1].strip()
    return t.lower()


def echoed_placeholder(rationale: str, placeholders: tuple[str, ...] | list[str] = ()) -> str | None:
    """The placeholder a rationale copies instead of giving a reason, or None.

    A rationale echoes the template when, compared without case, spacing, quotes and angle
    brackets, it is one of the prompt's ``<...>`` placeholders (``"<one or two sentences>"``), or
    when it is itself a bracketed placeholder (``"<rationale>"``) or holds a ``{{field}}`` of the
    prompt template.
    """
    plain = _plain(rationale)
    for ph in placeholders:
        if plain and plain == _plain(ph):
            return f"<{ph.strip().strip('<>')}>"
    text = " ".join(str(rationale).split())
    if _BRACKETED.match(text):
        return text
    m = _TEMPLATE_FIELD.search(text)
    return m.group(0) if m else None


def parse_reply(content: str, low: int, high: int, placeholders: tuple[str, ...] | list[str] = ()) -> tuple[int, str]:
    """Strictly parse a judge reply: one JSON object with an integer ``score`` in [low, high] and a
    non-empty string ``rationale`` of the model's own.

    The only leniency is surrounding whitespace and a single Markdown code fence around the object.
    ``4.0``, ``"4"``, ``true`` and out-of-range numbers are rejected, never rounded or clamped.
    An empty rationale, or one that copies the prompt's template (one of ``placeholders`` — the
    ``<...>`` texts of the prompt's reply format —, any ``<...>`` placeholder, a ``{{field}}``; see
    `echoed_placeholder`) is rejected with cause ``echoed_placeholder``: such a row would
    look valid and carry no information.
    Any text at all (deeply nested JSON, numbers of thousands of digits, binary noise) either
    parses or raises `ReplyError`; no other exception escapes.

    Raises:
        ReplyError: with the reason (and its ``cause``).
    """
    if not isinstance(content, str):
        raise ReplyError("reply content is not text")
    text = content.strip()
    m = _FENCE.match(text)
    if m:
        text = m.group(1).strip()
    try:
        obj = load_json(text)
    except ValueError as exc:
        raise ReplyError(f"reply is not a JSON object ({exc})") from None
    if not isinstance(obj, dict):
        raise ReplyError(f"reply is JSON but not an object ({type(obj).__name__})")
    if "score" not in obj:
        raise ReplyError("reply has no 'score'")
    score = obj["score"]
    if isinstance(score, bool) or not isinstance(score, int):
        raise ReplyError(f"'score' is not an integer: {short_repr(score)}")
    if not low <= score <= high:
        raise ReplyError(f"'score' {short_repr(score)} is outside {low}-{high}")
    rationale = obj.get("rationale")
    if not isinstance(rationale, str):
        raise ReplyError("reply has no string 'rationale'")
    if not rationale.strip():
        raise ReplyError("reply has an empty 'rationale'", "echoed_placeholder")
    echoed = echoed_placeholder(rationale, placeholders)
    if echoed is not None:
        raise ReplyError(f"the rationale copies the prompt's placeholder {short_repr(echoed, 80)} instead of giving a "
                         "reason", "echoed_placeholder")
    return score, rationale


def judgment_schema(low: int, high: int) -> dict[str, Any]:
    """The JSON schema of one judgment on the scale ``low..high``: an object with exactly an integer
    ``score`` (one of low..high) and a string ``rationale``."""
    return {"type": "object",
            "properties": {"score": {"type": "integer", "enum": list(range(low, high + 1))},
                           "rationale": {"type": "string"}},
            "required": ["score", "rationale"], "additionalProperties": False}


def repair_messages(messages: list[dict[str, str]], content: str, reason: str, low: int,
                    high: int) -> list[dict[str, str]]:
    """``messages`` + the invalid reply ``content`` + a short request to repair it (the ``reason``
    and the schema of `judgment_schema`)."""
    schema = json.dumps(judgment_schema(low, high), separators=(",", ":"))
    note = (f"Your reply is not a valid judgment: {reason}. Reply again with one JSON object only, matching "
            f"this JSON schema: {schema}. The rationale must be your own reason for the score, not text "
            "copied from the instructions.")
    return [*messages, {"role": "assistant", "content": content[:2000]}, {"role": "user", "content": note}]


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**12 else 0


def read_reply(body: Any, low: int, high: int, placeholders: tuple[str, ...] | list[str] = ()) -> tuple[Verdict, Any]:
    """What one chat completion says, as the verdict of one attempt, and the reply content (None
    when ``body`` is not a chat completion). ``body`` is the response body as received (bytes) or
    a batch result's parsed ``body``. The verdict carries the reported token usage (counts that are
    not plausible integers count 0), the returned model name and, for audit, the reply (or, for a
    body that is not a chat completion, the body) cut to 2000 characters; its kind is ``ok``,
    ``response`` (the content is not a valid judgment, see `parse_reply`) or ``transport`` (not a
    chat completion: a gateway's HTML page, truncated or absurd JSON)."""
    text = body[:2000].decode("utf-8", "replace") if isinstance(body, bytes) else None
    try:
        obj = load_json(body) if isinstance(body, bytes) else body
    except ValueError as exc:
        head = text[:60].strip().replace("\n", " ") if text else ""
        why = f"endpoint reply is not a chat completion (not JSON: {exc}; starts {head!r})"
        return Verdict(None, None, why, "transport", 1, text, causes=("not_a_completion",)), None
    if not isinstance(obj, dict):
        return Verdict(None, None, "endpoint reply is not a chat completion (not a JSON object)", "transport", 1,
                       text, causes=("not_a_completion",)), None
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
    seen = dict(prompt_tokens=_count(usage.get("prompt_tokens")), completion_tokens=_count(usage.get("completion_tokens")),
                response_model=clean_text(obj["model"], 200) if isinstance(obj.get("model"), str) else None)
    try:
        content = obj["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return Verdict(None, None, "endpoint reply is not a chat completion (no choices[0].message.content)",
                       "transport", 1, text, causes=("not_a_completion",), **seen), None
    raw = content[:2000] if isinstance(content, str) else short_repr(content, 2000)
    try:
        score, rationale = parse_reply(content, low, high, placeholders)
    except ReplyError as exc:
        return Verdict(None, None, str(exc), "response", 1, raw, causes=(exc.cause,), **seen), \
            content if isinstance(content, str) else raw
    return Verdict(score, rationale, None, "ok", 1, raw, **seen), content


_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=:-]+")
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


def redact(text: str, secrets: tuple[str, ...] | list[str] = ()) -> str:
    """``text`` with every secret, ``Bearer``/``Basic`` credential and URL user-info replaced by
    ``***``."""
    for s in secrets:
        if s and len(s) >= 3:
            text = text.replace(s, "***")
    text = _BEARER.sub(lambda m: f"{m.group(1)} ***", text)
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}***@", text)
