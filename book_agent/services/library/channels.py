"""The library search's channel parts: its records by evidence id, its lexical index narrowed
to the books searched, and a hit's evidence id split back into its book's own fields."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import LexicalHit, Record, ids_by_book
from book_agent.domain.search.search_results import SearchHit
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


ENGINE_DOWN = frozenset({"engine.unavailable", "engine.timeout"})  # a backend's server, not its config


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


def split_hit(hit: SearchHit) -> None:
    """`book_id#record_id` back into the hit's own fields (the evidence id stays citable)."""
    book_id, _, record_id = str(hit["record_id"]).partition("#")
    hit["book_id"] = book_id
    hit["record_id"] = record_id
    hit["evidence_id"] = f"{book_id}#{record_id}"
    hit["source_locator"]["book_id"] = book_id
    hit["source_locator"]["record_id"] = record_id
