"""BookAgent: the facade every driver (CLI, MCP server, Python API) uses.

    agent = BookAgent()                       # data dir: $BOOK_AGENT_HOME or the user data dir
    agent.init("path/to/package-or-archive")  # verify, register (read-only), build sidecars
    agent.search("book-id", "query")          # hybrid search with citable hits

Books are referred to by their registered book_id. Nothing here writes into a package:
derived data lives in the book's runtime dir, data_dir/books/<book_id>/. Every method is a
one-line delegation to a use case in book_agent/services/; the adapters behind them come
from the composition root (book_agent/bootstrap.py), which never imports this module.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from book_agent import blas
from book_agent.domain.book.book_refs import ALL_BOOKS, BookRef, parse_book_ref
from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_AROUND
from book_agent.domain.search.search_results import Hints, SearchResult
from book_agent.lazy import cached_under_lock
from book_agent.services.book_search import BookSearch
from book_agent.services.books import OpenBooks

if TYPE_CHECKING:  # the services a one-book search does not use are imported when first used
    from book_agent.domain.book.book_reports import (
        BookRow,
        BookStatus,
        Configured,
        LibraryBook,
        LibraryPrepared,
        PackageReport,
        Prepared,
        Removal,
        Resolved,
    )
    from book_agent.domain.search.eval_results import EvalReport
    from book_agent.domain.sources.contents import Neighbours, TableOfContents
    from book_agent.domain.sources.source_results import (
        Locator,
        MarkdownSlice,
        PageImage,
        RecordEntry,
        Skill,
        SourceText,
    )
    from book_agent.ports import Phases, Progress, Registry
    from book_agent.services.context import Ports
    from book_agent.services.hosts import Hosts
    from book_agent.services.library.search import Library
    from book_agent.services.reading import Reading
    from book_agent.services.registration import Registration

def build_agent(data_dir: str | Path | None = None, **adapters: Any) -> BookAgent:
    """A BookAgent over the composition root's `build_ports(data_dir, **adapters)`: the real
    adapters, with any port swapped (tests hand fakes in here, as to the root)."""
    from book_agent.bootstrap import build_ports

    return BookAgent(ports=build_ports(data_dir, **adapters))


class BookAgent:
    def __init__(self, data_dir: str | Path | None = None, registry: Registry | None = None,
                 *, ports: Ports | None = None) -> None:
        """`ports`: adapters built by `bootstrap.build_ports` (tests hand in fakes there);
        without it the composition root builds the real ones for `data_dir` (and `registry`)."""
        if ports is None:
            from book_agent.bootstrap import build_ports

            ports = build_ports(data_dir, registry=registry)
        self.ports = ports
        self.data_dir = ports.data_dir
        self.registry = ports.registry
        self.books = OpenBooks(ports)
        self._search = BookSearch(self.books, lambda: self._library)
        self._lock = threading.RLock()  # the services below: built once, on first use

    @cached_under_lock
    def _library(self) -> Library:
        from book_agent.services.library.search import Library

        return Library(self.ports, self.books, self.ports.library)

    @cached_under_lock
    def _registration(self) -> Registration:
        from book_agent.services.registration import Registration

        return Registration(self.ports, self.books)

    @cached_under_lock
    def _reading(self) -> Reading:
        from book_agent.services.reading import Reading

        return Reading(self.ports, self.books)

    @cached_under_lock
    def hosts(self) -> Hosts:
        from book_agent.services.hosts import Hosts, registered_books

        resolve = registered_books(self.books, self.ports.data_dir, self._library.book_ids)
        return Hosts(self.ports.hosts, resolve, self.ports.data_dir)

    # --- registration -----------------------------------------------------------------

    def inspect(self, path: str | Path) -> PackageReport:
        """Inspect a package folder or archive without registering it."""
        return self._registration.inspect(path)

    def init(self, path: str | Path, reranker: str = "none", replace: bool = False,
             progress: Progress | None = None, phases: Phases | None = None) -> Resolved:
        """Verify a package in full and register it (all or nothing); returns `resolve`'s dict.

        A folder is registered in place (read-only); an archive is imported safely into the
        data dir first. The book_id is the package's own. `phases` names each phase (archive
        import, index build) and takes its progress; else `progress` hears every phase."""
        named = phases or _one_phase(progress)
        book_id = self._registration.init(path, reranker, replace, named)
        self._update_library(named)
        return self.resolve(book_id)

    def remove(self, book_ref: str) -> Removal:
        """Unregister a book: its runtime dir goes, and its imported copy if it was imported."""
        removal = self._registration.remove(book_ref)
        self._update_library(_one_phase(None))
        return removal

    def _update_library(self, phases: Phases) -> None:
        """A registration brings the library's indexes up to date itself (no search builds,
        issue 26), at the cost of the book; when that cannot be done now (a writer holding the
        library past the lock's wait, a full disk) the registration stands, the searches report
        the book as not yet indexed, and `prepare @all` or a server's background writer adds it."""
        try:
            self._library.update(phases("library: indexes"))
        except BookAgentError as exc:
            import logging  # here only: logging is ~5 ms of a one-shot command's start

            logging.getLogger(__name__).warning("the library's indexes were not brought up to date (%s): %s",
                                                exc.code, exc.message)

    def list_books(self) -> list[BookRow]:
        return self._registration.list_books()

    def runtime_dir(self, book_id: str) -> Path:
        return self.ports.runtime_dir(book_id)

    def resolve(self, book_ref: str) -> Resolved:
        book = self.books.open(book_ref)
        return {"book_id": book.book_id, "title": book.package.title, "package_root": str(book.package.root),
                "runtime_dir": str(book.runtime_dir), "package": book.package.to_dict(),
                "config": book.config.to_dict()}

    # --- health and derived data -----------------------------------------------------

    def status(self, book_ref: str, verify: bool = False) -> BookStatus:
        """Package health, sidecars present and fresh, and what each capability needs."""
        from book_agent.services.status import book_status

        return book_status(self.ports, self.books, book_ref, verify)

    def prepare(self, book_ref: str, progress: Progress | None = None,
                phases: Phases | None = None, full: bool = False) -> Prepared | LibraryPrepared:
        """(Re)build the runtime sidecars that are missing, corrupt or stale. Idempotent. For a
        library reference (a,b or @all): each book's, then the library's index (brought up to
        date book by book; `full`: the exact rebuild, compacting it). `phases` names each phase
        (a book's index, the library's) and takes its progress."""
        ref = parse_book_ref(book_ref)
        if ref.single:
            return self._registration.prepare(book_ref, phases or _one_phase(progress))
        ids = self._library.book_ids(ref)
        named = phases or _one_phase(None)
        books = [self._registration.prepare(b, _numbered(named, n, len(ids))) for n, b in enumerate(ids, 1)]
        return cast("LibraryPrepared", {**self._library.prepare(ref, phases or _one_phase(progress), full=full),
                                      "books": books})

    def configure(self, book_ref: str, **settings: object) -> Configured:
        """Write the book's runtime config (network policy, query, reranker). Returns it."""
        from book_agent.services.configure import configure

        return configure(self.ports, self.books, book_ref, settings)

    # --- search and sources --------------------------------------------------------------

    def search(self, book_ref: str | BookRef, query: str, top_k: int = 6, strict: bool = False,
               query_vector: Sequence[float] | None = None, hints: Hints | None = None) -> SearchResult:
        blas.apply_to_loaded_blas()  # numpy may have come before book_agent's policy (once a process)
        return self._search.search(book_ref, query, top_k, strict, query_vector, hints)

    def library_books(self, book_ref: str | BookRef = ALL_BOOKS) -> list[LibraryBook]:
        """The books a reference names (`@all`, `a,b`, or one id): id, title, language, records, model."""
        return self._library.describe(book_ref if isinstance(book_ref, BookRef) else parse_book_ref(book_ref))

    def library_book_ids(self, book_ref: str | BookRef = ALL_BOOKS) -> list[str]:
        """The ids a reference names, from the registry alone (no package is opened or checked):
        what a server asks on every call to know whether it serves a book. A list naming an id
        no longer registered is `book.not_registered`, as for `library_books`."""
        return self._library.book_ids(book_ref if isinstance(book_ref, BookRef) else parse_book_ref(book_ref))

    def warm_up(self, book_ref: str, *, encoder: bool = True, segmenter: bool = True,
                dry_search: bool = True) -> dict[str, bool]:
        """Load a book's search parts now (the MCP server does it during its handshake, a Chinese
        book's word segmenter after it, and the local encoder's packing after the first search
        that needs it: `encoder=False, segmenter=False` first). `dry_search=False`: no dry search
        (a real one has just run)."""
        blas.apply_to_loaded_blas()
        return self._search.warm_up(book_ref, encoder, segmenter, dry_search)

    def serve_long(self, writer_in_process: bool = False) -> None:
        """This agent serves for a long time (an MCP server over stdio or HTTP): a background
        writer (book_agent/services/library/writer.py) brings the library's indexes up to date on its own
        timer, compacting and retraining when due, where a one-shot command leaves that to
        `init`, `remove` and `prepare @all`. Its jobs run in a child process at low priority
        (book_agent/cli/commands/library_writer.py, started by the adapters' library/child_writer.py), so their memory and CPU stay out of the server;
        `writer_in_process` runs them in the writer's thread instead (ports that live in this
        process only, such as the testing fakes)."""
        if writer_in_process:
            self._library.write_in_background()
            return
        from book_agent.bootstrap import child_writer  # a server's only: subprocess

        child = child_writer(self.data_dir)
        self._library.write_in_background(child.run, child.stop)

    def maintain_library(self, lexical: str | None = "build", vectors: str | None = "build") -> dict[str, Any]:
        """A library writer's job in this process (the child writer's, book_agent/services/library/writer.py):
        `lexical` "build" or "compact", `vectors` "build" or "retrain", None to leave one alone."""
        from book_agent.domain.library import WriterJob

        return self._library.maintain(WriterJob(lexical, vectors))

    def evaluate(self, book_ref: str, questions_path: str | Path, k: int = 10) -> EvalReport:
        """recall@k, MRR@10 and nDCG@10 for lexical only, vector only and hybrid."""
        blas.apply_to_loaded_blas()
        return self._search.evaluate(book_ref, questions_path, k)

    def read_entry(self, book_ref: str, record_id: str) -> RecordEntry:
        return self._reading.read_entry(book_ref, record_id)

    def read_markdown(self, book_ref: str, record_id: str | None = None, start: int | None = None,
                      end: int | None = None, heading: str | None = None, context_chars: int = 500) -> MarkdownSlice:
        return self._reading.read_markdown(book_ref, record_id, start, end, heading, context_chars)

    def get_skill(self, book_ref: str) -> Skill:
        return self._reading.get_skill(book_ref)

    def locate_source(self, book_ref: str, hit_or_text: str | Mapping[str, object],
                      hints: Mapping[str, object] | None = None) -> Locator:
        return self._reading.locate_source(book_ref, hit_or_text, hints)

    def read_source(self, book_ref: str, locator: Mapping[str, object], max_chars: int = 12000) -> SourceText:
        return self._reading.read_source(book_ref, locator, max_chars)

    def render_page(self, book_ref: str, page_index: int | None = None, clip: Sequence[float] | None = None,
                    dpi: int = 150, include_image: bool = False, page_label: str | None = None,
                    record_ids: Sequence[str] | None = None, quotes: Sequence[str] | None = None) -> PageImage:
        """A page by 0-based index or printed label (`page_label="55"`); with record_ids or
        quotes, those passages highlighted (the page defaults to the first passage's)."""
        return self._reading.render_page(book_ref, page_index, clip, dpi, include_image, page_label, record_ids, quotes)

    def get_toc(self, book_ref: str) -> TableOfContents:
        """The PDF outline or EPUB navigation, each entry with its place and first record."""
        return self._reading.get_toc(book_ref)

    def read_around(self, book_ref: str, record_id: str, around: int = DEFAULT_AROUND) -> Neighbours:
        """A record with `around` records before and after it, in reading order."""
        return self._reading.read_around(book_ref, record_id, around)

    # --- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Close every open book's files. The agent stays usable: books reopen on demand."""
        self.books.close()
        if "_library" in self.__dict__:  # a library never used has nothing open
            self._library.close_all()

    def __enter__(self) -> BookAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _numbered(phases: Phases, n: int, total: int) -> Phases:
    """A library's book phases, counted: `book 2/5 lexicon: lexical index`."""
    return lambda label: phases(f"book {n}/{total} {label}")


def _one_phase(progress: Progress | None) -> Phases:
    """Every phase reported to the one callback (callers that do not name phases)."""
    return lambda label: progress
