"""OpenAI Codex (CLI, IDE extension, app): `config.toml` edited with tomlkit.

Config: `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), table
`[mcp_servers.<name>]` with `command`, `args`, `env_vars` (names forwarded from Codex's
own environment: never a value) and `startup_timeout_sec`; or, for a served library
(`host install codex --url URL`), the streamable-HTTP form: `url` and
`bearer_token_env_var` (the NAME of the variable Codex reads the token from, sent as
`Authorization: Bearer ...`; codex-rs/config/src/mcp_types.rs). Codex refuses a table
that mixes the two (`args is not supported for streamable_http` fails the whole config),
so switching forms drops the other form's keys. tomlkit keeps comments,
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

from book_agent.domain.host_config import HostDetection, HostNote, ManualSteps
from book_agent.domain.remote_server import RemoteServer
from book_agent.ports import HostPort
from book_agent_adapters.hosts.base import (
    HostContext,
    entry_transport,
    managed_subset,
    without_editions,
)
from book_agent_adapters.hosts.errors import config_malformed

STARTUP_TIMEOUT_SEC = 30  # Python start-up plus the first import can pass Codex's 10 s default
MANAGED_KEYS = ["command", "args", "env_vars", "startup_timeout_sec"]  # the stdio form
HTTP_KEYS = ["url", "bearer_token_env_var"]  # the streamable-HTTP form
# What Codex's parser refuses in the other form (RawMcpServerConfig's throw_if_set).
STDIO_ONLY = {"command", "args", "env", "env_vars", "cwd"}
HTTP_ONLY = {"url", "bearer_token", "bearer_token_env_var", "http_headers", "env_http_headers", "oauth",
             "oauth_resource"}


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

    def detect(self) -> HostDetection:
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

    def http_entry(self, remote: RemoteServer) -> dict[str, Any]:
        entry: dict[str, Any] = {"url": remote.url}
        if remote.token_env:
            entry["bearer_token_env_var"] = remote.token_env  # the name; Codex reads the value itself
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
        if current is not None:  # a re-install: edited in place, so the user's comments stay
            _update_in_place(current, entry, _dropped(current_plain, entry))
            return _tidy(doc.as_string(), text)
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc["mcp_servers"] = servers
        table = tomlkit.table()
        for key in _managed(entry):
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

    def warnings(self, argv: list[str], auth_env: str | None) -> list[HostNote]:
        return []

    def http_warnings(self, remote: RemoteServer) -> list[HostNote]:
        if remote.token_env or remote.loopback:
            return []
        return [{
            "code": "host.http_token_missing",
            "message": f"{remote.url} is on another machine, so the server requires a token (`book-agent serve` "
            "refuses other addresses without one): install again with --token-env NAME, the variable Codex "
            "reads it from",
        }]

    def http_manual(self, name: str, remote: RemoteServer) -> ManualSteps:
        import tomlkit

        snippet = tomlkit.dumps({"mcp_servers": {name: self.http_entry(remote)}})
        add = ["codex", "mcp", "add", name, "--url", remote.url]
        if remote.token_env:
            add += ["--bearer-token-env-var", remote.token_env]
        steps = [
            f"add this table to {self.config_path()} (or run: {' '.join(_quote(a) for a in add)})",
            "check it: `codex mcp get " + name + " --json` (transport streamable_http); in the TUI, `/mcp` "
            "lists connected servers",
            "restart Codex so it loads the server and the skills",
        ]
        if remote.token_env:
            steps.append(f"export {remote.token_env}=<your token> where Codex starts; Codex sends it as "
                         "Authorization: Bearer (book-agent never writes the token)")
        return {"steps": steps, "snippet": snippet, "deeplink": None}

    def manual(self, name: str, argv: list[str], auth_env: str | None) -> ManualSteps:
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


def _update_in_place(table: Any, entry: dict[str, Any], dropped: set[str]) -> None:
    """Our keys set on the user's own table: keys and comments we do not own stay where they
    are, and a value we change keeps the comment after it (rebuilding the table from plain
    values, as before, dropped every comment in it)."""
    import tomlkit

    for key in [k for k in table if k in dropped]:
        del table[key]
    for key in _managed(entry):
        if key not in entry or _plain(table.get(key)) == entry[key]:
            continue
        old = table.item(key) if key in table else None
        new = tomlkit.item(entry[key])
        comment = getattr(getattr(old, "trivia", None), "comment", "")
        if comment:
            new.comment(comment.lstrip("#").strip())
        table[key] = new


def _managed(entry: dict[str, Any]) -> list[str]:
    return HTTP_KEYS if entry_transport(entry) == "http" else MANAGED_KEYS


def _dropped(current: dict[str, Any] | None, entry: dict[str, Any]) -> set[str]:
    """Keys that must go: the other form's (Codex refuses a table with both), and our own
    optional ones this entry no longer has (a forwarded name or token variable we no longer want)."""
    if not current:
        return set()
    new = entry_transport(entry)
    foreign = STDIO_ONLY if new == "http" else HTTP_ONLY
    if new == "http" and entry_transport(current) == "stdio":
        foreign = foreign | {"startup_timeout_sec"}  # ours, for Python's start-up: not an HTTP server's
    return {k for k in current if (k in foreign or k in _managed(entry)) and k not in entry}


def _same(current: dict[str, Any] | None, entry: dict[str, Any]) -> bool:
    if current is None:
        return False
    return managed_subset(current, list(entry)) == entry and not _dropped(current, entry)


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


def create(ctx: HostContext, data_dir: Path, edition: str | None) -> HostPort:
    """The `codex` host (registry.py's factory signature)."""
    without_editions("codex", edition)
    return CodexHost(ctx)
