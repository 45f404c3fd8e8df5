"""Library ports: indexes over many books at once, owning their statistics.

Shaped so that an engine past one machine (Postgres with pgvector and full-text search,
OpenSearch) can serve them later: candidates in, ranked `book_id#record_id` out, filtered by
book id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from book_agent.domain.library import LibraryMember
from book_agent.domain.records import LexicalHit
from book_agent.ports.storage import Progress


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
        """{present, fresh, path, record_count} against the expected stamp."""
        ...
    def build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None) -> int:
        """Rebuild atomically (readers keep the old index until the new one is in place)."""
        ...
    def open(self) -> LibraryLexicalIndex: ...
