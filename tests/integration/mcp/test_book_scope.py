"""The book scope is one place every surface passes (mcp/book_scope.py): handlers written to forget the
token's limit (a tool, a resource, a template and a prompt that answer with every book, or an error that
names them) are still held to it. In-process: a real FastMCP server and client, the token set as the
MCP SDK's authentication middleware sets it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.exceptions import ResourceError
from fastmcp.server.auth import AccessToken
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.shared.exceptions import MCPError

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.book_scope import BookScope
from book_agent.mcp.errors import error_result

EVERY_BOOK = [{"book_id": b, "title": f"Title of {b}"} for b in ("part-0", "part-1", "part-2")]


class Registry:
    """What the scope asks the session for: every registered book's id."""

    def library_book_ids(self, ref: str) -> list[str]:
        return ["part-0", "part-1", "part-2"]


class FakeSession:
    async def run(self, fn: Any, lane: str = "work") -> Any:
        return fn(Registry())


def forgetful_server(ref: str = "@all", library: bool = True) -> FastMCP:
    server = FastMCP("forgetful", middleware=[BookScope(FakeSession(), ref, library)])  # type: ignore[arg-type]

    @server.tool
    def everything() -> dict[str, Any]:
        return {"books": EVERY_BOOK}

    @server.tool
    def deep() -> dict[str, Any]:
        return {"hits": [{"evidence": [{"book_id": "part-2", "text": "part-2 is here"}]}]}

    @server.tool
    def failing() -> Any:
        return error_result(BookAgentError("book.not_registered", "no book 'x'; registered: part-0, part-1, part-2",
                                           details={"registered": ["part-0", "part-1", "part-2"],
                                                    "by_book": {"part-0": 1, "part-1": 2}}))

    @server.tool
    def mine() -> dict[str, Any]:
        return {"book_id": "part-1", "text": "a passage that mentions part-0 in its words"}

    @server.resource("book://library/all", mime_type="application/json")
    def all_books() -> str:
        return json.dumps({"books": EVERY_BOOK})

    @server.resource("book://part-0/skill")
    def their_skill() -> str:
        return "part-0's skill"

    @server.resource("book://{book_id}/notes")
    def notes(book_id: str) -> str:
        return json.dumps({"book_id": book_id})

    @server.resource("book://library/broken")
    def broken() -> str:
        raise ResourceError("cannot read part-0 or part-2 today")

    @server.prompt
    def cite(book_id: str) -> str:
        return f"cite {book_id}"

    return server


NO_CLAIM = object()


def as_token(books: Any, body: Any) -> Any:
    claims = {} if books is NO_CLAIM else {"books": books}
    user = AuthenticatedUser(AccessToken(token="t", client_id="c", scopes=[], claims=claims))

    async def run() -> Any:
        reset = auth_context_var.set(user)
        try:
            async with Client(forgetful_server()) as client:
                return await body(client)
        finally:
            auth_context_var.reset(reset)

    return asyncio.run(run())


def text_of(result: Any) -> str:
    return json.dumps([getattr(b, "text", None) for b in result.content])


def test_a_tool_that_answers_every_book_is_withheld() -> None:
    async def body(client: Client[Any]) -> tuple[Any, Any, Any]:
        return (await client.call_tool("everything", {}, raise_on_error=False),
                await client.call_tool("deep", {}, raise_on_error=False),
                await client.call_tool("mine", {}, raise_on_error=False))

    everything, deep, mine = as_token(["part-1"], body)
    for result in (everything, deep):
        assert result.is_error and json.loads(result.content[0].text)["error"]["code"] == "mcp.book_withheld"
        assert "part-0" not in text_of(result) and "part-2" not in text_of(result)
    assert not mine.is_error  # a book's words are not a field: the book's own text is not censored
    unlimited = as_token(NO_CLAIM, lambda c: c.call_tool("everything", {}))
    assert len(unlimited.structured_content["books"]) == 3


def test_an_error_names_no_other_book() -> None:
    result = as_token(["part-1"], lambda c: c.call_tool("failing", {}, raise_on_error=False))
    error = json.loads(result.content[0].text)["error"]
    assert error["details"]["registered"] == ["part-1"] and error["details"]["by_book"] == {"part-1": 2}
    assert "part-0" not in result.content[0].text and "part-2" not in result.content[0].text


def test_resources_and_templates_hold_the_limit() -> None:
    async def body(client: Client[Any]) -> dict[str, Any]:
        found: dict[str, Any] = {
            "listed": [str(r.uri) for r in await client.list_resources()],
            "templates": [t.uri_template for t in await client.list_resource_templates()],
            "mine": await client.read_resource("book://part-1/notes"),
        }
        for uri in ("book://library/all", "book://part-0/skill", "book://part-2/notes", "book://library/broken"):
            with pytest.raises(MCPError) as info:
                await client.read_resource(uri)
            found[uri] = info.value
        return found

    found = as_token(["part-1"], body)
    assert "book://part-0/skill" not in found["listed"] and "book://library/all" in found["listed"]
    assert found["templates"] == ["book://{book_id}/notes"]  # a template names no book until read
    assert json.loads(found["mine"][0].text) == {"book_id": "part-1"}
    assert "mcp.book_withheld" in found["book://library/all"].message
    assert found["book://part-0/skill"].code == found["book://part-2/notes"].code == -32602
    assert "part-0" not in found["book://library/broken"].message and "part-2" not in found["book://library/broken"].message


@pytest.mark.parametrize("claim", ["part-1", None, {"part-1": 1}, 7, ["part-1", None]])
def test_prompts_and_tools_naming_a_book_follow_the_claim(claim: Any) -> None:
    async def body(client: Client[Any]) -> Any:
        with pytest.raises(MCPError) as info:
            await client.get_prompt("cite", {"book_id": "part-1"})
        return info.value

    refused = as_token(claim, body)  # not a list of ids: no book, not even the one the string names
    assert json.loads(refused.message)["error"]["code"] == "mcp.book_not_served"
    allowed = as_token(["part-1"], lambda c: c.get_prompt("cite", {"book_id": "part-1"}))
    assert "cite part-1" in allowed.messages[0].content.text


def test_a_one_book_server_refuses_a_token_for_another_book_everything() -> None:
    user = AuthenticatedUser(AccessToken(token="t", client_id="c", scopes=[], claims={"books": ["part-1"]}))

    async def run() -> MCPError:
        reset = auth_context_var.set(user)
        try:
            with pytest.raises(MCPError) as info:
                async with Client(forgetful_server("part-0", library=False)) as client:
                    await client.list_tools()
            return info.value
        finally:
            auth_context_var.reset(reset)

    # The handshake itself is refused (server/discover with -32003, mcp.book_not_served: the raw
    # codes are checked over HTTP in tests/e2e/test_http_book_scope.py), so the client never connects.
    assert isinstance(asyncio.run(run()), MCPError)
