"""Issue 29: what a warm search reads again is kept, and what is kept is what a fresh read gives.

A package's records and a book's verified locators never change under an open reader (the
package is read-only and fingerprint-checked; a locator rebuild is a new file and a new
lookup), so the readers keep what they parsed. Real package databases and a real locator
sidecar; SQLite's trace callback counts the statements that reach the files."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from book_agent.domain.search import visual_fallback
from book_agent_adapters.book.locator_sidecar import SqliteLocatorLookup, SqliteLocatorStore
from book_agent_adapters.book.vectors.sqlite_records import SqliteRecordReader
from tests.support.package_builder import build_package


def _record_ids(root: Path) -> list[str]:
    with closing(sqlite3.connect(root / "index.sqlite")) as con:
        return [str(row[0]) for row in con.execute("SELECT record_id FROM records ORDER BY seq")]


def _statements(con: sqlite3.Connection) -> list[str]:
    seen: list[str] = []
    con.set_trace_callback(seen.append)
    return seen


def test_records_read_once_are_handed_out_again_as_read(tmp_path: Path) -> None:
    root = build_package(tmp_path / "book", book_id="cache-book")
    ids = _record_ids(root)
    reader = SqliteRecordReader(root / "index.sqlite")
    fresh = SqliteRecordReader(root / "index.sqlite", cached=0)
    seen = _statements(reader._connection())
    first = reader.fetch(ids[:3] + ["no-such-record"])
    assert len(seen) == 1 and set(first) == set(ids[:3])
    again = reader.fetch(ids[:3])
    assert len(seen) == 1  # nothing read again
    assert all(again[i] is first[i] for i in ids[:3])
    mixed = reader.fetch([ids[1], ids[4], "no-such-record"])  # one kept, one to read, one unknown
    assert len(seen) == 2 and set(mixed) == {ids[1], ids[4]}
    assert mixed == fresh.fetch([ids[1], ids[4]]) and reader.get(ids[4]) == fresh.get(ids[4])
    reader.close()
    fresh.close()


def test_the_record_cache_is_bounded_and_still_answers_every_id(tmp_path: Path) -> None:
    root = build_package(tmp_path / "book", book_id="bounded-book")
    ids = _record_ids(root)
    assert len(ids) >= 6
    reader = SqliteRecordReader(root / "index.sqlite", cached=3)
    fresh = SqliteRecordReader(root / "index.sqlite", cached=0)
    for record_id in ids:
        assert reader.fetch([record_id]) == fresh.fetch([record_id])
    assert len(reader._cached) == 3 and set(reader._cached) == set(ids[-3:])  # the oldest went first
    assert reader.fetch(ids) == fresh.fetch(ids)
    assert fresh._cached == {}
    reader.close()
    fresh.close()


def test_locators_read_once_are_handed_out_again_as_read(tmp_path: Path) -> None:
    store = SqliteLocatorStore()
    stamp = {"database": "x"}
    locators = [{"record_id": f"r{i}", "kind": "pdf", "page_index": i, "verified": True} for i in range(6)]
    store.build(tmp_path, stamp, locators)
    lookup = store.open(tmp_path, stamp)
    assert isinstance(lookup, SqliteLocatorLookup)
    seen = _statements(lookup._con)
    first = lookup.fetch(["r0", "r1", "missing"])
    assert first == {"r0": locators[0], "r1": locators[1]} and len(seen) == 1
    assert lookup.fetch(["r1", "r0"]) == first and len(seen) == 1
    assert lookup.fetch(["r1", "r5"]) == {"r1": locators[1], "r5": locators[5]} and len(seen) == 2
    bounded = SqliteLocatorLookup(store.path(tmp_path), cached=2)
    assert bounded.fetch([f"r{i}" for i in range(6)]) == {loc["record_id"]: loc for loc in locators}
    assert len(bounded._cached) == 2
    lookup.close()
    bounded.close()


def test_a_hit_text_seen_again_gives_its_reasons_under_its_own_label() -> None:
    table = "Table 3: yields\n1990 12 14\n1991 13 15\n1992 11 16\n1993 10 12"
    math = "x ≤ ∑ y ∫ z √ w ∂ v"
    for text in (table, math, "plain words about a river", "表 3.2 收入"):
        visual_fallback._text_signals.cache_clear()
        plain = visual_fallback._text_signals.__wrapped__(text, 40)
        for index in (0, 7, 2):
            reasons = visual_fallback._text_reasons(index, text, 40)
            assert [r["code"] for r in reasons] == [code for code, _ in plain]
            assert all(r["detail"].startswith(f"hit {index} ") for r in reasons)
    policy = visual_fallback.VisualFallbackPolicy()
    twice = policy.evaluate_hits("yields", [{"text": table}, {"text": table}])  # each hit's own advice
    assert [[r["detail"].split(" ", 2)[1] for r in a["reasons"]] for a in twice] == [["0"], ["1"]]


def test_the_package_root_an_open_book_keeps_follows_a_replaced_registration(tmp_path: Path) -> None:
    """An open book keeps its package root for the check before each search (issue 29). A book
    registered again from another folder (another process's `init --replace`) is read, and
    checked, there: a file of the new package changed is refused, the old folder no longer counts."""
    from book_agent.agent import BookAgent
    from book_agent.domain.errors import BookAgentError
    from tests.support.package_builder import RecordSpec

    first = build_package(tmp_path / "first", book_id="moved-book", kind="epub")
    second = build_package(tmp_path / "second", book_id="moved-book", kind="epub",
                           records=[RecordSpec("s1", "Lanterns of the harbour guide the boats home.", ["Harbour"])])
    data = tmp_path / "data"
    with BookAgent(data_dir=data) as serving, BookAgent(data_dir=data) as other:
        serving.init(first)
        assert serving.search("moved-book", "rivers", top_k=3)["hits"]  # opened: its root kept
        other.init(second, replace=True)
        hits = serving.search("moved-book", "lanterns harbour", top_k=3)["hits"]
        assert [h["record_id"] for h in hits] == ["s1"]  # the new package, not the kept one
        (first / "book.md").write_text("the old folder, changed", encoding="utf-8")
        assert serving.search("moved-book", "lanterns harbour", top_k=3)["hits"]  # not this book's any more
        (second / "book.md").write_text("the new package, changed", encoding="utf-8")
        try:
            serving.search("moved-book", "lanterns harbour", top_k=3)
        except BookAgentError as error:
            assert error.code == "package.changed" and error.details["changed"] == ["book.md"]
        else:
            raise AssertionError("a changed package was searched")
