"""One network policy governs every outgoing request (query encoding and rerank alike).

Offline is the default. A request is allowed only when remote requests are switched on
and the URL actually requested equals an entry of `allowed_endpoints` exactly (no prefix
matching, no redirects followed elsewhere). The API key is read from the environment
variable named by `auth_env` at request time; it is never stored, logged or echoed.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from book_agent.domain.config_checks import ConfigError, check_keys, optional_str
from book_agent.domain.errors import BookAgentError, QueryRuntimeError

# Query parameters that carry a secret: a URL is stored, logged and shown, a key must not be.
_SECRET_PARAMS = re.compile(
    r"(x[-_])?(api[-_]?key|key|token|access[-_]?token|secret|password|passwd|auth|sig|signature)", re.IGNORECASE)
_UNSAFE_CHARS = re.compile(r"[\s\\\x00-\x1f\x7f]")
_IPV6_LOOPBACK = ipaddress.IPv6Address("::1")


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
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return address.is_loopback
    return address == _IPV6_LOOPBACK and not address.scope_id


def endpoint_problem(url: Any) -> tuple[str, str, str] | None:
    """(code, message, remediation) for an endpoint URL that may not be used, else None.

    One rule for every URL book-agent may request (allowed endpoints, query and reranker
    endpoints): a full http(s) URL, no credentials in it (user:password@ or a key-like query
    parameter: the key belongs in the variable named by auth_env), and plain http only to
    a loopback host (the key travels in a header).
    """
    bad = ("config.bad_endpoint", f"{url!r} is not a full http(s) URL",
           "pass the exact URL, e.g. https://api.siliconflow.cn/v1/embeddings")
    if not isinstance(url, str) or not url.isprintable() or _UNSAFE_CHARS.search(url):
        return bad  # isprintable: also no lone surrogate (undecodable bytes)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return bad
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return bad
    secret_params = [k for k, _ in parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAMS.fullmatch(k)]
    if "@" in parts.netloc or secret_params:
        what = "user:password@" if "@" in parts.netloc else f"the query parameter {secret_params[0]!r}"
        return ("config.endpoint_credentials", f"the endpoint URL carries credentials ({what})",
                "remove them from the URL; export the key in an environment variable and name it with "
                "--auth-env NAME (the key itself is never stored)")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        return ("config.insecure_endpoint", f"{url} is plain HTTP to another machine",
                "use the provider's https:// URL (plain http is allowed for localhost, 127.x.x.x and [::1] only)")
    return None


def check_endpoint(url: Any, error: type[BookAgentError] = BookAgentError) -> None:
    """Raise `error` with endpoint_problem's code when `url` may not be used."""
    problem = endpoint_problem(url)
    if problem is not None:
        code, message, remediation = problem
        shown = url if problem[0] != "config.endpoint_credentials" else "(withheld: it holds credentials)"
        raise error(code, message, details={"url": shown}, remediation=remediation)


@dataclass(frozen=True)
class NetworkPolicy:
    """The config's `network` section, parsed once (RuntimeConfig.network), and the rule every
    outgoing request passes (`check`)."""

    allow_remote_requests: bool = False
    allowed_endpoints: tuple[str, ...] = field(default_factory=tuple)
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
