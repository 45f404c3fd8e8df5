"""serve's DNS-rebinding protection as a policy: which Host and Origin headers a server answers."""

from __future__ import annotations

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.http.origin import HostPolicy, normal_origin


def test_a_loopback_server_answers_loopback_names_only() -> None:
    policy = HostPolicy.of("127.0.0.1")
    for host in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST", "[::1]:8765", "127.0.0.2", "127.0.0.1"):
        assert policy.problem(host, None) is None, host
    for host in ("evil.example:8765", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example",
                 "127.1", "0.0.0.0:8765", "10.0.0.5", "", None):
        assert policy.problem(host, None) == ("http.bad_host", host or ""), host


def test_a_loopback_server_answers_the_browser_pages_of_loopback_origins_only() -> None:
    policy = HostPolicy.of("127.0.0.1")
    assert policy.problem("127.0.0.1:8765", None) is None  # no Origin: not a browser
    for origin in ("http://localhost:6274", "http://127.0.0.1:8765", "https://[::1]"):
        assert policy.problem("127.0.0.1:8765", origin) is None, origin
    for origin in ("https://evil.example", "http://evil.example:8765", "null", "file://", "not an origin",
                   "http://127.0.0.1.evil.example", ""):
        assert policy.problem("127.0.0.1:8765", origin) == ("http.bad_origin", origin), origin


def test_rebinding_names_the_attackers_host_and_is_refused_even_as_its_own_origin() -> None:
    policy = HostPolicy.of("localhost")
    assert policy.problem("evil.example:8765", "http://evil.example:8765") == ("http.bad_host", "evil.example:8765")


def test_allowed_hosts_add_names_wildcards_and_addresses() -> None:
    policy = HostPolicy.of("127.0.0.1", "books.lab.example.org, *.team.example.org,10.0.0.5 [::2]")
    assert policy.allowed_hosts == ("books.lab.example.org", "*.team.example.org", "10.0.0.5", "::2")
    for host in ("books.lab.example.org", "BOOKS.lab.example.org:443", "a.team.example.org", "10.0.0.5:8765",
                 "[0:0::2]:80", "localhost"):
        assert policy.problem(host, None) is None, host
    for host in ("team.example.org", "lab.example.org", "evil.example"):
        assert policy.problem(host, None) is not None, host
    # the server's own name is its own origin
    assert policy.problem("books.lab.example.org", "https://books.lab.example.org") is None
    assert policy.problem("books.lab.example.org", "https://evil.example") is not None


def test_elsewhere_any_host_unless_a_list_is_given() -> None:
    anywhere = HostPolicy.of("0.0.0.0")
    assert anywhere.problem("books.example.org", None) is None and anywhere.problem("10.1.2.3:8765", None) is None
    assert anywhere.problem("books.example.org", "https://books.example.org") is None  # its own page
    assert anywhere.problem("books.example.org", "http://localhost:3000") == ("http.bad_origin",
                                                                              "http://localhost:3000")
    listed = HostPolicy.of("10.0.0.5", "books.example.org")
    assert listed.problem("books.example.org", None) is None
    assert listed.problem("10.0.0.5:8765", None) is None  # the bound address
    assert listed.problem("localhost:8765", None) is None  # a probe on the machine itself
    assert listed.problem("other.example.org", None) == ("http.bad_host", "other.example.org")
    unspecified = HostPolicy.of("0.0.0.0", "books.example.org")
    assert unspecified.problem("0.0.0.0:8765", None) is not None


def test_allowed_origins_add_origins_and_star_allows_every_one() -> None:
    policy = HostPolicy.of("127.0.0.1", None, "https://app.example.org, http://tools.example.org:8080,null")
    assert policy.allowed_origins == ("https://app.example.org", "http://tools.example.org:8080", "null")
    for origin in ("https://app.example.org", "https://APP.example.org:443", "http://tools.example.org:8080",
                   "null"):
        assert policy.problem("127.0.0.1", origin) is None, origin
    for origin in ("http://app.example.org", "https://app.example.org:8443", "http://tools.example.org"):
        assert policy.problem("127.0.0.1", origin) is not None, origin
    assert HostPolicy.of("127.0.0.1", None, "*").problem("127.0.0.1", "https://anything.example") is None


@pytest.mark.parametrize(("hosts", "origins"), [
    ("books.example.org:8443", None), ("http://books.example.org", None), ("bad/name", None), ("-x.example", None), ("a..b", None),
    (None, "https://app.example.org/path"), (None, "app.example.org"), (None, "https://user@app.example.org"),
    (None, "https://app.example.org?x=1"), (None, "https://app.example.org:99999"),
])
def test_a_malformed_entry_is_refused_at_start(hosts: str | None, origins: str | None) -> None:
    with pytest.raises(BookAgentError) as info:
        HostPolicy.of("127.0.0.1", hosts, origins)
    assert info.value.code == "http.bad_allowlist"
    assert info.value.details["option"] == ("--allowed-hosts" if hosts else "--allowed-origins")


def test_origins_are_compared_in_one_form() -> None:
    assert normal_origin("HTTPS://Example.ORG:443/") == "https://example.org"
    assert normal_origin("http://[::1]:8765") == "http://[::1]:8765"
    assert normal_origin("vscode-webview://abc") == "vscode-webview://abc"
    assert normal_origin("https://example.org/x") is None
