"""A custom reranker found through the configuring shell's PYTHONPATH is found by the server a
host starts without it (issue 44, item 11): `configure` records the module's folder in the
book's config (reranker.module_path), and `host install` registers the server with the data
dir that holds that config. The server is started from the entry written into the host's own
config file (Codex TOML, Trae JSON), with PYTHONPATH removed, over real stdio."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_support import run_cli
from tests.support.stdio_session import RawSession, call

PLUGIN = """
from book_agent_adapters.rerankers import ScoringReranker

class Reverse(ScoringReranker):
    provider = "reverse"
    model = "reverse-v1"

    def score(self, query, texts, top_n):
        return [(i, float(i)) for i in range(len(texts))]

def create(config, runtime_dir):
    return Reverse()
"""
MODULE = "path_carried_reranker"


@pytest.fixture
def configured(tmp_path: Path, pdf_package_template: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Any]:
    plugins = tmp_path / "my plugins"
    plugins.mkdir()
    (plugins / f"{MODULE}.py").write_text(PLUGIN, encoding="utf-8")
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init", str(pdf_package_template), "--json").code == 0
    with monkeypatch.context() as patch:  # the user's shell: PYTHONPATH names the plug-in's folder
        patch.setenv("PYTHONPATH", str(plugins))
        patch.syspath_prepend(str(plugins))
        done = run_cli("--data-dir", str(data), "configure", "test-book", "--reranker", "custom",
                       "--reranker-factory", f"{MODULE}:create", "--json")
    sys.modules.pop(MODULE, None)
    assert done.code == 0, done.stdout
    return data, plugins, done.json


def _server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = ""  # the host's environment: no plug-in folder
    return env


def _search(argv: list[str], tmp_path: Path) -> dict[str, Any]:
    session = RawSession(tmp_path, "test-book", tmp_path / "server.err", env=_server_env(), argv=argv)
    try:
        session.send(call(1, "search", {"query": "rivers flooding valleys", "top_k": 3}))
        answer = session.wait_for([1], timeout=60)[1][0]
    finally:
        session.close()
    return dict(answer["result"]["structuredContent"])


def test_configure_records_the_folder_and_the_host_started_server_reranks(configured, tmp_path: Path) -> None:
    data, plugins, done = configured
    assert done["config"]["reranker"]["module_path"] == str(plugins.resolve())
    assert any("module_path" in note for note in done["notes"])
    home = tmp_path / "home"
    installed = run_cli("--data-dir", str(data), "host", "install", "codex", "test-book", "--home", str(home),
                        "--apply", "--json")
    assert installed.code == 0, installed.stdout
    entry = tomllib.loads((home / ".codex" / "config.toml").read_text(encoding="utf-8"))["mcp_servers"]
    server = next(iter(entry.values()))
    result = _search([server["command"], *server["args"]], tmp_path)
    assert result["rerank"]["rerank_applied"] is True, result["rerank"]
    assert all("rerank" in hit["scores"] for hit in result["hits"])


def test_trae_entry_too(configured, tmp_path: Path) -> None:
    data, _, _ = configured
    home = tmp_path / "home"
    installed = run_cli("--data-dir", str(data), "host", "install", "trae", "test-book", "--home", str(home),
                        "--apply", "--json")
    assert installed.code == 0, installed.stdout
    written = [Path(c["path"]) for c in installed.json["changes"] if c.get("kind") == "mcp_config"]
    server = next(iter(json.loads(written[0].read_text(encoding="utf-8"))["mcpServers"].values()))
    result = _search([server["command"], *server["args"]], tmp_path)
    assert result["rerank"]["rerank_applied"] is True, result["rerank"]


def test_without_the_recorded_folder_the_server_warns_instead_of_failing(configured, tmp_path: Path) -> None:
    """What a host-started server did before: every search failed with rerank.plugin_not_found."""
    data, _, _ = configured
    config_path = data / "books" / "test-book" / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["reranker"]["module_path"] = None
    config_path.write_text(json.dumps(config), encoding="utf-8")
    argv = [sys.executable, "-m", "book_agent", "--data-dir", str(data), "mcp", "test-book"]
    result = _search(argv, tmp_path)
    assert result["hits"] and result["rerank"]["rerank_applied"] is False
    assert result["rerank"]["error"]["code"] == "rerank.plugin_not_found"
    assert any(w.startswith("rerank.plugin_not_found") for w in result["warnings"])
