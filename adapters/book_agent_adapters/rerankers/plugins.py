"""Finding and loading rerankers: entry points of the `book_agent.rerankers` group, or a
`module:factory` path from config. The built-ins come through the same group.

A plug-in is checked when it loads: an unknown name lists the available ones
(rerank.unknown_provider), a path that does not import or resolve is
rerank.plugin_not_found, an import or factory that raises is rerank.plugin_failed, and a
factory or product without the port's methods is rerank.plugin_invalid.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.rerankers import errors
from book_agent_adapters.rerankers.builtin import BUILTINS

GROUP = "book_agent.rerankers"
HOME_DIST = "book-agent"
PORT_METHODS = ("rerank", "healthcheck", "provider_info")


@dataclass(frozen=True)
class PluginEntry:
    name: str
    value: str  # "module:attr"
    dist: str | None
    version: str | None
    builtin: bool
    shadowed_by: str | None = None  # a third-party entry that reuses a built-in name

    @property
    def source(self) -> str:
        if self.builtin:
            return "builtin"
        return f"entry point ({self.dist} {self.version})" if self.dist else "entry point"


def discover() -> dict[str, PluginEntry]:
    """Every installed reranker by name. Built-in names cannot be taken over by plug-ins."""
    found = {name: PluginEntry(name, value, HOME_DIST, None, True) for name, value in BUILTINS.items()}
    for ep in metadata.entry_points(group=GROUP):
        dist = ep.dist.name if ep.dist is not None else None
        version = ep.dist.version if ep.dist is not None else None
        builtin = _normal(dist) == _normal(HOME_DIST)
        entry = PluginEntry(ep.name, ep.value, dist, version, builtin)
        current = found.get(ep.name)
        if current is not None and current.builtin and not builtin:
            found[f"{ep.name} ({dist})"] = PluginEntry(
                ep.name, ep.value, dist, version, False, shadowed_by="builtin"
            )
            continue
        found[ep.name] = entry
    return found


def load_factory(target: str, module_path: str | None = None) -> tuple[Any, PluginEntry | None]:
    """A factory by entry-point name or `module:attr` path, checked to be callable; a path's
    module is looked for in `module_path` first (the book's configured folder), then as usual."""
    if ":" in target:
        if module_path:
            _search_first(module_path)
        return _import_path(target), None
    if target in BUILTINS:  # fast path: built-in names cannot be taken by plug-ins anyway
        builtin = PluginEntry(target, BUILTINS[target], HOME_DIST, None, True)
        return _import_path(builtin.value), builtin
    entries = discover()
    entry = entries.get(target)
    if entry is None or entry.shadowed_by:
        available = sorted(n for n, e in entries.items() if not e.shadowed_by)
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
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise errors.rerank_error(
            errors.CONFIG_INVALID, f"a factory path is 'module:callable', not {path!r}",
            errors.REMEDIATION_CONFIG, factory=path,
        )
    try:
        obj: Any = importlib.import_module(module_name.strip())
    except ModuleNotFoundError as exc:
        name = module_name.strip()
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise _not_found(path, f"module {exc.name!r} is not installed") from exc
        raise _import_failed(path, exc) from exc
    except Exception as exc:
        raise _import_failed(path, exc) from exc
    for part in attr.strip().split("."):
        if not hasattr(obj, part):
            raise _not_found(path, f"{module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise errors.rerank_error(
            errors.PLUGIN_INVALID, f"reranker factory {path!r} is not callable",
            "A factory is a callable `factory(config: dict, runtime_dir: Path) -> Reranker`.",
            factory=path, type=type(obj).__name__,
        )
    return obj


def _search_first(folder: str) -> None:
    """Put a configured plug-in folder on the import path (as PYTHONPATH would), once; a folder
    that is not there is left out: the import then says what is missing."""
    import os
    import sys

    if os.path.isdir(folder) and folder not in sys.path:
        sys.path.insert(0, folder)
        importlib.invalidate_caches()


def module_folder(target: str) -> str | None:
    """The folder a `module:attr` factory's module was imported from, when that folder is not
    part of this Python environment (PYTHONPATH, the working dir, a folder added at run time):
    what a server started elsewhere would need to find it. None for an installed module."""
    import sys
    from pathlib import Path

    module_name = target.partition(":")[0].strip()
    module = sys.modules.get(module_name.split(".")[0])
    origin = getattr(module, "__file__", None)
    if ":" not in target or not origin:
        return None
    top = Path(origin).resolve().parent
    folder = top.parent if Path(origin).name == "__init__.py" else top
    environment = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    if any(folder == root or root in folder.parents for root in environment):
        return None
    return str(folder)


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


def _normal(name: str | None) -> str:
    return (name or "").lower().replace("_", "-")
