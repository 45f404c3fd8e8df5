"""The per-book runtime config: one versioned JSON document in the book's runtime dir.

    {"version": 1,
     "network": {"allow_remote_requests": false, "allowed_endpoints": [], "auth_env": null},
     "query": {"endpoint": null, "model_dir": null},
     "reranker": {"provider": "none", "model": null, "endpoint": null, "factory": null, "options": {}}}

The embedding model is never here: it comes from the package (vectors.json).

Plain dataclasses with strict parsing (unknown keys and wrong types are refused), not
pydantic: this is read on every search, and importing pydantic would cost a cold
`book-agent search` ~100 ms, a third of its budget.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

CONFIG_VERSION = 1


class ConfigError(ValueError):
    """The config document does not have the documented shape."""


def _check_keys(section: str, data: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{section} must be an object, not {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{section}: unknown key(s) {', '.join(unknown)}")
    return data


def _optional_str(section: str, key: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(f"{section}.{key} must be a string or null")


@dataclass
class NetworkSettings:
    allow_remote_requests: bool = False
    allowed_endpoints: list[str] = field(default_factory=list)
    auth_env: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> NetworkSettings:
        data = _check_keys("network", data, {f.name for f in fields(cls)})
        allow = data.get("allow_remote_requests", False)
        endpoints = data.get("allowed_endpoints", [])
        if not isinstance(allow, bool):
            raise ConfigError("network.allow_remote_requests must be true or false")
        if not isinstance(endpoints, list) or not all(isinstance(u, str) for u in endpoints):
            raise ConfigError("network.allowed_endpoints must be a list of URLs")
        return cls(allow, list(endpoints), _optional_str("network", "auth_env", data.get("auth_env")))


@dataclass
class QuerySettings:
    endpoint: str | None = None
    model_dir: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> QuerySettings:
        data = _check_keys("query", data, {f.name for f in fields(cls)})
        return cls(endpoint=_optional_str("query", "endpoint", data.get("endpoint")),
                   model_dir=_optional_str("query", "model_dir", data.get("model_dir")))


@dataclass
class RerankerSettings:
    provider: str = "none"
    model: str | None = None
    endpoint: str | None = None
    factory: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> RerankerSettings:
        data = _check_keys("reranker", data, {f.name for f in fields(cls)})
        provider = data.get("provider", "none")
        options = data.get("options", {})
        if not isinstance(provider, str) or not provider:
            raise ConfigError("reranker.provider must be a non-empty string")
        if not isinstance(options, dict):
            raise ConfigError("reranker.options must be an object")
        return cls(provider=provider, model=_optional_str("reranker", "model", data.get("model")),
                   endpoint=_optional_str("reranker", "endpoint", data.get("endpoint")),
                   factory=_optional_str("reranker", "factory", data.get("factory")), options=dict(options))


@dataclass
class RuntimeConfig:
    version: int = CONFIG_VERSION
    network: NetworkSettings = field(default_factory=NetworkSettings)
    query: QuerySettings = field(default_factory=QuerySettings)
    reranker: RerankerSettings = field(default_factory=RerankerSettings)

    @classmethod
    def from_dict(cls, data: Any) -> RuntimeConfig:
        data = _check_keys("config", data, {f.name for f in fields(cls)})
        version = data.get("version", CONFIG_VERSION)
        if version != CONFIG_VERSION:
            raise ConfigError(f"config version {version!r} is not supported (supported: {CONFIG_VERSION})")
        return cls(
            version=CONFIG_VERSION,
            network=NetworkSettings.from_dict(data.get("network", {})),
            query=QuerySettings.from_dict(data.get("query", {})),
            reranker=RerankerSettings.from_dict(data.get("reranker", {})),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_config_endpoints(config: RuntimeConfig) -> None:
    """Every URL the config may request passes the one endpoint rule (domain/network.py)."""
    from book_agent.domain.network import check_endpoint

    for url in [*config.network.allowed_endpoints, config.query.endpoint, config.reranker.endpoint]:
        if url is not None:
            check_endpoint(url)
