"""The tools: each one a thin, typed door to one BookAgent method of the served book.

Arguments are validated by their JSON schema (generated from these signatures) before a tool
runs; its bounds are the core's own (domain/limits.py: MAX_TOP_K, DPI_RANGE, MAX_CHARS_LIMIT), imported, so
the MCP server never refuses what the CLI accepts or the reverse; results are the same dicts the CLI prints with `--json`, sent as structuredContent plus a
JSON text block. Errors go through book_agent.mcp.errors only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastmcp.tools.base import ToolResult

from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import (
    DEFAULT_DPI,
    DEFAULT_MAX_CHARS,
    DEFAULT_TOP_K,
)
from book_agent.domain.unicode_text import scrub
from book_agent.mcp import descriptions as d
from book_agent.mcp import params as P
from book_agent.mcp import schemas
from book_agent.mcp.errors import bad_arguments, error_result, internal_error
from book_agent.mcp.images import with_image

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from book_agent.agent import BookAgent
    from book_agent.domain.source_results import Locator
    from book_agent.mcp.session import BookSession

READ_ONLY: dict[str, Any] = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}
# search may call the query-encoding or rerank endpoint the book's config allows.
SEARCH_HINTS: dict[str, Any] = {"readOnlyHint": True, "idempotentHint": True}

# Calls whose time depends on the input or on a remote endpoint; the rest are bounded reads
# and answer on the quick lane meanwhile (see book_agent.mcp.session).
WORK_LANE = frozenset({"search", "locate_source", "read_source", "render_page"})


async def call(session: BookSession, tool: str, fn: Callable[[Any], Any]) -> Any:
    try:
        result = await session.run(fn, lane="work" if tool in WORK_LANE else "quick")
        # Text from the book (a PDF's broken ToUnicode map) may hold lone surrogates: repair
        # them here, so the result can be serialised and written like any other.
        return result if isinstance(result, ToolResult) else scrub(result)
    except BookAgentError as exc:
        return error_result(exc)
    except Exception as exc:  # a bug: logged in full, masked for the client
        return error_result(internal_error(tool, exc))


def locate_arguments(hit: Any, record_id: str | None, quote: str | None) -> Any:
    """An error result unless exactly one of hit, record_id, quote is given (None when fine)."""
    given = [name for name, value in (("hit", hit), ("record_id", record_id), ("quote", quote)) if value is not None]
    if len(given) == 1:
        return None
    return error_result(bad_arguments("locate_source", "give exactly one of hit, record_id, quote", given=given))


def locate(agent: BookAgent, book: str, hit: Any, record_id: str | None, quote: str | None, hints: Any) -> Locator:
    """locate_source for a hit, a record id (read first) or a quotation."""
    target: Any = hit if hit is not None else quote
    if record_id is not None:
        target = agent.read_entry(book, record_id)
    return agent.locate_source(book, target, hints=hints)


def register_tools(server: FastMCP, session: BookSession) -> None:
    """The eight tools, in this order: the package's own text first, then the original's."""
    _register_package_tools(server, session)
    _register_source_tools(server, session)


def _register_package_tools(server: FastMCP, session: BookSession) -> None:
    """search, read_entry, read_markdown, get_skill: answers from the package."""
    book = session.book_id

    @server.tool(name="search", description=d.SEARCH, output_schema=schemas.SEARCH, annotations=SEARCH_HINTS)
    async def search(
        query: P.Query,
        top_k: P.TopK = DEFAULT_TOP_K,
        strict: P.Strict = False,
        query_vector: P.QueryVector = None,
        hints: P.Hints = None,
    ) -> Any:
        return await call(
            session,
            "search",
            lambda a: a.search(book, query, top_k=top_k, strict=strict, query_vector=query_vector, hints=hints),
        )

    @server.tool(name="read_entry", description=d.READ_ENTRY, output_schema=schemas.RECORD, annotations=READ_ONLY)
    async def read_entry(record_id: P.RecordId) -> Any:
        return await call(session, "read_entry", lambda a: a.read_entry(book, record_id))

    @server.tool(name="read_markdown", description=d.READ_MARKDOWN, output_schema=schemas.MARKDOWN, annotations=READ_ONLY)
    async def read_markdown(
        record_id: P.MarkdownRecordId = None,
        start: P.Start = None,
        end: P.End = None,
        heading: P.Heading = None,
        context_chars: P.ContextChars = 500,
    ) -> Any:
        return await call(
            session,
            "read_markdown",
            lambda a: a.read_markdown(
                book, record_id=record_id, start=start, end=end, heading=heading, context_chars=context_chars
            ),
        )

    @server.tool(name="get_skill", description=d.GET_SKILL, output_schema=schemas.SKILL, annotations=READ_ONLY)
    async def get_skill() -> Any:
        return await call(session, "get_skill", lambda a: a.get_skill(book))


def _register_source_tools(server: FastMCP, session: BookSession) -> None:
    """locate_source, read_source, render_page (the original PDF/EPUB), and status."""
    book = session.book_id

    @server.tool(name="locate_source", description=d.LOCATE_SOURCE, output_schema=schemas.LOCATOR, annotations=READ_ONLY)
    async def locate_source(
        hit: P.Hit = None,
        record_id: P.LocateRecordId = None,
        quote: P.Quote = None,
        hints: P.Hints = None,
    ) -> Any:
        problem = locate_arguments(hit, record_id, quote)
        if problem is not None:
            return problem
        return await call(session, "locate_source", lambda a: locate(a, book, hit, record_id, quote, hints))

    @server.tool(name="read_source", description=d.READ_SOURCE, output_schema=schemas.SOURCE_TEXT, annotations=READ_ONLY)
    async def read_source(
        locator: P.Locator,
        max_chars: P.MaxChars = DEFAULT_MAX_CHARS,
    ) -> Any:
        return await call(session, "read_source", lambda a: a.read_source(book, locator, max_chars=max_chars))

    @server.tool(name="render_page", description=d.RENDER_PAGE, output_schema=schemas.RENDER, annotations=READ_ONLY)
    async def render_page(
        page_index: P.PageIndex,
        clip: P.Clip = None,
        dpi: P.Dpi = DEFAULT_DPI,
        include_image: P.IncludeImage = False,
    ) -> Any:
        def render(a: BookAgent) -> Any:
            data = a.render_page(book, page_index, clip=clip, dpi=dpi, include_image=include_image)
            return with_image(data) if include_image else data

        return await call(session, "render_page", render)

    @server.tool(name="status", description=d.STATUS, output_schema=schemas.STATUS, annotations=READ_ONLY)
    async def status() -> Any:
        return await call(session, "status", lambda a: a.status(book))
