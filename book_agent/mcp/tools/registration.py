"""A declared tool (book_agent/mcp/tools/table.py) becomes a FastMCP tool here, on either server.

A `Tool` names its lane, hints, output schema and two variants: the one-book server's and the
library server's. A variant is a description and a `run(agent, target, **arguments)` function
whose typed parameters (book_agent/mcp/tools/params.py) become the published inputSchema, so a
parameter is written once. `PER_BOOK` is the usual library variant: the one-book variant with
a leading `book_id` argument, its description prefixed to say so, and the book checked to be
served before the call. The body of every tool is the same: refuse bad arguments
(`Variant.check`) at once, then run the call on the tool's lane (book_agent/mcp/session.py).
Results and errors go back as the CLI's `--json` prints them (book_agent.mcp.errors).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from fastmcp.tools.base import ToolResult

from book_agent.domain.errors import BookAgentError
from book_agent.domain.unicode_text import needs_scrub, scrub
from book_agent.mcp.arguments.strict import strictly
from book_agent.mcp.errors import error_result, internal_error
from book_agent.mcp.session import Lane
from book_agent.mcp.tools import descriptions
from book_agent.mcp.tools import params as P
from book_agent.mcp.tools.results import ready_result

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from book_agent.agent import BookAgent
    from book_agent.mcp.session import BookSession

READ_ONLY: dict[str, Any] = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}
# search may call the query-encoding or rerank endpoint the book's config allows.
SEARCH_HINTS: dict[str, Any] = {"readOnlyHint": True, "idempotentHint": True}

PER_BOOK: Final = "per book"


@dataclass(frozen=True)
class Library:
    """A library variant's target: the served reference (`@all`, `a,b`) and the books the
    caller's token may use (None: no limit). The token is read in the tool's own coroutine:
    the request context does not reach the lanes."""

    ref: str
    allowed: list[str] | None


@dataclass(frozen=True)
class Variant:
    """What one server publishes for a tool. `run(agent, target, **arguments)` is the facade
    call, made on the tool's lane: target is the book id (one-book and PER_BOOK variants) or a
    `Library`. `check(**arguments)` raises a BookAgentError for arguments refused before the
    call is queued (those a schema cannot say, such as "exactly one of")."""

    description: str
    run: Callable[..., Any]
    check: Callable[..., None] | None = None


@dataclass(frozen=True)
class Tool:
    """One MCP tool, declared once for both servers. `book` is None for a library-only tool;
    `library` is PER_BOOK or the library's own variant (a test holds every tool to one)."""

    name: str
    lane: Lane
    output_schema: dict[str, Any] | None
    book: Variant | None
    library: Variant | Literal["per book"] | None
    annotations: dict[str, Any] | None = None


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


async def call(session: BookSession, tool: str, lane: Lane, fn: Callable[[BookAgent], Any]) -> Any:
    try:
        result = await session.run(fn, lane=lane)
        if isinstance(result, ToolResult):
            return result
        # Nearly every answer: made into its result at once (book_agent/mcp/tools/results.py).
        ready = ready_result(result)
        if ready is not None:
            return ready
        # Text from the book (a PDF's broken ToUnicode map) may hold lone surrogates: repair
        # them here, so the result can be serialised and written like any other.
        return scrub(result) if needs_scrub(result) else result
    except BookAgentError as exc:
        return error_result(exc)
    except Exception as exc:  # a bug: logged in full, masked for the client
        return error_result(internal_error(tool, exc))


def register(server: FastMCP, session: BookSession, tools: tuple[Tool, ...], *, library: bool) -> None:
    """Register each tool's variant for this server, in declaration order."""
    for tool in tools:
        if not library:
            if tool.book is not None:
                _publish(server, tool, tool.book, _parameters(tool.book.run), _one_book(session, tool, tool.book))
        elif tool.library == PER_BOOK and tool.book is not None:
            per_book = Variant(descriptions.for_one_book(tool.book.description), tool.book.run, tool.book.check)
            params = [_parameter("book_id", P.BookId), *_parameters(tool.book.run)]
            _publish(server, tool, per_book, params, _per_book(session, tool, tool.book))
        elif isinstance(tool.library, Variant):
            variant = tool.library
            _publish(server, tool, variant, _parameters(variant.run), _library(session, tool, variant))


Body = Callable[[dict[str, Any]], Awaitable[Any]]


def _one_book(session: BookSession, tool: Tool, variant: Variant) -> Body:
    book = session.book_id

    async def body(arguments: dict[str, Any]) -> Any:
        return await call(session, tool.name, tool.lane, lambda agent: variant.run(agent, book, **arguments))

    return body


def _per_book(session: BookSession, tool: Tool, variant: Variant) -> Body:
    ref = session.book_id

    async def body(arguments: dict[str, Any]) -> Any:
        book_id = arguments.pop("book_id")

        def run(agent: BookAgent) -> Any:
            served(agent, ref, [book_id])
            return variant.run(agent, book_id, **arguments)

        return await call(session, tool.name, tool.lane, run)

    return body


def _library(session: BookSession, tool: Tool, variant: Variant) -> Body:
    from book_agent.mcp.auth import allowed_books

    ref = session.book_id

    async def body(arguments: dict[str, Any]) -> Any:
        target = Library(ref, allowed_books())
        return await call(session, tool.name, tool.lane, lambda agent: variant.run(agent, target, **arguments))

    return body


def _publish(server: FastMCP, tool: Tool, variant: Variant, params: list[inspect.Parameter], body: Body) -> None:
    async def door(**arguments: Any) -> Any:
        if variant.check is not None:
            try:
                variant.check(**{k: v for k, v in arguments.items() if k != "book_id"})
            except BookAgentError as exc:
                return error_result(exc)
        return await body(arguments)

    # FastMCP reads the parameters (and so the inputSchema) from the signature; strict types, so
    # that its validation coerces nothing (book_agent/mcp/arguments/strict.py).
    params = [param.replace(annotation=strictly(param.annotation)) for param in params]
    door.__signature__ = inspect.Signature(params, return_annotation=Any)  # type: ignore[attr-defined]
    door.__annotations__ = {p.name: p.annotation for p in params} | {"return": Any}
    door.__name__ = door.__qualname__ = tool.name
    door.__doc__ = None
    server.tool(name=tool.name, description=variant.description, output_schema=tool.output_schema,
                annotations=tool.annotations if tool.annotations is not None else READ_ONLY)(door)


def _parameters(run: Callable[..., Any]) -> list[inspect.Parameter]:
    """The published parameters of a run function: all but (agent, target), annotations resolved."""
    return list(inspect.signature(run, eval_str=True).parameters.values())[2:]


def _parameter(name: str, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)
