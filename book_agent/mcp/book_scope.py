"""A token's books, held on every MCP surface in one place: a FastMCP middleware that every
message passes (server.py puts it in front of every other when authentication is on), so a
handler added later cannot forget the check.

What a token limited to some books (mcp/auth.py `token_books`; `[]` for a claim it does not
understand) gets:

- a one-book server for a book not among them: every request but `ping` is refused with a
  JSON-RPC error (`mcp.book_not_served`), `initialize` included, so nothing of the book (its
  title in the instructions, tools, skill, metadata, paths, manifest, config) reaches it;
- a library server: a call or prompt whose arguments name another book (`book_id`, `books`) is
  `mcp.book_not_served` naming only the books the caller named and may use; a resource URI
  naming another book (`book://ID/...`) answers exactly as an unknown resource does; resource,
  template and prompt lists leave such entries out;
- and on both, every answer on its way out: a success that carries another book's `book_id`
  anywhere is withheld (`mcp.book_withheld`, and an error in the server's log: it is a bug); an
  error has every other registered book's id taken out of its text and lists (the registry's
  `book.not_registered` lists every registered id, `served` lists every served one).

The server's name, instructions and `/health` say `@all` or a list only when no token is
asked for (server.py, http.py).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from fastmcp.exceptions import FastMCPError
from fastmcp.server.middleware import Middleware
from mcp.shared.exceptions import MCPError

from book_agent.domain.book.book_refs import ALL_BOOKS
from book_agent.domain.errors import BookAgentError
from book_agent.domain.unicode_text import scrub_text
from book_agent.mcp.auth import allowed_books, not_served
from book_agent.mcp.errors import INTERNAL_ERROR, error_result, rpc_error, unknown_resource

if TYPE_CHECKING:
    from book_agent.agent import BookAgent
    from book_agent.mcp.session import BookSession

log = logging.getLogger("book_agent.mcp")

FORBIDDEN = -32003  # JSON-RPC, implementation-defined band: this token may not use this server's book
LIBRARY_HOST = "library"  # book://library/...: a library server's own resources
WITHHELD = "(withheld)"
UNLIMITED_METHODS = frozenset({"ping"})  # tells nothing of any book


def named_books(arguments: Any) -> list[str]:
    """The books a call's arguments name: `book_id`, and the strings in `books`."""
    if not isinstance(arguments, dict):
        return []
    books = arguments.get("books")
    return [*([arguments["book_id"]] if isinstance(arguments.get("book_id"), str) else []),
            *[b for b in (books if isinstance(books, list) else []) if isinstance(b, str)]]


def uri_book(uri: str) -> str | None:
    """The book a `book://ID/...` URI names (None: not a book URI, or a template's `{...}`)."""
    try:
        parts = urlsplit(str(uri))
    except ValueError:
        return None
    if parts.scheme != "book" or "{" in parts.netloc:
        return None
    return unquote(parts.netloc)


def foreign_book_ids(value: Any, allowed: list[str]) -> set[str]:
    """Every `book_id` field in an answer (nested at any depth) that names a book not allowed."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            book = item.get("book_id")
            if isinstance(book, str) and book not in allowed:
                found.add(book)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def scrubbed(value: Any, foreign: set[str], keep: Iterable[str] = ()) -> Any:
    """value with every id in `foreign` taken out: dropped from lists and as keys, replaced in
    text as a whole id: `part-1` is not taken out of `part-10` nor of `part-1.5`, and an id in
    `keep` (the books the caller may use) stays whole even where a foreign id spells its start
    (`0.` kept while `0` goes: a trailing dot alone would read as the end of a sentence)."""
    if not foreign:
        return value
    kept = set(keep) - foreign
    ids = "|".join(re.escape(b) for b in sorted(foreign | kept, key=len, reverse=True))
    pattern = re.compile(rf"(?<![A-Za-z0-9_.-])(?:{ids})(?![A-Za-z0-9_-]|\.[A-Za-z0-9_-])")

    def replace(match: re.Match[str]) -> str:
        return WITHHELD if match.group(0) in foreign else match.group(0)

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return pattern.sub(replace, item)
        if isinstance(item, dict):
            return {walk(k): walk(v) for k, v in item.items() if not (isinstance(k, str) and k in foreign)}
        if isinstance(item, list | tuple):
            return [walk(x) for x in item if not (isinstance(x, str) and x in foreign)]
        return item

    return walk(value)


def withheld(books: set[str]) -> BookAgentError:
    log.error("an answer named %d book(s) outside the caller's token; withheld", len(books))
    return BookAgentError("mcp.book_withheld", "this answer named a book this token may not use, and was withheld",
                          remediation="retry; if it happens again, report the server log")


def refused_server() -> MCPError:
    error = BookAgentError("mcp.book_not_served", "this token may not use the book this server serves",
                           remediation="ask for a token for this book, or connect to the server of your books")
    return rpc_error(error, code=FORBIDDEN)


class BookScope(Middleware):
    def __init__(self, session: BookSession, served_ref: str, library: bool) -> None:
        self.session = session
        self.served_ref = served_ref
        self.library = library

    async def on_message(self, context: Any, call_next: Any) -> Any:
        allowed = allowed_books()
        if allowed is None or context.type != "request" or context.method in UNLIMITED_METHODS:
            return await call_next(context)
        if not self.library and self.served_ref not in allowed:
            raise refused_server()
        try:
            return await call_next(context)
        except MCPError as exc:
            foreign = await self._foreign(allowed, context)
            message, data = scrubbed(exc.message, foreign, allowed), scrubbed(exc.data, foreign, allowed)
            if (message, data) == (exc.message, exc.data):
                raise
            raise MCPError(exc.code, message, data=data) from exc
        except FastMCPError as exc:  # a resource's or prompt's error, on its way to become a JSON-RPC error
            text = scrubbed(str(exc), await self._foreign(allowed, context), allowed)
            if text == str(exc):
                raise
            raise _same_kind(exc, text) from exc

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        allowed = allowed_books()
        if allowed is None:
            return await call_next(context)
        refused = [b for b in dict.fromkeys(named_books(context.message.arguments)) if b not in allowed]
        if refused:
            return error_result(not_served(refused, allowed))
        result = await call_next(context)
        if getattr(result, "is_error", False):
            return await self._scrubbed_error(result, await self._foreign(allowed, context), allowed)
        foreign = foreign_book_ids(getattr(result, "structured_content", None), allowed)
        foreign |= foreign_book_ids(_json_blocks(getattr(result, "content", None)), allowed)
        return error_result(withheld(foreign)) if foreign else result

    async def on_read_resource(self, context: Any, call_next: Any) -> Any:
        allowed = allowed_books()
        if allowed is not None and not self._visible(str(context.message.uri), allowed):
            raise rpc_error(unknown_resource(str(context.message.uri)), uri=str(context.message.uri))
        result = await call_next(context)
        if allowed is not None:
            foreign = foreign_book_ids(_json_blocks(getattr(result, "contents", None)), allowed)
            if foreign:
                raise rpc_error(withheld(foreign), code=INTERNAL_ERROR)
        return result

    async def on_get_prompt(self, context: Any, call_next: Any) -> Any:
        allowed = allowed_books()
        if allowed is not None:
            refused = [b for b in dict.fromkeys(named_books(context.message.arguments)) if b not in allowed]
            if refused:
                raise rpc_error(not_served(refused, allowed))
        result = await call_next(context)
        if allowed is not None:
            messages = [getattr(m, "content", None) for m in getattr(result, "messages", None) or []]
            foreign = foreign_book_ids(_json_blocks(messages), allowed)
            if foreign:
                raise rpc_error(withheld(foreign), code=INTERNAL_ERROR)
        return result

    async def on_list_resources(self, context: Any, call_next: Any) -> Any:
        return self._listed(await call_next(context), lambda r: str(r.uri))

    async def on_list_resource_templates(self, context: Any, call_next: Any) -> Any:
        return self._listed(await call_next(context), lambda r: str(r.uri_template))

    def _listed(self, items: Any, uri_of: Any) -> Any:
        allowed = allowed_books()
        if allowed is None:
            return items
        return [item for item in items if self._visible(uri_of(item), allowed)]

    def _visible(self, uri: str, allowed: list[str]) -> bool:
        book = uri_book(uri)
        if book is None:
            return True
        return book in allowed or (self.library and book == LIBRARY_HOST)

    async def _foreign(self, allowed: list[str], context: Any) -> set[str]:
        """The ids an error must not name: every registered or served book the token may not use,
        but for those the request itself names (echoing a caller's own words back tells it
        nothing, and taking out only the ids that exist would tell it which do)."""
        def ids(agent: BookAgent) -> set[str]:
            found = set(agent.library_book_ids(ALL_BOOKS))
            if self.served_ref != ALL_BOOKS:
                found |= {b.strip() for b in self.served_ref.split(",")}
            return found

        try:
            known = await self.session.run(ids, lane="quick")
        except Exception:  # the registry unreadable: take out at least the served ids
            known = {b.strip() for b in self.served_ref.split(",")} - {ALL_BOOKS}
        foreign = {b for b in known if b and b not in allowed}
        return foreign - _words(_request_text(context))

    async def _scrubbed_error(self, result: Any, foreign: set[str], allowed: list[str]) -> Any:
        from fastmcp.tools.base import ToolResult
        from mcp_types import TextContent


        def clean(text: str) -> str:
            loaded = _loaded(text)
            if isinstance(loaded, str):
                return str(scrubbed(text, foreign, allowed))
            return scrub_text(json.dumps(scrubbed(loaded, foreign, allowed), ensure_ascii=False, default=str))

        content = [TextContent(type="text", text=clean(block.text)) if isinstance(getattr(block, "text", None), str)
                   else block for block in result.content or []]
        return ToolResult(content=content, is_error=True)


def _same_kind(exc: FastMCPError, text: str) -> FastMCPError:
    """The error again, its text cleaned (a kind whose constructor wants more: a ResourceError)."""
    from fastmcp.exceptions import ResourceError

    try:
        return type(exc)(text)
    except Exception:
        return ResourceError(text)


def _words(text: str) -> set[str]:
    """The id-like words of a text (runs of id characters, also without trailing dots)."""
    words = re.findall(r"[A-Za-z0-9_.-]+", text)
    return {*words, *(w.rstrip(".") for w in words)}


def _request_text(context: Any) -> str:
    message: Any = getattr(context, "message", None)
    try:
        return str(message.model_dump_json()) if hasattr(message, "model_dump_json") else json.dumps(message, default=str)
    except (TypeError, ValueError):
        return ""


def _loaded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _json_blocks(blocks: Any) -> list[Any]:
    """The JSON documents among an answer's text blocks (a resource's JSON, a tool's text mirror)."""
    found = []
    for block in blocks or []:
        text = getattr(block, "text", None)
        if text is None:
            text = getattr(block, "content", None)
        if isinstance(text, str) and text.lstrip()[:1] in ("{", "["):
            loaded = _loaded(text)
            if not isinstance(loaded, str):
                found.append(loaded)
    return found
