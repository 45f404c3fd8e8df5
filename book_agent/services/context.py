"""What every use case is given: the data dir and the adapters behind the ports.

Built by the composition root (book_agent/bootstrap.py); tests build one with fakes
(book_agent/testing). A service never constructs an adapter itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from book_agent.ports import BookParts, MarkdownReader, PackageStore, Registry, RuntimeStore
from book_agent.ports.locators import LocatorRefresh, LocatorStore

if TYPE_CHECKING:  # types only: a one-book search never defines the hosts' or the library's ports
    from book_agent.ports.hosts import HostInstaller
    from book_agent.ports.library import LibraryBackend, LibraryIndex, LibraryVectorIndexes

# (host, home, data_dir, edition) -> the contract's HostAdapter facade (or a fake of it)
HostFactory = Callable[[str, str | None, str | None, str | None], "HostInstaller"]


class Ports(NamedTuple):
    """Every port the use cases speak to, built by the composition root (bootstrap.build_ports)."""

    data_dir: Path
    registry: Registry
    packages: PackageStore
    runtime: RuntimeStore
    parts: BookParts
    markdown: MarkdownReader
    hosts: HostFactory
    library_backend: Callable[[], LibraryBackend]  # lazy: a one-book use case never loads a backend
    locators: LocatorStore  # each book's verified locators (runtime dir)
    locator_refresh: LocatorRefresh | None = None  # rebuilds stale ones in the background (None: never)

    @property
    def library(self) -> LibraryIndex:
        """The library's lexical index (the backend's, loaded on first use)."""
        return self.library_backend().lexical

    @property
    def library_vectors(self) -> LibraryVectorIndexes:
        """The approximate indexes of the library's large model groups (the backend's)."""
        return self.library_backend().vectors

    def runtime_dir(self, book_id: str) -> Path:
        return self.data_dir / "books" / book_id

    @property
    def managed_dir(self) -> Path:
        """Where archives are imported (data_dir/packages/<sha>/...)."""
        return self.data_dir / "packages"

    @property
    def cache_dir(self) -> Path:
        """Shared by every book (model files fetched for local encoders, when allowed)."""
        return self.data_dir / "cache"
