"""OpenAI Codex (CLI, IDE extension, app): `config.toml` edited with tomlkit.

Config: `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), table
`[mcp_servers.<name>]` with `command`, `args`, `env_vars` (names forwarded from Codex's
own environment: never a value) and `startup_timeout_sec`. tomlkit keeps comments,
ordering and every other server; keys a user added to our table (`enabled`,
`tool_timeout_sec`, ...) survive a reinstall. Skills: `~/.agents/skills/<name>/`, a skill
root of Codex's (`codex debug prompt-input` lists it); `$CODEX_HOME/skills` is still read
but deprecated.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from book_agent.adapters.hosts.base import HostContext, managed_subset
from book_agent.adapters.hosts.errors import config_malformed
from book_agent.ports import HostPort

STARTUP_TIMEOUT_SEC = 30  # Python start-up plus the first import can pass Codex's 10 s default
MANAGED_KEYS = ["command", "args", "env_vars", "startup_timeout_sec"]


class CodexHost(HostPort):
    host = "codex"
    edition: str | None = None
    # Nothing left unconfirmed: `codex mcp get --json` reads back the MCP entry and
    # `codex debug prompt-input` lists ~/.agents/skills as a skill root with our skill in it
    # (both checked against the pinned real CLI in tests/e2e/test_hosts_codex_cli.py).
    unconfirmed: tuple[str, ...] = ()

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def home_dir(self) -> Path:
        return self.ctx.env_dir("CODEX_HOME") or self.ctx.home / ".codex"

    def config_path(self) -> Path:
        return self.home_dir() / "config.toml"

    def skills_dir(self) -> Path:
        return self.ctx.home / ".agents" / "skills"

    def detect(self) -> dict[str, Any]:
        evidence = [str(p) for p in (self.home_dir(), self.config_path()) if p.exists()]
        binary = None if self.ctx.explicit_home else shutil.which("codex")
        if binary:
            evidence.append(binary)
        return {"installed": bool(evidence), "evidence": evidence, "cli": binary}

    def server_entry(self, argv: list[str], auth_env: str | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"command": argv[0], "args": list(argv[1:])}
        if auth_env:
            entry["env_vars"] = [auth_env]  # the name only; Codex forwards the value itself
        entry["startup_timeout_sec"] = STARTUP_TIMEOUT_SEC
        return entry

    def _parse(self, text: str | None, path: Path) -> Any:
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        try:
            doc = tomlkit.parse(text or "")
        except TOMLKitError as exc:
            raise config_malformed(path, f"not valid TOML ({exc})", self.host) from exc
        servers = doc.get("mcp_servers")
        if servers is not None and not isinstance(servers, dict):
            raise config_malformed(path, "`mcp_servers` is not a table", self.host)
        return doc

    def add_server(self, text: str | None, path: Path, name: str, entry: dict[str, Any]) -> str:
        import tomlkit

        doc = self._parse(text, path)
        servers = doc.get("mcp_servers")
        current = servers.get(name) if servers is not None else None
        if current is not None and not isinstance(current, dict):
            raise config_malformed(path, f"`mcp_servers.{name}` is not a table", self.host)
        current_plain = _plain(current)
        if text is not None and _same(current_plain, entry):
            return text  # already there: not a byte changes
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc["mcp_servers"] = servers
        table = tomlkit.table()
        for key, value in (current_plain or {}).items():
            if key not in MANAGED_KEYS:
                table[key] = value  # the user's own keys on our server survive
        for key in MANAGED_KEYS:
            if key in entry:
                table[key] = entry[key]
        table.add(tomlkit.nl())
        servers[name] = table
        return _tidy(doc.as_string(), text)

    def remove_server(self, text: str, path: Path, name: str) -> tuple[str, bool]:
        doc = self._parse(text, path)
        servers = doc.get("mcp_servers")
        if servers is None or name not in servers:
            return text, not text.strip()
        del servers[name]
        if not servers and getattr(servers, "is_super_table", lambda: False)():
            del doc["mcp_servers"]  # it held only our entry: leave no empty header behind
        new = _tidy(doc.as_string(), text)
        return new, not new.strip()

    def read_server(self, text: str | None, path: Path, name: str) -> dict[str, Any] | None:
        servers = self._parse(text, path).get("mcp_servers") or {}
        found: dict[str, Any] | None = _plain(servers.get(name))
        return found

    def warnings(self, argv: list[str], auth_env: str | None) -> list[dict[str, str]]:
        return []

    def manual(self, name: str, argv: list[str], auth_env: str | None) -> dict[str, Any]:
        import tomlkit

        snippet = tomlkit.dumps({"mcp_servers": {name: self.server_entry(argv, auth_env)}})
        add = " ".join(_quote(a) for a in ["codex", "mcp", "add", name, "--", *argv])
        steps = [
            f"add this table to {self.config_path()} (or run: {add})",
            "check it: `codex mcp get " + name + " --json`; in the TUI, `/mcp` lists connected servers",
            "restart Codex so it loads the server and the skills",
        ]
        if auth_env:
            steps.append(
                f"export {auth_env} where Codex starts; `env_vars` forwards it (never use `--env` for a secret)"
            )
        return {"steps": steps, "snippet": snippet, "deeplink": None}


def _plain(item: Any) -> Any:
    """tomlkit items as plain Python values."""
    return item.unwrap() if hasattr(item, "unwrap") else item


def _same(current: dict[str, Any] | None, entry: dict[str, Any]) -> bool:
    if current is None:
        return False
    if "env_vars" not in entry and "env_vars" in current:
        return False  # a forwarded name we no longer want must go
    return managed_subset(current, list(entry)) == entry


def _tidy(new: str, old: str | None) -> str:
    """tomlkit leaves blank lines where a table was added or removed at the end: one final
    newline is enough. Line ends follow the original file (CRLF stays CRLF)."""
    stripped = new.rstrip(" \t\r\n")
    crlf = old is not None and "\r\n" in old
    if crlf:
        stripped = re.sub(r"(?<!\r)\n", "\r\n", stripped)
    if not stripped:
        return ""
    return stripped + ("\r\n" if crlf else "\n")


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
