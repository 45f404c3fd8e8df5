"""Library search: several books (`a,b` or `@all`) searched as one.

Ranking must not suffer from splitting a corpus into books, so nothing is merged after the
fact: the lexical channel is one BM25 index over the whole library (its statistics global,
narrowed to the books asked for); the vector channel searches each model group (books whose
vectors share a model and dimensions, so their cosines compare) and merges by score, exactly
or, for a large group, through its approximate index (services/library_vector_indexes.py);
the two are fused as for one book (services/search.py). Record ids inside the search are
evidence ids (`book_id#record_id`), unique across books; each hit says its book.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from book_agent.domain.book_refs import BookRef
from book_agent.domain.book_reports import LibraryBook
from book_agent.domain.errors import BookAgentError
from book_agent.domain.fusion import LanguageEvidence
from book_agent.domain.records import LexicalHit, Record
from book_agent.domain.registry_entry import RegistryEntry
from book_agent.domain.search_results import (
    Hints,
    LibraryBookRow,
    LibraryIndexInfo,
    SearchHit,
    SearchResult,
)
from book_agent.ports import LexicalIndex, Phases, Progress, RecordSource
from book_agent.ports.library import LibraryIndex, LibraryLexicalIndex
from book_agent.services.books import OpenBooks
from book_agent.services.context import Ports
from book_agent.services.library_lexical import LexicalGenerations
from book_agent.services.library_vector_indexes import GroupIndexes
from book_agent.services.library_vector_indexes import library_member as _member
from book_agent.services.library_vectors import ModelGroups
from book_agent.services.locators import LibraryLocators
from book_agent.services.open_book import OpenBook
from book_agent.services.search import HybridSearch, SearchChannels


class LibraryRecords(RecordSource):
    """Records of several open books, by evidence id (`book_id#record_id`)."""

    def __init__(self, books: dict[str, OpenBook]) -> None:
        self.books = books

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Record]:
        wanted: dict[str, list[str]] = {}
        for key in record_ids:
            book_id, _, record_id = key.partition("#")
            if book_id in self.books and record_id:
                wanted.setdefault(book_id, []).append(record_id)
        found: dict[str, Record] = {}
        for book_id, ids in wanted.items():
            for record_id, record in self.books[book_id].records.fetch(ids).items():
                found[f"{book_id}#{record_id}"] = replace(record, record_id=f"{book_id}#{record_id}")
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


class Library:
    def __init__(self, ports: Ports, books: OpenBooks, index: LibraryIndex) -> None:
        self._ports = ports
        self._books = books
        self._index = index
        self._lexical = LexicalGenerations(index)
        self._vectors = GroupIndexes(ports.library_vectors)  # approximate indexes of large model groups

    def book_ids(self, ref: BookRef) -> list[str]:
        """The registered ids a reference names; an unknown id in a list is an error naming it."""
        return list(self._entries(ref))

    def _entries(self, ref: BookRef, registered: dict[str, RegistryEntry] | None = None) -> dict[str, RegistryEntry]:
        """The registry entries a reference names, from one read of the registry."""
        registered = registered if registered is not None else self._registered()
        if ref.everything:
            return registered
        for book_id in ref.ids:
            if book_id not in registered:
                self._ports.registry.get(book_id)  # book.not_registered names the id
        return {book_id: registered[book_id] for book_id in ref.ids}

    def _registered(self) -> dict[str, RegistryEntry]:
        return {str(e["book_id"]): e for e in self._ports.registry.list()}

    def describe(self, ref: BookRef) -> list[LibraryBook]:
        """The books a reference names: id, title, language, records, model (or why not usable)."""
        rows: list[LibraryBook] = []
        for book_id, entry in self._entries(ref).items():
            try:
                book = self._books.open(book_id, entry)
            except BookAgentError as exc:
                rows.append({"book_id": book_id, "available": False, "code": exc.code, "reason": exc.message})
                continue
            vectors = book.package.vector_manifest or {}
            rows.append({"book_id": book_id, "available": True, "title": book.package.title,
                         "language": (book.package.archive_manifest or {}).get("language"),
                         "records": vectors.get("record_count"), "model": vectors.get("model"),
                         "dimensions": vectors.get("dimensions"), "kind": book.package.original_kind})
        return rows

    def open_books(self, entries: dict[str, RegistryEntry], strict: bool
                   ) -> tuple[dict[str, OpenBook], list[LibraryBookRow]]:
        """The books that open; the others (a changed package) are skipped with the reason,
        or, in strict mode, fail the search."""
        opened: dict[str, OpenBook] = {}
        skipped: list[LibraryBookRow] = []
        for book_id, entry in entries.items():
            try:
                opened[book_id] = self._books.open(book_id, entry)
            except BookAgentError as exc:
                if strict:
                    raise
                skipped.append({"book_id": book_id, "searched": False, "code": exc.code, "reason": exc.message,
                                "remediation": exc.remediation})
        return opened, skipped

    def prepare(self, ref: BookRef, phases: Phases | None = None, full: bool = False) -> dict[str, Any]:
        """Bring the library index up to date now (with progress per phase), instead of at the
        first library search; compacted when its statistics drifted past COMPACT_DRIFT, or always
        with `full` (the exact rebuild)."""
        registered = self._registered()
        opened, skipped = self.open_books(self._entries(ref, registered), strict=False)
        _, info = self.lexical(opened, registered, phases("library: lexical index") if phases else None,
                               serve_stale=False, compact=True if full else None)
        vectors = self._vectors.prepare(self._every_openable_book(opened, registered),
                                        phases("library: vector indexes") if phases else None, full=full)
        return {"library": ref.text, "lexical_index": info, "vector_indexes": vectors, "skipped": skipped}

    def lexical(self, searched: dict[str, OpenBook], registered: dict[str, RegistryEntry],
                progress: Progress | None = None, serve_stale: bool = True,
                compact: bool | None = False) -> tuple[LibraryLexicalIndex, LibraryIndexInfo]:
        """The library-wide BM25 index over every registered book that opens (services/
        library_lexical.py: brought up to date, never waited for by a search)."""
        members = [_member(book) for book in self._every_openable_book(searched, registered)]
        return self._lexical.current(members, progress, serve_stale, compact)

    def _rebuilt_lexical(self, searched: dict[str, OpenBook], registered: dict[str, RegistryEntry]
                         ) -> LibraryLexicalIndex:
        """The index again after it was found damaged (its state now says so: it is rebuilt)."""
        self.close()
        return self.lexical(searched, registered, serve_stale=False)[0]

    def compact_in_background(self) -> None:
        """A long-running server's library: its lexical index compacts by itself when due
        (services/library_lexical.py), no search waiting for it."""
        self._lexical.compact_in_background()
        self._vectors.background.enabled = True  # and its drifted model groups retrain (library_vector_retrain.py)

    def close(self) -> None:
        """Close the lexical index (it is reopened when the library changes)."""
        self._lexical.close()

    def close_all(self) -> None:
        self.close()
        self._vectors.close()

    def _every_openable_book(self, searched: dict[str, OpenBook],
                             registered: dict[str, RegistryEntry]) -> list[OpenBook]:
        books = dict(searched)
        for book_id, entry in registered.items():
            if book_id not in books:
                try:
                    books[book_id] = self._books.open(book_id, entry)
                except BookAgentError:
                    continue  # a changed package is left out until it is restored
        return [books[k] for k in sorted(books)]

    def searcher(self, ref: BookRef, strict: bool = False) -> tuple[HybridSearch, dict[str, Any]]:
        """A HybridSearch over the library's channels, and what the result reports about it."""
        registered = self._registered()
        opened, skipped = self.open_books(self._entries(ref, registered), strict)
        lexical, index_info, engine_down = self._lexical_or_unreachable(opened, registered)
        every = set(opened) == set(registered)
        groups = ModelGroups(opened, self._vectors.lookup(lambda: self._every_openable_book(opened, registered)))
        channels = SearchChannels(
            lexical=NarrowedLexical(lexical, None if every else sorted(opened),
                                    lambda: self._rebuilt_lexical(opened, registered)) if lexical else None,
            lexical_problem=engine_down, vector_store=None, query_runtime=None, records=LibraryRecords(opened),
            language_evidence=groups.language_evidence() or LanguageEvidence(),
            vector_search=groups.search,
            locators=LibraryLocators({book_id: book.locators for book_id, book in opened.items()}))
        report = {"books": [{"book_id": b, "searched": True} for b in opened] + skipped,
                  "lexical_index": index_info, "groups": groups, "duplicates": list(ref.duplicates)}
        return HybridSearch(ref.text, channels), report

    def _lexical_or_unreachable(self, searched: dict[str, OpenBook], registered: dict[str, RegistryEntry]
                                ) -> tuple[LibraryLexicalIndex | None, dict[str, object], BookAgentError | None]:
        """The lexical index, or, when a backend's server cannot be reached or is too slow
        (`engine.unavailable`, `engine.timeout`, as such or under the build's code), no lexical
        channel and why: the search degrades (a strict one fails) instead of failing whole, and
        the server stays up. A misconfiguration still fails the search."""
        try:
            index, info = self.lexical(searched, registered)
        except BookAgentError as exc:
            if ENGINE_DOWN.isdisjoint({exc.code, exc.details.get("engine_code")}):
                raise
            return None, {"records": 0, "rebuilt": False, "unavailable": {
                "code": exc.code, "reason": exc.message, "remediation": exc.remediation}}, exc
        return index, dict(info), None

    def search(self, ref: BookRef, query: str, top_k: int, strict: bool,
               query_vector: Sequence[float] | None, hints: Hints | None) -> SearchResult:
        searcher, report = self.searcher(ref, strict)
        result = searcher.search(query, top_k=top_k, strict=strict, query_vector=query_vector, hints=hints)
        for hit in result["hits"]:
            _split_hit(hit)
        groups: ModelGroups = report["groups"]
        vector_notes = groups.notes()
        for book in report["books"]:
            if book["book_id"] in vector_notes:
                book["vector"] = vector_notes[book["book_id"]]
        result["books"] = report["books"]
        result["library"] = {"books_searched": sum(1 for b in report["books"] if b["searched"]),
                             "generation": report["lexical_index"].get("generation"),
                             "lexical_index": report["lexical_index"], "model_groups": groups.describe()}
        result["warnings"] += [f"book {b['book_id']} was skipped: {b['reason']}" for b in report["books"]
                               if not b["searched"]]
        stale = report["lexical_index"].get("stale")
        if stale:
            result["warnings"].append(f"the library's lexical index is stale (it could not be rebuilt: "
                                      f"{stale['reason']}); books registered, replaced or removed since are "
                                      "not yet reflected in its hits")
        if report["duplicates"]:
            result["warnings"].append("named more than once (searched once): " + ", ".join(report["duplicates"]))
        if not report["books"]:
            result["warnings"].append("no books are registered: `book-agent init PACKAGE` adds one")
        return result


def _split_hit(hit: SearchHit) -> None:
    """`book_id#record_id` back into the hit's own fields (the evidence id stays citable)."""
    book_id, _, record_id = str(hit["record_id"]).partition("#")
    hit["book_id"] = book_id
    hit["record_id"] = record_id
    hit["evidence_id"] = f"{book_id}#{record_id}"
    hit["source_locator"]["book_id"] = book_id
    hit["source_locator"]["record_id"] = record_id
