"""Harbor verifier output: the reward file and its diagnostics.

A Harbor task's verifier writes its reward to ``/logs/verifier/reward.json`` as ``{"reward": r}``
with r in [0, 1]; Harbor keeps the full 0–1 precision, and a score shown on the 0–100 scale is
rounded to one decimal place. The ChunQiu and Spoken-Query task descriptions add that validity
and the trajectory-audit gate take precedence over the quality: an invalid batch (ChunQiu) or a
failed audit gives reward 0 *before* any mapping, and raw quality and diagnostics are reported
separately from the reward.

:func:`write_reward_files` writes exactly that: the reward file holds only ``{"reward": r}``
(full double precision), and a sibling ``<stem>_details.json`` holds the raw quality, the 0–100
display value, validity, the audit gate, every metric, the group tables (Spoken-Query's
collection × condition cells) and the validation problems.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["write_reward_files", "details_path", "display_reward"]


def details_path(reward_path: str | os.PathLike) -> Path:
    """The diagnostics file written beside a reward file: ``reward.json`` → ``reward_details.json``."""
    p = Path(reward_path)
    return p.with_name(f"{p.stem}_details{p.suffix or '.json'}")


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


def write_reward_files(score: Any, reward_path: str | os.PathLike) -> tuple[Path, Path]:
    """Write Harbor's reward file for ``score`` and the diagnostics beside it.

    Args:
        score: a :class:`~reteco_measures.benchmarks.Score` of a benchmark with a reward
            (``chunqiu``, ``spoken``); its reward already carries the validity and audit gates.
        reward_path: where the reward goes (Harbor reads ``/logs/verifier/reward.json``).

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
    _atomic_write(path, json.dumps({"reward": reward}) + "\n")
    _atomic_write(details, json.dumps(info, indent=2, ensure_ascii=False, default=str) + "\n")
    return path, details
