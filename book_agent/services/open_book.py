"""One registered book's parts, opened lazily and once per process.

A lexical search opens only the FTS sidecar and the records table; the vector matrix,
the query encoder, the reranker and the PDF/EPUB reader load on first use. The MCP server
keeps one of these per book, so each heavy part loads once. The parts come from the
BookParts port (the composition root picks the adapters).
"""

from __future__ import annotations

import threading
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import cast

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.query_runtime_spec import resolve_query_runtime
from book_agent.domain.book.registry_entry import RegistryEntry, database_sha
from book_agent.domain.book.runtime_config import RuntimeConfig
from book_agent.domain.book.runtime_states import LanguageCheck
from book_agent.domain.book.sidecar_stamps import lexical_stamp, vector_check_stamp
from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.lexical_text import is_chinese_language
from book_agent.domain.search.vector_trust import LanguageEvidence
from book_agent.lazy import cached_under_lock
from book_agent.ports import (
    BookParts,
    LexicalIndex,
    PassageTerms,
    QueryVectorizer,
    RecordSource,
    Reranker,
    RuntimeStore,
    SourceAndPages,
    VectorStore,
)
from book_agent.ports.book import PageProfiles
from book_agent.ports.locators import LocatorRefresh, LocatorStore
from book_agent.services.locators import BookLocators, database_stamp, open_locators
from book_agent.services.search.hybrid import HybridSearch, SearchChannels
from book_agent.services.vector_check import language_evidence, measured_reads

DRY_QUERY = "warm up"
DRY_QUERY_CHINESE = "预热搜索"  # a CJK run of two or more characters: the segmenter reads it
# A warm-up reads every passage of a book this small (in the background; ~50-150 ms for 500,000
# characters on 2 cores): up to this many records and characters of text
READ_AHEAD_RECORDS, READ_AHEAD_CHARS = 1_000, 500_000
VectorParts = tuple[VectorStore | None, QueryVectorizer | None, LanguageEvidence, BookAgentError | None]


class OpenBook:
    def __init__(self, entry: RegistryEntry, package: PackageInfo, runtime_dir: Path,
                 parts: BookParts, runtime: RuntimeStore, cache_dir: Path,
                 locator_store: LocatorStore | None = None, locator_refresh: LocatorRefresh | None = None) -> None:
        self.entry = entry
        self.package_root = Path(entry["package_root"])  # made once: every use checks the package there
        self.package = package
        self.book_id = str(package.book_id)
        self.runtime_dir = runtime_dir
        self._parts = parts
        self._runtime = runtime
        self._cache_dir = cache_dir
        self._locator_store = locator_store
        self._locator_refresh = locator_refresh
        self._lock = threading.RLock()
        self._lexical: LexicalIndex | None = None
        self._dry_searches: set[tuple[str, bool]] = set()  # (query, with the encoder) run by warm_up
        self._read_ahead = False  # whether warm_up has read the passages of this (small) book

    @cached_under_lock  # the MCP server calls the book from two threads: never opened twice
    def config(self) -> RuntimeConfig:
        return self._runtime.load_config(self.runtime_dir)

    @cached_under_lock
    def records(self) -> RecordSource:
        return self._parts.records(self.package)

    def lexical_index(self) -> tuple[LexicalIndex | None, BookAgentError | None]:
        """The FTS sidecar when fresh (kept open once found fresh), else why not."""
        if self._lexical is not None:
            return self._lexical, None
        expected = lexical_stamp(str(self.entry.get("manifest_sha256") or ""), database_sha(self.package))
        state = self._runtime.lexical_state(self.runtime_dir, expected)
        if not state["fresh"]:
            return None, BookAgentError(
                "lexical.index_stale" if state["present"] else "lexical.index_missing",
                f"the lexical index is {state['reason']}",
                remediation=f"run `book-agent prepare {self.book_id}`",
            )
        self._lexical = self._parts.lexical_index(self._runtime.lexical_path(self.runtime_dir))
        return self._lexical, None

    @cached_under_lock
    def vector_parts(self) -> VectorParts:
        """(vector store, query runtime, language evidence, problem) — loaded on first use."""
        if not self.package.vector_manifest or self.package.database_path is None:
            return None, None, LanguageEvidence(), BookAgentError("search.no_vectors", "this package has no vectors")
        store = self._parts.vector_store(self.package, self.runtime_dir, database_sha(self.package))
        spec = resolve_query_runtime(self.package)
        runtime = self._parts.query_runtime(spec, self.config, self._cache_dir)
        languages = spec.get("languages")
        reads, basis = measured_reads(self.vector_check(spec.get("model"), runtime))
        evidence = LanguageEvidence(list(languages) if languages else None,
                                    str(spec.get("language_coverage") or "unknown"), reads, basis)
        return store, runtime, evidence, None

    def vector_check(self, model: str | None, runtime: QueryVectorizer,
                     store: VectorStore | None = None) -> LanguageCheck | None:
        """The cached language evidence for this model and route; made when missing if the
        vector store is given (at prepare time)."""
        routes = runtime.availability().get("routes") or []  # no request is made to find out
        stamp = vector_check_stamp(database_sha(self.package), model, ",".join(routes))
        cached = self._runtime.read_vector_check(self.runtime_dir, stamp)
        if cached is not None or store is None:
            return cached
        result = language_evidence(store.iter_records(), runtime, store, seed=self.book_id)
        self._runtime.write_vector_check(self.runtime_dir, stamp, result)
        return {**result, "stamp": stamp}

    @cached_under_lock
    def reranker(self) -> Reranker | None:
        """The book's reranker; one that cannot be built here (a plug-in this process cannot
        import) stands in as UnloadedReranker: the searches say so instead of failing."""
        try:
            return self._parts.reranker(self.config, self.runtime_dir)
        except BookAgentError as exc:
            from book_agent.services.unloaded_reranker import UnloadedReranker

            settings = self.config.reranker
            return UnloadedReranker(settings.factory or settings.provider, exc)

    @cached_under_lock
    def sources(self) -> SourceAndPages:
        return self._parts.sources(self.package, self.runtime_dir)

    @cached_under_lock
    def page_profiles(self) -> PageProfiles | None:
        """The profiles of the PDF's pages for the visual-fallback advice: kept in the runtime
        folder, the sources opened only for a page never read (a BookParts of the port's shape
        only may lack the store: then the sources' own)."""
        store = getattr(self._parts, "page_profiles", None)
        if store is not None:
            return cast("PageProfiles", store(self.package, self.runtime_dir, lambda: self.sources))
        return self.sources if isinstance(self.sources, PageProfiles) else None

    @property
    def passage_terms(self) -> PassageTerms | None:
        """The process's reader of passages' terms (the search's passage-reading step)."""
        reader = getattr(self._parts, "passage_terms", None)  # a BookParts of the port's shape only may lack it
        return reader() if reader is not None else None

    @cached_under_lock
    def locators(self) -> BookLocators:
        """The hits' verified locators: from the sidecar when fresh, else verified on demand
        (and one from an older verifier rebuilt in the background meanwhile)."""
        return open_locators(self._locator_store, self._locator_refresh, self.book_id, self.runtime_dir,
                             database_stamp(self.entry, self.package), lambda: self.sources)

    def warm_up(self, encoder: bool = True, segmenter: bool = True, dry_search: bool = True) -> dict[str, bool]:
        """Open and load what a search uses (the lexical index, the vector matrix and, with
        `encoder`, the local encoder), so the first search costs what later ones do. No
        network request. Without the encoder, the dry search brings its own query vector, so
        a server whose queries all do never loads the model (~100 MB). Without `segmenter`, a
        Chinese book's dry search is not in Chinese either: the word segmenter's dictionary
        (0.3-2 s) is left for a later warm-up or the first Chinese query. Without `dry_search`,
        only the parts load (a real search has just run and prepared the rest)."""
        with self._lock:
            lexical, _ = self.lexical_index()
            if lexical is not None:
                with suppress(BookAgentError):  # the first real search reports it
                    lexical.warm_up()
            store, runtime, _, _ = self.vector_parts
            if store is not None:
                store.load()
            warmed = bool(encoder and runtime is not None and runtime.warm_up())
        vector = unit_vector(resolve_query_runtime(self.package).get("dimensions")) if store else None
        query = self.dry_query() if segmenter else DRY_QUERY
        # once per query and encoder: an MCP server warms up at start and again after tools/list,
        # where only a Chinese book's dry search (the segmenter) has something left to load
        if dry_search and (query, warmed) not in self._dry_searches and (warmed or store is None or vector is not None):
            self._dry_searches.add((query, warmed))
            # Every channel is local: a dry search (no reranker: it may be remote) also
            # prepares the record statements and imports what a search imports. Its errors
            # are the first real search's to report.
            searcher = self.searcher()
            dry = HybridSearch(self.book_id, replace(searcher.channels, reranker=None))
            with suppress(BookAgentError):
                dry.search(query, top_k=1, query_vector=None if warmed else vector)
            with suppress(BookAgentError):
                self._read_passages_ahead(store)
        return {"lexical": lexical is not None, "vectors": store is not None, "encoder": warmed}

    def warm_up_as_member(self, encoder: bool = True) -> dict[str, bool]:
        """A library member's warm-up: what a library search uses of this book. The library has
        a lexical index of its own and, from 100k vectors, a vector index, so neither the book's
        impact file (~120 MB at 250k records) nor a one-book dry search (it reads the whole matrix)
        is loaded: a library of 1M records warmed book by book held 2.6 GB against 0.5 GB (issue
        29). The library's dry search loads what its search does (book_agent/services/library/warm_up.py).
        Here: the local encoder with `encoder`, the book's words taught to the passage reader
        (from its impact file, not loaded), and a small book's passages read ahead."""
        with self._lock:
            lexical, _ = self.lexical_index()
            teach = getattr(lexical, "teach_words", None)  # optional: the port's warm_up would load it all
            if callable(teach):
                with suppress(BookAgentError):
                    teach()
            store, runtime, _, _ = self.vector_parts
            warmed = bool(encoder and runtime is not None and runtime.warm_up())
        with suppress(BookAgentError):
            self._read_passages_ahead(store)
        return {"vectors": store is not None, "encoder": warmed}

    def _read_passages_ahead(self, store: VectorStore | None) -> None:
        """A book of at most READ_AHEAD_RECORDS records and READ_AHEAD_CHARS characters has every
        passage read now, so that its first searches find them read (reading a new passage costs
        ~0.1-0.2 ms and a search reads up to 20: ten times a warm search's whole cost). A larger
        book is read as its searches come (the reader keeps 2,048 readings)."""
        reader = self.passage_terms
        if self._read_ahead or reader is None or store is None:
            return
        self._read_ahead = True
        texts: list[str] = []
        size = 0
        for record in store.iter_records():
            size += len(record.text)
            if len(texts) == READ_AHEAD_RECORDS or size > READ_AHEAD_CHARS:
                return
            texts.append(record.text)
        reader.read_ahead(texts)

    def dry_query(self) -> str:
        """The warm-up's query: in Chinese for a Chinese book, so that its first real query
        finds the word segmenter's dictionary loaded (jieba: 0.3-1.5 s idle, +65 MB;
        contracts/search.md); any other book never loads it."""
        language = (self.package.archive_manifest or {}).get("language")
        return DRY_QUERY_CHINESE if is_chinese_language(language) else DRY_QUERY

    def searcher(self) -> HybridSearch:
        with self._lock:
            lexical, lexical_problem = self.lexical_index()
            store, runtime, languages, vector_problem = self.vector_parts
            channels = SearchChannels(
                lexical=lexical,
                vector_store=store,
                query_runtime=runtime,
                records=self.records,
                language_evidence=languages,
                lexical_problem=lexical_problem,
                vector_problem=vector_problem,
                reranker=self.reranker,
                locators=self.locators,
                passage_terms=self.passage_terms,
                vector_dimensions=self.vector_dimensions(),
            )
            return HybridSearch(self.book_id, channels)

    def vector_dimensions(self) -> tuple[int, ...]:
        """The dimensions its manifest declares for the book's vectors (none without vectors): a
        caller's query vector is checked against them even when the vector channel cannot run."""
        dimensions = (self.package.vector_manifest or {}).get("dimensions")
        return (dimensions,) if isinstance(dimensions, int) and dimensions > 0 else ()

    def close(self) -> None:
        """Close what was opened (SQLite connections, the PDF); the book may be reopened later."""
        for name in ("records", "sources", "locators"):
            part = self.__dict__.pop(name, None)
            if part is not None:
                part.close()
        if self._lexical is not None:
            self._lexical.close()
            self._lexical = None
        parts = self.__dict__.pop("vector_parts", None)
        if parts and parts[0] is not None:
            parts[0].close()


def unit_vector(dimensions: object) -> list[float] | None:
    """A query vector any book of these dimensions accepts (finite, not all zero)."""
    if not isinstance(dimensions, int) or dimensions <= 0:
        return None
    return [1.0] + [0.0] * (dimensions - 1)
