"""Plug-ins: discovery through real entry points (a temporary dist-info on sys.path),
`module:factory` paths, the load-time checks, the run-time guard, the example plug-in
under the contract suite, and the `plugins` CLI command.

The plug-ins installed in the environment are hidden from every test (tests/conftest.py,
only_builtin_rerankers); the tests of the example plug-in install it with `example_plugin`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from book_agent.cli.argv import GlobalOptions
from book_agent.cli.commands import plugins as plugins_cli
from book_agent.domain.errors import BookAgentError
from book_agent.testing.fakes import sample_candidates
from book_agent.testing.reranker_contract import RerankerContract
from book_agent_adapters.rerankers import create_reranker, list_rerankers
from tests.support.plugins import install_dist

PLUGIN_SOURCE = '''
from book_agent_adapters.rerankers import ScoringReranker

class Reverse(ScoringReranker):
    provider = "reverse"
    def score(self, query, texts, top_n):
        return [(i, float(i)) for i in range(len(texts))]

def good(config, runtime_dir):
    r = Reverse()
    r.strict = config["strict"]
    return r

class NoMethods:
    def rerank(self, query, candidates, top_n):
        return {}

def invalid(config, runtime_dir):
    return NoMethods()

def raises(config, runtime_dir):
    raise RuntimeError("factory exploded")

class Liar(Reverse):
    """Claims `applied` but hands back the candidates untouched and mutated."""
    def rerank(self, query, candidates, top_n):
        for c in candidates:
            c["text"] = "changed"
        return {"hits": candidates[:top_n], "rerank_requested": True, "rerank_applied": True,
                "warnings": [], "error": None}

def liar(config, runtime_dir):
    return Liar()

class Crashes(Liar):
    def rerank(self, query, candidates, top_n):
        raise KeyError("inside rerank")

def crashes(config, runtime_dir):
    return Crashes()

not_callable = 42
'''


MODULE = "fake_rerank_plugin"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    site = tmp_path / "site"
    site.mkdir()
    entries = {name: f"{MODULE}:{name}" for name in
               ("good", "invalid", "raises", "liar", "crashes", "not_callable")}
    entries |= {"missing-attr": f"{MODULE}:nope", "missing-module": "no_such_module_xyz:create",
                "none": f"{MODULE}:good"}
    install_dist(site, "fake-rerankers", MODULE, entries, PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(site))
    yield site
    for name in (MODULE, "broken_import_mod"):  # the next test gets a fresh import
        sys.modules.pop(name, None)


def test_only_the_builtins_are_seen_unless_a_test_installs_a_plugin(tmp_path: Path) -> None:
    assert {r["name"] for r in list_rerankers(load=False)} == {"none", "siliconflow", "local"}
    error = load_error({"provider": "term-overlap"}, tmp_path)  # installed in the venv, hidden here
    assert error.code == "rerank.unknown_provider"


def load_error(config: dict, tmp_path: Path) -> BookAgentError:
    with pytest.raises(BookAgentError) as info:
        create_reranker(config, tmp_path)
    return info.value


def test_entry_point_plugin_loads_and_reranks(site: Path, tmp_path: Path) -> None:
    for config in ({"provider": "good"}, {"provider": "custom", "factory": "good"},
                   {"provider": "custom", "factory": f"{MODULE}:good"}):
        reranker = create_reranker(config, tmp_path)
        out = reranker.rerank("q", sample_candidates(3), 3)
        assert out["rerank_applied"] is True
        assert [h["record_id"] for h in out["hits"]] == ["r0003", "r0002", "r0001"]
        assert reranker.provider_info()["plugin"] is True


@pytest.mark.usefixtures("example_plugin")
def test_unknown_name_lists_the_available_ones(site: Path, tmp_path: Path) -> None:
    error = load_error({"provider": "goood"}, tmp_path)
    assert error.code == "rerank.unknown_provider"
    for name in ("none", "siliconflow", "local", "good", "term-overlap"):
        assert name in error.details["available"] and name in error.message


def test_a_plugin_cannot_take_a_builtin_name(site: Path, tmp_path: Path) -> None:
    assert type(create_reranker({"provider": "none"}, tmp_path)).__name__ == "NoneReranker"
    rows = {(r["name"], r["dist"]): r for r in list_rerankers()}
    shadow = rows[("none", "fake-rerankers")]
    assert shadow["loadable"] is False and "built-in" in shadow["error"]["message"]


@pytest.mark.parametrize(("factory", "code", "words"), [
    ("invalid", "rerank.plugin_invalid", "healthcheck, provider_info"),
    ("not_callable", "rerank.plugin_invalid", "not callable"),
    ("raises", "rerank.plugin_failed", "factory exploded"),
    ("missing-attr", "rerank.plugin_not_found", "no attribute"),
    ("missing-module", "rerank.plugin_not_found", "no_such_module_xyz"),
    ("no_such_module_xyz.sub:create", "rerank.plugin_not_found", "not installed"),
    ("book_agent_adapters.rerankers:nothing_here", "rerank.plugin_not_found", "no attribute"),
    ("bad path:", "rerank.config_invalid", "module:callable"),
])
def test_load_time_checks(site: Path, tmp_path: Path, factory: str, code: str, words: str) -> None:
    error = load_error({"provider": "custom", "factory": factory}, tmp_path)
    assert error.code == code and words in error.message and error.remediation


def test_an_import_that_raises_is_plugin_failed(site: Path, tmp_path: Path) -> None:
    (site / "broken_import_mod.py").write_text("import no_such_dependency_abc\n")
    error = load_error({"provider": "custom", "factory": "broken_import_mod:create"}, tmp_path)
    assert error.code == "rerank.plugin_failed" and "no_such_dependency_abc" in error.message


@pytest.mark.parametrize(("factory", "code"), [("liar", "rerank.plugin_bad_result"),
                                               ("crashes", "rerank.plugin_failed")])
def test_a_misbehaving_plugin_never_fakes_applied(site: Path, tmp_path: Path, factory: str, code: str) -> None:
    candidates = sample_candidates(3)
    reranker = create_reranker({"provider": factory}, tmp_path)
    out = reranker.rerank("q", candidates, 2)
    assert out["rerank_applied"] is False and out["error"]["code"] == code
    assert out["hits"] == sample_candidates(3)[:2] and candidates == sample_candidates(3)
    with pytest.raises(BookAgentError) as info:
        create_reranker({"provider": factory, "strict": True}, tmp_path).rerank("q", candidates, 2)
    assert info.value.code == code


@pytest.mark.usefixtures("example_plugin")
def test_listing_reports_source_and_loadability(site: Path) -> None:
    rows = {(r["name"], r["dist"]): r for r in list_rerankers()}
    assert rows[("none", "book-agent")]["source"] == "builtin" and rows[("none", "book-agent")]["loadable"]
    assert rows[("good", "fake-rerankers")]["source"] == "entry point (fake-rerankers 1.0)"
    assert rows[("good", "fake-rerankers")]["loadable"] is True
    assert rows[("missing-module", "fake-rerankers")]["error"]["code"] == "rerank.plugin_not_found"
    assert rows[("term-overlap", "book-agent-reranker-example")]["loadable"] is True
    unchecked = list_rerankers(load=False)
    assert all(r["loadable"] is None for r in unchecked if not r["error"])


def cli_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:  # a group, like the real root app
        pass

    plugins_cli.register(app)
    return app


@pytest.mark.usefixtures("example_plugin")
@pytest.mark.parametrize("command", ["plugins", "rerankers"])
def test_cli_lists_rerankers_as_json(site: Path, command: str) -> None:
    result = CliRunner().invoke(cli_app(), [command], obj=GlobalOptions(json=True))
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rerankers"]
    names = {r["name"]: r for r in rows if not r["error"] or r["name"] != "none"}
    assert {"none", "siliconflow", "local", "good", "term-overlap"} <= set(names)
    assert names["raises"]["loadable"] is True  # it imports; it fails only when called


@pytest.mark.usefixtures("example_plugin")
def test_cli_human_table(site: Path) -> None:
    result = CliRunner().invoke(cli_app(), ["plugins"], obj=GlobalOptions(), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "term-overlap" in result.stdout and "rerank.plugin_not_found" in result.stdout


@pytest.mark.usefixtures("example_plugin")
class TestExamplePluginContract(RerankerContract):
    @pytest.fixture
    def make_reranker(self, tmp_path: Path):
        return lambda: create_reranker({"provider": "term-overlap"}, tmp_path)


@pytest.mark.usefixtures("example_plugin")
def test_example_plugin_prefers_overlap(tmp_path: Path) -> None:
    candidates = sample_candidates(3)
    candidates[1]["text"] = "知己知彼 rivers"
    out = create_reranker({"provider": "term-overlap"}, tmp_path).rerank("知彼 rivers", candidates, 1)
    assert out["hits"][0]["record_id"] == "r0002" and out["hits"][0]["scores"]["rerank"] == 3.0
