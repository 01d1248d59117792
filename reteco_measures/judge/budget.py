"""The limits of one judging run: requests sent and tokens used (``--max-requests``,
``--max-tokens``)."""

from __future__ import annotations

import threading

__all__ = ["Budget"]


class Budget:
    """Limits of one run: HTTP requests sent and tokens (prompt + completion) used.

    Thread-safe. A request is only sent after `reserve` succeeded; tokens are added when a
    reply arrives, so a run may exceed ``max_tokens`` by the requests already in flight.
    """

    def __init__(self, max_requests: int | None = None, max_tokens: int | None = None) -> None:
        for name, v in (("max_requests", max_requests), ("max_tokens", max_tokens)):
            if v is not None and v < 0:
                raise ValueError(f"{name} must be >= 0")
        self.max_requests = max_requests
        self.max_tokens = max_tokens
        self.requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.exhausted: str | None = None
        self._lock = threading.Lock()

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def reserve(self) -> bool:
        """Count one request if the limits allow it; False (and ``exhausted`` set) otherwise."""
        with self._lock:
            if self.max_requests is not None and self.requests >= self.max_requests:
                self.exhausted = f"--max-requests {self.max_requests} reached"
                return False
            if self._out_of_tokens():
                return False
            self.requests += 1
            return True

    def tokens_left(self) -> bool:
        """Whether the token limit still allows requests; False (and ``exhausted`` set) otherwise."""
        with self._lock:
            return not self._out_of_tokens()

    def _out_of_tokens(self) -> bool:
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            self.exhausted = f"--max-tokens {self.max_tokens} reached ({self.tokens} tokens used)"
            return True
        return False

    def add(self, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
