"""Run many judgments: cache look-up, bounded concurrency, progress bar, resumable.

Every item gets exactly one outcome, in input order: a cached one, a fresh one, or an invalid one
with its reason (an item is never dropped and a score is never guessed). Items with the same cache
key inside one run are asked once. Fresh outcomes are cached as soon as they arrive, so a run that
is interrupted (Ctrl-C, a kill, a crash) loses at most the requests in flight and a rerun of the
same command asks only what is missing.

What is cached: valid judgments and ``response`` failures (the endpoint returned a well-formed
chat completion whose content is not a valid judgment on every attempt: asking again at
temperature 0 would give the same). ``transport``, ``request`` and ``limit`` failures (timeouts,
5xx, 429, a gateway's HTML page, HTTP 400, a reached request/token limit) are not cached, so a
rerun retries them. ``refresh_invalid=True`` also re-asks cached ``response`` failures.

Two runs sharing one cache folder coordinate through a lock per judgment
(`lock`): the same judgment is never asked twice.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from ..errors import user_stacklevel
from .cache import JudgmentCache, cache_key
from .client import JudgeClient, JudgeFatalError, JudgeQueueingWarning
from .prompts import Prompt
from .replies import Verdict

__all__ = ["JudgeItem", "Outcome", "run_items", "RunStats", "item_key", "ProgressCallback", "cacheable", "cached_verdict",
           "cache_entry", "split_items", "key_settings_of", "check_queueing", "QUEUEING_PARALLELISM",
           "QUEUEING_MIN_SECONDS"]

#: parallelism below which a run with concurrency >= 2 is warned that the server queues requests
QUEUEING_PARALLELISM = 1.5
#: answers faster than this (seconds) are not judged for queueing: the client's own overhead then
#: dominates the measurement, and a queue that short cannot exhaust a deadline
QUEUEING_MIN_SECONDS = 0.05


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
        repeat: index of an independent repeated judgment of the same input (0 = the first);
            each repeat has its own cache entry.
    """

    prompt: Prompt
    inputs: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)
    invalid: str | None = None
    repeat: int = 0


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
    """Counts of one run (for the summary line); token counts are those of this run's requests."""

    total: int = 0
    cached: int = 0
    asked: int = 0
    not_sent: int = 0
    invalid: int = 0
    limited: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    #: the endpoint's throughput (`JudgeClient.throughput`), with ``concurrency`` and
    #: ``queueing`` (True when it answered about one request at a time although several were sent)
    throughput: dict[str, Any] | None = None

    #: asked judgments that ended valid (each is one answered request)
    answered: int = 0

    @property
    def attempts_by_cause(self) -> dict[str, int]:
        """Requests of this run by outcome: ``answered`` (the attempt that gave a valid judgment)
        and each failure cause (``invalid_reply``, ``echoed_placeholder``, ``identical_reply``,
        ``timeout``, ``http_429`` ...)."""
        out = dict(self.causes)
        if self.answered:
            out["answered"] = self.answered
        return dict(sorted(out.items()))

    @property
    def valid(self) -> int:
        return self.total - self.invalid

    def count_asked(self, verdict: Verdict) -> None:
        """Count a verdict the judge was asked for (not one served from the cache): its requests,
        tokens and retry causes."""
        self.asked += 1
        if verdict.valid:
            self.answered += 1
        self.requests += verdict.attempts
        self.prompt_tokens += verdict.prompt_tokens
        self.completion_tokens += verdict.completion_tokens
        for c in verdict.causes:
            self.causes[c] = self.causes.get(c, 0) + 1


#: ``on_progress(done, total, stats)``: judgments finished so far, all judgments, the run's counts
ProgressCallback = Callable[[int, int, RunStats], None]


class _Judge:
    """Anything with ``model`` and ``judge(messages, low, high) -> Verdict`` (a JudgeClient)."""

    model: str

    def judge(self, messages: list[dict[str, str]], low: int, high: int) -> Verdict:  # pragma: no cover
        raise NotImplementedError


def cacheable(verdict: Verdict) -> bool:
    """Whether a verdict is kept in the cache: a valid judgment or an invalid model reply (a
    transport, request or limit failure is asked again by the next run)."""
    return verdict.kind in ("ok", "response")


def cached_verdict(entry: dict[str, Any] | None, refresh_invalid: bool) -> Verdict | None:
    """The verdict of a cache entry, if it may be served (None: ask the judge)."""
    if entry is None or not isinstance(entry.get("verdict"), dict):
        return None
    verdict = Verdict.from_dict(entry["verdict"])
    return verdict if verdict.valid or not refresh_invalid else None


def cache_entry(verdict: Verdict, model: str, prompt_sha256: str | None, dimension: str | None, repeat: int,
                 inputs: dict[str, str] | None, via: str | None = None) -> dict[str, Any]:
    """The cache entry stored for a cacheable verdict."""
    entry: dict[str, Any] = {"verdict": verdict.as_dict(), "model": model, "prompt_sha256": prompt_sha256,
                             "dimension": dimension, "repeat": repeat}
    if inputs is not None:
        entry["input"] = inputs
    if via is not None:
        entry["via"] = via
    return entry


def split_items(items: Sequence[JudgeItem], cache: JudgmentCache, model: str, settings: dict[str, Any] | None,
                 refresh_invalid: bool, stats: RunStats,
                 finish: Callable[[int, Verdict, bool], None]) -> dict[str, list[int]]:
    """Finish the items that are not sent (invalid input) or served from the cache; return the
    others by cache key (key -> item indices waiting for it)."""
    pending: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        if item.invalid is not None:
            stats.not_sent += 1
            finish(i, Verdict(None, None, item.invalid, "input", 0, None), False)
            continue
        key = item_key(item, model, settings)
        verdict = cached_verdict(cache.get(key), refresh_invalid)
        if verdict is not None:
            stats.cached += 1
            finish(i, verdict, True)
            continue
        pending.setdefault(key, []).append(i)
    return pending


def item_key(item: JudgeItem, model: str, settings: dict[str, Any] | None = None) -> str:
    """The cache key of ``item`` for ``model``."""
    return cache_key(item.prompt.sha256, model, item.inputs, item.repeat, settings)


def key_settings_of(client: Any) -> dict[str, Any] | None:
    """The cache key's settings: `JudgeClient.key_settings` (every decoding setting that
    changes the answer and is not the default), or for other judges a temperature above 0."""
    if isinstance(client, JudgeClient):
        return client.key_settings() or None
    temperature = getattr(client, "temperature", 0.0)
    return {"temperature": float(temperature)} if isinstance(temperature, (int, float)) and temperature else None


def _ask(client: Any, item: JudgeItem) -> Verdict:
    messages = item.prompt.render(item.inputs)
    if isinstance(client, JudgeClient):
        return client.judge(messages, item.prompt.low, item.prompt.high, placeholders=item.prompt.reply_placeholders)
    return client.judge(messages, item.prompt.low, item.prompt.high)


def check_queueing(client: Any, concurrency: int, stats: RunStats, *, warn: bool = True) -> bool:
    """Measure the endpoint's throughput into ``stats.throughput`` and, once at least
    ``max(2 * concurrency, 6)`` attempts were answered, decide whether ``concurrency`` >= 2 gave a
    speed-up; when the server answered about one request at a time (parallelism below
    `QUEUEING_PARALLELISM`, answers taking at least
    `QUEUEING_MIN_SECONDS`) and ``warn``, issue a
    `JudgeQueueingWarning`. Returns True once decided."""
    measure = getattr(client, "throughput", None)
    t = measure() if callable(measure) else None
    if t is None:
        return False
    enough = t["requests"] >= max(2 * concurrency, 6)
    queueing = (concurrency >= 2 and t["parallelism"] < QUEUEING_PARALLELISM
                and t["fastest"] >= QUEUEING_MIN_SECONDS)
    stats.throughput = {**t, "concurrency": concurrency, "queueing": bool(queueing) if enough else None}
    if not enough:
        return False
    if queueing and warn:
        warnings.warn(
            f"the endpoint answers about one request at a time: {t['requests']} answers at "
            f"{t['requests_per_s']:.3g} requests/s with {concurrency} in flight, fastest answer {t['fastest']:.3g}s "
            f"(parallelism {t['parallelism']:.2g}); the others wait in its queue and that wait counts against "
            "--timeout (a deadline per attempt, from sending): use --concurrency 1, or raise --timeout",
            JudgeQueueingWarning, stacklevel=user_stacklevel())
    return True


def _judge_one(client: Any, cache: JudgmentCache, key: str, item: JudgeItem, model: str, refresh_invalid: bool,
               stop: threading.Event) -> tuple[Verdict, bool]:
    """(verdict, served from the cache) of one item, in a worker thread: under the item's cache
    lock, the cached verdict if another process answered it meanwhile, else the judge's (cached
    when cacheable). One item's unexpected failure is an ``error`` verdict, never the run's end."""
    try:
        with cache.lock(key, stop):
            found = cached_verdict(cache.get(key), refresh_invalid)
            if found is not None:
                return found, True
            verdict = _ask(client, item)
            if cacheable(verdict):
                cache.put(key, cache_entry(verdict, model, item.prompt.sha256, item.prompt.dimension, item.repeat,
                                           item.inputs))
            return verdict, False
    except (JudgeFatalError, KeyboardInterrupt):
        raise
    except InterruptedError as exc:
        return Verdict(None, None, f"not asked: {exc}", "limit", 0), False
    except Exception as exc:  # one item's unexpected failure never ends the run
        msg = f"internal error while judging: {type(exc).__name__}: {str(exc)[:200]}"
        redact = getattr(client, "redact", None)
        return Verdict(None, None, redact(msg) if redact else msg, "error", 0), False


def run_items(
    items: Sequence[JudgeItem],
    client: _Judge,
    cache: JudgmentCache | None = None,
    *,
    concurrency: int = 4,
    refresh_invalid: bool = False,
    stats: RunStats | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    on_progress: ProgressCallback | None = None,
) -> list[Outcome]:
    """Judge every item; return one `Outcome` per item, in the items' order.

    Args:
        items: what to judge.
        client: a `JudgeClient` (or anything with ``model``
            and ``judge``).
        cache: where outcomes are cached (None: no cache).
        concurrency: number of worker threads (requests in flight).
        refresh_invalid: re-ask items whose cached outcome is an invalid model reply.
        stats: filled with counts when given.
        on_outcome: called (in the calling thread) for every outcome as it becomes known.
        on_progress: called (in the calling thread) with ``(done, total, stats)`` once the cached
            judgments are known and whenever more finish; nothing is printed here.

    Raises:
        JudgeFatalError: the endpoint refused the configuration or cannot be reached (outcomes
            finished so far are cached).
    """
    cache = cache if cache is not None else JudgmentCache(None)
    stats = stats if stats is not None else RunStats()
    stats.total = len(items)
    model = client.model
    settings = key_settings_of(client)
    results: list[Outcome | None] = [None] * len(items)

    def finish(i: int, verdict: Verdict, cached: bool) -> None:
        out = Outcome(items[i], verdict, cached, model)
        results[i] = out
        if not verdict.valid:
            stats.invalid += 1
        if on_outcome is not None:
            on_outcome(out)

    pending = split_items(items, cache, model, settings, refresh_invalid, stats, finish)

    if pending:
        done_n = len(items) - sum(len(v) for v in pending.values())
        if on_progress is not None:
            on_progress(done_n, len(items), stats)
        stop = threading.Event()

        def work(key: str, i: int) -> tuple[Verdict, bool]:
            return _judge_one(client, cache, key, items[i], model, refresh_invalid, stop)

        executor = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="judge")
        futures: dict[Future, str] = {}
        try:
            for key, idx in pending.items():
                futures[executor.submit(work, key, idx[0])] = key
            remaining = set(futures)
            decided = False
            while remaining:
                done, remaining = wait(remaining, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    verdict, cached = fut.result()  # JudgeFatalError propagates
                    key = futures[fut]
                    if cached:
                        stats.cached += len(pending[key])
                    else:
                        stats.count_asked(verdict)
                        if verdict.kind == "limit":
                            stats.limited += 1
                    for i in pending[key]:
                        finish(i, verdict, cached)
                    done_n += len(pending[key])
                if done and on_progress is not None:
                    on_progress(done_n, len(items), stats)
                if done and not decided:
                    decided = check_queueing(client, concurrency, stats)
        except BaseException:
            stop.set()
            cancel = getattr(client, "cancel", None)
            if cancel is not None:
                cancel()
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        executor.shutdown(wait=True)
        check_queueing(client, concurrency, stats, warn=not decided)  # the whole run's throughput
    return [r for r in results if r is not None]

