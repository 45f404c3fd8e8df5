"""Which AI hosts book-agent can install into: the built-ins and any plug-in, found like rerankers
and library backends (plugins/entry_points.py), in the entry-point group `book_agent.hosts`.

A host's factory is `create(ctx: HostContext, data_dir: Path, edition: str | None) -> HostPort`
(apps/codex.py and its neighbours are the examples); a host without editions refuses one
(`host.unknown_edition`). Built-in names cannot be taken over by a plug-in.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from book_agent.domain.errors import BookAgentError
from book_agent.ports import HostPort
from book_agent_adapters.plugins import entry_points
from book_agent_adapters.plugins.entry_points import PluginLoadError

if TYPE_CHECKING:
    from book_agent_adapters.hosts.base import HostContext

GROUP = "book_agent.hosts"
BUILTINS = {
    "codex": "book_agent_adapters.hosts.apps.codex:create",
    "trae": "book_agent_adapters.hosts.apps.trae:create",
    "workbuddy": "book_agent_adapters.hosts.apps.workbuddy:create",
    "cherry-studio": "book_agent_adapters.hosts.apps.cherry_studio:create",
}
ALIASES = {"cherry": "cherry-studio", "cherrystudio": "cherry-studio"}


def available() -> list[str]:
    """Every host name a user may choose: the built-ins in their order, then plug-ins by name."""
    plugins = [n for n in entry_points.usable(entry_points.discover(GROUP, BUILTINS)) if n not in BUILTINS]
    return list(BUILTINS) + plugins


def make_port(host: str, ctx: HostContext, data_dir: Path, edition: str | None) -> HostPort:
    """The adapter of `host` (a name or an alias), or `host.unknown` listing the known ones."""
    name = ALIASES.get(host, host)
    target = BUILTINS.get(name)  # a built-in needs no scan of the installed distributions
    if target is None:
        entries = entry_points.discover(GROUP, BUILTINS)
        entry = entries.get(name)
        target = entry.value if entry is not None and not entry.shadowed_by else None
    if target is None:
        known = available()
        raise BookAgentError("host.unknown", f"unknown host {host!r}", details={"host": host},
                             remediation="choose one of: " + ", ".join(known), available_capabilities=known)
    try:
        factory = entry_points.import_target(target)
    except PluginLoadError as exc:
        raise BookAgentError("host.plugin_failed", f"the host adapter {name!r} cannot be loaded: {exc.why}",
                             details={"host": name, "factory": target},
                             remediation="install the package that provides it into book-agent's environment, "
                                         "or choose a built-in host") from exc
    port = factory(ctx, data_dir, edition)
    if not isinstance(port, HostPort):
        raise BookAgentError("host.plugin_failed", f"the host adapter {name!r} built a {type(port).__name__}, "
                             "not a HostPort", details={"host": name, "factory": target},
                             remediation="a host factory returns a HostPort (book_agent.ports.hosts)")
    return port
