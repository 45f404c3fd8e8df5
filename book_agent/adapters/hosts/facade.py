"""HostAdapter: the contract's facade over the per-host adapters (`HostPort`s).

    adapter = HostAdapter("trae", edition="cn", home=sandbox, data_dir=data)
    plan = adapter.install(package, mcp_command(data, "my-book"))          # dry run
    result = adapter.install(package, None, apply=True, auth_env="KEY")    # writes
    adapter.install(host_library("@all", registered_ids), apply=True)      # a library server

Every method takes a book's package or a library (`HostLibrary`, targets.py): one server
and one skill either way.

Every change is first planned as file operations (`ops.Op`): a plan lists each path with
its action and a unified diff, and `apply` performs exactly those operations.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from book_agent.adapters.hosts import ops, safe_write, skills
from book_agent.adapters.hosts.base import HostContext, read_config
from book_agent.adapters.hosts.naming import BOOK_AGENT_SKILL
from book_agent.adapters.hosts.targets import Installable, InstallTarget, install_target
from book_agent.domain.errors import BookAgentError
from book_agent.ports import HostPort

HOSTS = ("codex", "trae", "workbuddy", "cherry-studio")


def default_data_dir() -> Path:
    """book-agent's data dir when none is given: $BOOK_AGENT_HOME, else the platform's."""
    from book_agent.settings import resolve_data_dir

    return resolve_data_dir(None)


def mcp_command(data_dir: Path | str, book_id: str) -> list[str]:
    """The exact argv a host runs: this interpreter (absolute), so the server runs where
    book-agent is installed, whatever the host's PATH."""
    return [sys.executable, "-m", "book_agent", "--data-dir", str(Path(data_dir).expanduser().absolute()), "mcp", book_id]


def make_port(host: str, ctx: HostContext, data_dir: Path, edition: str | None) -> HostPort:
    from book_agent.adapters.hosts.cherry_studio import CherryStudioHost
    from book_agent.adapters.hosts.codex import CodexHost
    from book_agent.adapters.hosts.trae import TraeHost
    from book_agent.adapters.hosts.workbuddy import WorkBuddyHost

    if edition is not None and host != "trae":
        raise BookAgentError("host.unknown_edition", f"{host} has no editions", details={"host": host},
                             remediation="--edition applies to trae only (intl or cn)")
    if host == "codex":
        return CodexHost(ctx)
    if host == "trae":
        return TraeHost(ctx, edition)
    if host == "workbuddy":
        return WorkBuddyHost(ctx)
    if host in ("cherry-studio", "cherry", "cherrystudio"):
        return CherryStudioHost(ctx, data_dir)
    raise BookAgentError("host.unknown", f"unknown host {host!r}", details={"host": host},
                         remediation="choose one of: " + ", ".join(HOSTS), available_capabilities=list(HOSTS))


class HostAdapter:
    def __init__(self, host: str, home: Path | str | None = None, data_dir: Path | str | None = None,
                 *, edition: str | None = None, platform: str | None = None) -> None:
        explicit = home is not None
        ctx = HostContext(
            home=Path(home).expanduser().absolute() if home is not None else Path.home(),
            explicit_home=explicit,
            platform=platform or sys.platform,
            environ=dict(os.environ),
        )
        self.data_dir = Path(data_dir).expanduser().absolute() if data_dir is not None else default_data_dir()
        self.port = make_port(host, ctx, self.data_dir, edition)
        self.host = self.port.host
        self.edition = self.port.edition

    # -- looking -------------------------------------------------------------------------
    def detect(self) -> dict[str, Any]:
        found = self.port.detect()
        path = self.port.config_path()
        return {"host": self.host, "edition": self.edition, **found,
                "config_path": str(path) if path else None, "skills_dir": str(self.port.skills_dir()),
                "unconfirmed": list(self.port.unconfirmed)}

    def inspect(self) -> dict[str, Any]:
        """What book-agent has put into this host: its servers and skill folders."""
        path = self.port.config_path()
        servers: list[str] = []
        text = read_config(path, self.host) if path is not None else None
        if path is not None and text is not None:
            servers = [n for n in _server_names(self.port, text, path) if n.startswith("book-")]
        folder = self.port.skills_dir()
        installed = sorted(p.parent.name for p in folder.glob("*/" + skills.MANIFEST_NAME)) if folder.is_dir() else []
        return {**self.detect(), "config_exists": bool(path and path.is_file()),
                "book_servers": servers, "book_agent_skills": installed}

    # -- planning --------------------------------------------------------------------------
    def _skill_ops(self, target: InstallTarget, skill_dir: Path | None) -> list[ops.Op]:
        folder = Path(skill_dir) if skill_dir is not None else self.port.skills_dir()
        return (skills.install_ops(target.bundle(), folder, target.name)
                + skills.install_ops(skills.shipped_bundle(BOOK_AGENT_SKILL), folder, target.name))

    def _mcp_ops(self, target: InstallTarget, argv: list[str], auth_env: str | None) -> list[ops.Op]:
        path = self.port.config_path()
        if path is None:
            return []
        text = read_config(path, self.host)
        new = self.port.add_server(text, path, target.name, self.port.server_entry(argv, auth_env))
        return [ops.Op(path, new.encode("utf-8"), "mcp_config", backup=True)]

    def plan_install(self, package: Installable, mcp_command: list[str] | None = None,
                     skill_dir: Path | None = None, *, auth_env: str | None = None) -> dict[str, Any]:
        """`package`: a book's package (PackageInfo, its root, its to_dict()) or a HostLibrary."""
        target = install_target(package)
        argv = self._argv(target, mcp_command)
        planned = self._mcp_ops(target, argv, auth_env) + self._skill_ops(target, skill_dir)
        return self._plan(target, argv, auth_env, planned, "install")

    def _argv(self, target: InstallTarget, argv: list[str] | None) -> list[str]:
        return list(argv) if argv else mcp_command(self.data_dir, target.serves)

    def _plan(self, target: InstallTarget, argv: list[str], auth_env: str | None, planned: list[ops.Op],
              operation: str) -> dict[str, Any]:
        name = target.name
        path = self.port.config_path()
        warnings = list(self.port.warnings(argv, auth_env)) + target.warnings(auth_env)
        if path is not None and path.is_file() and hasattr(self.port, "style_warnings"):
            warnings += self.port.style_warnings(read_config(path, self.host))
        changes = [ops.describe(op) for op in planned]
        return {
            "operation": operation, "host": self.host, "edition": self.edition, "book_id": target.book_id,
            "server_name": name, "skill_names": [name, BOOK_AGENT_SKILL], "mcp_command": argv,
            "auth_env": auth_env, "config_path": str(path) if path else None,
            "skills_dir": str(self.port.skills_dir()),
            "changes": changes, "changed": any(c["action"] != "unchanged" for c in changes),
            "warnings": warnings, "unconfirmed": list(self.port.unconfirmed),
            "manual": self.port.manual(name, argv, auth_env), "applied": False, **target.extra, "_ops": planned,
        }

    # -- doing -------------------------------------------------------------------------------
    def install(self, package: Installable, mcp_command: list[str] | None = None,
                apply: bool = False, *, skill_dir: Path | None = None, auth_env: str | None = None) -> dict[str, Any]:
        """The plan (dry run, the default) or, with apply=True, the result of carrying it out."""
        return _finish(self.plan_install(package, mcp_command, skill_dir, auth_env=auth_env), apply)

    def install_skill(self, package: Installable, skill_dir: Path | None = None,
                      apply: bool = True) -> dict[str, Any]:
        target = install_target(package)
        plan = self._plan(target, self._argv(target, None), None, self._skill_ops(target, skill_dir), "install_skill")
        return _finish(plan, apply)

    def configure_mcp(self, package: Installable, mcp_command: list[str] | None = None,
                      apply: bool = True, *, auth_env: str | None = None) -> dict[str, Any]:
        target = install_target(package)
        argv = self._argv(target, mcp_command)
        return _finish(self._plan(target, argv, auth_env, self._mcp_ops(target, argv, auth_env), "configure_mcp"),
                       apply)

    def uninstall(self, package: Installable, skill_dir: Path | None = None,
                  apply: bool = False) -> dict[str, Any]:
        """Remove our server entry and what we installed in the skills folder (a dry run by default)."""
        target = install_target(package)
        name = target.name
        folder = Path(skill_dir) if skill_dir is not None else self.port.skills_dir()
        planned: list[ops.Op] = []
        path = self.port.config_path()
        text = read_config(path, self.host) if path is not None else None
        if path is not None and text is not None:
            new, empty = self.port.remove_server(text, path, name)
            # A file we created (no backup of an original) goes when nothing else is in it.
            gone = empty and not safe_write.backup_path(path).exists()
            # Deleting a file we created needs no backup; any other change keeps the original once.
            planned.append(ops.Op(path, None if gone else new.encode("utf-8"), "mcp_config", backup=not gone))
        planned += skills.uninstall_ops(name, folder, name) + skills.uninstall_ops(BOOK_AGENT_SKILL, folder, name)
        return _finish(self._plan(target, self._argv(target, None), None, planned, "uninstall"), apply)

    def verify(self, package: Installable, mcp_command: list[str] | None = None,
               skill_dir: Path | None = None, *, auth_env: str | None = None) -> dict[str, Any]:
        from book_agent.adapters.hosts.verify import verify

        target = install_target(package)
        folder = Path(skill_dir) if skill_dir is not None else self.port.skills_dir()
        return verify(self.port, target, self._argv(target, mcp_command), auth_env, folder)

    def render_manual_instructions(self, package: Installable,
                                   mcp_command: list[str] | None = None, *, auth_env: str | None = None) -> str:
        from book_agent.adapters.hosts.verify import render_manual

        target = install_target(package)
        argv = self._argv(target, mcp_command)
        warnings = list(self.port.warnings(argv, auth_env)) + target.warnings(auth_env)
        return render_manual(self.host, self.port.manual(target.name, argv, auth_env), warnings,
                             self.port.unconfirmed)


def install(package: Installable, mcp_command: list[str] | None = None,
            apply: bool = False, *, host: str = "codex", home: Path | str | None = None,
            data_dir: Path | str | None = None, edition: str | None = None,
            skill_dir: Path | None = None, auth_env: str | None = None) -> dict[str, Any]:
    """One call: the plan (a dry run, the default) or, with apply=True, the result."""
    adapter = HostAdapter(host, home=home, data_dir=data_dir, edition=edition)
    return adapter.install(package, mcp_command, apply, skill_dir=skill_dir, auth_env=auth_env)


def _finish(plan: dict[str, Any], apply: bool) -> dict[str, Any]:
    planned: list[ops.Op] = plan.pop("_ops")
    if apply:
        plan.update(ops.apply(planned), applied=True)
    return plan


def _server_names(port: HostPort, text: str, path: Path) -> list[str]:
    import re

    # Names only, for inspect: read_server needs a name, so list candidates from the text.
    found = re.findall(r'(?:mcp_servers\.|")(book-[a-z0-9-]+)', text)
    return sorted({n for n in found if port.read_server(text, path, n) is not None})
