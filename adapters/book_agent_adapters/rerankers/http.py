"""The HTTP rerank client shared by the SiliconFlow and local providers.

It posts JSON to exactly one endpoint through the shared JsonPoster (adapters/http/json_post.py),
which never follows redirects and retries by the one RetryPolicy of every HTTP adapter
(adapters/http/retry_policy.py, the same as query encoding); this
module turns every transport failure and bad status into a BookAgentError with a `rerank.*`
code. The API key is read by the caller at request time,
sent only as a header, and redacted from every message and detail that could reach a user.
Responses are parsed here too: SiliconFlow/Jina `{results: [{index, relevance_score}]}`
and TEI `[{index, score}]`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import redact
from book_agent_adapters.http.json_post import (
    JsonPoster,
    PostTimeout,
    PostTransportError,
    ssl_context,
)
from book_agent_adapters.http.retry_policy import RETRY_STATUSES, RetryPolicy
from book_agent_adapters.http.siliconflow import forbidden_remediation
from book_agent_adapters.rerankers import errors

if TYPE_CHECKING:
    import httpx

__all__ = ["RETRY_STATUSES", "RerankHttpClient", "parse_scores"]
_ssl_context = ssl_context  # the old private name; tools/bench/search/bench_rerank.py imports it from here


class RerankHttpClient:
    def __init__(
        self,
        endpoint: str,
        *,
        timeout: float = 10.0,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
        max_retry_wait: float = 10.0,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        provider: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.provider = provider  # whose answers these are (a SiliconFlow 403 has its own meaning)
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.max_retry_wait = max_retry_wait
        self._injected = client
        policy = RetryPolicy(max_retries=max_retries, backoff=retry_backoff, max_wait=max_retry_wait)
        self._poster = JsonPoster(endpoint, policy=policy, timeout=timeout, client=client, sleep=sleep)

    def client(self) -> httpx.Client:
        return self._poster.client()

    def close(self) -> None:
        self._poster.close()
        if self._injected is not None:  # as before: closing the reranker closes its client too
            self._injected.close()

    def post_json(self, payload: dict[str, Any], api_key: str | None) -> Any:
        try:
            posted = self._poster.post(payload, api_key)
        except PostTimeout as exc:
            raise self._error(errors.TIMEOUT, f"no answer within {self.timeout} s", api_key) from exc.cause
        except PostTransportError as exc:
            raise self._error(errors.UNREACHABLE, f"request failed: {exc.cause}", api_key) from exc.cause
        return self._decode(posted.response, api_key, posted.retries, posted.retry_after)

    def _decode(self, response: httpx.Response, api_key: str | None, retries: int,
                retry_after: float | None) -> Any:
        status = response.status_code
        hint = forbidden_remediation(self.provider, self.endpoint) if status == 403 else None
        if hint:
            raise self._error(errors.AUTH_FAILED, "the provider refused access to the model (HTTP 403)",
                              api_key, remediation=hint, status=status, body=response.text[:300])
        if status in (401, 403):
            raise self._error(errors.AUTH_FAILED, f"the provider refused the API key (HTTP {status})",
                              api_key, status=status, body=response.text[:300])
        if status == 429:
            raise self._error(errors.RATE_LIMITED, f"still rate-limited after {retries} retries (HTTP 429)",
                              api_key, status=status, retries=retries, retry_after_seconds=retry_after)
        if status != 200:
            raise self._error(errors.PROVIDER_ERROR, f"the provider answered HTTP {status}",
                              api_key, status=status, body=response.text[:300])
        try:
            return response.json()
        except ValueError as exc:
            raise self._error(errors.BAD_RESPONSE, "the response is not valid JSON",
                              api_key, body=response.text[:300]) from exc

    def _error(self, code: str, message: str, api_key: str | None, remediation: str | None = None,
               **details: Any) -> BookAgentError:
        details = {k: redact(v, api_key) if isinstance(v, str) else v for k, v in details.items()}
        return errors.rerank_error(
            code,
            redact(f"rerank request to {self.endpoint} failed: {message}", api_key),
            remediation or REMEDIATIONS.get(code),
            endpoint=self.endpoint,
            **details,
        )


REMEDIATIONS = {
    errors.TIMEOUT: "Raise `options.timeout` in the reranker config, or check the reranker service.",
    errors.UNREACHABLE: "Check that the reranker service runs and the endpoint URL is right.",
    errors.AUTH_FAILED: "Set a valid API key in the environment variable named by network.auth_env.",
    errors.RATE_LIMITED: "Wait and retry, raise `options.max_retries`, or use provider `none`.",
    errors.PROVIDER_ERROR: "The reranker service failed; retry later or use provider `none`.",
    errors.BAD_RESPONSE: "Check that the endpoint speaks the configured rerank API.",
}


def parse_scores(data: Any) -> list[tuple[Any, Any]]:
    """Raw (index, score) pairs from either response shape; validation comes later."""
    entries = data.get("results") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise errors.rerank_error(
            errors.BAD_RESPONSE,
            "the reranker's response has no result list",
            REMEDIATIONS[errors.BAD_RESPONSE],
            shape=type(data).__name__,
        )
    pairs: list[tuple[Any, Any]] = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise errors.rerank_error(
                errors.BAD_RESPONSE, "a result entry is not an object",
                REMEDIATIONS[errors.BAD_RESPONSE], position=position,
            )
        score = entry["relevance_score"] if "relevance_score" in entry else entry.get("score")
        pairs.append((entry.get("index"), score))
    return pairs
