"""The one retry policy of every HTTP adapter (query encoding and rerank alike).

Retried: 429 (rate limited) and the 5xx answers that mean "try again" (500, 502, 503, 504),
at most `max_retries` times. The wait is the server's `Retry-After` (seconds or an HTTP
date) when it sends one, else `backoff * 2**attempt` capped at `max_wait`. Retry-After is
honoured, never shortened: when the server asks for longer than `max_wait`, the adapter
stops and reports the answer (with the wait asked) instead of asking again too early.
Anything else (4xx, a redirect) is answered at once: retrying cannot change it.
"""

from __future__ import annotations

import email.utils
import math
import time
from dataclasses import dataclass

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRIES_CAP = 10  # a config typo (max_retries: 1000) must not become a hang


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date (RFC 9110); None if unusable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = parsed.timestamp() - time.time()
    return seconds if math.isfinite(seconds) else None


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 2
    backoff: float = 0.5
    max_wait: float = 10.0
    statuses: frozenset[int] = RETRY_STATUSES

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_retries", max(0, min(int(self.max_retries), MAX_RETRIES_CAP)))
        object.__setattr__(self, "backoff", max(0.0, float(self.backoff)))
        object.__setattr__(self, "max_wait", max(0.0, float(self.max_wait)))

    def wait_before_retry(self, status: int, retry_after: str | None, attempt: int) -> float | None:
        """Seconds to wait before retry number `attempt + 1`, or None: answer now."""
        if status not in self.statuses or attempt >= self.max_retries:
            return None
        asked = retry_after_seconds(retry_after)
        if asked is not None:
            return max(0.0, asked) if asked <= self.max_wait else None  # a past date: now
        return float(min(self.backoff * (2**attempt), self.max_wait))
