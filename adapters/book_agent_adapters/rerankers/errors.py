"""The error codes of the rerankers (catalogued in contracts/rerankers.md).

Network-policy refusals keep the shared `network.*` codes of book_agent.domain.network, so
one policy reads the same wherever a request is refused.
"""

from __future__ import annotations

from typing import Any

from book_agent.domain.errors import BookAgentError

CONFIG_INVALID = "rerank.config_invalid"
UNKNOWN_PROVIDER = "rerank.unknown_provider"
PLUGIN_NOT_FOUND = "rerank.plugin_not_found"
PLUGIN_INVALID = "rerank.plugin_invalid"
PLUGIN_FAILED = "rerank.plugin_failed"
PLUGIN_BAD_RESULT = "rerank.plugin_bad_result"
INVALID_REQUEST = "rerank.invalid_request"
ENDPOINT_NOT_LOOPBACK = "rerank.endpoint_not_loopback"
AUTH_MISSING = "rerank.auth_missing"
AUTH_FAILED = "rerank.auth_failed"
RATE_LIMITED = "rerank.rate_limited"
PROVIDER_ERROR = "rerank.provider_error"
TIMEOUT = "rerank.timeout"
UNREACHABLE = "rerank.unreachable"
BAD_RESPONSE = "rerank.bad_response"
PARTIAL_RESULTS = "rerank.partial_results"  # a warning, not an error

REMEDIATION_CONFIG = (
    "Fix the `reranker` section of the book's runtime config "
    "(book-agent configure BOOK --reranker ...), or set the provider to `none`."
)
REMEDIATION_PLUGINS = "Run `book-agent plugins` to list the installed rerankers and their state."


def rerank_error(
    code: str, message: str, remediation: str | None = None, **details: Any
) -> BookAgentError:
    return BookAgentError(code, message, details=details, remediation=remediation)
