"""One network policy governs every outgoing request (query encoding and rerank alike).

Offline is the default. A request is allowed only when remote requests are switched on
and the URL actually requested equals an entry of `allowed_endpoints` exactly (no prefix
matching, no redirects followed elsewhere). The API key is read from the environment
variable named by `auth_env` at request time; it is never stored, logged or echoed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from book_agent.domain.config_checks import ConfigError, check_keys, optional_str
from book_agent.domain.errors import BookAgentError, QueryRuntimeError
from book_agent.lazy import LazyPattern

_UNSAFE_CHARS = LazyPattern(r"[\s\\\x00-\x1f\x7f]")  # both compiled when an endpoint is first judged
# A delimiter written percent-encoded (or a percent sign itself, for a double encoding): a server
# that decodes the path before routing would read a query, a fragment, params or userinfo there.
_ENCODED_DELIMITER = LazyPattern(r"%(3f|23|3b|40|3d|26|25)", re.IGNORECASE)
# ipaddress and urllib.parse are imported where an endpoint is judged: a search whose config
# names no endpoint (every offline book) never judges one, and the two cost ~3 ms of a cold start


def is_loopback_host(host: str) -> bool:
    """True only for `localhost` and literal loopback addresses: 127.0.0.0/8 written as a
    canonical dotted quad, and ::1 (with or without brackets).

    A DNS name can point anywhere, so `127.evil.example` is not loopback; neither are the
    forms that resolvers parse differently from `ipaddress` (`127.1`, `0x7f.1`, `2130706433`,
    `0177.0.0.1`), `localhost.` (a trailing dot may go to DNS), `*.localhost`, IPv4-mapped
    (`::ffff:127.0.0.1`) or zoned (`::1%lo`) IPv6: a check must judge exactly what is dialled.
    """
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if name.lower() == "localhost":
        return True
    import ipaddress

    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return address.is_loopback
    return address == ipaddress.IPv6Address("::1") and not address.scope_id


def endpoint_problem(url: Any) -> tuple[str, str, str] | None:
    """(code, message, remediation) for an endpoint URL that may not be used, else None.

    One rule for every URL book-agent may request (allowed endpoints, query and reranker
    endpoints): a full http(s) URL; nothing a credential could hide in, decided by structure,
    not by a list of names (`?client_secret=`, `?X-Amz-Signature=`, `#access_token=`,
    `;token=` and `?%74oken=` alike): no userinfo (`user:password@`), no query, no fragment,
    no `;params`, no percent-encoded delimiter in the path (the key belongs in the variable
    named by auth_env); and plain http only to a loopback host (the key travels in a header).
    """
    bad = ("config.bad_endpoint", f"{shown_url(url)} is not a full http(s) URL",
           "pass the exact URL, e.g. https://api.siliconflow.cn/v1/embeddings")
    if not isinstance(url, str) or not url.isprintable() or _UNSAFE_CHARS.search(url):
        return bad  # isprintable: also no lone surrogate (undecodable bytes)
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return bad
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return bad
    carried = carried_part(url)
    if carried is not None:
        return ("config.endpoint_credentials",
                f"the endpoint URL carries {carried}, where a credential could hide (the URL is stored and shown)",
                f"pass the bare endpoint, without {carried}; put the key in the environment variable the config "
                "names (auth_env, set with --auth-env NAME) and export it there: the key itself is never stored")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        return ("config.insecure_endpoint", f"{url} is plain HTTP to another machine",
                "use the provider's https:// URL (plain http is allowed for localhost, 127.x.x.x and [::1] only)")
    return None


def carried_part(url: str) -> str | None:
    """The part of `url` (an http(s) URL) beyond scheme, host, port and path, named (never
    quoted: it may be the secret), else None."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if "@" in parts.netloc:
        return "userinfo (user:password@)"
    if "%" in parts.netloc:
        return "a percent-encoded host or port"
    if "?" in url:
        return "a query (?...)"
    if "#" in url:
        return "a fragment (#...)"
    if ";" in parts.path:
        return "parameters (;...)"
    if _ENCODED_DELIMITER.search(parts.path):
        return "a percent-encoded delimiter (%3F, %23, %3B, %40, %3D, %26 or %25)"
    return None


def shown_url(url: Any) -> str:
    """`url` as an error may show it: withheld when it has a part a credential could hide in
    (or is not a printable string)."""
    if not isinstance(url, str) or not url.isprintable() or any(c in url for c in "@?#;%"):
        return "(withheld: it may hold credentials)" if isinstance(url, str) else repr(url)[:100]
    return repr(url)


def check_endpoint(url: Any, error: type[BookAgentError] = BookAgentError) -> None:
    """Raise `error` with endpoint_problem's code when `url` may not be used."""
    problem = endpoint_problem(url)
    if problem is not None:
        code, message, remediation = problem
        shown = url if shown_url(url) == repr(url) else "(withheld: it may hold credentials)"
        raise error(code, message, details={"url": shown}, remediation=remediation)


class NetworkPolicy(NamedTuple):
    """The config's `network` section, parsed once (RuntimeConfig.network), and the rule every
    outgoing request passes (`check`)."""

    allow_remote_requests: bool = False
    allowed_endpoints: tuple[str, ...] = ()
    auth_env: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> NetworkPolicy:
        """The config's `network` section, strictly: unknown keys and wrong types raise ConfigError."""
        data = check_keys("network", data, {"allow_remote_requests", "allowed_endpoints", "auth_env"})
        allow = data.get("allow_remote_requests", False)
        endpoints = data.get("allowed_endpoints", [])
        if not isinstance(allow, bool):
            raise ConfigError("network.allow_remote_requests must be true or false")
        if not isinstance(endpoints, list | tuple) or not all(isinstance(u, str) for u in endpoints):
            raise ConfigError("network.allowed_endpoints must be a list of URLs")
        return cls(allow, tuple(endpoints), optional_str("network", "auth_env", data.get("auth_env")) or None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "allow_remote_requests": self.allow_remote_requests,
            "allowed_endpoints": list(self.allowed_endpoints),
            "auth_env": self.auth_env,
        }

    def check(self, url: str, purpose: str = "request") -> None:
        """Raise unless a request to exactly `url` is allowed. Makes no request itself."""
        check_endpoint(url, QueryRuntimeError)  # an allowed entry cannot hold a key or go plain http
        if not self.allow_remote_requests:
            raise QueryRuntimeError(
                "network.remote_not_allowed",
                f"remote {purpose} to {url} is not allowed: remote requests are off",
                details={"url": url},
                remediation=(
                    "book-agent configure BOOK --allow-remote --allowed-endpoint " + url
                    + " --auth-env NAME_OF_KEY_VARIABLE (or supply --query-vector)"
                ),
            )
        if url not in self.allowed_endpoints:
            raise QueryRuntimeError(
                "network.endpoint_not_allowed",
                f"remote {purpose} to {url} is not allowed: it is not an allowed endpoint",
                details={"url": url, "allowed_endpoints": list(self.allowed_endpoints)},
                remediation=f"book-agent configure BOOK --allowed-endpoint {url}",
            )

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key from the environment variable named by auth_env (None if unset)."""
        if not self.auth_env:
            return None
        env: Mapping[str, str] = os.environ if environ is None else environ
        value = env.get(self.auth_env)
        return value or None


def redact(text: str, secret: str | None) -> str:
    """Remove a secret from text that may reach a user, a log or an error."""
    if secret:
        text = text.replace(secret, "***")
    return text
