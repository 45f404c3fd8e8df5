"""The verified-locator sidecar (locators.sqlite): built by init, reported by status, stale
when the package or the verifier changes, rebuilt by prepare; a search never hands out an
unchecked claim while the original can be read, sidecar or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from book_agent.domain.sources import locators as locator_rules
from tests.support.package_builder import rehash
from tests.support.sources_support import set_record

BOOK = "test-book"
VERIFIED = {"exact", "normalized", "fuzzy"}


def _methods(agent: BookAgent, query: str = "battle general calculations water") -> set[str]:
    hits = agent.search(BOOK, query, top_k=5)["hits"]
    assert hits
    return {h["source_locator"]["verification"]["method"] for h in hits}


def test_init_builds_the_sidecar_and_status_reports_it(tmp_path: Path, pdf_package: Path) -> None:
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf_package)
        state = agent.status(BOOK)["sidecars"]["locators"]
        assert state["fresh"] and Path(state["path"]).name == "locators.sqlite"
        assert state["verification"]["records"] == 10 and state["verification"]["failed_count"] == 0
        assert _methods(agent) <= VERIFIED
        assert agent.prepare(BOOK)["locators"]["built"] is False  # fresh: nothing to do


def test_wrong_claims_are_corrected_in_the_hits(tmp_path: Path, pdf_package: Path) -> None:
    set_record(pdf_package, "r0002", {"kind": "pdf", "page_index": 4, "char_start": 500, "char_end": 520})
    rehash(pdf_package)
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf_package)
        hit = next(h for h in agent.search(BOOK, "general battle temple calculations")["hits"] if h["record_id"] == "r0002")
    loc = hit["source_locator"]
    assert loc["page_index"] == 0 and loc["verification"]["corrected"]["page_index"] == {"claimed": 4, "found": 0}
    assert loc["verification"]["method"] in VERIFIED and loc["page_label"] == "1"


def test_a_new_verifier_makes_it_stale_and_prepare_rebuilds_it(tmp_path: Path, pdf_package: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf_package)
        monkeypatch.setattr(locator_rules, "VERIFIER_VERSION", "next")
        agent.close()
        state = agent.status(BOOK)["sidecars"]["locators"]
        assert state["present"] and not state["fresh"] and "prepare" in state["remediation"]
        assert _methods(agent) <= VERIFIED  # verified live meanwhile
        assert agent.prepare(BOOK)["locators"]["built"] is True
        assert agent.status(BOOK)["sidecars"]["locators"]["fresh"]


@pytest.mark.parametrize("damage", ["remove", "garbage"])
def test_without_a_usable_sidecar_hits_are_verified_live(tmp_path: Path, pdf_package: Path, damage: str) -> None:
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf_package)
        agent.close()
        path = agent.runtime_dir(BOOK) / "locators.sqlite"
        if damage == "remove":
            path.unlink()
        else:
            path.write_bytes(b"not a database" * 100)
        state = agent.status(BOOK)["sidecars"]["locators"]
        assert not state["fresh"] and state["reason"] == ("missing" if damage == "remove" else "corrupt")
        assert _methods(agent) <= VERIFIED
        assert agent.prepare(BOOK)["locators"]["built"] is True


def test_an_unreadable_original_leaves_the_claim_marked_as_such(tmp_path: Path, pdf_package: Path) -> None:
    original = pdf_package / "original" / "book.pdf"
    original.write_bytes(b"%PDF-1.4 broken" + b"\0" * 2000)
    rehash(pdf_package)  # a package built with a broken original: its hashes hold
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf_package)
        check = agent.status(BOOK)["sidecars"]["locators"]["verification"]
        hits = agent.search(BOOK, "battle general calculations")["hits"]
    assert check["by_method"]["record-metadata"] == 10 and check["failed_count"] == 10
    assert hits and {h["source_locator"]["verification"]["method"] for h in hits} == {"record-metadata"}
    assert all(h["source_locator"]["warnings"] for h in hits)
