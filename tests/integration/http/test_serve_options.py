"""`serve`'s options as plain data: what each `--workers` process builds its server from."""

from __future__ import annotations

from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.auth import JwtSettings
from book_agent.mcp.http.limits import HttpLimits
from book_agent.mcp.http.serve import ServeOptions


def test_the_options_survive_the_trip_to_a_worker() -> None:
    options = ServeOptions("a,b", "/srv/books", "0.0.0.0", 9000, None,
                           JwtSettings("https://idp.example.org", "book-agent", Path("/etc/idp.pem")),
                           HttpLimits(max_body_bytes=4096, read_timeout=2.5), "/var/log/access.log", True,
                           ("books.example.org",), ("https://app.example.org",), 3)
    assert ServeOptions.from_json(options.to_json()) == options
    plain = ServeOptions()
    assert ServeOptions.from_json(plain.to_json()) == plain and plain.allowed_hosts is None


@pytest.mark.parametrize("workers", [0, 65, -1])
def test_a_worker_count_out_of_range_is_refused(workers: int) -> None:
    with pytest.raises(BookAgentError) as info:
        ServeOptions(workers=workers).checked()
    assert info.value.code == "http.bad_limit" and info.value.details["option"] == "--workers"


def test_checked_checks_the_limits_and_the_allowlists() -> None:
    with pytest.raises(BookAgentError) as info:
        ServeOptions(limits=HttpLimits(max_body_bytes=0)).checked()
    assert info.value.code == "http.bad_limit"
    with pytest.raises(BookAgentError) as info:
        ServeOptions(allowed_hosts=("books.example.org:443",)).checked()
    assert info.value.code == "http.bad_allowlist"


def test_every_http_limit_is_a_serve_option_with_the_same_default() -> None:
    # serve builds HttpLimits from its parsed parameters by field name, and a bad limit's error
    # names the flag as --field-name: both hold only while each field has that option.
    import dataclasses

    import typer

    from book_agent.cli.commands import serve_cmd

    app = typer.Typer()
    serve_cmd.register(app)
    serve = typer.main.get_command(app)
    options = {param.name: param for param in serve.params}
    for field in dataclasses.fields(HttpLimits):
        assert field.name in options, f"serve has no option for HttpLimits.{field.name}"
        assert options[field.name].opts == ["--" + field.name.replace("_", "-")]
        assert options[field.name].default == field.default
