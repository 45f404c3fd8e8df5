"""The non-public FastMCP / MCP SDK / sse-starlette names book-agent uses live in one module,
book_agent/mcp/internals.py, written against WRITTEN_AGAINST; each still exists in the
installed releases, which are within pyproject.toml's bounds (`make test-minima` runs this
against the oldest allowed)."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from book_agent.mcp import internals
from tests.support import REPO_ROOT

PRIVATE_NAMES = ("_mcp_server", "_lifespan_manager", "set_transport", "reset_transport", "AppStatus")


def declared() -> dict[str, Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {(r := Requirement(line)).name: r for line in project["dependencies"]}


def test_it_names_the_releases_it_was_written_against_and_they_are_allowed() -> None:
    requirements = declared()
    for dist, version in internals.WRITTEN_AGAINST.items():
        bound = requirements[dist].specifier
        assert Version(version) in bound, (dist, version, str(bound))
        assert any(s.operator == "<" for s in bound), f"{dist}: no upper bound on the next major"


def test_the_installed_releases_are_within_the_declared_bounds() -> None:
    for dist in internals.WRITTEN_AGAINST:
        installed = Version(importlib.metadata.version(dist))
        assert installed in declared()[dist].specifier, (dist, str(installed))


def test_every_private_name_used_still_exists() -> None:
    from fastmcp import FastMCP
    from fastmcp.server import context
    from sse_starlette.sse import AppStatus

    server = FastMCP("probe")
    assert hasattr(server, "_mcp_server") and callable(server._lifespan_manager)
    low = server._mcp_server
    assert callable(low.run) and callable(low.create_initialization_options)
    assert callable(context.set_transport) and callable(context.reset_transport)
    assert callable(AppStatus.disable_automatic_graceful_drain)


def test_no_other_module_uses_them() -> None:
    pattern = re.compile("|".join(rf"\b{re.escape(n)}\b" for n in PRIVATE_NAMES))
    users = sorted(str(p.relative_to(REPO_ROOT)) for root in ("book_agent", "adapters")
                   for p in (REPO_ROOT / root).rglob("*.py") if pattern.search(p.read_text(encoding="utf-8")))
    assert users == ["book_agent/mcp/internals.py"]
