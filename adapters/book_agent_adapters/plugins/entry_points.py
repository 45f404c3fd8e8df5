"""Finding and importing plug-ins by entry-point group, for every pluggable role alike.

    found = discover("book_agent.rerankers", BUILTINS)   # name -> PluginEntry, built-ins first
    factory = import_target("pkg.module:factory")         # or PluginLoadError(kind, why)

Each role turns a `PluginLoadError` into its own coded error (rerank.plugin_not_found,
library.backend_failed, host.plugin_failed...): the loader knows nothing of the codes, the
roles know nothing of importlib.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal

HOME_DIST = "book-agent"

LoadFailure = Literal["malformed", "not_found", "failed", "not_callable"]


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


class PluginLoadError(Exception):
    """A `module:attr` target that cannot be used: `kind` says why, for the role's coded error."""

    def __init__(self, kind: LoadFailure, target: str, why: str, cause: BaseException | None = None,
                 found_type: str | None = None) -> None:
        super().__init__(why)
        self.kind = kind
        self.target = target
        self.why = why
        self.cause = cause  # what importing it raised (kind "failed")
        self.found_type = found_type  # what it named instead of a callable (kind "not_callable")


def discover(group: str, builtins: Mapping[str, str]) -> dict[str, PluginEntry]:
    """Every installed plug-in of `group` by name. Built-in names cannot be taken over: a
    third-party entry reusing one is listed as `name (dist)`, shadowed."""
    found = {name: PluginEntry(name, value, HOME_DIST, None, True) for name, value in builtins.items()}
    for ep in metadata.entry_points(group=group):
        dist = ep.dist.name if ep.dist is not None else None
        version = ep.dist.version if ep.dist is not None else None
        builtin = _normal(dist) == _normal(HOME_DIST)
        current = found.get(ep.name)
        if current is not None and current.builtin and not builtin:
            found[f"{ep.name} ({dist})"] = PluginEntry(ep.name, ep.value, dist, version, False, shadowed_by="builtin")
            continue
        found[ep.name] = PluginEntry(ep.name, ep.value, dist, version, builtin)
    return found


def usable(entries: Mapping[str, PluginEntry]) -> list[str]:
    """The names a caller may choose (shadowing entries are listed, never chosen)."""
    return sorted(name for name, entry in entries.items() if not entry.shadowed_by)


def import_target(target: str) -> Any:
    """The callable a `module:attr` (attr may be dotted) names, or PluginLoadError."""
    module_name, _, attr = target.partition(":")
    module_name, attr = module_name.strip(), attr.strip()
    if not module_name or not attr:
        raise PluginLoadError("malformed", target, f"a factory path is 'module:callable', not {target!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise PluginLoadError("not_found", target, f"module {exc.name!r} is not installed") from exc
        raise _failed(target, exc) from exc
    except Exception as exc:  # the plug-in's own import-time failure, whatever it is
        raise _failed(target, exc) from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise PluginLoadError("not_found", target, f"{module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise PluginLoadError("not_callable", target, f"{target} is a {type(obj).__name__}, not a callable factory",
                              found_type=type(obj).__name__)
    return obj


def _failed(target: str, exc: BaseException) -> PluginLoadError:
    return PluginLoadError("failed", target, f"importing it raised {type(exc).__name__}: {exc}", cause=exc)


def _normal(name: str | None) -> str:
    return (name or "").lower().replace("_", "-")
