"""The library vector index contract (LibraryVectorIndexes and the LibraryVectorIndex it opens)
as a pytest suite. A backend subclasses it:

    from book_agent.testing.library_vectors_contract import LibraryVectorIndexesContract

    class TestMyVectors(LibraryVectorIndexesContract):
        @pytest.fixture
        def make_indexes(self, tmp_path):
            return lambda: MyVectorIndexes(server, prefix=uuid4().hex, min_vectors=1)

`make_indexes` returns a zero-argument callable building fresh, empty indexes.
`make_stores(books)` gives the books' VectorStores by id; by default the first-party store over
a real package database, as a backend meets them in a library. The suite checks states, that
a fresh index is not rebuilt, that scores are exact and best first, recall against exact
search, `book_ids` filters, added and removed books, readers through a rebuild, and the
coded errors (no index, a stale one, a group without vectors, a query of other dimensions);
and the living model: a book added is found by the next generation and a removal filters it
at once, readers name their generation and books, the generation in place serves while
stale (`open(..., in_place=True)`), and adds and removes converge by `compact` on what a
fresh build of the same books gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import numpy as np
import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.ports import VectorStore
from book_agent.ports.library import LibraryVectorIndex, LibraryVectorIndexes
from book_agent.testing.library_books import (
    DIMENSIONS,
    MODEL,
    SampleBook,
    exact_scores,
    sample_library,
    unit_rows,
    vector_manifest,
    write_package_database,
)

StoreFactory = Callable[[Mapping[str, SampleBook]], dict[str, VectorStore]]
RECORDS_PER_BOOK = 150  # enough rows for an IVF index's training


def stamp(book_ids: list[str], version: str = "v1") -> dict[str, str]:
    return {"books": ";".join(f"{b}={version}" for b in sorted(book_ids)), "model": MODEL,
            "dimensions": str(DIMENSIONS), "metric": "cosine"}


class LibraryVectorIndexesContract:
    @pytest.fixture
    def make_indexes(self) -> Callable[[], LibraryVectorIndexes]:
        raise NotImplementedError("override the make_indexes fixture")

    @pytest.fixture
    def make_stores(self, tmp_path: Path) -> StoreFactory:
        from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter

        def stores(books: Mapping[str, SampleBook]) -> dict[str, VectorStore]:
            out: dict[str, VectorStore] = {}
            for book in books.values():
                path = write_package_database(tmp_path / "packages" / book.book_id, book.book_id, book.records,
                                              book.vectors)
                out[book.book_id] = PrebuiltVectorStoreAdapter(path, vector_manifest(book.vectors),
                                                               sidecar_dir=tmp_path / "runtime" / book.book_id,
                                                               book_id=book.book_id)
            return out
        return stores

    @pytest.fixture
    def books(self) -> dict[str, SampleBook]:
        return sample_library(RECORDS_PER_BOOK)

    @pytest.fixture
    def stores(self, make_stores: StoreFactory, books: dict[str, SampleBook]) -> Iterator[dict[str, VectorStore]]:
        stores = make_stores(books)
        yield stores
        for store in stores.values():
            store.close()

    @pytest.fixture
    def built(self, make_indexes: Callable[[], LibraryVectorIndexes],
              stores: dict[str, VectorStore]) -> LibraryVectorIndexes:
        indexes = make_indexes()
        indexes.build(MODEL, DIMENSIONS, stamp(list(stores)), stores, None)
        return indexes

    def _search(self, indexes: LibraryVectorIndexes, stores: Mapping[str, VectorStore], query: np.ndarray,
                depth: int, book_ids: list[str] | None = None) -> list[tuple[str, float]]:
        index = indexes.open(MODEL, DIMENSIONS, stamp(list(stores)), stores)
        try:
            return index.search(query, depth, book_ids)
        finally:
            index.close()

    def test_implements_the_ports(self, built: LibraryVectorIndexes, stores: dict[str, VectorStore]) -> None:
        assert isinstance(built, LibraryVectorIndexes)
        assert isinstance(built.min_vectors, int) and built.min_vectors >= 0
        index = built.open(MODEL, DIMENSIONS, stamp(list(stores)), stores)
        assert isinstance(index, LibraryVectorIndex)
        index.close()

    def test_a_group_never_built_has_no_index(self, make_indexes: Callable[[], LibraryVectorIndexes],
                                              stores: dict[str, VectorStore]) -> None:
        indexes = make_indexes()
        state = indexes.state(MODEL, DIMENSIONS, stamp(list(stores)))
        assert (state.present, state.fresh, state.vectors, state.generation) == (False, False, 0, None)
        with pytest.raises(BookAgentError) as caught:
            indexes.open(MODEL, DIMENSIONS, stamp(list(stores)), stores)
        assert caught.value.code == "vector.index_unreadable"

    def test_a_build_is_fresh_for_its_stamp_only(self, make_indexes: Callable[[], LibraryVectorIndexes],
                                                  stores: dict[str, VectorStore]) -> None:
        indexes = make_indexes()
        assert indexes.build(MODEL, DIMENSIONS, stamp(list(stores)), stores, None) == 3 * RECORDS_PER_BOOK
        state = indexes.state(MODEL, DIMENSIONS, stamp(list(stores)))
        assert state.present and state.fresh and state.vectors == 3 * RECORDS_PER_BOOK and state.generation
        stale = indexes.state(MODEL, DIMENSIONS, stamp(list(stores), "v2"))
        assert stale.present and not stale.fresh and stale.reason
        assert not indexes.state("another/model", DIMENSIONS, stamp(list(stores))).present
        with pytest.raises(BookAgentError) as caught:
            indexes.open(MODEL, DIMENSIONS, stamp(list(stores), "v2"), stores)
        assert caught.value.code == "vector.index_stale"

    def test_a_fresh_index_is_not_rebuilt(self, built: LibraryVectorIndexes, stores: dict[str, VectorStore]) -> None:
        before = built.state(MODEL, DIMENSIONS, stamp(list(stores)))
        assert built.build(MODEL, DIMENSIONS, stamp(list(stores)), stores, None) == before.vectors
        assert built.state(MODEL, DIMENSIONS, stamp(list(stores))).generation == before.generation

    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_scores_are_exact_best_first_and_recall_holds(self, built: LibraryVectorIndexes,
                                                          stores: dict[str, VectorStore],
                                                          books: dict[str, SampleBook], seed: int) -> None:
        query = unit_rows(1, DIMENSIONS, 1000 + seed)[0]
        exact = exact_scores(query, books)
        hits = self._search(built, stores, query, 10)
        assert 0 < len(hits) <= 10 and len({k for k, _ in hits}) == len(hits)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        assert all(abs(score - exact[key]) <= 1e-4 for key, score in hits)
        best = sorted(exact, key=lambda k: -exact[k])[:10]
        assert len(set(best) & {k for k, _ in hits}) >= 9

    def test_a_stored_vector_finds_its_own_record_first(self, built: LibraryVectorIndexes,
                                                        stores: dict[str, VectorStore],
                                                        books: dict[str, SampleBook]) -> None:
        for book in books.values():
            for row in (0, 77, RECORDS_PER_BOOK - 1):
                hits = self._search(built, stores, book.vectors[row], 5)
                assert hits[0][0] == book.evidence_ids()[row] and abs(hits[0][1] - 1.0) <= 1e-4

    def test_book_ids_keep_only_those_books(self, built: LibraryVectorIndexes, stores: dict[str, VectorStore],
                                            books: dict[str, SampleBook]) -> None:
        own = books["b1"].vectors[5]
        narrowed = self._search(built, stores, own, 20, ["b1"])
        assert narrowed[0][0] == "b1#r005" and {k.partition("#")[0] for k, _ in narrowed} == {"b1"}
        others = self._search(built, stores, own, 20, ["b0", "b2"])
        assert others and {k.partition("#")[0] for k, _ in others} <= {"b0", "b2"}

    def test_a_rebuild_drops_removed_books_and_finds_added_ones(
            self, built: LibraryVectorIndexes, stores: dict[str, VectorStore], books: dict[str, SampleBook]) -> None:
        before = built.state(MODEL, DIMENSIONS, stamp(list(stores))).generation
        kept = {b: stores[b] for b in ("b1", "b2")}
        assert built.build(MODEL, DIMENSIONS, stamp(list(kept)), kept, None) == 2 * RECORDS_PER_BOOK
        assert built.state(MODEL, DIMENSIONS, stamp(list(kept))).generation != before
        assert not built.state(MODEL, DIMENSIONS, stamp(list(stores))).fresh
        assert all(not k.startswith("b0#") for k, _ in self._search(built, kept, books["b0"].vectors[3], 30))
        assert self._search(built, kept, books["b2"].vectors[3], 1)[0][0] == "b2#r003"

    def test_a_reader_keeps_answering_through_a_rebuild(self, built: LibraryVectorIndexes,
                                                        stores: dict[str, VectorStore],
                                                        books: dict[str, SampleBook]) -> None:
        index = built.open(MODEL, DIMENSIONS, stamp(list(stores)), stores)
        try:
            before = index.search(books["b0"].vectors[9], 10)
            kept = {"b2": stores["b2"]}
            built.build(MODEL, DIMENSIONS, stamp(list(kept)), kept, None)
            assert index.search(books["b0"].vectors[9], 10) == before
        finally:
            index.close()

    def test_a_group_without_vectors_is_a_coded_failure_and_the_index_stays(
            self, built: LibraryVectorIndexes, stores: dict[str, VectorStore]) -> None:
        with pytest.raises(BookAgentError) as caught:
            built.build(MODEL, DIMENSIONS, stamp([]), {}, None)
        assert caught.value.code == "vector.index_build_failed" and caught.value.remediation
        assert built.state(MODEL, DIMENSIONS, stamp(list(stores))).fresh

    @pytest.mark.parametrize("dims", [DIMENSIONS - 1, DIMENSIONS + 3])
    def test_a_query_of_other_dimensions_is_refused(self, built: LibraryVectorIndexes,
                                                    stores: dict[str, VectorStore], dims: int) -> None:
        with pytest.raises(BookAgentError) as caught:
            self._search(built, stores, unit_rows(1, dims, 5)[0], 5)
        assert caught.value.code == "query.vector_invalid"

    def test_a_book_added_is_found_and_a_removal_filters_at_once(
            self, make_indexes: Callable[[], LibraryVectorIndexes], stores: dict[str, VectorStore],
            books: dict[str, SampleBook]) -> None:
        indexes = make_indexes()
        two = {b: stores[b] for b in ("b0", "b1")}
        indexes.build(MODEL, DIMENSIONS, stamp(list(two)), two, None)
        first = indexes.state(MODEL, DIMENSIONS, stamp(list(two))).generation
        assert indexes.build(MODEL, DIMENSIONS, stamp(list(stores)), stores, None) == 3 * RECORDS_PER_BOOK
        added = indexes.state(MODEL, DIMENSIONS, stamp(list(stores)))
        assert added.fresh and added.generation not in (None, first)
        for row in (0, 77, RECORDS_PER_BOOK - 1):
            hits = self._search(indexes, stores, books["b2"].vectors[row], 5)
            assert hits[0][0] == books["b2"].evidence_ids()[row] and abs(hits[0][1] - 1.0) <= 1e-4
        kept = {b: stores[b] for b in ("b0", "b2")}
        assert indexes.build(MODEL, DIMENSIONS, stamp(list(kept)), kept, None) == 2 * RECORDS_PER_BOOK
        assert indexes.state(MODEL, DIMENSIONS, stamp(list(kept))).generation not in (first, added.generation)
        everything = self._search(indexes, kept, books["b1"].vectors[3], 3 * RECORDS_PER_BOOK)
        assert everything and all(not k.startswith("b1#") for k, _ in everything)
        assert self._search(indexes, kept, books["b2"].vectors[3], 1)[0][0] == "b2#r003"

    def test_a_reader_names_its_generation_and_books(self, built: LibraryVectorIndexes,
                                                     stores: dict[str, VectorStore]) -> None:
        index = built.open(MODEL, DIMENSIONS, stamp(list(stores)), stores)
        try:
            assert index.generation == built.state(MODEL, DIMENSIONS, stamp(list(stores))).generation
            assert dict(index.books) == {b: "v1" for b in stores}
        finally:
            index.close()

    def test_the_generation_in_place_serves_the_books_it_holds_while_stale(
            self, make_indexes: Callable[[], LibraryVectorIndexes], stores: dict[str, VectorStore],
            books: dict[str, SampleBook]) -> None:
        indexes = make_indexes()
        two = {b: stores[b] for b in ("b0", "b1")}
        indexes.build(MODEL, DIMENSIONS, stamp(list(two)), two, None)
        state = indexes.state(MODEL, DIMENSIONS, stamp(list(stores)))
        assert state.present and state.intact and not state.fresh
        with pytest.raises(BookAgentError) as caught:
            indexes.open(MODEL, DIMENSIONS, stamp(list(stores)), stores)
        assert caught.value.code == "vector.index_stale"
        index = indexes.open(MODEL, DIMENSIONS, stamp(list(stores)), stores, in_place=True)
        try:
            assert dict(index.books) == {"b0": "v1", "b1": "v1"} and index.generation == state.generation
            hits = index.search(books["b1"].vectors[4], 5, ["b0", "b1"])
            assert hits[0][0] == "b1#r004" and {k.partition("#")[0] for k, _ in hits} <= {"b0", "b1"}
        finally:
            index.close()

    def test_adds_and_removes_converge_on_a_fresh_build_by_compaction(
            self, make_indexes: Callable[[], LibraryVectorIndexes], stores: dict[str, VectorStore]) -> None:
        living = make_indexes()
        ids = sorted(stores)
        for upto in range(1, len(ids) + 1):
            some = {b: stores[b] for b in ids[:upto]}
            living.build(MODEL, DIMENSIONS, stamp(list(some)), some, None)
            assert living.state(MODEL, DIMENSIONS, stamp(list(some))).fresh
        kept = {b: stores[b] for b in ("b0", "b2")}
        living.build(MODEL, DIMENSIONS, stamp(list(kept)), kept, None)
        before = living.state(MODEL, DIMENSIONS, stamp(list(kept))).generation
        assert living.compact(MODEL, DIMENSIONS, stamp(list(kept)), kept, None) == 2 * RECORDS_PER_BOOK
        state = living.state(MODEL, DIMENSIONS, stamp(list(kept)))
        assert state.fresh and state.drift == 0 and state.generation != before
        fresh = make_indexes()
        fresh.build(MODEL, DIMENSIONS, stamp(list(kept)), kept, None)
        for seed in range(5):
            query = unit_rows(1, DIMENSIONS, 2000 + seed)[0]
            got, want = self._search(living, kept, query, 20), self._search(fresh, kept, query, 20)
            assert [k for k, _ in got] == [k for k, _ in want]
            assert all(abs(a - b) <= 1e-6 for (_, a), (_, b) in zip(got, want, strict=True))
