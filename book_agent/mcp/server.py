"""The FastMCP server for one book or a library (`a,b`, `@all`), and `serve`, which runs it
over stdio (book_agent/mcp/http/serve.py serves the same server over streamable HTTP).

Start-up order (why it is fast and fails early):
1. `check_book` resolves the book and reads its status on the quick lane (a library:
   `check_library` lists its books). It opens no vectors and loads no model; an unknown id or
   a broken package ends here with a message on stderr and exit code 1, before any protocol is
   spoken.
2. `build_server` registers tools and resources: no agent call at all.
   Meanwhile (one book) the work lane loads the search parts (lexical index, vectors; not the
   local encoder, which the first text query loads) in the background (mcp/warmup.py).
3. The transport serves; PDFium loads on the first tool call that needs it. Each loads once
   per process (one BookAgent; the calls run on two lanes, mcp/session.py).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from book_agent.domain.book.book_refs import ALL_BOOKS
from book_agent.domain.errors import BookAgentError
from book_agent.mcp.session import START, BookSession
from book_agent.mcp.tools import descriptions

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from book_agent.agent import BookAgent
    from book_agent.domain.book.book_reports import LibraryBook, Resolved

SERVER_NAME = "book-agent"


def server_name(book_id: str) -> str:
    """serverInfo.name: which program and which book or library (one per process)."""
    return f"{SERVER_NAME}:{book_id}"


def resource_uri(book_id: str, name: str) -> str:
    return f"book://{quote(book_id, safe='-._~')}/{name}"


def _error_diagnostics(status: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for holder in (status, status.get("package")):
        if not isinstance(holder, dict):
            continue
        for diag in holder.get("diagnostics") or []:
            if isinstance(diag, dict) and diag.get("severity", "error") == "error":
                found.append(diag)
    return found


def check_book(agent: BookAgent, book_id: str) -> Resolved:
    """Fail fast: the book must be registered and its package healthy. Returns resolve().

    `resolve` refuses an unknown book and a package changed since `init` verified it in
    full (sizes and mtimes), so the package inspection made at init still holds: no need
    to re-inspect (and re-read every vector) before answering `initialize`.
    """
    resolved = agent.resolve(book_id)
    raw = resolved.get("package")
    package: dict[str, Any] = raw if isinstance(raw, dict) else {}
    problems = _error_diagnostics(package)
    if problems:
        first = problems[0] if problems else {}
        raise BookAgentError(
            "mcp.book_unusable",
            f"book {book_id!r} cannot be served: "
            + str(first.get("message") or "its package status is not ok"),
            details={"book_id": book_id, "diagnostics": problems},
            remediation=f"run `book-agent status {book_id}` and fix or re-register the package (`book-agent init`)",
        )
    return resolved


def check_library(agent: BookAgent, ref: str) -> list[LibraryBook]:
    """A library server may start with no book (`@all` on an empty data dir: books registered
    later appear); a list must name registered books only."""
    return agent.library_books(ref)


def is_library(ref: str) -> bool:
    from book_agent.domain.book.book_refs import parse_book_ref

    return parse_book_ref(ref).library


def _title(resolved: Any) -> str:
    package = (resolved or {}).get("package") or {}
    return str(package.get("title") or (resolved or {}).get("title") or "untitled")


def build_server(
    book_id: str,
    agent: BookAgent | None = None,
    data_dir: Path | str | None = None,
    *,
    session: BookSession | None = None,
    resolved: dict[str, Any] | list[dict[str, Any]] | None = None,
    warm_up: bool = False,
    auth: Any = None,
) -> FastMCP:
    """The server for a book or a library reference (`a,b`, `@all`: the library's tools).
    `agent` (a BookAgent or a fake with its methods) is optional: without one, a
    BookAgent(data_dir) is built on first use. `warm_up`: load the search parts in the
    background after the handshake (mcp/warmup.py; `serve` turns it on)."""
    from fastmcp import FastMCP

    from book_agent.mcp.arguments.middleware import ArgumentErrors
    from book_agent.mcp.tools.registration import register
    from book_agent.mcp.tools.resources import register_library_resources, register_resources
    from book_agent.mcp.tools.table import TOOLS
    from book_agent.mcp.warmup import BackgroundWarmUp

    session = session or BookSession(book_id, agent=agent, data_dir=data_dir)
    from book_agent import __version__

    library = is_library(book_id)  # a bad reference fails here, at start, not at the first call
    shown = public_ref(book_id, authenticated=auth is not None)
    server = FastMCP(
        server_name(shown),
        version=__version__,  # else fastmcp reports its own version in serverInfo
        instructions=_instructions(shown, resolved if auth is None or not library else None),
        mask_error_details=True,
        on_duplicate="error",
        middleware=[*_book_scope(session, book_id, library, auth), ArgumentErrors(),
                    BackgroundWarmUp(session, enabled=warm_up)],
        auth=auth,
    )
    register(server, session, TOOLS, library=library)
    if library:
        register_library_resources(server, session)
    else:
        register_resources(server, session, resource_uri(book_id, "skill"), resource_uri(book_id, "metadata"))
    return server


PUBLIC_LIBRARY = "library"


def public_ref(ref: str, authenticated: bool) -> str:
    """How the server names what it serves in serverInfo and its instructions, which every
    client gets: with tokens, a list (`a,b`) is just "library" (a token for `a` must not learn
    of `b`); `@all` and one book (whose other tokens are refused everything) as they are."""
    if authenticated and is_library(ref) and ref.strip() != ALL_BOOKS:
        return PUBLIC_LIBRARY
    return ref


def _book_scope(session: BookSession, ref: str, library: bool, auth: Any) -> list[Any]:
    """With authentication, a token limited to some books is held to them on every surface,
    first of all (mcp/book_scope.py)."""
    if auth is None:
        return []
    from book_agent.mcp.book_scope import BookScope

    return [BookScope(session, ref, library)]


def _instructions(ref: str, resolved: Any) -> str:
    if ref == PUBLIC_LIBRARY or is_library(ref):
        count = f"{len(resolved)} book(s) now" if isinstance(resolved, list) else "call list_books to see them"
        more = "; books registered later are served too" if ref.strip() == ALL_BOOKS else ""
        return descriptions.LIBRARY_INSTRUCTIONS.format(ref=ref, count=count, more=more)
    return descriptions.INSTRUCTIONS.format(book_id=ref, title=_title(resolved))


def _configure_logging() -> None:
    log = logging.getLogger("book_agent")
    if any(getattr(h, "_book_agent_mcp", False) for h in log.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)  # stderr: stdout belongs to the protocol
    handler.setFormatter(logging.Formatter("book-agent mcp %(levelname)s %(name)s: %(message)s"))
    handler._book_agent_mcp = True  # type: ignore[attr-defined]
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def serve(book_id: str, data_dir: Path | str | None = None, agent: BookAgent | None = None) -> None:
    """Run the server for a book or a library over stdio until stdin closes.

    Raises BookAgentError (the core's code, message prefixed with "cannot serve book ...")
    before any protocol is spoken when the book is unknown or unhealthy; the CLI prints it on
    stderr and exits 1, in its one place for errors.
    """
    _configure_logging()
    session = BookSession(book_id, agent=agent, data_dir=data_dir)
    try:
        resolved = checked_start(session, book_id)
        if not is_library(book_id):  # a library's warm-up can take seconds: after tools/list
            session.queue_warm_up(START)  # loads the search parts while FastMCP is imported (mcp/warmup.py)
        server = build_server(book_id, session=session, resolved=resolved, warm_up=True)
        sys.stdout.flush()  # nothing of ours may sit in the buffer when the wire opens
        import anyio

        from book_agent.mcp.stdio.transport import serve_stdio

        anyio.run(serve_stdio, server)
    finally:
        session.close()


def checked_start(session: BookSession, book_ref: str) -> Any:
    """The start-up check on the session's lane: a book must be registered and healthy, a
    library's list must name registered books. Its error says which server could not start."""
    check = check_library if is_library(book_ref) else check_book
    try:
        return session.run_sync(lambda a: check(a, book_ref))
    except BookAgentError as exc:
        raise BookAgentError(
            exc.code,
            f"cannot serve book {book_ref!r}: {exc.message}",
            details=exc.details,
            remediation=exc.remediation,
            available_capabilities=exc.available_capabilities,
        ) from exc
