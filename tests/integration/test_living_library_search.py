"""The living library through BookAgent and the CLI: a book registered is searchable at the next
library search without a rebuild of the rest, a removal takes effect at once, a search never
waits for another writer (it serves the generation in place and says so), every result names the
generation it read, and `prepare @all --full` compacts to the exact rebuild.

Real packages (SQLite, EPUB), a real file lock held by another thread, the real CLI."""

from __future__ import annotations

import threading
import time

import pytest

from book_agent import BookAgent
from book_agent.services import library_lexical as library_service
from book_agent_adapters.storage import library_lexical_index as library_index
from tests.support.build_lock_holder import another_writer_holding
from tests.support.cli_support import run_cli
from tests.support.library_support import corpus, make_book


@pytest.fixture
def agent(tmp_path):
    records = corpus(40)
    with BookAgent(tmp_path / "data") as agent:
        for part in range(2):
            agent.init(make_book(tmp_path / "parts", f"part-{part}", records[part::4]))
        agent.search("@all", "river water")  # the base: two books
        yield agent, records


def books_of(result) -> set[str]:
    return {h["book_id"] for h in result["hits"]}


def test_a_book_added_is_searchable_at_the_next_search_and_a_removal_at_once(agent, tmp_path):
    agent, records = agent
    before = agent.search("@all", "river water", top_k=20)["library"]
    agent.init(make_book(tmp_path / "parts", "part-2", records[2::4]))
    added = agent.search("@all", "river water", top_k=20)
    assert "part-2" in books_of(added)
    assert added["library"]["lexical_index"]["rebuilt"] is True
    assert added["library"]["generation"] not in (None, before["generation"])
    assert (tmp_path / "data" / "library" / "lexical-living.json").is_file()  # extended, not rebuilt
    agent.remove("part-0")
    removed = agent.search("@all", "river water", top_k=20)
    assert books_of(removed) <= {"part-1", "part-2"} and removed["hits"]
    assert removed["library"]["generation"] != added["library"]["generation"]


def test_a_search_serves_the_generation_in_place_while_another_writer_holds_the_library(agent, tmp_path,
                                                                                          monkeypatch):
    agent, records = agent
    monkeypatch.setattr(library_service, "BUSY_RETRY_S", 0.0)
    served = agent.search("@all", "river water")["library"]["generation"]
    agent.init(make_book(tmp_path / "parts", "part-2", records[2::4]))
    with another_writer_holding(tmp_path / "data" / "library", hold_s=30):
        busy = agent.search("@all", "river water", top_k=20)
        assert busy["hits"] and "part-2" not in books_of(busy)
        assert busy["library"]["lexical_index"]["stale"]["code"] == "lexical.build_busy"
        assert busy["library"]["generation"] == served
        assert any("stale" in w for w in busy["warnings"])
    after = agent.search("@all", "river water", top_k=20)
    assert "stale" not in after["library"]["lexical_index"] and "part-2" in books_of(after)


def test_prepare_full_compacts_to_the_exact_rebuild_and_a_running_agent_moves_to_it(agent, tmp_path, monkeypatch):
    agent, records = agent
    monkeypatch.setattr(library_service, "GENERATION_RECHECK_S", 0.0)
    agent.init(make_book(tmp_path / "parts", "part-2", records[2::4]))
    living = agent.search("@all", "grain tax season", top_k=30)
    data = str(tmp_path / "data")
    prepared = run_cli("--data-dir", data, "--json", "prepare", "@all", "--full")
    assert prepared.code == 0, prepared.stderr
    info = prepared.json["lexical_index"]
    assert info["compacted"] is True and info["drift"] == 0.0
    assert not (tmp_path / "data" / "library" / "lexical-living.json").exists()
    compacted = agent.search("@all", "grain tax season", top_k=30)
    assert compacted["library"]["generation"] == info["generation"] != living["library"]["generation"]
    with BookAgent(tmp_path / "fresh") as fresh:  # the same three books, built once
        for part in range(3):
            fresh.init(tmp_path / "parts" / f"part-{part}")  # the packages built above
        exact = fresh.search("@all", "grain tax season", top_k=30)
    assert [(h["evidence_id"], round(h["scores"]["lexical"] or 0, 9)) for h in compacted["hits"]] == [
        (h["evidence_id"], round(h["scores"]["lexical"] or 0, 9)) for h in exact["hits"]]


def lexical_scores(result) -> list[tuple[str, float]]:
    return [(h["evidence_id"], round(h["scores"]["lexical"] or 0, 9)) for h in result["hits"]]


def test_a_server_compacts_in_the_background_when_due_and_no_search_waits_for_it(agent, tmp_path, monkeypatch):
    """BACKGROUND_CHANGES books added since the base: the next look at the generation starts a
    compaction in a thread; searches held up behind it (the compaction waits at its commit
    point here) answer at once from the living generation, and move to the compacted one when
    it lands, which scores as `prepare @all --full` does."""
    agent, records = agent
    monkeypatch.setattr(library_service, "GENERATION_RECHECK_S", 0.0)
    at_commit, release = threading.Event(), threading.Event()

    def slow_commit(point: str) -> None:
        if point == "compact:before-rename":
            at_commit.set()
            assert release.wait(30)

    monkeypatch.setattr(library_index, "crash_point", slow_commit)
    agent.serve_long()
    for part in range(library_service.BACKGROUND_CHANGES):
        agent.init(make_book(tmp_path / "parts", f"more-{part}", records[part::4]))
    living = agent.search("@all", "grain tax season", top_k=30)["library"]["generation"]
    assert "." in living  # the base and the books added since: a living generation
    try:
        agent.search("@all", "river water")  # this look at the generation finds it due
        assert at_commit.wait(30)
        for _ in range(5):  # the compaction holds the library: searches neither wait nor fail
            started = time.monotonic()
            during = agent.search("@all", "grain tax season", top_k=30)
            assert during["hits"] and during["library"]["generation"] == living
            assert time.monotonic() - started < 5
    finally:
        release.set()
    deadline = time.monotonic() + 30
    while (moved := agent.search("@all", "grain tax season", top_k=30))["library"]["generation"] == living:
        assert time.monotonic() < deadline, "the search never moved to the compacted generation"
        time.sleep(0.05)
    assert "." not in moved["library"]["generation"]  # one base again
    assert agent.prepare("@all", full=True)["lexical_index"]["compacted"] is True
    exact = agent.search("@all", "grain tax season", top_k=30)
    assert lexical_scores(moved) == lexical_scores(exact)
