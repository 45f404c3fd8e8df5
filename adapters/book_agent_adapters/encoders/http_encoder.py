"""Query encoding over HTTP: SiliconFlow and any OpenAI-compatible embeddings endpoint.

POST {model, input, encoding_format: "float"} -> {"data": [{"embedding": [...]}]}.
Every request first passes the NetworkPolicy (remote switched on, URL listed exactly);
redirects are never followed; retries follow the one RetryPolicy of every HTTP adapter
(adapters/http/retry_policy.py), through the shared JsonPoster (adapters/http/json_post.py).
The API key is read from the environment at request time, sent only in the Authorization
header, and redacted from every error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from book_agent.domain.errors import QueryRuntimeError
from book_agent.domain.network import NetworkPolicy, redact
from book_agent.domain.records import Vector
from book_agent.ports import QueryEncoder
from book_agent_adapters.http.json_post import JsonPoster, PostTimeout, PostTransportError
from book_agent_adapters.http.retry_policy import RETRY_STATUSES, RetryPolicy, retry_after_seconds
from book_agent_adapters.http.siliconflow import forbidden_remediation

if TYPE_CHECKING:
    import httpx

__all__ = ["RETRY_STATUSES", "HttpQueryEncoder"]
_retry_after_seconds = retry_after_seconds  # the old private name; tests import it from here


class HttpQueryEncoder(QueryEncoder):
    """The QueryEncoder port for remote providers. Holds no key; see the module doc."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        dimensions: int,
        policy: NetworkPolicy,
        *,
        provider: str = "openai-compatible",
        query_instruction: str = "",
        client: httpx.Client | None = None,
        timeout: float = 15.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_retry_after: float = 10.0,
        environ: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.endpoint = endpoint
        self.model = model
        self.dimensions = dimensions
        self.policy = policy
        self.provider = provider
        self.query_instruction = query_instruction
        self._route = f"remote:{provider}:{endpoint}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self._environ = environ
        # trust_env=True as before this module was shared: proxy variables still apply here.
        retries = RetryPolicy(max_retries=max_retries, backoff=backoff, max_wait=max_retry_after)
        self._poster = JsonPoster(endpoint, policy=retries, timeout=timeout, client=client, sleep=sleep,
                                  trust_env=True)


    @property
    def route(self) -> str:
        return self._route

    def __repr__(self) -> str:
        return f"HttpQueryEncoder(route={self.route!r}, model={self.model!r})"

    def encode(self, text: str) -> Vector:
        self.policy.check(self.endpoint, purpose="query encoding")  # before any byte is sent
        key = self.policy.api_key(dict(self._environ) if self._environ is not None else None)
        if key is None and (self.provider == "siliconflow" or self.policy.auth_env):
            raise self._error(
                "query.auth_missing",
                f"no API key: the environment variable {self.policy.auth_env!r} is not set"
                if self.policy.auth_env else "no API key: no auth_env is configured",
                None,
                remediation="Set the key in the environment variable named by auth_env "
                "(`book-agent configure BOOK --auth-env NAME`); the key itself is never stored.",
            )
        body = {"model": self.model, "input": self.query_instruction + text,
                "encoding_format": "float"}
        response = self._post(body, key)
        return self._vector(response, key)

    def _post(self, body: dict[str, Any], key: str | None) -> httpx.Response:
        try:
            posted = self._poster.post(body, key)
        except PostTimeout as exc:
            raise self._error("query.timeout",
                              f"the provider did not answer within {self.timeout} s", key,
                              remediation="Retry later, or supply --query-vector.") from exc.cause
        except PostTransportError as exc:
            cause = exc.cause
            raise self._error("query.provider_error",
                              f"cannot reach the provider: {type(cause).__name__}: {cause}", key,
                              remediation="Check the endpoint and the network.") from cause
        return self._check_status(posted.response, key, posted.attempts, posted.retry_after)

    def _check_status(self, response: httpx.Response, key: str | None, attempts: int,
                      retry_after: float | None) -> httpx.Response:
        status = response.status_code
        if 200 <= status < 300:
            return response
        excerpt = redact(response.text[:300], key) if key else response.text[:300]
        details: dict[str, Any] = {"status": status, "attempts": attempts, "body_excerpt": excerpt}
        if retry_after is not None:
            details["retry_after_seconds"] = retry_after
        if 300 <= status < 400:
            details["location"] = response.headers.get("Location")
            raise self._error("query.redirect_refused",
                              f"the provider answered {status} (a redirect); redirects are not followed",
                              key, details, "Configure the final embeddings URL exactly.")
        if status == 403 and (hint := forbidden_remediation(self.provider, self.endpoint)):
            raise self._error("query.auth_failed", "the provider refused access to the model (403)",
                              key, details, hint)
        if status in (401, 403):
            raise self._error("query.auth_failed", f"the provider refused the API key ({status})",
                              key, details, "Check the key in the environment variable named by auth_env.")
        if status == 429:
            raise self._error("query.rate_limited", f"rate limited after {attempts} attempts", key,
                              details, "Wait and retry, or raise your provider quota.")
        raise self._error("query.provider_error", f"the provider answered {status}", key, details,
                          "Retry later; check the endpoint and model name.")

    def _vector(self, response: httpx.Response, key: str | None) -> Vector:
        try:
            payload = response.json()
            values = payload["data"][0]["embedding"]
            vector = np.asarray(values, dtype=np.float64)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise self._error("query.bad_response", "the provider's answer is not an embeddings reply",
                              key, {"body_excerpt": redact(response.text[:300], key)}) from exc
        if vector.ndim != 1:
            raise self._error("query.bad_response", "the provider's embedding is not a list of numbers",
                              key, {"body_excerpt": redact(response.text[:300], key)})
        if vector.size != self.dimensions:
            raise self._error(
                "query.dimension_mismatch",
                f"the provider returned {vector.size} dimensions; the book needs {self.dimensions}",
                key, {"got": int(vector.size), "expected": self.dimensions},
                "The endpoint serves another model than the book's: point it at the book's model.")
        if not (np.abs(vector) <= np.finfo(np.float32).max).all():  # also NaN, and inf as float32
            raise self._error("query.bad_response", "the provider returned non-finite values", key)
        return vector.astype(np.float32)

    def _error(
        self, code: str, message: str, key: str | None, details: dict[str, Any] | None = None,
        remediation: str | None = None,
    ) -> QueryRuntimeError:
        clean = {k: redact(v, key) if isinstance(v, str) else v for k, v in (details or {}).items()}
        clean.update(route=self.route, model=self.model)
        return QueryRuntimeError(code, redact(message, key), details=clean,
                                 remediation=redact(remediation, key) if remediation else None)

    def close(self) -> None:
        self._poster.close()  # closes only a client it built; an injected one is the caller's
