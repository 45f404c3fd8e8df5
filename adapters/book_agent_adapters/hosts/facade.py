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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from book_agent.domain.host_config import (
    HostInspection,
    HostNote,
    HostPlan,
    HostVerification,
    ManualSteps,
)
from book_agent.domain.remote_server import RemoteServer
from book_agent.ports import HostPort
from book_agent_adapters.hosts import skills
from book_agent_adapters.hosts.base import HostContext, entry_transport, read_config
from book_agent_adapters.hosts.conflicts import check_data_dir, server_names
from book_agent_adapters.hosts.files import ops, safe_write
from book_agent_adapters.hosts.naming import BOOK_AGENT_SKILL
from book_agent_adapters.hosts.registry import BUILTINS, make_port
from book_agent_adapters.hosts.targets import (
    Installable,
    InstallTarget,
    install_target,
    replaced_warning,
)

HOSTS = tuple(BUILTINS)  # the built-in hosts; registry.available() adds plug-ins


def default_data_dir() -> Path:
    """book-agent's data dir when none is given: $BOOK_AGENT_HOME, else the platform's."""
    from book_agent.settings import resolve_data_dir

    return resolve_data_dir(None)


def mcp_command(data_dir: Path | str, book_id: str) -> list[str]:
    """The exact argv a host runs: this interpreter (absolute), so the server runs where
    book-agent is installed, whatever the host's PATH."""
    return [sys.executable, "-m", "book_agent", "--data-dir", str(Path(data_dir).expanduser().absolute()), "mcp", book_id]


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
        self.ctx = ctx
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

    def inspect(self) -> HostInspection:
        """What book-agent has put into this host: its servers and skill folders."""
        path = self.port.config_path()
        servers: list[str] = []
        forms: dict[str, dict[str, Any]] = {}
        text = read_config(path, self.host) if path is not None else None
        if path is not None and text is not None:
            servers = [n for n in server_names(self.port, text, path) if n.startswith("book-")]
            for name in servers:  # how the host reaches each: it starts it, or connects to a URL
                entry = self.port.read_server(text, path, name) or {}
                forms[name] = {"transport": entry_transport(entry), "url": entry.get("url")}
        folder = self.port.skills_dir()
        installed = sorted(p.parent.name for p in folder.glob("*/" + skills.MANIFEST_NAME)) if folder.is_dir() else []
        return cast(HostInspection, {**self.detect(), "config_exists": bool(path and path.is_file()),
                                     "book_servers": servers, "book_server_forms": forms,
                                     "book_agent_skills": installed})  # detect's keys, then these

    # -- planning --------------------------------------------------------------------------
    def _skill_ops(self, target: InstallTarget, skill_dir: Path | None) -> list[ops.Op]:
        folder = Path(skill_dir) if skill_dir is not None else self.port.skills_dir()
        return (skills.install_ops(target.bundle(), folder, target.name)
                + skills.install_ops(skills.shipped_bundle(BOOK_AGENT_SKILL), folder, target.name))

    def _form(self, target: InstallTarget, argv: list[str] | None, auth_env: str | None,
              remote: RemoteServer | None) -> Form:
        if remote is not None:
            self.port.http_entry(remote)  # a host that cannot take the form refuses it before any plan
            return Form(None, None, remote)
        return Form(list(argv) if argv else mcp_command(self.data_dir, target.serves), auth_env, None)

    def _mcp_ops(self, target: InstallTarget, form: Form, replace: bool = False) -> list[ops.Op]:
        path = self.port.config_path()
        if path is None:
            return []
        text = read_config(path, self.host)
        entry = form.entry(self.port)
        check_data_dir(self.port.read_server(text, path, target.name), entry, target.name, self.host, replace)
        new = self.port.add_server(text, path, target.name, entry)
        return [ops.Op(path, new.encode("utf-8"), "mcp_config", backup=True)]

    def plan_install(self, package: Installable, mcp_command: list[str] | None = None,
                     skill_dir: Path | None = None, *, auth_env: str | None = None,
                     remote: RemoteServer | None = None, replace: bool = False) -> dict[str, Any]:
        """`package`: a book's package (PackageInfo, its root, its to_dict()) or a HostLibrary.
        `remote`: the library's server over streamable HTTP (the host connects to its URL)
        instead of `book-agent mcp` started by the host. `replace`: re-point a server name
        installed from another data dir (else host.server_conflict)."""
        target = install_target(package)
        form = self._form(target, mcp_command, auth_env, remote)
        planned = self._mcp_ops(target, form, replace) + self._skill_ops(target, skill_dir)
        return self._plan(target, form, planned, "install")

    def _warnings(self, target: InstallTarget, form: Form, operation: str) -> list[HostNote]:
        warnings = form.warnings(self.port) + target.warnings(form.auth_env, remote=form.remote is not None)
        path = self.port.config_path()
        text = read_config(path, self.host) if path is not None and path.is_file() else None
        if text is not None and hasattr(self.port, "style_warnings"):
            warnings += self.port.style_warnings(text)
        if operation in ("install", "configure_mcp") and path is not None and text is not None:
            was = entry_transport(self.port.read_server(text, path, target.name))
            if was is not None and was != form.transport:
                warnings.append(replaced_warning(target.name, was, form.transport))
        token_env = form.remote.token_env if form.remote else None
        if token_env and operation != "uninstall" and not self.ctx.environ.get(token_env):
            warnings.append({"code": "host.token_env_unset",
                             "message": f"{token_env} is not set in this environment: export the token in it where "
                             f"{self.host} starts (book-agent never writes or shows its value)"})
        return warnings

    def _plan(self, target: InstallTarget, form: Form, planned: list[ops.Op], operation: str) -> dict[str, Any]:
        name = target.name
        path = self.port.config_path()
        changes = [ops.describe(op) for op in planned]
        remote = form.remote
        return {
            "operation": operation, "host": self.host, "edition": self.edition, "book_id": target.book_id,
            "server_name": name, "skill_names": [name, BOOK_AGENT_SKILL], "mcp_command": form.argv,
            "auth_env": form.auth_env, "transport": form.transport, "url": remote.url if remote else None,
            "token_env": remote.token_env if remote else None, "config_path": str(path) if path else None,
            "skills_dir": str(self.port.skills_dir()),
            "changes": changes, "changed": any(c["action"] != "unchanged" for c in changes),
            "warnings": self._warnings(target, form, operation), "unconfirmed": list(self.port.unconfirmed),
            "manual": form.manual(self.port, name), "applied": False, **target.extra, "_ops": planned,
        }

    # -- doing -------------------------------------------------------------------------------
    def install(self, package: Installable, mcp_command: list[str] | None = None,
                apply: bool = False, *, skill_dir: Path | None = None, auth_env: str | None = None,
                remote: RemoteServer | None = None, replace: bool = False) -> HostPlan:
        """The plan (dry run, the default) or, with apply=True, the result of carrying it out."""
        plan = self.plan_install(package, mcp_command, skill_dir, auth_env=auth_env, remote=remote, replace=replace)
        return _finish(plan, apply)

    def install_skill(self, package: Installable, skill_dir: Path | None = None,
                      apply: bool = True) -> HostPlan:
        target = install_target(package)
        form = self._form(target, None, None, None)
        return _finish(self._plan(target, form, self._skill_ops(target, skill_dir), "install_skill"), apply)

    def configure_mcp(self, package: Installable, mcp_command: list[str] | None = None,
                      apply: bool = True, *, auth_env: str | None = None,
                      remote: RemoteServer | None = None) -> HostPlan:
        target = install_target(package)
        form = self._form(target, mcp_command, auth_env, remote)
        return _finish(self._plan(target, form, self._mcp_ops(target, form), "configure_mcp"), apply)

    def uninstall(self, package: Installable, skill_dir: Path | None = None,
                  apply: bool = False, *, remote: RemoteServer | None = None) -> HostPlan:
        """Remove our server entry (stdio or HTTP form alike) and what we installed in the skills
        folder (a dry run by default). `remote` only shapes the plan shown: the entry goes by name."""
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
        form = Form(None, None, remote) if remote is not None else self._form(target, None, None, None)
        return _finish(self._plan(target, form, planned, "uninstall"), apply)

    def verify(self, package: Installable, mcp_command: list[str] | None = None,
               skill_dir: Path | None = None, *, auth_env: str | None = None,
               remote: RemoteServer | None = None) -> HostVerification:
        from book_agent_adapters.hosts.verify import verify

        target = install_target(package)
        folder = Path(skill_dir) if skill_dir is not None else self.port.skills_dir()
        form = self._form(target, mcp_command, auth_env, remote)
        return cast(HostVerification, verify(self.port, target, form.entry(self.port), folder))

    def render_manual_instructions(self, package: Installable, mcp_command: list[str] | None = None, *,
                                   auth_env: str | None = None, remote: RemoteServer | None = None) -> str:
        from book_agent_adapters.hosts.verify import render_manual

        target = install_target(package)
        form = self._form(target, mcp_command, auth_env, remote)
        warnings = form.warnings(self.port) + target.warnings(form.auth_env, remote=remote is not None)
        return render_manual(self.host, form.manual(self.port, target.name), warnings, self.port.unconfirmed)


@dataclass(frozen=True)
class Form:
    """How the host reaches the server: it starts `argv` (stdio), or connects to `remote` (HTTP)."""

    argv: list[str] | None
    auth_env: str | None
    remote: RemoteServer | None

    @property
    def transport(self) -> str:
        return "http" if self.remote is not None else "stdio"

    def entry(self, port: HostPort) -> dict[str, Any]:
        if self.remote is not None:
            return port.http_entry(self.remote)
        assert self.argv is not None
        return port.server_entry(self.argv, self.auth_env)

    def warnings(self, port: HostPort) -> list[HostNote]:
        if self.remote is not None:
            return list(port.http_warnings(self.remote))
        assert self.argv is not None
        return list(port.warnings(self.argv, self.auth_env))

    def manual(self, port: HostPort, name: str) -> ManualSteps:
        if self.remote is not None:
            return port.http_manual(name, self.remote)
        assert self.argv is not None
        return port.manual(name, self.argv, self.auth_env)


def install(package: Installable, mcp_command: list[str] | None = None,
            apply: bool = False, *, host: str = "codex", home: Path | str | None = None,
            data_dir: Path | str | None = None, edition: str | None = None,
            skill_dir: Path | None = None, auth_env: str | None = None,
            remote: RemoteServer | None = None) -> HostPlan:
    """One call: the plan (a dry run, the default) or, with apply=True, the result."""
    adapter = HostAdapter(host, home=home, data_dir=data_dir, edition=edition)
    return adapter.install(package, mcp_command, apply, skill_dir=skill_dir, auth_env=auth_env, remote=remote)


def _finish(plan: dict[str, Any], apply: bool) -> HostPlan:
    planned: list[ops.Op] = plan.pop("_ops")
    if apply:
        plan.update(ops.apply(planned), applied=True)
    return cast(HostPlan, plan)  # _plan's keys (and the target's extra ones), the internal _ops gone
