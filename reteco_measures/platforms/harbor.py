"""Harbor verifier output: the reward file and its diagnostics.

A Harbor task's verifier writes its reward to ``/logs/verifier/reward.json`` as ``{"reward": r}``
with r in [0, 1], or to ``/logs/verifier/reward.txt`` as the bare number; which file Harbor reads
first has changed between its versions, so both are written, with the identical value (the
shortest text that reads back as the same double). Harbor keeps the full 0–1 precision, and a
score shown on the 0–100 scale is rounded to one decimal place. The ChunQiu and Spoken-Query task descriptions add that validity
and the trajectory-audit gate take precedence over the quality: an invalid batch (ChunQiu) or a
failed audit gives reward 0 *before* any mapping, and raw quality and diagnostics are reported
separately from the reward.

`write_reward_files` writes exactly that: the reward file holds only ``{"reward": r}``
(full double precision), ``<stem>.txt`` beside it the same number, and a sibling
``<stem>_details.json`` holds the raw quality, the 0–100 display value, validity, the audit gate,
every metric, the group tables (Spoken-Query's collection × condition cells) and the validation
problems.

`write_failure_reward` is the crash guard: when scoring itself fails (an unreadable
submission, a bug), the trial still gets reward 0 in both files, and the details file says why —
a crash never drops a trial.

`score_harbor` is the whole verifier step: the upload read by the bounded reader, scored in a
child process within time and memory limits, and both reward files written (reward 0 and the
reason when the upload is refused or scoring fails).

`read_harbor_submission` reads the agent's output through the same bounded reader as Codabench
(`reteco_measures.platforms.submission.read_submission`): a symbolic link is refused without
being opened, and a compressed or zipped file is unpacked as a stream within
`SubmissionLimits` (unpacked bytes, lines, files, nesting), so a decompression bomb costs a
few MiB and ends in reward 0 with the reason, not in a killed verifier.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..benchmarks import BENCHMARKS
from ..errors import Problem
from .submission import (
    BoundedRunError,
    Submission,
    SubmissionError,
    SubmissionLimits,
    read_submission,
    run_bounded,
)

__all__ = ["rename_in_score", "write_reward_files", "write_failure_reward", "details_path", "text_path", "display_reward",
           "read_harbor_submission", "score_harbor", "HarborOutcome"]


@dataclass(frozen=True)
class HarborOutcome:
    """What `score_harbor` did: the `Score` (``refused`` is None), or why the upload was refused
    (``score`` is None; reward 0 and the reason are in the reward files)."""

    score: Any | None
    refused: str | None = None


def _score_one(name: str, path: str, data: Any, split: str | None, options: dict) -> Any:
    """One submission scored (the function `run_bounded` runs in its child process)."""
    return BENCHMARKS[name].score(path, data=data, split=split, **options)


def score_harbor(benchmark: str, submission: str | os.PathLike, reward_path: str | os.PathLike, *,
                 data: Any = None, split: str | None = None, options: dict[str, Any] | None = None,
                 max_seconds: float | None = None, max_memory: int | None = None) -> HarborOutcome:
    """Score a Harbor upload and write the reward files (`write_reward_files`).

    The upload is read by `read_harbor_submission` (a link, a decompression bomb or a damaged
    archive is refused), then scored by ``BENCHMARKS[benchmark].score`` in a child process within
    ``max_seconds`` wall-clock seconds and ``max_memory`` bytes of address space (None: the
    `SubmissionLimits` defaults, as on Codabench; 0: no limit). Every path the score shows names
    the upload, never the scratch copy.

    Args:
        benchmark: a registered benchmark with a reward (``chunqiu``, ``spoken``).
        submission: the agent's output (a file, possibly compressed or zipped, or a folder holding one).
        reward_path: Harbor's reward file (``/logs/verifier/reward.json``); the details go beside it.
        data, split, options: as for `Benchmark.score`.

    Returns:
        a `HarborOutcome`: the score, or the reason the upload was refused (reward 0 written).

    Raises:
        Exception: any failure of scoring itself, raised again after reward 0 and the reason are
            written (the crash guard: a crash never drops a trial).
    """
    bench = BENCHMARKS[benchmark]
    unpacked: str | None = None
    shown = str(submission)
    defaults = SubmissionLimits()
    seconds = defaults.max_seconds if max_seconds is None else (max_seconds or None)
    memory = defaults.max_memory if max_memory is None else (max_memory or None)
    with tempfile.TemporaryDirectory(prefix="reteco-harbor-") as scratch:
        try:
            try:
                sub = read_harbor_submission(submission, scratch)
                unpacked = str(sub.path)
                score = run_bounded(_score_one, (bench.name, unpacked, data, split, dict(options or {})),
                                    max_seconds=seconds, max_memory=memory, reraise=True)
            except (SubmissionError, BoundedRunError) as exc:
                write_failure_reward(reward_path, bench.name, f"submission refused: {exc}")
                return HarborOutcome(None, str(exc))
            rename_in_score(score, unpacked, shown)  # shown with the uploaded name
            write_reward_files(score, reward_path, rename=(unpacked, shown))
        except BaseException as exc:  # the crash guard: reward 0 and the reason, then the error goes on
            reason = f"{type(exc).__name__}: {exc}"
            if unpacked is not None:
                reason = reason.replace(unpacked, shown)
                exc.args = tuple(a.replace(unpacked, shown) if isinstance(a, str) else a for a in exc.args)
            write_failure_reward(reward_path, bench.name, reason)
            raise
    return HarborOutcome(score)


def read_harbor_submission(path: str | os.PathLike, scratch: str | os.PathLike,
                           limits: SubmissionLimits | None = None) -> Submission:
    """The submission at ``path`` (one file, possibly compressed or zipped, or a folder holding
    one) unpacked into ``scratch`` (an empty folder the caller deletes) within ``limits``.

    Returns:
        the `Submission` (its ``path`` is the plain file to score, its ``name`` the participant's).

    Raises:
        SubmissionError: the submission is refused (a symbolic link, not a regular file, beyond a
            limit, a damaged archive); the message says why, for the participant.
        FileNotFoundError: nothing at ``path``.
    """
    limits = limits or SubmissionLimits()
    p = Path(path)
    try:
        info = os.lstat(p)  # never follows a link
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such file") from None
    if stat.S_ISLNK(info.st_mode):
        raise SubmissionError(f"{p.name}: a symbolic link; links are not read — write the file itself")
    scratch = Path(scratch)
    if stat.S_ISDIR(info.st_mode):
        return read_submission(p, scratch / "unpacked", limits)
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionError(f"{p.name}: not a regular file; write the results file itself")
    if info.st_size > limits.max_bytes:
        raise SubmissionError(f"{p.name}: {info.st_size:,} bytes, more than {limits.max_bytes:,} (the limit for "
                              "one submission)")
    holder = scratch / "res"
    holder.mkdir(parents=True, exist_ok=True)
    try:
        os.link(p, holder / p.name)  # no copy when the scratch folder is on the same file system
    except OSError:
        shutil.copyfile(p, holder / p.name, follow_symlinks=False)
    return read_submission(holder, scratch / "unpacked", limits)


def details_path(reward_path: str | os.PathLike) -> Path:
    """The diagnostics file written beside a reward file: ``reward.json`` → ``reward_details.json``."""
    p = Path(reward_path)
    return p.with_name(f"{p.stem}_details{p.suffix or '.json'}")


def text_path(reward_path: str | os.PathLike) -> Path:
    """The plain-text reward file written beside the JSON one: ``reward.json`` → ``reward.txt``."""
    return Path(reward_path).with_suffix(".txt")


def display_reward(reward: float) -> float:
    """The reward on the 0–100 display scale, rounded to one decimal place."""
    return round(100.0 * float(reward), 1)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_reward_files(score: Any, reward_path: str | os.PathLike, *, rename: tuple[str, str] | None = None
                       ) -> tuple[Path, Path]:
    """Write Harbor's reward file for ``score`` and the diagnostics beside it.

    Args:
        score: a `Score` of a benchmark with a reward
            (``chunqiu``, ``spoken``); its reward already carries the validity and audit gates.
        reward_path: where the reward goes (Harbor reads ``/logs/verifier/reward.json``).
        rename: ``(scratch path, participant's name)``: the unpacked file's path, as problems
            quote it, replaced by the name the participant knows in the details file.

    Returns:
        ``(reward file, details file)``.

    Raises:
        ValueError: the benchmark has no reward.
    """
    if score.reward is None:
        raise ValueError(f"benchmark {score.benchmark!r} has no reward; --reward-json applies to "
                         "benchmarks with one (chunqiu, spoken)")
    reward = float(score.reward)
    path = Path(reward_path)
    details = details_path(path)
    data = score.to_dict()
    audit_failed = bool(score.options.get("audit_failed", False))
    gates = []
    if not score.valid and score.benchmark == "chunqiu":
        gates.append("invalid batch")
    if audit_failed:
        gates.append("audit failed")
    info = {
        "benchmark": score.benchmark,
        "reward": reward,
        "reward_display": display_reward(reward),
        "raw_quality": _finite(float(score.official)),
        "official_measure": score.official_measure,
        "valid": bool(score.valid),
        "audit_failed": audit_failed,
        "gated_to_zero_by": gates,
        "metrics": data["metrics"],
        "groups": {name: data[name] for name in score.by_group},
        "removed": data["removed"],
        "validation": data["validation"],
        "notes": data["notes"],
    }
    text = json.dumps(info, indent=2, ensure_ascii=False, default=str) + "\n"
    if rename is not None:
        text = text.replace(json.dumps(rename[0])[1:-1], json.dumps(rename[1])[1:-1])
    _write_reward(path, reward)
    _atomic_write(details, text)
    return path, details


def _write_reward(path: Path, reward: float) -> None:
    if not (math.isfinite(reward) and 0.0 <= reward <= 1.0):
        raise ValueError(f"a Harbor reward must be a number in [0, 1], not {reward!r}")
    text = json.dumps(reward)  # repr: the shortest text that reads back as the same double
    _atomic_write(path, json.dumps({"reward": reward}) + "\n")
    if text_path(path) != path:
        _atomic_write(text_path(path), text + "\n")


def write_failure_reward(reward_path: str | os.PathLike, benchmark: str, reason: str) -> tuple[Path, Path]:
    """Reward 0 when scoring failed, in both reward files, and the reason in the details file.

    Returns:
        ``(reward file, details file)``.
    """
    path = Path(reward_path)
    details = details_path(path)
    info = {
        "benchmark": benchmark,
        "reward": 0.0,
        "reward_display": 0.0,
        "raw_quality": None,
        "valid": False,
        "gated_to_zero_by": ["scoring failed"],
        "error": reason,
    }
    _write_reward(path, 0.0)
    _atomic_write(details, json.dumps(info, indent=2, ensure_ascii=False, default=str) + "\n")
    return path, details


def rename_in_score(score: Any, scratch_path: str, name: str) -> Any:
    """``score`` with the unpacked file's scratch path replaced by the participant's ``name``
    wherever it is shown: the problems' paths and messages and the notes (what ``score`` prints
    and ``reward_details.json`` writes). Changed in place; returned for convenience."""

    def fix(p: Any) -> Any:
        if not isinstance(p, Problem):
            return p
        path = name if p.path == scratch_path else p.path
        message = p.message.replace(scratch_path, name)
        return p if (path, message) == (p.path, p.message) else dataclasses.replace(p, path=path, message=message)

    def fix_record(r: Any) -> Any:  # a problem as a dict (the Spoken-Query and ChunQiu facts)
        if not isinstance(r, dict):
            return r
        out = dict(r)
        if out.get("path") == scratch_path:
            out["path"] = name
        if isinstance(out.get("message"), str):
            out["message"] = out["message"].replace(scratch_path, name)
        return out

    meta = getattr(score, "meta", None)
    if isinstance(meta, dict):
        for key, value in list(meta.items()):
            if isinstance(value, list):
                meta[key] = [fix_record(r) for r in value]
    report = getattr(score, "report", None)
    if report is not None and getattr(report, "errors", None) is not None:
        report.errors = [fix(p) for p in report.errors]
    if getattr(score, "data_problems", None):
        score.data_problems = [fix(p) for p in score.data_problems]
    if getattr(score, "notes", None):
        score.notes = [n.replace(scratch_path, name) if isinstance(n, str) else n for n in score.notes]
    return score
