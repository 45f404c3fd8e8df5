"""Resources: a book's skill (Markdown) and metadata (JSON), or a library server's skill and
book list (exactly what `list_books` answers the caller, so a token's limit holds), read
through the agent. A token's books are also held here by mcp/book_scope.py, which every read
passes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.errors import internal_error

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from book_agent.agent import BookAgent
    from book_agent.mcp.session import BookSession


def _metadata(agent: BookAgent, book_id: str) -> dict[str, Any]:
    resolved = agent.resolve(book_id)
    package = resolved.get("package") or {}
    return {
        "book_id": resolved.get("book_id", book_id),
        "title": package.get("title"),
        "package_root": resolved.get("package_root"),
        "runtime_dir": resolved.get("runtime_dir"),
        "package": package,
        "config": resolved.get("config"),
    }


async def _read(session: BookSession, name: str, fn: Any) -> Any:
    from fastmcp.exceptions import ResourceError

    try:
        return await session.run(fn, lane="quick")
    except BookAgentError as exc:
        # Resource errors travel as JSON-RPC errors: the message carries the same JSON as a tool error.
        raise ResourceError(json.dumps({"error": exc.to_dict()}, ensure_ascii=False, default=str)) from exc
    except Exception as exc:
        raise ResourceError(json.dumps({"error": internal_error(name, exc).to_dict()})) from exc


def register_resources(server: FastMCP, session: BookSession, skill_uri: str, metadata_uri: str) -> None:
    book = session.book_id

    @server.resource(
        skill_uri,
        name="skill",
        description="The book's SKILL.md: what the book covers and how to search and cite it.",
        mime_type="text/markdown",
    )
    async def skill() -> str:
        data = await _read(session, "skill resource", lambda a: a.get_skill(book))
        return str(data.get("text") or "")

    @server.resource(
        metadata_uri,
        name="metadata",
        description="The book's registration and package metadata (title, paths, manifests, config).",
        mime_type="application/json",
    )
    async def metadata() -> str:
        data = await _read(session, "metadata resource", lambda a: _metadata(a, book))
        return json.dumps(data, ensure_ascii=False, default=str, indent=2)


LIBRARY_SKILL = """# Using this book library

Call `list_books` to see the books, `search` to search them all (or `books: [...]` to narrow),
and cite each claim with the hit's evidence_id (`book_id#record_id`). Each book has its own
usage notes: `get_skill` with its book_id. Tools that read one record or page take the book_id
a hit carries.
"""


def register_library_resources(server: FastMCP, session: BookSession) -> None:
    from book_agent.mcp.auth import allowed_books
    from book_agent.mcp.tools.library_tools import list_books
    from book_agent.mcp.tools.registration import Library

    ref = session.book_id

    @server.resource("book://library/skill", name="skill", mime_type="text/markdown",
                     description="How to use this library server: list, search, cite, read one book.")
    async def skill() -> str:
        return LIBRARY_SKILL

    @server.resource("book://library/books", name="books", mime_type="application/json",
                     description="The books this library serves (as list_books returns them).")
    async def books() -> str:
        target = Library(ref, allowed_books())  # the token's books, read in the request's coroutine
        data = await _read(session, "books resource", lambda a: list_books(a, target))
        return json.dumps(data, ensure_ascii=False, default=str, indent=2)
