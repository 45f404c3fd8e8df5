"""Library search: several books (`a,b` or `@all`) searched as one.

Ranking must not suffer from splitting a corpus into books, so nothing is merged after the
fact: the lexical channel is one BM25 index over the whole library (its statistics global,
narrowed to the books asked for); the vector channel searches each model group (books whose
vectors share a model and dimensions, so their cosines compare) and merges by score, exactly
or, for a large group, through its approximate index (book_agent/services/library/vector_indexes.py);
the two are fused as for one book (book_agent/services/search/hybrid.py). Record ids inside the search are
evidence ids (`book_id#record_id`), unique across books; each hit says its book.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from book_agent.domain.book.book_refs import BookRef
from book_agent.domain.book.book_reports import LibraryBook
from book_agent.domain.book.registry_entry import RegistryEntry
from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import WriterJob, library_stamp
from book_agent.domain.search.lexical_text import TOKENIZER_VERSION
from book_agent.domain.search.reports import LibraryReport, SearchReport
from book_agent.domain.search.search_results import (
    Hints,
    LibraryBookRow,
    LibraryIndexInfo,
    LibraryInfo,
)
from book_agent.domain.search.vector_trust import LanguageEvidence
from book_agent.ports import Phases, Progress
from book_agent.ports.library import LibraryIndex, LibraryLexicalIndex
from book_agent.services.books import OpenBooks
from book_agent.services.context import Ports
from book_agent.services.library.channels import (
    LibraryRecords,
    NarrowedLexical,
    engine_down,
)
from book_agent.services.library.lexical import LexicalGenerations
from book_agent.services.library.vector_groups import groups_due
from book_agent.services.library.vector_groups import library_member as _member
from book_agent.services.library.vector_indexes import GroupIndexes
from book_agent.services.library.vectors import ModelGroups
from book_agent.services.library.writer import (
    BACKGROUND_CHANGES,
    BACKGROUND_DRIFT,
    BackgroundWriter,
    Runner,
)
from book_agent.services.locators import LibraryLocators
from book_agent.services.open_book import OpenBook
from book_agent.services.search.checks import check_arguments
from book_agent.services.search.hybrid import HybridSearch, SearchChannels


class Library:
    def __init__(self, ports: Ports, books: OpenBooks, index: LibraryIndex) -> None:
        self._ports = ports
        self._books = books
        self._index = index
        self._lexical = LexicalGenerations(index)
        self._vectors = GroupIndexes(ports.library_vectors)  # approximate indexes of large model groups
        self._writer: BackgroundWriter | None = None  # a server's (write_in_background)

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

    def in_use(self) -> bool:
        """Whether the library has an index yet (a library search or `prepare @all` built one):
        until then a registration leaves it to that first build, and a one-book user never pays for it."""
        return self._index.state({}).present

    def update(self, progress: Progress | None = None) -> dict[str, Any] | None:
        """A registering call's (init, remove): bring the library's indexes to the books
        registered now, at the cost of the books that changed (no search builds: issue 26),
        waiting for another writer; nothing when the library has no index yet (`in_use`)."""
        if not self.in_use():
            return None
        return self.maintain(WriterJob("build", "build"), progress)

    def due(self) -> WriterJob | None:
        """What a background writer should do now (book_agent/services/library/writer.py), judged from the
        registry and the indexes' state checks; None when nothing is (or there is no library yet)."""
        books = self._every_openable_book({}, self._registered())
        members = [_member(book) for book in books]
        expected = library_stamp(members, TOKENIZER_VERSION)
        state = self._index.state(expected)
        if not members or not state.present:
            return None
        lexical = "build" if not state.fresh else None
        if state.intact and (state.changes >= BACKGROUND_CHANGES or state.drift > BACKGROUND_DRIFT):
            lexical = "compact"
        vectors = groups_due(self._ports.library_vectors, books)
        if lexical is None and vectors is None:
            return None
        return WriterJob(lexical, vectors, key=f"{expected['books']}|{state.generation}")

    def maintain(self, job: WriterJob, progress: Progress | None = None) -> dict[str, Any]:
        """Run a writer's job here (a registering call's, the child writer's; library_writer.py),
        with its own readers: the searches' open generations stay as they are until their next check."""
        registered = self._registered()
        every = self._every_openable_book({}, registered)
        done: dict[str, Any] = {}
        if job.lexical:
            generations = LexicalGenerations(self._index)
            try:
                done["lexical_index"] = generations.current([_member(b) for b in every], progress, serve_stale=False,
                                                            compact=job.lexical == "compact")[1]
            finally:
                generations.close()
        if job.vectors:
            groups = GroupIndexes(self._ports.library_vectors)
            try:
                done["vector_indexes"] = groups.prepare(every, progress, compact=None if job.vectors == "retrain"
                                                        else False)
            finally:
                groups.close()
        return done

    def write_in_background(self, run: Runner | None = None, stop_job: Callable[[], None] | None = None) -> None:
        """A long-running server's library: a background writer (book_agent/services/library/writer.py)
        brings its indexes up to date, compacts and retrains, on its own timer; `run` runs a
        job (the facade's: a child process; None: in this process, in the writer's thread)."""
        if self._writer is None:
            def in_process(job: WriterJob) -> None:
                self.maintain(job)

            self._writer = BackgroundWriter(self.due, run or in_process, stop_job)
        self._writer.start()

    @property
    def writer(self) -> BackgroundWriter | None:
        return self._writer

    def prepare(self, ref: BookRef, phases: Phases | None = None, full: bool = False) -> dict[str, Any]:
        """Bring the library index up to date now (with progress per phase), instead of at the
        first library search; compacted when its statistics drifted past COMPACT_DRIFT, or always
        with `full` (the exact rebuild)."""
        registered = self._registered()
        opened, skipped = self.open_books(self._entries(ref, registered), strict=False)
        _, info = self.lexical(opened, registered, phases("library: lexical index") if phases else None,
                               serve_stale=False, compact=True if full else None)
        vectors = self._vectors.prepare(self._every_openable_book(opened, registered),
                                        phases("library: vector indexes") if phases else None,
                                        compact=True if full else None)
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

    def close(self) -> None:
        """Close the lexical index (it is reopened when the library changes)."""
        self._lexical.close()

    def close_all(self) -> None:
        """Close every open index, and stop the background writer (a job under way is ended)."""
        if self._writer is not None:
            self._writer.stop()
            self._writer = None
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
        # the generation served holds every registered book as it is now, or (served in place
        # before a writer brought it up to date) it answers only for the books it holds
        pending = {str(b) for b in cast(list[object], index_info.get("pending_books") or [])}
        narrowed = None if set(opened) == set(registered) and "stale" not in index_info else sorted(
            set(opened) - pending)
        groups = ModelGroups(opened, self._vectors.lookup(lambda: self._every_openable_book(opened, registered)))
        channels = SearchChannels(
            lexical=NarrowedLexical(lexical, narrowed,
                                    lambda: self._rebuilt_lexical(opened, registered)) if lexical else None,
            lexical_problem=engine_down, vector_store=None, query_runtime=None, records=LibraryRecords(opened),
            language_evidence=groups.language_evidence() or LanguageEvidence(),
            vector_search=groups.search,
            locators=LibraryLocators({book_id: book.locators for book_id, book in opened.items()}),
            passage_terms=next((book.passage_terms for book in opened.values()), None),
            vector_dimensions=tuple(sorted({d for book in opened.values() for d in book.vector_dimensions()})))
        report = {"books": [{"book_id": b, "searched": True} for b in opened] + skipped,
                  "lexical_index": index_info, "groups": groups, "duplicates": list(ref.duplicates)}
        return HybridSearch(ref.text, channels), report

    def _lexical_or_unreachable(self, searched: dict[str, OpenBook], registered: dict[str, RegistryEntry]
                                ) -> tuple[LibraryLexicalIndex | None, dict[str, object], BookAgentError | None]:
        """The lexical index, or, when a backend's server cannot be reached, is too slow, or refused
        the build (library_channels.engine_down), no lexical channel and why: the search degrades
        (a strict one fails) instead of failing whole, and the server stays up. A
        misconfiguration (refused credentials too) still fails the search."""
        try:
            index, info = self.lexical(searched, registered)
        except BookAgentError as exc:
            if not engine_down(exc):
                raise
            return None, {"records": 0, "rebuilt": False, "unavailable": {
                "code": exc.code, "reason": exc.message, "remediation": exc.remediation}}, exc
        return index, dict(info), None

    def search(self, ref: BookRef, query: str, top_k: int, strict: bool,
               query_vector: Sequence[float] | None, hints: Hints | None) -> SearchReport:
        check_arguments(query, top_k, query_vector, hints, strict)  # before any book or index opens
        searcher, report = self.searcher(ref, strict)
        found = searcher.search(query, top_k=top_k, strict=strict, query_vector=query_vector, hints=hints)
        groups: ModelGroups = report["groups"]
        vector_notes = groups.notes()
        books = [_with_note(book, vector_notes.get(book["book_id"])) for book in report["books"]]
        index_info = report["lexical_index"]
        info: LibraryInfo = {"backend": self._ports.library_backend().name,
                             "books_searched": sum(1 for b in books if b["searched"]),
                             "generation": index_info.get("generation"), "lexical_index": index_info,
                             "model_groups": groups.describe()}
        return found.for_library(LibraryReport(books, info, _library_warnings(books, index_info, report["duplicates"])))


def _with_note(book: LibraryBookRow, note: str | None) -> LibraryBookRow:
    """A book's row, with why its vector channel did not serve it (if it did not)."""
    if note is None:
        return book
    row = LibraryBookRow(**book)  # a row of its own: the searcher's stays as it was
    row["vector"] = note
    return row


def _library_warnings(books: list[LibraryBookRow], index_info: LibraryIndexInfo, duplicates: list[str]) -> list[str]:
    """What a library search warns of beside its channels: books skipped, a stale index, names repeated."""
    warnings = [f"book {b['book_id']} was skipped: {b.get('reason')}" for b in books if not b["searched"]]
    stale = index_info.get("stale")
    if stale:
        warnings.append(f"the library's lexical index is not up to date: {stale['reason']}")
    if duplicates:
        warnings.append("named more than once (searched once): " + ", ".join(duplicates))
    if not books:
        warnings.append("no books are registered: `book-agent init PACKAGE` adds one")
    return warnings
