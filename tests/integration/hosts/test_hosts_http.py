"""`book-agent host install HOST --url URL [--token-env NAME]`: a served library's streamable-HTTP
form in each host's config, through the real CLI on real files in a temporary home."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from book_agent_adapters.hosts import library_name
from tests.support.cli_support import CliResult, run_cli
from tests.support.hosts_helpers import decode_deeplink, snapshot

URL = "https://books.example.org/mcp"
TOKEN_ENV = "BOOK_TEAM_TOKEN"
SENTINEL = "tok-sentinel-7c1e0f9a2b"  # the token's value: it must never reach a file or an output
CONFIGS = {"codex": ".codex/config.toml", "trae": ".config/Trae/User/mcp.json", "workbuddy": ".workbuddy/mcp.json"}
SKILLS = {"codex": ".agents/skills", "trae": ".trae/skills", "workbuddy": ".workbuddy/skills"}

GOLDEN = {
    "codex": f'[mcp_servers.book-library]\nurl = "{URL}"\nbearer_token_env_var = "{TOKEN_ENV}"\n',
    "trae": '{\n  "mcpServers": {\n    "book-library": {\n      "url": "' + URL + '"\n    }\n  }\n}\n',
    "workbuddy": '{\n  "mcpServers": {\n    "book-library": {\n      "type": "http",\n      "url": "' + URL
                 + '"\n    }\n  }\n}\n',
}


def host(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    return run_cli("--json", "--data-dir", str(tmp_path / "data"), "host", *args, env=env)


def token_args(name: str) -> list[str]:
    return ["--token-env", TOKEN_ENV] if name == "codex" else []


@pytest.mark.parametrize("name", ["codex", "trae", "workbuddy"])
def test_the_http_form_golden_idempotent_and_uninstalled_exactly(name: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    plan = host(tmp_path, "plan", name, "--url", URL, *token_args(name), "--home", str(home))
    assert plan.code == 0, plan.stdout
    assert snapshot(home) == {}  # a dry run writes nothing
    body = plan.json
    assert body["transport"] == "http" and body["url"] == URL and body["mcp_command"] is None
    assert body["book_id"] == "@all" and body["server_name"] == "book-library"
    assert body["token_env"] == (TOKEN_ENV if name == "codex" else None)

    done = host(tmp_path, "install", name, "--url", URL, *token_args(name), "--home", str(home), "--apply")
    assert done.code == 0 and done.json["applied"] is True
    assert (home / CONFIGS[name]).read_text() == GOLDEN[name]
    skills = home / SKILLS[name]
    assert sorted(p.name for p in skills.iterdir()) == ["book-agent", "book-library"]  # the library skill, as @all
    assert "list_books" in (skills / "book-library" / "SKILL.md").read_text()
    assert not (tmp_path / "data").exists()  # a served library needs nothing of this machine's data dir

    before = snapshot(home)
    again = host(tmp_path, "install", name, "--url", URL, *token_args(name), "--home", str(home), "--apply").json
    assert again["changed"] is False and again["written"] == [] and snapshot(home) == before

    verified = host(tmp_path, "verify", name, "--url", URL, *token_args(name), "--home", str(home))
    assert verified.code == 0 and verified.json["mcp"]["status"] == "ok"
    stdio = host(tmp_path, "verify", name, "@all", "--home", str(home))
    assert stdio.code == 1 and any("form" in p for p in stdio.json["mcp"]["problems"])
    forms = host(tmp_path, "detect", name, "--home", str(home)).json["book_server_forms"]
    assert forms == {"book-library": {"transport": "http", "url": URL}}

    gone = host(tmp_path, "uninstall", name, "--url", URL, "--home", str(home), "--apply")
    assert gone.code == 0 and snapshot(home) == {}  # exactly what was installed went


def test_cherry_studio_gets_a_deep_link_and_nothing_is_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    plan = host(tmp_path, "install", "cherry-studio", "--url", URL, "--home", str(home), "--apply").json
    assert snapshot(home) == {}  # Cherry's app state is never written
    entry = {"name": "book-library", "type": "streamableHttp", "baseUrl": URL}
    assert decode_deeplink(plan["manual"]["deeplink"]) == {"mcpServers": {"book-library": entry}}
    assert any("Authorization=Bearer <your token>" in step for step in plan["manual"]["steps"])
    assert {w["code"] for w in plan["warnings"]} == {"host.manual_only", "host.http_token_by_hand"}
    staged = tmp_path / "data" / "hosts" / "cherry-studio" / "skills"
    assert sorted(p.name for p in staged.iterdir()) == ["book-agent", "book-library"]
    local = host(tmp_path, "plan", "cherry-studio", "--url", "http://127.0.0.1:8765/mcp", "--home", str(home)).json
    assert not any("Authorization" in step for step in local["manual"]["steps"])  # loopback: no token needed


def test_a_list_is_taken_as_named_not_looked_up_here(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = host(tmp_path, "install", "codex", "beta, alpha", "--url", URL, "--home", str(home), "--apply")
    assert done.code == 0, done.stdout  # neither book is registered on this machine
    name = library_name(["alpha", "beta"])
    assert done.json["server_name"] == name and done.json["library"]["books"] == ["alpha", "beta"]
    servers = tomlkit.parse((home / CONFIGS["codex"]).read_text())["mcp_servers"].unwrap()
    assert servers == {name: {"url": URL}}
    assert "`alpha`, `beta`" in (home / SKILLS["codex"] / name / "SKILL.md").read_text()
    assert host(tmp_path, "uninstall", "codex", "alpha,beta", "--url", URL, "--home", str(home), "--apply").code == 0
    assert snapshot(home) == {}


def test_the_user_s_toml_and_own_keys_are_kept_and_the_stdio_form_is_replaced_cleanly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / CONFIGS["codex"]
    config.parent.mkdir(parents=True)
    original = '# my settings\nmodel = "o3"  # the model I like\n\n[mcp_servers.other]\ncommand = "npx"\n'
    config.write_text(original)
    assert host(tmp_path, "install", "codex", "@all", "--home", str(home), "--apply").code == 0
    doc = tomlkit.parse(config.read_text())
    doc["mcp_servers"]["book-library"]["tool_timeout_sec"] = 120  # the user's own key on our entry
    config.write_text(tomlkit.dumps(doc))

    switched = host(tmp_path, "install", "codex", "--url", URL, "--token-env", TOKEN_ENV, "--home", str(home),
                    "--apply")
    assert "host.transport_replaced" in {w["code"] for w in switched.json["warnings"]}
    text = config.read_text()
    assert text.startswith(original)  # comments, order, the other server: untouched
    entry = tomlkit.parse(text)["mcp_servers"]["book-library"].unwrap()
    assert entry == {"tool_timeout_sec": 120, "url": URL, "bearer_token_env_var": TOKEN_ENV}  # no command/args

    back = host(tmp_path, "install", "codex", "@all", "--home", str(home), "--apply")
    assert "host.transport_replaced" in {w["code"] for w in back.json["warnings"]}
    entry = tomlkit.parse(config.read_text())["mcp_servers"]["book-library"].unwrap()
    assert set(entry) == {"tool_timeout_sec", "command", "args", "startup_timeout_sec"}  # no url, no token var
    assert host(tmp_path, "uninstall", "codex", "@all", "--home", str(home), "--apply").code == 0
    assert config.read_text() == original


def test_a_json_host_keeps_the_header_the_user_added_until_the_entry_goes_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / CONFIGS["trae"]
    assert host(tmp_path, "install", "trae", "--url", URL, "--home", str(home), "--apply").code == 0
    doc = json.loads(config.read_text())
    doc["mcpServers"]["book-library"]["headers"] = {"Authorization": "Bearer typed-by-the-user"}
    config.write_text(json.dumps(doc, indent=2) + "\n")
    again = host(tmp_path, "install", "trae", "--url", URL, "--home", str(home), "--apply").json
    assert again["changed"] is False  # the user's header is theirs: a reinstall leaves it
    assert host(tmp_path, "install", "trae", "@all", "--home", str(home), "--apply").code == 0
    entry = json.loads(config.read_text())["mcpServers"]["book-library"]
    assert set(entry) == {"command", "args"}  # no url, no headers beside a command


def test_no_token_literal_reaches_any_file_or_output(tmp_path: Path) -> None:
    env = {TOKEN_ENV: SENTINEL}
    home = tmp_path / "home"
    outputs: list[bytes] = []
    for name in ("codex", "trae", "workbuddy", "cherry-studio"):
        for verb in ("plan", "install", "instructions", "verify"):
            extra = ["--apply"] if verb == "install" else []
            out = host(tmp_path, verb, name, "--url", URL, *token_args(name), "--home", str(home), *extra, env=env)
            outputs.append(out.stdout + out.stderr.encode())
        refused = host(tmp_path, "install", name, "--url", URL, "--token-env", TOKEN_ENV, "--home", str(home), env=env)
        outputs.append(refused.stdout + refused.stderr.encode())
    written = {**snapshot(home), **snapshot(tmp_path / "data")}
    assert written and (home / CONFIGS["codex"]).read_text() == GOLDEN["codex"]
    assert not [path for path, data in written.items() if SENTINEL.encode() in data]
    assert not [out for out in outputs if SENTINEL.encode() in out]


@pytest.mark.parametrize(("url", "code"), [
    ("ftp://books.example.org/mcp", "host.bad_url"),
    ("books.example.org/mcp", "host.bad_url"),
    ("https:///mcp", "host.bad_url"),
    ("https://books.example.org/mcp#top", "host.bad_url"),
    ("https://books.example.org:99999/mcp", "host.bad_url"),
    ("https://" + "a" * 2100 + ".org/mcp", "host.bad_url"),
    ("https://reader:hunter2-secret@books.example.org/mcp", "host.url_credentials"),
    ("https://books.example.org/mcp?access_token=hunter2-secret", "host.url_credentials"),
    ("https://books.example.org/mcp?%61ccess_token=hunter2-secret", "host.url_credentials"),
    ("https://books.example.org/mcp?client_secret=hunter2-secret", "host.url_credentials"),
    ("https://books.example.org/mcp;token=hunter2-secret", "host.url_credentials"),
    ("https://books.example.org/mcp#access_token=hunter2-secret", "host.bad_url"),
    ("https://books.example.org/team/mcp?lang=en", "host.url_credentials"),  # any query: decided by structure
    ("http://10.1.2.3:8765/mcp", "host.insecure_url"),
    ("http://books.example.org/mcp", "host.insecure_url"),
    ("http://127.1/mcp", "host.insecure_url"),  # not a form every resolver reads as loopback
])
def test_a_bad_url_is_refused_with_its_code_and_nothing_written(url: str, code: str, tmp_path: Path) -> None:
    out = host(tmp_path, "install", "codex", "--url", url, "--home", str(tmp_path / "home"), "--apply")
    assert out.code == 1 and out.error_code == code
    assert snapshot(tmp_path) == {}
    assert b"hunter2-secret" not in out.stdout


@pytest.mark.parametrize("url", ["http://127.0.0.1:8765/mcp", "http://localhost:8765/mcp", "http://[::1]:8765/mcp",
                                 "https://books.example.org/team/mcp"])
def test_loopback_http_and_https_are_accepted(url: str, tmp_path: Path) -> None:
    out = host(tmp_path, "plan", "codex", "--url", url, "--home", str(tmp_path / "home"))
    assert out.code == 0 and out.json["url"] == url
    remote = url.startswith("https://books")  # another machine: its server requires a token
    assert ("host.http_token_missing" in {w["code"] for w in out.json["warnings"]}) == remote


def test_plain_http_to_another_machine_needs_the_explicit_flag(tmp_path: Path) -> None:
    url = "http://10.1.2.3:8765/mcp"
    out = host(tmp_path, "plan", "codex", "--url", url, "--token-env", TOKEN_ENV, "--allow-insecure-http",
               "--home", str(tmp_path / "home"), env={TOKEN_ENV: SENTINEL})
    assert out.code == 0 and out.json["url"] == url and out.json["warnings"] == []


@pytest.mark.parametrize(("args", "code"), [
    (["trae", "--url", URL, "--token-env", TOKEN_ENV], "host.token_env_unsupported"),
    (["workbuddy", "--url", URL, "--token-env", TOKEN_ENV], "host.token_env_unsupported"),
    (["cherry-studio", "--url", URL, "--token-env", TOKEN_ENV], "host.token_env_unsupported"),
    (["codex", "--url", URL, "--token-env", "Bearer abc"], "host.bad_token_env"),
    (["codex", "@all", "--token-env", TOKEN_ENV], "host.url_required"),
    (["codex", "@all", "--allow-insecure-http"], "host.url_required"),
    (["codex", "one-book", "--url", URL], "host.url_needs_library"),
    (["codex", "a,,b", "--url", URL], "book.bad_ref"),
    (["codex"], "host.book_required"),
])
def test_what_cannot_be_installed_is_refused_with_its_code(args: list[str], code: str, tmp_path: Path) -> None:
    out = host(tmp_path, "install", *args, "--home", str(tmp_path / "home"), "--apply")
    assert out.code == 1 and out.error_code == code, out.stdout
    assert out.json["error"]["remediation"]
    assert snapshot(tmp_path) == {}
    assert b"Bearer abc" not in out.stdout  # a token pasted as a name is not echoed


def test_the_warnings_say_what_the_user_still_has_to_do(tmp_path: Path) -> None:
    home = str(tmp_path / "home")

    def codes(*args: str, env: dict[str, str] | None = None) -> set[str]:
        out: Any = host(tmp_path, "plan", *args, "--home", home, env=env)
        return {w["code"] for w in out.json["warnings"]}

    assert codes("codex", "--url", URL) == {"host.http_token_missing"}
    assert codes("codex", "--url", URL, "--token-env", "BOOK_AGENT_SURELY_UNSET_VAR") == {"host.token_env_unset"}
    assert codes("codex", "--url", URL, "--token-env", TOKEN_ENV, env={TOKEN_ENV: SENTINEL}) == set()
    assert codes("codex", "--url", "http://127.0.0.1:8765/mcp") == set()
    assert codes("trae", "--url", URL) == {"host.http_token_by_hand"}
    assert codes("workbuddy", "--url", URL) == {"host.restart_required", "host.http_token_by_hand"}
