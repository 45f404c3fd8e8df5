"""The library server's own calls: `list_books`, and `search` over the library (or `books`).
Its other tools are the one-book tools with a `book_id` argument (PER_BOOK in
book_agent/mcp/tools/table.py), each checked by `registration.served` first. A book must be one the server
serves: for `@all`, any book registered at the time of the call; for `a,b`, those named at
start."""

from __future__ import annotations

from typing import Any

# BookAgent at run time, as Library: the tools' signatures are read when registered.
from book_agent.agent import BookAgent
from book_agent.domain.book.book_refs import ALL_BOOKS, library_of, parse_book_ref
from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_TOP_K
from book_agent.domain.search.search_results import SearchResult
from book_agent.mcp.tools import params as P

# Library at run time, not under TYPE_CHECKING: the tools' signatures are read when registered.
from book_agent.mcp.tools.registration import Library, served


def list_books(agent: BookAgent, library: Library) -> Any:
    """The served books the caller may use; `library` names the served list only without a
    limit (a token for `a` on a server of `a,b` must not learn of `b`)."""
    allowed = library.allowed
    books = [b for b in agent.library_books(library.ref) if allowed is None or b["book_id"] in allowed]
    shown = library.ref if allowed is None or library.ref.strip() == ALL_BOOKS else ",".join(b["book_id"] for b in books)
    return {"library": shown, "books": books}


def search(agent: BookAgent, library: Library, query: P.Query, books: P.Books = None, top_k: P.TopK = DEFAULT_TOP_K,
           strict: P.Strict = False, query_vector: P.QueryVector = None, hints: P.Hints = None) -> SearchResult:
    if books is not None:
        target = library_of(served(agent, library.ref, books))
    elif library.allowed is not None:
        target = library_of(_token_books(agent, library.ref, library.allowed))
    else:
        target = parse_book_ref(library.ref)
    return agent.search(target, query, top_k=top_k, strict=strict, query_vector=query_vector, hints=hints)


def _token_books(agent: BookAgent, ref: str, allowed: list[str]) -> list[str]:
    """The served books this token may use (a token may name books another server serves)."""
    mine = [book_id for book_id in agent.library_book_ids(ref) if book_id in allowed]
    if not mine:
        raise BookAgentError("mcp.book_not_served", "this token may use none of the books this server serves",
                             details={"token_books": allowed}, remediation="ask for a token for these books")
    return mine
