"""Codabench: the scoring program of a competition and the bundle that carries it.

Codabench (the platform SemEval tasks run on) starts a competition's scoring program as
``<command> <input> <output>``, where ``<input>/ref`` holds the reference data and
``<input>/res`` the participant's submission (unzipped), and reads ``<output>/scores.json`` —
one key per leaderboard column — plus, when detailed results are enabled,
``<output>/detailed_results.html``. Whatever the program writes to stderr is what the participant
sees when a submission fails.

`score_codabench` is that program for every benchmark of this package:

* ``ref`` is the benchmark's data root (the layout ``--data`` takes elsewhere);
* ``res`` holds the submission: one file of any name (a TREC run, the benchmark's JSONL/JSON),
  possibly compressed, or a zip of it; Codabench's own ``metadata`` file and hidden files are
  ignored;
* it writes ``scores.json`` (see `scores_json`), ``scores.txt`` (the legacy ``key: value``
  form) and ``detailed_results.html`` (`reteco_measures.report.html.score_html`);
* exit code 0 when the submission is scored (an invalid ChunQiu batch is *scored* 0, as the task
  rules say), 1 when it is invalid by any other benchmark's rules or unreadable (Codabench then
  marks it failed and shows the messages), 2 for a broken set-up (no ``ref``).

`build_bundle` writes a competition bundle: ``competition.yaml`` whose leaderboard columns
are exactly the keys the scoring program writes (`leaderboard_columns`), the reference
data, the scoring program with its ``metadata.yaml`` command, a ``Dockerfile`` for an image with
reteco-measures installed, and pages generated from the benchmark's declaration.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import tempfile
import warnings
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import errors
from .._version import __version__
from ..benchmarks import benchmark as get_benchmark
from ..datasets.base import MissingDataError
from ..errors import DataFormatError, DataFormatWarning, count_problems
from ..report.html import escape_html, page, score_html
from .submission import BoundedRunError, SubmissionError, SubmissionLimits, read_submission, run_bounded

__all__ = [
    "CodabenchResult",
    "score_codabench",
    "scores_json",
    "scores_txt",
    "find_submission",
    "leaderboard_columns",
    "parse_settings",
    "build_bundle",
    "build_wheel",
    "wheel_from_installed",
    "SubmissionError",
    "SubmissionLimits",
    "FORMAT_KINDS",
]

#: problem kinds that are format problems: a submission with any of them is failed with the
#: problems listed (the SemEval/Codabench rule), never scored around them
FORMAT_KINDS = frozenset({"format", "encoding", "score", "field", "unknown_field", "empty"})


@dataclass
class CodabenchResult:
    """What one scoring run produced.

    Attributes:
        exit_code: 0 scored, 1 failed submission (refused, invalid, unreadable, over a limit,
            or the scorer failed on it), 2 broken set-up.
        scores: the ``scores.json`` content (empty when nothing was scored).
        messages: lines for stderr (problems named by file and line, warnings, the reason of a
            failure) — what Codabench shows the participant.
        score: the `Score`, when the submission was scored in
            this process (``limits`` without a time or memory bound); None otherwise.
        submission: the submission as the participant named it (``upload.zip/run.txt``).
        official_measure: the official measure's name, when scored.
        official: its value, when scored.
        valid: whether the submission is valid, when scored.
    """

    exit_code: int
    scores: dict[str, Any] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    score: Any = None
    submission: str | None = None
    official_measure: str | None = None
    official: float | None = None
    valid: bool | None = None


# ------------------------------------------------------------------------------------------------
# the submission


def find_submission(res_dir: str | os.PathLike, scratch: str | os.PathLike,
                    limits: SubmissionLimits | None = None) -> Path:
    """The one submission file of ``res_dir``, unpacked into ``scratch`` as a plain file (see
    `reteco_measures.platforms.submission.read_submission`).

    Raises:
        SubmissionError: no file, several files, a folder, a link, a damaged or unsafe archive, a
            limit passed.
    """
    return read_submission(res_dir, scratch, limits).path


# ------------------------------------------------------------------------------------------------
# options


def _option_value(opt: Any, text: str, ref: Path | None) -> Any:
    if opt.action in ("store_true", "store_false"):
        low = text.strip().lower()
        if low not in ("true", "false", "1", "0", "yes", "no"):
            raise ValueError(f"--set {opt.name}: expected true or false, not {text!r}")
        value = low in ("true", "1", "yes")
        return value if opt.action == "store_true" else not value
    if opt.action == "store_const":
        return opt.const if text.strip().lower() in ("true", "1", "yes") else opt.default
    value: Any = opt.type(text) if opt.type is not None else text
    if opt.choices is not None and value not in opt.choices:
        raise ValueError(f"--set {opt.name}: {value!r} is not one of {list(opt.choices)}")
    if isinstance(value, str) and ref is not None and not os.path.isabs(value) and (ref / value).exists():
        return str(ref / value)  # a file of the reference data, named relative to it
    return value


def parse_settings(bench: Any, settings: Sequence[str] | Mapping[str, Any] | None,
                   ref: str | os.PathLike | None = None) -> dict[str, Any]:
    """Benchmark options from ``NAME=VALUE`` strings (``labels=labels_test.jsonl``): values are
    converted as the option declares; a relative path naming a file under ``ref`` is resolved
    against it. Unknown names are a ValueError listing the benchmark's options."""
    if settings is None:
        return {}
    if isinstance(settings, Mapping):
        items = [(str(k), v) for k, v in settings.items()]
    else:
        items = []
        for s in settings:
            if "=" not in s:
                raise ValueError(f"--set expects NAME=VALUE, not {s!r}")
            k, v = s.split("=", 1)
            items.append((k.strip().replace("-", "_"), v))
    declared = {o.name: o for o in bench.cli.options}
    out: dict[str, Any] = {}
    root = Path(ref) if ref is not None else None
    for k, v in items:
        if k not in declared:
            raise ValueError(f"benchmark {bench.name!r} has no option {k!r}; options: {sorted(declared)}")
        out[k] = _option_value(declared[k], v, root) if isinstance(v, str) else v
    return out


# ------------------------------------------------------------------------------------------------
# outputs


def _number(value: Any) -> Any:
    if value is None:
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def scores_json(score: Any) -> dict[str, Any]:
    """The ``scores.json`` of a scored submission: the ``metrics`` object of
    ``reteco-measures score NAME --format json`` (stable keys such as ``ndcg_10``, ``tp_10``,
    ``reward``; iKAT keys carry task and qrels, ``passage_nist_ndcg_3``) plus ``valid`` (1 or 0).
    A measure defined on no query (``nDCG|FC`` when no query is fully covered) is ``null``:
    Codabench shows an empty cell, never a made-up 0."""
    out = {k: _number(v) for k, v in score.metrics().items()}
    out["valid"] = 1 if score.valid else 0
    return out


def scores_txt(scores: Mapping[str, Any]) -> str:
    """The legacy CodaLab ``scores.txt``: one ``key: value`` line per score (``NaN`` for null)."""
    lines = []
    for k, v in scores.items():
        lines.append(f"{k}: {'NaN' if v is None else repr(float(v)) if not isinstance(v, int) else v}")
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Write ``text`` atomically (a temporary file beside it, renamed); the temporary file never
    stays behind, even when the text cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _failure_html(benchmark: str, messages: Sequence[str], limit: int = 1000) -> str:
    items = "".join(f"<li>{escape_html(m)}</li>" for m in messages[:limit])
    more = f"<p>... and {len(messages) - limit} more.</p>" if len(messages) > limit else ""
    return page(f"{benchmark}: submission not scored",
                f"<h1>{escape_html(benchmark)}</h1><p class=\"bad\">The submission could not be scored.</p>"
                f"<ul class=\"problems\">{items}</ul>{more}")


#: what the participant is shown when the scorer's own set-up is at fault (the detail is in the log)
MISCONFIGURED = ("The scorer is misconfigured: its reference data is missing or damaged. This is not a problem "
                 "of your submission; the organisers have been told in the scoring log. Please contact them.")


def _misconfigured(benchmark: str, detail: str, shown: str | None = None) -> dict[str, Any]:
    """A set-up fault (exit 2): the participant's page says the scorer is misconfigured; the
    organiser-facing ``detail`` (what is missing, where) goes to the log only."""

    html = page(f"{benchmark}: scorer misconfigured",
                f"<h1>{escape_html(benchmark)}</h1><p class=\"bad\">{escape_html(MISCONFIGURED)}</p>")
    return {"code": 2, "messages": [detail], "html": html, "submission": shown}


def _setup_fault(exc: BaseException, ref: Path, sub_path: str | None) -> bool:
    """Whether a scoring failure is the reference data's (missing or broken), not the submission's."""

    if isinstance(exc, MissingDataError):
        return True
    text = str(exc)
    if sub_path and sub_path in text:
        return False
    problems = getattr(exc, "problems", None) or []
    paths = [str(getattr(p, "path", "") or "") for p in problems]
    refs = (str(ref), str(ref.resolve()))
    return any(r in text for r in refs) or any(path.startswith(refs) for path in paths if path)


def _problem_lines(problems: Sequence[Any], limit: int) -> list[str]:
    lines = [f"{getattr(p, 'severity', 'error')}: {p}" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more problems (see detailed_results.html)")
    return lines


def _score_submission(inp: str, benchmark: str, split: str | None, options: dict[str, Any], limit: int,
                      limits: SubmissionLimits, scratch: str, keep_score: bool) -> dict[str, Any]:
    """Unpack and score the submission (in the bounded child process): everything the parent
    writes, as plain data. Every failure is a message for the participant."""

    bench = get_benchmark(benchmark)
    ref = Path(inp) / "ref"
    shown: str | None = None
    sub_path: str | None = None

    def clean(text: str) -> str:  # the participant's name for the file, never our scratch path
        return text.replace(sub_path, shown) if sub_path and shown else text

    def failed(messages: list[str]) -> dict[str, Any]:
        messages = [clean(m) for m in messages]
        return {"code": 1, "messages": messages, "html": _failure_html(benchmark, messages), "submission": shown}

    try:
        sub = read_submission(Path(inp) / "res", scratch, limits)
        shown, sub_path = sub.name, str(sub.path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            score = bench.score(sub.path, data=ref, split=split, **options)
    except MemoryError:
        limit_text = f" (limit {limits.max_memory / (1 << 30):.1f} GiB)" if limits.max_memory else ""
        return failed([f"error: scoring ran out of memory{limit_text}; submit a smaller run"])
    except (SubmissionError, DataFormatError, FileNotFoundError, ValueError, UnicodeError, OSError) as exc:
        if _setup_fault(exc, ref, sub_path):
            return _misconfigured(benchmark, f"set-up error: the reference data is missing or broken: {exc}", shown)
        return failed([f"error: {exc}"])
    except Exception as exc:  # noqa: BLE001  (a bug of ours: the participant still gets a page)
        return failed([f"error: the scorer failed on this submission ({type(exc).__name__}: {exc}); please "
                       "report it to the organisers"])
    fatal = _fatal_warnings()
    messages: list[str] = []
    for w in caught:
        if issubclass(w.category, fatal):
            messages.insert(0, f"error: {w.message}")
        elif issubclass(w.category, (DataFormatWarning, UserWarning)):
            messages.append(f"warning: {w.message}")
    problems = list(score.report.errors)
    fmt = [p for p in problems if getattr(p, "kind", None) in FORMAT_KINDS]
    if fmt:  # the SemEval/Codabench rule: a format problem fails the submission, with every line named
        head = (f"error: {len(fmt)} format problem{'s' if len(fmt) != 1 else ''} in {shown}; the submission "
                "is not scored — fix every line listed and upload again")
        lines = [f"error: {p}" for p in fmt]  # each fails the submission, whatever its severity elsewhere
        if any(p.kind == "empty" for p in fmt):  # no usable row: the lines whose rows were removed say why
            why = [p for p in problems if p.kind not in FORMAT_KINDS and p.kind != "missing_query"]
            lines.extend(f"{p.severity}: {p}" for p in why)
            total = count_problems(why)
            if total > len(why):
                lines.append(f"... and {total - sum(1 for p in why if p.count == 1):,} more row(s) removed")
        shown_lines = lines[:limit] + ([f"... and {len(lines) - limit} more (see detailed_results.html)"]
                                       if len(lines) > limit else [])
        return failed([head, *shown_lines]) | {"html": _failure_html(benchmark, [clean(m) for m in [head, *lines]])}
    if any(m.startswith("error: ") for m in messages):
        return failed(messages + _problem_lines(problems, limit))
    messages.extend(_problem_lines(problems, limit))
    scores = scores_json(score)
    if score.valid:
        code = 0
    else:  # invalid: scored 0 where the rules say so (ChunQiu), otherwise a failed submission
        code = 0 if bench.invalid_scores_zero else 1
        messages.insert(0, "the submission is invalid" + (" and scores 0 (task rules)" if code == 0 else ""))
    try:
        html = score_html(score)
    except Exception as exc:  # noqa: BLE001  (the scores stand; the page says what failed)
        html = _failure_html(benchmark, [f"the detailed results could not be drawn ({type(exc).__name__}: {exc})"])
    return {"code": code, "scores": scores, "messages": [clean(m) for m in messages], "html": clean(html),
            "submission": shown, "official_measure": score.official_measure,
            "official": _number(score.official), "valid": bool(score.valid),
            "score": score if keep_score else None}


def score_codabench(
    input_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    benchmark: str,
    split: str | None = None,
    *,
    settings: Sequence[str] | Mapping[str, Any] | None = None,
    limit: int = 50,
    limits: SubmissionLimits | None = None,
) -> CodabenchResult:
    """Score ``input_dir/res`` against ``input_dir/ref`` and write the outputs Codabench reads.

    The submission is unpacked by `read_submission`
    and scored in a child process bounded by ``limits`` (time and memory); whatever goes wrong —
    a refused or damaged upload, a format problem, a limit reached, a crash of the scorer — ends
    in exit code 1, the reason on stderr and a ``detailed_results.html`` that says it.

    Args:
        input_dir: Codabench's input folder (``ref`` and ``res`` inside).
        output_dir: where ``scores.json``, ``scores.txt`` and ``detailed_results.html`` go.
        benchmark: the benchmark's name (``reteco-1a``, ``chunqiu``, ...).
        split: the split (default: the benchmark's).
        settings: benchmark options, ``NAME=VALUE`` strings or a mapping (see
            `parse_settings`).
        limit: problems listed in the messages (all are in the detailed results).
        limits: the submission's bounds (default `SubmissionLimits`); with
            ``max_seconds=None`` and ``max_memory=None`` it is scored in this process and the
            result carries the `Score`.

    Returns:
        a `CodabenchResult`; nothing is printed here (the command line prints ``messages``).
    """

    inp, out = Path(input_dir), Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    bench = get_benchmark(benchmark)
    limits = limits or SubmissionLimits()
    ref = inp / "ref"
    if not ref.is_dir():
        msg = f"set-up error: no reference data at {ref} (the competition's reference_data)"
        _write(out / "detailed_results.html", _misconfigured(benchmark, msg)["html"])
        return CodabenchResult(2, messages=[msg])
    try:
        options = parse_settings(bench, settings, ref)
    except ValueError as exc:
        msg = f"set-up error: {exc}"
        _write(out / "detailed_results.html", _misconfigured(benchmark, msg)["html"])
        return CodabenchResult(2, messages=[msg])
    in_process = limits.max_seconds is None and limits.max_memory is None
    with tempfile.TemporaryDirectory(prefix="reteco-codabench-") as scratch:
        try:
            outcome = run_bounded(_score_submission, (str(inp), benchmark, split, options, limit, limits, scratch,
                                                      in_process),
                                  max_seconds=limits.max_seconds, max_memory=limits.max_memory)
        except BoundedRunError as exc:
            msg = f"error: {exc}"
            outcome = {"code": 1, "messages": [msg], "html": _failure_html(benchmark, [msg])}
    scores = outcome.get("scores") or {}
    if scores:
        _write(out / "scores.json", json.dumps(scores, indent=2) + "\n")
        _write(out / "scores.txt", scores_txt(scores))
    _write(out / "detailed_results.html", outcome["html"])
    return CodabenchResult(outcome["code"], scores=scores, messages=list(outcome["messages"]),
                           score=outcome.get("score"), submission=outcome.get("submission"),
                           official_measure=outcome.get("official_measure"), official=outcome.get("official"),
                           valid=outcome.get("valid"))


def _fatal_warnings() -> tuple[type[Warning], ...]:
    """Warnings that mean a number would be a silent zero: they fail the submission."""

    names = ("QueryIdMismatchWarning", "EmptyInputWarning")
    found = tuple(getattr(errors, n) for n in names if hasattr(errors, n))
    return found or (errors.DataFormatWarning,)


# ------------------------------------------------------------------------------------------------
# the bundle


def leaderboard_columns(bench: Any, data: str | os.PathLike, split: str | None = None,
                        options: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """The leaderboard columns (``key``, ``title``) the scoring program writes for ``bench``,
    official measure first.

    The keys are found by scoring an empty submission against the reference data (every
    benchmark reports every measure even for an empty run), so they are exactly what
    `scores_json` writes — never a hand-kept list that can drift.
    """
    with tempfile.TemporaryDirectory(prefix="reteco-columns-") as tmp:
        empty = Path(tmp) / "empty_submission.txt"
        empty.write_text("", encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            score = bench.score(empty, data=data, split=split, **dict(options or {}))
    cols = []
    for rec in score.records():
        title_bits = [str(rec[k]) for k in score.keys if rec.get(k) is not None]
        title = " ".join([*title_bits, str(rec["measure"])])
        cols.append({"key": rec["key"], "title": title})
    return cols


def _yaml(value: Any, indent: int = 0) -> str:
    """A small YAML emitter for the bundle's plain data (strings JSON-quoted: valid YAML)."""
    pad = "  " * indent
    if isinstance(value, Mapping):
        lines = []
        for k, v in value.items():
            if isinstance(v, (Mapping, list)) and v:
                lines.append(f"{pad}{k}:\n{_yaml(v, indent + 1)}")
            else:
                lines.append(f"{pad}{k}: {_scalar(v)}")
        return "\n".join(lines)
    if isinstance(value, list):
        lines = []
        for v in value:
            if isinstance(v, Mapping) and v:
                inner = _yaml(v, indent + 1).split("\n")
                inner[0] = f"{pad}- {inner[0].lstrip()}"
                lines.append("\n".join(inner))
            else:
                lines.append(f"{pad}- {_scalar(v)}")
        return "\n".join(lines)
    return pad + _scalar(value)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (Mapping, list)):
        return "{}" if isinstance(v, Mapping) else "[]"
    return json.dumps(str(v), ensure_ascii=False)


def _png(width: int = 96, height: int = 96, rgb: tuple[int, int, int] = (32, 84, 147)) -> bytes:
    """A solid-colour PNG (the bundle's required logo; organisers replace it)."""
    row = b"\x00" + bytes(rgb) * width
    raw = row * height

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
_TABLE_BORDER = re.compile(r"^ *=+( +=+)+ *$")


def _rst_table(lines: list[str]) -> list[str]:
    """An RST simple table (``===  ===`` borders) as a Markdown table."""
    border = lines[0]
    starts = [m.start() for m in re.finditer(r"=+", border)]
    rows = [ln for ln in lines if not _TABLE_BORDER.match(ln)]
    cells = [[_inline(ln[a:b].strip()) for a, b in zip(starts, [*starts[1:], None])] for ln in rows]
    n_borders = sum(1 for ln in lines if _TABLE_BORDER.match(ln))
    header = cells[0] if n_borders >= 3 else [""] * len(starts)
    body = cells[1:] if n_borders >= 3 else cells
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(starts)]
    out += ["| " + " | ".join(c.replace("|", "&#124;") for c in row) + " |" for row in body]
    return out


def rst_to_markdown(text: str) -> str:
    """The reStructuredText of a docstring as Markdown, for Codabench's pages (which render
    Markdown): ````code```` → ```code```, roles (```x```) → ```x```, ``Title::`` blocks →
    fenced code, simple tables → Markdown tables, section underlines → headings, directives
    dropped."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _TABLE_BORDER.match(line):
            j = i + 1
            borders = 1
            while j < len(lines) and lines[j].strip() and borders < 3:
                borders += bool(_TABLE_BORDER.match(lines[j]))
                j += 1
            out.extend(_rst_table(lines[i:j]))
            i = j
            continue
        if (i + 1 < len(lines) and line.strip() and re.fullmatch(r"([=\-~^])\1{2,}", lines[i + 1].strip())
                and len(lines[i + 1].strip()) >= len(line.strip())):
            out.append(f"## {_inline(line.strip())}")
            i += 2
            continue
        if line.strip().startswith(".. ") and line.strip().endswith("::"):
            i += 1
            continue
        if line.rstrip().endswith("::"):
            head = line.rstrip()[:-2].rstrip()
            if head:
                out.append(_inline(head) + ":")
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
            out += ["", "```", *[b[indent:] for b in block], "```", ""]
            continue
        out.append(_inline(line))
        i += 1
    return "\n".join(out)


def _inline(line: str) -> str:
    line = _ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1] if m.group(0).find('~') >= 0 else m.group(1)}`", line)
    return re.sub(r"``(.+?)``", r"`\1`", line)


def _source_root() -> Path | None:
    """The source tree this package is imported from (a folder with ``pyproject.toml``), if any."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "reteco_measures").is_dir() else None


def build_wheel(dest: str | os.PathLike) -> Path:
    """The wheel of the code this package runs from, written into ``dest``.

    From a source tree (a checkout, an editable install): ``pip wheel . --no-deps`` without build
    isolation (no package index needed). From an installed package (``pip install .`` or a wheel
    from an index): `wheel_from_installed` repacks the installed distribution's own files.

    Raises:
        FileNotFoundError: neither a source tree nor an installed distribution with its file
            list (pass the wheel to ship as ``package=``).
        RuntimeError: pip failed (its output is in the message), or an installed file no longer
            has the hash its distribution recorded.
    """
    import subprocess
    import sys

    root = _source_root()
    if root is None:
        return wheel_from_installed(dest)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(root), "--no-deps", "--no-build-isolation",
                           "-w", str(dest), "-q"], capture_output=True, text=True)
    wheels = sorted(dest.glob("reteco_measures-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise RuntimeError(f"pip wheel failed: {proc.stderr.strip()[-2000:]}")
    return wheels[-1]


#: dist-info files an installer writes about the installation, not part of the wheel (PEP 376, PEP 610)
_INSTALLER_FILES = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")


def _record_hash(data: bytes) -> str:
    import base64
    import hashlib

    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_from_installed(dest: str | os.PathLike) -> Path:
    """Repack the installed reteco-measures distribution (the one this package is imported from)
    as a pure-Python wheel ``reteco_measures-<version>-py3-none-any.whl`` in ``dest``.

    The wheel holds exactly the files the installation recorded (its ``RECORD``, the binary
    distribution format of PEP 427 / PEP 376) below the package folder and its ``.dist-info``
    (``METADATA``, ``entry_points.txt``, licence files), minus compiled ``.pyc`` files and the
    installer's own records; each file must still have its recorded hash, so the wheel is the
    installed release, not a modified copy. A fresh ``RECORD`` is written (and ``WHEEL`` where the
    installation kept none).

    Raises:
        FileNotFoundError: no installed distribution with a file list holds this package.
        RuntimeError: an installed file is missing or differs from its recorded hash.
    """
    import csv
    import importlib.metadata as md
    import io
    import zipfile

    site = Path(__file__).resolve().parents[2]
    dist = next((d for d in md.distributions(path=[str(site)])
                 if (d.metadata["Name"] or "").lower().replace("_", "-") == "reteco-measures"), None)
    if dist is None or not dist.files:
        raise FileNotFoundError(
            f"reteco-measures is neither running from a source tree nor installed with a file list in {site}: "
            "pass the wheel to ship (--package reteco_measures-X-py3-none-any.whl) or a requirement to install "
            "from an index (--package 'reteco-measures==X'); 'pip wheel <source folder> --no-deps' makes the wheel")
    version = dist.version
    info_dir = f"reteco_measures-{version}.dist-info"
    entries: list[tuple[str, bytes]] = []
    for f in dist.files:
        parts = f.parts
        if not parts or parts[0] == ".." or f.suffix == ".pyc" or "__pycache__" in parts:
            continue  # scripts outside site-packages are made by the installer from entry_points.txt
        top = parts[0]
        if top.endswith(".dist-info"):
            if parts[-1] in _INSTALLER_FILES and len(parts) == 2:
                continue
            name = "/".join((info_dir, *parts[1:]))
        elif top == "reteco_measures":
            name = "/".join(parts)
        else:
            continue
        full = Path(f.locate())
        if not full.is_file():
            raise RuntimeError(f"installed file missing: {full} (reinstall reteco-measures)")
        data = full.read_bytes()
        if f.hash is not None and _record_hash(data) != f"{f.hash.mode}={f.hash.value}":
            raise RuntimeError(f"installed file differs from its recorded hash: {full}; reinstall reteco-measures "
                               "or pass the wheel to ship with --package")
        entries.append((name, data))
    if not any(n == "reteco_measures/__init__.py" for n, _ in entries):
        raise FileNotFoundError(f"the installed distribution in {site} lists no reteco_measures/ files "
                                "(an editable install?): run from the source tree or pass --package")
    wheel_meta = (f"Wheel-Version: 1.0\nGenerator: reteco-measures {__version__} (repacked from the installed "
                  "distribution)\nRoot-Is-Purelib: true\nTag: py3-none-any\n").encode()
    if not any(n == f"{info_dir}/WHEEL" for n, _ in entries):  # the installed WHEEL file, else ours
        entries.append((f"{info_dir}/WHEEL", wheel_meta))
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data in entries:
        writer.writerow([name, _record_hash(data), len(data)])
    writer.writerow([f"{info_dir}/RECORD", "", ""])
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"reteco_measures-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
        zf.writestr(f"{info_dir}/RECORD", record.getvalue())
    return out


def _python_of(wheel: str) -> str:
    """The Python image tag for a wheel: its ``cpXY`` tag, else this interpreter's version."""
    import sys

    m = re.search(r"-cp(\d)(\d+)-", wheel)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    minor = f"{m.group(1)}.{m.group(2)}" if m else here
    return f"{minor}.{sys.version_info.micro}" if minor == here else minor


def _pages(bench: Any, split: str | None, columns: list[dict[str, str]], settings: Mapping[str, Any]) -> dict[str, str]:
    import inspect
    import sys

    declared = next((mod for name, mod in sorted(sys.modules.items())
                     if name.startswith("reteco_measures.benchmarks.") and mod is not None
                     and not hasattr(mod, "__path__")  # the declaring module, not a folder's face
                     and any(v is bench for v in vars(mod).values())), None)
    doc = rst_to_markdown(inspect.getdoc(declared) or "") if declared is not None else ""
    rows = "\n".join(f"| `{c['key']}` | {c['title'].replace('|', '&#124;')} |" for c in columns)
    overview = (f"# {bench.title}\n\n{rst_to_markdown(bench.cli.help)}\n\n"
                f"Submissions are scored by reteco-measures {__version__} "
                f"(`reteco-measures codabench score`), the same code as `reteco-measures score {bench.name}`.\n")
    evaluation = (f"# Evaluation\n\n{doc}\n\n## Leaderboard columns\n\n"
                  f"The official measure is `{columns[0]['title'] if columns else ''}` "
                  f"({bench.tables.aggregation}). Every column is a key of the scoring program's `scores.json`:\n\n"
                  f"| key | measure |\n|---|---|\n{rows}\n\n"
                  "`valid` (1 or 0) is written too. A measure defined on no query is left empty, never 0.\n\n"
                  "A failed submission shows its problems by file and line in the scoring output.\n")
    data_page = (f"# Data\n\nSplit: `{split or 'default'}`. Submission format: {rst_to_markdown(bench.cli.run_help)}.\n\n"
                 "Upload one file (it may be zipped or gzip/bz2/xz-compressed); its name does not matter. "
                 "A zip must hold the file itself, not a folder; links, password-protected or damaged "
                 "archives are refused, and so is a file with any format problem (every line is named in "
                 "the scoring output).\n")
    if settings:
        data_page += "\nScoring options: " + ", ".join(f"`{k}={v}`" for k, v in settings.items()) + "\n"
    terms = ("# Terms\n\nThe organisers state the terms of participation here (data licences, "
             "publication of results, one account per team).\n")
    return {"overview.md": overview, "evaluation.md": evaluation, "data.md": data_page, "terms.md": terms}


def build_bundle(
    benchmark: str,
    data: str | os.PathLike,
    out: str | os.PathLike,
    split: str | None = None,
    *,
    settings: Sequence[str] | Mapping[str, Any] | None = None,
    title: str | None = None,
    docker_image: str | None = None,
    start: str | None = None,
    package: str | os.PathLike | None = None,
    wheelhouse: str | os.PathLike | None = None,
    vendor_dependencies: bool = False,
) -> Path:
    """Write a Codabench competition bundle (a zip) for ``benchmark`` scored against ``data``.

    The bundle holds ``competition.yaml`` (one phase, one task, one leaderboard whose columns are
    `leaderboard_columns` plus ``valid`` — exactly the keys of ``scores.json``), ``logo.png``,
    ``pages/*.md`` generated from the benchmark's declaration (Markdown), ``reference_data/`` (a
    copy of ``data``), ``scoring_program/`` (``score.py`` calling ``reteco-measures codabench
    score`` and its ``metadata.yaml``/``metadata`` command) and ``docker/``: the ``Dockerfile``
    of the image named in ``docker_image`` (Python pinned to a full version) and ``wheels/``, the
    reteco-measures wheel it installs — the code that built the bundle, not a package index's.

    Args:
        benchmark: the benchmark's name.
        data: the reference data root (copied as the competition's reference data).
        out: the zip to write.
        split: the split scored (default: the benchmark's).
        settings: benchmark options baked into the scoring command (``NAME=VALUE``; paths under
            ``data`` are written relative to it).
        title: the competition title (default: the benchmark's).
        docker_image: the scoring image (default ``reteco-measures/scorer:<version>``: build it
            from ``docker/`` and push it under the name you choose).
        start: the phase start, ``YYYY-MM-DD HH:MM:SS`` (default: today, 00:00 UTC).
        package: what the image installs. None (default): a wheel built now from the source tree
            this package runs from (``pip wheel . --no-deps``); a ``.whl`` path: that wheel; any
            other text: a pip requirement (``reteco-measures==0.1.0``) installed from the image's
            package index (then nothing of ours is in the bundle).
        wheelhouse: a folder of wheels (e.g. made by ``pip download reteco-measures -d DIR``)
            copied beside ours: with it the image installs with ``--no-index``, offline.
        vendor_dependencies: run ``pip download`` for the wheel's dependencies into the bundle
            (needs the package index, or pip's cache, once; the image then builds offline).

    Returns:
        the path of the zip.
    """

    bench = get_benchmark(benchmark)
    data = Path(data)
    if not data.is_dir():
        raise FileNotFoundError(f"reference data folder not found: {data}")
    split = split if split is not None else bench.default_split
    opts = parse_settings(bench, settings, data)
    columns = leaderboard_columns(bench, data, split, opts)
    if not columns:
        raise ValueError(f"benchmark {benchmark!r} produced no scores on {data}")
    # the settings as the scoring program passes them: files of the reference data relative to it
    baked: dict[str, str] = {}
    for k, v in opts.items():
        if isinstance(v, str) and os.path.isabs(v) and Path(v).resolve().is_relative_to(data.resolve()):
            v = str(Path(v).resolve().relative_to(data.resolve()))
        baked[k] = str(v)
    image = docker_image or f"reteco-measures/scorer:{__version__}"
    start = start or datetime.now(timezone.utc).strftime("%Y-%m-%d 00:00:00")
    comp = {
        "version": 2,
        "title": title or f"{bench.title} (reteco-measures)",
        "description": bench.cli.help,
        "image": "logo.png",
        "terms": "pages/terms.md",
        "registration_auto_approve": False,
        "docker_image": image,
        "enable_detailed_results": True,
        "make_programs_available": True,
        "pages": [{"title": "Overview", "file": "pages/overview.md"},
                  {"title": "Evaluation", "file": "pages/evaluation.md"},
                  {"title": "Data", "file": "pages/data.md"},
                  {"title": "Terms", "file": "pages/terms.md"}],
        "phases": [{"index": 0, "name": f"{split or 'evaluation'} phase", "description": bench.cli.help,
                    "start": start, "tasks": [0]}],
        "tasks": [{"index": 0, "name": f"{bench.name} ({split or 'default'})",
                   "description": f"Scored by reteco-measures {__version__}",
                   "scoring_program": "scoring_program/", "reference_data": "reference_data/"}],
        "leaderboards": [{"index": 0, "title": "Results", "key": "main",
                          "columns": [*[{"title": c["title"], "key": c["key"], "index": i, "sorting": "desc",
                                         "precision": 4} for i, c in enumerate(columns)],
                                      {"title": "valid", "key": "valid", "index": len(columns), "sorting": "desc",
                                       "precision": 0}]}],
    }
    argv = ["codabench", "score", "INPUT", "OUTPUT", "--benchmark", bench.name]
    if split is not None:
        argv += ["--split", split]
    for k, v in baked.items():
        argv += ["--set", f"{k}={v}"]
    score_py = (
        '"""Codabench scoring program: reteco-measures codabench score <input> <output>."""\n'
        "import sys\n\nfrom reteco_measures.cli.main import main\n\n"
        f"ARGV = {json.dumps(argv)}\n\n"
        'if __name__ == "__main__":\n'
        "    if len(sys.argv) != 3:\n"
        '        sys.exit("usage: score.py INPUT_DIR OUTPUT_DIR")\n'
        "    argv = [sys.argv[1] if a == 'INPUT' else sys.argv[2] if a == 'OUTPUT' else a for a in ARGV]\n"
        "    sys.exit(main(argv))\n"
    )
    command = "command: python3 /app/program/score.py /app/input /app/output\n"
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="reteco-wheels-") as wheel_dir:
        wheels = _bundle_wheels(Path(wheel_dir), package, wheelhouse, vendor_dependencies)
        dockerfile = _dockerfile(image, wheels, package, __version__)
        _write_bundle(out, comp, bench, split, columns, baked, score_py, command, dockerfile, wheels, data)
    return out


def _bundle_wheels(dest: Path, package: str | os.PathLike | None, wheelhouse: str | os.PathLike | None,
                   vendor: bool) -> list[Path]:
    """The wheels ``docker/wheels/`` carries: ours first, then the dependencies."""
    import shutil
    import subprocess
    import sys

    if package is None:
        ours: Path | None = build_wheel(dest)
    elif str(package).endswith(".whl"):
        if not Path(package).is_file():
            raise FileNotFoundError(f"--package: no wheel at {package}")
        ours = Path(shutil.copy(package, dest))
    else:
        ours = None  # a requirement, installed from the index
    deps: list[Path] = []
    if wheelhouse is not None:
        found = sorted(Path(wheelhouse).glob("*.whl"))
        if not found:
            raise FileNotFoundError(f"--wheelhouse: no wheel in {wheelhouse}")
        for w in found:
            if ours is None or not w.name.startswith("reteco_measures-"):
                deps.append(Path(shutil.copy(w, dest)))
    if vendor:
        if ours is None:
            raise ValueError("vendor_dependencies needs the wheel in the bundle (package=None or a .whl)")
        deps_dir = dest / "deps"
        proc = subprocess.run([sys.executable, "-m", "pip", "download", str(ours), "-d", str(deps_dir), "-q"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"pip download failed: {proc.stderr.strip()[-2000:]}")
        for w in sorted(deps_dir.glob("*.whl")):
            if not w.name.startswith("reteco_measures-") and not (dest / w.name).exists():
                deps.append(Path(shutil.move(str(w), dest / w.name)))
    return ([ours] if ours is not None else []) + deps


def _dockerfile(image: str, wheels: list[Path], package: str | os.PathLike | None, version: str) -> str:
    ours = next((w for w in wheels if w.name.startswith("reteco_measures-")), None)
    python = _python_of(ours.name if ours is not None else "")
    offline = ours is not None and len(wheels) > 1
    head = ("# The scoring image: Python with reteco-measures installed from the wheel in wheels/.\n"
            f"#   docker build -t {image} docker/ && docker push {image}\n"
            f"FROM python:{python}-slim-bookworm\n")
    if ours is None:
        install = f"RUN pip install --no-cache-dir {json.dumps(str(package))}\n"
        head = head.replace("from the wheel in wheels/", f"from the package index ({package})")
    elif offline:  # every dependency is in wheels/: nothing comes from an index
        install = ("COPY wheels/ /tmp/wheels/\n"
                   f"RUN pip install --no-cache-dir --no-index --find-links /tmp/wheels /tmp/wheels/{ours.name}"
                   " && rm -rf /tmp/wheels\n")
    else:  # our wheel from the bundle, its dependencies from the index
        install = ("COPY wheels/ /tmp/wheels/\n"
                   f"RUN pip install --no-cache-dir --find-links /tmp/wheels /tmp/wheels/{ours.name}"
                   " && rm -rf /tmp/wheels\n")
    return head + install + "WORKDIR /app\n"


def _write_bundle(out: Path, comp: Mapping[str, Any], bench: Any, split: str | None, columns: list[dict[str, str]],
                  baked: Mapping[str, str], score_py: str, command: str, dockerfile: str, wheels: list[Path],
                  data: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        _zip_bundle(tmp, comp, bench, split, columns, baked, score_py, command, dockerfile, wheels, data)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


def _zip_bundle(tmp: Path, comp: Mapping[str, Any], bench: Any, split: str | None, columns: list[dict[str, str]],
                baked: Mapping[str, str], score_py: str, command: str, dockerfile: str, wheels: list[Path],
                data: Path) -> None:
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("competition.yaml", _yaml(comp) + "\n")
        zf.writestr("logo.png", _png())
        for name, text in _pages(bench, split, columns, baked).items():
            zf.writestr(f"pages/{name}", text)
        zf.writestr("scoring_program/score.py", score_py)
        zf.writestr("scoring_program/metadata.yaml", command)
        zf.writestr("scoring_program/metadata", command)
        zf.writestr("docker/Dockerfile", dockerfile)
        for w in wheels:
            zf.write(w, f"docker/wheels/{w.name}", compress_type=zipfile.ZIP_STORED)  # already compressed
        for path in sorted(data.rglob("*")):
            rel = path.relative_to(data)
            if path.is_file() and not any(p.startswith(".") for p in rel.parts):
                zf.write(path, f"reference_data/{rel.as_posix()}")
