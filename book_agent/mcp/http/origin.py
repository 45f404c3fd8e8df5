"""DNS-rebinding protection for `serve`: the Host a request names, the Origin a browser sends.

A web page can make its visitor's browser send requests to `http://127.0.0.1:PORT/mcp`: with DNS
rebinding (`evil.example` resolving first to the attacker, then to 127.0.0.1) the browser even
takes the server for the page's own origin and lets the page read the answers. The MCP
specification therefore requires servers to validate `Origin`. Every request to the MCP endpoint
passes two checks, before authentication and before FastMCP sees it:

- **Host.** Bound to a loopback address (`127.0.0.1`, `::1`, `localhost`), a request must name a
  loopback host (`localhost`, `127.x.x.x`, `[::1]`, any port) or one of `--allowed-hosts`: a
  rebinding page names its own domain, and is refused. Bound to any other address (`0.0.0.0`, a
  LAN or public address), any Host is accepted unless `--allowed-hosts` is given; then only those,
  the bound address and the loopback names. (Such a server requires tokens, which a browser never
  attaches by itself, and is reached by names `serve` cannot know: a DNS name, a proxy's.)
- **Origin.** A request without `Origin` is not from a browser page, and is allowed. A browser's
  `Origin` must be one of `--allowed-origins` (`*`: any), or name the host the request was sent to
  (the page is the server's own), or, on a loopback-bound server, a loopback host (a local tool
  such as the MCP Inspector's web page).

A refusal is 403 with the CLI's JSON error (`http.bad_host`, `http.bad_origin`). `/health` is not
checked: load balancers probe it by whatever name they use, and it tells nothing.

Why ours and not the SDK's or FastMCP's guard (issue 47 compared them, fastmcp 4.2, mcp 2.3):
`serve` turns FastMCP's `HostOriginGuardMiddleware` off (`host_origin_protection=False`; the SDK's
`TransportSecuritySettings` guard is already off under FastMCP) so that one policy decides. A
wrapper could recode their refusals (plain-text 421 "Misdirected Request" / 403; the SDK's 421
"Invalid Host header", 400 for a POST without a JSON Content-Type) as our 403 JSON, but neither
can express the rules above (tests/unit/test_http_origin.py):
- loopback is `127.0.0.0/8`, `::1` in any written form (`[0:0::1]`) and `localhost`: their lists
  match strings (the SDK exactly, FastMCP by `fnmatch`), and no pattern takes `127.0.0.2` without
  also taking `127.0.0.1.evil.example`;
- a server's own page is the Origin naming the Host's name: FastMCP compares scheme and port too,
  so behind a TLS-terminating proxy (`https://books.example.org` calling a server that sees
  `http`) the server's own page is refused;
- bound to `0.0.0.0` with no list, any Host is answered but a browser's Origin is still checked:
  FastMCP's `auto` then checks neither, its strict mode answers only loopback names and the
  socket's own address;
- a malformed `--allowed-hosts`/`--allowed-origins` entry is refused at start
  (`http.bad_allowlist`); theirs take any string and never match it;
- `/health` is not checked (load balancers probe it by any name): FastMCP's guard wraps every
  route, and sits outside our access log, so its refusals would leave no log line; the SDK's runs
  inside the MCP endpoint, after authentication (a wrong Host would be asked for a token first).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import is_loopback_host
from book_agent.mcp.http.refusals import App, Receive, Scope, Send, header, note_of

MAX_SHOWN = 200  # a Host or Origin quoted in a refusal is cut to this
_NAME = re.compile(r"^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")
DEFAULT_PORTS = {"http": 80, "https": 443}


def host_name(value: str) -> str:
    """The host part of a Host header value or an allowlist entry, lower case, without the
    port or IPv6 brackets ('' when there is none)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else value
    if value.count(":") == 1:
        return value.rsplit(":", 1)[0]
    return value


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _canon(name: str) -> str:
    """An IP address in its one written form (`0:0::1` is `::1`); a name as it is."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def _bad_list(option: str, entry: str, why: str, example: str) -> BookAgentError:
    return BookAgentError("http.bad_allowlist", f"{option}: {entry[:MAX_SHOWN]!r} {why}",
                          details={"option": option, "entry": entry[:MAX_SHOWN]},
                          remediation=f"give comma-separated entries such as {example}")


def split_list(text: str | Iterable[str] | None) -> list[str]:
    """`a,b c` (or several options) as entries."""
    if text is None:
        return []
    items = [text] if isinstance(text, str) else list(text)
    return [word for item in items for word in re.split(r"[\s,]+", item) if word]


def checked_hosts(entries: Iterable[str]) -> tuple[str, ...]:
    """`--allowed-hosts`: DNS names (`*.example.org` for every subdomain), IP addresses, or `*`."""
    found = []
    for entry in entries:
        name = entry.strip().lower()
        bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
        if name == "*" or _is_address(bare):
            found.append(_canon(bare))
        elif ":" in name:
            raise _bad_list("--allowed-hosts", entry, "has a port: name the host only (any port is accepted)",
                            "books.example.org, 10.0.0.5, *.lab.example.org")
        elif _NAME.match(name):
            found.append(name.rstrip("."))
        else:
            raise _bad_list("--allowed-hosts", entry, "is not a host name or an IP address",
                            "books.example.org, 10.0.0.5, *.lab.example.org")
    return tuple(dict.fromkeys(found))


def normal_origin(origin: str) -> str | None:
    """`scheme://host[:port]` in lower case, the scheme's default port left out; None when it
    is not an origin (a path, user info, no host), and "null" for the opaque origin."""
    origin = origin.strip()
    if origin.lower() == "null":
        return "null"
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not _SCHEME.match(scheme) or not parts.hostname or "@" in parts.netloc or parts.query or parts.fragment \
            or parts.path not in ("", "/"):
        return None
    name = parts.hostname.lower()
    shown = f"[{name}]" if ":" in name else name
    return f"{scheme}://{shown}" + (f":{port}" if port is not None and port != DEFAULT_PORTS.get(scheme) else "")


def checked_origins(entries: Iterable[str]) -> tuple[str, ...]:
    """`--allowed-origins`: `scheme://host[:port]` (as a browser sends it), `null`, or `*`."""
    found = []
    for entry in entries:
        normal = "*" if entry.strip() == "*" else normal_origin(entry)
        if normal is None:
            raise _bad_list("--allowed-origins", entry, "is not an origin (scheme://host[:port], no path)",
                            "https://books.example.org, http://localhost:6274")
        found.append(normal)
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class HostPolicy:
    """Which Host and Origin headers a server bound to `bind` answers (see the module doc)."""

    bind: str
    allowed_hosts: tuple[str, ...] | None = None  # None: no list given
    allowed_origins: tuple[str, ...] = ()

    @classmethod
    def of(cls, bind: str, allowed_hosts: Iterable[str] | str | None = None,
           allowed_origins: Iterable[str] | str | None = None) -> HostPolicy:
        """The policy for these options; a malformed entry is `http.bad_allowlist`."""
        hosts = split_list(allowed_hosts)
        return cls(bind, checked_hosts(hosts) if hosts else None, checked_origins(split_list(allowed_origins)))

    @property
    def loopback(self) -> bool:
        return is_loopback_host(self.bind)

    def checks_host(self) -> bool:
        return self.loopback or self.allowed_hosts is not None

    def host_allowed(self, name: str) -> bool:
        if is_loopback_host(name):
            return True
        bound = _canon(host_name(self.bind))
        if name and name == bound and not (_is_address(bound) and ipaddress.ip_address(bound).is_unspecified):
            return True
        return any(pattern == "*" or fnmatchcase(name, pattern) for pattern in self.allowed_hosts or ())

    def origin_allowed(self, origin: str, host: str) -> bool:
        if "*" in self.allowed_origins:
            return True
        normal = normal_origin(origin)
        if normal is None:
            return False
        if normal in self.allowed_origins:
            return True
        if normal == "null":
            return False
        origin_host = _canon(host_name(normal.split("://", 1)[1]))
        return (bool(host) and origin_host == host) or (self.loopback and is_loopback_host(origin_host))

    def problem(self, host_header: str | None, origin_header: str | None) -> tuple[str, str] | None:
        """(code, the header's value) when a request must be refused, else None."""
        host = _canon(host_name(host_header or ""))
        if self.checks_host() and not (host and self.host_allowed(host)):
            return "http.bad_host", host_header or ""
        if origin_header is not None and not self.origin_allowed(origin_header, host):
            return "http.bad_origin", origin_header
        return None


def refusal(code: str, value: str) -> BookAgentError:
    shown = value[:MAX_SHOWN]
    if code == "http.bad_host":
        return BookAgentError(
            code, f"this server does not answer requests for the host {shown!r}" if shown
            else "the request names no host", details={"host": shown},
            remediation="connect to the address the server listens on; a server reached by another name "
                        "(a DNS name, a proxy that forwards its own Host) needs `serve --allowed-hosts NAME`")
    return BookAgentError(
        code, f"requests from the web origin {shown!r} are not allowed", details={"origin": shown},
        remediation="clients other than browsers send no Origin; a browser page may call this server only "
                    "from its own origin or one given with `serve --allowed-origins ORIGIN`")


class HostOriginGuard:
    """ASGI middleware: 403 for a request whose Host or Origin the policy refuses."""

    def __init__(self, app: App, policy: HostPolicy, unchecked_paths: Iterable[str] = ()) -> None:
        self.app = app
        self.policy = policy
        self.unchecked_paths = frozenset(unchecked_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.unchecked_paths:
            await self.app(scope, receive, send)
            return
        raw_host, raw_origin = header(scope, b"host"), header(scope, b"origin")
        found = self.policy.problem(raw_host.decode("latin-1") if raw_host is not None else None,
                                    raw_origin.decode("latin-1") if raw_origin is not None else None)
        if found is None:
            await self.app(scope, receive, send)
            return
        error = refusal(*found)
        note_of(scope)["error"] = error.code
        body = json.dumps({"error": error.to_dict()}, ensure_ascii=True).encode("ascii")
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body, "more_body": False})
