"""Issue 25, item 4: `serve` says on stderr where it listens, what it serves and with which
authentication once it listens, and says when it stops (a real server process, SIGTERM)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from book_agent.mcp.auth import JwtSettings
from book_agent.mcp.http.serve import ServeOptions
from tests.support.http_serve import start_server, stop_server
from tests.support.library_support import three_book_library


def test_serve_announces_where_what_how_and_its_stop(tmp_path: Path) -> None:
    data = three_book_library(tmp_path)
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(hashlib.sha256(b"a-team-token").hexdigest() + "\n", encoding="utf-8")
    served = start_server(data, tmp_path, "--token-file", str(tokens))
    started = served.output()
    assert f"listening on http://127.0.0.1:{served.port}/mcp" in started, started
    assert "@all: every registered book" in started and "part-0, part-1, part-2" in started
    assert f"bearer tokens (SHA-256 digests in {tokens})" in started
    assert "stopped" not in started
    stop_server(served)
    stopped = served.output()
    assert "book-agent serve: stopping" in stopped and stopped.rstrip().endswith("book-agent serve: stopped")
    assert "a-team-token" not in stopped


@pytest.mark.parametrize(("options", "says"), [
    (ServeOptions(), "none: loopback clients only"),
    (ServeOptions(token_file="/etc/team-tokens"), "bearer tokens (SHA-256 digests in /etc/team-tokens)"),
    (ServeOptions(jwt=JwtSettings("https://id.example.org", "books", jwks_url="https://id.example.org/jwks")),
     "JWT signed by https://id.example.org/jwks (issuer https://id.example.org, audience books, exp required)"),
        (ServeOptions(jwt=JwtSettings("https://id.example.org", "books", jwks_url="https://id.example.org/jwks",
                                      max_lifetime_s=3600, allow_no_exp=True)),
         "(issuer https://id.example.org, audience books, no exp allowed, at most 3600 s)"),
])
def test_the_authentication_named(options: ServeOptions, says: str) -> None:
    from book_agent.cli.commands.serve_cmd import serving_lines

    lines = serving_lines(options, [{"book_id": "a"}])
    assert any(says in line for line in lines), lines
    assert lines[0].startswith("book-agent serve: listening on http://127.0.0.1:8765/mcp")


def test_a_named_book_list_and_workers_are_said() -> None:
    from book_agent.cli.commands.serve_cmd import serving_lines

    lines = serving_lines(ServeOptions(book_ref="a,b", host="::1", port=9000, workers=3), [])
    assert lines[0] == ("book-agent serve: listening on http://[::1]:9000/mcp (MCP streamable HTTP, 3 worker "
                        "processes; health: http://[::1]:9000/health)")
    assert "  serving         a,b" in lines
