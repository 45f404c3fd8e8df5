"""Verified locators from an older verifier (a book-agent upgrade) are rebuilt in the background:
the search that finds them starts a `prepare` process and answers at once with hits verified
live; once the process ends, the same open book reads the new sidecar. Nothing of the package
changes; a sidecar of another package, or of a newer verifier, is never rebuilt by a search."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from book_agent.domain.sources.locators import VERIFIER_VERSION, older_verifier
from book_agent_adapters.book.runtime_files import build_lock

BOOK = "test-book"
QUERY = "battle general calculations water"
VERIFIED = {"exact", "normalized", "fuzzy"}


def _restamp(agent: BookAgent, **changes: str) -> None:
    path = agent.runtime_dir(BOOK) / "locators.sqlite"
    with closing(sqlite3.connect(path)) as con:
        stamp = json.loads(con.execute("SELECT value FROM meta WHERE key = 'stamp'").fetchone()[0])
        con.execute("UPDATE meta SET value = ? WHERE key = 'stamp'", (json.dumps({**stamp, **changes}),))
        con.commit()


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _wait(job: object, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not job.done():  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the background prepare did not end"
        time.sleep(0.1)


def test_an_older_verifiers_sidecar_is_rebuilt_in_the_background(tmp_path: Path, pdf_package: Path) -> None:
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf_package)
        _restamp(agent, verifier_version=str(int(VERIFIER_VERSION) - 1))
        agent.close()
        before = _digest(pdf_package)
        hits = agent.search(BOOK, QUERY, top_k=5)["hits"]
        assert hits and {h["source_locator"]["verification"]["method"] for h in hits} <= VERIFIED  # live
        locators = agent.books.open(BOOK).locators
        job = locators.refreshing
        assert job is not None, "no rebuild was started"
        _wait(job)
        assert agent.status(BOOK)["sidecars"]["locators"]["fresh"]
        again = agent.search(BOOK, QUERY, top_k=5)["hits"]
        assert locators.refreshing is None and locators._stored is not None  # the same book reads the new file
        assert [h["source_locator"] for h in again] == [h["source_locator"] for h in hits]
        assert _digest(pdf_package) == before


@pytest.mark.parametrize("changes", [{"verifier_version": str(int(VERIFIER_VERSION) + 1)},
                                     {"verifier_version": "1", "database_sha256": "another"}])
def test_a_newer_verifiers_or_another_packages_sidecar_is_left_to_prepare(
        tmp_path: Path, pdf_package: Path, changes: dict[str, str]) -> None:
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf_package)
        _restamp(agent, **changes)
        agent.close()
        assert agent.search(BOOK, QUERY, top_k=5)["hits"]
        assert agent.books.open(BOOK).locators.refreshing is None
        assert not agent.status(BOOK)["sidecars"]["locators"]["fresh"]


def test_a_search_never_waits_for_a_writer_holding_the_book(tmp_path: Path, pdf_package: Path) -> None:
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf_package)
        _restamp(agent, verifier_version="1")
        agent.close()
        with build_lock(agent.runtime_dir(BOOK)):  # another prepare is writing: none is started
            assert agent.search(BOOK, QUERY, top_k=5)["hits"]
            assert agent.books.open(BOOK).locators.refreshing is None


def test_older_verifier_compares_versions_as_numbers() -> None:
    expected = {"package_manifest_sha256": "m", "database_sha256": "d", "verifier_version": "10"}
    assert older_verifier({**expected, "verifier_version": "9"}, expected)
    assert not older_verifier(expected, expected)
    assert not older_verifier({**expected, "verifier_version": "next"}, expected)
    assert not older_verifier({**expected, "package_manifest_sha256": "other", "verifier_version": "9"}, expected)
    assert not older_verifier(None, expected)
