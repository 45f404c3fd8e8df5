"""Hosts come through the same plug-in loader as rerankers and library backends (issue 47): a host
installed as a distribution (a dist-info with an entry point in `book_agent.hosts`) is installed
into like a built-in, listed by `doctor`, and cannot take a built-in's name; broken host plug-ins
and unknown names are coded errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.hosts import HostAdapter
from book_agent_adapters.hosts.registry import BUILTINS, GROUP, available
from book_agent_adapters.install.report import install_report
from tests.support import REPO_ROOT
from tests.support.plugins import install_dist

EXAMPLE = REPO_ROOT / "examples" / "art-of-war-package"

PLUGIN = '''
from pathlib import Path

from book_agent.domain.host_config import HostDetection, ManualSteps
from book_agent_adapters.hosts.base import JsonMcpHost, without_editions


class NotebookHost(JsonMcpHost):
    """A made-up host that keeps its servers in ~/.notebook/mcp.json, as Trae and WorkBuddy do."""

    host = "notebook"
    label = "Notebook"
    unconfirmed = ("a made-up host of the tests",)

    def config_path(self):
        return self.ctx.home / ".notebook" / "mcp.json"

    def skills_dir(self):
        return self.ctx.home / ".notebook" / "skills"

    def detect(self):
        return HostDetection(installed=self.config_path().parent.is_dir(), evidence=[])

    def warnings(self, argv, auth_env):
        return []

    def manual(self, name, argv, auth_env):
        return ManualSteps(steps=["merge the snippet into " + str(self.config_path())],
                           snippet=self.json_snippet(name, argv, auth_env), deeplink=None)

    def http_manual(self, name, remote):
        return ManualSteps(steps=["merge the snippet"], snippet=self.http_snippet(name, remote), deeplink=None)


def create(ctx, data_dir, edition):
    without_editions("notebook", edition)
    return NotebookHost(ctx)


def not_a_port(ctx, data_dir, edition):
    return "a string"


def takeover(ctx, data_dir, edition):
    raise AssertionError("a plug-in must never replace a built-in host")
'''


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    install_dist(site, "notebook-host", "notebook_host", {
        "notebook": "notebook_host:create", "broken": "notebook_host_missing:create",
        "stringy": "notebook_host:not_a_port", "codex": "notebook_host:takeover"}, PLUGIN, group=GROUP)
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop("notebook_host", None)


def test_a_host_plugin_installs_like_a_built_in(plugin_site: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".notebook").mkdir(parents=True)
    adapter = HostAdapter("notebook", home=home, data_dir=tmp_path / "data")
    assert adapter.detect()["host"] == "notebook"
    assert adapter.port.config_path() == home / ".notebook" / "mcp.json"
    assert available()[:4] == list(BUILTINS) and "notebook" in available()
    result = adapter.install(EXAMPLE, None, apply=True)
    written = json.loads((home / ".notebook" / "mcp.json").read_text(encoding="utf-8"))
    assert written["mcpServers"]["book-art-of-war"]["args"][-2:] == ["mcp", "art-of-war"]
    assert (home / ".notebook" / "skills").is_dir() and result["applied"]
    doctor = install_report(tmp_path / "data", home=home)
    listed = json.dumps(doctor)
    assert "host: notebook" in listed or "host:notebook" in listed


def test_a_plugin_cannot_take_a_built_in_host_name(plugin_site: Path, tmp_path: Path) -> None:
    adapter = HostAdapter("codex", home=tmp_path / "home", data_dir=tmp_path / "data")
    assert type(adapter.port).__module__ == "book_agent_adapters.hosts.apps.codex"
    assert available().count("codex") == 1


@pytest.mark.parametrize("name", ["broken", "stringy"])
def test_a_broken_host_plugin_is_a_coded_error(plugin_site: Path, tmp_path: Path, name: str) -> None:
    with pytest.raises(BookAgentError) as caught:
        HostAdapter(name, home=tmp_path / "home", data_dir=tmp_path / "data")
    assert caught.value.code == "host.plugin_failed"
    assert caught.value.details["host"] == name


def test_an_unknown_host_lists_the_plugins_too(plugin_site: Path, tmp_path: Path) -> None:
    with pytest.raises(BookAgentError) as caught:
        HostAdapter("emacs", home=tmp_path / "home", data_dir=tmp_path / "data")
    assert caught.value.code == "host.unknown"
    assert {"codex", "trae", "workbuddy", "cherry-studio", "notebook"} <= set(caught.value.available_capabilities)


@pytest.mark.parametrize("host", ["codex", "workbuddy", "cherry-studio", "notebook"])
def test_an_edition_for_a_host_without_editions_is_refused(plugin_site: Path, tmp_path: Path, host: str) -> None:
    with pytest.raises(BookAgentError) as caught:
        HostAdapter(host, home=tmp_path / "home", data_dir=tmp_path / "data", edition="cn")
    assert caught.value.code == "host.unknown_edition"


def test_aliases_still_name_cherry_studio(tmp_path: Path) -> None:
    for alias in ("cherry", "cherrystudio"):
        adapter = HostAdapter(alias, home=tmp_path / "home", data_dir=tmp_path / "data")
        assert type(adapter.port).__name__ == "CherryStudioHost"
