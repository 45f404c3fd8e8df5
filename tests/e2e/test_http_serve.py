"""`book-agent serve`: the library over MCP streamable HTTP, a real server process on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client

from tests.support.cli_support import run_cli
from tests.support.http_serve import free_port, terminate, wait_healthy
from tests.support.library_support import LIBRARY_TOOLS, three_book_library

TEAM, READER = "team-token-abc123", "reader-token-xyz789"  # a reader may use part-1 only


def start(tmp_path: Path, *extra: str) -> Any:
    data = three_book_library(tmp_path)
    port = free_port()
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115  (closed by the fixture)
    proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                             "--port", str(port), *extra], stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, proc, tmp_path / "server.log")
    return base, data, proc, log


def stop(proc: Any, log: Any, tmp_path: Path) -> None:
    try:
        terminate(proc)
    finally:
        log.close()
    server_log = (tmp_path / "server.log").read_bytes()
    assert b"Traceback" not in server_log
    assert TEAM.encode() not in server_log and READER.encode() not in server_log  # never logged


@pytest.fixture
def server(tmp_path: Path) -> Any:
    base, data, proc, log = start(tmp_path)
    yield base, data, proc
    stop(proc, log, tmp_path)


@pytest.fixture
def team_server(tmp_path: Path) -> Any:
    digest = {t: hashlib.sha256(t.encode()).hexdigest() for t in (TEAM, READER)}
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"# the team\n{digest[TEAM]}\n{digest[READER]} part-1\n")
    base, data, proc, log = start(tmp_path, "--token-file", str(tokens))
    yield base
    stop(proc, log, tmp_path)


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


def test_tokens_are_required_and_limit_the_books(team_server: str) -> None:
    import json

    from fastmcp.client.auth import BearerAuth

    denied = httpx.post(team_server + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert denied.status_code == 401 and "bearer" in denied.headers.get("www-authenticate", "").lower()
    wrong = httpx.post(team_server + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                       headers={"Authorization": "Bearer not-a-token"})
    assert wrong.status_code == 401

    async def as_user(token: str) -> tuple[Any, Any, Any]:
        async with Client(team_server + "/mcp", auth=BearerAuth(token)) as client:
            listed = await client.call_tool("list_books", {})
            found = await client.call_tool("search", {"query": "river water ground", "top_k": 20})
            other = await client.call_tool("read_entry", {"book_id": "part-0", "record_id": "d000"},
                                           raise_on_error=False)
            narrowed = await client.call_tool("search", {"query": "river", "books": ["part-0"]}, raise_on_error=False)
            assert narrowed.is_error == (token == READER)
            return listed, found, other

    listed, found, other = asyncio.run(as_user(TEAM))
    assert [b["book_id"] for b in listed.structured_content["books"]] == ["part-0", "part-1", "part-2"]
    assert not other.is_error
    listed, found, other = asyncio.run(as_user(READER))
    assert [b["book_id"] for b in listed.structured_content["books"]] == ["part-1"]
    assert {h["book_id"] for h in found.structured_content["hits"]} == {"part-1"}
    assert json.loads(other.content[0].text)["error"]["code"] == "mcp.book_not_served"


def test_a_bad_token_file_is_refused_without_echoing_it(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.txt"
    tokens.write_text("secret-token-in-clear\n")
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", "--token-file", str(tokens),
                  "--port", str(free_port()))
    assert out.code == 1 and out.error_code == "http.bad_token_file"
    assert b"secret-token-in-clear" not in out.stdout and "secret-token-in-clear" not in out.stderr


def test_jwts_checked_against_a_public_key(tmp_path: Path) -> None:
    from fastmcp.client.auth import BearerAuth
    from fastmcp.server.auth.providers.jwt import RSAKeyPair

    keys = RSAKeyPair.generate()
    (tmp_path / "idp.pem").write_text(keys.public_key.get_secret_value()
                                      if hasattr(keys.public_key, "get_secret_value") else str(keys.public_key))
    issuer, audience = "https://idp.example.org", "book-agent"
    base, _, proc, log = start(tmp_path, "--jwt-public-key", str(tmp_path / "idp.pem"),
                               "--jwt-issuer", issuer, "--jwt-audience", audience)
    try:
        def token(**kw: Any) -> str:
            return keys.create_token(subject="reader", issuer=kw.get("issuer", issuer),
                                     audience=kw.get("audience", audience),
                                     expires_in_seconds=kw.get("expires", 600),
                                     additional_claims={"books": ["part-2"]})

        for bad in (token(expires=-60), token(audience="someone-else"), token(issuer="https://evil.example")):
            response = httpx.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                  headers={"Authorization": f"Bearer {bad}"})
            assert response.status_code == 401 and "www-authenticate" in response.headers

        async def listed() -> Any:
            async with Client(base + "/mcp", auth=BearerAuth(token())) as client:
                return await client.call_tool("list_books", {})

        assert [b["book_id"] for b in asyncio.run(listed()).structured_content["books"]] == ["part-2"]
    finally:
        stop(proc, log, tmp_path)


def test_two_ways_of_authenticating_at_once_are_refused(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(hashlib.sha256(b"x").hexdigest() + "\n")
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", "--token-file", str(tokens),
                  "--jwks-url", "https://idp.example.org/jwks", "--jwt-issuer", "i", "--jwt-audience", "a")
    assert out.code == 1 and out.error_code == "http.auth_conflict"
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", "--jwks-url", "https://idp.example.org/jwks")
    assert out.code == 1 and out.error_code == "http.auth_conflict"
