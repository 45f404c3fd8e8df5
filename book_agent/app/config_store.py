"""The per-book runtime config file (versioned JSON in the book's runtime dir)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from book_agent.adapters.json_registry import write_json_atomic
from book_agent.domain.errors import BookAgentError
from book_agent.domain.runtime_config import ConfigError, RuntimeConfig

CONFIG_NAME = "config.json"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")

# flat keyword -> (section, field): what `configure(book, **settings)` accepts
FLAT_SETTINGS = {
    "allow_remote_requests": ("network", "allow_remote_requests"),
    "allowed_endpoints": ("network", "allowed_endpoints"),
    "auth_env": ("network", "auth_env"),
    "query_endpoint": ("query", "endpoint"),
    "model_dir": ("query", "model_dir"),
    "reranker": ("reranker", "provider"),
    "reranker_model": ("reranker", "model"),
    "reranker_endpoint": ("reranker", "endpoint"),
    "reranker_factory": ("reranker", "factory"),
}


def load_config(runtime_dir: Path) -> RuntimeConfig:
    path = runtime_dir / CONFIG_NAME
    if not path.exists():
        return RuntimeConfig()
    try:
        return RuntimeConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:  # ConfigError is a ValueError
        raise BookAgentError(
            "config.invalid", f"the runtime config {path} is invalid: {exc}",
            remediation=f"fix or delete {path} (then `book-agent configure BOOK ...`)",
        ) from exc


def save_config(runtime_dir: Path, config: RuntimeConfig) -> None:
    write_json_atomic(runtime_dir / CONFIG_NAME, config.to_dict())


def apply_settings(config: RuntimeConfig, settings: dict[str, Any]) -> RuntimeConfig:
    data = config.to_dict()
    for key, value in settings.items():
        if value is None:
            continue
        if key in ("network", "query", "reranker") and isinstance(value, dict):
            data[key].update(value)
        elif key in FLAT_SETTINGS:
            section, field = FLAT_SETTINGS[key]
            data[section][field] = value
        else:
            raise BookAgentError(
                "config.unknown_setting", f"unknown setting {key!r}",
                details={"known": sorted(FLAT_SETTINGS) + ["network", "query", "reranker"]},
                remediation="see `book-agent configure --help`",
            )
    auth_env = data["network"].get("auth_env")
    if auth_env is not None and not _ENV_NAME.match(str(auth_env)):
        # never store what may be a key: auth_env names a variable, it is not the key itself
        raise BookAgentError(
            "config.bad_auth_env", "auth_env must be the NAME of an environment variable (e.g. SILICONFLOW_API_KEY)",
            remediation="export the key in a variable and pass its name: --auth-env SILICONFLOW_API_KEY",
        )
    for url in data["network"].get("allowed_endpoints") or []:
        if not re.match(r"^https?://[^\s/]+", str(url)):
            raise BookAgentError(
                "config.bad_endpoint", f"{url!r} is not a full http(s) URL",
                remediation="pass the exact URL, e.g. https://api.siliconflow.cn/v1/embeddings",
            )
    try:
        return RuntimeConfig.from_dict(data)
    except ConfigError as exc:
        raise BookAgentError("config.invalid", f"invalid settings: {exc}",
                             remediation="see `book-agent configure --help`") from exc
