"""End to end on real packages and real files in a temporary home: plan, apply, verify, uninstall."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import tomlkit

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.hosts import HostAdapter, install, mcp_command
from book_agent_adapters.hosts.skills import MANIFEST_NAME, sha256
from tests.support.hosts_helpers import (
    AUTH_ENV,
    SECRET,
    SKILL_FILES,
    decode_deeplink,
    make_package,
    snapshot,
)

HOSTS = ["codex", "trae", "workbuddy", "cherry-studio"]


@pytest.fixture
def package(tmp_path: Path) -> PackageInfo:
    return make_package(tmp_path / "pkg")


@pytest.fixture
def sandbox(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "home", tmp_path / "data"


def adapter(host: str, sandbox: tuple[Path, Path], **kw: str) -> HostAdapter:
    return HostAdapter(host, home=sandbox[0], data_dir=sandbox[1], **kw)


def test_mcp_command_is_the_exact_argv(tmp_path: Path) -> None:
    argv = mcp_command(tmp_path / "data", "my-book")
    assert argv == [sys.executable, "-m", "book_agent", "--data-dir", str(tmp_path / "data"), "mcp", "my-book"]
    assert Path(argv[0]).is_absolute()


@pytest.mark.parametrize("host", HOSTS)
def test_plan_writes_nothing_and_apply_does_what_it_showed(host: str, package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    home, data = sandbox
    plan = adapter(host, sandbox).install(package, auth_env=AUTH_ENV)
    assert plan["applied"] is False and plan["changed"]
    assert snapshot(home) == {} and snapshot(data) == {}
    assert all(c["action"] == "create" and c["diff"].startswith("--- /dev/null") for c in plan["changes"])
    result = adapter(host, sandbox).install(package, apply=True, auth_env=AUTH_ENV)
    assert sorted(result["written"]) == sorted(c["path"] for c in plan["changes"])
    for change in plan["changes"]:
        assert sha256(Path(change["path"]).read_bytes()) == change["sha256_after"]
    assert plan["unconfirmed"] == result["unconfirmed"]


@pytest.mark.parametrize("host", HOSTS)
def test_installing_twice_changes_no_byte(host: str, package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    adapter(host, sandbox).install(package, apply=True, auth_env=AUTH_ENV)
    first = snapshot(sandbox[0].parent)
    second = adapter(host, sandbox).install(package, apply=True, auth_env=AUTH_ENV)
    assert second["changed"] is False and second["written"] == []
    assert snapshot(sandbox[0].parent) == first


@pytest.mark.parametrize("host", HOSTS)
def test_no_secret_value_reaches_any_file(host: str, package: PackageInfo, sandbox: tuple[Path, Path],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AUTH_ENV, SECRET)
    result = adapter(host, sandbox).install(package, apply=True, auth_env=AUTH_ENV)
    files = snapshot(sandbox[0]) | snapshot(sandbox[1])
    assert files, "something was written"
    for rel, data in files.items():
        assert SECRET.encode() not in data, rel
    assert SECRET not in json.dumps(result)
    assert SECRET not in adapter(host, sandbox).render_manual_instructions(package, auth_env=AUTH_ENV)


def test_codex_entry_forwards_the_auth_env_by_name(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    adapter("codex", sandbox).install(package, apply=True, auth_env=AUTH_ENV)
    config = sandbox[0] / ".codex" / "config.toml"
    entry = tomlkit.parse(config.read_text())["mcp_servers"]["book-test-book"].unwrap()
    assert entry["command"] == sys.executable
    assert entry["args"] == ["-m", "book_agent", "--data-dir", str(sandbox[1]), "mcp", "test-book"]
    assert entry["env_vars"] == [AUTH_ENV]
    assert "env" not in entry


def test_codex_home_variable_is_used_without_an_explicit_home(package: PackageInfo, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    result = HostAdapter("codex", data_dir=tmp_path / "data").install(package, apply=True)
    assert (tmp_path / "codex-home" / "config.toml").is_file()
    assert str(tmp_path / "codex-home" / "config.toml") in result["written"]
    assert Path.home() != Path("/root")  # the shared conftest isolated HOME; skills went there
    assert (Path.home() / ".agents" / "skills" / "book-test-book" / "SKILL.md").is_file()


@pytest.mark.parametrize(
    ("edition", "platform", "config", "skills"),
    [
        ("intl", "linux", ".config/Trae/User/mcp.json", ".trae/skills"),
        ("cn", "linux", ".config/Trae CN/User/mcp.json", ".trae-cn/skills"),
        ("intl", "darwin", "Library/Application Support/Trae/User/mcp.json", ".trae/skills"),
        ("cn", "win32", "AppData/Roaming/Trae CN/User/mcp.json", ".trae-cn/skills"),
    ],
)
def test_trae_paths_per_edition_and_platform(edition: str, platform: str, config: str, skills: str,
                                             package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    target = HostAdapter("trae", home=sandbox[0], data_dir=sandbox[1], edition=edition, platform=platform)
    target.install(package, apply=True)
    assert (sandbox[0] / config).is_file()
    assert (sandbox[0] / skills / "book-test-book" / "SKILL.md").is_file()
    assert target.verify(package)["ok"] is True


def test_unknown_host_and_edition_are_refused(sandbox: tuple[Path, Path]) -> None:
    with pytest.raises(BookAgentError) as info:
        HostAdapter("vim", home=sandbox[0])
    assert info.value.code == "host.unknown" and "codex" in (info.value.remediation or "")
    with pytest.raises(BookAgentError) as info:
        HostAdapter("trae", home=sandbox[0], edition="eu")
    assert info.value.code == "host.unknown_edition"


def test_skill_front_matter_is_renamed_and_both_hashes_are_kept(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    adapter("workbuddy", sandbox).install(package, apply=True)
    folder = sandbox[0] / ".workbuddy" / "skills" / "book-test-book"
    text = (folder / "SKILL.md").read_text()
    assert text.splitlines()[1] == "name: book-test-book"
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    skill = next(f for f in manifest["files"] if f["path"] == "SKILL.md")
    assert skill["original_sha256"] == sha256(package.skill_path.read_bytes())  # type: ignore[union-attr]
    assert skill["installed_sha256"] == sha256((folder / "SKILL.md").read_bytes())
    assert skill["original_sha256"] != skill["installed_sha256"]
    for rel, content in SKILL_FILES.items():
        assert (folder / rel).read_text() == content
    shipped = (sandbox[0] / ".workbuddy" / "skills" / "book-agent" / "SKILL.md").read_text()
    assert shipped.startswith("---\nname: book-agent\n")


def test_verify_reports_missing_and_modified_files(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    target = adapter("trae", sandbox)
    target.install(package, apply=True)
    assert target.verify(package)["ok"] is True
    folder = sandbox[0] / ".trae" / "skills" / "book-test-book"
    (folder / "skill" / "reference.md").write_text("edited\n")
    (folder / "skill" / "notes" / "cite.md").unlink()
    report = target.verify(package)
    skill = report["skills"][0]
    assert report["ok"] is False
    assert skill["modified"] == ["skill/reference.md"] and skill["missing"] == ["skill/notes/cite.md"]
    config = sandbox[0] / ".config" / "Trae" / "User" / "mcp.json"
    data = json.loads(config.read_text())
    data["mcpServers"]["book-test-book"]["args"][-1] = "other-book"
    config.write_text(json.dumps(data))
    assert target.verify(package)["mcp"]["status"] == "different"


@pytest.mark.parametrize("host", ["codex", "trae", "workbuddy"])
def test_uninstall_restores_the_config_and_removes_only_our_files(host: str, package: PackageInfo,
                                                                  sandbox: tuple[Path, Path]) -> None:
    home = sandbox[0]
    target = adapter(host, sandbox)
    config = Path(target.detect()["config_path"])
    skills = Path(target.detect()["skills_dir"])
    original = (
        '# mine\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "npx"\n' if host == "codex"
        else '{\n    "mcpServers": {\n        "other": {\n            "command": "npx"\n        }\n    },\n    "theme": "dark"\n}\n'
    )
    config.parent.mkdir(parents=True)
    config.write_text(original)
    (skills / "someone-else").mkdir(parents=True)
    (skills / "someone-else" / "SKILL.md").write_text("---\nname: someone-else\n---\n")
    before = snapshot(home)
    target.install(package, apply=True)
    backup = config.with_name(config.name + ".book-agent.bak")
    assert backup.read_text() == original
    (skills / "book-test-book" / "my-notes.md").write_text("the user's own file\n")
    plan = target.uninstall(package)
    assert plan["applied"] is False and config.read_text() != original  # a dry run by default
    target.uninstall(package, apply=True)
    assert config.read_text() == original
    after = snapshot(home)
    after.pop(backup.relative_to(home).as_posix())
    after.pop((skills / "book-test-book" / "my-notes.md").relative_to(home).as_posix())
    assert after == before
    assert (skills / "book-test-book" / "my-notes.md").is_file()  # not ours: kept
    assert not (skills / "book-agent").exists()


def test_uninstall_deletes_a_config_file_we_created(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    target = adapter("codex", sandbox)
    target.install(package, apply=True)
    target.uninstall(package, apply=True)
    assert snapshot(sandbox[0] / ".codex") == {}
    assert not any((sandbox[0] / ".agents" / "skills").iterdir())


def test_shared_book_agent_skill_stays_until_its_last_book_goes(tmp_path: Path, sandbox: tuple[Path, Path]) -> None:
    one, two = make_package(tmp_path / "one", "book-one"), make_package(tmp_path / "two", "book-two")
    target = adapter("codex", sandbox)
    target.install(one, apply=True)
    target.install(two, apply=True)
    shared = sandbox[0] / ".agents" / "skills" / "book-agent"
    assert json.loads((shared / MANIFEST_NAME).read_text())["owners"] == ["book-book-one", "book-book-two"]
    target.uninstall(one, apply=True)
    assert (shared / "SKILL.md").is_file()
    servers = tomlkit.parse((sandbox[0] / ".codex" / "config.toml").read_text())["mcp_servers"]
    assert list(servers) == ["book-book-two"]
    target.uninstall(two, apply=True)
    assert not shared.exists()


def test_a_foreign_or_edited_skill_is_never_overwritten(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    foreign = sandbox[0] / ".workbuddy" / "skills" / "book-test-book"
    foreign.mkdir(parents=True)
    (foreign / "SKILL.md").write_text("someone else's skill\n")
    with pytest.raises(BookAgentError) as info:
        adapter("workbuddy", sandbox).install(package, apply=True)
    assert info.value.code == "host.skill_conflict"
    assert (foreign / "SKILL.md").read_text() == "someone else's skill\n"
    assert not (sandbox[0] / ".workbuddy" / "mcp.json").exists()  # refused before any write


def test_a_malformed_config_is_refused_and_left_untouched(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    config = sandbox[0] / ".workbuddy" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_bytes(b'{"mcpServers": {"a": }')
    for call in (lambda t: t.install(package), lambda t: t.install(package, apply=True)):
        with pytest.raises(BookAgentError) as info:
            call(adapter("workbuddy", sandbox))
        assert info.value.code == "host.config_malformed"
    assert config.read_bytes() == b'{"mcpServers": {"a": }'
    assert snapshot(sandbox[0]) == {".workbuddy/mcp.json": b'{"mcpServers": {"a": }'}


def test_cherry_studio_data_is_never_touched(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    userdata = sandbox[0] / ".config" / "CherryStudio"
    userdata.mkdir(parents=True)
    (userdata / "Local Storage").mkdir()
    (userdata / "Local Storage" / "leveldb.log").write_bytes(b"state")
    target = adapter("cherry-studio", sandbox)
    assert target.detect()["installed"] is True
    result = target.install(package, apply=True, auth_env=AUTH_ENV)
    assert snapshot(sandbox[0]) == {".config/CherryStudio/Local Storage/leveldb.log": b"state"}
    link = result["manual"]["deeplink"]
    assert link.startswith("cherrystudio://mcp/install?servers=")
    payload = decode_deeplink(link)
    entry = payload["mcpServers"]["book-test-book"]
    assert [entry["command"], *entry["args"]] == mcp_command(sandbox[1], "test-book")
    assert "env" not in entry
    codes = {w["code"] for w in result["warnings"]}
    # current builds (v1 handler, v2 schema) accept an absolute command: no warning on every
    # install, only a manual step for a build that still has the deep-link allowlist
    assert "host.manual_only" in codes and "host.command_may_be_refused" not in codes
    assert any("Security Warning" in step for step in result["manual"]["steps"])
    assert target.verify(package)["mcp"]["status"] == "manual"


def test_trae_refuses_a_command_with_spaces(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    argv = ["/Applications/My Python/bin/python", "-m", "book_agent", "--data-dir", "/d", "mcp", "test-book"]
    with pytest.raises(BookAgentError) as info:  # Trae's rule: an error now, not a warning beside a write
        adapter("trae", sandbox).plan_install(package, argv)
    assert info.value.code == "host.command_has_spaces"
    assert adapter("trae", sandbox).port.warnings(argv, None)[0]["code"] == "host.command_has_spaces"  # manual notes


def test_plan_shows_a_unified_diff_of_the_config(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    config = sandbox[0] / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "o3"\n')
    plan = install(package, None, host="codex", home=sandbox[0], data_dir=sandbox[1])
    change = next(c for c in plan["changes"] if c["kind"] == "mcp_config")
    assert change["action"] == "modify" and change["backup"].endswith("config.toml.book-agent.bak")
    assert change["diff"].startswith(f"--- {config}\n+++ {config}\n@@")
    assert "+[mcp_servers.book-test-book]\n" in change["diff"]
    assert config.read_text() == 'model = "o3"\n'


def test_a_package_given_as_a_path_or_a_dict_works_too(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    by_path = adapter("codex", sandbox).plan_install(package.root)
    by_dict = adapter("codex", sandbox).plan_install(package.to_dict())
    assert by_path["changes"] == by_dict["changes"] == adapter("codex", sandbox).plan_install(package)["changes"]


def test_a_changed_package_skill_is_refused(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    (package.root / "skill" / "reference.md").write_text("tampered\n")
    with pytest.raises(BookAgentError) as info:
        adapter("codex", sandbox).install(package)
    assert info.value.code == "host.package_changed"


def test_a_config_that_is_not_utf8_is_refused(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    config = sandbox[0] / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(b'model = "\xff\xfe"\n')
    with pytest.raises(BookAgentError) as info:
        adapter("codex", sandbox).install(package, apply=True)
    assert info.value.code == "host.config_malformed"
    assert config.read_bytes() == b'model = "\xff\xfe"\n'


def test_inspect_lists_what_book_agent_installed(package: PackageInfo, sandbox: tuple[Path, Path]) -> None:
    target = adapter("codex", sandbox)
    assert target.inspect()["book_servers"] == []
    target.install(package, apply=True)
    found = target.inspect()
    assert found["book_servers"] == ["book-test-book"]
    assert found["book_agent_skills"] == ["book-agent", "book-test-book"]
    assert found["installed"] is True
