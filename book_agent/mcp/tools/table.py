"""The MCP tools, each declared once: name, lane, output schema, and the facade call with its
typed parameters, for the one-book server and the library server (`@all`, `a,b`) alike.

A run function's parameters after (agent, book) are the tool's arguments: their types
(book_agent/mcp/tools/params.py) carry the bounds, which are the core's own (domain/limits.py:
MAX_TOP_K, DPI_RANGE, MAX_CHARS_LIMIT), so the server never refuses what the CLI accepts or
the reverse. Arguments are validated against the published JSON schema before a tool runs
(book_agent/mcp/arguments/middleware.py); results are the same dicts the CLI prints with `--json`, sent
as structuredContent plus a JSON text block. book_agent/mcp/tools/registration.py turns these into
FastMCP tools; contracts/mcp-tools.md says how to add one.
"""

from __future__ import annotations

from typing import Any

# BookAgent at run time, not under TYPE_CHECKING: registration reads the run functions' signatures
# (annotations evaluated); the session imports it at start-up anyway.
from book_agent.agent import BookAgent
from book_agent.domain.book.book_reports import BookStatus
from book_agent.domain.limits import DEFAULT_AROUND, DEFAULT_DPI, DEFAULT_MAX_CHARS, DEFAULT_TOP_K
from book_agent.domain.search.search_results import SearchResult
from book_agent.domain.sources.contents import Neighbours, TableOfContents
from book_agent.domain.sources.source_results import (
    Locator,
    MarkdownSlice,
    RecordEntry,
    Skill,
    SourceText,
)
from book_agent.mcp.errors import bad_arguments
from book_agent.mcp.tools import descriptions as d
from book_agent.mcp.tools import library_tools, schemas
from book_agent.mcp.tools import params as P
from book_agent.mcp.tools.images import with_image
from book_agent.mcp.tools.registration import PER_BOOK, SEARCH_HINTS, Tool, Variant


def search(agent: BookAgent, book: str, query: P.Query, top_k: P.TopK = DEFAULT_TOP_K, strict: P.Strict = False,
           query_vector: P.QueryVector = None, hints: P.Hints = None) -> SearchResult:
    return agent.search(book, query, top_k=top_k, strict=strict, query_vector=query_vector, hints=hints)


def read_entry(agent: BookAgent, book: str, record_id: P.RecordId) -> RecordEntry:
    return agent.read_entry(book, record_id)


def read_markdown(agent: BookAgent, book: str, record_id: P.MarkdownRecordId = None, start: P.Start = None,
                  end: P.End = None, heading: P.Heading = None, context_chars: P.ContextChars = 500) -> MarkdownSlice:
    return agent.read_markdown(book, record_id=record_id, start=start, end=end, heading=heading,
                               context_chars=context_chars)


def get_skill(agent: BookAgent, book: str) -> Skill:
    return agent.get_skill(book)


def locate_source(agent: BookAgent, book: str, hit: P.Hit = None, record_id: P.LocateRecordId = None,
                  quote: P.Quote = None, hints: P.Hints = None) -> Locator:
    """A hit, a record id (read first: an unknown id is record.not_found) or a quotation."""
    target: Any = hit if hit is not None else quote
    if record_id is not None:
        target = agent.read_entry(book, record_id)
    return agent.locate_source(book, target, hints=hints)


def exactly_one_target(hit: Any = None, record_id: str | None = None, quote: str | None = None, **_: Any) -> None:
    """locate_source takes exactly one of hit, record_id, quote (a schema cannot say so)."""
    given = [name for name, value in (("hit", hit), ("record_id", record_id), ("quote", quote)) if value is not None]
    if len(given) != 1:
        raise bad_arguments("locate_source", "give exactly one of hit, record_id, quote", given=given)


def read_source(agent: BookAgent, book: str, locator: P.Locator, max_chars: P.MaxChars = DEFAULT_MAX_CHARS) -> SourceText:
    return agent.read_source(book, locator, max_chars=max_chars)


def render_page(agent: BookAgent, book: str, page_index: P.PageIndex = None, clip: P.Clip = None,
                dpi: P.Dpi = DEFAULT_DPI, include_image: P.IncludeImage = False, page_label: P.PageLabel = None,
                record_ids: P.HighlightRecords = None, quotes: P.HighlightQuotes = None) -> Any:
    data = agent.render_page(book, page_index, clip=clip, dpi=dpi, include_image=include_image, page_label=page_label,
                             record_ids=record_ids, quotes=quotes)
    return with_image(data) if include_image else data


def get_toc(agent: BookAgent, book: str) -> TableOfContents:
    return agent.get_toc(book)


def read_around(agent: BookAgent, book: str, record_id: P.AroundRecordId, around: P.Around = DEFAULT_AROUND) -> Neighbours:
    return agent.read_around(book, record_id, around)


def status(agent: BookAgent, book: str) -> BookStatus:
    return agent.status(book)


# In the order tools/list gives them: the package's own text first, then the original's.
# Lanes: "work" for calls whose time depends on the input or on a remote endpoint, "quick"
# for bounded reads, which answer meanwhile (book_agent/mcp/session.py).
TOOLS: tuple[Tool, ...] = (
    Tool("list_books", "quick", None, book=None,
         library=Variant(d.LIST_BOOKS, library_tools.list_books)),
    Tool("search", "work", schemas.SEARCH, annotations=SEARCH_HINTS,
         book=Variant(d.SEARCH, search),
         library=Variant(d.LIBRARY_SEARCH, library_tools.search)),
    Tool("read_entry", "quick", schemas.RECORD, book=Variant(d.READ_ENTRY, read_entry), library=PER_BOOK),
    Tool("read_markdown", "quick", schemas.MARKDOWN, book=Variant(d.READ_MARKDOWN, read_markdown), library=PER_BOOK),
    Tool("get_skill", "quick", schemas.SKILL, book=Variant(d.GET_SKILL, get_skill), library=PER_BOOK),
    Tool("locate_source", "work", schemas.LOCATOR,
         book=Variant(d.LOCATE_SOURCE, locate_source, check=exactly_one_target), library=PER_BOOK),
    Tool("read_source", "work", schemas.SOURCE_TEXT, book=Variant(d.READ_SOURCE, read_source), library=PER_BOOK),
    Tool("render_page", "work", schemas.RENDER, book=Variant(d.RENDER_PAGE, render_page), library=PER_BOOK),
    Tool("get_toc", "work", schemas.TOC, book=Variant(d.GET_TOC, get_toc), library=PER_BOOK),
    Tool("read_around", "work", schemas.AROUND, book=Variant(d.READ_AROUND, read_around), library=PER_BOOK),
    Tool("status", "quick", schemas.STATUS, book=Variant(d.STATUS, status), library=PER_BOOK),
)

