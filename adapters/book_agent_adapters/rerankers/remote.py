"""The HTTP rerankers: SiliconFlow (remote, under the network policy) and a local service.

SiliconFlowReranker posts `{model, query, documents, top_n, return_documents: false}` to the
SiliconFlow rerank API (or the configured endpoint); every request passes the book's one
NetworkPolicy and carries a Bearer key from the variable named by `auth_env`.
LocalHttpReranker talks to a reranker on this machine: TEI `/rerank` (`{query, texts}` ->
`[{index, score}]`) or Jina/SiliconFlow-style `/v1/rerank`. Its endpoint must be a loopback
address; loopback needs no `allow_remote_requests`, and only that exact URL is requested.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import NetworkPolicy, endpoint_problem, is_loopback_host, shown_url
from book_agent.domain.providers import SILICONFLOW_RERANK_ENDPOINT
from book_agent.domain.search.search_results import ProviderInfo, RerankHealth
from book_agent_adapters.rerankers import errors
from book_agent_adapters.rerankers.base import ScoringReranker
from book_agent_adapters.rerankers.config import RerankConfig
from book_agent_adapters.rerankers.http import RerankHttpClient, parse_scores

if TYPE_CHECKING:
    import httpx

SILICONFLOW_MODEL = "BAAI/bge-reranker-v2-m3"


def http_client(config: RerankConfig, endpoint: str, client: httpx.Client | None) -> RerankHttpClient:
    return RerankHttpClient(
        endpoint,
        timeout=float(config.option("timeout", (int, float), 10.0)),
        max_retries=int(config.option("max_retries", int, 2)),
        retry_backoff=float(config.option("retry_backoff", (int, float), 0.5)),
        max_retry_wait=float(config.option("max_retry_wait", (int, float), 10.0)),
        client=client,
        provider=config.provider,
    )


class HttpReranker(ScoringReranker):
    remote = True

    def __init__(self, config: RerankConfig, endpoint: str, client: httpx.Client | None = None) -> None:
        self.endpoint = endpoint
        self.policy: NetworkPolicy = config.network
        self.strict = config.strict
        self.http = http_client(config, endpoint, client)

    def api_key(self) -> str | None:
        return self.policy.api_key()

    def preflight(self) -> str | None:
        """Checks made before any request; returns the key to send (read just now)."""
        return self.api_key()

    def request(self, query: str, texts: list[str], top_n: int) -> dict[str, Any]:
        raise NotImplementedError

    def score(self, query: str, texts: list[str], top_n: int) -> list[tuple[Any, Any]]:
        key = self.preflight()
        return parse_scores(self.http.post_json(self.request(query, texts, top_n), key))

    def healthcheck(self) -> RerankHealth:
        try:
            self.preflight()
        except BookAgentError as exc:
            return {**self._health(), "ok": False, "error": exc.to_dict()}
        return self._health()

    def _health(self) -> RerankHealth:
        return {"ok": True, "provider": self.provider, "model": self.model, "endpoint": self.endpoint,
                "checks": ["config"], "error": None}

    def provider_info(self) -> ProviderInfo:
        return {**super().provider_info(), "endpoint": self.endpoint, "remote": self.remote,
                "auth_env": self.policy.auth_env}

    def close(self) -> None:
        self.http.close()


class SiliconFlowReranker(HttpReranker):
    provider = "siliconflow"

    def __init__(self, config: RerankConfig, client: httpx.Client | None = None) -> None:
        super().__init__(config, config.endpoint or SILICONFLOW_RERANK_ENDPOINT, client)
        self.model = config.model or SILICONFLOW_MODEL
        _require_http_url(self.endpoint)

    def preflight(self) -> str | None:
        try:
            self.policy.check(self.endpoint, purpose="rerank")
        except BookAgentError as exc:
            raise BookAgentError(
                exc.code, exc.message, details=exc.details,
                remediation=f"Allow it: book-agent configure BOOK --allow-remote --allowed-endpoint "
                f"{self.endpoint} --auth-env NAME_OF_KEY_VARIABLE (or use reranker `none`)",
            ) from exc
        key = self.api_key()
        if not key:
            raise errors.rerank_error(
                errors.AUTH_MISSING,
                "the SiliconFlow reranker needs an API key and none is set",
                "Put the key in an environment variable and name it: "
                "book-agent configure BOOK --auth-env SILICONFLOW_API_KEY",
                auth_env=self.policy.auth_env,
            )
        return key

    def request(self, query: str, texts: list[str], top_n: int) -> dict[str, Any]:
        return {"model": self.model, "query": query, "documents": texts, "top_n": top_n,
                "return_documents": False}


class LocalHttpReranker(HttpReranker):
    provider = "local"
    remote = False

    def __init__(self, config: RerankConfig, client: httpx.Client | None = None) -> None:
        if not config.endpoint:
            raise errors.rerank_error(
                errors.CONFIG_INVALID, "the local reranker needs an endpoint",
                "Set reranker.endpoint, e.g. http://127.0.0.1:8080/rerank (TEI).",
            )
        require_loopback(config.endpoint)
        super().__init__(config, config.endpoint, client)
        self.model = config.model
        api = config.option("api", str, "auto")
        if api == "auto":
            api = "jina" if urlsplit(self.endpoint).path.rstrip("/").endswith("/v1/rerank") else "tei"
        if api not in ("tei", "jina"):
            raise errors.rerank_error(errors.CONFIG_INVALID, f"unknown local rerank api {api!r}",
                                      "Set options.api to tei, jina or auto.")
        self.api = api

    def request(self, query: str, texts: list[str], top_n: int) -> dict[str, Any]:
        if self.api == "tei":
            return {"query": query, "texts": texts, "return_text": False}
        payload: dict[str, Any] = {"query": query, "documents": texts, "top_n": top_n,
                                   "return_documents": False}
        if self.model:
            payload["model"] = self.model
        return payload

    def provider_info(self) -> ProviderInfo:
        return {**super().provider_info(), "api": self.api}


def _require_http_url(url: str, plain_http_checked_later: bool = False) -> None:
    """A usable endpoint by the one rule of domain/network.py (no credentials in it, plain
    http only to loopback), reported with that rule's code."""
    problem = endpoint_problem(url)
    if problem is None or (plain_http_checked_later and problem[0] == "config.insecure_endpoint"):
        return
    code, message, remediation = problem
    withheld = shown_url(url) != repr(url)  # it has a part a credential could hide in
    if code == "config.bad_endpoint":  # as before: a malformed URL is a reranker config error
        raise errors.rerank_error(errors.CONFIG_INVALID, f"not an http(s) URL: {shown_url(url)}",
                                  errors.REMEDIATION_CONFIG, endpoint="(withheld: it may hold credentials)"
                                  if withheld else url)
    raise errors.rerank_error(code, message, remediation,
                              endpoint="(withheld: it may hold credentials)" if withheld else url)


def require_loopback(url: str) -> None:
    _require_http_url(url, plain_http_checked_later=True)  # not loopback is the sharper error
    if not is_loopback_host(urlsplit(url).hostname or ""):
        raise errors.rerank_error(
            errors.ENDPOINT_NOT_LOOPBACK,
            f"the local reranker's endpoint {url} is not on this machine",
            "Use a loopback address (127.0.0.1, localhost, [::1]); for a remote service use "
            "provider `siliconflow` under the network policy.",
            endpoint=url,
        )
