"""`configure(book, **settings)`: the rules that turn settings into a book's RuntimeConfig.

The file itself (config.json in the runtime dir) is the RuntimeStore's; here are what a
setting may be, what it becomes, and the notes a user needs after changing it.
"""

from __future__ import annotations

import re
from pathlib import Path

from book_agent.domain.book.book_refs import one_book
from book_agent.domain.book.book_reports import Configured
from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.runtime_config import ConfigError, RuntimeConfig, check_config_endpoints
from book_agent.domain.errors import BookAgentError
from book_agent.domain.providers import REMOTE_PROVIDERS, SILICONFLOW_RERANK_ENDPOINT
from book_agent.services.books import OpenBooks
from book_agent.services.context import Ports

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


def config_notes(config: RuntimeConfig, package: PackageInfo) -> list[str]:
    """What a user who just configured this would want to know (nothing is refused here)."""
    notes: list[str] = []
    network = config.network
    manifest = package.vector_manifest or {}
    provider = manifest.get("provider")
    if provider == "local" and (network.allow_remote_requests or config.query.endpoint):
        notes.append(f"this book's vectors were made locally with {manifest.get('model')}: its queries are "
                     "encoded locally, never remotely; remote settings serve remote rerankers only")
    endpoint = config.query.endpoint or (manifest.get("endpoint") if provider in REMOTE_PROVIDERS else None)
    if provider in REMOTE_PROVIDERS and endpoint and endpoint not in network.allowed_endpoints:
        notes.append(f"queries would be encoded at {endpoint}, which is not an allowed endpoint: "
                     f"add --allowed-endpoint {endpoint} (and --allow-remote) to use it")
    if provider in REMOTE_PROVIDERS and network.allow_remote_requests and not network.auth_env:
        notes.append("remote requests are allowed but no --auth-env names the variable holding the key")
    rerank_endpoint = config.reranker.endpoint
    if config.reranker.provider == "siliconflow":
        rerank_endpoint = rerank_endpoint or SILICONFLOW_RERANK_ENDPOINT
        if rerank_endpoint not in network.allowed_endpoints or not network.allow_remote_requests:
            notes.append(f"the siliconflow reranker posts to {rerank_endpoint}: allow it with --allow-remote "
                         f"--allowed-endpoint {rerank_endpoint}, or searches will report the rerank as not applied")
    return notes


def apply_settings(config: RuntimeConfig, settings: dict[str, object]) -> RuntimeConfig:
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
    try:
        config = RuntimeConfig.from_dict(data)
    except ConfigError as exc:
        raise BookAgentError("config.invalid", f"invalid settings: {exc}",
                             remediation="see `book-agent configure --help`") from exc
    check_config_endpoints(config)
    return config


def configure(ports: Ports, books: OpenBooks, book_ref: str, settings: dict[str, object]) -> Configured:
    """Write the book's runtime config (network policy, query, reranker); returns it with notes."""
    ports.registry.get(one_book(book_ref))
    runtime_dir = ports.runtime_dir(book_ref)
    reset = bool(settings.pop("reset", False))
    config = apply_settings(RuntimeConfig() if reset else ports.runtime.load_config(runtime_dir), settings)
    _check_reranker(ports, config, runtime_dir)  # refuse a reranker that could not load, before saving
    book = books.open(book_ref)
    ports.runtime.save_config(runtime_dir, config)
    books.forget(book_ref)
    return {"book_id": book_ref, "config": config.to_dict(), "notes": config_notes(config, book.package)}


def _check_reranker(ports: Ports, config: RuntimeConfig, runtime_dir: Path) -> None:
    reranker = ports.parts.reranker(config, runtime_dir)
    close = getattr(reranker, "close", None)
    if callable(close):
        close()
