"""Round trips of the host config formats: other content survives, ours comes and goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomlkit

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.hosts.apps.codex import CodexHost
from book_agent_adapters.hosts.apps.trae import TraeHost
from book_agent_adapters.hosts.base import HostContext
from book_agent_adapters.hosts.files import json_config

ARGV = ["/opt/py/bin/python", "-m", "book_agent", "--data-dir", "/data dir", "mcp", "b1"]
PATH = Path("/nowhere/config")


def codex(tmp_path: Path) -> CodexHost:
    return CodexHost(HostContext(home=tmp_path, explicit_home=True))


def trae(tmp_path: Path) -> TraeHost:
    return TraeHost(HostContext(home=tmp_path, explicit_home=True, platform="linux"))


TOML_CASES = [
    "",
    'model = "o3"  # keep this comment\n',
    'model = "o3"',
    '# header\n[mcp_servers.other]\ncommand = "npx"\nargs = ["-y", "x"] # why\n\n[profiles.a]\nmodel = "x"\n',
    'a = 1\r\n[mcp_servers.o]\r\ncommand = "x"\r\n',
    '[mcp_servers]\nfoo = { command = "x" }\n',
]


@pytest.mark.parametrize("original", TOML_CASES)
def test_toml_add_keeps_everything_and_remove_restores(tmp_path: Path, original: str) -> None:
    host = codex(tmp_path)
    entry = host.server_entry(ARGV, "MY_KEY")
    added = host.add_server(original, PATH, "book-b1", entry)
    doc = tomlkit.parse(added)
    assert doc["mcp_servers"]["book-b1"].unwrap() == entry
    before = tomlkit.parse(original).unwrap()
    after = doc.unwrap()
    after["mcp_servers"].pop("book-b1")
    if not after["mcp_servers"]:
        after.pop("mcp_servers")
    assert after == before  # every other key and value survives
    for comment in ("# keep this comment", "# why", "# header"):
        assert (comment in original) == (comment in added)
    if "\r\n" in original:
        assert "\n" not in added.replace("\r\n", "")  # CRLF stays CRLF
    assert host.add_server(added, PATH, "book-b1", entry) == added  # idempotent
    removed, empty = host.remove_server(added, PATH, "book-b1")
    assert removed.rstrip() == original.rstrip()
    assert empty == (not original.strip())


def test_toml_user_keys_on_our_table_survive_an_update(tmp_path: Path) -> None:
    host = codex(tmp_path)
    text = host.add_server(None, PATH, "book-b1", host.server_entry(ARGV, "K"))
    text = text.replace("startup_timeout_sec = 30", "startup_timeout_sec = 30\nenabled = false")
    updated = host.add_server(text, PATH, "book-b1", host.server_entry(ARGV[:-1] + ["b2"], None))
    table = tomlkit.parse(updated)["mcp_servers"]["book-b1"]
    assert table["enabled"] is False
    assert table["args"][-1] == "b2"
    assert "env_vars" not in table  # a forwarded name no longer wanted is dropped


@pytest.mark.parametrize("bad", ['[mcp_servers\ncommand = "x"', 'mcp_servers = "not a table"\n', "a = 1\na = 2\n"])
def test_malformed_toml_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(BookAgentError) as info:
        codex(tmp_path).add_server(bad, PATH, "book-b1", {"command": "x", "args": []})
    assert info.value.code == "host.config_malformed"
    assert info.value.remediation


JSON_CASES = [
    '{\n  "mcpServers": {\n    "other": {"command": "npx", "args": ["-y", "x"], "fromGalleryId": "g1"}\n  },\n  "extra": [1, 2]\n}\n',
    '{\n\t"mcpServers": {\n\t\t"other": {\n\t\t\t"command": "npx"\n\t\t}\n\t}\n}',
    '{\r\n    "unknown": {"nested": true},\r\n    "mcpServers": {}\r\n}\r\n',
    '{"mcpServers":{"other":{"command":"x"}}}',
    "\ufeff{\n  \"mcpServers\": {}\n}\n",
    "",
]


@pytest.mark.parametrize("original", JSON_CASES)
def test_json_add_keeps_other_servers_style_and_bom(tmp_path: Path, original: str) -> None:
    host = trae(tmp_path)
    entry = host.server_entry(ARGV, None)
    added = host.add_server(original or None, PATH, "book-b1", entry)
    assert added.startswith("\ufeff") == original.startswith("\ufeff")  # never added, kept if there
    data = json.loads(added.lstrip("\ufeff"))
    assert data["mcpServers"]["book-b1"] == {"command": ARGV[0], "args": ARGV[1:]}
    before = json.loads(original.lstrip("\ufeff") or "{}")
    data["mcpServers"].pop("book-b1")
    if not before:
        data.pop("mcpServers")
    assert data == before
    assert list(data) == list(before)  # key order kept
    style, new_style = json_config.detect_style(original), json_config.detect_style(added)
    if original.strip() and original.count("\n") > 1:
        assert new_style.indent == style.indent and new_style.newline == style.newline
    if "\n" not in original.strip():
        assert added.strip().count("\n") == (0 if original.strip() else added.strip().count("\n"))
    assert host.add_server(added, PATH, "book-b1", entry) == added
    removed, _ = host.remove_server(added, PATH, "book-b1")
    assert json.loads(removed.lstrip("\ufeff") or "{}") == {**before, **({"mcpServers": {}} if not before else {})}


def test_json_indentation_of_an_untouched_layout_round_trips_byte_exact(tmp_path: Path) -> None:
    original = '{\n    "mcpServers": {\n        "other": {\n            "command": "npx"\n        }\n    }\n}\n'
    host = trae(tmp_path)
    added = host.add_server(original, PATH, "book-b1", host.server_entry(ARGV, None))
    removed, empty = host.remove_server(added, PATH, "book-b1")
    assert removed == original and not empty


@pytest.mark.parametrize(
    "bad",
    ['{"mcpServers": {', '// comment\n[1, 2]', "[1, 2]", '{"mcpServers": []}', '{"a": 1, "a": 2}'],
)
def test_malformed_json_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(BookAgentError) as info:
        trae(tmp_path).add_server(bad, PATH, "book-b1", {"command": "x", "args": []})
    assert info.value.code == "host.config_malformed"
