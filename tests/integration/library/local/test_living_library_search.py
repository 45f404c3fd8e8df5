"""The living library through BookAgent and the CLI: a book registered is searchable at the next
library search without a rebuild of the rest, a removal takes effect at once, a search never
waits for another writer (it serves the generation in place and says so), every result names the
generation it read, and `prepare @all --full` compacts to the exact rebuild.

Real packages (SQLite, EPUB), a real file lock held by another thread, the real CLI."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from book_agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent.services.library import lexical as library_service
from book_agent.services.library import writer as library_writer
from book_agent_adapters.library.local.lexical import library_lexical_index as library_index
from tests.support.cli_support import run_cli
from tests.support.library_support import corpus, make_book, register_only


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


def test_a_registration_brings_the_library_up_to_date_itself_and_a_removal_takes_effect_at_once(agent, tmp_path):
    agent, records = agent
    before = agent.search("@all", "river water", top_k=20)["library"]
    agent.init(make_book(tmp_path / "parts", "part-2", records[2::4]))
    assert "part-2" in (tmp_path / "data" / "library" / "lexical-living.json").read_text()  # extended by init
    added = agent.search("@all", "river water", top_k=20)
    assert "part-2" in books_of(added)
    assert added["library"]["lexical_index"]["rebuilt"] is False  # the search built nothing
    assert added["library"]["generation"] not in (None, before["generation"])
    agent.remove("part-0")
    removed = agent.search("@all", "river water", top_k=20)
    assert books_of(removed) <= {"part-1", "part-2"} and removed["hits"]
    assert removed["library"]["generation"] != added["library"]["generation"]


def test_a_search_never_builds_it_serves_the_generation_in_place_and_names_the_books_not_yet_in_it(
        agent, tmp_path, monkeypatch):
    """A book registered by a process that never brought the library up to date (killed right
    after registering): a search takes no build lock and builds nothing, serves the generation in
    place, names the book as not yet in its lexical hits (its vectors still answer: the exact
    half), and a removed book's records leave the hits at once all the same. A writer
    (`prepare @all`) adds it; the next look at the generation serves it."""
    agent, records = agent
    served = agent.search("@all", "river water")["library"]["generation"]

    def no_build(*_: object, **__: object) -> None:
        raise AssertionError("a search ran a build")

    def cannot_build(*_: object, **__: object) -> None:
        raise BookAgentError("lexical.build_failed", "no writer can write now (test)")

    register_only(agent, make_book(tmp_path / "parts", "part-2", records[2::4]))
    with monkeypatch.context() as patched:
        for method in ("build", "compact"):
            patched.setattr(library_index.SqliteLibraryIndex, method, no_build)
        pending = agent.search("@all", "river water", top_k=20)
        index = pending["library"]["lexical_index"]
        assert index["stale"]["code"] == "lexical.index_pending" and index["pending_books"] == ["part-2"]
        assert index["rebuilt"] is False and pending["library"]["generation"] == served
        assert not any(h["book_id"] == "part-2" and h["scores"]["lexical"] for h in pending["hits"])
        assert any("part-2" in w for w in pending["warnings"])
        with monkeypatch.context() as failing:  # the removal's own update fails: the search filters it
            failing.setattr(library_index.SqliteLibraryIndex, "build", cannot_build)
            agent.remove("part-0")
        removed = agent.search("@all", "river water", top_k=20)
        assert removed["hits"] and "part-0" not in books_of(removed)
        assert removed["library"]["lexical_index"]["pending_books"] == ["part-2"]
    agent.prepare("@all")
    time.sleep(library_service.GENERATION_RECHECK_S)
    after = agent.search("@all", "river water", top_k=20)
    assert "stale" not in after["library"]["lexical_index"] and "part-2" in books_of(after)
    assert "part-0" not in books_of(after)


def test_a_one_shot_search_after_init_finds_the_book_without_building(tmp_path):
    """The CLI: `init` brings the library's index up to date itself, so the next one-shot
    `search @all` (a new process) finds the book and builds nothing."""
    records = corpus(40)
    data = str(tmp_path / "data")
    for part in range(2):
        assert run_cli("--data-dir", data, "init", str(make_book(tmp_path / "parts", f"part-{part}",
                                                                 records[part::4]))).code == 0
    assert run_cli("--data-dir", data, "--json", "prepare", "@all").code == 0
    assert run_cli("--data-dir", data, "init", str(make_book(tmp_path / "parts", "part-2", records[2::4]))).code == 0
    found = run_cli("--data-dir", data, "--json", "search", "@all", "river water", "--top-k", "20")
    assert found.code == 0, found.stderr
    assert "part-2" in {h["book_id"] for h in found.json["hits"]}
    assert found.json["library"]["lexical_index"]["rebuilt"] is False
    assert "stale" not in found.json["library"]["lexical_index"]


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
    """BACKGROUND_CHANGES books added since the base: the background writer's own look finds the
    generation due and compacts (in its thread here, `writer_in_process`); searches while the
    compaction waits at its commit point answer at once from the living generation, and move to
    the compacted one when it lands, which scores as `prepare @all --full` does."""
    agent, records = agent
    monkeypatch.setattr(library_service, "GENERATION_RECHECK_S", 0.0)
    monkeypatch.setattr(library_writer, "POLL_S", 0.05)
    at_commit, release = threading.Event(), threading.Event()

    def slow_commit(point: str) -> None:
        if point == "compact:before-rename":
            at_commit.set()
            assert release.wait(30)

    monkeypatch.setattr(library_index, "crash_point", slow_commit)
    for part in range(library_writer.BACKGROUND_CHANGES):
        agent.init(make_book(tmp_path / "parts", f"more-{part}", records[part::4]))
    living = agent.search("@all", "grain tax season", top_k=30)["library"]["generation"]
    assert "." in living  # the base and the books added since: a living generation
    agent.serve_long(writer_in_process=True)
    try:
        assert at_commit.wait(30)  # no search asked for it: the writer's own timer
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


def test_a_server_never_searched_applies_a_registration_and_compacts_in_a_child_process(agent, tmp_path,
                                                                                      monkeypatch):
    """serve_long(): the background writer wakes on its own timer (no search at all), adds a
    book another process registered without updating the library, and compacts once
    BACKGROUND_CHANGES books changed, each job in a child process (another pid), which leaves
    no writer behind when the agent closes."""
    agent, records = agent
    monkeypatch.setattr(library_writer, "POLL_S", 0.05)
    agent.serve_long()
    writer = agent._library.writer
    assert writer is not None
    register_only(agent, make_book(tmp_path / "parts", "late", records[3::4]))
    pointer = tmp_path / "data" / "library" / "lexical-living.json"
    deadline = time.monotonic() + 120
    while not writer.jobs:
        assert time.monotonic() < deadline, "the background writer never added the book"
        time.sleep(0.05)
    assert writer.jobs[0].lexical == "build" and "late" in pointer.read_text()
    for part in range(library_writer.BACKGROUND_CHANGES):
        register_only(agent, make_book(tmp_path / "parts", f"more-{part}", records[part::4]))
    while not any(job.lexical == "compact" for job in writer.jobs):
        assert time.monotonic() < deadline, "the background writer never compacted"
        time.sleep(0.05)
    assert not pointer.exists()  # one base again, holding every book
    with BookAgent(tmp_path / "data") as other:
        state = other._library.due()
    assert state is None  # nothing left to do
    child = writer._stop_job.__self__  # type: ignore[union-attr]  # the ChildWriter's stop
    assert child.pids and os.getpid() not in child.pids
    agent.close()
    assert not any(Path(f"/proc/{pid}").exists() for pid in child.pids)  # ended and reaped
    assert not writer.alive and writer not in library_writer.running_writers()
