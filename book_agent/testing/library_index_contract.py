"""The library lexical index contract (LibraryIndex and the LibraryLexicalIndex it opens) as a
pytest suite. A backend subclasses it:

    from book_agent.testing.library_index_contract import LibraryIndexContract

    class TestMyLibraryIndex(LibraryIndexContract):
        @pytest.fixture
        def make_index(self, tmp_path):
            return lambda: MyLibraryIndex(server, collection=uuid4().hex)   # a fresh, empty index

`make_index` returns a zero-argument callable building a fresh, empty index (two calls: two
indexes). `make_member(book_id, records, stamp)` gives a LibraryMember; by default a real
package database in tmp_path, as a backend meets them. The suite checks states (absent,
fresh, stale), that a build is not repeated when fresh, ranking (best first, BM25 with the
library's statistics: a corpus split into books scores as one book), `book_ids` narrowing
hits and not statistics, added and removed books, readers through a rebuild, odd queries,
and that a failed build is coded and leaves the previous generation serving.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryMember
from book_agent.domain.records import Record
from book_agent.ports.library import LibraryIndex, LibraryLexicalIndex
from book_agent.testing.library_books import (
    MARKERS,
    SampleBook,
    sample_library,
    write_package_database,
)
from book_agent.testing.memory_library import MemoryLibraryBooks

MemberFactory = Callable[[str, Sequence[Record], str], LibraryMember]
QUERIES = ["river water", "battle general army", "harvest grain tax season", "wall", "siege OR wall"]
ODD_QUERIES = ["", "   ", '"', "AND", "NEAR(x y", "*", "-minus", "col:umn", "兵法", "x" * 2000, "\u0000\U0001f600"]


def stamp_of(members: Sequence[LibraryMember]) -> dict[str, str]:
    return {"books": ";".join(f"{m.book_id}={m.stamp}" for m in sorted(members, key=lambda m: m.book_id))}


def search(index: LibraryIndex, query: str, top_k: int, book_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
    reader = index.open()
    try:
        return [(h.record_id, h.score) for h in reader.search(query, top_k, book_ids)]
    finally:
        reader.close()


class LibraryIndexContract:
    @pytest.fixture
    def make_index(self) -> Callable[[], LibraryIndex]:
        raise NotImplementedError("override the make_index fixture")

    @pytest.fixture
    def make_member(self, tmp_path: Path) -> MemberFactory:
        def member(book_id: str, records: Sequence[Record], stamp: str) -> LibraryMember:
            path = write_package_database(tmp_path / "packages" / f"{book_id}-{stamp}", book_id, list(records))
            return LibraryMember(book_id, path, len(records), stamp)
        return member

    @pytest.fixture
    def books(self) -> dict[str, SampleBook]:
        return sample_library()

    @pytest.fixture
    def members(self, make_member: MemberFactory, books: dict[str, SampleBook]) -> list[LibraryMember]:
        return [make_member(b.book_id, b.records, "v1") for b in books.values()]

    @pytest.fixture
    def built(self, make_index: Callable[[], LibraryIndex], members: list[LibraryMember]) -> LibraryIndex:
        index = make_index()
        index.build(members, stamp_of(members), None)
        return index

    def test_implements_the_ports(self, built: LibraryIndex) -> None:
        assert isinstance(built, LibraryIndex)
        reader = built.open()
        assert isinstance(reader, LibraryLexicalIndex)
        reader.close()

    def test_an_index_never_built_is_neither_present_nor_fresh(self, make_index: Callable[[], LibraryIndex]) -> None:
        state = make_index().state({"books": "b0=v1"})
        assert (state.present, state.fresh, state.records, state.generation) == (False, False, 0, None)
        assert state.reason

    def test_a_build_is_fresh_for_its_stamp_only(self, make_index: Callable[[], LibraryIndex],
                                                  members: list[LibraryMember]) -> None:
        index = make_index()
        assert index.build(members, stamp_of(members), None) == sum(m.record_count for m in members)
        state = index.state(stamp_of(members))
        assert state.present and state.fresh and state.reason is None and state.generation
        assert state.records == sum(m.record_count for m in members)
        other = index.state(stamp_of(members[:2]))
        assert other.present and not other.fresh and other.reason

    def test_a_fresh_index_is_not_rebuilt(self, built: LibraryIndex, members: list[LibraryMember]) -> None:
        before = built.state(stamp_of(members))
        assert built.build(members, stamp_of(members), None) == before.records
        assert built.state(stamp_of(members)).generation == before.generation

    @pytest.mark.parametrize("query", QUERIES)
    def test_hits_are_best_first_and_name_their_books(self, built: LibraryIndex, books: dict[str, SampleBook],
                                                      query: str) -> None:
        known = {eid for b in books.values() for eid in b.evidence_ids()}
        hits = search(built, query, 15)
        assert hits and len(hits) <= 15
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        assert len({k for k, _ in hits}) == len(hits) and {k for k, _ in hits} <= known
        assert len(search(built, query, 1)) == 1 and search(built, query, 0) == []

    @pytest.mark.parametrize("book_id", sorted(MARKERS))
    def test_a_word_one_record_holds_finds_that_record_first(self, built: LibraryIndex,
                                                             books: dict[str, SampleBook], book_id: str) -> None:
        marker = MARKERS[book_id]
        holder = next(r for r in books[book_id].records if marker in r.text)
        hits = search(built, f"{marker} river", 5)
        assert hits[0][0] == f"{book_id}#{holder.record_id}"
        assert [k for k, _ in search(built, marker, 5)] == [f"{book_id}#{holder.record_id}"]

    def test_a_corpus_split_into_books_scores_as_one_book(self, make_index: Callable[[], LibraryIndex],
                                                          make_member: MemberFactory, built: LibraryIndex,
                                                          books: dict[str, SampleBook]) -> None:
        whole = [Record(f"{b.book_id}.{r.record_id}", r.text, headings=r.headings) for b in books.values()
                 for r in b.records]
        one = make_index()
        one.build([make_member("whole", whole, "v1")], {"books": "whole=v1"}, None)
        for query in QUERIES:
            split = {k.replace("#", "."): s for k, s in search(built, query, 200)}
            together = {k.removeprefix("whole#"): s for k, s in search(one, query, 200)}
            assert split.keys() == together.keys()
            assert all(abs(split[k] - together[k]) <= 1e-5 * max(1.0, abs(together[k])) for k in split)

    @pytest.mark.parametrize("narrow", [["b1"], ["b0", "b2"], ["nobody"]])
    def test_book_ids_narrow_the_hits_not_the_statistics(self, built: LibraryIndex, narrow: list[str]) -> None:
        for query in QUERIES:
            everything = search(built, query, 500)
            narrowed = search(built, query, 500, narrow)
            assert dict(narrowed) == {k: s for k, s in everything if k.partition("#")[0] in narrow}
            assert [s for _, s in narrowed] == sorted((s for _, s in narrowed), reverse=True)

    def test_a_rebuild_drops_removed_books_and_finds_added_ones(self, built: LibraryIndex, members: list[LibraryMember],
                                                                make_member: MemberFactory,
                                                                books: dict[str, SampleBook]) -> None:
        before = built.state(stamp_of(members)).generation
        renamed = make_member("b3", books["b2"].records, "v1")  # b2's records under a new id
        after = [members[0], members[1], renamed]
        assert built.build(after, stamp_of(after), None) == sum(m.record_count for m in after)
        assert built.state(stamp_of(after)).fresh and not built.state(stamp_of(members)).fresh
        assert built.state(stamp_of(after)).generation != before
        assert [k.partition("#")[0] for k, _ in search(built, MARKERS["b2"], 5)] == ["b3"]
        assert all(not k.startswith("b2#") for k, _ in search(built, "river water", 500))

    def test_a_reader_keeps_answering_through_a_rebuild(self, built: LibraryIndex,
                                                        members: list[LibraryMember]) -> None:
        reader = built.open()
        try:
            before = reader.search("river water", 10)
            built.build(members[:1], stamp_of(members[:1]), None)
            assert reader.search("river water", 10) == before
        finally:
            reader.close()
        assert {k.partition("#")[0] for k, _ in search(built, "river water", 50)} == {"b0"}

    def test_a_failed_build_is_coded_and_the_previous_generation_serves(
            self, built: LibraryIndex, members: list[LibraryMember], tmp_path: Path) -> None:
        before = search(built, "river water", 10)
        ghost = LibraryMember("ghost", tmp_path / "no-such-package" / "index.sqlite", 3, "v1")
        with pytest.raises(BookAgentError) as caught:
            built.build([*members, ghost], stamp_of([*members, ghost]), None)
        assert caught.value.code == "lexical.build_failed" and caught.value.remediation
        assert built.state(stamp_of(members)).fresh
        assert search(built, "river water", 10) == before

    def test_a_reader_names_the_generation_it_serves(self, built: LibraryIndex, members: list[LibraryMember]) -> None:
        reader = built.open()
        try:
            reader.search("river", 3)
            assert reader.generation == built.state(stamp_of(members)).generation
        finally:
            reader.close()

    def test_adds_and_removes_converge_on_the_exact_rebuild_by_compaction(
            self, make_index: Callable[[], LibraryIndex], members: list[LibraryMember]) -> None:
        """Books added one at a time and one removed, then compacted: every score is a fresh
        index's for the same books (and the statistics' drift is 0)."""
        living = make_index()
        for upto in range(1, len(members) + 1):
            living.build(members[:upto], stamp_of(members[:upto]), None)
            assert living.state(stamp_of(members[:upto])).fresh
        kept = [members[0], members[2]]
        living.build(kept, stamp_of(kept), None)
        assert [k for k, _ in search(living, MARKERS["b1"], 5)] == []  # a removal takes effect at once
        before = living.state(stamp_of(kept)).generation
        assert living.compact(kept, stamp_of(kept), None) == sum(m.record_count for m in kept)
        state = living.state(stamp_of(kept))
        assert state.fresh and state.drift == 0 and state.changes == 0 and state.generation != before
        exact = make_index()
        exact.build(kept, stamp_of(kept), None)
        for query in QUERIES:
            got, want = dict(search(living, query, 500)), dict(search(exact, query, 500))
            assert got.keys() == want.keys()
            assert all(abs(got[k] - want[k]) <= 1e-6 * max(1.0, abs(want[k])) for k in got)

    @pytest.mark.parametrize("query", ODD_QUERIES)
    def test_any_query_text_is_safe(self, built: LibraryIndex, query: str) -> None:
        hits = search(built, query, 5)
        assert isinstance(hits, list) and len(hits) <= 5
        if not query.strip():
            assert hits == []

    def test_an_empty_library_finds_nothing(self, make_index: Callable[[], LibraryIndex]) -> None:
        index = make_index()
        assert index.build([], {"books": ""}, None) == 0
        assert index.state({"books": ""}).fresh
        assert search(index, "river", 10) == []

    def test_progress_reaches_the_total(self, make_index: Callable[[], LibraryIndex],
                                        members: list[LibraryMember]) -> None:
        seen: list[tuple[int, int]] = []
        make_index().build(members, stamp_of(members), lambda done, total: seen.append((done, total)))
        total = sum(m.record_count for m in members)
        assert seen and seen[-1] == (total, total)
        assert all(0 <= done <= t for done, t in seen)


class InMemoryMembers:
    """Mix in before a library contract to give it members held in memory (no package files):
    `memory_books` is the `MemoryLibraryBooks` the index under test reads them from."""

    @pytest.fixture
    def memory_books(self) -> MemoryLibraryBooks:
        return MemoryLibraryBooks()

    @pytest.fixture
    def make_member(self, memory_books: MemoryLibraryBooks) -> MemberFactory:
        return memory_books.member
