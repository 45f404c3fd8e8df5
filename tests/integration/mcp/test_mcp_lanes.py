"""Cheap calls never queue behind a long one (issue 13, finding 2: a status waited 42 s behind a locate)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from book_agent.agent import BookAgent
from book_agent.mcp.server import build_server

BOOK = "test-book"


class SlowLocateAgent(BookAgent):
    """The real agent, with a locate_source that holds its lane until the test lets it go."""

    release = threading.Event()
    started = threading.Event()

    def locate_source(self, book_ref: str, hit_or_text: Any, hints: dict[str, Any] | None = None) -> dict[str, Any]:
        SlowLocateAgent.started.set()
        assert SlowLocateAgent.release.wait(timeout=60)
        return super().locate_source(book_ref, hit_or_text, hints=hints)


@pytest.fixture
def data_dir(tmp_path: Path, pdf_package: Path) -> Path:
    data = tmp_path / "data"
    BookAgent(data).init(pdf_package)
    return data


@pytest.mark.parametrize("cheap", [("status", {}), ("get_skill", {}), ("read_entry", {"record_id": "r0002"}),
                                   ("read_markdown", {"record_id": "r0001"})])
def test_cheap_calls_answer_while_a_long_locate_runs(data_dir: Path, cheap: tuple[str, dict[str, Any]]) -> None:
    SlowLocateAgent.release.clear()
    SlowLocateAgent.started.clear()
    server = build_server(BOOK, agent=SlowLocateAgent(data_dir))

    async def body() -> tuple[Any, Any]:
        async with Client(server) as client:
            long = asyncio.create_task(client.call_tool("locate_source", {"quote": "water shapes its course"},
                                                        raise_on_error=False))
            await asyncio.to_thread(SlowLocateAgent.started.wait, 30)
            try:
                # the locate holds the work lane: the cheap call must not wait for it
                answer = await asyncio.wait_for(client.call_tool(*cheap, raise_on_error=False), timeout=30)
            finally:
                SlowLocateAgent.release.set()
            return answer, await long

    answer, located = asyncio.run(body())
    assert not answer.is_error, answer.content
    assert located.structured_content["verification"]["method"] in ("exact", "normalized", "fuzzy")
