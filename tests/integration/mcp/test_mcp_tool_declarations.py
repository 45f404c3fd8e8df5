"""Each MCP tool is declared once (book_agent/mcp/tools/table.py) and serves both servers: every tool
has a lane and a library variant, and each call runs on the lane its declaration names."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, get_args

import pytest
from fastmcp import Client

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.server import build_server
from book_agent.mcp.session import BookSession, Lane
from book_agent.mcp.tools.registration import PER_BOOK, Tool, Variant
from book_agent.mcp.tools.table import TOOLS
from tests.support import published_tool_names


def declaration_problems(tools: tuple[Tool, ...]) -> list[str]:
    """What keeps a tool from being served alike by both servers: no lane, no library variant."""
    problems = []
    for tool in tools:
        if tool.lane not in get_args(Lane):
            problems.append(f"{tool.name}: lane {tool.lane!r} is not one of {get_args(Lane)}")
        if tool.library is None:
            problems.append(f"{tool.name}: no library variant (PER_BOOK, or its own Variant)")
        if tool.library == PER_BOOK and tool.book is None:
            problems.append(f"{tool.name}: PER_BOOK needs a one-book variant")
    names = [tool.name for tool in tools]
    problems += [f"{name}: declared twice" for name in sorted({n for n in names if names.count(n) > 1})]
    return problems


def test_every_tool_has_a_lane_and_a_library_variant() -> None:
    assert declaration_problems(TOOLS) == []


def _first(name: str) -> Tool:
    return next(tool for tool in TOOLS if tool.name == name)


@pytest.mark.parametrize("broken", [
    replace(_first("status"), library=None),
    replace(_first("render_page"), lane="slow"),  # type: ignore[arg-type]
    replace(_first("list_books"), library=PER_BOOK),
    replace(_first("search"), library=Variant("d", lambda agent, target: None), lane="fast"),  # type: ignore[arg-type]
])
def test_the_check_finds_a_tool_without_its_lane_or_library_variant(broken: Tool) -> None:
    assert declaration_problems((*TOOLS, broken)) != []


def test_the_servers_publish_the_declared_tools() -> None:
    assert published_tool_names("mcp-tools.json") == {tool.name for tool in TOOLS if tool.book is not None}
    assert published_tool_names("mcp-library-tools.json") == {tool.name for tool in TOOLS}


class LaneRecorder(BookSession):
    """A real session that notes which lane each call is queued on."""

    def __init__(self, ref: str) -> None:
        super().__init__(ref, agent=RefusingAgent())
        self.lanes: list[Lane] = []

    async def run(self, fn: Any, lane: Lane = "work") -> Any:
        self.lanes.append(lane)
        return await super().run(fn, lane)


class RefusingAgent:
    """Every facade call fails with a coded error: the call reached its lane, which is enough."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise BookAgentError("test.refused", f"{name} refused")

        return refuse


VALID = {"book_id": "b", "query": "q", "record_id": "r", "locator": {}, "page_index": 0}


def _arguments(tool: Any) -> dict[str, Any]:
    arguments = {name: VALID[name] for name in tool.input_schema.get("required", [])}
    return arguments | ({"quote": "q"} if tool.name == "locate_source" else {})


@pytest.mark.parametrize("ref", ["one-book", "@all"])
def test_each_call_runs_on_its_declared_lane(ref: str) -> None:
    session = LaneRecorder(ref)

    async def lanes() -> dict[str, Lane]:
        seen = {}
        async with Client(build_server(ref, session=session)) as client:
            for tool in await client.list_tools():
                result = await client.call_tool(tool.name, _arguments(tool), raise_on_error=False)
                assert result.is_error and "test.refused" in result.content[0].text, (tool.name, result.content)
                seen[tool.name] = session.lanes.pop()
        return seen

    try:
        seen = asyncio.run(lanes())
    finally:
        session.close()
    declared = {tool.name: tool.lane for tool in TOOLS if ref == "@all" or tool.book is not None}
    assert seen == declared and set(seen.values()) == {"work", "quick"}
