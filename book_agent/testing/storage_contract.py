"""Contract suites for one book's index ports, VectorStore and LexicalIndex. An adapter
subclasses a suite and overrides its factory fixture:

    class TestMyStore(VectorStoreContract):
        @pytest.fixture
        def make_store(self, tmp_path):
            return lambda records, matrix: MyStore(...)      # the rows in record order, cosine

    class TestMyLexical(LexicalIndexContract):
        @pytest.fixture
        def make_lexical(self, tmp_path):
            return lambda records: MyLexicalIndex(...)

VectorStore: exact scores best first, top_k, search_ids agreeing with search, records by id
and in order, coded errors (unknown record, a query of other dimensions). LexicalIndex: best
first, top_k, a word one record holds finds it first, more of the query's words rank higher,
and any query text is safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import Record
from book_agent.ports import LexicalIndex, VectorStore
from book_agent.testing.library_books import DIMENSIONS, MARKERS, sample_library, unit_rows

ODD_QUERIES = ["", "   ", '"', "AND", "NEAR(x y", "*", "-minus", "col:umn", "兵法", "x" * 2000, "\u0000\U0001f600"]


class VectorStoreContract:
    @pytest.fixture
    def make_store(self) -> Callable[[list[Record], Any], VectorStore]:
        raise NotImplementedError("override the make_store fixture")

    @pytest.fixture
    def book(self) -> Any:
        return sample_library(60)["b0"]

    @pytest.fixture
    def store(self, make_store: Callable[[list[Record], Any], VectorStore], book: Any) -> Iterator[VectorStore]:
        store = make_store(book.records, book.vectors)
        yield store
        store.close()

    def test_implements_the_port(self, store: VectorStore) -> None:
        assert isinstance(store, VectorStore)

    @pytest.mark.parametrize("seed", [1, 2])
    def test_exact_scores_best_first(self, store: VectorStore, book: Any, seed: int) -> None:
        query = unit_rows(1, DIMENSIONS, 500 + seed)[0]
        exact = book.vectors @ query
        expected = [book.records[i].record_id for i in np.argsort(-exact)[:7]]
        hits = store.search(query, 7)
        assert [h.record.record_id for h in hits] == expected
        assert all(abs(h.score - float(exact[int(h.record.record_id[1:])])) <= 1e-5 for h in hits)
        assert all(h.record.text for h in hits)

    def test_search_ids_agree_with_search(self, store: VectorStore, book: Any) -> None:
        query = book.vectors[11] + book.vectors[12]
        assert store.search_ids(query, 9) == [(h.record.record_id, h.score) for h in store.search(query, 9)]
        assert store.search_ids(book.vectors[11], 1)[0][0] == book.records[11].record_id

    def test_top_k_bounds_the_hits(self, store: VectorStore, book: Any) -> None:
        query = book.vectors[0]
        assert len(store.search(query, 1)) == 1
        assert len(store.search_ids(query, 10_000)) == len(book.records)
        assert store.search_ids(query, 0) == []

    @pytest.mark.parametrize("dims", [DIMENSIONS - 1, DIMENSIONS + 1])
    def test_a_query_of_other_dimensions_is_refused(self, store: VectorStore, dims: int) -> None:
        with pytest.raises(BookAgentError) as caught:
            store.search_ids(unit_rows(1, dims, 3)[0], 5)
        assert caught.value.code == "query.vector_invalid"

    def test_records_by_id_and_in_order(self, store: VectorStore, book: Any) -> None:
        assert store.get_record("r003").text == book.records[3].text
        assert [r.record_id for r in store.iter_records()] == [r.record_id for r in book.records]
        with pytest.raises(BookAgentError) as caught:
            store.get_record("no-such-record")
        assert caught.value.code == "record.not_found"

    def test_load_is_a_warm_up_that_changes_no_result(self, store: VectorStore, book: Any) -> None:
        before = store.search_ids(book.vectors[4], 5)
        store.load()
        assert store.search_ids(book.vectors[4], 5) == before


def lexical_records() -> list[Record]:
    """A sample book, plus records of equal length holding two, one and none of two rare words."""
    records = list(sample_library(40)["b0"].records)
    extra = ["ember lantern road city wall", "ember road city wall plain", "road city wall plain bridge"]
    return records + [Record(f"x{i}", text, seq=len(records) + i) for i, text in enumerate(extra)]


class LexicalIndexContract:
    @pytest.fixture
    def make_lexical(self) -> Callable[[Sequence[Record]], LexicalIndex]:
        raise NotImplementedError("override the make_lexical fixture")

    @pytest.fixture
    def records(self) -> list[Record]:
        return lexical_records()

    @pytest.fixture
    def index(self, make_lexical: Callable[[Sequence[Record]], LexicalIndex],
              records: list[Record]) -> Iterator[LexicalIndex]:
        index = make_lexical(records)
        yield index
        index.close()

    def test_implements_the_port(self, index: LexicalIndex) -> None:
        assert isinstance(index, LexicalIndex)

    @pytest.mark.parametrize("query", ["river water", "battle general army", "harvest grain", "wall"])
    def test_hits_are_best_first_within_top_k(self, index: LexicalIndex, records: list[Record], query: str) -> None:
        hits = index.search(query, 8)
        assert hits and len(hits) <= 8 and len({h.record_id for h in hits}) == len(hits)
        assert {h.record_id for h in hits} <= {r.record_id for r in records}
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert len(index.search(query, 1)) == 1

    def test_a_word_one_record_holds_finds_it_first(self, index: LexicalIndex, records: list[Record]) -> None:
        holder = next(r for r in records if MARKERS["b0"] in r.text)
        assert [h.record_id for h in index.search(MARKERS["b0"], 5)] == [holder.record_id]
        assert index.search(f"river {MARKERS['b0']}", 5)[0].record_id == holder.record_id

    def test_more_of_the_querys_rare_words_ranks_higher(self, index: LexicalIndex) -> None:
        hits = [h.record_id for h in index.search("ember lantern", 5)]
        assert hits[:2] == ["x0", "x1"] and "x2" not in hits

    def test_a_word_no_record_holds_finds_nothing(self, index: LexicalIndex) -> None:
        assert index.search("xylophonist", 5) == []

    @pytest.mark.parametrize("query", ODD_QUERIES)
    def test_any_query_text_is_safe(self, index: LexicalIndex, query: str) -> None:
        hits = index.search(query, 5)
        assert isinstance(hits, list) and len(hits) <= 5
        if not query.strip():
            assert hits == []
