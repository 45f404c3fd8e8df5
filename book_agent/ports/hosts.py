"""The AI-host port behind the HostAdapter facade, and the facade as the host use cases see it."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from book_agent.domain.book.book_reports import PackageReport
from book_agent.domain.host_config import (
    ConfigEntry,
    HostDetection,
    HostInspection,
    HostNote,
    HostPlan,
    HostVerification,
    ManualSteps,
)
from book_agent.domain.library import HostLibrary
from book_agent.domain.remote_server import RemoteServer


@runtime_checkable
class HostPort(Protocol):
    """One AI host's files (Codex TOML, Trae/WorkBuddy/Cherry Studio JSON), behind the
    HostAdapter facade. Pure: reads nothing but the text it is given (and `detect` the disk)."""

    host: str
    edition: str | None
    unconfirmed: tuple[str, ...]

    def detect(self) -> HostDetection:
        """{installed: bool, evidence: [paths that exist], ...}: whether the host seems present."""
        ...
    def config_path(self) -> Path | None:
        """The user-level MCP config file we edit, or None when no program may write it."""
        ...
    def skills_dir(self) -> Path:
        """The folder that holds one sub-folder per installed skill."""
        ...
    def server_entry(self, argv: list[str], auth_env: str | None) -> ConfigEntry:
        """The keys book-agent manages in the server's entry (never a credential value)."""
        ...
    def http_entry(self, remote: RemoteServer) -> ConfigEntry:
        """The keys book-agent manages in a streamable-HTTP entry: the URL and, where the host
        can, the NAME of the token's variable (never a token). Raises host.token_env_unsupported."""
        ...
    def add_server(self, text: str | None, path: Path, name: str, entry: ConfigEntry) -> str:
        """The config text with our entry set (other keys kept; the other transport's keys dropped
        when `entry` switches stdio <-> HTTP). Raises host.config_malformed."""
        ...
    def remove_server(self, text: str, path: Path, name: str) -> tuple[str, bool]:
        """(text without our entry, whether nothing but an empty shell is left)."""
        ...
    def read_server(self, text: str | None, path: Path, name: str) -> ConfigEntry | None: ...

    def warnings(self, argv: list[str], auth_env: str | None) -> list[HostNote]:
        """Known refusals and caveats: [{code, message}]."""
        ...
    def manual(self, name: str, argv: list[str], auth_env: str | None) -> ManualSteps:
        """{steps: [...], snippet: str, deeplink: str | None} for doing it by hand."""
        ...
    def http_warnings(self, remote: RemoteServer) -> list[HostNote]:
        """Caveats of the HTTP form on this host: [{code, message}]."""
        ...
    def http_manual(self, name: str, remote: RemoteServer) -> ManualSteps:
        """{steps, snippet, deeplink} for adding the HTTP form by hand (a token only as a placeholder)."""
        ...


# What is installed: a book (its PackageInfo.to_dict()) or a library of them.
Installable = PackageReport | HostLibrary


class HostInstaller(Protocol):
    """One host in one home, as the host use cases call it (the HostAdapter facade, or a fake).
    install and uninstall are dry runs unless `apply`; nothing here holds a credential value."""

    def inspect(self) -> HostInspection: ...
    def install(self, package: Installable, mcp_command: list[str] | None = None, apply: bool = False, *,
                skill_dir: Path | None = None, auth_env: str | None = None,
                remote: RemoteServer | None = None, replace: bool = False) -> HostPlan: ...
    def uninstall(self, package: Installable, skill_dir: Path | None = None, apply: bool = False, *,
                  remote: RemoteServer | None = None) -> HostPlan: ...
    def verify(self, package: Installable, mcp_command: list[str] | None = None, skill_dir: Path | None = None, *,
               auth_env: str | None = None, remote: RemoteServer | None = None) -> HostVerification: ...
    def render_manual_instructions(self, package: Installable, mcp_command: list[str] | None = None, *,
                                   auth_env: str | None = None, remote: RemoteServer | None = None) -> str: ...
