"""The approximate indexes of a library's large model groups: when one serves, kept open while fresh.

A model group (books sharing a model and dimensions) holding at least `min_vectors` vectors
(the LibraryVectorIndexes port's threshold) is searched through one approximate index over
every searchable registered book of the group, narrowed to the books asked for; a smaller
group, or a part of a group smaller than that, is searched exactly, book by book. The index's
stamp names every member (id, manifest and database hashes): a registration, replacement or
removal makes it stale, and the next library search (or `prepare`) brings it up to date, at the
cost of the books that changed (the port's `build`: a living backend adds their rows to its
trained index and filters the removed ones).

No search waits for a build: a search asks with `wait=False`, and while another writer holds
the library (an add, a retrain) or the index cannot be brought up to date (a read-only replica),
it serves the generation in place for the books it holds with their current stamps, searches
the others (added or replaced since) exactly, and merges them by score. Both halves score
exactly (cosines of one model compare across books), so the merge ranks as one index holding
every book would, up to the approximate half's recall; nothing is left out. It asks again
BUSY_RETRY_S later (STALE_RETRY_S after a failure). An open generation is compared with the one
in place every GENERATION_RECHECK_S, so a long-lived process moves to another's retrain.
`prepare` waits, and retrains (the port's `compact`) a group whose drift passed RETRAIN_DRIFT;
`prepare --full` always; a long-running server retrains in the background
(book_agent/services/library/writer.py). A group with no usable index yet is searched exactly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import vector_group_stamp
from book_agent.ports import Progress, VectorStore
from book_agent.ports.library import LibraryVectorIndex, LibraryVectorIndexes
from book_agent.services.library.vector_groups import (
    group_of,
    library_member,
    searchable,
    stores_of,
    vectors_of,
)
from book_agent.services.library.vectors import Approximate, ApproximateLookup
from book_agent.services.library.writer import RETRAIN_DRIFT
from book_agent.services.open_book import OpenBook

__all__ = ["GroupIndexes", "group_of", "library_member", "searchable", "vectors_of"]

Group = tuple[str, int]  # (model, dimensions)
Described = dict[str, Any]  # how a group is searched: its vector_index, or a note (a ModelGroupRow's part)
BUSY_RETRY_S = 1.0  # a build another writer held up: asked again this soon
STALE_RETRY_S = 300.0  # a build that failed (a full disk, a read-only replica): tried again after this
GENERATION_RECHECK_S = 1.0  # how often an open, fresh generation is compared with the one in place
PENDING = "vector.index_pending"  # (a search's) the index lacks books a writer has yet to add


@dataclass
class _Opened:
    """A group's open generation: fresh for `expected`, or (expected None) served in place while stale."""

    expected: dict[str, str] | None
    index: LibraryVectorIndex
    vectors: int
    checked: float = field(default_factory=time.monotonic)
    retry_at: float = 0.0
    stale: dict[str, str | None] | None = None


@dataclass(frozen=True)
class _Served:
    index: LibraryVectorIndex
    held: list[str] | None  # the group's books the index serves (None: every one); the rest are searched exactly


class GroupIndexes:
    def __init__(self, port: LibraryVectorIndexes) -> None:
        self._port = port
        self._open: dict[Group, _Opened] = {}
        self._lock = threading.Lock()  # one build or open at a time (the MCP server's threads)

    def prepare(self, every: list[OpenBook], progress: Progress | None = None,
                compact: bool | None = None) -> list[dict[str, Any]]:
        """Bring up to date (waiting for another writer) and open the index of every group large
        enough for one; retrained (`compact`) always (True, `--full`), when drifted past
        RETRAIN_DRIFT (None, `prepare`) or never (False, a registration); each group says how it
        is searched."""
        groups: dict[Group, list[OpenBook]] = {}
        for book in every:
            if searchable(book):
                groups.setdefault(group_of(book), []).append(book)
        out: list[dict[str, Any]] = []
        for (model, dims), members in sorted(groups.items()):
            row: dict[str, Any] = {"model": model, "dimensions": dims, "vectors": sum(map(vectors_of, members))}
            if row["vectors"] < self._port.min_vectors:
                out.append({**row, "search": "exact"})
                continue
            served, described = self.index(model, dims, members, progress, compact=compact)
            out.append({**row, "search": "approximate" if served is not None else "exact", **described})
        return out

    def index(self, model: str, dims: int, members: list[OpenBook], progress: Progress | None = None,
              wait: bool = True, compact: bool | None = False) -> tuple[_Served | None, Described]:
        """The group's index over `members` (every searchable registered book of the group),
        brought up to date when stale (see the module docstring); None (search exactly) and a
        note when there is no usable one. `compact`: False never (a search), None when drifted
        (prepare), True always (--full)."""
        metrics = {str((b.package.vector_manifest or {}).get("metric") or "cosine") for b in members}
        if len(metrics) != 1:
            return None, {"note": "its books use different metrics: searched exactly"}
        held = [library_member(b) for b in members]
        expected = vector_group_stamp(model, dims, metrics.pop(), held)
        stamps = {m.book_id: m.stamp for m in held}
        cached = self._open.get((model, dims))
        if cached is not None and cached.expected == expected and compact is False \
                and time.monotonic() - cached.checked < GENERATION_RECHECK_S:  # open and fresh: no file read
            return _Served(cached.index, None), _described(cached)
        if not self._lock.acquire(blocking=wait):  # a search never waits for another thread's build
            if cached is not None and cached.expected == expected:
                return _Served(cached.index, None), _described(cached)
            if cached is not None:
                return _partial(cached, stamps)
            return None, {"note": "its approximate index is being built or opened: searched exactly meanwhile"}
        try:
            if not wait:
                return self._serve_locked(model, dims, expected, stamps, members)
            return self._index_locked(model, dims, expected, stamps, members, progress, compact)
        finally:
            self._lock.release()

    def _serve_locked(self, model: str, dims: int, expected: dict[str, str], stamps: dict[str, str],
                      members: list[OpenBook]) -> tuple[_Served | None, Described]:
        """A search's: the generation in place, never a build. Fresh, it serves whole; else the
        books it holds as they are now through it and the others exactly (`_partial`); none
        readable, the group is searched exactly."""
        group = (model, dims)
        cached = self._open.get(group)
        if cached is not None and cached.expected is None and time.monotonic() < cached.retry_at:
            return _partial(cached, stamps)  # serving in place until it is time to look again
        state = self._port.state(model, dims, expected)  # a backend's server down raises: searched exactly
        if cached is not None:
            cached.checked = time.monotonic()
        if not state.intact:  # nothing sound to serve (never built, damaged): built here, unless another writer is
            return self._index_locked(model, dims, expected, stamps, members, None, False, wait=False)
        if not state.fresh:
            pending = BookAgentError(PENDING, "books registered, replaced or removed since its generation are "
                                     "not yet in it (the registering command, `prepare @all` or a server's "
                                     "background writer adds them)", remediation="book-agent prepare @all")
            return self._in_place(group, expected, stores_of(members), stamps, pending)
        if cached is not None and cached.expected == expected and state.generation == cached.index.generation:
            return _Served(cached.index, None), _described(cached)
        stores = stores_of(members)
        try:
            index = self._port.open(model, dims, expected, stores)
        except BookAgentError as exc:
            if exc.code == "vector.index_unreadable":  # discarded by the port: nothing sound in place any more
                return self._index_locked(model, dims, expected, stamps, members, None, False, wait=False)
            return self._in_place(group, expected, stores, stamps, exc)
        self._replace(group, _Opened(expected, index, state.vectors))
        return _Served(index, None), _described(self._open[group])

    def _index_locked(self, model: str, dims: int, expected: dict[str, str], stamps: dict[str, str],
                      members: list[OpenBook], progress: Progress | None, compact: bool | None, wait: bool = True
                      ) -> tuple[_Served | None, Described]:
        """A writer's (prepare, a registration): brought up to date, waiting for another writer
        (`wait`); a search's only when there is nothing sound in place (not waiting)."""
        group = (model, dims)
        stores = stores_of(members)
        try:
            index, count, built = self._load(model, dims, expected, stores, progress, wait, compact)
        except BookAgentError as exc:
            return self._in_place(group, expected, stores, stamps, exc)
        self._replace(group, _Opened(expected, index, count))
        described = _described(self._open[group], rebuilt=bool(built))
        if built == "compacted":
            described["vector_index"]["compacted"] = True
        if compact is not False:
            described["vector_index"]["drift"] = round(self._port.state(model, dims, expected).drift, 4)
        return _Served(index, None), described

    def _load(self, model: str, dims: int, expected: dict[str, str], stores: dict[str, VectorStore],
              progress: Progress | None, wait: bool, compact: bool | None
              ) -> tuple[LibraryVectorIndex, int, str | None]:
        """(index, vectors, how it was brought up to date: None, "built" or "compacted"); an index
        faiss cannot read is discarded by the port, so it is built anew once."""
        try:
            return self._fresh_or_built(model, dims, expected, stores, progress, wait, compact)
        except BookAgentError as exc:
            if exc.code != "vector.index_unreadable":
                raise
        return self._fresh_or_built(model, dims, expected, stores, progress, wait, compact)

    def _fresh_or_built(self, model: str, dims: int, expected: dict[str, str], stores: dict[str, VectorStore],
                        progress: Progress | None, wait: bool, compact: bool | None
                        ) -> tuple[LibraryVectorIndex, int, str | None]:
        state = self._port.state(model, dims, expected)
        count, built = state.vectors, None
        if compact is True:
            count, built = self._port.compact(model, dims, expected, stores, progress, wait=wait), "compacted"
        elif not state.fresh:
            count, built = self._port.build(model, dims, expected, stores, progress, wait=wait), "built"
        if compact is None and self._port.state(model, dims, expected).drift > RETRAIN_DRIFT:
            count, built = self._port.compact(model, dims, expected, stores, progress, wait=wait), "compacted"
        return self._port.open(model, dims, expected, stores), count, built

    def _in_place(self, group: Group, expected: dict[str, str], stores: Mapping[str, VectorStore],
                  stamps: dict[str, str], exc: BookAgentError) -> tuple[_Served | None, Described]:
        """The generation in place for the books it holds (the others searched exactly), while the
        index cannot be brought up to date; None and a note when there is none to serve."""
        try:
            state = self._port.state(*group, expected)
        except BookAgentError as unread:  # a backend's server down: nothing in place to ask either
            return None, {"note": f"{exc.message}; {unread.message}: searched exactly"}
        cached = self._open.get(group)
        stale = {"code": exc.code, "reason": exc.message, "remediation": exc.remediation}
        retry_at = time.monotonic() + (BUSY_RETRY_S if exc.code in (PENDING, "vector.index_busy") else STALE_RETRY_S)
        if cached is not None and state.intact and cached.index.generation == state.generation:
            index = cached.index
        elif state.intact:
            try:
                index = self._port.open(*group, expected, stores, in_place=True)
            except BookAgentError as failed:
                return None, {"note": f"{exc.message}; {failed.message}: searched exactly"}
        else:
            return None, {"note": f"{exc.message}: searched exactly"}
        self._replace(group, _Opened(None, index, state.vectors, retry_at=retry_at, stale=stale))
        return _partial(self._open[group], stamps)

    def _replace(self, group: Group, opened: _Opened) -> None:
        before = self._open.get(group)
        if before is not None and before.index is not opened.index:
            before.index.close()
        self._open[group] = opened

    def lookup(self, every: Callable[[], list[OpenBook]]) -> ApproximateLookup:
        """What ModelGroups asks for a group's index: one when the books searched hold at least
        `min_vectors` of its vectors (a smaller part of a large group is searched exactly: that
        is fast, and the index's probes would find few of its rows). `every`: the registered
        books that open (asked only when an index may serve)."""
        found: list[OpenBook] = []

        def approximate(model: str, dims: int, books: list[OpenBook]) -> tuple[Approximate | None, Described]:
            if sum(map(vectors_of, books)) < self._port.min_vectors:
                return None, {}
            if not found:
                found.extend(every())
            members = [b for b in found if searchable(b) and group_of(b) == (model, dims)]
            served, described = self.index(model, dims, members, wait=False)
            if served is None:
                return None, described
            wanted = {b.book_id for b in books}
            if served.held is None:
                narrowed = None if wanted >= {b.book_id for b in members} else sorted(wanted)
                return Approximate(served.index, narrowed), described
            return Approximate(served.index, sorted(wanted & set(served.held)),
                               tuple(sorted(wanted - set(served.held)))), described

        return approximate

    def close(self) -> None:
        with self._lock:
            for opened in self._open.values():
                opened.index.close()
            self._open.clear()


def _described(opened: _Opened, rebuilt: bool = False) -> Described:
    return {"vector_index": {"vectors": opened.vectors, "rebuilt": rebuilt,
                             "generation": getattr(opened.index, "generation", None)}}


def _partial(opened: _Opened, stamps: dict[str, str]) -> tuple[_Served | None, Described]:
    """Serve a stale generation: the books it holds with their current stamps through it, the
    others (added or replaced since) exactly."""
    held = [b for b, stamp in stamps.items() if opened.index.books.get(b) == stamp]
    exact = sorted(b for b in stamps if b not in held)
    why = (opened.stale or {}).get("reason") or "another thread is bringing it up to date"
    if not held:
        return None, {"note": f"its approximate index holds none of these books yet ({why}): searched exactly"}
    described = _described(opened)
    described["vector_index"].update(stale=opened.stale or {"code": "vector.index_busy", "reason": why,
                                                            "remediation": None}, exact_books=exact)
    if exact:
        described["note"] = (f"books added or replaced since its generation ({', '.join(exact)}) searched exactly "
                             f"and merged by score: {why}")
    return _Served(opened.index, held), described
