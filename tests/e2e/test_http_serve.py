"""`book-agent serve`: the library over MCP streamable HTTP, a real server process on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client

from tests.support.cli_support import run_cli
from tests.support.library_support import LIBRARY_TOOLS, three_book_library


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Any:
    data = three_book_library(tmp_path)
    port = free_port()
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115  (closed below)
    proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
        time.sleep(0.2)
    yield base, data, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    assert b"Traceback" not in (tmp_path / "server.log").read_bytes()


def test_the_library_over_streamable_http(server: Any) -> None:
    base, _, proc = server
    assert httpx.get(base + "/health").json() == {"status": "ok", "serving": "@all"}

    async def run() -> tuple[set[str], Any, Any]:
        async with Client(base + "/mcp") as client:
            tools = {t.name for t in await client.list_tools()}
            found = await client.call_tool("search", {"query": "river water"})
            entry = await client.call_tool("read_entry", {"book_id": "part-1", "record_id": "d001"})
            return tools, found, entry

    tools, found, entry = asyncio.run(run())
    assert tools == LIBRARY_TOOLS
    assert found.structured_content["hits"] and found.structured_content["library"]["books_searched"] == 3
    assert entry.structured_content["record_id"] == "d001"
    proc.send_signal(signal.SIGTERM)
    # uvicorn stops gracefully, then re-raises the signal it caught: the exit a service manager expects
    assert proc.wait(timeout=20) in (0, -signal.SIGTERM)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.org", "127.1"])
def test_a_non_loopback_address_is_refused_before_anything_listens(host: str, tmp_path: Path) -> None:
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", "--host", host)
    assert out.code == 1 and out.error_code == "http.auth_required"


def test_an_unknown_book_fails_at_start(tmp_path: Path) -> None:
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", "nope,other", "--port", str(free_port()))
    assert out.code == 1 and out.error_code == "book.not_registered"
