"""`book-agent serve`: limits, the access log and graceful shutdown, on a real server process.

Raw sockets send what a client library never would (a trickled body, a head that never ends,
a 50 MB declaration); FastMCP's client checks the tools' own bounds over HTTP.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.auth import BearerAuth

from tests.support.cli_support import run_cli
from tests.support.http_serve import (
    MCP_HEADERS,
    Served,
    bearer_headers,
    connect,
    head,
    read_response,
    rpc_body,
    serving,
    sse_result,
    start_server,
    stop_server,
    token_digest,
    token_file,
)
from tests.support.library_support import corpus, three_book_library
from tests.support.package_builder import build_package

TEAM, OTHER = "team-token-abc123", "other-token-def456"
SECRET_QUERY = "confidential merger river"  # must not reach the log unless --log-queries


def label(token: str) -> str:
    return hashlib.sha256(token_digest(token).encode()).hexdigest()[:8]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """part-0..2 (EPUB) and pdf-book (a 2-page PDF, for renders)."""
    from book_agent import BookAgent

    tmp = tmp_path_factory.mktemp("library")
    data = three_book_library(tmp)
    with BookAgent(data) as agent:
        agent.init(build_package(tmp / "pdf", book_id="pdf-book", kind="pdf", records=corpus(20)))
    return data


@pytest.fixture(scope="module")
def team(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    logs = tmp_path_factory.mktemp("team")
    with serving(library, logs, "--token-file", str(token_file(logs, TEAM, OTHER)), "--max-concurrent-per-client",
                 "2", "--queue-per-client", "0", "--access-log", str(logs / "access.log"),
                 secrets=(TEAM, OTHER)) as served:
        yield served, logs / "access.log"


@pytest.fixture(scope="module")
def impatient(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """No authentication, a 1-second read timeout, queries logged (to stderr, the default)."""
    with serving(library, tmp_path_factory.mktemp("impatient"), "--read-timeout", "1", "--log-queries") as served:
        yield served


def bearer(token: str = TEAM) -> dict[str, str]:
    return bearer_headers(token)


def test_a_declared_oversized_body_gets_413_before_it_is_read(team: tuple[Served, Path]) -> None:
    served, _ = team
    with connect(served.port) as sock:  # 50 MB declared, not a byte sent: the answer comes anyway
        sock.sendall(head(served.port, 50 << 20, TEAM))
        status, _, body = read_response(sock)
    assert status == 413 and json.loads(body)["error"]["code"] == "http.body_too_large"
    assert json.loads(body)["error"]["details"] == {"limit": 1 << 20, "declared": 50 << 20}

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        yield b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"query": "'
        for _ in range(40):
            yield b"x" * 65536

    response = httpx.post(served.base + "/mcp", content=chunked(), headers=bearer(), timeout=30)
    assert response.status_code == 413 and response.json()["error"]["code"] == "http.body_too_large"
    assert httpx.get(served.base + "/health").status_code == 200


def test_a_client_past_its_concurrent_calls_gets_429(team: tuple[Served, Path]) -> None:
    """Two slow renders hold the token's two slots (no queue on this server): its third call is
    refused at once, another token's is served. (The queue, protocol calls and per-address
    limits: tests/e2e/test_http_fair_share.py.)"""
    served, _ = team
    body = rpc_body("list_books", {})
    held = []
    for dpi in (301, 302):  # renders run one at a time: the second waits behind the first
        render = rpc_body("render_page", {"book_id": "pdf-book", "page_index": 1, "dpi": dpi})
        sock = connect(served.port, timeout=120)
        sock.sendall(head(served.port, len(render), TEAM) + render)
        held.append(sock)
    try:
        deadline = time.monotonic() + 10
        while True:  # once the server holds both renders, the third call is refused
            third = httpx.post(served.base + "/mcp", content=body, headers=bearer(), timeout=120)
            if third.status_code == 429 or time.monotonic() > deadline:
                break
        assert third.status_code == 429 and third.headers["retry-after"] == "1"
        assert third.json()["error"]["code"] == "http.too_many_requests"
        assert third.json()["error"]["details"]["limit"] == 2
        other = httpx.post(served.base + "/mcp", content=body, headers=bearer(OTHER), timeout=120)
        assert other.status_code == 200  # the limit is per token
        for sock in held:  # the held calls complete, answered as usual
            status, _, answer = read_response(sock)
            assert status == 200 and sse_result(answer)["result"]["structuredContent"]["width_px"] > 0
    finally:
        for sock in held:
            sock.close()
    assert httpx.post(served.base + "/mcp", content=body, headers=bearer()).status_code == 200


def test_the_tools_bounds_hold_over_http(team: tuple[Served, Path]) -> None:
    served, _ = team

    async def calls() -> dict[str, Any]:
        async with Client(served.base + "/mcp", auth=BearerAuth(TEAM)) as client:
            async def code(name: str, arguments: dict[str, Any]) -> str:
                result = await client.call_tool(name, arguments, raise_on_error=False)
                assert result.is_error
                return str(json.loads(result.content[0].text)["error"]["code"])

            render = {"book_id": "pdf-book", "page_index": 0}
            return {
                "long query": await code("search", {"query": "x" * 4001}),
                "top_k 101": await code("search", {"query": "river", "top_k": 101}),
                "top_k 0": await code("search", {"query": "river", "top_k": 0}),
                "dpi 1201": await code("render_page", {**render, "dpi": 1201}),
                "dpi 17": await code("render_page", {**render, "dpi": 17}),
                "long quote": await code("locate_source", {"book_id": "part-0", "quote": "q" * 20001}),
                "huge": (await client.call_tool("render_page", {**render, "dpi": 1200, "include_image": True})),
            }

    found = asyncio.run(calls())
    huge = found.pop("huge")
    assert set(found.values()) == {"mcp.bad_arguments"}, found
    rendered = huge.structured_content
    assert rendered["scaled_down"] and rendered["width_px"] * rendered["height_px"] <= rendered["max_pixels"]
    assert rendered["image_included"] and rendered["image_bytes"] <= 8 << 20

    vector = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "search", "arguments": {"query": "river", "query_vector": [0.123456789] * 100_000}}})
    refused = httpx.post(served.base + "/mcp", content=vector, headers=bearer())
    assert refused.status_code == 413  # a query vector is bounded by the body


def test_one_json_line_per_request_without_tokens_or_queries(team: tuple[Served, Path]) -> None:
    served, access_log = team
    httpx.post(served.base + "/mcp", content=rpc_body("search", {"query": SECRET_QUERY, "books": ["part-1"]}),
               headers=bearer())
    httpx.post(served.base + "/mcp", content=rpc_body("list_books", {}), headers=bearer("wrong-token"))
    httpx.post(served.base + "/mcp", content=rpc_body("read_entry", {"book_id": "part-2", "record_id": "nope"}),
               headers=bearer(OTHER))
    with connect(served.port) as sock:
        sock.sendall(head(served.port, 5 << 20, TEAM))
        assert read_response(sock)[0] == 413
    time.sleep(0.2)
    text = access_log.read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    fields = {"time", "client", "method", "path", "status", "ms", "bytes_in", "rpc", "tool", "token", "books", "error"}
    assert lines and all(set(line) == fields for line in lines)
    search = next(line for line in lines if line["tool"] == "search" and line["books"] == ["part-1"])
    assert search["status"] == 200 and search["rpc"] == "tools/call" and search["token"] == label(TEAM)
    assert search["client"] == "127.0.0.1" and search["path"] == "/mcp" and search["error"] is None
    assert next(line for line in lines if line["status"] == 401)["token"] is None
    missing = next(line for line in lines if line["tool"] == "read_entry")
    assert missing["token"] == label(OTHER) and missing["error"] == "record.not_found"
    refused = next(line for line in lines if line["error"] == "http.body_too_large")
    assert refused["status"] == 413 and refused["token"] == label(TEAM) and refused["bytes_in"] is None
    for secret in (TEAM, OTHER, "wrong-token", token_digest(TEAM), token_digest(OTHER), SECRET_QUERY, "merger"):
        assert secret not in text


def test_a_trickled_body_gets_408_and_a_stalled_head_is_closed(impatient: Served) -> None:
    body = rpc_body("list_books", {})
    with connect(impatient.port) as sock:
        started = time.monotonic()
        sock.sendall(head(impatient.port, len(body)) + body[:10])
        status, headers, answer = read_response(sock)
        assert status == 408 and json.loads(answer)["error"]["code"] == "http.body_timeout"
        assert 0.9 < time.monotonic() - started < 10 and headers.get("connection") == "close"
        assert sock.recv(100) == b""  # closed
    with connect(impatient.port) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head that never ends
        assert sock.recv(100) == b"" and time.monotonic() - started < 10
    assert httpx.get(impatient.base + "/health").status_code == 200


def test_log_queries_puts_the_query_in_the_log(impatient: Served) -> None:
    response = httpx.post(impatient.base + "/mcp", content=rpc_body("search", {"query": SECRET_QUERY}),
                          headers=MCP_HEADERS)
    assert response.status_code == 200
    time.sleep(0.2)
    lines = [json.loads(line) for line in impatient.output().splitlines() if line.startswith("{")]
    search = next(line for line in lines if line.get("tool") == "search")
    assert search["query"] == SECRET_QUERY and search["token"] is None


def test_a_client_gone_mid_call_is_logged_and_holds_nothing(impatient: Served) -> None:
    body = rpc_body("render_page", {"book_id": "pdf-book", "page_index": 1, "dpi": 500})  # ~1 s, uncached
    with connect(impatient.port) as sock:
        sock.sendall(head(impatient.port, len(body)) + body)
        time.sleep(0.1)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in impatient.output().splitlines() if line.startswith("{")]
        gone = [line for line in lines if line.get("tool") == "render_page"]
        if gone:
            break
        time.sleep(0.2)
    assert gone and gone[0]["error"] == "http.client_gone"
    assert httpx.post(impatient.base + "/mcp", content=rpc_body("list_books", {}), headers=MCP_HEADERS).status_code == 200


def test_sigterm_finishes_the_call_in_flight(library: Path, tmp_path: Path) -> None:
    served = start_server(library, tmp_path, "--access-log", str(tmp_path / "access.log"))
    try:
        body = rpc_body("render_page", {"book_id": "pdf-book", "page_index": 1, "dpi": 1200})
        with connect(served.port, timeout=30) as sock:
            sock.sendall(head(served.port, len(body)) + body[:10])  # in flight: the head is read
            time.sleep(0.3)
            served.proc.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            assert served.proc.poll() is None  # waiting for the call in flight
            with pytest.raises(httpx.TransportError):
                httpx.get(served.base + "/health", timeout=2)  # no new connection is accepted
            sock.sendall(body[10:])
            status, _, answer = read_response(sock)
        assert status == 200 and sse_result(answer)["result"]["structuredContent"]["width_px"] > 0
        # then it stops, by the signal it was sent (uvicorn re-raises it: shell status 143)
        assert served.proc.wait(timeout=30) == -signal.SIGTERM
    finally:
        stop_server(served)
    assert "Traceback" not in served.output()
    renders = [json.loads(line) for line in (tmp_path / "access.log").read_text().splitlines()]
    assert [(r["tool"], r["status"]) for r in renders if r["tool"]] == [("render_page", 200)]


@pytest.mark.parametrize("option", [("--max-body-bytes", "0"), ("--max-concurrent-per-client", "0"),
                                    ("--read-timeout", "-1"), ("--shutdown-timeout", "1e9")])
def test_a_limit_out_of_range_is_refused_at_start(option: tuple[str, str], tmp_path: Path) -> None:
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", *option)
    assert out.code == 1 and out.error_code == "http.bad_limit"
