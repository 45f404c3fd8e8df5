"""A real MCP session over stdio with a server subprocess started the way hosts start it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp_types import LATEST_PROTOCOL_VERSION

from book_agent import __version__
from book_agent.agent import BookAgent
from tests.support import published_tool_names
from tests.support.cli_support import run_cli
from tests.support.package_builder import break_package

BOOK = "test-book"


def server_argv(data_dir: Path, book_id: str = BOOK) -> list[str]:
    return [sys.executable, "-m", "book_agent", "--data-dir", str(data_dir), "mcp", book_id]


@pytest.fixture
def data_dir(tmp_path: Path, pdf_package: Path) -> Path:
    data = tmp_path / "data"
    BookAgent(data).init(pdf_package)
    return data


def _rpc(method: str, params: dict[str, Any], ident: int | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return (json.dumps(message) + "\n").encode()


INIT = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def test_cli_registers_the_mcp_command() -> None:
    out = run_cli("mcp", "--help")
    assert out.code == 0 and "Usage: book-agent mcp" in out.stdout.decode()


@pytest.mark.slow
def test_full_session_over_stdio(data_dir: Path, tmp_path: Path) -> None:
    argv = server_argv(data_dir)
    log = tmp_path / "server.log"
    transport = StdioTransport(command=argv[0], args=argv[1:], env=dict(os.environ), keep_alive=False, log_file=log)

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(transport) as client:
            out["tools"] = {t.name for t in await client.list_tools()}
            out["search"] = await client.call_tool("search", {"query": "water ground"}, raise_on_error=False)
            out["entry"] = await client.call_tool("read_entry", {"record_id": "r0002"}, raise_on_error=False)
            out["unknown"] = await client.call_tool("read_entry", {"record_id": "zzz"}, raise_on_error=False)
            out["bad"] = await client.call_tool("search", {"query": 42}, raise_on_error=False)
            out["status"] = await client.call_tool("status", {}, raise_on_error=False)
            out["others"] = {
                name: await client.call_tool(name, args, raise_on_error=False)
                for name, args in [
                    ("get_skill", {}),
                    ("read_markdown", {"record_id": "r0001"}),
                    ("locate_source", {"record_id": "r0001"}),
                    ("read_source", {"locator": {"book_id": BOOK, "kind": "pdf", "page_index": 0}}),
                    ("render_page", {"page_index": 0, "dpi": 72}),
                ]
            }
            queries = ["rivers", "tax", "兵者", "general", "light energy", "supply"]
            many = await asyncio.gather(*(client.call_tool("search", {"query": q}) for q in queries))
            out["concurrent"] = [(q, r.structured_content["query"]) for q, r in zip(queries, many, strict=True)]
            meta = await client.read_resource(f"book://{BOOK}/metadata")
            out["meta"] = json.loads(meta[0].text)
        return out

    out = asyncio.run(run())
    assert out["tools"] == published_tool_names("mcp-tools.json")
    assert out["search"].structured_content["hits"][0]["record_id"] == "r0001"
    assert "calculations" in out["entry"].structured_content["text"]
    assert json.loads(out["unknown"].content[0].text)["error"]["code"] == "record.not_found"
    assert json.loads(out["bad"].content[0].text)["error"]["code"] == "mcp.bad_arguments"
    assert out["status"].structured_content["package"]["healthy"] is True
    for name, result in out["others"].items():
        # Every tool answers: data, or a structured error (never a dead session or a raw traceback).
        if result.is_error:
            error = json.loads(result.content[0].text)["error"]
            assert error["code"] and error["message"], name
        else:
            assert result.structured_content, name
    assert all(q == answered for q, answered in out["concurrent"])
    assert out["meta"]["book_id"] == BOOK


def _read_until(stream: Any, lines: list[bytes], by_id: dict[int, Any], wanted: set[int]) -> None:
    for line in stream:
        lines.append(line)
        message = json.loads(line)
        if "id" in message:
            by_id[message["id"]] = message
        if wanted <= set(by_id):
            return


SITE = '''
import os
from book_agent import agent as _agent
_search = _agent.BookAgent.search
def search(self, *args, **kwargs):
    print("stray python print")
    os.write(1, b"stray fd-level write\\n")
    return _search(self, *args, **kwargs)
_agent.BookAgent.search = search
'''


@pytest.mark.slow
def test_stdout_is_protocol_only_and_stdin_close_ends_cleanly(data_dir: Path, tmp_path: Path) -> None:
    # A sitecustomize makes the real agent print (Python and fd level) inside a tool call.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    requests = (
        _rpc("initialize", INIT, 1)
        + _rpc("notifications/initialized", {})
        + _rpc("tools/list", {}, 2)
        + _rpc("tools/call", {"name": "search", "arguments": {"query": "water"}}, 3)
        + _rpc("tools/call", {"name": "read_entry", "arguments": {"record_id": "nope"}}, 4)
        + _rpc("tools/call", {"name": "no_such_tool", "arguments": {}}, 5)
        + _rpc("tools/call", {"name": "search", "arguments": {"query": " \t\n "}}, 6)
    )
    stderr_file = tmp_path / "stderr.txt"
    with open(stderr_file, "wb") as err_out:
        proc = subprocess.Popen(server_argv(data_dir), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err_out, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(requests)
        proc.stdin.flush()
        # Read answers while stdin stays open (closing it early cancels in-flight calls).
        lines: list[bytes] = []
        by_id: dict[int, Any] = {}
        reader = threading.Thread(target=_read_until, args=(proc.stdout, lines, by_id, {1, 2, 3, 4, 5, 6}), daemon=True)
        reader.start()
        reader.join(timeout=120)
        proc.stdin.close()  # the host goes away: the server must exit by itself, cleanly
        returncode = proc.wait(timeout=30)
        lines.extend(proc.stdout.read().splitlines())
        proc.stdout.close()
    stderr = stderr_file.read_text(encoding="utf-8", errors="replace")
    assert returncode == 0, stderr[-2000:]
    messages = [json.loads(line) for line in lines]  # every stdout line is JSON-RPC
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    assert set(by_id) == {1, 2, 3, 4, 5, 6}
    assert by_id[1]["result"]["serverInfo"] == {"name": f"book-agent:{BOOK}", "version": __version__}
    assert len(by_id[2]["result"]["tools"]) == len(published_tool_names("mcp-tools.json"))
    assert by_id[3]["result"]["structuredContent"]["hits"][0]["record_id"] == "r0001"
    assert by_id[4]["result"]["isError"] is True
    result = by_id[6]["result"]  # a tool error in the promised JSON shape, not prose
    assert result["isError"] is True and "structuredContent" not in result
    assert json.loads(result["content"][0]["text"])["error"]["code"] == "search.empty_query"
    unknown = by_id[5]["error"]  # an unknown tool: a JSON-RPC error, as the MCP specification asks
    assert unknown["code"] == -32602 and "result" not in by_id[5]
    assert json.loads(unknown["message"])["error"]["code"] == unknown["data"]["error"]["code"] == "mcp.unknown_tool"
    assert "stray python print" in stderr and "stray fd-level write" in stderr


@pytest.mark.slow
@pytest.mark.parametrize("breakage", [None, "hash_mismatch"])
def test_unknown_or_broken_book_fails_at_start_up(data_dir: Path, pdf_package: Path, breakage: str | None) -> None:
    book = "no-such-book" if breakage is None else BOOK
    if breakage:
        break_package(pdf_package, breakage)
    proc = subprocess.run(server_argv(data_dir, book), input=_rpc("initialize", INIT, 1),
                          capture_output=True, timeout=60)
    assert proc.returncode != 0 and proc.stdout == b""
    stderr = proc.stderr.decode(errors="replace")
    assert f"cannot serve book {book!r}" in stderr and "fix:" in stderr and "Traceback" not in stderr
    assert ("book.not_registered" if breakage is None else "package.changed") in stderr
