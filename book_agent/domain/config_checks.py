"""Strict shape checks shared by the config sections' models (book_agent/domain/book/runtime_config.py and
the network section, domain/network.py): unknown keys and wrong types are refused, as
ConfigError (a ValueError the callers turn into their own coded error)."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """The config document does not have the documented shape."""


def check_keys(section: str, data: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{section} must be an object, not {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{section}: unknown key(s) {', '.join(unknown)}")
    return data


def optional_str(section: str, key: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(f"{section}.{key} must be a string or null")
