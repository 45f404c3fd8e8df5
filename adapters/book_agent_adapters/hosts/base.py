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

from book_agent.domain.errors import BookAgentError
from book_agent.domain.host_config import HostNote
from book_agent.domain.remote_server import RemoteServer
from book_agent.input_files import InputTooLarge, read_limited
from book_agent.ports import HostPort
from book_agent_adapters.hosts.errors import config_malformed
from book_agent_adapters.hosts.files import json_config, safe_write


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


def entry_transport(entry: Any) -> str | None:
    """"http" for an entry a host reaches by URL (url, Cherry's baseUrl), "stdio" for one it
    starts (command), None for anything else (absent, or a shape we do not know)."""
    if not isinstance(entry, dict):
        return None
    if "url" in entry or "baseUrl" in entry:
        return "http"
    return "stdio" if "command" in entry else None


def token_env_unsupported(label: str, remote: RemoteServer) -> BookAgentError:
    return BookAgentError(
        "host.token_env_unsupported",
        f"{label} cannot read an MCP server's token from an environment variable, so --token-env "
        f"{remote.token_env} cannot be honoured (and book-agent never writes a token into a host's config)",
        details={"host": label, "token_env": remote.token_env, "url": remote.url},
        remediation=f"run the same command without --token-env, then in {label}'s MCP settings add the request "
                    "header Authorization: Bearer <your token> to the server yourself (or use a host that reads "
                    "the token from a variable: Codex)",
    )


def token_by_hand(label: str, remote: RemoteServer) -> list[HostNote]:
    """The note for hosts that take a token only as a literal header the user adds."""
    if remote.loopback:
        return []  # a loopback server may run without authentication
    return [{
        "code": "host.http_token_by_hand",
        "message": f"{remote.url} is on another machine, so the server requires a token (`book-agent serve` "
        f"refuses other addresses without one). {label} cannot read it from an environment variable: add the "
        "header Authorization: Bearer <your token> to the server in its MCP settings (book-agent writes no token)",
    }]


class JsonMcpHost(HostPort):
    """Shared by the hosts whose MCP config is an `{"mcpServers": {...}}` JSON file."""

    host = "json"
    label = "the host"
    edition: str | None = None
    http_type: str | None = None  # a `type` the host wants on an HTTP entry (WorkBuddy: "http")
    STDIO_ONLY = ("command", "args", "env", "cwd")
    HTTP_ONLY = ("url", "headers")

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def server_entry(self, argv: list[str], auth_env: str | None) -> dict[str, Any]:
        # No `env`: these hosts document no forwarding of variable names, and a value
        # written here would be a credential literal. The server inherits the host's env.
        return {"command": argv[0], "args": list(argv[1:])}

    def http_entry(self, remote: RemoteServer) -> dict[str, Any]:
        # No `headers`: a token there would be a literal; the user adds it in the host's UI
        # (a header added there survives a reinstall: only `type` and `url` are ours).
        if remote.token_env:
            raise token_env_unsupported(self.label, remote)
        entry: dict[str, Any] = {"type": self.http_type} if self.http_type else {}
        entry["url"] = remote.url
        return entry

    def _dropped(self, current: dict[str, Any] | None, entry: dict[str, Any]) -> list[str]:
        """Keys of the other transport, dropped when an entry switches stdio <-> HTTP (a host
        may refuse an entry that has both, e.g. `command` beside `url`)."""
        if not current:
            return []
        new = entry_transport(entry)
        foreign = self.STDIO_ONLY if new == "http" else self.HTTP_ONLY
        dropped = [k for k in current if k in foreign and k not in entry]
        if entry_transport(current) not in (None, new) and "type" in current and "type" not in entry:
            dropped.append("type")  # "stdio" on an HTTP entry, or "http" on a stdio one
        return dropped

    def add_server(self, text: str | None, path: Path, name: str, entry: dict[str, Any]) -> str:
        doc = json_config.parse(text, path, self.host)
        current = json_config.get_server(doc, name)
        dropped = self._dropped(current, entry)
        if text is not None and managed_subset(current, list(entry)) == entry and not dropped:
            return text  # already there: not a byte changes
        merged = {k: v for k, v in (current or {}).items() if k not in dropped}
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

    def style_warnings(self, text: str | None) -> list[HostNote]:
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

    def http_snippet(self, name: str, remote: RemoteServer) -> str:
        import json

        return json.dumps({"mcpServers": {name: self.http_entry(remote)}}, indent=2, ensure_ascii=False)

    def http_warnings(self, remote: RemoteServer) -> list[HostNote]:
        return token_by_hand(self.label, remote)

    def header_step(self, remote: RemoteServer) -> list[str]:
        if remote.loopback:
            return []
        return [f"the server needs your token: add \"headers\": {{\"Authorization\": \"Bearer <your token>\"}} "
                f"to the entry yourself ({self.label} reads no token from an environment variable; "
                "book-agent never writes one)"]


def spaces_warning(argv: list[str], host: str) -> list[HostNote]:
    if " " in argv[0]:
        return [{
            "code": "host.command_has_spaces",
            "message": f"{host} refuses a `command` that contains spaces ({argv[0]!r}); "
            "follow the manual route: point `command` at a path without spaces "
            "(e.g. a symlink to this interpreter) and keep the same args",
        }]
    return []


def env_warning(auth_env: str | None, host: str) -> list[HostNote]:
    if not auth_env:
        return []
    return [{
        "code": "host.env_not_forwarded",
        "message": f"{host} documents no way to forward a variable by name, so {auth_env} is not "
        f"written anywhere: export {auth_env} in the environment {host} is started from "
        "(whether the server inherits it is UNCONFIRMED)",
    }]


def without_editions(host: str, edition: str | None) -> None:
    """`host.unknown_edition` for an edition given to a host that has none (all but Trae)."""
    if edition is not None:
        raise BookAgentError("host.unknown_edition", f"{host} has no editions", details={"host": host},
                             remediation="--edition applies to trae only (intl or cn)")
