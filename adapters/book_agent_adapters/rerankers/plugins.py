"""Finding and loading rerankers: entry points of the `book_agent.rerankers` group, or a
`module:factory` path from config. The built-ins come through the same group.

A plug-in is checked when it loads: an unknown name lists the available ones
(rerank.unknown_provider), a path that does not import or resolve is
rerank.plugin_not_found, an import or factory that raises is rerank.plugin_failed, and a
factory or product without the port's methods is rerank.plugin_invalid.
"""

from __future__ import annotations

from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.plugins import entry_points
from book_agent_adapters.plugins.entry_points import PluginEntry, PluginLoadError
from book_agent_adapters.rerankers import errors
from book_agent_adapters.rerankers.builtin import BUILTINS

GROUP = "book_agent.rerankers"
HOME_DIST = entry_points.HOME_DIST
PORT_METHODS = ("rerank", "healthcheck", "provider_info")


def discover() -> dict[str, PluginEntry]:
    """Every installed reranker by name. Built-in names cannot be taken over by plug-ins."""
    return entry_points.discover(GROUP, BUILTINS)


def load_factory(target: str) -> tuple[Any, PluginEntry | None]:
    """A factory by entry-point name or `module:attr` path, checked to be callable."""
    if ":" in target:
        return _import_path(target), None
    if target in BUILTINS:  # fast path: built-in names cannot be taken by plug-ins anyway
        builtin = PluginEntry(target, BUILTINS[target], HOME_DIST, None, True)
        return _import_path(builtin.value), builtin
    entries = discover()
    entry = entries.get(target)
    if entry is None or entry.shadowed_by:
        available = entry_points.usable(entries)
        raise BookAgentError(
            errors.UNKNOWN_PROVIDER,
            f"no reranker named {target!r}; available: {', '.join(available)}",
            details={"provider": target, "available": available},
            remediation="Use one of the available names, provider `custom` with factory "
            "'module:callable', or install the plug-in that provides it.",
            available_capabilities=available,
        )
    return _import_path(entry.value), entry


def _import_path(path: str) -> Any:
    try:
        return entry_points.import_target(path)
    except PluginLoadError as exc:
        raise _load_error(path, exc) from exc


def _load_error(path: str, exc: PluginLoadError) -> BookAgentError:
    if exc.kind == "malformed":
        return errors.rerank_error(errors.CONFIG_INVALID, exc.why, errors.REMEDIATION_CONFIG, factory=path)
    if exc.kind == "not_found":
        return _not_found(path, exc.why)
    if exc.kind == "not_callable":
        return errors.rerank_error(
            errors.PLUGIN_INVALID, f"reranker factory {path!r} is not callable",
            "A factory is a callable `factory(config: dict, runtime_dir: Path) -> Reranker`.",
            factory=path, type=exc.found_type,
        )
    return _import_failed(path, exc.cause or exc)


def check_product(obj: Any, name: str) -> None:
    missing = [m for m in PORT_METHODS if not callable(getattr(obj, m, None))]
    if missing:
        raise errors.rerank_error(
            errors.PLUGIN_INVALID,
            f"reranker {name!r} built a {type(obj).__name__} without the port's "
            f"method(s): {', '.join(missing)}",
            "A reranker needs rerank(query, candidates, top_n), healthcheck() and provider_info() "
            "(see contracts/rerankers.md).",
            provider=name, missing=missing,
        )


def _not_found(path: str, why: str) -> BookAgentError:
    return errors.rerank_error(
        errors.PLUGIN_NOT_FOUND, f"reranker factory {path!r} not found: {why}",
        "Install the plug-in into the same Python environment as book-agent, or fix the path.",
        factory=path,
    )


def _import_failed(path: str, exc: BaseException) -> BookAgentError:
    return errors.rerank_error(
        errors.PLUGIN_FAILED, f"importing reranker factory {path!r} raised {type(exc).__name__}: {exc}",
        errors.REMEDIATION_PLUGINS, factory=path,
    )


