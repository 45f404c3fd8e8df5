"""Issue 25, item 7: the hosts' own formats.

- Trae's install link (`trae://` / `trae-cn://trae.ai-ide/mcp-import?type&name&config`) beside
  the file, for both editions, carrying exactly the entry written;
- JSONC (Trae's mcp.json is a VS Code file): read and written back with every comment, by
  splicing the text (property test over generated files);
- a Codex re-install keeps the comments in and around our table (it rebuilt the table from
  plain values before, dropping them);
- the same server name from a second data dir is `host.server_conflict` unless replace;
- Trae's rule that a command has no spaces is a coded error before anything is written.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import json5
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.hosts import HostAdapter, mcp_command
from book_agent_adapters.hosts.apps.codex import CodexHost
from book_agent_adapters.hosts.apps.trae import TraeHost
from book_agent_adapters.hosts.base import HostContext
from tests.support.hosts_helpers import make_package

PATH = Path("/nowhere/mcp.json")
ARGV = ["/opt/py/bin/python", "-m", "book_agent", "--data-dir", "/data", "mcp", "b1"]


@pytest.fixture
def package(tmp_path: Path) -> PackageInfo:
    return make_package(tmp_path / "pkg")


def config_of(link: str) -> tuple[str, dict[str, list[str]], dict]:
    parts = urlsplit(link)
    query = parse_qs(parts.query)
    config = json.loads(base64.b64decode(unquote(query["config"][0])))
    return f"{parts.scheme}://{parts.netloc}{parts.path}", query, config


@pytest.mark.parametrize(("edition", "scheme", "folder"), [("intl", "trae", "Trae"), ("cn", "trae-cn", "Trae CN")])
def test_trae_install_link_beside_the_file(package: PackageInfo, tmp_path: Path, edition: str, scheme: str,
                                           folder: str) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    plan = HostAdapter("trae", home=home, data_dir=data, edition=edition, platform="linux").install(package, apply=True)
    where, query, config = config_of(plan["manual"]["deeplink"])
    assert where == f"{scheme}://trae.ai-ide/mcp-import"
    assert query["type"] == ["stdio"] and query["name"] == ["book-test-book"]
    written = json.loads((home / ".config" / folder / "User" / "mcp.json").read_text())
    assert config == written["mcpServers"]["book-test-book"] == {
        "command": mcp_command(data, "test-book")[0], "args": mcp_command(data, "test-book")[1:]}
    compact = base64.b64decode(unquote(query["config"][0])).decode()
    assert " " not in compact.replace(str(data), "")  # JSON.stringify's form: no spaces added


def test_trae_install_link_for_a_served_library(tmp_path: Path) -> None:
    from book_agent.domain.remote_server import RemoteServer

    host = TraeHost(HostContext(home=tmp_path, explicit_home=True, platform="linux"), "cn")
    remote = RemoteServer("https://books.example.org/mcp")
    where, query, config = config_of(host.http_manual("book-library", remote)["deeplink"])
    assert where == "trae-cn://trae.ai-ide/mcp-import" and query["type"] == ["http"]
    assert config == {"url": "https://books.example.org/mcp"}


JSONC = '''{
  // servers I added by hand
  "mcpServers": {
    "other": {"command": "npx", "args": ["-y", "x"]}, // keep me
    /* a block comment, with a comma, inside */
    "third": {"url": "https://x.example/mcp"},
  },
  "editor.fontSize": 14, // not ours
}
'''


def trae(tmp_path: Path) -> TraeHost:
    return TraeHost(HostContext(home=tmp_path, explicit_home=True, platform="linux"))


def test_a_jsonc_file_keeps_its_comments(tmp_path: Path) -> None:
    host = trae(tmp_path)
    entry = host.server_entry(ARGV, None)
    added = host.add_server(JSONC, PATH, "book-b1", entry)
    for comment in ("// servers I added by hand", "// keep me", "/* a block comment, with a comma, inside */",
                    "// not ours"):
        assert comment in added
    assert json5.loads(added)["mcpServers"]["book-b1"] == entry
    assert host.read_server(added, PATH, "book-b1") == entry
    assert host.add_server(added, PATH, "book-b1", entry) == added  # idempotent
    updated = host.add_server(added, PATH, "book-b1", host.server_entry(ARGV[:-1] + ["b2"], None))
    assert json5.loads(updated)["mcpServers"]["book-b1"]["args"][-1] == "b2" and "// keep me" in updated
    removed, empty = host.remove_server(updated, PATH, "book-b1")
    assert removed == JSONC and not empty


@pytest.mark.parametrize("bad", ["// only a comment\n", '{"a": 1, /* open', '{"a": 1, "a": 2, // dup\n}'])
def test_a_broken_jsonc_file_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(BookAgentError) as info:
        trae(tmp_path).add_server(bad, PATH, "book-b1", {"command": "x", "args": []})
    assert info.value.code == "host.config_malformed"


COMMENT = st.sampled_from(["// a note", "/* block, with , commas */", "// 中文注释", "/* x */"])
NAME = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True).filter(lambda n: not n.startswith("book-"))


@st.composite
def jsonc_files(draw: st.DrawFn) -> str:
    unit = draw(st.sampled_from(["  ", "    ", "\t"]))
    servers = draw(st.dictionaries(NAME, st.fixed_dictionaries({"command": NAME}), max_size=4))
    lines = ["{", unit + draw(COMMENT), unit + '"mcpServers": {']
    members = []
    for name, entry in servers.items():
        before = [unit * 2 + draw(COMMENT)] if draw(st.booleans()) else []
        after = " " + draw(COMMENT) if draw(st.booleans()) else ""
        members.append((before, f"{unit * 2}{json.dumps(name)}: {json.dumps(entry)}", after))
    trailing = draw(st.booleans())
    for k, (before, member, after) in enumerate(members):
        comma = "," if k < len(members) - 1 or trailing else ""
        lines += before + [member + comma + after]
    lines += [unit + "},", unit + '"other.setting": true' + ("," if draw(st.booleans()) else ""), "}"]
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + newline


@settings(max_examples=120, deadline=None)
@given(jsonc_files())
def test_any_jsonc_file_round_trips_with_its_comments(original: str) -> None:
    host = TraeHost(HostContext(home=Path("/nowhere"), explicit_home=True, platform="linux"))
    entry = host.server_entry(ARGV, None)
    added = host.add_server(original, PATH, "book-b1", entry)
    before = json5.loads(original)
    after = json5.loads(added)
    assert after["mcpServers"].pop("book-b1") == entry
    assert after == before
    for comment in ("// a note", "/* block, with , commas */", "// 中文注释", "/* x */"):
        assert original.count(comment) == added.count(comment)
    if "\r\n" in original:
        assert "\n" not in added.replace("\r\n", "")
    removed, _ = host.remove_server(added, PATH, "book-b1")
    assert removed == original


def test_a_codex_reinstall_keeps_the_comments_in_our_table(tmp_path: Path) -> None:
    host = CodexHost(HostContext(home=tmp_path, explicit_home=True))
    text = host.add_server('model = "o3"  # mine\n', PATH, "book-b1", host.server_entry(ARGV, "KEY"))
    text = text.replace("[mcp_servers.book-b1]", "# the book server (keep this)\n[mcp_servers.book-b1]")
    text = text.replace("startup_timeout_sec = 30", "startup_timeout_sec = 30  # a slow disk\nenabled = true  # on")
    text = text.replace('"mcp", "b1"]', '"mcp", "b1"]  # which book')
    again = host.add_server(text, PATH, "book-b1", host.server_entry(ARGV[:-1] + ["b2"], None))
    for comment in ("# mine", "# the book server (keep this)", "# a slow disk", "enabled = true  # on",
                    "# which book"):
        assert comment in again, again
    assert '"mcp", "b2"]' in again and "env_vars" not in again


@pytest.mark.parametrize("host", ["codex", "trae", "workbuddy"])
def test_a_second_data_dir_under_the_same_name_is_a_conflict(package: PackageInfo, tmp_path: Path,
                                                             host: str) -> None:
    home = tmp_path / "home"
    first = HostAdapter(host, home=home, data_dir=tmp_path / "data-a", platform="linux")
    first.install(package, apply=True)
    config = Path(first.port.config_path())  # type: ignore[arg-type]
    written = config.read_bytes()
    second = HostAdapter(host, home=home, data_dir=tmp_path / "data-b", platform="linux")
    with pytest.raises(BookAgentError) as info:
        second.install(package, apply=True)
    assert info.value.code == "host.server_conflict" and "--replace" in (info.value.remediation or "")
    assert info.value.details["installed_data_dir"] == str(tmp_path / "data-a")
    assert config.read_bytes() == written  # refused before anything was written
    first.install(package, apply=True)  # the same data dir again: no conflict
    second.install(package, apply=True, replace=True)
    assert str(tmp_path / "data-b") in config.read_text()


def test_the_cli_takes_replace(tmp_path: Path, pdf_package_template: Path) -> None:
    from tests.support.cli_support import run_cli

    home = tmp_path / "home"
    for data in ("a", "b"):
        assert run_cli("--data-dir", str(tmp_path / data), "init", str(pdf_package_template), "--json").code == 0
    base = ["host", "install", "codex", "test-book", "--home", str(home), "--apply", "--json"]
    assert run_cli("--data-dir", str(tmp_path / "a"), *base).code == 0
    refused = run_cli("--data-dir", str(tmp_path / "b"), *base)
    assert refused.code == 1 and refused.error_code == "host.server_conflict"
    assert run_cli("--data-dir", str(tmp_path / "b"), *base, "--replace").code == 0


def test_trae_refuses_a_command_with_spaces_before_writing(package: PackageInfo, tmp_path: Path) -> None:
    argv = ["/Applications/My Python/bin/python", "-m", "book_agent", "--data-dir", "/d", "mcp", "test-book"]
    target = HostAdapter("trae", home=tmp_path / "home", data_dir=tmp_path / "data", platform="linux")
    with pytest.raises(BookAgentError) as info:
        target.install(package, argv, apply=True)
    assert info.value.code == "host.command_has_spaces" and info.value.details == {"command": argv[0]}
    assert not (tmp_path / "home" / ".config").exists()
    manual = target.port.manual("book-test-book", argv, None)  # the manual route still shows the entry
    assert json.loads(manual["snippet"])["mcpServers"]["book-test-book"]["command"] == argv[0]
