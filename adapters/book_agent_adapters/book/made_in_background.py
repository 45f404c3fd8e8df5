"""Something a warm process makes once to speed up later searches, made without a search waiting
for it: a book's impact file (book_impact_search.py), a large book's 8-bit codes
(sqlite_vector_store.py). The search that asks first starts the build and is answered the slower
way, as is every search until the build is done.

Why a thread and not a child process (as a locator rebuild is, processes/low_priority.py): what
these builds make is either used in this process's memory (the codes) or written by this process
and loaded by its next search (the impact file), they take a fraction of a second to a few
seconds, and their work runs in numpy, SQLite and faiss with the GIL released. A child would
have to hand its result back through a file. Each build runs once: a failure is kept (None), not
retried, and the search stays on its slower path for the process's life.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class MadeInBackground(Generic[T]):
    """`make` run once, in a daemon thread named `name`; `make` returns None on a failure it expects
    (one it does not expect is kept as a failure too, and reported by the thread's excepthook)."""

    def __init__(self, name: str, make: Callable[[], T | None]) -> None:
        self._name = name
        self._make = make
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._value: T | None = None
        self.state = "idle"  # idle | making | made | failed

    def value(self) -> T | None:
        """What `make` made; None while it is being made (the first call starts it) or when it failed."""
        if self.state == "made":
            return self._value
        with self._lock:
            if self.state == "idle":
                self.state = "making"
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        return None

    def _run(self) -> None:
        value: T | None = None
        try:
            value = self._make()
        finally:  # the state changes even when `make` raised: no search waits on a dead build
            with self._lock:
                self._value = value
                self.state = "made" if value is not None else "failed"

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the build is over (made or failed), after waiting up to `timeout` seconds for it."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.state in ("made", "failed")
