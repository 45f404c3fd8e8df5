"""A long-running server's library writer (issue 26): no search ever builds, so something else
must bring the library's indexes up to date when another process registered or removed a book
without doing so itself (it was killed, it found the library held), and compact or retrain
when the living generation has drifted. One-shot commands do their own writing (`init`,
`remove`, `prepare`: book_agent/services/library/search.py); a server (`serve`, `mcp`: BookAgent.serve_long) has
this one.

It wakes every POLL_S, on its own timer (a server that is never searched still compacts), and
asks the library what is due (`Library.due`: a few stats and the indexes' state checks):
  - the lexical index lacks books or holds removed ones: `build` (the delta: their postings, or
    the pointer alone for a removal);
  - it holds BACKGROUND_CHANGES books added or removed since its exact rebuild (each added book
    is a segment every query looks its terms up in; a removed one's postings are still read,
    then filtered), or its frozen average length is BACKGROUND_DRIFT off: `compact`;
  - a large model group's approximate index lacks books: `build` (a segment); drifted past
    RETRAIN_DRIFT (the port's `state().drift`): `retrain`.
The job runs through `run`, which the facade makes a child process at low priority (a full
rebuild's memory, ~2 GB at a million records, and its CPU stay out of the server; a child
killed at any point leaves what any killed writer leaves: the previous generation, swept by
the next writer). Searches meanwhile serve the generation they hold; their next generation
check (each second) moves them to the new one. A refused job (another writer holds the library
past the lock's wait) is tried again at the next wake; a failed one after RETRY_FAILED_S, or
as soon as the library changes again.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import WriterJob

if TYPE_CHECKING:
    import logging

POLL_S = 2.0  # how often the writer looks at the library (stats and state checks: milliseconds)
RETRY_FAILED_S = 300.0  # a job that failed (a full disk, a read-only replica): tried again after this
# A server compacts in the background from here: the ranking cost of a 2% error in the average
# length is ~.001 nDCG@10 (cacm split in 5: 17% cost .009), and a few segments stay cheap to query.
BACKGROUND_CHANGES = 4
BACKGROUND_DRIFT = 0.02
RETRAIN_DRIFT = 0.2  # a group drifted past it is retrained (the local backend's measure: living_vectors.py)

_running: weakref.WeakSet[BackgroundWriter] = weakref.WeakSet()


def running_writers() -> list[BackgroundWriter]:
    """The writers started and not stopped (a test suite stops those its servers left running)."""
    return [w for w in list(_running) if w.alive]


Runner = Callable[[WriterJob], None]  # runs a job to its end; raises BookAgentError when it fails


class BackgroundWriter:
    def __init__(self, due: Callable[[], WriterJob | None], run: Runner,
                 stop_job: Callable[[], None] | None = None, poll_s: float | None = None) -> None:
        self._due = due
        self._run = run
        self._stop_job = stop_job  # ends a job under way (the child's kill: it leaves the previous generation)
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed: tuple[str, float] | None = None  # (the job's key, when to try it again)
        self.done = threading.Event()  # set each time a job lands (tests wait on it)
        self.jobs: list[WriterJob] = []  # the jobs that landed, in order

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="book-agent-library-writer", daemon=True)
        self._thread.start()
        _running.add(self)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> None:
        """Stop waking and end the job under way, if any; returns once the thread has ended."""
        self._stop.set()
        if self._stop_job is not None:
            self._stop_job()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None
        _running.discard(self)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S if self._poll_s is None else self._poll_s):
            self.once()

    def once(self) -> WriterJob | None:
        """One look, and the job it found due run to its end (None when nothing was due or it failed)."""
        try:
            job = self._due()
        except Exception as exc:  # noqa: BLE001 - a background task reports, never raises
            _log().warning("library writer could not look at the library: %s", exc)
            return None
        if job is None or (self._failed is not None and self._failed[0] == job.key
                           and time.monotonic() < self._failed[1]):
            return None
        try:
            self._run(job)
        except Exception as exc:  # noqa: BLE001
            busy = isinstance(exc, BookAgentError) and exc.code in ("book.runtime_locked", "lexical.build_busy",
                                                                    "vector.index_busy")
            if not busy:  # a refused job is asked again at the next wake
                self._failed = (job.key, time.monotonic() + RETRY_FAILED_S)
            if not self._stop.is_set():
                log = _log()
                (log.debug if busy else log.warning)("library writer job not done: %s", exc)
            return None
        self._failed = None
        self.jobs.append(job)
        self.done.set()
        return job


def _log() -> logging.Logger:
    """The module's logger, imported when first needed (logging is ~5 ms of a one-shot search's start)."""
    import logging

    return logging.getLogger(__name__)
