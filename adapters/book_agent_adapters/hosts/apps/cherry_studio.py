"""Cherry Studio: its MCP servers live in app state (redux-persist in LevelDB; SQLite in v2)
that no other program may write. We never touch its data: we render the supported deep link
`cherrystudio://mcp/install?servers=<base64 of {"mcpServers": {...}}>` and manual steps.

A served library (`host install cherry-studio --url URL`) goes in the same link as Cherry's
streamable-HTTP server: `{"name", "type": "streamableHttp", "baseUrl": URL}` (the MCPServer
type and McpServerConfigSchema of src/renderer/src/types; the v2 protocol handler maps a
legacy `url` to `baseUrl`). No `headers`: Cherry Studio sends header values as typed and
cannot read one from an environment variable (CherryHQ/cherry-studio#11487), so a token
would be a literal in a URL. --token-env is refused (`host.token_env_unsupported`); the
steps tell the user to add `Authorization: Bearer <token>` in the server's Headers.

Skills apply to Cherry's Agents only and are imported through its UI, so the skill folders
are staged in book-agent's own data dir (`<data_dir>/hosts/cherry-studio/skills/`) for import.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from book_agent.domain.host_config import HostDetection, HostNote, ManualSteps
from book_agent.domain.remote_server import RemoteServer
from book_agent.ports import HostPort
from book_agent_adapters.hosts.base import (
    HostContext,
    token_by_hand,
    token_env_unsupported,
    without_editions,
)

# Commit eb560cf of the v1 deep-link handler (src/main/services/urlschema/mcp-install.ts,
# October 2025, from the fix attempt for GHSA-hh6w-rmjc-26f6, PR #10672, which the tracker
# shows closed unmerged) refused any other command. The handler of current v1 builds
# (safeValidateMcpServerConfig; protocol installs start inactive and untrusted, PR #11070)
# and the v2 protocol handler (a strict schema: name, description, type, command, args)
# accept any command, an absolute path included. So no install is warned: the manual
# steps say what to do on a build that shows the allowlist's "Security Warning".
DEEPLINK_COMMANDS = ("npx", "uvx", "uv", "bun", "node", "python", "python3")


def deeplink(servers: dict[str, Any]) -> str:
    payload = json.dumps({"mcpServers": servers}, ensure_ascii=False, separators=(",", ":"))
    encoded = base64.b64encode(payload.encode("utf-8")).decode("ascii")
    return "cherrystudio://mcp/install?servers=" + quote(encoded, safe="")


MANUAL_ONLY: HostNote = {
    "code": "host.manual_only",
    "message": "Cherry Studio keeps MCP servers in app state that no other program may write: "
    "open the deep link or add the server by hand, then enable and trust it in Settings > MCP",
}


class CherryStudioHost(HostPort):
    host = "cherry-studio"
    label = "Cherry Studio"
    edition: str | None = None
    unconfirmed: tuple[str, ...] = (
        "which published builds, if any, carried the deep-link command allowlist of commit eb560cf",
        "the exact Settings labels for adding or importing an MCP server",
        "skills copied into Cherry's Data/Skills without its database row are not listed: import them in the UI",
    )

    def __init__(self, ctx: HostContext, data_dir: Path) -> None:
        self.ctx = ctx
        self.data_dir = data_dir

    def user_data_dir(self) -> Path:
        return self.ctx.app_data_dir("CherryStudio")

    def config_path(self) -> None:
        return None  # app state: never written by book-agent

    def skills_dir(self) -> Path:
        return self.data_dir / "hosts" / "cherry-studio" / "skills"

    def detect(self) -> HostDetection:
        folder = self.user_data_dir()
        evidence = [str(folder)] if folder.exists() else []
        return {"installed": bool(evidence), "evidence": evidence, "cli": None}

    def server_entry(self, argv: list[str], auth_env: str | None) -> dict[str, Any]:
        # No `env` (the v2 schema rejects it, and a URL is no place for secrets): Cherry
        # starts stdio servers with the user's login-shell environment.
        return {"command": argv[0], "args": list(argv[1:])}

    def http_entry(self, remote: RemoteServer) -> dict[str, Any]:
        if remote.token_env:
            raise token_env_unsupported(self.label, remote)
        return {"type": "streamableHttp", "baseUrl": remote.url}

    def add_server(self, text: str | None, path: Path, name: str, entry: dict[str, Any]) -> str:
        raise NotImplementedError("Cherry Studio's app state is never written")

    def remove_server(self, text: str, path: Path, name: str) -> tuple[str, bool]:
        raise NotImplementedError("Cherry Studio's app state is never written")

    def read_server(self, text: str | None, path: Path, name: str) -> dict[str, Any] | None:
        return None

    def warnings(self, argv: list[str], auth_env: str | None) -> list[HostNote]:
        found = [MANUAL_ONLY]
        if auth_env:
            found.append({
                "code": "host.env_from_login_shell",
                "message": f"export {auth_env} in your login shell profile: Cherry Studio passes the "
                "login-shell environment to the server; no value goes into the link",
            })
        return found

    @staticmethod
    def _allowlist_step(argv: list[str]) -> list[str]:
        if argv[0] in DEEPLINK_COMMANDS:
            return []
        return [f"a Cherry Studio build with the deep-link command allowlist ({', '.join(DEEPLINK_COMMANDS)}) "
                f"shows a \"Security Warning\" for {argv[0]!r}: add the server by hand in Settings > MCP then"]

    def manual(self, name: str, argv: list[str], auth_env: str | None) -> ManualSteps:
        return self._manual(name, self.server_entry(argv, auth_env),
                            ["or in Settings > MCP add a stdio server with the command and args below"],
                            self._allowlist_step(argv))

    def http_warnings(self, remote: RemoteServer) -> list[HostNote]:
        return [MANUAL_ONLY, *token_by_hand(self.label, remote)]

    def http_manual(self, name: str, remote: RemoteServer) -> ManualSteps:
        how = [f"or in Settings > MCP add a server of type Streamable HTTP (streamableHttp) with the URL {remote.url}"]
        if not remote.loopback:
            how.append("the server needs your token: in the server's settings, Headers, add "
                       "Authorization=Bearer <your token> (Cherry Studio cannot read it from an environment "
                       "variable; book-agent never writes it, and a link is no place for it)")
        return self._manual(name, self.http_entry(remote), how, [])

    def _manual(self, name: str, server: dict[str, Any], how: list[str], then: list[str]) -> ManualSteps:
        entry = {"name": name, **server}
        link = deeplink({name: entry})
        steps = [
            f"open the deep link (macOS `open`, Windows `start \"\"`, Linux `xdg-open`): {link}",
            *how,
            "enable the server and trust it (protocol installs start inactive and untrusted)",
            *then,
            f"skills (Agents only): import the folders staged in {self.skills_dir()} in the Agent's skills settings",
        ]
        snippet = json.dumps({"mcpServers": {name: entry}}, indent=2, ensure_ascii=False)
        return {"steps": steps, "snippet": snippet, "deeplink": link}


def create(ctx: HostContext, data_dir: Path, edition: str | None) -> HostPort:
    """The `cherry-studio` host (registry.py's factory signature)."""
    without_editions("cherry-studio", edition)
    return CherryStudioHost(ctx, data_dir)
