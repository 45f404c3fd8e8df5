"""Protocol conformance: a tool, resource or prompt the server does not have is a JSON-RPC error -32602 (the
MCP specification), not a success result with isError; the official `mcp` client SDK (a dependency of
fastmcp) gets it as an MCPError with our coded JSON, over stdio and over HTTP, and the session goes on."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from book_agent.agent import BookAgent
from tests.support.http_serve import start_server, stop_server
from tests.support.library_support import three_book_library

BOOK = "test-book"
NAMES = ["no_such_tool", "Search", "search ", "", "x" * 300, "list_books\u0000", "../status", "\u00e9t\u00e9"]


async def refusals(client: Client, resource_base: str) -> list[tuple[str, MCPError]]:
    found = []
    for name in NAMES:
        with pytest.raises(MCPError) as info:
            await client.call_tool(name, {"query": "water"})
        found.append(("mcp.unknown_tool", info.value))
    for uri in (f"{resource_base}/nope", "book://no-such-book/skill", "file:///etc/passwd", "book://x/" + "y" * 300):
        with pytest.raises(MCPError) as info:
            await client.read_resource(uri)
        found.append(("mcp.unknown_resource", info.value))
    with pytest.raises(MCPError) as info:
        await client.get_prompt("nope", {"book_id": "x"})
    found.append(("mcp.unknown_prompt", info.value))
    return found


def check(found: list[tuple[str, MCPError]]) -> None:
    for code, error in found:
        assert error.code == -32602, (code, error)
        coded = json.loads(error.message)["error"]
        assert coded["code"] == code and coded == error.data["error"] and coded["remediation"]
        assert len(error.message) < 2000  # a long name is cut, not echoed whole


async def session(client: Client, resource_base: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with client:
        found = await refusals(client, resource_base)
        after = await client.call_tool(tool, arguments)  # the session goes on
        return found, after


def test_over_stdio_with_the_official_sdk(tmp_path: Path, pdf_package: Path) -> None:
    data = tmp_path / "data"
    BookAgent(data).init(pdf_package)
    params = StdioServerParameters(command=sys.executable, args=["-m", "book_agent", "--data-dir", str(data), "mcp",
                                                                 BOOK])
    found, after = asyncio.run(session(Client(params), f"book://{BOOK}", "status", {}))
    check(found)
    assert not after.is_error


def test_over_http_with_the_official_sdk(tmp_path: Path) -> None:
    served = start_server(three_book_library(tmp_path), tmp_path)
    try:
        found, after = asyncio.run(session(Client(served.base + "/mcp"), "book://library", "list_books", {}))
    finally:
        stop_server(served)
    log = served.output()
    check(found)
    assert not after.is_error and after.structured_content["books"]
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert {line["error"] for line in lines if line.get("rpc") == "tools/call" and line["tool"] != "list_books"} \
        == {"mcp.unknown_tool"}  # the access log names the refusal's code
