"""Library ports: indexes over many books at once, owning their statistics.

Shaped so that an engine past one machine (Postgres with pgvector and full-text search,
OpenSearch) can serve them later: candidates in, ranked `book_id#record_id` out, filtered by
book id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from book_agent.domain.library import LibraryMember
from book_agent.domain.records import LexicalHit, Vector
from book_agent.ports.storage import Progress, VectorStore


@runtime_checkable
class LibraryLexicalIndex(Protocol):
    def search(self, query: str, top_k: int, book_ids: Sequence[str] | None = None) -> list[LexicalHit]:
        """BM25 with the whole library's statistics, best first; record ids are
        `book_id#record_id`; `book_ids` narrows the hits (not the statistics)."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class LibraryIndex(Protocol):
    """The library's derived indexes in the data dir, rebuilt from the books when stale."""

    def state(self, expected: dict[str, str]) -> dict[str, Any]:
        """{present, fresh, path, record_count} against the expected stamp (an adapter may add
        `sound`: it passed its integrity checks, so it may serve while stale, and `reason`)."""
        ...
    def build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None) -> int:
        """Rebuild atomically (readers keep the old index until the new one is in place)."""
        ...
    def open(self) -> LibraryLexicalIndex: ...


@runtime_checkable
class LibraryVectorIndex(Protocol):
    """One model group's approximate index, open (its books' rows rescored exactly)."""

    def search(self, query_vector: Vector, depth: int, book_ids: Sequence[str] | None = None
               ) -> list[tuple[str, float]]:
        """(`book_id#record_id`, score) best first, at most `depth`. Candidates come from the
        approximate index; each score is then computed exactly against the book's own row
        (the cosine or dot product its VectorStore.search_ids would give). `book_ids` keeps
        only those books' records. Raises BookAgentError (`vector.index_unusable`) when the
        index no longer matches its books (the caller then searches exactly)."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class LibraryVectorIndexes(Protocol):
    """Approximate vector indexes of the library's model groups, in the data dir (derived
    data), one per (model, dimensions), rebuilt from the books' vectors when stale.

    `stores` are the group's books' vector stores by book id; their `load()` gives the rows
    the index is built from and rescored against."""

    min_vectors: int  # a group holding fewer vectors is searched exactly, book by book

    def state(self, model: str, dimensions: int, expected: dict[str, str]) -> dict[str, Any]:
        """{present, fresh, path, vectors, reason} against the expected stamp (an unreadable or
        altered index is not fresh)."""
        ...
    def build(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
              progress: Progress | None) -> int:
        """Rebuild atomically under the library's build lock (readers keep the old index until
        the new one is in place); returns the vector count. Raises BookAgentError
        (`vector.index_build_failed`, `vector.index_unavailable` when the engine is missing)."""
        ...
    def open(self, model: str, dimensions: int, expected: dict[str, str],
             stores: Mapping[str, VectorStore]) -> LibraryVectorIndex:
        """The index built for `expected`. Raises BookAgentError (`vector.index_unreadable`,
        `vector.index_stale`, `vector.index_unavailable`)."""
        ...
