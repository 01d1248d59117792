"""RETECO Track 1 (TEMPO) data: readers, topics metadata and ir_datasets registrations.

Release layout (the RETECO release of TEMPO, arXiv:2601.09523; the organisers' ``build_release.py``), under
``$RETECO_DATA/reteco/track1_tempo/<domain>/``:

* ``documents.jsonl`` — the full domain corpus, ``{"id", "content"}`` per line (``doc_id`` /
  ``text`` accepted); ids look like ``bitcoin/25785deb_4434.txt``;
* ``examples_{train,dev}.jsonl`` — 1a queries ``{"id", "query", "gold_ids", "gold_answers"}``;
* ``steps_{train,dev}.jsonl`` — 1b: one record per query, ``{"id", "query", "steps": [{"step_id",
  "step", "step_instruction", "gold_ids"}]}``; step ids are ``<query_id>_step<n>``;
* ``guidance_{train,dev}.jsonl`` (optional) — ``{"id", "query_guidance": {..., "key_time_anchors":
  [...], "retrieval_plan": [...]}, "gold_passage_annotations": [...]}``;
* ``qrels_{split}.txt`` (1a) and ``qrels_steps_{split}.txt`` (1b) — TREC qrels, binary.

Datasets (``ir_datasets.load(name)``; every name also has topics metadata, ``rm.topics(name)``):

====================================  ==========================================================
``reteco/tempo``                      docs of all 13 domains
``reteco/tempo/<domain>``             docs of one domain
``reteco/tempo/<domain>/<split>``     1a: docs, queries (``examples_<split>``), qrels
``reteco/tempo/<domain>/<split>/steps``  1b: docs, step queries (with ``parent_id``), step qrels
``reteco/tempo/<split>``              1a over all domains
``reteco/tempo/<split>/steps``        1b over all domains
====================================  ==========================================================

Ids are kept exactly as released, so a participant's run matches. TEMPO query ids are
``<Stack Exchange post id>_<running number over the whole benchmark>`` and document ids start
with ``<domain>/``, so they are unique across domains; the all-domains datasets *check* this and
raise `DataFormatError` naming both domains if an id repeats,
instead of silently merging two queries.

Topics metadata (`tempo_topics`, ``rm.topics(name)``) is one frame with a row per query
*and* a row per step (``kind``), so the same frame serves 1a and 1b: ``domain``, ``parent_id``
(steps), ``step``, ``text``, ``required_periods`` (query rows: the guidance's
``key_time_anchors`` where the guidance file gives them, otherwise the query's step ids — the
``periods`` parameter; step rows: the step itself), ``periods_source`` and ``steps`` (the
release's step records ``[{"step_id", "step", "gold_ids"}]``; a step row holds itself). The
``steps`` column is what the starter-kit oracle of TC / nDCG|FC reads (see
`reteco_measures.kernels.temporal`).

The ir_datasets datasets and `tempo_files_dataset`
live in `reteco_measures.benchmarks.tempo.irds` (registered when ir_datasets is imported).
Lookups by id use an ir_datasets docstore built on first use under
``$IR_DATASETS_HOME/reteco_measures/tempo/`` (keyed by the documents file's path, size and
modification time, so a changed corpus is re-indexed and the data folder can be read-only).
"""


import dataclasses
import hashlib
import json
import os
import re
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from ...datasets.base import ENV_VAR, DataFile, MissingDataError, add_topics, data_root
from ...errors import DataFormatError, Problem, report_problems
from ...io.jsonl import iter_jsonl
from ...io.readers import read_qrels_with_problems
from ..reteco.contract import declare_distinct_doc_ids

__all__ = [
    "read_duplicate_map",
    "map_duplicates",
    "TEMPO_DOMAINS",
    "TEMPO_SPLITS",
    "TRACK_DIR",
    "TempoDoc",
    "TempoQuery",
    "TempoStep",
    "TempoData",
    "read_documents",
    "read_doc_ids",
    "clear_corpus_cache",
    "CACHE_ENV",
    "corpus_cache_dir",
    "read_examples",
    "read_steps",
    "read_guidance",
    "read_tempo_qrels",
    "steps_to_rows",
    "build_topics",
    "tempo_domains",
    "tempo_topics",
    "load_tempo",
    "load_tempo_files",
    "load_tempo_organiser_sample",
    "ORGANISER_SAMPLE_FILES",
]

#: the 13 TEMPO domains of the RETECO release
TEMPO_DOMAINS: tuple[str, ...] = (
    "bitcoin", "cardano", "economics", "genealogy", "history", "hsm", "iota",
    "law", "monero", "politics", "quant", "travel", "workplace",
)
#: released splits (a hidden ``test`` split in the same layout is read the same way by the functions)
TEMPO_SPLITS: tuple[str, ...] = ("train", "dev")
#: folder of Track 1 under the data root
TRACK_DIR = "reteco/track1_tempo"

Periods = Literal["guidance", "steps"]
BadLines = Literal["warn", "error", "skip"]


class TempoDoc(NamedTuple):
    """A TEMPO passage (Stack Exchange text, raw HTML kept). ``domain``: its release folder."""

    doc_id: str
    text: str
    domain: str

    def default_text(self) -> str:
        return self.text


class TempoQuery(NamedTuple):
    """A 1a query: ``text`` is the release's ``query`` (title, newline, HTML body)."""

    query_id: str
    text: str
    domain: str

    def default_text(self) -> str:
        return self.text


class TempoStep(NamedTuple):
    """A 1b step topic: ``text`` is the step instruction, ``parent_id`` its query."""

    query_id: str
    text: str
    parent_id: str
    step: int
    domain: str

    def default_text(self) -> str:
        return self.text


# ------------------------------------------------------------------------------------------------
# low-level readers (usable on any file, e.g. the organisers' stripped sample)


def require_file(path: str | os.PathLike, what: str) -> Path:
    """``path`` as a `Path`; `MissingDataError` naming ``what`` when nothing is there."""
    p = Path(path)
    if not p.exists():
        raise MissingDataError(f"missing {what}: {p} does not exist")
    return p


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return None


def read_documents(path: str | os.PathLike, domain: str, *, on_bad_lines: BadLines = "warn") -> Iterator[TempoDoc]:
    """Stream the passages of a ``documents.jsonl`` (``id``/``doc_id`` and ``content``/``text``).

    Malformed lines are skipped and reported per ``on_bad_lines`` (the problems are collected
    and reported when the stream ends).
    """
    p = require_file(path, f"TEMPO {domain} documents")
    problems: list[Problem] = []
    for line, rec in iter_jsonl(p, problems):
        did = rec.get("id", rec.get("doc_id"))
        if did is None:
            problems.append(Problem("no 'id' field", line=line, path=str(p), kind="field"))
            continue
        yield TempoDoc(str(did), str(rec.get("content", rec.get("text", "")) or ""), domain)
    report_problems(problems, on_bad_lines, str(p))


_ID_FIRST = re.compile(rb'^\s*\{\s*"id"\s*:\s*"((?:[^"\\]|\\.)*)"\s*[,}]')
#: the same pattern for Arrow's RE2 (``\s`` spelled out: Python's bytes ``\s`` also matches ``\v``)
_ID_FIRST_RE2 = r'^[ \t\n\r\f\v]*\{[ \t\n\r\f\v]*"id"[ \t\n\r\f\v]*:[ \t\n\r\f\v]*"(?P<id>(?:[^"\\]|\\.)*)"[ \t\n\r\f\v]*[,}]'

#: (path, size, mtime_ns, domain) -> (ids frame, problems, ids distinct): `read_doc_ids` parses a
#: file once
_DOC_IDS: dict[tuple, tuple[pd.DataFrame, list[Problem], bool]] = {}
#: the file keys of a `load_tempo` corpus -> the concatenated frame (one object per release, so
#: that indexes built on it, e.g. the ``reteco`` contract's id index, are built once)
_CORPORA: dict[tuple, pd.DataFrame] = {}
_CACHE_SIZE = 64


def clear_corpus_cache() -> None:
    """Forget every corpus id list read so far (`read_doc_ids`, `load_tempo`); the next call
    reads the files again. A changed file (size or modification time) is read again anyway."""
    _DOC_IDS.clear()
    _CORPORA.clear()


def _file_key(path: Path, domain: str) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, domain)


def read_doc_ids(path: str | os.PathLike, domain: str = "", *, cache: bool = True) -> pd.DataFrame:
    """Document ids of a ``documents.jsonl`` in corpus order (``doc_id``, ``domain``), without
    decoding the passage text when the line starts with the ``"id"`` key (as the release writes
    it); any other line is decoded in full (``id``, else ``doc_id``).

    A file is parsed once per process: the ids are kept, keyed by the file's resolved path, size
    and modification time (a changed file is read again; `clear_corpus_cache` forgets them); a
    file's problems warn at every call. Each call returns its own frame (sharing the columns).

    With ``cache=True`` (the default) the parsed ids and the file's problems are also kept on
    disk, one Arrow IPC file per documents file in `corpus_cache_dir` (``$RETECO_MEASURES_CACHE``,
    else ``$XDG_CACHE_HOME/reteco-measures`` or ``~/.cache/reteco-measures``), so a new process
    (a second ``reteco-measures score`` command) reads them memory-mapped instead of parsing the
    file. An entry is used only when the file's resolved path, size and modification time (ns)
    and the cache format version match and its row count and CRC-32 checksum of the ids verify;
    otherwise, and whenever the cache folder cannot be written, the file is parsed (never an
    error). ``cache=False`` or ``RETECO_MEASURES_CACHE=off`` turns the disk cache off."""
    p = require_file(path, f"TEMPO {domain} documents".replace("  ", " "))
    key = _file_key(p, domain)
    cached = _DOC_IDS.get(key)
    if cached is None:
        cached = _DOC_IDS[key] = _cached_doc_ids(p, key, domain, cache)
        if len(_DOC_IDS) > _CACHE_SIZE:
            _DOC_IDS.pop(next(iter(_DOC_IDS)))
    frame, problems, _ = cached
    report_problems(list(problems), "warn", str(p))
    return frame.copy(deep=False)


# ------------------------------------------------------------------------------------------------
# the on-disk cache of parsed corpus ids

#: environment variable: the folder of the on-disk caches; ``off`` (or ``0``, ``false``, ``no``,
#: ``none``) turns them off
CACHE_ENV = "RETECO_MEASURES_CACHE"
_CACHE_OFF = ("off", "0", "false", "no", "none")
#: version of the cache files' layout; a file of another version is parsed again
_CACHE_FORMAT = "1"
_CACHE_SUBDIR = "corpus-ids"


def corpus_cache_dir() -> Path | None:
    """The folder the parsed corpus ids are cached in, or None when the disk cache is off.

    ``$RETECO_MEASURES_CACHE`` when set (``off``, ``0``, ``false``, ``no`` or ``none`` turn the
    cache off), else ``$XDG_CACHE_HOME/reteco-measures`` or ``~/.cache/reteco-measures``
    (``%LOCALAPPDATA%\\reteco-measures`` on Windows); the ids live in its ``corpus-ids/``
    sub-folder. The folder is not created here."""
    env = os.environ.get(CACHE_ENV)
    if env is not None and env.strip():
        if env.strip().lower() in _CACHE_OFF:
            return None
        return Path(env).expanduser() / _CACHE_SUBDIR
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        base = os.environ["LOCALAPPDATA"]
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "reteco-measures" / _CACHE_SUBDIR


def _cache_file(folder: Path, source: str) -> Path:
    """The cache file of one documents file (one entry per path: a changed file overwrites it)."""
    digest = hashlib.sha256(f"{_CACHE_FORMAT}\0{source}".encode("utf-8", "surrogatepass")).hexdigest()
    return folder / f"{digest[:32]}.arrow"


def _ids_checksum(ids: pa.Array) -> int:
    """CRC-32 of the ids' offsets (from 0) and bytes: independent of how the array is sliced."""
    n = len(ids)
    if n == 0:
        return 0
    _, off_buf, data_buf = ids.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64, count=n + 1, offset=ids.offset * 8)
    crc = zlib.crc32((offsets - offsets[0]).tobytes())
    data = memoryview(data_buf)[int(offsets[0]):int(offsets[-1])] if data_buf is not None else b""
    return zlib.crc32(data, crc)


def _cache_meta(key: tuple, ids: pa.Array, problems: list[Problem], distinct: bool) -> dict[bytes, bytes]:
    source, size, mtime_ns, _ = key
    rows = [{k: v for k, v in dataclasses.asdict(pr).items() if k != "path"} for pr in problems]
    return {b"format": _CACHE_FORMAT.encode(), b"source": source.encode("utf-8", "surrogatepass"),
            b"size": str(size).encode(), b"mtime_ns": str(mtime_ns).encode(), b"rows": str(len(ids)).encode(),
            b"crc32": str(_ids_checksum(ids)).encode(), b"problems": json.dumps(rows).encode(),
            b"distinct": b"1" if distinct else b"0"}


def _read_cached_ids(file: Path, key: tuple, p: Path) -> tuple[pa.Array, list[Problem], bool] | None:
    """The ids and problems of a valid cache entry for ``key``, else None (missing, stale, another
    format, truncated or corrupt: the caller parses the file)."""
    try:
        with pa.memory_map(str(file), "r") as source:
            reader = ipc.open_file(source)
            meta = reader.schema.metadata or {}
            expected = _cache_meta(key, pa.array([], pa.large_string()), [], False)
            for name in (b"format", b"source", b"size", b"mtime_ns"):
                if meta.get(name) != expected[name]:
                    return None
            table = reader.read_all()
        if table.schema.names != ["doc_id"] or table.column(0).type != pa.large_string():
            return None
        ids = table.column(0).combine_chunks()
        if (len(ids) != int(meta[b"rows"]) or ids.null_count
                or _ids_checksum(ids) != int(meta[b"crc32"])):
            return None
        problems = [Problem(**{**row, "path": str(p)}) for row in json.loads(meta[b"problems"])]
        distinct = {b"1": True, b"0": False}[meta[b"distinct"]]
    except Exception:  # noqa: BLE001 - a cache that cannot be read is ignored, never an error
        return None
    return ids, problems, distinct


def _write_cached_ids(folder: Path, file: Path, key: tuple, ids: pa.Array, problems: list[Problem],
                      distinct: bool) -> None:
    """Write one cache entry atomically (a temporary file in the folder, then `os.replace`);
    a folder that cannot be written is silently skipped."""
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=file.name + ".", suffix=".tmp", dir=folder)
        schema = pa.schema([("doc_id", pa.large_string())], metadata=_cache_meta(key, ids, problems, distinct))
        with os.fdopen(fd, "wb") as f, ipc.new_file(f, schema) as writer:
            writer.write_table(pa.table({"doc_id": ids}, schema=schema))
        os.replace(tmp, file)
        tmp = None
    except Exception:  # noqa: BLE001 - an unwritable cache only costs the next process a parse
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _cached_doc_ids(p: Path, key: tuple, domain: str, cache: bool) -> tuple[pd.DataFrame, list[Problem], bool]:
    """(ids frame, problems, whether the ids are distinct) of one file: from the disk cache when it
    holds a valid entry, else parsed (and the entry written when the file did not change while it
    was parsed)."""
    folder = corpus_cache_dir() if cache else None
    file = _cache_file(folder, key[0]) if folder is not None else None
    hit = _read_cached_ids(file, key, p) if file is not None else None
    if hit is not None:
        ids, problems, distinct = hit
        return pd.DataFrame({"doc_id": pd.array(ids, dtype="str"), "domain": domain}), problems, distinct
    frame, problems = _parse_doc_ids(p, domain)
    ids = pa.array(frame["doc_id"].array, type=pa.large_string())
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    distinct = len(pc.unique(ids)) == len(ids)
    if file is not None:
        try:
            unchanged = _file_key(p, domain) == key
        except OSError:
            unchanged = False
        if unchanged:
            _write_cached_ids(folder, file, key, ids, problems, distinct)
    return frame, problems, distinct


def _parse_doc_ids(p: Path, domain: str) -> tuple[pd.DataFrame, list[Problem]]:
    """(ids frame, problems) of one file: the lines that start with a plain ``"id"`` key through
    one vectorised regular expression (Arrow), every other line as `_doc_id_of_line` reads it."""
    data = p.read_bytes()
    buf = np.frombuffer(data, dtype=np.uint8)
    offsets = np.r_[0, np.flatnonzero(buf == 10) + 1].astype(np.int64)
    if offsets[-1] != len(data):
        offsets = np.append(offsets, len(data))
    lines = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(offsets) - 1,
                                             [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    found = pc.struct_field(pc.extract_regex(lines, _ID_FIRST_RE2), [0])
    # an id with an escape (a backslash) is decoded by json, as the line-by-line reading does
    plain = pc.and_(pc.is_valid(found), pc.invert(pc.match_substring(found, "\\")))
    plain = plain.fill_null(False).to_numpy(zero_copy_only=False)
    try:  # the ids as text (a byte sequence that is not UTF-8 goes the line-by-line way)
        text = pc.cast(found, pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _parse_doc_ids_lines(p, domain)
    rest = np.flatnonzero(~plain)
    problems: list[Problem] = []
    if not len(rest):
        ids = pd.array(text, dtype="str") if len(text) else pd.array([], dtype="str")
        return pd.DataFrame({"doc_id": ids, "domain": domain}), problems
    values = text.to_numpy(zero_copy_only=False)
    keep = plain.copy()
    for i in rest.tolist():
        did = _doc_id_of_line(data[offsets[i]:offsets[i + 1]], i + 1, p, problems)
        if did is not None:
            values[i], keep[i] = did, True
    return pd.DataFrame({"doc_id": pd.array(values[keep].tolist(), dtype="str"), "domain": domain}), problems


def _doc_id_of_line(raw: bytes, line: int, p: Path, problems: list[Problem]) -> str | None:
    """One line's document id (None for a blank line or a problem, appended to ``problems``)."""
    if not raw.strip():
        return None
    m = _ID_FIRST.match(raw)
    if m is not None:  # the release writes "id" first: read it without decoding the text
        return json.loads(b'"' + m.group(1) + b'"')
    try:
        rec = json.loads(raw)
        did = rec.get("id", rec.get("doc_id")) if isinstance(rec, dict) else None
    except json.JSONDecodeError as exc:
        problems.append(Problem(f"not valid JSON: {exc.msg}", line=line, path=str(p)))
        return None
    if did is None:
        problems.append(Problem("no 'id' field", line=line, path=str(p), kind="field"))
        return None
    return str(did)


def _parse_doc_ids_lines(p: Path, domain: str) -> tuple[pd.DataFrame, list[Problem]]:
    """(ids frame, problems), line by line (files whose ids are not all UTF-8)."""
    ids: list[str] = []
    problems: list[Problem] = []
    with open(p, "rb") as f:
        for i, raw in enumerate(f, start=1):
            did = _doc_id_of_line(raw, i, p, problems)
            if did is not None:
                ids.append(did)
    return pd.DataFrame({"doc_id": pd.array(ids, dtype="str"), "domain": domain}), problems


def read_examples(path: str | os.PathLike, domain: str, *, on_bad_lines: BadLines = "warn") -> pd.DataFrame:
    """1a queries of an ``examples_<split>.jsonl``: ``query_id, text, gold_ids, domain, line``."""
    p = require_file(path, f"TEMPO {domain} queries")
    problems: list[Problem] = []
    rows = []
    for line, rec in iter_jsonl(p, problems):
        if rec.get("id") is None:
            problems.append(Problem("no 'id' field", line=line, path=str(p), kind="field"))
            continue
        gold = _str_list(rec.get("gold_ids", []))
        if gold is None:
            problems.append(Problem("'gold_ids' must be a list", line=line, query_id=str(rec["id"]), path=str(p),
                                    kind="field"))
            gold = []
        rows.append({"query_id": str(rec["id"]), "text": str(rec.get("query") or ""), "gold_ids": gold,
                     "domain": domain, "line": line})
    report_problems(problems, on_bad_lines, str(p))
    return pd.DataFrame(rows, columns=["query_id", "text", "gold_ids", "domain", "line"])


def _step_record(qid: str, position: int, step: Any, path: Path, line: int,
                 problems: list[Problem]) -> dict | None:
    if not isinstance(step, dict):
        problems.append(Problem(f"step {position} is not an object", line=line, query_id=qid, path=str(path),
                                kind="field"))
        return None
    number = step.get("step", position)
    try:
        number = int(number)
    except (TypeError, ValueError):
        number = position
    gold = _str_list(step.get("gold_ids", []))
    if gold is None:
        problems.append(Problem(f"step {position}: 'gold_ids' must be a list", line=line, query_id=qid,
                                path=str(path), kind="field"))
        gold = []
    sid = step.get("step_id")
    return {"step_id": str(sid) if sid is not None else f"{qid}_step{number}", "step": number,
            "step_instruction": str(step.get("step_instruction") or ""), "gold_ids": gold}


def read_steps(path: str | os.PathLike, domain: str, *, on_bad_lines: BadLines = "warn") -> pd.DataFrame:
    """1b records of a ``steps_<split>.jsonl``: ``query_id, text, steps, domain, line`` where
    ``steps`` is a list of ``{"step_id", "step", "step_instruction", "gold_ids"}`` (a missing
    ``step_id`` becomes ``<query_id>_step<step>``). A record without a ``steps`` list has no steps
    (as in the organisers' stripped sample)."""
    p = require_file(path, f"TEMPO {domain} steps")
    problems: list[Problem] = []
    rows = []
    for line, rec in iter_jsonl(p, problems):
        if rec.get("id") is None:
            problems.append(Problem("no 'id' field", line=line, path=str(p), kind="field"))
            continue
        qid = str(rec["id"])
        raw_steps = rec.get("steps", [])
        if not isinstance(raw_steps, list):
            problems.append(Problem("'steps' must be a list", line=line, query_id=qid, path=str(p), kind="field"))
            raw_steps = []
        steps = [s for i, st in enumerate(raw_steps, start=1)
                 if (s := _step_record(qid, i, st, p, line, problems)) is not None]
        rows.append({"query_id": qid, "text": str(rec.get("query") or ""), "steps": steps, "domain": domain,
                     "line": line})
    report_problems(problems, on_bad_lines, str(p))
    return pd.DataFrame(rows, columns=["query_id", "text", "steps", "domain", "line"])


def read_guidance(path: str | os.PathLike, *, on_bad_lines: BadLines = "warn") -> pd.DataFrame:
    """Temporal guidance of a ``guidance_<split>.jsonl``: ``query_id, key_time_anchors (list of str),
    temporal_class`` (``query_guidance.temporal_reasoning_class_primary``)."""
    p = require_file(path, "TEMPO guidance")
    problems: list[Problem] = []
    rows = []
    for line, rec in iter_jsonl(p, problems):
        if rec.get("id") is None:
            problems.append(Problem("no 'id' field", line=line, path=str(p), kind="field"))
            continue
        guidance = rec.get("query_guidance") or {}
        if not isinstance(guidance, dict):
            problems.append(Problem("'query_guidance' must be an object", line=line, query_id=str(rec["id"]),
                                    path=str(p), kind="field"))
            guidance = {}
        anchors = _str_list(guidance.get("key_time_anchors")) or []
        rows.append({"query_id": str(rec["id"]), "key_time_anchors": list(dict.fromkeys(anchors)),
                     "temporal_class": guidance.get("temporal_reasoning_class_primary")})
    report_problems(problems, on_bad_lines, str(p))
    return pd.DataFrame(rows, columns=["query_id", "key_time_anchors", "temporal_class"])


def read_tempo_qrels(path: str | os.PathLike, what: str = "TEMPO qrels") -> pd.DataFrame:
    """TREC qrels (tab- or space-separated): ``query_id, doc_id, relevance, line``; malformed lines
    are skipped with a warning naming ``path:line``."""
    p = require_file(path, what)
    frame, problems = read_qrels_with_problems(str(p), "trec")
    report_problems(problems, "warn", str(p))
    return frame[["query_id", "doc_id", "relevance", "line"]]


def steps_to_rows(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per step of `read_steps` records: ``query_id`` (the step id), ``parent_id``,
    ``step``, ``text`` (instruction), ``gold_ids``, ``domain``."""
    rows = [
        {"query_id": s["step_id"], "parent_id": qid, "step": s["step"], "text": s["step_instruction"],
         "gold_ids": s["gold_ids"], "domain": dom}
        for qid, dom, lst in zip(steps["query_id"], steps["domain"], steps["steps"], strict=True)
        for s in lst
    ]
    frame = pd.DataFrame(rows, columns=["query_id", "parent_id", "step", "text", "gold_ids", "domain"])
    frame["step"] = frame["step"].astype("Int64")
    return frame


def build_topics(examples: pd.DataFrame, steps: pd.DataFrame | None, guidance: pd.DataFrame | None = None,
                 *, periods: Periods = "guidance") -> pd.DataFrame:
    """The combined topics frame (query rows + step rows) from parsed release files.

    Args:
        examples: `read_examples` output (one or several domains).
        steps: `read_steps` output, or None (no steps: no oracle periods).
        guidance: `read_guidance` output (+ ``domain`` not needed), or None.
        periods: ``'guidance'`` (default): a query's ``required_periods`` are the guidance's
            ``key_time_anchors`` when it has any, else its step ids; ``'steps'``: always its step
            ids (the starter kit's notion: one step = one period).
    """
    if periods not in ("guidance", "steps"):
        raise ValueError(f"periods must be 'guidance' or 'steps', not {periods!r}")
    step_lists: dict[str, list] = {}
    step_text: dict[str, str] = {}
    step_domain: dict[str, str] = {}
    instructions: dict[str, str] = {}
    if steps is not None:
        for qid, text, dom, lst in zip(steps["query_id"], steps["text"], steps["domain"], steps["steps"],
                                       strict=True):
            step_lists[qid] = [{"step_id": s["step_id"], "step": s["step"], "gold_ids": s["gold_ids"]} for s in lst]
            step_text[qid], step_domain[qid] = text, dom
            instructions.update((s["step_id"], s["step_instruction"]) for s in lst)
    anchors: dict[str, list[str]] = {}
    if guidance is not None and periods == "guidance":
        anchors = {q: a for q, a in zip(guidance["query_id"], guidance["key_time_anchors"], strict=True) if a}
    queries = [(q, t, d) for q, t, d in zip(examples["query_id"], examples["text"], examples["domain"], strict=True)]
    known = set(examples["query_id"])
    queries += [(q, step_text[q], step_domain[q]) for q in step_lists if q not in known]
    rows = []
    for qid, text, dom in queries:
        lst = step_lists.get(qid, [])
        if qid in anchors:
            required, source = anchors[qid], "guidance"
        elif lst:
            required, source = [s["step_id"] for s in lst], "steps"
        else:
            required, source = [], "none"
        rows.append({"query_id": qid, "kind": "query", "domain": dom, "parent_id": None, "step": None,
                     "text": text, "required_periods": required, "periods_source": source, "steps": lst})
        for s in lst:
            rows.append({"query_id": s["step_id"], "kind": "step", "domain": dom, "parent_id": qid,
                         "step": s["step"], "text": instructions.get(s["step_id"], ""),
                         "required_periods": [s["step_id"]], "periods_source": "step", "steps": [s]})
    cols = ["query_id", "kind", "domain", "parent_id", "step", "text", "required_periods", "periods_source", "steps"]
    frame = pd.DataFrame(rows, columns=cols)
    frame["step"] = frame["step"].astype("Int64")
    return frame


# ------------------------------------------------------------------------------------------------
# the release layout


def tempo_file(domain: str, name: str, what: str, root: str | os.PathLike | None) -> DataFile:
    """The TEMPO file ``name`` of ``domain`` under the data root (``what`` names it in messages)."""
    return DataFile(f"{TRACK_DIR}/{domain}/{name}", what, root)


def tempo_domains(split: str | None = None, root: str | os.PathLike | None = None) -> list[str]:
    """Domains present under ``<root>/reteco/track1_tempo/`` (official domains first, in
    `TEMPO_DOMAINS` order, then other folders sorted); with ``split``, only those holding ``examples_<split>.jsonl``."""
    base = data_root(root) / TRACK_DIR
    if not base.is_dir():
        source = f" (that is ${ENV_VAR}/{TRACK_DIR}/<domain>/...)" if root is None else ""
        raise MissingDataError(f"missing TEMPO release folder: put the Track 1 release at {base}/<domain>/..."
                               f"{source}, or load loose files with "
                               "load_tempo_files() / the organisers' sample with load_tempo_organiser_sample()")
    present = sorted(p.name for p in base.iterdir() if p.is_dir()
                     and (split is None or (p / f"examples_{split}.jsonl").is_file()))
    ordered = [d for d in TEMPO_DOMAINS if d in present] + [d for d in present if d not in TEMPO_DOMAINS]
    if not ordered:
        wanted = f"examples_{split}.jsonl" if split else "documents.jsonl"
        raise MissingDataError(f"no TEMPO domain found: put the release at {base}/<domain>/{wanted}")
    return ordered


def _check_unique(frame: pd.DataFrame, what: str) -> None:
    dup = frame.duplicated("query_id", keep=False)
    if dup.any():
        problems = []
        for qid, part in frame[dup].groupby("query_id", sort=True):
            doms = ", ".join(dict.fromkeys(part["domain"].astype(str)))
            problems.append(Problem(f"{what} id appears more than once (domains: {doms}); ids must be unique "
                                    "across the all-domains dataset", query_id=str(qid), kind="duplicate"))
        raise DataFormatError(problems)


def _domains_arg(domains: str | Iterable[str] | None, split: str | None,
                 root: str | os.PathLike | None) -> list[str]:
    if domains is None:
        return tempo_domains(split, root)
    return [domains] if isinstance(domains, str) else list(domains)


def tempo_topics(
    split: str = "dev",
    domains: str | Iterable[str] | None = None,
    *,
    root: str | os.PathLike | None = None,
    periods: Periods = "guidance",
    require_steps: bool = False,
) -> pd.DataFrame:
    """Topics metadata of a split (see the module docs): query rows and step rows.

    Args:
        split: ``'train'`` / ``'dev'`` (any ``examples_<split>.jsonl``).
        domains: one domain, several, or None for every domain present.
        root: data root (default ``$RETECO_DATA``).
        periods: where query rows' ``required_periods`` come from (see `build_topics`).
        require_steps: raise if ``steps_<split>.jsonl`` is missing (1b); otherwise a missing steps
            file only means "no steps" (1a topics without oracle periods).
    """
    doms = _domains_arg(domains, split, root)
    ex_parts, st_parts, gd_parts = [], [], []
    for dom in doms:
        ex_parts.append(read_examples(tempo_file(dom, f"examples_{split}.jsonl", f"TEMPO {dom} {split} queries",
                                            root).path(), dom))
        steps_file = tempo_file(dom, f"steps_{split}.jsonl", f"TEMPO {dom} {split} steps", root)
        if steps_file.exists() or require_steps:
            st_parts.append(read_steps(steps_file.path(), dom))
        guidance_file = tempo_file(dom, f"guidance_{split}.jsonl", f"TEMPO {dom} {split} guidance", root)
        if guidance_file.exists():
            gd_parts.append(read_guidance(guidance_file.path()))
    examples = pd.concat(ex_parts, ignore_index=True)
    steps = pd.concat(st_parts, ignore_index=True) if st_parts else None
    guidance = pd.concat(gd_parts, ignore_index=True) if gd_parts else None
    topics = build_topics(examples, steps, guidance, periods=periods)
    if len(doms) > 1:
        _check_unique(topics, "query/step")
    return topics


@dataclass
class TempoData:
    """One TEMPO split loaded for scoring.

    Attributes:
        topics: combined query + step rows (`tempo_topics`).
        qrels: ``query_id, doc_id, relevance, line, domain`` — 1a qrels, or step qrels for 1b.
        corpus: ``doc_id, domain`` of every document of the loaded domains, in corpus order (None
            when `load_tempo_files` was given no documents file).
        domains: the domains loaded.
        steps: whether this is the 1b (step) view.
        problems: data problems found while loading (qrels topics not in the topics file, ...).
        duplicates: ``removed, kept, domain`` from each domain's ``duplicate_map.json`` (data v1.1
            removed duplicate documents from the Track 1 corpora; empty when no map is shipped).
    """

    topics: pd.DataFrame
    qrels: pd.DataFrame
    corpus: pd.DataFrame | None
    domains: list[str]
    steps: bool
    problems: list[Problem] = field(default_factory=list)
    duplicates: pd.DataFrame = field(default_factory=lambda: pd.DataFrame({"removed": [], "kept": [],
                                                                            "domain": []}, dtype=object))

    @property
    def query_ids(self) -> list[str]:
        """The expected run topics: query ids (1a) or step ids (1b)."""
        kind = "step" if self.steps else "query"
        return self.topics.loc[self.topics["kind"] == kind, "query_id"].astype(str).tolist()


def read_duplicate_map(path: str | os.PathLike, domain: str) -> pd.DataFrame:
    """A data v1.1 ``duplicate_map.json`` (``{removed id: kept id}``, written by the organisers'
    deduplication of the Track 1 corpora) as ``removed, kept, domain``.

    Raises:
        DataFormatError: the file is not a JSON object of strings (named with the file).
    """
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataFormatError([Problem(f"not a readable JSON duplicate map ({exc})", path=str(path))]) from None
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise DataFormatError([Problem("a duplicate map is a JSON object {removed id: kept id} of strings",
                                       path=str(path))])
    return pd.DataFrame({"removed": list(raw), "kept": list(raw.values()), "domain": domain}, dtype=object)


def map_duplicates(frame: pd.DataFrame, duplicates: pd.DataFrame, column: str = "doc_id") -> tuple[pd.DataFrame, int]:
    """``frame`` with removed duplicate ids in ``column`` renamed to their kept id (per domain when
    ``frame`` has a ``domain`` column); returns the frame and how many rows were renamed."""
    if not len(duplicates) or not len(frame):
        return frame, 0
    lookup = duplicates.drop_duplicates("removed").set_index("removed")["kept"]
    mapped = frame[column].astype(str).map(lookup)
    hit = mapped.notna().to_numpy()
    if not hit.any():
        return frame, 0
    out = frame.copy()
    out.loc[hit, column] = mapped[hit].to_numpy()
    return out, int(hit.sum())


def _unknown_qrels_topics(qrels: pd.DataFrame, known: pd.Series, what: str, path: str) -> list[Problem]:
    """One problem per qrels topic not in ``known`` (at its first line, in file order); the rows are kept."""
    unknown = qrels.loc[~qrels["query_id"].isin(set(known))].drop_duplicates("query_id")
    return [Problem(f"qrels topic is not a {what} (kept)", line=int(line), query_id=str(qid), path=path,
                    kind="unknown_query")
            for qid, line in zip(unknown["query_id"].tolist(), unknown["line"].tolist(), strict=True)]


def load_tempo(
    split: str = "dev",
    *,
    steps: bool = False,
    root: str | os.PathLike | None = None,
    domains: str | Iterable[str] | None = None,
    periods: Periods = "guidance",
    corpus: bool = True,
) -> TempoData:
    """Load a TEMPO split of the release for scoring (what the ``reteco-1a`` / ``reteco-1b``
    presets use).

    Args:
        split: ``'train'`` / ``'dev'``.
        steps: load the 1b view (step qrels ``qrels_steps_<split>.txt``) instead of 1a.
        root: data root (default ``$RETECO_DATA``).
        domains: one domain, several, or None for every domain present.
        periods: ``required_periods`` source (see `build_topics`).
        corpus: read the documents' ids (for the run contract's unknown-document check). The
            ids of a release are read once per process, and from the on-disk cache in a new
            process (see `read_doc_ids`): loading the same
            files again returns the same ``corpus`` frame, which callers must not modify in place.
    """
    doms = _domains_arg(domains, split, root)
    topics = tempo_topics(split, doms, root=root, periods=periods, require_steps=steps)
    qrels_parts, corpus_parts, problems, dup_parts = [], [], [], []
    corpus_keys: list[tuple] = []
    distinct = len(set(doms)) == len(doms)
    kind = "step" if steps else "query"
    for dom in doms:
        dup_file = tempo_file(dom, "duplicate_map.json", f"TEMPO {dom} duplicate map", root)
        if Path(dup_file.path(force=False)).is_file():
            dup_parts.append(read_duplicate_map(dup_file.path(), dom))
        name = f"qrels_steps_{split}.txt" if steps else f"qrels_{split}.txt"
        qfile = tempo_file(dom, name, f"TEMPO {dom} {split} {'step ' if steps else ''}qrels", root)
        q = read_tempo_qrels(qfile.path())
        q["domain"] = dom
        known = topics.loc[(topics["domain"] == dom) & (topics["kind"] == kind), "query_id"]
        problems += _unknown_qrels_topics(q, known, f"{kind} of the {dom} {split} topics", qfile.path())
        qrels_parts.append(q)
        if corpus:
            doc_file = tempo_file(dom, "documents.jsonl", f"TEMPO {dom} documents", root).path()
            corpus_parts.append(read_doc_ids(doc_file, dom))
            corpus_keys.append(_file_key(Path(doc_file), dom))
            cached = _DOC_IDS.get(corpus_keys[-1])
            # distinct over the release: distinct in each file, each file's ids under its own
            # "<domain>/" (the release's ids), so that no id repeats across files
            distinct = distinct and cached is not None and cached[2] and bool(pc.all(pc.starts_with(
                pa.array(corpus_parts[-1]["doc_id"].array), f"{dom}/")).as_py() is not False)
    qrels = pd.concat(qrels_parts, ignore_index=True)
    docs = _CORPORA.get(tuple(corpus_keys)) if corpus_parts else None
    if docs is None:  # one frame per release: the contract's id index is built on it once
        docs = (pd.concat(corpus_parts, ignore_index=True) if corpus_parts
                else pd.DataFrame({"doc_id": pd.array([], dtype="str"), "domain": []}))
        if corpus_parts:
            if distinct:  # the id index is the ids themselves: no dictionary encoding of them
                declare_distinct_doc_ids(docs)
            _CORPORA[tuple(corpus_keys)] = docs
            if len(_CORPORA) > _CACHE_SIZE:
                _CORPORA.pop(next(iter(_CORPORA)))
    data = TempoData(topics, qrels, docs, doms, steps, problems)
    if dup_parts:
        data.duplicates = pd.concat(dup_parts, ignore_index=True)
    return data


# ------------------------------------------------------------------------------------------------
# loose files and the organisers' public sample

#: file names of the organisers' public TEMPO sample (one folder, no domain sub-folders)
ORGANISER_SAMPLE_FILES = {"examples": "examples.jsonl", "steps": "steps.jsonl", "documents": "documents.jsonl",
                          "qrels": "qrels.txt"}
#: domain given to rows whose ids carry no ``<domain>/`` prefix (and no ``domain=`` was passed)
NO_DOMAIN = "(none)"


def _id_domain(ids: pd.Series) -> pd.Series:
    """``bitcoin/25785deb_4434.txt`` → ``bitcoin``; ids without a ``/`` give NA."""
    return ids.astype(str).str.extract(r"^([^/]+)/", expand=False)


def load_tempo_files(
    examples: str | os.PathLike | None = None,
    steps: str | os.PathLike | None = None,
    documents: str | os.PathLike | None = None,
    qrels: str | os.PathLike | None = None,
    *,
    guidance: str | os.PathLike | None = None,
    step_view: bool = False,
    domain: str | None = None,
    periods: Periods = "guidance",
) -> TempoData:
    """Load TEMPO reference data from explicit files, in any layout, into the same
    `TempoData` that `load_tempo` gives for a release tree.

    Args:
        examples: 1a queries (``examples_<split>.jsonl`` form: ``{"id", "query", "gold_ids"}``).
        steps: 1b records (``steps_<split>.jsonl`` form); needed for the 1b view and for oracle
            periods. A steps file whose records carry no ``steps`` lists (the organisers' public
            sample) gives queries without steps.
        documents: the corpus (``{"id", "content"}`` per line); only the ids are read. Without it
            ``corpus`` is None and a run contract cannot check document ids.
        qrels: TREC qrels of the queries (1a) or of the steps (``step_view=True``).
        guidance: optional guidance file (``key_time_anchors`` become required periods).
        step_view: the 1b view (step topics, step qrels) instead of 1a.
        domain: give every row this domain. By default a query's domain is the ``<domain>/``
            prefix of its first gold document id (else of its first qrels document), a document's
            the prefix of its id, as in the release's ids (``bitcoin/25785deb_4434.txt``); rows
            without a prefix get ``"(none)"``.
        periods: where query rows' ``required_periods`` come from (see `build_topics`).

    Raises:
        ValueError: neither ``examples`` nor ``steps`` given, or ``step_view`` without step lists.
        MissingDataError: a named file does not exist (the message names it).
        DataFormatError: a query or step id repeats across domains.

    Problems found while loading (qrels topics that are no topic, bad lines) are kept in
    ``.problems`` and malformed lines are warned about, as for `load_tempo`.
    """
    if examples is None and steps is None:
        raise ValueError("TEMPO topics needed: give examples= (1a queries) and/or steps= (1b step records)")
    qrels_frame = (read_tempo_qrels(qrels) if qrels is not None
                   else pd.DataFrame({"query_id": pd.array([], dtype="str"), "doc_id": pd.array([], dtype="str"),
                                      "relevance": pd.array([], dtype="int64"), "line": pd.array([], dtype="int64")}))
    label = domain if domain is not None else ""
    ex = read_examples(examples, label) if examples is not None else None
    st = read_steps(steps, label) if steps is not None else None
    if ex is None:  # 1b only: the step records are the queries
        ex = st[["query_id", "text"]].assign(gold_ids=st["steps"].map(
            lambda lst: [d for s in lst for d in s["gold_ids"]]), domain=label, line=st["line"])
    if domain is None:
        first_gold = ex["gold_ids"].map(lambda g: g[0] if len(g) else "")
        qrels_first = qrels_frame.drop_duplicates("query_id").set_index("query_id")["doc_id"]
        from_gold = _id_domain(first_gold)
        from_qrels = _id_domain(ex["query_id"].map(qrels_first).fillna(""))
        ex["domain"] = from_gold.fillna(from_qrels).fillna(NO_DOMAIN).to_numpy()
        if st is not None:
            st["domain"] = st["query_id"].map(ex.set_index("query_id")["domain"]).fillna(NO_DOMAIN).to_numpy()
    if step_view and (st is None or not st["steps"].map(len).any()):
        where = f" ({steps})" if steps is not None else ""
        raise ValueError(f"the 1b view needs step records: the steps file{where} must list each query's "
                         "'steps' (the organisers' public sample strips them; score its queries with the 1a view)")
    gd = read_guidance(guidance) if guidance is not None else None
    topics = build_topics(ex, st, gd, periods=periods)
    _check_unique(topics, "query/step")
    kind = "step" if step_view else "query"
    rows = topics[topics["kind"] == kind]
    qrels_frame["domain"] = qrels_frame["query_id"].map(rows.set_index("query_id")["domain"]).fillna(
        NO_DOMAIN if domain is None else domain).astype(str).to_numpy()
    problems = _unknown_qrels_topics(qrels_frame, rows["query_id"], f"{kind} of the topics", str(qrels))
    corpus = None
    if documents is not None:
        corpus = read_doc_ids(documents, label)
        if domain is None:
            corpus["domain"] = _id_domain(corpus["doc_id"]).fillna(NO_DOMAIN).to_numpy()
    domains = list(dict.fromkeys(rows["domain"].astype(str).tolist()))
    return TempoData(topics, qrels_frame, corpus, domains, step_view, problems)


def load_tempo_organiser_sample(
    folder: str | os.PathLike,
    *,
    periods: Periods = "guidance",
    corpus: bool = True,
) -> TempoData:
    """The RETECO organisers' public TEMPO sample: ``examples.jsonl``, ``steps.jsonl``,
    ``documents.jsonl`` and ``qrels.txt`` in one folder (no domain sub-folders), loaded as the 1a
    view with `load_tempo_files`.

    Each query's domain is the folder part of its gold document ids (``bitcoin/…``), so per-domain
    results work as on the release. The sample's ``steps.jsonl`` carries no step lists, so its
    queries have no oracle periods (``periods_source`` ``'none'``) and there is no 1b view;
    ``steps.jsonl`` and ``documents.jsonl`` are optional (``corpus=False`` skips the corpus).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise MissingDataError(f"missing TEMPO organiser sample folder: {folder} is not a folder (it should hold "
                               + ", ".join(ORGANISER_SAMPLE_FILES.values()) + ")")
    paths = {key: folder / name for key, name in ORGANISER_SAMPLE_FILES.items()}
    for key in ("examples", "qrels"):
        require_file(paths[key], f"TEMPO organiser sample {key} file")
    return load_tempo_files(
        paths["examples"],
        steps=paths["steps"] if paths["steps"].is_file() else None,
        documents=paths["documents"] if corpus and paths["documents"].is_file() else None,
        qrels=paths["qrels"],
        periods=periods,
    )


def _topics_factory(split: str, domains: tuple[str, ...] | None, steps: bool):
    def factory() -> pd.DataFrame:
        return tempo_topics(split, list(domains) if domains else list(TEMPO_DOMAINS), require_steps=steps)

    return factory


def _declare_topics() -> None:
    for split in TEMPO_SPLITS:
        for doms in [None, *((d,) for d in TEMPO_DOMAINS)]:
            base = f"reteco/tempo/{doms[0]}/{split}" if doms else f"reteco/tempo/{split}"
            for steps, name in ((False, base), (True, f"{base}/steps")):
                add_topics(name, _topics_factory(split, doms, steps))


_declare_topics()
