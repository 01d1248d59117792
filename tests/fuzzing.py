"""Mutation fuzzing of the readers, contracts and command line: mutators and independent reference
parsers, shared by the bounded fuzz tests (``tests/quality/test_fuzz_*.py``) and the long fuzz script
(``benchmarks/fuzz.py``).

A mutator takes the lines of a clean seed file (trec_eval's test files, the real iKAT sample run,
the bundled sample runs) and damages a few of them: hostile field values (``nan``, ``1e400``,
``0x10``, 20-digit integers, deep JSON nesting, 5000-digit numbers ...), random bytes (invalid
UTF-8, control characters), truncation, long lines, inserted junk lines. The reference parsers
below implement the documented grammar of each format in plain Python, line by line, without
any of the package's code: the readers must agree with them on every line (row kept with
exactly these values, or problem reported at exactly this line, or line skipped as blank /
comment).
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: field values that have broken (or could break) a reader
HOSTILE_TOKENS: list[bytes] = [
    b"nan", b"NaN", b"inf", b"-inf", b"Infinity", b"1e400", b"-1e400", b"1e-400", b"0x10", b"0X1f",
    b"99999999999999999999", b"9" * 30, b"1.5", b"1.0", b"+1", b".5", b"1.", b"--1", b"1,5", b"1_0", b"",
    b"#", b"#x", b"\x80", b"\xff\xfe", b"\xc3", b"\x1f", b"\x00", b"\xc3\xa9", b"\xe2\x80\xa8", b"[" * 50,
    b"\t", b"\r", b" ", b"\x0b", b"\x0c", b"\xef\xbb\xbf", b"-0", b"00012", b"1e5", b"-", b"e5",
    b"1000", b"1001", b"-1001", b"2147483648", b"q1 Q0 d1 1 0.5 r",
]

_WS = re.compile(rb"[ \t\r\x0b\x0c]+")
INT_RE = re.compile(r"[+-]?[0-9]{1,18}")
FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


@dataclass
class Mutated:
    """A damaged file: its bytes and its lines (without the newline)."""

    data: bytes
    lines: list[bytes]
    mutated: set[int]  # 1-based numbers of the lines that were changed or inserted


def mutate_lines(lines: list[bytes], rng: random.Random, n_mutations: int, *, long_line: int = 100_000,
                 protect_first: bool = False) -> Mutated:
    """Apply ``n_mutations`` random damages to copies of ``lines`` (never adding a newline inside a
    line, except by inserting whole junk lines)."""
    out = list(lines)
    changed = [False] * len(out)
    first = 1 if protect_first else 0
    for _ in range(n_mutations):
        if len(out) <= first:
            break
        i = rng.randrange(first, len(out))
        line = out[i]
        op = rng.randrange(8)
        if op == 0 and line:  # replace a field by a hostile token
            fields = _WS.split(line)
            fields[rng.randrange(len(fields))] = rng.choice(HOSTILE_TOKENS)
            line = b" ".join(fields)
        elif op == 1:  # insert a random byte
            pos = rng.randrange(len(line) + 1)
            byte = rng.choice([b for b in range(256) if b != 10])
            line = line[:pos] + bytes([byte]) + line[pos:]
        elif op == 2 and line:  # delete a byte
            pos = rng.randrange(len(line))
            line = line[:pos] + line[pos + 1:]
        elif op == 3:  # truncate
            line = line[: rng.randrange(len(line) + 1)]
        elif op == 4:  # a hostile token appended as an extra field or glued to one
            line = line + rng.choice([b" ", b""]) + rng.choice(HOSTILE_TOKENS)
        elif op == 5:  # a very long line
            line = rng.choice([b"x", b"\x80", b"q1 Q0 "]) * (long_line // 4)
        elif op == 6:  # insert a junk line before
            out.insert(i, rng.choice(HOSTILE_TOKENS) * rng.randrange(1, 4))
            changed.insert(i, True)
            continue
        else:  # hostile token replacing a field, keeping single spaces (so the fast path is tried)
            fields = line.split(b" ")
            fields[rng.randrange(len(fields))] = rng.choice(
                [b"nan", b"inf", b"1e400", b"0x10", b"99999999999999999999", b"1.5", b"\x80", b"x"])
            line = b" ".join(fields)
        out[i] = line
        changed[i] = True
    data = b"\n".join(out) + (b"\n" if out else b"")
    return Mutated(data, out, {i + 1 for i, c in enumerate(changed) if c})


def split_data_lines(data: bytes) -> list[bytes]:
    """The lines of a file as the readers number them (a final newline ends the last line)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def file_data_lines(path: Path) -> list[bytes]:
    """:func:`split_data_lines` of a file's bytes."""
    return split_data_lines(path.read_bytes())


# --------------------------------------------------------------------------------------------
# reference parsers (plain Python, the documented grammar)

SKIP = "skip"
BAD = "bad"


def _fields(line: bytes) -> list[str] | str:
    raw = [f for f in _WS.split(line) if f]
    if not raw:
        return SKIP
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return BAD
    if b"\r" in line.strip(b" \t\r\x0b\x0c"):  # a CR between fields or inside one: never one record
        return BAD
    fields = [f.decode("utf-8") for f in raw]
    return SKIP if fields[0].startswith("#") else fields


#: the largest relevance grade (in magnitude) the qrels format allows
MAX_GRADE = 1000


def _score(token: str) -> float | None:
    if not FLOAT_RE.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def ref_trec_run_line(line: bytes) -> tuple | str:
    """``(query_id, doc_id, score, rank)``, ``SKIP`` (blank / comment) or ``BAD``."""
    fields = _fields(line)
    if isinstance(fields, str):
        return fields
    glued = len(fields) >= 12 and INT_RE.fullmatch(fields[9]) and FLOAT_RE.fullmatch(fields[10])
    if len(fields) < 6 or glued or not INT_RE.fullmatch(fields[3]):
        return BAD
    score = _score(fields[4])
    if score is None:
        return BAD
    return fields[0], fields[2], score, int(fields[3])


def ref_trec_qrels_line(line: bytes) -> tuple | str:
    """``(query_id, doc_id, relevance)``, ``SKIP`` or ``BAD``."""
    fields = _fields(line)
    if isinstance(fields, str):
        return fields
    if len(fields) != 4 or not INT_RE.fullmatch(fields[3]) or abs(int(fields[3])) > MAX_GRADE:
        return BAD
    return fields[0], fields[2], int(fields[3])


def _json_id(value: Any) -> str | None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _json_score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _loads(line: bytes) -> Any:
    """The JSON value of a line, or BAD: not UTF-8, not JSON, too deep, too long a number, or a
    string holding a lone UTF-16 surrogate (valid JSON syntax, but no text)."""
    try:
        value = json.loads(line.decode("utf-8"))
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except (UnicodeError, ValueError, RecursionError):
        return BAD


def ref_jsonl_run_line(line: bytes) -> tuple[list[tuple], bool] | str:
    """``(rows, any_problem)`` of one JSONL results line (rows ``(query_id, doc_id, score,
    rank)``), ``SKIP`` or ``BAD``."""
    if not line.strip():
        return SKIP
    rec = _loads(line)
    if not isinstance(rec, dict):
        return BAD
    qid = _json_id(rec.get("query_id", rec.get("qid")))
    results = rec.get("results")
    if qid is None or not isinstance(results, list):
        return BAD
    rows, problem = [], False
    for pos, item in enumerate(results, start=1):
        doc = _json_id(item.get("doc_id")) if isinstance(item, dict) else None
        score = _json_score(item.get("score")) if doc is not None else None
        if doc is None or score is None:
            problem = True
            continue
        rows.append((qid, doc, score, pos))
    return rows, problem


# --------------------------------------------------------------------------------------------
# JSON-level mutations

#: JSON text that has broken a parser (replaces a placeholder after json.dumps)
HOSTILE_JSON_TEXT = ["[" * 100_000, "9" * 5000, "1" + "0" * 400, "-1e400", "NaN", "Infinity", "18446744073709551616",
                     "1.5", "true", "null", '""', "[]", "{}", '"\\ud800"', '"x"', "[[[[[[[[[[1]]]]]]]]]]"]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):
            out += _paths(v, (*prefix, i))
    return out


def mutate_json_value(value: Any, rng: random.Random, n_mutations: int) -> str:
    """JSON text of ``value`` with ``n_mutations`` values (at random paths) replaced by hostile JSON."""
    value = json.loads(json.dumps(value))
    placeholders: dict[str, str] = {}
    paths = _paths(value)
    for k in range(n_mutations):
        if not paths:
            break
        path = rng.choice(paths)
        target = value
        for key in path[:-1]:
            target = target[key]
        marker = f"__HOSTILE_{k}__"
        try:
            target[path[-1]] = marker
        except (IndexError, KeyError, TypeError):
            continue
        placeholders[f'"{marker}"'] = rng.choice(HOSTILE_JSON_TEXT)
        paths = _paths(value)
    text = json.dumps(value, ensure_ascii=False)
    for marker, hostile in placeholders.items():
        text = text.replace(marker, hostile)
    return text


def mutate_jsonl(lines: list[bytes], rng: random.Random, n_mutations: int) -> Mutated:
    """Damage a JSONL file: hostile values inside records, and byte-level damage; the first line
    is never damaged (a file starting with '[' would be read as one JSON array)."""
    out = list(lines)
    mutated: set[int] = set()
    for _ in range(n_mutations):
        if len(out) < 2:
            break
        i = rng.randrange(1, len(out))
        if rng.random() < 0.6:
            rec = _loads(out[i])
            if rec is BAD:
                continue
            out[i] = mutate_json_value(rec, rng, rng.randint(1, 3)).encode("utf-8", errors="surrogatepass")
            mutated.add(i + 1)
        else:
            one = mutate_lines([out[i]], rng, 1, long_line=20_000)
            if len(one.lines) == 1:
                out[i] = one.lines[0]
                mutated.add(i + 1)
    return Mutated(b"\n".join(out) + b"\n", out, mutated)
