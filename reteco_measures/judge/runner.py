"""Run many judgments: cache look-up, bounded concurrency, progress bar, resumable.

Every item gets exactly one outcome, in input order: a cached one, a fresh one, or an invalid one
with its reason (an item is never dropped and a score is never guessed). Items with the same cache
key inside one run are asked once. Fresh outcomes are cached as soon as they arrive, so a run that
is interrupted (Ctrl-C, a kill, a crash) loses at most the requests in flight and a rerun of the
same command asks only what is missing.

What is cached: valid judgments and ``response`` failures (the model answered, at temperature 0,
with something invalid on every attempt: asking again would give the same). ``transport`` and
``request`` failures (timeouts, 5xx, 429, HTTP 400) are not cached, so a rerun retries them.
``refresh_invalid=True`` also re-asks cached ``response`` failures.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from .cache import JudgmentCache, cache_key
from .client import Verdict
from .prompts import Prompt

__all__ = ["JudgeItem", "Outcome", "run_items", "RunStats"]


@dataclass(frozen=True)
class JudgeItem:
    """One judgment to make.

    Attributes:
        prompt: the prompt of the dimension.
        inputs: the placeholder values (strings); together with the prompt hash and the model
            they form the cache key.
        meta: free data carried to the output (turn_id, doc_id, period ...).
        invalid: when set, the item is not sent: it is recorded invalid with this reason (e.g.
            the answer of a target turn is missing).
    """

    prompt: Prompt
    inputs: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)
    invalid: str | None = None


@dataclass(frozen=True)
class Outcome:
    """An item with its verdict. ``cached`` tells whether it came from the cache."""

    item: JudgeItem
    verdict: Verdict
    cached: bool
    model: str

    @property
    def normalized(self) -> float | None:
        v = self.verdict
        return None if v.score is None else self.item.prompt.normalize(v.score)


@dataclass
class RunStats:
    """Counts of one run (for the summary line)."""

    total: int = 0
    cached: int = 0
    asked: int = 0
    not_sent: int = 0
    invalid: int = 0


class _Judge:
    """Anything with ``model`` and ``judge(messages, low, high) -> Verdict`` (a JudgeClient)."""

    model: str

    def judge(self, messages: list[dict[str, str]], low: int, high: int) -> Verdict:  # pragma: no cover
        raise NotImplementedError


def _cacheable(verdict: Verdict) -> bool:
    return verdict.kind in ("ok", "response")


def run_items(
    items: Sequence[JudgeItem],
    client: _Judge,
    cache: JudgmentCache | None = None,
    *,
    concurrency: int = 4,
    progress: bool | None = None,
    refresh_invalid: bool = False,
    stats: RunStats | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Judge every item; return one :class:`Outcome` per item, in the items' order.

    Args:
        items: what to judge.
        client: a :class:`~reteco_measures.judge.client.JudgeClient` (or anything with ``model``
            and ``judge``).
        cache: where outcomes are cached (None: no cache).
        concurrency: number of worker threads (requests in flight).
        progress: show a tqdm progress bar on stderr (None: only when stderr is a terminal).
        refresh_invalid: re-ask items whose cached outcome is an invalid model reply.
        stats: filled with counts when given.
        on_outcome: called (in the calling thread) for every outcome as it becomes known.
    """
    cache = cache if cache is not None else JudgmentCache(None)
    stats = stats if stats is not None else RunStats()
    stats.total = len(items)
    model = client.model
    results: list[Outcome | None] = [None] * len(items)
    pending: dict[str, list[int]] = {}  # key -> item indices waiting for it

    def finish(i: int, verdict: Verdict, cached: bool) -> None:
        out = Outcome(items[i], verdict, cached, model)
        results[i] = out
        if not verdict.valid:
            stats.invalid += 1
        if on_outcome is not None:
            on_outcome(out)

    keys: list[str | None] = []
    for i, item in enumerate(items):
        if item.invalid is not None:
            keys.append(None)
            stats.not_sent += 1
            finish(i, Verdict(None, None, item.invalid, "input", 0, None), False)
            continue
        key = cache_key(item.prompt.sha256, model, item.inputs)
        keys.append(key)
        entry = cache.get(key)
        if entry is not None:
            verdict = Verdict.from_dict(entry["verdict"])
            if verdict.valid or not refresh_invalid:
                stats.cached += 1
                finish(i, verdict, True)
                continue
        pending.setdefault(key, []).append(i)

    if pending:
        bar = _progress(len(items), len(items) - sum(len(v) for v in pending.values()), progress)
        lock = threading.Lock()

        def work(key: str, i: int) -> Verdict:
            item = items[i]
            messages = item.prompt.render(item.inputs)
            verdict = client.judge(messages, item.prompt.low, item.prompt.high)
            if _cacheable(verdict):
                cache.put(key, {
                    "verdict": verdict.as_dict(),
                    "model": model,
                    "prompt_sha256": item.prompt.sha256,
                    "dimension": item.prompt.dimension,
                    "input": item.inputs,
                })
            return verdict

        executor = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="judge")
        futures: dict[Future, str] = {}
        try:
            for key, idx in pending.items():
                futures[executor.submit(work, key, idx[0])] = key
            remaining = set(futures)
            while remaining:
                done, remaining = wait(remaining, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    verdict = fut.result()  # JudgeFatalError propagates
                    key = futures[fut]
                    with lock:
                        stats.asked += 1
                        for i in pending[key]:
                            finish(i, verdict, False)
                        if bar is not None:
                            bar.update(len(pending[key]))
        except BaseException:
            cancel = getattr(client, "cancel", None)
            if cancel is not None:
                cancel()
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            if bar is not None:
                bar.close()
        executor.shutdown(wait=True)
    return [r for r in results if r is not None]


def _progress(total: int, initial: int, enabled: bool | None):
    if enabled is False:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is part of the judge extra
        return None
    disable = None if enabled is None else False
    return tqdm(total=total, initial=initial, desc="judging", unit="judgment", file=sys.stderr,
                disable=disable, dynamic_ncols=True)
