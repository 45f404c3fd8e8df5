"""The composition root: the one place that picks the adapters behind the ports.

    agent = build_agent()                              # the real thing, data dir from settings
    agent = build_agent(tmp, registry=MemoryRegistry())  # any port swapped (book_agent.testing)

Every adapter is a keyword argument with a real default, built here and nowhere else; the
CLI, the MCP server, the Python API (`BookAgent(data_dir)`) and the tests all come through
`build_ports`/`build_agent`. Nothing is built at import time, and the heavy adapters
(SQLite, numpy, PDFium, httpx) are imported only when a book first needs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from book_agent.domain.library import APPROXIMATE_MIN_VECTORS, LibraryMember
from book_agent.domain.package import PackageInfo
from book_agent.domain.query_runtime_spec import QueryRuntimeSpecDict
from book_agent.domain.runtime_config import RuntimeConfig
from book_agent.ports import (
    BookParts,
    LexicalIndex,
    MarkdownReader,
    PackageStore,
    Progress,
    QueryVectorizer,
    RecordSource,
    Registry,
    Reranker,
    RuntimeStore,
    SourceAndPages,
    VectorStore,
)
from book_agent.ports.hosts import HostInstaller
from book_agent.ports.library import (
    LibraryIndex,
    LibraryLexicalIndex,
    LibraryVectorIndex,
    LibraryVectorIndexes,
)
from book_agent.ports.locators import LocatorStore
from book_agent.services.context import HostFactory, Ports
from book_agent.settings import resolve_data_dir

if TYPE_CHECKING:
    from book_agent.agent import BookAgent


class LocalBookParts(BookParts):
    """The first-party adapters for one book: SQLite records and FTS5, the prebuilt vector
    matrix, the query runtime (local encoder or an allowed HTTP provider), the configured
    reranker, and PDFium/EPUB sources."""

    def records(self, package: PackageInfo) -> RecordSource:
        from book_agent_adapters.storage.sqlite_records import SqliteRecordReader

        assert package.database_path is not None
        return SqliteRecordReader(package.database_path)

    def lexical_index(self, sidecar_path: Path) -> LexicalIndex:
        from book_agent_adapters.storage.fts_lexical_index import FtsLexicalIndex

        return FtsLexicalIndex(sidecar_path)

    def vector_store(self, package: PackageInfo, runtime_dir: Path, database_sha256: str | None) -> VectorStore:
        from book_agent_adapters.storage.sqlite_vector_store import PrebuiltVectorStoreAdapter

        assert package.database_path is not None and package.vector_manifest is not None
        return PrebuiltVectorStoreAdapter(package.database_path, package.vector_manifest,
                                          sidecar_dir=runtime_dir / "vectors", database_sha256=database_sha256,
                                          book_id=str(package.book_id))

    def query_runtime(self, spec: QueryRuntimeSpecDict, config: RuntimeConfig, cache_dir: Path) -> QueryVectorizer:
        from book_agent_adapters.encoders.query_runtime import QueryRuntime

        return QueryRuntime(spec, config.to_dict(), cache_dir=cache_dir)

    def reranker(self, config: RuntimeConfig, runtime_dir: Path) -> Reranker | None:
        if config.reranker.provider == "none":
            return None
        from book_agent_adapters.rerankers import create_reranker

        return create_reranker(config.to_dict(), runtime_dir)

    def sources(self, package: PackageInfo, runtime_dir: Path) -> SourceAndPages:
        from book_agent_adapters.sources.resolver import SourceResolver

        return SourceResolver(package, runtime_dir)


class LibraryIndexOnDemand(LibraryIndex):
    """The library index adapter (a BM25 impact index over every book), imported on the first library
    search: a one-book search does not pay for it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._index: LibraryIndex | None = None

    def _adapter(self) -> LibraryIndex:
        if self._index is None:
            from book_agent_adapters.storage.library_lexical_index import SqliteLibraryIndex

            self._index = SqliteLibraryIndex(self.folder)
        return self._index

    def state(self, expected: dict[str, str]) -> dict[str, Any]:
        return self._adapter().state(expected)

    def build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None) -> int:
        return self._adapter().build(members, expected, progress)

    def open(self) -> LibraryLexicalIndex:
        return self._adapter().open()


class LibraryVectorsOnDemand(LibraryVectorIndexes):
    """The library's approximate vector indexes (faiss IVF-SQ8), imported when a model group
    first reaches `min_vectors`: small libraries and single books never import faiss."""

    def __init__(self, library_dir: Path, min_vectors: int = APPROXIMATE_MIN_VECTORS) -> None:
        self.library_dir = library_dir
        self.min_vectors = min_vectors
        self._indexes: LibraryVectorIndexes | None = None

    def _adapter(self) -> LibraryVectorIndexes:
        if self._indexes is None:
            from book_agent_adapters.storage.faiss_vector_index import FaissLibraryVectors

            self._indexes = FaissLibraryVectors(self.library_dir, self.min_vectors)
        return self._indexes

    def state(self, model: str, dimensions: int, expected: dict[str, str]) -> dict[str, Any]:
        return self._adapter().state(model, dimensions, expected)

    def build(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
              progress: Progress | None) -> int:
        return self._adapter().build(model, dimensions, expected, stores, progress)

    def open(self, model: str, dimensions: int, expected: dict[str, str],
             stores: Mapping[str, VectorStore]) -> LibraryVectorIndex:
        return self._adapter().open(model, dimensions, expected, stores)


def host_adapter(host: str, home: str | None, data_dir: str | None, edition: str | None) -> HostInstaller:
    """The contract's HostAdapter facade over the per-host adapters."""
    from book_agent_adapters.hosts import HostAdapter

    return HostAdapter(host, home=home, data_dir=data_dir, edition=edition)


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
) -> Ports:
    """The adapters for a data dir ($BOOK_AGENT_HOME or the user data dir when None)."""
    from book_agent_adapters.package.store import FilesystemPackageStore
    from book_agent_adapters.sources.markdown_port import PackageMarkdownReader
    from book_agent_adapters.storage.json_registry import JsonRegistry
    from book_agent_adapters.storage.locator_sidecar import SqliteLocatorStore
    from book_agent_adapters.storage.runtime_store import RuntimeDirStore

    folder = resolve_data_dir(data_dir)
    return Ports(
        data_dir=folder,
        registry=registry if registry is not None else JsonRegistry(folder),
        packages=packages if packages is not None else FilesystemPackageStore(),
        runtime=runtime if runtime is not None else RuntimeDirStore(),
        parts=parts if parts is not None else LocalBookParts(),
        markdown=markdown if markdown is not None else PackageMarkdownReader(),
        hosts=hosts if hosts is not None else host_adapter,
        library=library if library is not None else LibraryIndexOnDemand(folder / "library"),
        library_vectors=library_vectors if library_vectors is not None else LibraryVectorsOnDemand(folder / "library"),
        locators=locators if locators is not None else SqliteLocatorStore(),
    )


def build_agent(data_dir: str | Path | None = None, **adapters: Any) -> BookAgent:
    """A BookAgent over `build_ports(data_dir, **adapters)`."""
    from book_agent.agent import BookAgent

    return BookAgent(ports=build_ports(data_dir, **adapters))


def installed_rerankers(load: bool = True) -> list[dict[str, Any]]:
    """Built-in and plug-in rerankers (entry-point group `book_agent.rerankers`)."""
    from book_agent_adapters.rerankers import list_rerankers

    return list_rerankers(load=load)
