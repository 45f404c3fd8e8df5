"""The engine's circuit breaker (engine.py): a server that timed out or could not be reached is
not asked again for a while; then one call probes it.

Closed: every call goes. A sick call (a timeout, no server) opens it for `open_s`; while open,
no call goes (the engine raises `engine.circuit_open` at once). When that passes, the next call
is the probe (one at a time; the others still fail fast): answered, the breaker closes; sick
again, it opens for twice as long, at most BREAKER_MAX_S.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from book_agent.domain.errors import BookAgentError

BREAKER_MAX_S = 300.0


class Breaker:
    """Closed; open until `until` after a sick call; one probe at a time once that passes."""

    def __init__(self, open_s: float) -> None:
        self.open_s = open_s
        self.opened_for = 0.0  # how long it is open this time (0: closed)
        self.until = 0.0
        self.probing = False
        self.last: BookAgentError | None = None  # what opened it
        self._lock = threading.Lock()

    def admit(self) -> bool:
        """Whether a call may go now; True for the probe (the caller reports how it went)."""
        with self._lock:
            if not self.opened_for:
                return True
            if self.probing or time.monotonic() < self.until:
                return False
            self.probing = True
            return True

    def succeeded(self) -> None:
        with self._lock:
            self.opened_for, self.probing, self.last = 0.0, False, None

    def failed(self, error: BookAgentError) -> None:
        with self._lock:
            self.opened_for = min(BREAKER_MAX_S, self.opened_for * 2) if self.probing else self.open_s
            self.until, self.probing, self.last = time.monotonic() + self.opened_for, False, error

    def released(self) -> None:
        """A probe that ended neither sick nor answered (a refusal): the server answered, so closed."""
        self.succeeded()

    def state(self) -> dict[str, Any]:
        with self._lock:
            if not self.opened_for:
                return {"state": "closed"}
            return {"state": "half-open" if self.probing else "open", "open_s": self.opened_for,
                    "probe_in_s": round(max(0.0, self.until - time.monotonic()), 1),
                    "because": self.last.code if self.last else None}
