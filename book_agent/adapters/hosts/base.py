"""The port behind the HostAdapter facade, and what per-host adapters share.

`HostPort` (book_agent/ports.py) is one host's knowledge: where its files are, how its MCP config is written and
read back, what it may refuse, and what is still unconfirmed about it. It never writes:
the facade (`adapters/hosts/facade.py`) turns its answers into planned operations, shows
them, and applies them through `safe_write`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from book_agent.adapters.hosts import json_config, safe_write
from book_agent.adapters.hosts.errors import config_malformed
from book_agent.input_files import InputTooLarge, read_limited
from book_agent.ports import HostPort


@dataclass(frozen=True)
class HostContext:
    """Where a host lives. An explicit `home` replaces the user's home and every host
    variable (CODEX_HOME, APPDATA, XDG_CONFIG_HOME), so a sandbox holds everything."""

    home: Path
    explicit_home: bool
    platform: str = sys.platform
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def env_dir(self, name: str) -> Path | None:
        value = None if self.explicit_home else self.environ.get(name)
        return Path(value).expanduser() if value else None

    def app_data_dir(self, app: str) -> Path:
        """Electron's `app.getPath('userData')` parent for `app` on this platform."""
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support" / app
        if self.platform.startswith("win"):
            return (self.env_dir("APPDATA") or self.home / "AppData" / "Roaming") / app
        return (self.env_dir("XDG_CONFIG_HOME") or self.home / ".config") / app


MAX_CONFIG_BYTES = 16 << 20


def read_config(path: Path, host: str) -> str | None:
    """A config file's text (through a symlink), None when absent; not UTF-8 -> refused."""
    target = safe_write.real_target(path)
    if not target.is_file():
        return None
    try:
        data = read_limited(target, MAX_CONFIG_BYTES)  # a config is kilobytes: bounded like any input
    except OSError as exc:
        raise config_malformed(path, f"cannot be read ({exc.strerror or exc})", host) from exc
    except InputTooLarge as exc:
        raise config_malformed(path, f"larger than {MAX_CONFIG_BYTES} bytes", host) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise config_malformed(path, "not UTF-8 text", host) from exc


def managed_subset(entry: dict[str, Any] | None, keys: list[str]) -> dict[str, Any]:
    return {k: entry[k] for k in keys if entry and k in entry}


class JsonMcpHost(HostPort):
    """Shared by the hosts whose MCP config is an `{"mcpServers": {...}}` JSON file."""

    host = "json"
    edition: str | None = None
    managed_keys = ["command", "args"]

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def server_entry(self, argv: list[str], auth_env: str | None) -> dict[str, Any]:
        # No `env`: these hosts document no forwarding of variable names, and a value
        # written here would be a credential literal. The server inherits the host's env.
        return {"command": argv[0], "args": list(argv[1:])}

    def add_server(self, text: str | None, path: Path, name: str, entry: dict[str, Any]) -> str:
        doc = json_config.parse(text, path, self.host)
        current = json_config.get_server(doc, name)
        if text is not None and managed_subset(current, list(entry)) == entry:
            return text  # already there: not a byte changes
        merged = dict(current or {})
        merged.update(entry)
        json_config.set_server(doc, name, merged)
        return json_config.render(doc)

    def remove_server(self, text: str, path: Path, name: str) -> tuple[str, bool]:
        doc = json_config.parse(text, path, self.host)
        if not json_config.remove_server(doc, name):
            return text, json_config.is_empty(doc)
        return json_config.render(doc), json_config.is_empty(doc)

    def read_server(self, text: str | None, path: Path, name: str) -> dict[str, Any] | None:
        return json_config.get_server(json_config.parse(text, path, self.host), name)

    def style_warnings(self, text: str | None) -> list[dict[str, str]]:
        if text is not None and text.startswith(json_config.BOM):
            return [{
                "code": "host.config_has_bom",
                "message": "the config starts with a UTF-8 BOM; it is kept as found "
                "(WorkBuddy's guides ask for UTF-8 without BOM: remove it if the host fails to load the file)",
            }]
        return []

    def json_snippet(self, name: str, argv: list[str], auth_env: str | None) -> str:
        import json

        return json.dumps({"mcpServers": {name: self.server_entry(argv, auth_env)}}, indent=2, ensure_ascii=False)


def spaces_warning(argv: list[str], host: str) -> list[dict[str, str]]:
    if " " in argv[0]:
        return [{
            "code": "host.command_has_spaces",
            "message": f"{host} refuses a `command` that contains spaces ({argv[0]!r}); "
            "follow the manual route: point `command` at a path without spaces "
            "(e.g. a symlink to this interpreter) and keep the same args",
        }]
    return []


def env_warning(auth_env: str | None, host: str) -> list[dict[str, str]]:
    if not auth_env:
        return []
    return [{
        "code": "host.env_not_forwarded",
        "message": f"{host} documents no way to forward a variable by name, so {auth_env} is not "
        f"written anywhere: export {auth_env} in the environment {host} is started from "
        "(whether the server inherits it is UNCONFIRMED)",
    }]
