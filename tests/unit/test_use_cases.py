"""The use cases through the composition root with in-memory adapters: no file is touched.

These pin what the services do (registration all or nothing, search over the ports, the
package-changed refusal, configure, remove) independently of SQLite, PDFium or the disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from book_agent.agent import build_agent
from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import Record
from book_agent.testing.memory import FakeBook, memory_adapters

ROOT = "/books/art-of-war"
DATA = "/data/book-agent"  # never created: the fakes hold everything


def records() -> list[Record]:
    texts = ["All warfare is based on deception.", "Water shapes its course according to the ground.",
             "The skillful fighter puts himself into a position which makes defeat impossible."]
    return [Record(f"r{i:04d}", text, {"kind": "pdf", "page_index": i}, seq=i) for i, text in enumerate(texts)]


@pytest.fixture
def adapters() -> dict:
    return memory_adapters({ROOT: FakeBook("art-of-war", records())})


def test_init_then_search_through_the_ports(adapters):
    agent = build_agent(DATA, **adapters)
    resolved = agent.init(ROOT)
    assert resolved["book_id"] == "art-of-war"
    assert [b["book_id"] for b in agent.list_books()] == ["art-of-war"]
    result = agent.search("art-of-war", "water ground")
    assert result["hits"][0]["record_id"] == "r0001"
    assert result["hits"][0]["evidence_id"] == "art-of-war#r0001"
    assert not Path(DATA).exists()


def test_a_failed_build_leaves_the_registry_and_config_as_they_were(adapters):
    adapters["runtime"].fail_build = BookAgentError("lexical.build_failed", "disk full")
    agent = build_agent(DATA, **adapters)
    with pytest.raises(BookAgentError) as info:
        agent.init(ROOT, reranker="none")
    assert info.value.code == "lexical.build_failed"
    assert adapters["registry"].entries == {}
    assert adapters["runtime"].sidecars == {} and adapters["runtime"].configs == {}


def test_an_id_taken_by_another_package_is_refused_unless_replaced(adapters):
    adapters["packages"].books[Path("/books/other")] = FakeBook("art-of-war", records()[:1], version=2)
    agent = build_agent(DATA, **adapters)
    agent.init(ROOT)
    with pytest.raises(BookAgentError) as info:
        agent.init("/books/other")
    assert info.value.code == "book.already_registered"
    assert agent.registry.get("art-of-war")["package_root"] == ROOT
    agent.init("/books/other", replace=True)
    assert agent.registry.get("art-of-war")["package_root"] == "/books/other"
    assert len(agent.search("art-of-war", "warfare deception")["hits"]) == 1


def test_a_package_that_changed_is_refused_until_restored(adapters):
    agent = build_agent(DATA, **adapters)
    agent.init(ROOT)
    adapters["packages"].books[Path(ROOT)].changed = True
    with pytest.raises(BookAgentError) as info:
        agent.search("art-of-war", "water")
    assert info.value.code == "package.changed"
    adapters["packages"].books[Path(ROOT)].changed = False
    assert agent.search("art-of-war", "water")["hits"]


def test_configure_saves_through_the_runtime_store_and_reopens_the_book(adapters):
    agent = build_agent(DATA, **adapters)
    agent.init(ROOT)
    before = agent.books.open("art-of-war")
    result = agent.configure("art-of-war", allow_remote_requests=True,
                             allowed_endpoints=["https://api.example.com/v1/embeddings"])
    assert result["config"]["network"]["allow_remote_requests"] is True
    saved = adapters["runtime"].configs[agent.runtime_dir("art-of-war")]
    assert saved.network.allow_remote_requests is True
    assert agent.books.open("art-of-war") is not before  # the new settings are read


def test_configure_refuses_a_reranker_that_cannot_load_and_saves_nothing(adapters):
    agent = build_agent(DATA, **adapters)
    agent.init(ROOT)
    with pytest.raises(BookAgentError) as info:
        agent.configure("art-of-war", reranker="siliconflow")
    assert info.value.code == "rerank.unknown_provider"
    assert adapters["runtime"].configs[agent.runtime_dir("art-of-war")].reranker.provider == "none"


def test_remove_unregisters_and_drops_the_runtime_dir(adapters):
    agent = build_agent(DATA, **adapters)
    agent.init(ROOT)
    runtime = agent.runtime_dir("art-of-war")
    assert runtime in adapters["runtime"].dirs
    assert agent.remove("art-of-war")["removed"] is True
    assert adapters["registry"].entries == {} and runtime not in adapters["runtime"].dirs
    with pytest.raises(BookAgentError) as info:
        agent.search("art-of-war", "water")
    assert info.value.code == "book.not_registered"


def test_status_reports_lexical_search_and_no_vectors(adapters):
    agent = build_agent(DATA, **adapters)
    agent.init(ROOT)
    status = agent.status("art-of-war")
    assert status["package"]["healthy"] is True
    assert status["capabilities"]["lexical_search"]["available"] is True
    assert status["capabilities"]["vector_search"]["available"] is False


def test_reading_goes_through_the_records_and_markdown_ports(adapters):
    agent = build_agent(DATA, **adapters)
    agent.init(ROOT)
    entry = agent.read_entry("art-of-war", "r0002")
    assert entry["evidence_id"] == "art-of-war#r0002" and "skillful fighter" in entry["text"]
    assert "Read the book." in agent.get_skill("art-of-war")["text"]
