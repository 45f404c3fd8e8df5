"""Trae (ByteDance), international (`intl`, folder `Trae`) and China (`cn`, folder `Trae CN`).

MCP config: the VS Code-style user folder's `mcp.json` (`{"mcpServers": {...}}`):
macOS `~/Library/Application Support/<Trae|Trae CN>/User/mcp.json`, Windows
`%APPDATA%\\<...>\\User\\mcp.json`, Linux `~/.config/<...>/User/mcp.json` (UNCONFIRMED).
Skills: `~/.trae/skills/<name>/` (CN: `~/.trae-cn/skills/`), from third-party installers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.host_config import HostDetection, HostNote, ManualSteps
from book_agent.domain.remote_server import RemoteServer
from book_agent.ports import HostPort
from book_agent_adapters.hosts.base import HostContext, JsonMcpHost, env_warning, spaces_warning

EDITIONS = {"intl": ("Trae", ".trae"), "cn": ("Trae CN", ".trae-cn")}
# Trae's documented install link ("MCP Server 安装链接"): trae-cn:// for Trae CN, trae:// for Trae
SCHEMES = {"intl": "trae", "cn": "trae-cn"}


def install_link(edition: str, name: str, transport: str, config: dict[str, Any]) -> str:
    """`<scheme>://trae.ai-ide/mcp-import?type=stdio|http&name=NAME&config=C`, C being the
    entry's JSON (JSON.stringify: no spaces), base64-encoded, then URL-encoded."""
    import base64
    import json
    from urllib.parse import quote

    compact = json.dumps(config, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    encoded = quote(base64.b64encode(compact).decode("ascii"), safe="")
    return f"{SCHEMES[edition]}://trae.ai-ide/mcp-import?type={transport}&name={quote(name, safe='')}&config={encoded}"


def command_with_spaces(argv: list[str]) -> BookAgentError:
    return BookAgentError(
        "host.command_has_spaces",
        f"Trae refuses an MCP `command` that contains spaces, and this one does: {argv[0]!r}",
        details={"command": argv[0]},
        remediation="run book-agent from an interpreter whose path has no spaces (a venv elsewhere), or link one: "
                    f"`ln -s \"{argv[0]}\" ~/.local/bin/book-agent-python`, then add the server by hand with that "
                    "command (`book-agent host instructions trae BOOK` shows the entry)")


class TraeHost(JsonMcpHost):
    host = "trae"

    def __init__(self, ctx: HostContext, edition: str | None = None) -> None:
        super().__init__(ctx)
        edition = edition or "intl"
        if edition not in EDITIONS:
            raise BookAgentError(
                "host.unknown_edition",
                f"Trae has no edition {edition!r}",
                details={"edition": edition, "editions": sorted(EDITIONS)},
                remediation="use --edition intl (Trae) or --edition cn (Trae CN)",
            )
        self.edition = edition
        self.app, self.dot = EDITIONS[edition]
        self.label = "Trae CN" if edition == "cn" else "Trae"
        self.unconfirmed = self._unconfirmed()

    def _unconfirmed(self) -> tuple[str, ...]:
        items = [
            f"global skills folder ~/{self.dot}/skills comes from third-party installers, not Trae docs",
            "no ${VAR} interpolation is documented; whether the server inherits Trae's environment is unknown",
            "Trae reloading mcp.json on change is documented for the settings editor, not for outside edits",
            "the HTTP form {\"url\": URL} (Streamable HTTP since Trae 1.4.1) is documented for the settings editor "
            "and by third parties, not as a file format",
        ]
        if not (self.ctx.platform == "darwin" or self.ctx.platform.startswith("win")):
            items.insert(0, f"the Linux path ~/.config/{self.app}/User/mcp.json (no official Linux build confirmed)")
        return tuple(items)

    def user_dir(self) -> Path:
        return self.ctx.app_data_dir(self.app) / "User"

    def config_path(self) -> Path:
        return self.user_dir() / "mcp.json"

    def skills_dir(self) -> Path:
        return self.ctx.home / self.dot / "skills"

    def detect(self) -> HostDetection:
        candidates = (self.ctx.app_data_dir(self.app), self.config_path(), self.ctx.home / self.dot)
        evidence = [str(p) for p in candidates if p.exists()]
        return {"installed": bool(evidence), "evidence": evidence, "cli": None}

    def server_entry(self, argv: list[str], auth_env: str | None) -> dict[str, Any]:
        if " " in argv[0]:
            raise command_with_spaces(argv)  # Trae's own rule: refused before anything is written
        return super().server_entry(argv, auth_env)

    def warnings(self, argv: list[str], auth_env: str | None) -> list[HostNote]:
        return spaces_warning(argv, "Trae") + env_warning(auth_env, "Trae")

    def manual(self, name: str, argv: list[str], auth_env: str | None) -> ManualSteps:
        entry = JsonMcpHost.server_entry(self, argv, auth_env)  # the manual route shows it as it is
        snippet = json.dumps({"mcpServers": {name: entry}}, indent=2, ensure_ascii=False)
        return self._manual(snippet, [], install_link(self.edition or "intl", name, "stdio", entry))

    def http_manual(self, name: str, remote: RemoteServer) -> ManualSteps:
        link = install_link(self.edition or "intl", name, "http", self.http_entry(remote))
        return self._manual(self.http_snippet(name, remote), self.header_step(remote), link)

    def _manual(self, snippet: str, extra: list[str], link: str) -> ManualSteps:
        steps = [
            f"open the install link below (it asks {self.label} to add the server), or",
            f"in {self.label}: Settings > MCP > Add > Add manually (设置 > MCP > 添加 > 手动添加), paste the JSON below",
            f"or merge it into {self.config_path()} under \"mcpServers\"",
            *extra,
            "check the server's status dot in Settings > MCP",
            f"skills: copy the installed skill folders to ~/{self.dot}/skills/, or import them "
            "under Settings > Rules & Skills (规则和技能)",
        ]
        return {"steps": steps, "snippet": snippet, "deeplink": link}


def create(ctx: HostContext, data_dir: Path, edition: str | None) -> HostPort:
    """The `trae` host, international (`intl`, the default) or China (`cn`) (registry.py's factory signature)."""
    return TraeHost(ctx, edition)
