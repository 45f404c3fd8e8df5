"""Counting what a client has in flight (with a short queue past its cap), and a rate per key.

`Slots`: at most `cap` holders per key; a newcomer past it waits in a FIFO queue of at most
`queue_length` for at most `wait` seconds, and a slot freed is handed to the oldest waiter
directly (so a burst is served in order instead of refused, and a newcomer never jumps the
queue). A waiter cancelled (its client went away) leaves the queue, or passes on the slot it
was just handed.

`RateBuckets`: a token bucket per key (`rate` a second, `burst` at most); keys whose bucket
is full again are forgotten, so addresses seen once do not pile up.

Both live on one event loop (the server's) and need no lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

import anyio


class _Waiter:
    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.granted = False


class Slots:
    def __init__(self, cap: int, queue_length: int, wait: float) -> None:
        self.cap, self.queue_length, self.wait = cap, queue_length, wait
        self.running: dict[str, int] = {}
        self.queues: dict[str, deque[_Waiter]] = {}

    def try_take(self, key: str) -> bool:
        """A slot at once, or False (nobody waits)."""
        if self.running.get(key, 0) < self.cap:
            self.running[key] = self.running.get(key, 0) + 1
            return True
        return False

    async def take(self, key: str) -> bool:
        """A slot, at once or after waiting in the queue; False when the queue is full or the
        wait ran out (the caller refuses with 429)."""
        if self.try_take(key):
            return True
        queue = self.queues.setdefault(key, deque())
        if len(queue) >= self.queue_length:
            self._forget_queue(key)
            return False
        waiter = _Waiter()
        queue.append(waiter)
        try:
            with anyio.move_on_after(self.wait):
                await waiter.event.wait()
        except BaseException:  # cancelled: the client went away while waiting
            self._leave(key, waiter)
            raise
        if not waiter.granted:
            self._leave(key, waiter)
        return waiter.granted

    def give_back(self, key: str) -> None:
        """Free a slot: to the oldest waiter, else to the pool."""
        queue = self.queues.get(key)
        if queue:
            waiter = queue.popleft()
            self._forget_queue(key)
            waiter.granted = True  # the slot passes over as it is: `running` unchanged
            waiter.event.set()
            return
        left = self.running.get(key, 0) - 1
        if left > 0:
            self.running[key] = left
        else:
            self.running.pop(key, None)

    def queued(self, key: str) -> int:
        return len(self.queues.get(key, ()))

    def _leave(self, key: str, waiter: _Waiter) -> None:
        if waiter.granted:
            self.give_back(key)  # handed a slot just as it gave up: pass it on
            return
        queue = self.queues.get(key)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
        self._forget_queue(key)

    def _forget_queue(self, key: str) -> None:
        if not self.queues.get(key, True):
            del self.queues[key]


class RateBuckets:
    FORGET_AT = 10_000  # keys kept before the full buckets are forgotten

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, when)

    def spend(self, key: str) -> bool:
        """Take one token for `key`; False when its bucket is empty."""
        now = self.clock()
        tokens, when = self.buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - when) * self.rate)
        if tokens < 1:
            self.buckets[key] = (tokens, now)
            return False
        self.buckets[key] = (tokens - 1, now)
        if len(self.buckets) > self.FORGET_AT:
            self._forget_full(now)
        return True

    def wait_s(self, key: str) -> float:
        """Seconds until `key` has a token again."""
        tokens, _ = self.buckets.get(key, (self.burst, 0.0))
        return max(0.0, (1 - tokens) / self.rate)

    def _forget_full(self, now: float) -> None:
        self.buckets = {k: (t, w) for k, (t, w) in self.buckets.items()
                        if t + (now - w) * self.rate < self.burst}
