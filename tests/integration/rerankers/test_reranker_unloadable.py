"""A custom reranker the searching process cannot load (issue 44, item 11): configured where its
module imports, then searched where it does not (a server started without that PYTHONPATH),
or where its import raises, or its factory is gone. A non-strict search answers in the fused
order with a coded warning; a strict one fails with the load error's code; never every search."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from fastmcp import Client

from book_agent import BookAgent, BookAgentError
from book_agent.mcp.server import build_server

PLUGIN = """
from book_agent_adapters.rerankers import ScoringReranker

class Reverse(ScoringReranker):
    provider = "reverse"
    model = "reverse-v1"

    def score(self, query, texts, top_n):
        return [(i, float(i)) for i in range(len(texts))]  # the last candidate first

def create(config, runtime_dir):
    return Reverse()
"""
MODULE = "unloadable_reranker_probe"

# how the module looks where the search runs -> the load error's code
BROKEN = {
    "module absent": (None, "rerank.plugin_not_found"),
    "import raises": ("raise RuntimeError('no GPU here')\n", "rerank.plugin_failed"),
    "factory gone": ("def other(config, runtime_dir):\n    return None\n", "rerank.plugin_not_found"),
    "factory not callable": ("create = 42\n", "rerank.plugin_invalid"),
}


@pytest.fixture(autouse=True)
def import_path_restored():
    """The loader puts a recorded module_path on sys.path (as PYTHONPATH would): not past this test."""
    saved = list(sys.path)
    yield
    sys.path[:] = saved
    sys.modules.pop(MODULE, None)


@pytest.fixture
def configured(tmp_path: Path, pdf_package: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A book whose config names the plug-in, configured while it imported; then it is unloaded."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / f"{MODULE}.py").write_text(PLUGIN, encoding="utf-8")
    with monkeypatch.context() as patch:
        patch.syspath_prepend(str(plugins))
        with BookAgent(tmp_path / "data") as agent:
            agent.init(pdf_package)
            assert agent.status("test-book")["capabilities"]["rerank"]["available"] is False  # none configured
            agent.configure("test-book", reranker="custom", reranker_factory=f"{MODULE}:create")
            assert agent.search("test-book", "rivers flooding", top_k=3)["rerank"]["rerank_applied"] is True
            assert agent.status("test-book")["capabilities"]["rerank"]["available"] is True
    sys.modules.pop(MODULE, None)
    return tmp_path / "data", plugins


def _break(plugins: Path, source: str | None) -> None:
    """The module as the searching process finds it: gone (None), or this source instead.
    (configure recorded its folder as reranker.module_path: tests/e2e/test_reranker_plugin_path.py)"""
    sys.modules.pop(MODULE, None)
    module = plugins / f"{MODULE}.py"
    if source is None:
        module.unlink()
    else:
        module.write_text(source, encoding="utf-8")


@pytest.mark.parametrize("how", sorted(BROKEN))
def test_a_search_falls_back_and_a_strict_one_fails_with_the_code(configured, monkeypatch, how: str) -> None:
    data, plugins = configured
    source, code = BROKEN[how]
    if source is not None:
        monkeypatch.syspath_prepend(str(plugins))
    _break(plugins, source)
    try:
        with BookAgent(data) as agent:
            plain = agent.search("test-book", "rivers flooding valleys", top_k=3)
            assert plain["hits"] and plain["rerank"]["rerank_requested"] is True
            assert plain["rerank"]["rerank_applied"] is False
            assert plain["rerank"]["error"]["code"] == code
            assert any(w.startswith(f"{code}: ") and "reranking not applied" in w for w in plain["warnings"])
            assert all("rerank" not in hit["scores"] for hit in plain["hits"])
            with pytest.raises(BookAgentError) as strict:
                agent.search("test-book", "rivers flooding valleys", top_k=3, strict=True)
            assert strict.value.code == code and strict.value.remediation
            capability = agent.status("test-book")["capabilities"]["rerank"]
            assert capability["available"] is False and capability["code"] == code
            # a query nothing matches fails strictly too: the reranker is not there, hits or not
            with pytest.raises(BookAgentError):
                agent.search("test-book", "zzzqqq", top_k=3, strict=True)
    finally:
        sys.modules.pop(MODULE, None)


def test_the_mcp_server_answers_with_the_warning(configured) -> None:
    data, plugins = configured
    _break(plugins, None)

    async def run():
        async with Client(build_server("test-book", data_dir=data)) as client:
            return (await client.call_tool("search", {"query": "rivers flooding"}, raise_on_error=False),
                    await client.call_tool("search", {"query": "rivers flooding", "strict": True},
                                           raise_on_error=False))

    plain, strict = asyncio.run(run())
    assert not plain.is_error
    assert plain.structured_content["rerank"]["error"]["code"] == "rerank.plugin_not_found"
    assert strict.is_error
    assert json.loads(strict.content[0].text)["error"]["code"] == "rerank.plugin_not_found"
