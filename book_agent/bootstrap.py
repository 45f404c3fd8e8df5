"""The composition root: the one place that picks the adapters behind the ports.

    ports = build_ports()                                # the real thing, data dir from settings
    ports = build_ports(tmp, registry=MemoryRegistry())  # any port swapped (book_agent.testing)

Every adapter is a keyword argument with a real default, built here and nowhere else; the
CLI, the MCP server, the Python API (`BookAgent(data_dir)`) and the tests all come through
`build_ports` (book_agent.agent's `build_agent(data_dir, **adapters)` is the facade over it).
The root builds the ports and never imports the facade: the facade asks the root, one way,
so the two form no import cycle. Nothing is built at import time, and the heavy adapters
(SQLite, numpy, PDFium, httpx) are imported only when a book first needs them.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.query_runtime_spec import QueryRuntimeSpecDict
from book_agent.domain.book.runtime_config import RuntimeConfig
from book_agent.ports import (
    BookParts,
    LexicalIndex,
    MarkdownReader,
    PackageStore,
    PassageTerms,
    QueryVectorizer,
    RecordSource,
    Registry,
    Reranker,
    RuntimeStore,
    SourceAndPages,
    VectorStore,
)
from book_agent.ports.book import PageProfiles
from book_agent.ports.locators import LocatorRefresh, LocatorStore
from book_agent.services.context import HostFactory, Ports
from book_agent.settings import library_backend_setting, resolve_data_dir

if TYPE_CHECKING:  # types only: a one-book search loads neither the hosts' port nor the library's port
    from book_agent.ports.hosts import HostInstaller
    from book_agent.ports.library import (
        LibraryBackend,
        LibraryIndex,
        LibraryVectorIndexes,
        LibraryWriterProcess,
    )


class LocalBookParts(BookParts):
    """The first-party adapters for one book: SQLite records and FTS5, the prebuilt vector
    matrix, the query runtime (local encoder or an allowed HTTP provider), the configured
    reranker, and PDFium/EPUB sources."""

    def __init__(self) -> None:
        self._passage_terms: PassageTerms | None = None
        self._passage_terms_lock = threading.Lock()

    def records(self, package: PackageInfo) -> RecordSource:
        from book_agent_adapters.book.vectors.sqlite_records import SqliteRecordReader

        assert package.database_path is not None
        return SqliteRecordReader(package.database_path)

    def lexical_index(self, sidecar_path: Path) -> LexicalIndex:
        from book_agent_adapters.book.lexical.fts_lexical_index import FtsLexicalIndex

        # the book's words and their terms, known when its impact file loads, are the passage
        # reader's too: a search then reads new passages without stemming their words (issue 29)
        return FtsLexicalIndex(sidecar_path, on_words=lambda words: self.passage_terms().learn(words))

    def vector_store(self, package: PackageInfo, runtime_dir: Path, database_sha256: str | None) -> VectorStore:
        from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter

        assert package.database_path is not None and package.vector_manifest is not None
        return PrebuiltVectorStoreAdapter(package.database_path, package.vector_manifest,
                                          sidecar_dir=runtime_dir / "vectors", database_sha256=database_sha256,
                                          book_id=str(package.book_id))

    def query_runtime(self, spec: QueryRuntimeSpecDict, config: RuntimeConfig, cache_dir: Path) -> QueryVectorizer:
        from book_agent_adapters.encoders.query_runtime import QueryRuntime

        return QueryRuntime(spec, config, cache_dir=cache_dir)  # the parsed model: not parsed again

    def reranker(self, config: RuntimeConfig, runtime_dir: Path) -> Reranker | None:
        if config.reranker.provider == "none":
            return None
        from book_agent_adapters.rerankers import create_reranker

        return create_reranker(config, runtime_dir)  # the parsed model: not parsed again

    def sources(self, package: PackageInfo, runtime_dir: Path) -> SourceAndPages:
        from book_agent_adapters.sources.resolver import SourceResolver

        return SourceResolver(package, runtime_dir)

    def page_profiles(self, package: PackageInfo, runtime_dir: Path, sources: Callable[[], object]) -> PageProfiles:
        """The PDF pages' profiles kept in the runtime folder (the sources opened only on a miss)."""
        from book_agent_adapters.sources.pdf.page_profile_cache import CachedPageProfiles

        return CachedPageProfiles(package.original_path, package.original_kind, runtime_dir, sources)

    def passage_terms(self) -> PassageTerms:
        """One reader for every book of the process (its cache of read passages serves them all)."""
        with self._passage_terms_lock:
            if self._passage_terms is None:
                from book_agent_adapters.text.passage_terms import FtsPassageTerms

                self._passage_terms = FtsPassageTerms()
            return self._passage_terms

    def close(self) -> None:
        with self._passage_terms_lock:
            if self._passage_terms is not None:
                self._passage_terms.close()


class ChosenLibraryBackend:
    """The library backend the settings name (settings.py: argument, environment, the data
    dir's config.toml, else "local"), loaded on the first library search: a one-book search
    neither reads the setting nor imports a backend."""

    def __init__(self, data_dir: Path, explicit: str | None = None) -> None:
        self.data_dir = data_dir
        self.explicit = explicit
        self._backend: LibraryBackend | None = None
        self._lock = threading.Lock()

    def backend(self) -> LibraryBackend:
        with self._lock:
            if self._backend is None:
                from book_agent_adapters.library.backends import load_backend

                self._backend = load_backend(self.data_dir, library_backend_setting(self.data_dir, self.explicit))
            return self._backend


def library_provider(chosen: ChosenLibraryBackend, library: LibraryIndex | None,
                     library_vectors: LibraryVectorIndexes | None) -> Callable[[], LibraryBackend]:
    """The services' lazy provider of the library backend: the chosen one, or (tests) the chosen
    one with a role replaced. Nothing is loaded until a library use case first asks."""
    if library is None and library_vectors is None:
        return chosen.backend

    @functools.cache
    def with_replaced_roles() -> LibraryBackend:
        from book_agent.ports.library import LibraryBackend

        if library is not None and library_vectors is not None:
            return LibraryBackend("custom", library, library_vectors)
        real = chosen.backend()
        return LibraryBackend(real.name, library if library is not None else real.lexical,
                              library_vectors if library_vectors is not None else real.vectors)

    return with_replaced_roles


def host_adapter(host: str, home: str | None, data_dir: str | None, edition: str | None) -> HostInstaller:
    """The contract's HostAdapter facade over the per-host adapters."""
    from book_agent_adapters.hosts import HostAdapter

    return HostAdapter(host, home=home, data_dir=data_dir, edition=edition)


def end_with_parent() -> None:
    """This process ends when the one that started it ends, even by kill -9 (a server's writer
    child: its compaction must not run on, holding the library, after its server is gone)."""
    import os

    from book_agent_adapters.processes.worker_processes import die_with_parent

    die_with_parent(os.getppid())


def child_writer(data_dir: Path) -> LibraryWriterProcess:
    """A long-running server's library writer jobs, each in a child process at low priority
    (adapters' library/child_writer.py): `run(job)` and `stop()`."""
    from book_agent_adapters.library.child_writer import ChildWriter

    return ChildWriter(data_dir)


def build_ports(
    data_dir: str | Path | None = None,
    *,
    registry: Registry | None = None,
    packages: PackageStore | None = None,
    runtime: RuntimeStore | None = None,
    parts: BookParts | None = None,
    markdown: MarkdownReader | None = None,
    hosts: HostFactory | None = None,
    library: LibraryIndex | None = None,
    library_vectors: LibraryVectorIndexes | None = None,
    locators: LocatorStore | None = None,
    locator_refresh: LocatorRefresh | None = None,
    library_backend: str | None = None,
) -> Ports:
    """The adapters for a data dir ($BOOK_AGENT_HOME or the user data dir when None).
    `library_backend` names the library's backend (else the settings choose it); `library`
    and `library_vectors` replace its roles outright (tests)."""
    from book_agent_adapters.book.locator_refresh import PrepareProcessRefresh
    from book_agent_adapters.book.locator_sidecar import SqliteLocatorStore
    from book_agent_adapters.book.runtime_store import RuntimeDirStore
    from book_agent_adapters.package.store import FilesystemPackageStore
    from book_agent_adapters.registry.json_registry import JsonRegistry
    from book_agent_adapters.sources.markdown_port import PackageMarkdownReader
    from book_agent_adapters.text.cjk_words import use_cache_dir

    folder = resolve_data_dir(data_dir)
    use_cache_dir(folder / "cache")  # the Chinese word segmenter's dictionary cache (loaded on demand)
    chosen = ChosenLibraryBackend(folder, library_backend)
    return Ports(
        data_dir=folder,
        registry=registry if registry is not None else JsonRegistry(folder),
        packages=packages if packages is not None else FilesystemPackageStore(),
        runtime=runtime if runtime is not None else RuntimeDirStore(),
        parts=parts if parts is not None else LocalBookParts(),
        markdown=markdown if markdown is not None else PackageMarkdownReader(),
        hosts=hosts if hosts is not None else host_adapter,
        library_backend=library_provider(chosen, library, library_vectors),
        locators=locators if locators is not None else SqliteLocatorStore(),
        locator_refresh=locator_refresh if locator_refresh is not None else PrepareProcessRefresh(folder),
    )


def installed_rerankers(load: bool = True) -> list[dict[str, Any]]:
    """Built-in and plug-in rerankers (entry-point group `book_agent.rerankers`)."""
    from book_agent_adapters.rerankers import list_rerankers

    return list_rerankers(load=load)


def install_report(data_dir: str | Path | None = None) -> dict[str, Any]:
    """What this installation can do (`book-agent doctor`), for a data dir."""
    from book_agent_adapters.install.report import install_report as report

    return report(resolve_data_dir(data_dir))


def install_model(data_dir: str | Path | None, model: str, source: Path | None = None,
                  models_dir: str | Path | None = None) -> dict[str, Any]:
    """`book-agent model install`: a known model's pinned files, once per user (`models_dir`, else
    $BOOK_AGENT_MODELS, else the user cache dir's models/), where every data dir finds them.
    `data_dir` is kept for callers; a model an older release put in a data dir still serves it."""
    from book_agent.settings import resolve_models_dir
    from book_agent_adapters.encoders.local.model_install import install_model as install

    del data_dir
    return install(resolve_models_dir(models_dir), model, source)
