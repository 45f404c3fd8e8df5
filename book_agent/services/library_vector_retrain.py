"""A long-running server's model groups retrain by themselves (services/library_lexical.py does the
same for the lexical index): when the generation served has drifted past RETRAIN_DRIFT (the
port's `state().drift`), a background thread runs the port's `compact` (the full build), never a
search. Searches meanwhile keep the generation they have (it holds the same books); a book added
meanwhile is served in place and searched exactly (services/library_vector_indexes.py), and the
next generation check moves to the retrained one. A one-shot command never starts one (it would
exit before it lands): `prepare @all` retrains there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from book_agent.domain.errors import BookAgentError
from book_agent.ports import VectorStore
from book_agent.ports.library import LibraryVectorIndexes

RETRAIN_DRIFT = 0.2  # a group drifted past it is retrained (the local backend's measure: living_vectors.py)
RETRY_BUSY_S = 1.0  # another writer held the library: asked again this soon
RETRY_FAILED_S = 300.0  # a retrain that failed (a full disk, a read-only replica): tried again after this



class BackgroundRetrain:
    def __init__(self, port: LibraryVectorIndexes) -> None:
        self._port = port
        self.enabled = False
        self._running: dict[tuple[str, int], threading.Thread] = {}
        self._after: dict[tuple[str, int], float] = {}  # a group's next try after a refused or failed one
        self.done = threading.Event()  # set each time a background retrain lands (tests wait on it)

    def maybe(self, model: str, dims: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
              drift: float) -> bool:
        """Start the group's retrain when enabled, drifted, and none runs; whether one started."""
        group = (model, dims)
        running = self._running.get(group)
        if not self.enabled or drift <= RETRAIN_DRIFT or (running is not None and running.is_alive()) \
                or time.monotonic() < self._after.get(group, 0.0):
            return False
        thread = threading.Thread(target=self._retrain, args=(model, dims, dict(expected), dict(stores)),
                                  name=f"book-agent-vector-retrain-{model}-{dims}", daemon=True)
        self._running[group] = thread
        thread.start()
        return True

    def _retrain(self, model: str, dims: int, expected: dict[str, str], stores: dict[str, VectorStore]) -> None:
        """Its own thread; a process killed meanwhile leaves the generation in place, as any killed writer does."""
        try:
            self._port.compact(model, dims, expected, stores, None, wait=False)
        except Exception as exc:  # noqa: BLE001 - a background task reports, never raises into a search
            busy = isinstance(exc, BookAgentError) and exc.code == "vector.index_busy"
            self._after[(model, dims)] = time.monotonic() + (RETRY_BUSY_S if busy else RETRY_FAILED_S)
            import logging  # here only: logging is ~5 ms of a one-shot search's start

            logging.getLogger(__name__).log(logging.DEBUG if busy else logging.WARNING, "vector index retrain not done: %s", exc)
            return
        self.done.set()
