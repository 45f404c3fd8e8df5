"""What a library's model groups are made of: the books with vectors of one model and
dimensions, as the approximate indexes hold them (book_agent/services/library/vector_indexes.py)."""

from __future__ import annotations

from pathlib import Path

from book_agent.domain.book.registry_entry import database_sha
from book_agent.domain.library import LibraryMember, vector_group_stamp
from book_agent.ports import VectorStore
from book_agent.ports.library import LibraryVectorIndexes
from book_agent.services.library.writer import RETRAIN_DRIFT
from book_agent.services.open_book import OpenBook

Group = tuple[str, int]  # (model, dimensions)


def stores_of(members: list[OpenBook]) -> dict[str, VectorStore]:
    """The group's books' vector stores by book id (those that open)."""
    return {b.book_id: store for b in members if (store := b.vector_parts[0]) is not None}


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


def groups_due(port: LibraryVectorIndexes, every: list[OpenBook]) -> str | None:
    """What a background writer should do for the large groups (library_writer.py): "retrain"
    when one drifted past RETRAIN_DRIFT, "build" when one's index lacks books, else None."""
    groups: dict[Group, list[OpenBook]] = {}
    for book in every:
        if searchable(book):
            groups.setdefault(group_of(book), []).append(book)
    due: str | None = None
    for (model, dims), members in sorted(groups.items()):
        metrics = {str((b.package.vector_manifest or {}).get("metric") or "cosine") for b in members}
        if sum(map(vectors_of, members)) < port.min_vectors or len(metrics) != 1:
            continue
        state = port.state(model, dims, vector_group_stamp(model, dims, metrics.pop(),
                                                                 [library_member(b) for b in members]))
        if state.fresh and state.drift > RETRAIN_DRIFT:
            return "retrain"
        if not state.fresh:
            due = "build"
    return due
