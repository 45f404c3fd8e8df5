"""The library's lexical index as a library search and the library's writers use it.

A search never builds (issue 26): it serves the generation in place. When that generation does
not hold the books registered now (a registration, replacement or removal that no writer has
brought in yet), the search serves it narrowed to the books it holds as they are now (a removed
or replaced book's old records never answer), lists the others as `pending_books` and says why
in `stale` (`lexical.index_pending`); their vectors still answer (library_vector_indexes.py). The
writers are the registering call (`init`, `remove`: book_agent/services/library/search.py `update`), `prepare`,
and a long-running server's background writer (book_agent/services/library/writer.py). An open generation
is compared with the one in place every GENERATION_RECHECK_S, so a reader moves to a writer's
new generation within a second. The one build a search still runs is when there is nothing
sound to serve at all (no index was ever built, or it was found damaged): then it builds, as
`prepare` would.

A writer waits for the build lock (writers are serialised), raises what fails, and compacts
when asked (`compact=True`) or, with `compact=None` (`prepare`), when the statistics drifted
past COMPACT_DRIFT.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from book_agent.domain.library import LibraryIndexState, LibraryMember, held_members, library_stamp
from book_agent.domain.search.lexical_text import TOKENIZER_VERSION
from book_agent.domain.search.search_results import LibraryIndexInfo
from book_agent.ports import Progress
from book_agent.ports.library import LibraryIndex, LibraryLexicalIndex

GENERATION_RECHECK_S = 1.0  # how often a served generation is compared with the one in place
COMPACT_DRIFT = 0.05  # `prepare` compacts once the frozen statistics are 5% off (the local backend does by itself)
PENDING = "lexical.index_pending"


@dataclass
class _Served:
    key: str  # the books (stamp) it was served for
    reader: LibraryLexicalIndex
    info: LibraryIndexInfo


class LexicalGenerations:
    def __init__(self, index: LibraryIndex) -> None:
        self._index = index
        self._open: _Served | None = None
        self._checked = 0.0  # when the served generation was last compared with the one in place

    def current(self, members: list[LibraryMember], progress: Progress | None = None, serve_stale: bool = True,
                compact: bool | None = False) -> tuple[LibraryLexicalIndex, LibraryIndexInfo]:
        """The library-wide BM25 index over `members` (every registered book that opens).
        A search (`serve_stale`, no `compact`) serves the generation in place (see the module
        docstring); a writer (`serve_stale` False) brings it up to date first and raises what
        fails. `compact`: False never, None when drifted (prepare), True always (--full)."""
        expected = library_stamp(members, TOKENIZER_VERSION)
        key = expected["books"]
        searching = serve_stale and compact is False
        if searching and self._open is not None and self._open.key == key \
                and time.monotonic() - self._checked < GENERATION_RECHECK_S:  # no file read between checks
            return self._open.reader, self._open.info.copy()
        self._checked = time.monotonic()
        state = self._index.state(expected)
        if searching and state.intact:
            return self._in_place(members, key, state)
        # a writer; or a search with nothing sound to serve (never built, damaged): build it
        info: LibraryIndexInfo = {"records": state.records, "rebuilt": False}
        if compact or (compact is None and state.drift > COMPACT_DRIFT):
            info["records"] = self._index.compact(members, expected, progress)
            info["rebuilt"] = info["compacted"] = True
        elif not state.fresh:
            info["records"] = self._index.build(members, expected, progress)
            info["rebuilt"] = True
        if not serve_stale:  # a writer: say how far the statistics now are from an exact rebuild
            info["drift"] = round(self._index.state(expected).drift, 4)
        self.close()
        reader = self._index.open()
        info["generation"] = reader.generation
        self._open = _Served(key, reader, {"records": info["records"], "rebuilt": False,
                                           "generation": info["generation"]})
        return reader, info

    def _in_place(self, members: list[LibraryMember], key: str, state: LibraryIndexState
                  ) -> tuple[LibraryLexicalIndex, LibraryIndexInfo]:
        """The generation in place, fresh or not (a search's): kept open while it stays in place."""
        if self._open is not None and self._open.reader.generation == state.generation:
            reader = self._open.reader
        else:
            self.close()
            reader = self._index.open()
        info: LibraryIndexInfo = {"records": state.records, "rebuilt": False, "generation": reader.generation}
        if not state.fresh:
            held = set(held_members(members, state.held)) if state.held is not None else {m.book_id for m in members}
            info["pending_books"] = sorted(m.book_id for m in members if m.book_id not in held)
            pending = ", ".join(info["pending_books"]) or "none; books removed since are filtered out"
            info["stale"] = {"code": PENDING,
                             "reason": f"the generation served does not hold the library's latest changes yet "
                                       f"(books not yet in its lexical hits: {pending}); the registering command, "
                                       "`prepare @all` or a server's background writer brings it up to date",
                             "remediation": "book-agent prepare @all"}
        self._open = _Served(key, reader, info)
        return reader, info.copy()

    def close(self) -> None:
        """Close the open generation (it is reopened when the library changes)."""
        if self._open is not None:
            self._open.reader.close()
            self._open = None
