"""Host use cases: install a registered book into an AI host, and check or undo it.

`detect`, `plan`, `install`, `uninstall`, `verify` and `instructions` resolve the book
(its package, the data dir the MCP server will use, the configured auth_env: a variable
NAME, never a value) and hand it to the host facade the composition root built. `install`
and `uninstall` are dry runs unless `apply` is True.

A library reference (`a,b` or `@all`, domain/book_refs.py) resolves to a `HostLibrary`
instead of a package: the facade installs one library server and one library skill. A
list's ids must be registered (`book.not_registered` names the first that is not); `@all`
may be empty (its server serves books registered later). No auth_env is forwarded for a
library (it has no single book config); the books' configured names go into the plan's
warnings.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from book_agent.domain.book_refs import ALL_BOOKS, BookRef, parse_book_ref
from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import HostLibrary, host_library
from book_agent.services.books import OpenBooks
from book_agent.services.context import HostFactory


class HostBook(NamedTuple):
    """What a host install needs of a registered book (or of a library of them)."""

    package: dict[str, Any] | HostLibrary  # PackageInfo.to_dict(), or the library to install
    auth_env: str | None  # the configured variable NAME (never its value); None for a library
    data_dir: str  # the data dir the MCP server will be started with


BookResolver = Callable[[str], HostBook]
LibraryIds = Callable[[BookRef], list[str]]  # the registered ids a library reference names


def is_library_ref(book_ref: object) -> bool:
    """`a,b` or `@all`; anything else is taken as one book_id, exactly as before libraries."""
    return isinstance(book_ref, str) and ("," in book_ref or book_ref.strip() == ALL_BOOKS)


def registered_books(books: OpenBooks, data_dir: Path, library_ids: LibraryIds) -> BookResolver:
    def resolve(book_ref: str) -> HostBook:
        if is_library_ref(book_ref):
            ref = parse_book_ref(book_ref)
            ids = library_ids(ref)
            return HostBook(host_library(ref, ids, _auth_envs(books, ids)), None, str(data_dir))
        book = books.open(book_ref)
        return HostBook(book.package.to_dict(), book.config.network.auth_env, str(data_dir))

    return resolve


def _auth_envs(books: OpenBooks, book_ids: list[str]) -> dict[str, str | None]:
    """Each book's configured key variable (a name); a book that does not open has none here."""
    found: dict[str, str | None] = {}
    for book_id in book_ids:
        try:
            found[book_id] = books.open(book_id).config.network.auth_env
        except BookAgentError:
            found[book_id] = None  # a changed package: the library server skips it too
    return found


class Hosts:
    def __init__(self, hosts: HostFactory, resolve: BookResolver) -> None:
        self._hosts = hosts
        self._resolve = resolve

    def detect(self, host: str, edition: str | None = None, home: str | None = None) -> dict[str, Any]:
        """Whether the host seems installed, and where its config and skills would go."""
        result: dict[str, Any] = self._hosts(host, home, None, edition).inspect()
        return result

    def install(self, host: str, book_ref: str, apply: bool = False, edition: str | None = None,
                home: str | None = None, skill_dir: str | None = None) -> dict[str, Any]:
        """The plan (paths and unified diffs); with apply=True, written."""
        book = self._resolve(book_ref)
        result: dict[str, Any] = self._hosts(host, home, book.data_dir, edition).install(
            book.package, None, apply=apply, skill_dir=_folder(skill_dir), auth_env=book.auth_env)
        return result

    def uninstall(self, host: str, book_ref: str, apply: bool = False, edition: str | None = None,
                  home: str | None = None, skill_dir: str | None = None) -> dict[str, Any]:
        book = self._resolve(book_ref)
        result: dict[str, Any] = self._hosts(host, home, book.data_dir, edition).uninstall(
            book.package, _folder(skill_dir), apply=apply)
        return result

    def verify(self, host: str, book_ref: str, edition: str | None = None, home: str | None = None,
               skill_dir: str | None = None) -> dict[str, Any]:
        """Read back the server entry and the skill files: missing, modified or outdated."""
        book = self._resolve(book_ref)
        result: dict[str, Any] = self._hosts(host, home, book.data_dir, edition).verify(
            book.package, None, _folder(skill_dir), auth_env=book.auth_env)
        return result

    def instructions(self, host: str, book_ref: str, edition: str | None = None, home: str | None = None) -> str:
        book = self._resolve(book_ref)
        text: str = self._hosts(host, home, book.data_dir, edition).render_manual_instructions(
            book.package, auth_env=book.auth_env)
        return text


def _folder(skill_dir: str | None) -> Path | None:
    return Path(skill_dir) if skill_dir else None
