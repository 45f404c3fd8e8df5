"""A library served over streamable HTTP, as an AI host install target (`host install HOST --url URL`).

The host connects to URL instead of starting `book-agent mcp` itself. The bearer token is
never known to book-agent: `token_env` is the NAME of the variable the host reads it from
at run time (only hosts that can do that accept it). Rules (contracts/hosts.md, "A team
server over HTTP"):

- URL: a full http(s) URL with a host, and nothing a credential could hide in: no
  user:password@, no query, no `;params`, no percent-encoded delimiter (the one URL rule of
  domain/network.py, decided by structure, with the host install's own codes), no fragment;
- plain http only to a loopback address (the token would cross the network in clear),
  unless `allow_insecure_http` says the network is trusted (a VPN, a lab LAN);
- token_env: an environment variable name, `[A-Za-z_][A-Za-z0-9_]*`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import endpoint_problem, is_loopback_host

MAX_URL_CHARS = 2048
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


@dataclass(frozen=True)
class RemoteServer:
    """Where a host reaches a served library: its MCP endpoint and the token variable's name."""

    url: str
    token_env: str | None = None

    @property
    def loopback(self) -> bool:
        return is_loopback_host(urlsplit(self.url).hostname or "")


def remote_server(url: str, token_env: str | None = None, *, allow_insecure_http: bool = False) -> RemoteServer:
    """A checked RemoteServer; a URL or variable name that may not be written is a coded error."""
    if not isinstance(url, str) or len(url) > MAX_URL_CHARS:
        raise _bad_url(url, f"longer than {MAX_URL_CHARS} characters")
    if "#" in url:
        raise _bad_url(url, "it has a #fragment")
    problem = endpoint_problem(url)
    if problem is not None:
        code = problem[0]
        if code == "config.endpoint_credentials":
            raise BookAgentError(
                "host.url_credentials", "the URL carries userinfo, a query, parameters or an encoded delimiter, "
                "where a credential could hide; a host config is no place for them",
                details={"url": "(withheld: it may hold credentials)"},
                remediation="pass the bare endpoint, e.g. https://books.example.org/mcp, and the token's variable "
                            "name with --token-env NAME (the token itself is never written)")
        if code != "config.insecure_endpoint" or not allow_insecure_http:
            if code == "config.insecure_endpoint":
                raise BookAgentError(
                    "host.insecure_url", f"{url} is plain HTTP to another machine: the bearer token would cross "
                    "the network in clear", details={"url": url},
                    remediation="use https:// (e.g. a TLS-terminating reverse proxy in front of `book-agent serve`); "
                                "plain http is accepted for localhost, 127.x.x.x and [::1], or with "
                                "--allow-insecure-http on a network you trust (a VPN)")
            raise _bad_url(url, "not a full http(s) URL with a host")
    if token_env is not None and not _ENV_NAME.fullmatch(token_env):
        raise BookAgentError(
            "host.bad_token_env", "--token-env takes the NAME of an environment variable, not a token",
            details={"token_env": "(withheld)"},  # it may be a token pasted by mistake: never echo it
            remediation="export the token in a variable (export BOOK_AGENT_TOKEN=...) and pass its name: "
                        "--token-env BOOK_AGENT_TOKEN")
    return RemoteServer(url, token_env or None)


def _bad_url(url: object, why: str) -> BookAgentError:
    if not isinstance(url, str) or not url.isprintable():
        shown = "(unprintable)"
    elif any(c in url for c in "@?#;%"):
        shown = "(withheld: it may hold credentials)"
    else:
        shown = url[:200]
    return BookAgentError("host.bad_url", f"cannot install {shown!r} as a server URL: {why}",
                          details={"url": shown, "reason": why},
                          remediation="pass the server's MCP endpoint, e.g. https://books.example.org/mcp or "
                                      "http://127.0.0.1:8765/mcp")
