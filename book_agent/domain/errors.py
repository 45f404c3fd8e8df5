"""The one error family of book-agent.

    BookAgentError            every failure a user or agent can see (stable `code`)
    └── QueryRuntimeError     query encoding failed (remote policy, provider, local model)

Adapters translate foreign exceptions where they catch them
(`raise BookAgentError(...) from exc`), so no sqlite3/httpx/pypdfium2 exception reaches a
user. Codes are stable dotted strings (`package.hash_mismatch`), catalogued in
contracts/error-codes.md.
"""

# No `from __future__ import annotations`: a TypedDict reads Required/NotRequired at class
# creation, and a string annotation would hide them from __required_keys__.
from typing import Any, NotRequired, TypedDict


class ErrorInfo(TypedDict):
    """BookAgentError.to_dict(): the JSON form of an error."""

    code: str
    message: str
    details: dict[str, Any]
    remediation: str | None
    available_capabilities: NotRequired[list[str]]


class BookAgentError(Exception):
    """A failure with a stable code, a readable message and, where possible, a fix."""

    def __init__(
        self,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        remediation: str | None = None,
        available_capabilities: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.remediation = remediation
        self.available_capabilities = list(available_capabilities or [])

    def to_dict(self) -> ErrorInfo:
        """The JSON form used by `--json` output and MCP tool errors."""
        data: ErrorInfo = {
            "code": self.code,
            "message": self.message,
            "details": self.details,
            "remediation": self.remediation,
        }
        if self.available_capabilities:
            data["available_capabilities"] = self.available_capabilities
        return data

    def __str__(self) -> str:
        text = f"[{self.code}] {self.message}"
        if self.remediation:
            text += f" (fix: {self.remediation})"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class QueryRuntimeError(BookAgentError):
    """Query encoding failed: remote not allowed, provider error, local model unusable."""
