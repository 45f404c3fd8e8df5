"""`book-agent host ... HOST @all` / `a,b`: one library server and one library skill per host,
through the real CLI and the real BookAgent, on real files in a temporary home."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from book_agent.agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.hosts import HostAdapter, host_library, library_name
from book_agent_adapters.hosts.skills import MANIFEST_NAME
from tests.support.cli_support import CliResult, run_cli
from tests.support.hosts_helpers import AUTH_ENV, SECRET, make_package, snapshot

CONFIGS = {"codex": ".codex/config.toml", "workbuddy": ".workbuddy/mcp.json"}
SKILLS = {"codex": ".agents/skills", "workbuddy": ".workbuddy/skills"}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data dir with two registered books, alpha and beta."""
    agent = BookAgent(data_dir=tmp_path / "data")
    for book_id in ("alpha", "beta"):
        agent.init(str(make_package(tmp_path / f"pkg-{book_id}", book_id).root))
    return tmp_path / "data"


def host(data: Path, *args: str) -> CliResult:
    return run_cli("--json", "--data-dir", str(data), "host", *args)


def servers(home: Path, name: str) -> dict[str, Any]:
    path = home / CONFIGS[name]
    if name == "codex":
        return dict(tomlkit.parse(path.read_text()).get("mcp_servers", {}).unwrap())
    return dict(json.loads(path.read_text())["mcpServers"])


def front_matter_name(skill_md: Path) -> str:
    head = skill_md.read_text().split("---")[1]
    return next(line.split(":", 1)[1].strip() for line in head.splitlines() if line.startswith("name:"))


@pytest.mark.parametrize("name", ["codex", "workbuddy"])
def test_all_installs_one_server_and_one_library_skill(name: str, data: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    plan = host(data, "plan", name, "@all", "--home", str(home))
    assert plan.code == 0, plan.stderr
    assert snapshot(home) == {}  # a dry run writes nothing
    body = plan.json
    assert body["book_id"] == "@all" and body["server_name"] == "book-library"
    assert body["skill_names"] == ["book-library", "book-agent"]
    assert body["mcp_command"] == [sys.executable, "-m", "book_agent", "--data-dir", str(data.absolute()), "mcp", "@all"]
    assert body["library"] == {"ref": "@all", "everything": True, "books": ["alpha", "beta"]}
    assert body["auth_env"] is None and body["applied"] is False

    done = host(data, "install", name, "@all", "--home", str(home), "--apply")
    assert done.code == 0 and done.json["applied"] is True
    assert sorted(done.json["written"]) == sorted(c["path"] for c in body["changes"])
    entries = servers(home, name)
    assert list(entries) == ["book-library"]  # one server, not one per book
    entry = entries["book-library"]
    assert [entry["command"], *entry["args"]] == body["mcp_command"]
    assert "env_vars" not in entry and "env" not in entry
    skills = home / SKILLS[name]
    assert sorted(p.name for p in skills.iterdir()) == ["book-agent", "book-library"]
    skill_md = skills / "book-library" / "SKILL.md"
    assert front_matter_name(skill_md) == "book-library"
    text = skill_md.read_text()
    for word in ("list_books", "`books", "book_id#record_id", "read_entry(book_id", "registered after"):
        assert word in text, word
    manifest = json.loads((skills / "book-library" / MANIFEST_NAME).read_text())
    assert manifest["book_id"] == "@all" and manifest["owners"] == ["book-library"]

    assert host(data, "verify", name, "@all", "--home", str(home)).json["ok"] is True
    again = host(data, "install", name, "@all", "--home", str(home), "--apply").json
    assert again["changed"] is False and again["written"] == []

    gone = host(data, "uninstall", name, "@all", "--home", str(home), "--apply")
    assert gone.code == 0 and gone.json["deleted"]
    assert snapshot(home) == {}  # exactly what was installed went
    assert host(data, "verify", name, "@all", "--home", str(home)).code == 1


def test_all_keeps_the_other_servers_and_books_and_uninstalls_only_itself(data: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('# mine\n[mcp_servers.other]\ncommand = "npx"\n')
    assert host(data, "install", "codex", "alpha", "--home", str(home), "--apply").code == 0
    before = snapshot(home)
    assert host(data, "install", "codex", "@all", "--home", str(home), "--apply").code == 0
    assert set(servers(home, "codex")) == {"other", "book-alpha", "book-library"}
    shared = json.loads((home / ".agents/skills/book-agent" / MANIFEST_NAME).read_text())
    assert shared["owners"] == ["book-alpha", "book-library"]  # the shipped skill, shared
    assert host(data, "uninstall", "codex", "@all", "--home", str(home), "--apply").code == 0
    after = snapshot(home)
    backup = ".codex/config.toml.book-agent.bak"  # made once, by the first install
    assert {k: v for k, v in after.items() if k != backup} == {k: v for k, v in before.items() if k != backup}


def test_a_list_gets_a_hashed_name_whatever_the_order(data: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    plan = host(data, "plan", "codex", "beta, alpha", "--home", str(home)).json
    name = library_name(["alpha", "beta"])
    assert plan["server_name"] == name and name.startswith("book-library-") and len(name) == len("book-library-") + 10
    assert plan["book_id"] == "alpha,beta" and plan["mcp_command"][-2:] == ["mcp", "alpha,beta"]
    assert plan["library"] == {"ref": "alpha,beta", "everything": False, "books": ["alpha", "beta"]}
    assert host(data, "install", "codex", "alpha,beta", "--home", str(home), "--apply").code == 0
    assert list(servers(home, "codex")) == [name]
    skill_md = home / ".agents/skills" / name / "SKILL.md"
    assert front_matter_name(skill_md) == name and "`alpha`, `beta`" in skill_md.read_text()
    assert host(data, "verify", "codex", "beta,alpha", "--home", str(home)).json["ok"] is True
    assert host(data, "uninstall", "codex", "alpha,beta", "--home", str(home), "--apply").code == 0
    assert snapshot(home) == {}


def test_all_with_no_book_registered_still_installs(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "empty-data"
    result = host(data, "install", "workbuddy", "@all", "--home", str(home), "--apply")
    assert result.code == 0, result.stderr
    assert result.json["library"]["books"] == []
    assert "host.library_empty" in [w["code"] for w in result.json["warnings"]]
    assert list(servers(home, "workbuddy")) == ["book-library"]
    # a book registered later changes nothing the host holds: the server serves it, the skill names no book
    BookAgent(data_dir=data).init(str(make_package(tmp_path / "pkg", "late").root))
    report = host(data, "verify", "workbuddy", "@all", "--home", str(home)).json
    assert report["ok"] is True and report["library"]["books"] == ["late"]


@pytest.mark.parametrize(("ref", "code", "named"), [
    ("alpha,nope", "book.not_registered", "nope"),
    ("alpha,,beta", "book.bad_ref", None),
    ("alpha,@all", "book.bad_ref", None),
    ("alpha,alpha", "book.bad_ref", None),  # one book is installed by its id
])
def test_bad_library_references(ref: str, code: str, named: str | None, data: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    for command in ("plan", "install", "uninstall", "verify", "instructions"):
        result = host(data, command, "codex", ref, "--home", str(home))
        assert result.code != 0 and result.error_code == code, (command, result.stdout)
        if named:
            assert named in result.json["error"]["message"]
    assert snapshot(home) == {}


def test_the_books_auth_envs_are_named_in_warnings_never_forwarded(data: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AUTH_ENV, SECRET)
    BookAgent(data_dir=data).configure("beta", auth_env=AUTH_ENV)
    home = tmp_path / "home"
    result = host(data, "install", "codex", "@all", "--home", str(home), "--apply").json
    warning = next(w for w in result["warnings"] if w["code"] == "host.library_auth_env")
    assert f"beta ({AUTH_ENV})" in warning["message"] and "alpha" not in warning["message"]
    assert result["auth_env"] is None and "env_vars" not in servers(home, "codex")["book-library"]
    assert all(SECRET.encode() not in v for v in snapshot(home).values())
    text = host(data, "instructions", "codex", "@all", "--home", str(home)).json["instructions"]
    assert AUTH_ENV in text and SECRET not in text
    # Given explicitly (the Python API), one name is forwarded, and the warning drops that book.
    library = host_library("@all", ["alpha", "beta"], {"beta": AUTH_ENV})
    plan = HostAdapter("codex", home=home, data_dir=data).install(library, auth_env=AUTH_ENV)
    assert "host.library_auth_env" not in [w["code"] for w in plan["warnings"]]
    assert '+env_vars = ["' + AUTH_ENV + '"]' in plan["changes"][0]["diff"]


def test_a_foreign_library_skill_folder_is_refused(data: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / ".agents/skills/book-library"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("mine\n")
    result = host(data, "plan", "codex", "@all", "--home", str(home))
    assert result.error_code == "host.skill_conflict"
    assert (folder / "SKILL.md").read_text() == "mine\n" and not (home / ".codex").exists()


def test_cherry_studio_gets_a_deep_link_for_the_library(data: Path, tmp_path: Path) -> None:
    from tests.support.hosts_helpers import decode_deeplink

    plan = host(data, "plan", "cherry-studio", "@all", "--home", str(tmp_path / "home")).json
    entry = decode_deeplink(plan["manual"]["deeplink"])["mcpServers"]["book-library"]
    assert entry["args"][-2:] == ["mcp", "@all"]


def test_a_single_book_plan_is_unchanged(data: Path, tmp_path: Path) -> None:
    plan = host(data, "plan", "codex", "alpha", "--home", str(tmp_path / "home")).json
    assert "library" not in plan and plan["server_name"] == "book-alpha" and plan["mcp_command"][-1] == "alpha"


def test_the_python_api_refuses_a_one_book_library() -> None:
    with pytest.raises(BookAgentError) as info:
        host_library("solo")
    assert info.value.code == "book.bad_ref"
