"""A library MCP server (`mcp @all`, `mcp a,b`): list_books, library search, book_id on the
one-book tools, in-process through the FastMCP client (tests/e2e: over real stdio)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from book_agent import BookAgent
from book_agent.mcp.server import build_server
from tests.support.library_support import LIBRARY_TOOLS, corpus, make_book, three_book_library


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return three_book_library(tmp_path)


def calls(data_dir: Path, ref: str, steps: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    async def run() -> tuple[set[str], list[Any]]:
        async with Client(build_server(ref, data_dir=data_dir)) as client:
            tools = {t.name for t in await client.list_tools()}
            return tools, [await client.call_tool(name, args, raise_on_error=False) for name, args in steps]
    return asyncio.run(run())


def error_code(result: Any) -> str:
    assert result.is_error
    return str(json.loads(result.content[0].text)["error"]["code"])


def test_the_library_tools_list_search_and_read_one_book(data_dir: Path) -> None:
    tools, (listed, found, narrowed, entry) = calls(data_dir, "@all", [
        ("list_books", {}),
        ("search", {"query": "river water ground"}),
        ("search", {"query": "river water ground", "books": ["part-1"]}),
        ("read_entry", {"book_id": "part-2", "record_id": "d002"}),
    ])
    assert tools == LIBRARY_TOOLS
    books = listed.structured_content["books"]
    assert [b["book_id"] for b in books] == ["part-0", "part-1", "part-2"]
    assert all(b["records"] == 10 and b["model"] and b["available"] for b in books)
    assert found.structured_content["hits"] and all(h["book_id"].startswith("part-") for h in found.structured_content["hits"])
    assert {h["book_id"] for h in narrowed.structured_content["hits"]} == {"part-1"}
    assert entry.structured_content["record_id"] == "d002"


def test_books_and_book_id_must_be_served(data_dir: Path) -> None:
    _, (unknown, missing, other, listed) = calls(data_dir, "part-0,part-1", [
        ("search", {"query": "river", "books": ["part-2"]}),
        ("read_entry", {"record_id": "d000"}),
        ("get_skill", {"book_id": "part-2"}),
        ("list_books", {}),
    ])
    assert error_code(unknown) == "mcp.book_not_served"
    assert error_code(missing) == "mcp.bad_arguments"
    assert error_code(other) == "mcp.book_not_served"
    assert [b["book_id"] for b in listed.structured_content["books"]] == ["part-0", "part-1"]


def test_all_serves_books_registered_after_the_start(data_dir: Path, tmp_path: Path) -> None:
    async def run() -> tuple[Any, Any]:
        async with Client(build_server("@all", data_dir=data_dir)) as client:
            await client.call_tool("list_books", {})
            with BookAgent(data_dir) as agent:
                agent.init(make_book(tmp_path / "late", "late", corpus(3)))
            listed = await client.call_tool("list_books", {})
            entry = await client.call_tool("read_entry", {"book_id": "late", "record_id": "d001"},
                                           raise_on_error=False)
            return listed, entry

    listed, entry = asyncio.run(run())
    assert "late" in [b["book_id"] for b in listed.structured_content["books"]]
    assert entry.structured_content["record_id"] == "d001"


def test_a_book_removed_while_serving_is_refused_at_once_and_served_again_when_back(data_dir: Path) -> None:
    read = ("read_entry", {"book_id": "part-2", "record_id": "d002"})

    async def run() -> list[Any]:
        async with Client(build_server("@all", data_dir=data_dir)) as client:
            results = [await client.call_tool(*read, raise_on_error=False)]  # served (and cached)
            with BookAgent(data_dir) as agent:
                root = agent.resolve("part-2")["package_root"]
                agent.remove("part-2")
            results += [await client.call_tool(*read, raise_on_error=False),
                        await client.call_tool("search", {"query": "river", "books": ["part-2"]}, raise_on_error=False),
                        await client.call_tool("list_books", {})]
            with BookAgent(data_dir) as agent:
                agent.init(root)
            results.append(await client.call_tool(*read, raise_on_error=False))
            return results

    before, removed, searched, listed, back = asyncio.run(run())
    assert before.structured_content["record_id"] == "d002"
    assert error_code(removed) == "mcp.book_not_served" and error_code(searched) == "mcp.book_not_served"
    assert [b["book_id"] for b in listed.structured_content["books"]] == ["part-0", "part-1"]
    assert back.structured_content["record_id"] == "d002"


def test_published_library_schemas_match_the_contract_file() -> None:
    from book_agent.mcp.published import document
    from tests.support import REPO_ROOT

    published = document(library=True)
    written = json.loads((REPO_ROOT / "contracts" / "mcp-library-tools.json").read_text(encoding="utf-8"))
    assert published == written, "run: python -m book_agent.mcp.published --library > contracts/mcp-library-tools.json"
    for tool in published["tools"]:
        if tool["name"] not in ("list_books", "search"):
            assert "book_id" in tool["inputSchema"]["required"], tool["name"]
