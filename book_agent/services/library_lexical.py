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
"""

from __future__ import annotations

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


class LexicalGenerations:
    def __init__(self, index: LibraryIndex) -> None:
        self._index = index
        self._open: tuple[str, LibraryLexicalIndex, int] | None = None  # (stamp, index, records) while fresh
        self._stale: tuple[float, dict[str, str | None]] | None = None  # (when to try again, why) while serving stale
        self._checked = 0.0  # when the open generation was last compared with the one in place

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
                if not self._replaced(expected):
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

    def _replaced(self, expected: dict[str, str]) -> bool:
        """Whether another process wrote a newer generation of the same books (a compaction) since
        the open one: asked of the backend at most every GENERATION_RECHECK_S, so a long-lived
        server moves to it without a state check per search."""
        if self._open is None or time.monotonic() - self._checked < GENERATION_RECHECK_S:
            return False
        self._checked = time.monotonic()
        state = self._index.state(expected)
        return state.fresh and state.generation != self._open[1].generation

    @staticmethod
    def _described(opened: tuple[str, LibraryLexicalIndex, int], rebuilt: bool = False) -> LibraryIndexInfo:
        return {"records": opened[2], "rebuilt": rebuilt, "generation": opened[1].generation}

    def close(self) -> None:
        """Close the open generation (it is reopened when the library changes)."""
        if self._open is not None:
            self._open[1].close()
            self._open = None
        self._stale = None

