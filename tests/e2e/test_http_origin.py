"""`book-agent serve` refuses DNS rebinding: a real server process on 127.0.0.1 answers only the
Host names and browser Origins it may (book_agent/mcp/http/origin.py), with the CLI's JSON errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cli_support import run_cli
from tests.support.http_serve import (
    MCP_HEADERS,
    Served,
    free_port,
    serving,
    sse_result,
    token_file,
)
from tests.support.library_support import three_book_library

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
TOKEN = "origin-test-token-1"


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_book_library(tmp_path_factory.mktemp("library"))


@pytest.fixture(scope="module")
def local(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(library, tmp_path_factory.mktemp("local")) as served:
        yield served


def post(served: Served, **headers: str) -> httpx.Response:
    return httpx.post(served.base + "/mcp", json=PING, headers={**MCP_HEADERS, **headers}, timeout=20)


def refused(response: httpx.Response, code: str) -> dict[str, object]:
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and error["remediation"]
    return dict(error)


def test_a_rebinding_host_gets_403_and_a_loopback_one_an_answer(local: Served) -> None:
    for host in ("evil.example", f"evil.example:{local.port}", f"127.0.0.1.evil.example:{local.port}"):
        assert refused(post(local, Host=host), "http.bad_host")["details"] == {"host": host}
    for host in (f"127.0.0.1:{local.port}", f"localhost:{local.port}", f"[::1]:{local.port}"):
        response = post(local, Host=host)
        assert response.status_code == 200 and sse_result(response.content)["result"] == {}, host
    # /health answers load balancers by any name
    assert httpx.get(local.base + "/health", headers={"Host": "evil.example"}).status_code == 200


def test_a_foreign_browser_origin_gets_403_and_no_origin_is_no_browser(local: Served) -> None:
    error = refused(post(local, Origin="https://evil.example"), "http.bad_origin")
    assert error["details"] == {"origin": "https://evil.example"}
    refused(post(local, Origin="null"), "http.bad_origin")
    refused(post(local, Host="evil.example", Origin="http://evil.example"), "http.bad_host")
    assert post(local, Origin="http://localhost:6274").status_code == 200  # a local tool's page
    assert post(local).status_code == 200


def test_refusals_are_logged_with_their_code(local: Served) -> None:
    post(local, Host="rebound.example")
    post(local, Origin="https://phishing.example")
    lines = [json.loads(line) for line in local.output().splitlines() if line.startswith("{")]
    codes = [(line["status"], line["error"]) for line in lines if line["error"] in ("http.bad_host", "http.bad_origin")]
    assert (403, "http.bad_host") in codes and (403, "http.bad_origin") in codes


def test_allowed_hosts_and_origins_add_to_the_defaults(library: Path, tmp_path: Path) -> None:
    with serving(library, tmp_path, "--token-file", str(token_file(tmp_path, TOKEN)),
                 "--allowed-hosts", "books.lab.example,*.team.example",
                 "--allowed-origins", "https://app.team.example", secrets=(TOKEN,)) as served:
        bearer = f"Bearer {TOKEN}"
        assert post(served, Host="books.lab.example", Authorization=bearer).status_code == 200
        assert post(served, Host="a.team.example:443", Authorization=bearer).status_code == 200
        assert post(served, Host="localhost", Origin="https://app.team.example", Authorization=bearer).status_code == 200
        assert post(served, Host="books.lab.example", Origin="https://books.lab.example",
                    Authorization=bearer).status_code == 200  # the server's own page
        # refused before any token is asked for
        refused(post(served, Host="evil.example"), "http.bad_host")
        refused(post(served, Origin="https://evil.example"), "http.bad_origin")
        assert post(served, Host="books.lab.example").status_code == 401


@pytest.mark.parametrize("option", [("--allowed-hosts", "books.example.org:8443"),
                                    ("--allowed-origins", "https://app.example.org/path")])
def test_a_malformed_allowlist_is_refused_before_anything_listens(option: tuple[str, str], tmp_path: Path) -> None:
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", "--port", str(free_port()), *option)
    assert out.code == 1 and out.error_code == "http.bad_allowlist"
    assert json.loads(out.stdout)["error"]["details"]["option"] == option[0]
