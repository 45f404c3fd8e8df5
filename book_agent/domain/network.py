"""One network policy governs every outgoing request (query encoding and rerank alike).

Offline is the default. A request is allowed only when remote requests are switched on
and the URL actually requested equals an entry of `allowed_endpoints` exactly (no prefix
matching, no redirects followed elsewhere). The API key is read from the environment
variable named by `auth_env` at request time; it is never stored, logged or echoed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from book_agent.domain.errors import QueryRuntimeError


@dataclass(frozen=True)
class NetworkPolicy:
    allow_remote_requests: bool = False
    allowed_endpoints: tuple[str, ...] = field(default_factory=tuple)
    auth_env: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> NetworkPolicy:
        data = data or {}
        return cls(
            allow_remote_requests=bool(data.get("allow_remote_requests", False)),
            allowed_endpoints=tuple(str(u) for u in data.get("allowed_endpoints") or ()),
            auth_env=data.get("auth_env") or None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "allow_remote_requests": self.allow_remote_requests,
            "allowed_endpoints": list(self.allowed_endpoints),
            "auth_env": self.auth_env,
        }

    def check(self, url: str, purpose: str = "request") -> None:
        """Raise unless a request to exactly `url` is allowed. Makes no request itself."""
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
