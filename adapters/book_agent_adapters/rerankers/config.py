"""Reads a reranker config in any of the shapes callers hold.

Accepted: None (provider `none`); the flat reranker dict
`{provider, model, endpoint, factory, options, network: {...}, strict}` (the network keys may
also sit at the top level, as in contracts.md); the book's full runtime-config dict
`{version, network, query, reranker: {...}}`; or the pydantic models of
book_agent.domain.runtime_config. Unknown keys are refused: a typo must not silently turn
a reranker off.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

from book_agent.domain.network import NetworkPolicy
from book_agent_adapters.rerankers import errors

FLAT_KEYS = frozenset({"provider", "model", "endpoint", "factory", "options", "network", "strict"})
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
    if hasattr(config, "to_dict") or is_dataclass(config):  # RuntimeConfig / RerankerSettings
        config = config.to_dict() if hasattr(config, "to_dict") else asdict(config)
    if not isinstance(config, dict):
        raise _invalid(f"a reranker config must be a dict, not {type(config).__name__}")
    if "reranker" in config:
        return _from_runtime(config)
    return _from_flat(config, network=None)


def _from_runtime(config: dict[str, Any]) -> RerankConfig:
    unknown = set(config) - RUNTIME_KEYS
    if unknown:
        raise _invalid("unknown keys in the runtime config", unknown=sorted(unknown))
    section = config.get("reranker") or {}
    if not isinstance(section, dict):
        raise _invalid("the `reranker` section must be an object")
    flat = dict(section)
    if "strict" in config:
        flat.setdefault("strict", config["strict"])
    return _from_flat(flat, network=config.get("network"))


def _from_flat(config: dict[str, Any], network: Any) -> RerankConfig:
    unknown = set(config) - FLAT_KEYS - NETWORK_KEYS
    if unknown:
        raise _invalid(
            "unknown keys in the reranker config", unknown=sorted(unknown), allowed=sorted(FLAT_KEYS)
        )
    if network is None:
        network = config.get("network")
    if network is None:
        network = {k: config[k] for k in NETWORK_KEYS if k in config}
    if not isinstance(network, dict):
        raise _invalid("`network` must be an object")
    provider = config.get("provider") or "none"
    options = {} if config.get("options") is None else config["options"]
    if not isinstance(provider, str) or not isinstance(options, dict):
        raise _invalid("`provider` must be a string and `options` an object")
    for key in ("model", "endpoint", "factory"):
        if config.get(key) is not None and not isinstance(config[key], str):
            raise _invalid(f"`{key}` must be a string", key=key)
    endpoints = network.get("allowed_endpoints") or []
    if isinstance(endpoints, str):
        raise _invalid("`allowed_endpoints` must be a list of exact URLs, not one string")
    return RerankConfig(
        provider=_provider_name(provider),
        model=config.get("model") or None,
        endpoint=config.get("endpoint") or None,
        factory=config.get("factory") or None,
        options=dict(options),
        network=NetworkPolicy.from_dict(network),
        strict=bool(config.get("strict", False)),
    )


BUILTIN_NAMES = ("none", "siliconflow", "local", "custom")


def _provider_name(provider: str) -> str:
    # Built-in names are matched case-insensitively ("SiliconFlow"); plug-in names exactly.
    name = provider.strip()
    return name.lower() if name.lower() in BUILTIN_NAMES else name


def _invalid(message: str, **details: Any) -> Exception:
    return errors.rerank_error(errors.CONFIG_INVALID, message, errors.REMEDIATION_CONFIG, **details)
