"""Reranker plug-ins under test: the suite sees the built-in rerankers only, whatever the
environment has installed (the venv carries examples/reranker-plugin), unless a test
installs one: a temporary dist-info on sys.path (`install_dist`), or the example plug-in
from its source folder (the `example_plugin` fixture in tests/conftest.py).

book-agent has no switch for "no third-party plug-ins" (simonw/llm, for one, skips entry
points under test and has LLM_LOAD_PLUGINS), so discovery's view of importlib.metadata is
replaced, for the plug-in loader (book_agent_adapters.plugins.entry_points) and the reranker
group only, by one that leaves out the
distributions found installed when the session started. book-agent's own distribution
(it registers the built-ins through the same group) and any distribution a test adds stay.
"""

from __future__ import annotations

import sys
import textwrap
import tomllib
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from . import REPO_ROOT

GROUP = "book_agent.rerankers"
HOME_DIST = "book-agent"
EXAMPLE = REPO_ROOT / "examples" / "reranker-plugin"
EXAMPLE_MODULE = "book_agent_reranker_example"


def _normal(name: str | None) -> str:
    return (name or "").lower().replace("_", "-")


def _key(ep: metadata.EntryPoint) -> tuple[str, str, str, str]:
    dist = ep.dist
    where = str(dist.locate_file("")) if dist is not None else ""
    return (_normal(dist.name) if dist is not None else "", where, ep.name, ep.value)


def installed_plugins() -> frozenset[tuple[str, str, str, str]]:
    """The third-party reranker entry points installed in this environment right now."""
    return frozenset(_key(ep) for ep in metadata.entry_points(group=GROUP)
                     if ep.dist is None or _normal(ep.dist.name) != HOME_DIST)


class WithoutInstalledPlugins(ModuleType):
    """importlib.metadata, except that the reranker group leaves out `hidden` entry points."""

    def __init__(self, hidden: frozenset[tuple[str, str, str, str]]) -> None:
        super().__init__(metadata.__name__)
        self._hidden = hidden

    def __getattr__(self, name: str) -> Any:
        return getattr(metadata, name)

    def entry_points(self, **params: Any) -> metadata.EntryPoints:
        found = metadata.entry_points(**params)
        if params.get("group") != GROUP:
            return found
        return metadata.EntryPoints(ep for ep in found if _key(ep) not in self._hidden)


def install_dist(site: Path, dist: str, module: str | None, entries: dict[str, str], source: str = "",
                 version: str = "1.0", group: str = GROUP) -> None:
    """A real installed distribution as importlib.metadata finds it: dist-info (+ module)."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = "\n".join(f"{name} = {value}" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}\n")
    if module is not None:
        (site / f"{module}.py").write_text(textwrap.dedent(source))


def install_example(site: Path) -> list[str]:
    """examples/reranker-plugin as an installed distribution whose code is the source folder.
    Returns the folders to put on sys.path."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    install_dist(site, project["name"], None, project["entry-points"][GROUP], version=project["version"])
    return [str(site), str(EXAMPLE)]


def forget_example() -> None:
    for name in [m for m in sys.modules if m == EXAMPLE_MODULE or m.startswith(EXAMPLE_MODULE + ".")]:
        del sys.modules[name]
