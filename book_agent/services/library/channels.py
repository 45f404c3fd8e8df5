"""The library search's channel parts: its records by evidence id, its lexical index narrowed
to the books searched (a hit's evidence id is split back into its book's own fields by
book_agent/domain/search/reports.py: HitReport.in_book)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import LexicalHit, Record, ids_by_book
from book_agent.ports import LexicalIndex, RecordSource
from book_agent.ports.library import LibraryLexicalIndex
from book_agent.services.open_book import OpenBook


class LibraryRecords(RecordSource):
    """Records of several open books, by evidence id (`book_id#record_id`)."""

    def __init__(self, books: dict[str, OpenBook]) -> None:
        self.books = books

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Record]:
        found: dict[str, Record] = {}
        for book_id, ids in ids_by_book(record_ids, self.books).items():
            for record_id, record in self.books[book_id].records.fetch(ids).items():
                key = f"{book_id}#{record_id}"
                found[key] = record.with_id(key)
        return found

    def get(self, record_id: str) -> Record:
        found = self.fetch([record_id]).get(record_id)
        if found is None:
            raise BookAgentError("record.not_found", f"no record {record_id!r} in this library")
        return found

    def close(self) -> None:
        pass


ENGINE_DOWN = frozenset({"engine.unavailable", "engine.timeout", "engine.circuit_open"})  # its server, not its config
BUILD_REFUSED = "engine.failed"  # the server answered a build with no (a version lacking a field type, say)


def engine_down(exc: BookAgentError) -> bool:
    """Whether a library channel's failure is its backend's server's (down, slow, its breaker
    open, or a build it refused): the search then degrades that channel instead of failing."""
    engine_code = exc.details.get("engine_code")
    return exc.code in ENGINE_DOWN or engine_code in ENGINE_DOWN or (
        exc.code.endswith("build_failed") and engine_code == BUILD_REFUSED)


class NarrowedLexical(LexicalIndex):
    """The library's BM25 index, its hits narrowed to the books searched (None: every book).
    An index found damaged while searching is rebuilt (`reopen`) and asked once more."""

    def __init__(self, index: LibraryLexicalIndex, book_ids: Sequence[str] | None,
                 reopen: Callable[[], LibraryLexicalIndex] | None = None) -> None:
        self.index = index
        self.book_ids = book_ids
        self.reopen = reopen

    def search(self, query: str, top_k: int) -> list[LexicalHit]:
        try:
            return self.index.search(query, top_k, self.book_ids)
        except BookAgentError as exc:
            if exc.code != "lexical.index_damaged" or self.reopen is None:
                raise
            self.index, self.reopen = self.reopen(), None
        return self.index.search(query, top_k, self.book_ids)

    def close(self) -> None:
        pass  # the library keeps its index open while it is fresh

