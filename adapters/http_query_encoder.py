"""Query encoding over HTTP: SiliconFlow and any OpenAI-compatible embeddings endpoint.

POST {model, input, encoding_format: "float"} -> {"data": [{"embedding": [...]}]}.
Every request first passes the NetworkPolicy (remote switched on, URL listed exactly);
redirects are never followed; 429 and 5xx are retried a bounded number of times with
backoff (Retry-After honoured, capped). The API key is read from the environment at
request time, sent only in the Authorization header, and redacted from every error.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from book_agent.domain.errors import QueryRuntimeError
from book_agent.domain.network import NetworkPolicy, redact
from book_agent.domain.records import Vector

if TYPE_CHECKING:
    import httpx

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class HttpQueryEncoder:
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
        self.route = f"remote:{provider}:{endpoint}"  # the QueryEncoder port's attribute
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self._client = client
        self._owns_client = client is None
        self._environ = environ
        self._sleep = sleep

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
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        body = {"model": self.model, "input": self.query_instruction + text,
                "encoding_format": "float"}
        response = self._post(body, headers, key)
        return self._vector(response, key)

    def _post(self, body: dict[str, Any], headers: dict[str, str], key: str | None) -> httpx.Response:
        import httpx

        client = self._http()
        for attempt in range(self.max_retries + 1):
            try:
                response = client.post(self.endpoint, json=body, headers=headers,
                                       timeout=self.timeout, follow_redirects=False)
            except httpx.TimeoutException as exc:
                raise self._error("query.timeout",
                                  f"the provider did not answer within {self.timeout} s", key,
                                  remediation="Retry later, or supply --query-vector.") from exc
            except httpx.HTTPError as exc:
                raise self._error("query.provider_error",
                                  f"cannot reach the provider: {type(exc).__name__}: {exc}", key,
                                  remediation="Check the endpoint and the network.") from exc
            if response.status_code not in RETRY_STATUSES or attempt == self.max_retries:
                return self._check_status(response, key, attempt + 1)
            self._sleep(self._delay(response, attempt))
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _delay(self, response: httpx.Response, attempt: int) -> float:
        wanted = _retry_after_seconds(response.headers.get("Retry-After"))
        if wanted is None:
            wanted = self.backoff * (2**attempt)
        return max(0.0, min(wanted, self.max_retry_after))

    def _check_status(self, response: httpx.Response, key: str | None, attempts: int) -> httpx.Response:
        status = response.status_code
        if 200 <= status < 300:
            return response
        excerpt = redact(response.text[:300], key) if key else response.text[:300]
        details = {"status": status, "attempts": attempts, "body_excerpt": excerpt}
        if 300 <= status < 400:
            details["location"] = response.headers.get("Location")
            raise self._error("query.redirect_refused",
                              f"the provider answered {status} (a redirect); redirects are not followed",
                              key, details, "Configure the final embeddings URL exactly.")
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

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=self.timeout, follow_redirects=False)
        return self._client

    def close(self) -> None:
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None


def _retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a number, or an HTTP date (RFC 9110); None if unusable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = parsed.timestamp() - time.time()
    return seconds if math.isfinite(seconds) else None
