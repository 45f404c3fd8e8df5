"""The library's lexical index as a library search and `prepare` use it: the generation open
while it is fresh, brought up to date when the library changed, never waited for by a search.

A search brings the index up to date with `wait=False`: when another process is writing the
library (an add, a compaction) it serves the generation in place at once, says so (`stale`,
`lexical.build_busy`) and asks again BUSY_RETRY_S later; when it cannot write at all (a full
disk, a read-only replica) it serves the last intact generation and tries again after
STALE_RETRY_S. An open generation is compared with the one in place every GENERATION_RECHECK_S,
so a long-lived server moves to another process's compaction. `prepare` waits for the lock,
raises what fails, and compacts when the statistics drifted past COMPACT_DRIFT (always with
`--full`).

A long-running server (`compact_in_background`) also compacts by itself: when the generation it
serves holds BACKGROUND_CHANGES books added or removed since its exact rebuild (each added book
is a segment every query looks its terms up in; a removed one's postings are still read, then
filtered), or its frozen average length is BACKGROUND_DRIFT off, a background thread runs the
backend's `compact` (wait=False: another writer holding the library is left to it). Searches
meanwhile serve the generation they hold; the next search after it lands moves to the new one.
"""

from __future__ import annotations

import threading
import time

from book_agent.domain.errors import BookAgentError
from book_agent.domain.lexical_text import TOKENIZER_VERSION
from book_agent.domain.library import LibraryMember, library_stamp
from book_agent.domain.search_results import LibraryIndexInfo
from book_agent.ports import Progress
from book_agent.ports.library import LibraryIndex, LibraryLexicalIndex

STALE_RETRY_S = 300.0  # a stale index served because it could not be rebuilt: how long before trying again
BUSY_RETRY_S = 1.0  # ... because another writer held the library: it is asked again this soon
GENERATION_RECHECK_S = 1.0  # how often an open generation is compared with the one in place
COMPACT_DRIFT = 0.05  # `prepare` compacts once the frozen statistics are 5% off (the local backend does by itself)
# A server compacts in the background from here: the ranking cost of a 2% error in the average
# length is ~.001 nDCG@10 (cacm split in 5: 17% cost .009), and a few segments stay cheap to query.
BACKGROUND_CHANGES = 4
BACKGROUND_DRIFT = 0.02



class LexicalGenerations:
    def __init__(self, index: LibraryIndex) -> None:
        self._index = index
        self._open: tuple[str, LibraryLexicalIndex, int] | None = None  # (stamp, index, records) while fresh
        self._stale: tuple[float, dict[str, str | None]] | None = None  # (when to try again, why) while serving stale
        self._checked = 0.0  # when the open generation was last compared with the one in place
        self._background = False  # compact in a background thread when due (a long-running server)
        self._compacting: threading.Thread | None = None
        self._compact_after = 0.0  # a failed or refused background compaction is tried again after this

    def compact_in_background(self, enabled: bool = True) -> None:
        """Compact by itself, in a background thread, when the generation served is due
        (a server; a one-shot command would exit before it lands)."""
        self._background = enabled

    def current(self, members: list[LibraryMember], progress: Progress | None = None, serve_stale: bool = True,
                compact: bool | None = False) -> tuple[LibraryLexicalIndex, LibraryIndexInfo]:
        """The library-wide BM25 index over every registered book that opens (brought up to date
        when a book was registered, replaced or removed since, or found damaged: a living backend
        adds or removes only those books). A search never waits for another writer (`wait=False`:
        it serves the generation in place, and asks again at its next search), and when the index
        cannot be brought up to date (a full disk, a read-only replica) it keeps serving the last
        good generation (intact, only stale) and says so in `stale`; `prepare` waits and raises.
        `compact`: False never (a search), None when drifted (prepare), True always (--full)."""
        expected = library_stamp(members, TOKENIZER_VERSION)
        key = expected["books"]
        if self._open is not None and self._open[0] == key and compact is False:  # open and fresh: no file to read
            if self._stale is None:
                if not self._replaced(members, expected):
                    return self._open[1], self._described(self._open)
            # serving a stale index: picked up as soon as another process brought it up to date
            # (a state check, milliseconds); a failed build is tried again only after STALE_RETRY_S
            elif serve_stale and time.monotonic() < self._stale[0] and not self._index.state(expected).fresh:
                described = self._described(self._open)
                described["stale"] = self._stale[1]
                return self._open[1], described
            self.close()
        self._checked = time.monotonic()
        state = self._index.state(expected)
        info: LibraryIndexInfo = {"records": state.records, "rebuilt": False}
        retry = STALE_RETRY_S
        try:
            if compact or (compact is None and state.drift > COMPACT_DRIFT):
                info["records"] = self._index.compact(members, expected, progress)
                info["rebuilt"] = info["compacted"] = True
            elif not state.fresh:
                info["records"] = self._index.build(members, expected, progress, wait=not (serve_stale and state.intact))
                info["rebuilt"] = True
        except BookAgentError as exc:
            if not (serve_stale and state.intact):
                raise
            info["stale"] = {"code": exc.code, "reason": exc.message, "remediation": exc.remediation}
            retry = BUSY_RETRY_S if exc.code == "lexical.build_busy" else STALE_RETRY_S
        if not serve_stale:  # prepare: say how far the statistics now are from an exact rebuild
            info["drift"] = round(self._index.state(expected).drift, 4)
        self.close()
        self._open = (key, self._index.open(), int(info["records"]))
        if "stale" in info:  # a failed build is not tried again by every search
            self._stale = (time.monotonic() + retry, info["stale"])
        info["generation"] = self._open[1].generation
        return self._open[1], info

    def _replaced(self, members: list[LibraryMember], expected: dict[str, str]) -> bool:
        """Whether another writer (a process, or this one's background compaction) wrote a newer
        generation of the same books since the open one: asked of the backend at most every
        GENERATION_RECHECK_S, so a long-lived server moves to it without a state check per
        search; the same look decides whether a background compaction is due."""
        if self._open is None or time.monotonic() - self._checked < GENERATION_RECHECK_S:
            return False
        self._checked = time.monotonic()
        state = self._index.state(expected)
        if state.fresh and self._background and (state.changes >= BACKGROUND_CHANGES or state.drift > BACKGROUND_DRIFT):
            self._start_compaction(members, expected)
        return state.fresh and state.generation != self._open[1].generation

    def _start_compaction(self, members: list[LibraryMember], expected: dict[str, str]) -> None:
        running = self._compacting is not None and self._compacting.is_alive()
        if running or time.monotonic() < self._compact_after:
            return
        self._compacting = threading.Thread(target=self._compact, args=(list(members), dict(expected)),
                                            name="book-agent-library-compaction", daemon=True)
        self._compacting.start()

    def _compact(self, members: list[LibraryMember], expected: dict[str, str]) -> None:
        """The background compaction (its own thread; a process killed meanwhile leaves the
        generation in place, as any killed writer does)."""
        try:
            self._index.compact(members, expected, None, wait=False)
        except Exception as exc:  # noqa: BLE001 - a background task reports, never raises into a search
            busy = isinstance(exc, BookAgentError) and exc.code == "lexical.build_busy"
            self._compact_after = time.monotonic() + (BUSY_RETRY_S if busy else STALE_RETRY_S)
            import logging  # here only: logging is ~5 ms of a one-shot search's start

            logging.getLogger(__name__).log(logging.DEBUG if busy else logging.WARNING, "library compaction not done: %s", exc)
            return
        self._checked = 0.0  # the next search compares its generation with the one in place at once

    @staticmethod
    def _described(opened: tuple[str, LibraryLexicalIndex, int], rebuilt: bool = False) -> LibraryIndexInfo:
        return {"records": opened[2], "rebuilt": rebuilt, "generation": opened[1].generation}

    def close(self) -> None:
        """Close the open generation (it is reopened when the library changes)."""
        if self._open is not None:
            self._open[1].close()
            self._open = None
        self._stale = None

