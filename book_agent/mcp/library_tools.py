"""The library server's tools: `list_books`, `search` over the library (or `books`), and the
one-book tools with a `book_id` argument. A book must be one the server serves: for `@all`,
any book registered at the time of the call; for `a,b`, those named at start."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from book_agent.domain.book_refs import library_of, parse_book_ref
from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_DPI, DEFAULT_MAX_CHARS, DEFAULT_TOP_K
from book_agent.mcp import descriptions as d
from book_agent.mcp import params as P
from book_agent.mcp import schemas
from book_agent.mcp.auth import allowed_books
from book_agent.mcp.images import with_image
from book_agent.mcp.tools import READ_ONLY, SEARCH_HINTS, call, locate, locate_arguments

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from book_agent.agent import BookAgent
    from book_agent.domain.search_results import SearchResult
    from book_agent.mcp.session import BookSession


def served(agent: BookAgent, ref_text: str, wanted: list[str]) -> list[str]:
    """`wanted` when every id is served, else mcp.book_not_served naming the others. (A token's
    own limit on `books` and `book_id` is checked before, by mcp/auth.py's middleware.)
    Every call asks: the registry's ids only (read again only when the registry file changed),
    never a description of every book; so a book registered or removed is seen at once."""
    serving = agent.library_book_ids(ref_text)
    others = [b for b in dict.fromkeys(wanted) if b not in serving]
    if others:
        raise BookAgentError("mcp.book_not_served", f"this server does not serve {', '.join(others)}",
                             details={"not_served": others, "served": serving},
                             remediation="call list_books and name only the books it lists")
    return list(dict.fromkeys(wanted))


def register_library_tools(server: FastMCP, session: BookSession) -> None:
    ref = session.book_id
    parse_book_ref(ref)  # a bad reference fails at start, not at the first call

    def on_book(book_id: str, fn: Callable[[BookAgent], Any]) -> Callable[[BookAgent], Any]:
        def run(agent: BookAgent) -> Any:
            served(agent, ref, [book_id])
            return fn(agent)

        return run

    @server.tool(name="list_books", description=d.LIST_BOOKS, annotations=READ_ONLY)
    async def list_books() -> Any:
        allowed = allowed_books()  # here: the request's context does not reach the lanes
        return await call(session, "list_books", lambda a: {"library": ref, "books": [
            b for b in a.library_books(ref) if allowed is None or b["book_id"] in allowed]})

    @server.tool(name="search", description=d.LIBRARY_SEARCH, output_schema=schemas.SEARCH, annotations=SEARCH_HINTS)
    async def search(query: P.Query, books: P.Books = None, top_k: P.TopK = DEFAULT_TOP_K, strict: P.Strict = False,
                     query_vector: P.QueryVector = None, hints: P.Hints = None) -> Any:
        allowed = allowed_books()

        def run(a: BookAgent) -> SearchResult:
            if books is not None:
                target = library_of(served(a, ref, books))
            elif allowed is not None:
                target = library_of(_token_books(a, ref, allowed))
            else:
                target = parse_book_ref(ref)
            return a.search(target, query, top_k=top_k, strict=strict, query_vector=query_vector, hints=hints)

        return await call(session, "search", run)

    _register_reading(server, session, on_book)
    _register_sources(server, session, on_book)


def _token_books(agent: BookAgent, ref: str, allowed: list[str]) -> list[str]:
    """The served books this token may use (a token may name books another server serves)."""
    mine = [book_id for book_id in agent.library_book_ids(ref) if book_id in allowed]
    if not mine:
        raise BookAgentError("mcp.book_not_served", "this token may use none of the books this server serves",
                             details={"token_books": allowed}, remediation="ask for a token for these books")
    return mine


Guard = Callable[[str, Callable[[Any], Any]], Callable[[Any], Any]]


def _register_reading(server: FastMCP, session: BookSession, on_book: Guard) -> None:
    @server.tool(name="read_entry", description=d.for_one_book(d.READ_ENTRY), output_schema=schemas.RECORD,
                 annotations=READ_ONLY)
    async def read_entry(book_id: P.BookId, record_id: P.RecordId) -> Any:
        return await call(session, "read_entry", on_book(book_id, lambda a: a.read_entry(book_id, record_id)))

    @server.tool(name="read_markdown", description=d.for_one_book(d.READ_MARKDOWN), output_schema=schemas.MARKDOWN,
                 annotations=READ_ONLY)
    async def read_markdown(book_id: P.BookId, record_id: P.MarkdownRecordId = None, start: P.Start = None,
                            end: P.End = None, heading: P.Heading = None, context_chars: P.ContextChars = 500) -> Any:
        return await call(session, "read_markdown", on_book(book_id, lambda a: a.read_markdown(
            book_id, record_id=record_id, start=start, end=end, heading=heading, context_chars=context_chars)))

    @server.tool(name="get_skill", description=d.for_one_book(d.GET_SKILL), output_schema=schemas.SKILL,
                 annotations=READ_ONLY)
    async def get_skill(book_id: P.BookId) -> Any:
        return await call(session, "get_skill", on_book(book_id, lambda a: a.get_skill(book_id)))

    @server.tool(name="status", description=d.for_one_book(d.STATUS), output_schema=schemas.STATUS,
                 annotations=READ_ONLY)
    async def status(book_id: P.BookId) -> Any:
        return await call(session, "status", on_book(book_id, lambda a: a.status(book_id)))


def _register_sources(server: FastMCP, session: BookSession, on_book: Guard) -> None:
    @server.tool(name="locate_source", description=d.for_one_book(d.LOCATE_SOURCE), output_schema=schemas.LOCATOR,
                 annotations=READ_ONLY)
    async def locate_source(book_id: P.BookId, hit: P.Hit = None, record_id: P.LocateRecordId = None,
                            quote: P.Quote = None, hints: P.Hints = None) -> Any:
        problem = locate_arguments(hit, record_id, quote)
        if problem is not None:
            return problem
        return await call(session, "locate_source",
                          on_book(book_id, lambda a: locate(a, book_id, hit, record_id, quote, hints)))

    @server.tool(name="read_source", description=d.for_one_book(d.READ_SOURCE), output_schema=schemas.SOURCE_TEXT,
                 annotations=READ_ONLY)
    async def read_source(book_id: P.BookId, locator: P.Locator, max_chars: P.MaxChars = DEFAULT_MAX_CHARS) -> Any:
        return await call(session, "read_source",
                           on_book(book_id, lambda a: a.read_source(book_id, locator, max_chars=max_chars)))

    @server.tool(name="render_page", description=d.for_one_book(d.RENDER_PAGE), output_schema=schemas.RENDER,
                 annotations=READ_ONLY)
    async def render_page(book_id: P.BookId, page_index: P.PageIndex, clip: P.Clip = None, dpi: P.Dpi = DEFAULT_DPI,
                          include_image: P.IncludeImage = False) -> Any:
        def render(a: BookAgent) -> Any:
            data = a.render_page(book_id, page_index, clip=clip, dpi=dpi, include_image=include_image)
            return with_image(data) if include_image else data

        return await call(session, "render_page", on_book(book_id, render))
