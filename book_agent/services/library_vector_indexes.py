"""The approximate indexes of a library's large model groups: when one serves, kept open while fresh.

A model group (books sharing a model and dimensions) holding at least `min_vectors` vectors
(the LibraryVectorIndexes port's threshold) is searched through one approximate index over
every searchable registered book of the group, narrowed to the books asked for; a smaller
group, or a part of a group smaller than that, is searched exactly, book by book. The index's
stamp names every member (id, manifest and database hashes): a registration, replacement or
removal makes it stale, and the next library search (or `prepare`) rebuilds it. An index that
cannot be built or read leaves its group searched exactly, with a note saying why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryMember, vector_group_stamp
from book_agent.domain.registry_entry import database_sha
from book_agent.ports import Progress, VectorStore
from book_agent.ports.library import LibraryVectorIndex, LibraryVectorIndexes
from book_agent.services.library_vectors import Approximate, ApproximateLookup
from book_agent.services.open_book import OpenBook

Group = tuple[str, int]  # (model, dimensions)


class GroupIndexes:
    def __init__(self, port: LibraryVectorIndexes) -> None:
        self._port = port
        self._open: dict[Group, tuple[dict[str, str], LibraryVectorIndex, int]] = {}  # (stamp, index, vectors)
        self._lock = threading.Lock()  # one build or open at a time (the MCP server's threads)

    def prepare(self, every: list[OpenBook], progress: Progress | None = None) -> list[dict[str, Any]]:
        """Build (when stale) and open the index of every group large enough for one; each
        group says how it is searched."""
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
            index, described = self.index(model, dims, members, progress)
            out.append({**row, "search": "approximate" if index is not None else "exact", **described})
        return out

    def index(self, model: str, dims: int, members: list[OpenBook], progress: Progress | None = None,
              wait: bool = True) -> tuple[LibraryVectorIndex | None, dict[str, Any]]:
        """The group's index over `members` (every searchable registered book of the group),
        rebuilt when stale; None (search exactly) and a note when it cannot be built or read,
        or, when not `wait`ing (a search), while another thread of this process builds one."""
        metrics = {str((b.package.vector_manifest or {}).get("metric") or "cosine") for b in members}
        if len(metrics) != 1:
            return None, {"note": "its books use different metrics: searched exactly"}
        expected = vector_group_stamp(model, dims, metrics.pop(), [library_member(b) for b in members])
        cached = self._open.get((model, dims))
        if cached is not None and cached[0] == expected:  # open and fresh: no lock, no file to read
            return cached[1], {"vector_index": {"vectors": cached[2], "rebuilt": False}}
        if not self._lock.acquire(blocking=wait):  # a search never waits for another thread's build
            return None, {"note": "its approximate index is being built or opened: searched exactly meanwhile"}
        try:
            return self._index_locked(model, dims, expected, members, progress)
        finally:
            self._lock.release()

    def _index_locked(self, model: str, dims: int, expected: dict[str, str], members: list[OpenBook],
                      progress: Progress | None) -> tuple[LibraryVectorIndex | None, dict[str, Any]]:
        cached = self._open.get((model, dims))
        if cached is not None and cached[0] == expected:  # open and fresh: no file to read
            return cached[1], {"vector_index": {"vectors": cached[2], "rebuilt": False}}
        stores = {b.book_id: store for b in members if (store := b.vector_parts[0]) is not None}
        try:
            index, count, rebuilt = self._load(model, dims, expected, stores, progress)
        except BookAgentError as exc:
            return None, {"note": f"{exc.message}: searched exactly"}
        if cached is not None:
            cached[1].close()
        self._open[(model, dims)] = (expected, index, count)
        return index, {"vector_index": {"vectors": count, "rebuilt": rebuilt}}

    def _load(self, model: str, dims: int, expected: dict[str, str], stores: dict[str, VectorStore],
              progress: Progress | None) -> tuple[LibraryVectorIndex, int, bool]:
        """(index, vectors, rebuilt): opened, built first when stale; an index faiss cannot read
        is discarded by the port, so it is built anew once."""
        try:
            return self._fresh_or_built(model, dims, expected, stores, progress)
        except BookAgentError as exc:
            if exc.code != "vector.index_unreadable":
                raise
        return self._fresh_or_built(model, dims, expected, stores, progress)

    def _fresh_or_built(self, model: str, dims: int, expected: dict[str, str], stores: dict[str, VectorStore],
                        progress: Progress | None) -> tuple[LibraryVectorIndex, int, bool]:
        state = self._port.state(model, dims, expected)
        count, rebuilt = state.vectors, not state.fresh
        if rebuilt:
            count = self._port.build(model, dims, expected, stores, progress)
        return self._port.open(model, dims, expected, stores), count, rebuilt

    def lookup(self, every: Callable[[], list[OpenBook]]) -> ApproximateLookup:
        """What ModelGroups asks for a group's index: one when the books searched hold at least
        `min_vectors` of its vectors (a smaller part of a large group is searched exactly: that
        is fast, and the index's probes would find few of its rows). `every`: the registered
        books that open (asked only when an index may serve)."""
        found: list[OpenBook] = []

        def approximate(model: str, dims: int, books: list[OpenBook]) -> tuple[Approximate | None, dict[str, Any]]:
            if sum(map(vectors_of, books)) < self._port.min_vectors:
                return None, {}
            if not found:
                found.extend(every())
            members = [b for b in found if searchable(b) and group_of(b) == (model, dims)]
            index, described = self.index(model, dims, members, wait=False)
            if index is None:
                return None, described
            wanted = {b.book_id for b in books}
            narrowed = None if wanted >= {b.book_id for b in members} else sorted(wanted)
            return Approximate(index, narrowed), described

        return approximate

    def close(self) -> None:
        with self._lock:
            for _, index, _ in self._open.values():
                index.close()
            self._open.clear()


def library_member(book: OpenBook) -> LibraryMember:
    """The book as the library's indexes hold it (its stamp: manifest and database hashes)."""
    assert book.package.database_path is not None
    stamp = f"{book.entry.get('manifest_sha256') or ''}:{database_sha(book.package) or ''}"
    return LibraryMember(book.book_id, Path(book.package.database_path), vectors_of(book), stamp)


def vectors_of(book: OpenBook) -> int:
    return int((book.package.vector_manifest or {}).get("record_count") or 0)


def group_of(book: OpenBook) -> Group:
    """The model group of a book with vectors (as ModelGroups groups them)."""
    manifest = book.package.vector_manifest or {}
    return str(manifest.get("model")), int(manifest.get("dimensions") or 0)


def searchable(book: OpenBook) -> bool:
    """Has vectors, and its vector store opens."""
    if not book.package.vector_manifest:
        return False
    store, _, _, problem = book.vector_parts
    return store is not None and problem is None
