"""Codabench: the scoring program of a competition and the bundle that carries it.

Codabench (the platform SemEval tasks run on) starts a competition's scoring program as
``<command> <input> <output>``, where ``<input>/ref`` holds the reference data and
``<input>/res`` the participant's submission (unzipped), and reads ``<output>/scores.json`` —
one key per leaderboard column — plus, when detailed results are enabled,
``<output>/detailed_results.html``. Whatever the program writes to stderr is what the participant
sees when a submission fails.

:func:`score_codabench` is that program for every benchmark of this package:

* ``ref`` is the benchmark's data root (the layout ``--data`` takes elsewhere);
* ``res`` holds the submission: one file of any name (a TREC run, the benchmark's JSONL/JSON),
  possibly compressed, or a zip of it; Codabench's own ``metadata`` file and hidden files are
  ignored;
* it writes ``scores.json`` (see :func:`scores_json`), ``scores.txt`` (the legacy ``key: value``
  form) and ``detailed_results.html`` (:func:`reteco_measures.report.html.score_html`);
* exit code 0 when the submission is scored (an invalid ChunQiu batch is *scored* 0, as the task
  rules say), 1 when it is invalid by any other benchmark's rules or unreadable (Codabench then
  marks it failed and shows the messages), 2 for a broken set-up (no ``ref``).

:func:`build_bundle` writes a competition bundle: ``competition.yaml`` whose leaderboard columns
are exactly the keys the scoring program writes (:func:`leaderboard_columns`), the reference
data, the scoring program with its ``metadata.yaml`` command, a ``Dockerfile`` for an image with
reteco-measures installed, and pages generated from the benchmark's declaration.
"""

from __future__ import annotations

import json
import math
import os
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

__all__ = [
    "CodabenchResult",
    "score_codabench",
    "scores_json",
    "scores_txt",
    "find_submission",
    "leaderboard_columns",
    "parse_settings",
    "build_bundle",
    "SubmissionError",
]

#: files Codabench or archivers put beside a submission, never the submission itself
_IGNORED = {"metadata", "metadata.yaml", "thumbs.db", "desktop.ini"}
_MAX_UNZIPPED = 8 * 1024**3  # refuse zip bombs: 8 GiB uncompressed
_MAX_MEMBERS = 10_000


class SubmissionError(ValueError):
    """The submission folder cannot be scored (empty, several candidate files, a bad zip)."""


@dataclass
class CodabenchResult:
    """What one scoring run produced.

    Attributes:
        exit_code: 0 scored, 1 invalid/unreadable submission, 2 broken set-up.
        scores: the ``scores.json`` content (empty when nothing could be scored).
        messages: lines for stderr (problems named by file and line, warnings, the reason of a
            failure) — what Codabench shows the participant.
        score: the :class:`~reteco_measures.benchmarks.Score`, when the submission was scored.
        submission: the file that was scored.
    """

    exit_code: int
    scores: dict[str, Any] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    score: Any = None
    submission: Path | None = None


# ------------------------------------------------------------------------------------------------
# the submission


def _safe_extract(archive: Path, dest: Path) -> None:
    """Extract a zip refusing absolute paths, ``..`` and archives that unpack past the limits."""
    try:
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            if len(members) > _MAX_MEMBERS:
                raise SubmissionError(f"{archive.name}: {len(members)} files in the zip; submit one run file")
            total = sum(m.file_size for m in members)
            if total > _MAX_UNZIPPED:
                raise SubmissionError(f"{archive.name}: unpacks to {total} bytes, more than allowed")
            root = dest.resolve()
            for m in members:
                target = (dest / m.filename).resolve()
                if m.filename.startswith(("/", "\\")) or not str(target).startswith(str(root)):
                    raise SubmissionError(f"{archive.name}: unsafe path {m.filename!r} in the zip")
            zf.extractall(dest)
    except zipfile.BadZipFile as exc:
        raise SubmissionError(f"{archive.name}: not a readable zip file ({exc})") from None


def _candidates(folder: Path) -> list[Path]:
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if any(part.startswith(".") or part == "__MACOSX" for part in rel.parts):
            continue
        if p.is_file() and p.name.lower() not in _IGNORED:
            out.append(p)
    return out


def find_submission(res_dir: str | os.PathLike, scratch: str | os.PathLike) -> Path:
    """The one submission file in ``res_dir`` (unzipping a zip into ``scratch``, nested once).

    Raises:
        SubmissionError: no file, several candidate files, or a bad / unsafe zip.
    """
    folder = Path(res_dir)
    if not folder.is_dir():
        raise SubmissionError(f"no submission folder at {folder}")
    for depth in range(3):
        files = _candidates(folder)
        if not files:
            raise SubmissionError("the submission is empty: upload one run file (or a zip holding one)")
        if len(files) > 1:
            names = ", ".join(str(f.relative_to(folder)) for f in files[:10])
            raise SubmissionError(f"the submission holds {len(files)} files ({names}); upload exactly one run file")
        (only,) = files
        if only.suffix.lower() != ".zip" or not zipfile.is_zipfile(only):
            return only
        folder = Path(scratch) / f"unzipped{depth}"
        folder.mkdir(parents=True, exist_ok=True)
        _safe_extract(only, folder)
    raise SubmissionError("zips nested more than twice; upload one run file")


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
    declared = {o.name: o for o in bench.options}
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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _failure_html(benchmark: str, messages: Sequence[str]) -> str:
    from ..report.html import _esc, page

    items = "".join(f"<li>{_esc(m)}</li>" for m in messages)
    return page(f"{benchmark}: submission not scored",
                f"<h1>{_esc(benchmark)}</h1><p class=\"bad\">The submission could not be scored.</p>"
                f"<ul class=\"problems\">{items}</ul>")


def _problem_lines(score: Any, limit: int) -> list[str]:
    problems = list(score.report.errors)
    lines = [f"{getattr(p, 'severity', 'error')}: {p}" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more problems (see detailed_results.html)")
    return lines


def score_codabench(
    input_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    benchmark: str,
    split: str | None = None,
    *,
    settings: Sequence[str] | Mapping[str, Any] | None = None,
    limit: int = 50,
) -> CodabenchResult:
    """Score ``input_dir/res`` against ``input_dir/ref`` and write the outputs Codabench reads.

    Args:
        input_dir: Codabench's input folder (``ref`` and ``res`` inside).
        output_dir: where ``scores.json``, ``scores.txt`` and ``detailed_results.html`` go.
        benchmark: the benchmark's name (``reteco-1a``, ``chunqiu``, ...).
        split: the split (default: the benchmark's).
        settings: benchmark options, ``NAME=VALUE`` strings or a mapping (see
            :func:`parse_settings`).
        limit: problems listed in the messages (all are in the detailed results).

    Returns:
        a :class:`CodabenchResult`; nothing is printed here (the command line prints ``messages``).
    """
    from ..benchmarks import benchmark as get_benchmark
    from ..errors import DataFormatError, DataFormatWarning
    from ..report.html import score_html

    inp, out = Path(input_dir), Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    bench = get_benchmark(benchmark)
    ref = inp / "ref"
    if not ref.is_dir():
        msg = f"set-up error: no reference data at {ref} (the competition's reference_data)"
        _write(out / "detailed_results.html", _failure_html(benchmark, [msg]))
        return CodabenchResult(2, messages=[msg])
    messages: list[str] = []
    try:
        options = parse_settings(bench, settings, ref)
    except ValueError as exc:
        msg = f"set-up error: {exc}"
        _write(out / "detailed_results.html", _failure_html(benchmark, [msg]))
        return CodabenchResult(2, messages=[msg])
    fatal = _fatal_warnings()
    with tempfile.TemporaryDirectory(prefix="reteco-codabench-") as scratch:
        try:
            submission = find_submission(inp / "res", scratch)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                score = bench.score(submission, data=ref, split=split, **options)
        except (SubmissionError, DataFormatError, FileNotFoundError, ValueError, UnicodeError,
                OSError) as exc:
            msg = f"error: {exc}"
            _write(out / "detailed_results.html", _failure_html(benchmark, [msg]))
            return CodabenchResult(1, messages=[msg])
    for w in caught:
        if issubclass(w.category, fatal):
            messages.insert(0, f"error: {w.message}")
        elif issubclass(w.category, (DataFormatWarning, UserWarning)):
            messages.append(f"warning: {w.message}")
    failed = any(m.startswith("error: ") for m in messages)
    messages.extend(_problem_lines(score, limit))
    scores = scores_json(score)
    _write(out / "scores.json", json.dumps(scores, indent=2) + "\n")
    _write(out / "scores.txt", scores_txt(scores))
    _write(out / "detailed_results.html", score_html(score))
    if failed:
        code = 1
    elif score.valid:
        code = 0
    else:  # invalid: scored 0 where the rules say so (ChunQiu), otherwise a failed submission
        code = 0 if bench.invalid_scores_zero else 1
        messages.insert(0, "the submission is invalid" + (" and scores 0 (task rules)" if code == 0 else ""))
    return CodabenchResult(code, scores=scores, messages=messages, score=score, submission=submission)


def _fatal_warnings() -> tuple[type[Warning], ...]:
    """Warnings that mean a number would be a silent zero: they fail the submission."""
    from .. import errors

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
    :func:`scores_json` writes — never a hand-kept list that can drift.
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


def _pages(bench: Any, split: str | None, columns: list[dict[str, str]], settings: Mapping[str, Any]) -> dict[str, str]:
    import inspect
    import sys

    from .._version import __version__

    declared = next((mod for name, mod in sorted(sys.modules.items())
                     if name.startswith("reteco_measures.benchmarks.") and mod is not None
                     and any(v is bench for v in vars(mod).values())), None)
    doc = inspect.getdoc(declared) if declared is not None else ""
    rows = "\n".join(f"| `{c['key']}` | {c['title'].replace('|', '&#124;')} |" for c in columns)
    overview = (f"# {bench.title}\n\n{bench.help}\n\n"
                f"Submissions are scored by reteco-measures {__version__} "
                f"(`reteco-measures codabench score`), the same code as `reteco-measures score {bench.name}`.\n")
    evaluation = (f"# Evaluation\n\n{doc}\n\n## Leaderboard columns\n\n"
                  f"The official measure is `{columns[0]['title'] if columns else ''}` "
                  f"({bench.aggregation}). Every column is a key of the scoring program's `scores.json`:\n\n"
                  f"| key | measure |\n|---|---|\n{rows}\n\n"
                  "`valid` (1 or 0) is written too. A measure defined on no query is left empty, never 0.\n\n"
                  "A failed submission shows its problems by file and line in the scoring output.\n")
    data_page = (f"# Data\n\nSplit: `{split or 'default'}`. Submission format: {bench.run_help}.\n\n"
                 "Upload one file (it may be zipped or gzip/bz2/xz-compressed); its name does not matter.\n")
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
) -> Path:
    """Write a Codabench competition bundle (a zip) for ``benchmark`` scored against ``data``.

    The bundle holds ``competition.yaml`` (one phase, one task, one leaderboard whose columns are
    :func:`leaderboard_columns`), ``logo.png``, ``pages/*.md`` generated from the benchmark's
    declaration, ``reference_data/`` (a copy of ``data``), ``scoring_program/`` (``score.py``
    calling ``reteco-measures codabench score`` and its ``metadata.yaml``/``metadata`` command)
    and ``docker/Dockerfile`` for the image named in ``docker_image``.

    Args:
        benchmark: the benchmark's name.
        data: the reference data root (copied as the competition's reference data).
        out: the zip to write.
        split: the split scored (default: the benchmark's).
        settings: benchmark options baked into the scoring command (``NAME=VALUE``; paths under
            ``data`` are written relative to it).
        title: the competition title (default: the benchmark's).
        docker_image: the scoring image (default ``reteco-measures/scorer:<version>``: build it
            from ``docker/Dockerfile`` and push it under the name you choose).
        start: the phase start, ``YYYY-MM-DD HH:MM:SS`` (default: today, 00:00 UTC).

    Returns:
        the path of the zip.
    """
    from .._version import __version__
    from ..benchmarks import benchmark as get_benchmark

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
        "description": bench.help,
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
        "phases": [{"index": 0, "name": f"{split or 'evaluation'} phase", "description": bench.help,
                    "start": start, "tasks": [0]}],
        "tasks": [{"index": 0, "name": f"{bench.name} ({split or 'default'})",
                   "description": f"Scored by reteco-measures {__version__}",
                   "scoring_program": "scoring_program/", "reference_data": "reference_data/"}],
        "leaderboards": [{"index": 0, "title": "Results", "key": "main",
                          "columns": [{"title": c["title"], "key": c["key"], "index": i, "sorting": "desc",
                                       "precision": 4} for i, c in enumerate(columns)]}],
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
    dockerfile = (
        "# The scoring image: Python with reteco-measures installed.\n"
        "#   docker build -t " + image + " docker/ && docker push " + image + "\n"
        "FROM python:3.11-slim\n"
        f"RUN pip install --no-cache-dir \"reteco-measures=={__version__}\"\n"
        "WORKDIR /app\n"
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("competition.yaml", _yaml(comp) + "\n")
        zf.writestr("logo.png", _png())
        for name, text in _pages(bench, split, columns, baked).items():
            zf.writestr(f"pages/{name}", text)
        zf.writestr("scoring_program/score.py", score_py)
        zf.writestr("scoring_program/metadata.yaml", command)
        zf.writestr("scoring_program/metadata", command)
        zf.writestr("docker/Dockerfile", dockerfile)
        for path in sorted(data.rglob("*")):
            rel = path.relative_to(data)
            if path.is_file() and not any(p.startswith(".") for p in rel.parts):
                zf.write(path, f"reference_data/{rel.as_posix()}")
    os.replace(tmp, out)
    return out
