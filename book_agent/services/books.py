"""The open books of this process: one OpenBook per registered id, reopened when it changes.

Opening checks the package's fingerprint (a few lstat calls) and refuses a package that
changed since `init`; an entry replaced in the registry (a re-init, a configure) reopens.
Every use checks, searches included: a search must see a swapped package at once (a window
that trusted a check for 0.5 s was tried for issue 29 and made in-process searches miss swaps).
"""

from __future__ import annotations

import threading
from pathlib import Path

from book_agent.domain.book.book_refs import one_book
from book_agent.domain.book.registry_entry import RegistryEntry, registered_info
from book_agent.domain.errors import BookAgentError
from book_agent.services.context import Ports
from book_agent.services.open_book import OpenBook


class OpenBooks:
    def __init__(self, ports: Ports) -> None:
        self._ports = ports
        self._open: dict[str, OpenBook] = {}
        self.lock = threading.RLock()

    def open(self, book_ref: str, entry: RegistryEntry | None = None) -> OpenBook:
        """The open book for a registered id; says when its package changed since init.
        `entry`: its registry entry when the caller has just read it (a library lists them once)."""
        if not isinstance(book_ref, str) or not book_ref:
            raise BookAgentError("book.bad_ref", "a book is referred to by its registered book_id",
                                 remediation="run `book-agent list` to see the registered books")
        one_book(book_ref)
        ports = self._ports
        with self.lock:
            entry = entry if entry is not None else ports.registry.get(book_ref)
            cached = self._open.get(book_ref)
            current = cached if cached is not None and cached.entry == entry else None
            root = current.package_root if current is not None else Path(entry["package_root"])
            changed = ports.packages.changes(root, entry.get("fingerprint") or {})
            if changed:
                self.forget(book_ref)
                raise _changed(book_ref, root, changed)
            if current is not None:
                return current
            self.forget(book_ref)
            info = registered_info(entry) or ports.packages.inspect(root, verify_hashes=False)
            book = OpenBook(entry, info, ports.runtime_dir(book_ref), ports.parts, ports.runtime, ports.cache_dir,
                            ports.locators, ports.locator_refresh)
            self._open[book_ref] = book
            return book

    def forget(self, book_id: str) -> None:
        """Close the book's open files; the next use reopens it (and reads new settings)."""
        with self.lock:
            book = self._open.pop(book_id, None)
        if book is not None:
            book.close()

    def close(self) -> None:
        with self.lock:
            for book_id in list(self._open):
                self.forget(book_id)
            close_parts = getattr(self._ports.parts, "close", None)  # a BookParts of the port's shape only may lack it
            if close_parts is not None:
                close_parts()


def _changed(book_ref: str, root: Path, changed: list[str]) -> BookAgentError:
    return BookAgentError(
        "package.changed",
        f"the package of {book_ref!r} changed since it was registered: {', '.join(changed)}",
        details={"book_id": book_ref, "changed": changed, "package_root": str(root)},
        remediation=f"restore the package, or check it with `book-agent status {book_ref} --verify`; "
        "a package is read-only: for new content rebuild it (its manifest hashes must match) "
        f"and run `book-agent init PACKAGE --replace`",
    )
