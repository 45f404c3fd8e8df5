"""Reads a reranker config in any of the shapes callers hold, through the config's own models.

Accepted: None (provider `none`); the flat reranker dict
`{provider, model, endpoint, factory, options, network: {...}, strict}` (the network keys may
also sit at the top level, as in contracts.md); the book's full runtime-config dict
`{version, network, query, reranker: {...}}`; or the models of book_agent.domain.book.runtime_config
(`RuntimeConfig`, `RerankerSettings`). The sections are parsed by those models only
(`RerankerSettings.from_dict`, `NetworkPolicy.from_dict`): unknown keys are refused, since a
typo must not silently turn a reranker off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from book_agent.domain.book.runtime_config import ConfigError, RerankerSettings, RuntimeConfig
from book_agent.domain.network import NetworkPolicy
from book_agent_adapters.rerankers import errors

SECTION_KEYS = frozenset({"provider", "model", "endpoint", "factory", "options"})
FLAT_KEYS = SECTION_KEYS | {"network", "strict"}
NETWORK_KEYS = frozenset({"allow_remote_requests", "allowed_endpoints", "auth_env"})
RUNTIME_KEYS = frozenset({"version", "network", "query", "reranker", "strict"})


@dataclass(frozen=True)
class RerankConfig:
    provider: str = "none"
    model: str | None = None
    endpoint: str | None = None
    factory: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    strict: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The flat form handed to plug-in factories (JSON-friendly, no secrets)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.endpoint,
            "factory": self.factory,
            "options": dict(self.options),
            "network": self.network.to_dict(),
            "strict": self.strict,
        }

    def option(self, name: str, kind: type | tuple[type, ...], default: Any) -> Any:
        value = self.options.get(name, default)
        if value is default:
            return value
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            value = None  # bool is an int subclass; `timeout: true` is a mistake
        if not isinstance(value, kind):
            raise _invalid(f"reranker option {name!r} has the wrong type", option=name)
        return value


def parse_config(config: Any) -> RerankConfig:
    if isinstance(config, RerankConfig):
        return config
    if config is None:
        return RerankConfig()
    if isinstance(config, RuntimeConfig):
        return _from_models(config.reranker, config.network, strict=False)
    if isinstance(config, RerankerSettings):
        return _from_models(config, NetworkPolicy(), strict=False)
    if not isinstance(config, dict):
        raise _invalid(f"a reranker config must be a dict, not {type(config).__name__}")
    if "reranker" in config:
        unknown = set(config) - RUNTIME_KEYS
        if unknown:
            raise _invalid("unknown keys in the runtime config", unknown=sorted(unknown))
        return _parse(config.get("reranker") or {}, config.get("network") or {}, config.get("strict", False))
    unknown = set(config) - FLAT_KEYS - NETWORK_KEYS
    if unknown:
        raise _invalid("unknown keys in the reranker config", unknown=sorted(unknown), allowed=sorted(FLAT_KEYS))
    network = config.get("network")
    if network is None:
        network = {k: config[k] for k in NETWORK_KEYS if k in config}
    section = {k: config[k] for k in SECTION_KEYS if k in config}
    return _parse(section, network, config.get("strict", False))


def _parse(section: Any, network: Any, strict: Any) -> RerankConfig:
    """The sections through their models; a null value in the flat form means the default."""
    if isinstance(section, dict):
        section = {k: v for k, v in section.items() if v is not None}
    try:
        return _from_models(RerankerSettings.from_dict(section), NetworkPolicy.from_dict(network), bool(strict))
    except ConfigError as exc:
        raise _invalid(str(exc)) from exc


def _from_models(settings: RerankerSettings, network: NetworkPolicy, strict: bool) -> RerankConfig:
    return RerankConfig(provider=_provider_name(settings.provider), model=settings.model or None,
                        endpoint=settings.endpoint or None, factory=settings.factory or None,
                        options=dict(settings.options), network=network, strict=strict)


BUILTIN_NAMES = ("none", "siliconflow", "local", "custom")


def _provider_name(provider: str) -> str:
    # Built-in names are matched case-insensitively ("SiliconFlow"); plug-in names exactly.
    name = provider.strip()
    return name.lower() if name.lower() in BUILTIN_NAMES else name


def _invalid(message: str, **details: Any) -> Exception:
    return errors.rerank_error(errors.CONFIG_INVALID, message, errors.REMEDIATION_CONFIG, **details)
