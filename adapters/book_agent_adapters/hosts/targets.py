"""What a host install is of: one book's package, or a library (`@all`, `a,b`).

`InstallTarget` is all the facade needs to plan either: the server/skill name, what the
MCP server is started with (`mcp BOOK_ID` or `mcp REF`), the skill bundle, what the plan
shows, and the warnings that belong to the target rather than to the host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError
from book_agent.domain.host_config import HostNote
from book_agent.domain.library import HostLibrary
from book_agent_adapters.hosts import skills
from book_agent_adapters.hosts.library_skill import library_bundle
from book_agent_adapters.hosts.naming import book_name, library_name
from book_agent_adapters.hosts.packages import as_package

# What HostAdapter's methods accept: a package (PackageInfo, its root, its to_dict()) or a library.
Installable = PackageInfo | Path | str | dict[str, Any] | HostLibrary


@dataclass(frozen=True)
class InstallTarget:
    name: str  # the server name and the skill folder's
    book_id: str  # shown as the plan's book_id: the book's id, or the library's reference
    serves: str  # the argument of `book-agent mcp`
    bundle: Callable[[], skills.SkillBundle]  # built when needed (reads the package's files)
    library: HostLibrary | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys added to plans and reports

    def warnings(self, auth_env: str | None, *, remote: bool = False) -> list[HostNote]:
        # A served library (remote): its books and keys are the server's business, not this machine's.
        return library_warnings(self.library, auth_env) if self.library is not None and not remote else []


def install_target(target: Installable) -> InstallTarget:
    if isinstance(target, HostLibrary):
        return _library(target)
    info = as_package(target)
    if not info.book_id:
        raise BookAgentError("host.package_without_id", "the package has no book_id",
                             remediation="inspect the package: `book-agent inspect PACKAGE`")
    name = book_name(info.book_id)
    return InstallTarget(name, info.book_id, info.book_id, lambda: skills.book_bundle(info, name))


def _library(library: HostLibrary) -> InstallTarget:
    name = library_name(None if library.everything else library.book_ids)
    extra = {"library": {"ref": library.ref, "everything": library.everything, "books": list(library.book_ids)}}
    return InstallTarget(name, library.ref, library.ref, lambda: library_bundle(name, library), library, extra)


def library_warnings(library: HostLibrary, auth_env: str | None) -> list[HostNote]:
    out: list[HostNote] = []
    if library.everything and not library.book_ids:
        out.append({"code": "host.library_empty",
                    "message": "no book is registered yet: the server serves books registered later "
                    "(`book-agent init PACKAGE`), without a reinstall"})
    needing = [(book, env) for book, env in library.auth_envs if env != auth_env]
    if needing:
        names = ", ".join(f"{book} ({env})" for book, env in needing)
        out.append({"code": "host.library_auth_env",
                    "message": f"books with a configured key variable: {names}. A library has no single "
                    "book config, so no variable is forwarded to its server: it needs them in its "
                    "environment. Export them where the host starts (Codex forwards only the variables "
                    "an entry names in `env_vars`: HostAdapter.install(..., auth_env=NAME) writes one)"})
    return out


def replaced_warning(name: str, was: str, now: str) -> HostNote:
    how = {"stdio": "the stdio form (the host starts `book-agent mcp` on this machine)",
           "http": "the HTTP form (the host connects to a served library's URL)"}
    return {"code": "host.transport_replaced",
            "message": f"{name} was {how[was]}; it becomes {how[now]}. One entry per library, whichever way it "
            "is reached: install with the other form to switch back"}
