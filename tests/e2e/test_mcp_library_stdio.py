"""A library MCP server (`mcp @all`) as a host starts it: a real process over stdio."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.support.library_support import LIBRARY_TOOLS, three_book_library
from tests.support.stdio_session import server_argv


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return three_book_library(tmp_path)


def test_a_library_server_over_real_stdio(data_dir: Path, tmp_path: Path) -> None:
    argv = server_argv(data_dir, "@all")
    transport = StdioTransport(command=argv[0], args=argv[1:], env=dict(os.environ), keep_alive=False,
                               log_file=tmp_path / "server.log")

    async def run() -> tuple[set[str], Any, Any]:
        async with Client(transport) as client:
            tools = {t.name for t in await client.list_tools()}
            found = await client.call_tool("search", {"query": "river water"})
            books = json.loads((await client.read_resource("book://library/books"))[0].text)
            return tools, found, books

    tools, found, books = asyncio.run(run())
    assert tools == LIBRARY_TOOLS
    assert found.structured_content["hits"] and found.structured_content["library"]["books_searched"] == 3
    assert len(books["books"]) == 3
