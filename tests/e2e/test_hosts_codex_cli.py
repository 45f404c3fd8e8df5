"""The real Codex CLI reads back the server we wrote (tools/dev/install_codex_cli.sh installs it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from book_agent_adapters.hosts import HostAdapter, mcp_command
from tests.support import REPO_ROOT
from tests.support.hosts_helpers import AUTH_ENV, SECRET, make_package
from tests.support.parts import require_real_part

CODEX = REPO_ROOT / ".tools" / "codex" / "node_modules" / ".bin" / "codex"


def codex(codex_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}
    env["CODEX_HOME"] = str(codex_home)
    return subprocess.run([str(CODEX), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def codex_cli() -> Path:
    require_real_part(CODEX.is_file() and os.access(CODEX, os.X_OK), "the Codex CLI")
    return CODEX


def test_codex_reads_back_the_server_we_wrote(codex_cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AUTH_ENV, SECRET)
    package = make_package(tmp_path / "pkg", "sun_tzu.art-of-war")
    home, data = tmp_path / "home", tmp_path / "data dir"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text('# mine\n[mcp_servers.other]\ncommand = "npx"\nargs = ["-y", "x"]\n')
    HostAdapter("codex", home=home, data_dir=data).install(package, apply=True, auth_env=AUTH_ENV)
    argv = mcp_command(data, "sun_tzu.art-of-war")

    listed = codex(codex_home, "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    servers = {s["name"]: s for s in json.loads(listed.stdout)}
    assert set(servers) == {"other", "book-sun-tzu-art-of-war"}

    got = codex(codex_home, "mcp", "get", "book-sun-tzu-art-of-war", "--json")
    assert got.returncode == 0, got.stderr
    server = json.loads(got.stdout)
    transport = server["transport"]
    assert transport["type"] == "stdio"
    assert [transport["command"], *transport["args"]] == argv
    assert transport["env_vars"] == [AUTH_ENV]
    assert not transport.get("env")
    assert server["startup_timeout_sec"] == 30
    assert server["enabled"] is True
    assert SECRET not in listed.stdout + got.stdout


def test_codex_no_longer_lists_the_server_after_uninstall(codex_cli: Path, tmp_path: Path) -> None:
    package = make_package(tmp_path / "pkg")
    home = tmp_path / "home"
    target = HostAdapter("codex", home=home, data_dir=tmp_path / "data")
    target.install(package, apply=True)
    assert codex(home / ".codex", "mcp", "get", "book-test-book", "--json").returncode == 0
    target.uninstall(package, apply=True)
    listed = codex(home / ".codex", "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def skill_roots_and_files(codex_home: Path, home: Path, cwd: Path) -> tuple[dict[str, str], dict[str, str]]:
    """What `codex debug prompt-input` shows the model: {root id: folder}, {skill: root-relative file}."""
    env = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}
    env.update(CODEX_HOME=str(codex_home), HOME=str(home))
    out = subprocess.run([str(CODEX), "debug", "prompt-input"], env=env, cwd=cwd, capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    text = json.dumps(json.loads(out.stdout))
    block = text[text.index("<skills_instructions>"):text.index("</skills_instructions>")].replace("\\n", "\n")
    roots = dict(re.findall(r"^- `(r\d+)` = `([^`]+)`$", block, re.MULTILINE))
    files = dict(re.findall(r"^- ([^:\n]+): .*\(file: (r\d+/[^)]+)\)$", block, re.MULTILINE))
    return roots, files


def test_codex_lists_the_installed_skill_under_its_user_skill_root(codex_cli: Path, tmp_path: Path) -> None:
    package = make_package(tmp_path / "pkg", "sun_tzu.art-of-war")
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    workdir = tmp_path / "work"  # not a repository: only user and system skill roots apply
    workdir.mkdir()
    HostAdapter("codex", home=home, data_dir=tmp_path / "data").install(package, apply=True)
    installed = sorted(p.name for p in (home / ".agents" / "skills").iterdir() if p.is_dir())
    assert installed  # the book's skill and book-agent's own
    roots, files = skill_roots_and_files(codex_home, home, workdir)
    user_root = str(home / ".agents" / "skills")
    assert user_root in roots.values(), roots  # ~/.agents/skills is one of Codex's skill roots
    root_id = next(k for k, v in roots.items() if v == user_root)
    listed = sorted(f.split("/")[1] for f in files.values() if f.startswith(root_id + "/"))
    assert listed == installed, files  # and Codex loads every skill we put there
    HostAdapter("codex", home=home, data_dir=tmp_path / "data").uninstall(package, apply=True)
    roots, files = skill_roots_and_files(codex_home, home, workdir)  # root ids may shift: look up again
    gone = {k for k, v in roots.items() if v == user_root}
    assert not [f for f in files.values() if f.split("/")[0] in gone]


def test_codex_reads_back_the_library_server_and_lists_its_skill(codex_cli: Path, tmp_path: Path) -> None:
    from book_agent_adapters.hosts import host_library

    home, data = tmp_path / "home", tmp_path / "data"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    workdir = tmp_path / "work"
    workdir.mkdir()
    target = HostAdapter("codex", home=home, data_dir=data)
    target.install(host_library("@all", ["alpha", "beta"]), apply=True)
    got = codex(codex_home, "mcp", "get", "book-library", "--json")
    assert got.returncode == 0, got.stderr
    transport = json.loads(got.stdout)["transport"]
    assert [transport["command"], *transport["args"]] == mcp_command(data, "@all")
    assert not transport.get("env_vars") and not transport.get("env")
    roots, files = skill_roots_and_files(codex_home, home, workdir)
    root_id = next(k for k, v in roots.items() if v == str(home / ".agents" / "skills"))
    assert files.get("book-library") == f"{root_id}/book-library/SKILL.md", files  # its front-matter name
    target.uninstall(host_library("@all"), apply=True)
    assert json.loads(codex(codex_home, "mcp", "list", "--json").stdout) == []


def test_codex_reads_back_the_http_form_that_replaced_a_stdio_install(codex_cli: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`host install codex --url URL --token-env NAME` over a stdio install of the same library:
    Codex reads a streamable-HTTP server (it refuses a table that mixes forms), the user's
    comments stay, and the token's value is nowhere."""
    from book_agent.domain.remote_server import remote_server
    from book_agent_adapters.hosts import host_library

    monkeypatch.setenv(AUTH_ENV, SECRET)  # the token's value, in the environment
    home, data = tmp_path / "home", tmp_path / "data"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    original = '# my Codex settings\n[mcp_servers.other]  # keep me\ncommand = "npx"\nargs = ["-y", "x"]\n'
    (codex_home / "config.toml").write_text(original)
    target = HostAdapter("codex", home=home, data_dir=data)
    target.install(host_library("@all"), apply=True)
    url = "https://books.example.org/mcp"
    target.install(host_library("@all"), apply=True, remote=remote_server(url, AUTH_ENV))

    text = (codex_home / "config.toml").read_text()
    assert text.startswith(original) and SECRET not in text
    got = codex(codex_home, "mcp", "get", "book-library", "--json")
    assert got.returncode == 0, got.stderr
    server = json.loads(got.stdout)
    assert server["transport"]["type"] == "streamable_http"
    assert server["transport"]["url"] == url and server["transport"]["bearer_token_env_var"] == AUTH_ENV
    assert server["startup_timeout_sec"] is None  # the stdio form's own key went with it
    listed = codex(codex_home, "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {s["name"]: s["transport"]["type"] for s in json.loads(listed.stdout)} == {
        "other": "stdio", "book-library": "streamable_http"}
    assert SECRET not in got.stdout + listed.stdout
    target.uninstall(host_library("@all"), apply=True)
    assert (codex_home / "config.toml").read_text() == original
