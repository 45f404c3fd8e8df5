"""The per-book runtime config: one versioned JSON document in the book's runtime dir.

    {"version": 1,
     "network": {"allow_remote_requests": false, "allowed_endpoints": [], "auth_env": null},
     "query": {"endpoint": null, "model_dir": null},
     "reranker": {"provider": "none", "model": null, "endpoint": null, "factory": null, "options": {}}}

The embedding model is never here: it comes from the package (vectors.json).

One model per section, each parsing its section once: `NetworkPolicy` (domain/network.py,
the policy every outgoing request passes), `QuerySettings`, `RerankerSettings`; the reranker
adapters read these models (adapters/rerankers/config.py), never the raw section again.
Plain dataclasses with strict parsing (unknown keys and wrong types are refused), not
pydantic: this is read on every search, and importing pydantic would cost a cold
`book-agent search` ~100 ms, a third of its budget.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from book_agent.domain.config_checks import ConfigError, check_keys, optional_str
from book_agent.domain.network import NetworkPolicy

__all__ = ["CONFIG_VERSION", "ConfigError", "NetworkPolicy", "QuerySettings", "RerankerSettings", "RuntimeConfig",
           "check_config_endpoints"]

CONFIG_VERSION = 1


@dataclass
class QuerySettings:
    """The book's query encoding settings: a remote endpoint, a local model folder."""

    endpoint: str | None = None
    model_dir: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> QuerySettings:
        data = check_keys("query", data, {f.name for f in fields(cls)})
        return cls(endpoint=optional_str("query", "endpoint", data.get("endpoint")),
                   model_dir=optional_str("query", "model_dir", data.get("model_dir")))


@dataclass
class RerankerSettings:
    """The book's reranker: a provider (or plug-in factory), its model, endpoint and options."""

    provider: str = "none"
    model: str | None = None
    endpoint: str | None = None
    factory: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> RerankerSettings:
        data = check_keys("reranker", data, {f.name for f in fields(cls)})
        provider = data.get("provider", "none")
        options = data.get("options", {})
        if not isinstance(provider, str) or not provider:
            raise ConfigError("reranker.provider must be a non-empty string")
        if not isinstance(options, dict):
            raise ConfigError("reranker.options must be an object")
        return cls(provider=provider, model=optional_str("reranker", "model", data.get("model")),
                   endpoint=optional_str("reranker", "endpoint", data.get("endpoint")),
                   factory=optional_str("reranker", "factory", data.get("factory")), options=dict(options))


@dataclass
class RuntimeConfig:
    """A book's runtime config (config.json in its runtime dir): network policy, query, reranker."""

    version: int = CONFIG_VERSION
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    query: QuerySettings = field(default_factory=QuerySettings)
    reranker: RerankerSettings = field(default_factory=RerankerSettings)

    @classmethod
    def from_dict(cls, data: Any) -> RuntimeConfig:
        data = check_keys("config", data, {f.name for f in fields(cls)})
        version = data.get("version", CONFIG_VERSION)
        if version != CONFIG_VERSION:
            raise ConfigError(f"config version {version!r} is not supported (supported: {CONFIG_VERSION})")
        return cls(
            version=CONFIG_VERSION,
            network=NetworkPolicy.from_dict(data.get("network", {})),
            query=QuerySettings.from_dict(data.get("query", {})),
            reranker=RerankerSettings.from_dict(data.get("reranker", {})),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "network": self.network.to_dict(), "query": asdict(self.query),
                "reranker": asdict(self.reranker)}


def check_config_endpoints(config: RuntimeConfig) -> None:
    """Every URL the config may request passes the one endpoint rule (domain/network.py)."""
    from book_agent.domain.network import check_endpoint

    for url in [*config.network.allowed_endpoints, config.query.endpoint, config.reranker.endpoint]:
        if url is not None:
            check_endpoint(url)
