"""WorkBuddy (Tencent's desktop agent, from the CodeBuddy team; not the CodeBuddy CLI).

MCP config: `~/.workbuddy/mcp.json` (`{"mcpServers": {...}}`, UTF-8 without BOM), read at
launch. Skills: `~/.workbuddy/skills/<name>/`. Closed source, no official reference: every
path comes from third-party READMEs (see contracts/hosts.md).
"""

from __future__ import annotations

from pathlib import Path

from book_agent.domain.host_config import HostDetection, HostNote, ManualSteps
from book_agent.domain.remote_server import RemoteServer
from book_agent.ports import HostPort
from book_agent_adapters.hosts.base import HostContext, JsonMcpHost, env_warning, without_editions

RESTART: HostNote = {
    "code": "host.restart_required",
    "message": "WorkBuddy reads MCP config at launch: restart it, then click Trust on the "
    "new server (Plugins/插件 > MCP)",
}


class WorkBuddyHost(JsonMcpHost):
    host = "workbuddy"
    label = "WorkBuddy"
    http_type = "http"  # the CodeBuddy family's remote entry: {"type": "http", "url": ...}
    unconfirmed: tuple[str, ...] = (
        "~/.workbuddy/mcp.json and ~/.workbuddy/skills come from third-party READMEs; no official reference",
        "whether the MCP server inherits WorkBuddy's environment (and ${VAR} expansion) is unknown",
        "Linux builds of WorkBuddy are not confirmed",
        "the HTTP form {\"type\": \"http\", \"url\": URL} is the CodeBuddy CLI's documented one, assumed for WorkBuddy",
    )

    def __init__(self, ctx: HostContext) -> None:
        super().__init__(ctx)

    def base_dir(self) -> Path:
        return self.ctx.home / ".workbuddy"

    def config_path(self) -> Path:
        return self.base_dir() / "mcp.json"

    def skills_dir(self) -> Path:
        return self.base_dir() / "skills"

    def detect(self) -> HostDetection:
        evidence = [str(p) for p in (self.base_dir(), self.config_path()) if p.exists()]
        return {"installed": bool(evidence), "evidence": evidence, "cli": None}

    def warnings(self, argv: list[str], auth_env: str | None) -> list[HostNote]:
        return [RESTART, *env_warning(auth_env, "WorkBuddy")]

    def http_warnings(self, remote: RemoteServer) -> list[HostNote]:
        return [RESTART, *super().http_warnings(remote)]

    def manual(self, name: str, argv: list[str], auth_env: str | None) -> ManualSteps:
        return self._manual(self.json_snippet(name, argv, auth_env), [], "runs")

    def http_manual(self, name: str, remote: RemoteServer) -> ManualSteps:
        return self._manual(self.http_snippet(name, remote), self.header_step(remote), "answers")

    def _manual(self, snippet: str, extra: list[str], green: str) -> ManualSteps:
        steps = [
            "in WorkBuddy: 插件 (Plugins) > MCP servers > Configure MCP, paste the JSON below, then Try to Run",
            f"or merge it into {self.config_path()} under \"mcpServers\" (UTF-8 without BOM) and restart WorkBuddy",
            *extra,
            f"click Trust on the server; a green dot means it {green}",
            f"skills: copy the installed skill folders to {self.skills_dir()}",
        ]
        return {"steps": steps, "snippet": snippet, "deeplink": None}


def create(ctx: HostContext, data_dir: Path, edition: str | None) -> HostPort:
    """The `workbuddy` host (registry.py's factory signature)."""
    without_editions("workbuddy", edition)
    return WorkBuddyHost(ctx)
