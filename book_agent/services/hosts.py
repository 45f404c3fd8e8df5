"""Host use cases: install a registered book into an AI host, and check or undo it.

`detect`, `plan`, `install`, `uninstall`, `verify` and `instructions` resolve the book
(its package, the data dir the MCP server will use, the configured auth_env: a variable
NAME, never a value) and hand it to the host facade the composition root built. `install`
and `uninstall` are dry runs unless `apply` is True.

A library reference (`a,b` or `@all`, book_agent/domain/book/book_refs.py) resolves to a `HostLibrary`
instead of a package: the facade installs one library server and one library skill. A
list's ids must be registered (`book.not_registered` names the first that is not); `@all`
may be empty (its server serves books registered later). No auth_env is forwarded for a
library (it has no single book config); the books' configured names go into the plan's
warnings.

A served library (`url`: `book-agent serve` on a team machine, reached over streamable HTTP)
is named the same way (`@all` by default, or `a,b`) but not resolved against this machine's
registry: the server decides which books it serves. Its URL and the NAME of the token's
variable are checked here (domain/remote_server.py); one book id is refused
(`host.url_needs_library`): a server serves a library.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from book_agent.domain.book.book_refs import ALL_BOOKS, BookRef, parse_book_ref
from book_agent.domain.errors import BookAgentError
from book_agent.domain.host_config import HostInspection, HostPlan, HostVerification
from book_agent.domain.library import host_library
from book_agent.domain.remote_server import RemoteServer, remote_server
from book_agent.ports.hosts import Installable
from book_agent.services.books import OpenBooks
from book_agent.services.context import HostFactory


class HostBook(NamedTuple):
    """What a host install needs of a registered book (or of a library of them)."""

    package: Installable  # PackageInfo.to_dict(), or the library to install
    auth_env: str | None  # the configured variable NAME (never its value); None for a library
    data_dir: str | None  # the data dir the MCP server will be started with (None: book-agent's default)


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


def served_library(book_ref: str | None, data_dir: str | None) -> HostBook:
    """The library a remote server is installed as: `@all` (the default) or `a,b`, taken as
    named (a team server's books need not be registered here)."""
    text = ALL_BOOKS if book_ref is None else book_ref
    if not is_library_ref(text):
        parse_book_ref(text)  # a malformed reference is book.bad_ref, as everywhere
        raise BookAgentError(
            "host.url_needs_library", f"--url installs a served library; {text[:200]!r} is one book",
            details={"ref": text[:200]},
            remediation="omit BOOK (the server's @all: every book it serves) or name several: a,b")
    ref = parse_book_ref(text)
    return HostBook(host_library(ref, ref.ids), None, data_dir)


def remote_of(url: str | None, token_env: str | None, allow_insecure_http: bool) -> RemoteServer | None:
    if url is None:
        if token_env is not None or allow_insecure_http:
            raise BookAgentError("host.url_required", "--token-env and --allow-insecure-http apply to a served "
                                 "library: pass its --url", remediation="add --url https://HOST/mcp (the "
                                 "server's MCP endpoint), or drop those options for a local install")
        return None
    return remote_server(url, token_env, allow_insecure_http=allow_insecure_http)


class Hosts:
    def __init__(self, hosts: HostFactory, resolve: BookResolver, data_dir: str | Path | None = None) -> None:
        self._hosts = hosts
        self._resolve = resolve
        self._data_dir = str(data_dir) if data_dir is not None else None

    def _book(self, book_ref: str | None, remote: RemoteServer | None) -> HostBook:
        if remote is not None:
            return served_library(book_ref, self._data_dir)
        if book_ref is None:
            raise BookAgentError("host.book_required", "name what to install: a book_id, a,b or @all",
                                 remediation="book-agent host install HOST BOOK (or --url URL for a served "
                                             "library, @all by default)")
        return self._resolve(book_ref)

    def detect(self, host: str, edition: str | None = None, home: str | None = None) -> HostInspection:
        """Whether the host seems installed, and where its config and skills would go."""
        return self._hosts(host, home, None, edition).inspect()

    def install(self, host: str, book_ref: str | None, apply: bool = False, edition: str | None = None,
                home: str | None = None, skill_dir: str | None = None, *, url: str | None = None,
                token_env: str | None = None, allow_insecure_http: bool = False,
                replace: bool = False) -> HostPlan:
        """The plan (paths and unified diffs); with apply=True, written. With `url`: the served
        library's streamable-HTTP form (and `token_env`, the NAME of the token's variable).
        `replace`: re-point a server name installed from another data dir."""
        remote = remote_of(url, token_env, allow_insecure_http)
        book = self._book(book_ref, remote)
        return self._hosts(host, home, book.data_dir, edition).install(
            book.package, None, apply=apply, skill_dir=_folder(skill_dir), auth_env=book.auth_env, remote=remote,
            replace=replace)

    def uninstall(self, host: str, book_ref: str | None, apply: bool = False, edition: str | None = None,
                  home: str | None = None, skill_dir: str | None = None, *, url: str | None = None,
                  allow_insecure_http: bool = False) -> HostPlan:
        remote = remote_of(url, None, allow_insecure_http)
        book = self._book(book_ref, remote)
        return self._hosts(host, home, book.data_dir, edition).uninstall(
            book.package, _folder(skill_dir), apply=apply, remote=remote)

    def verify(self, host: str, book_ref: str | None, edition: str | None = None, home: str | None = None,
               skill_dir: str | None = None, *, url: str | None = None, token_env: str | None = None,
               allow_insecure_http: bool = False) -> HostVerification:
        """Read back the server entry and the skill files: missing, modified or outdated."""
        remote = remote_of(url, token_env, allow_insecure_http)
        book = self._book(book_ref, remote)
        return self._hosts(host, home, book.data_dir, edition).verify(
            book.package, None, _folder(skill_dir), auth_env=book.auth_env, remote=remote)

    def instructions(self, host: str, book_ref: str | None, edition: str | None = None, home: str | None = None,
                     *, url: str | None = None, token_env: str | None = None,
                     allow_insecure_http: bool = False) -> str:
        remote = remote_of(url, token_env, allow_insecure_http)
        book = self._book(book_ref, remote)
        return self._hosts(host, home, book.data_dir, edition).render_manual_instructions(
            book.package, auth_env=book.auth_env, remote=remote)


def _folder(skill_dir: str | None) -> Path | None:
    return Path(skill_dir) if skill_dir else None
