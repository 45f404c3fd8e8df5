"""`book-agent host ...` through typer, on a real package (and once through the real BookAgent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomlkit
import typer
from typer.testing import CliRunner

from book_agent.cli.argv import GlobalOptions
from book_agent.cli.commands import host as host_cli
from book_agent.domain.book.package import PackageInfo
from tests.support.hosts_helpers import AUTH_ENV, SECRET, make_package, snapshot


def make_app(resolver: host_cli.Resolver | None) -> typer.Typer:
    app = typer.Typer(add_completion=False)

    @app.callback()
    def _root() -> None:
        pass

    host_cli.register(app, resolver)
    return app


@pytest.fixture
def package(tmp_path: Path) -> PackageInfo:
    return make_package(tmp_path / "pkg")


@pytest.fixture
def app(package: PackageInfo, tmp_path: Path) -> typer.Typer:
    def resolve(ctx: typer.Context, book: str) -> dict[str, Any]:
        assert book == package.book_id
        return {"book_id": book, "package": package.to_dict(), "data_dir": str(tmp_path / "data"),
                "config": {"network": {"auth_env": AUTH_ENV}}}

    return make_app(resolve)


def run(app: typer.Typer, *args: str, json_output: bool = True) -> tuple[int, Any]:
    result = CliRunner().invoke(app, list(args), obj=GlobalOptions(json=json_output))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, json.loads(result.stdout) if json_output else result.stdout


def test_install_is_a_dry_run_until_apply(app: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AUTH_ENV, SECRET)
    home = tmp_path / "home"
    code, plan = run(app, "host", "install", "codex", "test-book", "--home", str(home))
    assert code == 0 and plan["applied"] is False and plan["changed"] is True
    assert snapshot(home) == {}
    code, result = run(app, "host", "install", "codex", "test-book", "--home", str(home), "--apply")
    assert code == 0 and result["applied"] is True
    entry = tomlkit.parse((home / ".codex" / "config.toml").read_text())["mcp_servers"]["book-test-book"]
    assert entry["env_vars"] == [AUTH_ENV]  # the book's configured auth_env, by name
    assert all(SECRET.encode() not in data for data in snapshot(home).values())
    code, again = run(app, "host", "plan", "codex", "test-book", "--home", str(home))
    assert code == 0 and again["changed"] is False


def test_verify_and_uninstall(app: typer.Typer, tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, report = run(app, "host", "verify", "trae", "test-book", "--home", str(home), "--edition", "cn")
    assert code == 1 and report["ok"] is False and report["mcp"]["status"] == "missing"
    run(app, "host", "install", "trae", "test-book", "--home", str(home), "--edition", "cn", "--apply")
    code, report = run(app, "host", "verify", "trae", "test-book", "--home", str(home), "--edition", "cn")
    assert code == 0 and report["ok"] is True and report["edition"] == "cn"
    code, result = run(app, "host", "uninstall", "trae", "test-book", "--home", str(home), "--edition", "cn", "--apply")
    assert code == 0 and result["deleted"]
    assert not (home / ".config" / "Trae CN" / "User" / "mcp.json").exists()


def test_detect_and_instructions(app: typer.Typer, tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, found = run(app, "host", "detect", "workbuddy", "--home", str(home))
    assert code == 0 and found["installed"] is False and found["config_path"] == str(home / ".workbuddy" / "mcp.json")
    (home / ".workbuddy").mkdir(parents=True)
    assert run(app, "host", "detect", "workbuddy", "--home", str(home))[1]["installed"] is True
    code, text = run(app, "host", "instructions", "cherry-studio", "test-book", "--home", str(home), json_output=False)
    assert code == 0 and "cherrystudio://mcp/install?servers=" in text


def test_human_output_shows_the_diff(app: typer.Typer, tmp_path: Path) -> None:
    code, text = run(app, "host", "plan", "workbuddy", "test-book", "--home", str(tmp_path / "h"), json_output=False)
    assert code == 0
    assert '+    "book-test-book": {' in text and "add --apply" in text


def test_the_real_book_agent_resolves_the_book(tmp_path: Path, package: PackageInfo) -> None:
    from book_agent.agent import BookAgent

    data = tmp_path / "agent-data"
    BookAgent(data_dir=data).init(str(package.root))
    app = make_app(None)
    result = CliRunner().invoke(app, ["host", "install", "workbuddy", "test-book", "--home", str(tmp_path / "h"), "--apply"],
                                obj=GlobalOptions(json=True, data_dir=str(data)))
    assert result.exit_code == 0, result.output
    entry = json.loads((tmp_path / "h" / ".workbuddy" / "mcp.json").read_text())["mcpServers"]["book-test-book"]
    assert entry["args"] == ["-m", "book_agent", "--data-dir", str(data.resolve()), "mcp", "test-book"]
