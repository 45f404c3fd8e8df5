"""The search's typed report (book_agent/domain/search/reports.py): built once, added to by
construction, rendered once to the contract's JSON (contracts/search.md)."""

from __future__ import annotations

import pytest

from book_agent.domain.records import Record
from book_agent.domain.search.reports import (
    HitReport,
    LibraryReport,
    SearchReport,
    render_hit,
    render_hits,
    render_search,
)
from book_agent.domain.search.visual_fallback import VisualFallback

HIT_KEYS = ["rank", "evidence_id", "record_id", "text", "headings", "source_locator", "markdown_span", "scores",
            "channel_ranks", "channels"]
RESULT_KEYS = ["book_id", "query", "top_k", "hits", "channels", "query_representation", "fusion", "rerank", "hints",
               "warnings", "elapsed_ms"]


def hit(record_id: str = "b1#r7", book_id: str = "@all", **changes: object) -> HitReport:
    made = HitReport(record_id=record_id, book_id=book_id, text="Water shapes its course.", headings=("Ch 1", "Terrain"),
                     locator={"book_id": book_id, "kind": "pdf", "record_id": record_id, "page_index": 3,
                              "verification": {"status": "verified", "method": "pdf-text"}},
                     markdown_span={"start": 10, "end": 34}, lexical=2.5, vector=None, fused=0.75,
                     channel_ranks={"vector": 4, "lexical": 1})
    return made._replace(**changes)  # type: ignore[arg-type]


def report(*hits: HitReport, **changes: object) -> SearchReport:
    made = SearchReport(book_id="@all", query="water", top_k=5, hits=hits,
                        channels={"lexical": {"ran": True, "status": "ok", "weight": 0.5}},
                        query_representation={"kind": "text", "status": "not-encoded"},
                        fusion={"method": "m", "vector_share": 0.5, "agreement_share": 0.1, "weights": {}},
                        rerank={"rerank_requested": False, "rerank_applied": False}, hints={"visual": True},
                        warnings=("from the channels",), elapsed_ms=1.5)
    return made._replace(**changes)  # type: ignore[arg-type]


ADVICE: VisualFallback = {"recommended": True, "reasons": [{"code": "figure", "detail": "x"}], "action": "render_page"}


def test_a_hits_rank_is_its_place_in_the_report():
    out = render_search(report(hit(record_id="b1#r1"), hit(record_id="b1#r2"), hit(record_id="b2#r1")))
    assert [(h["rank"], h["record_id"]) for h in out["hits"]] == [(1, "b1#r1"), (2, "b1#r2"), (3, "b2#r1")]


def test_a_hit_renders_in_the_contracts_key_order_with_its_channels_sorted():
    out = render_hit(hit(), rank=2)
    assert list(out) == HIT_KEYS
    assert out["evidence_id"] == "@all#b1#r7" and out["channels"] == ["lexical", "vector"]
    assert out["scores"] == {"lexical": 2.5, "vector": None, "fused": 0.75}  # no rerank score: no key
    assert out["headings"] == ["Ch 1", "Terrain"] and out["rank"] == 2


def test_what_a_rerank_a_library_and_advice_add_comes_after_in_that_order():
    reranked = hit(rerank_score=3.0, rerank={"provider": "p", "original_rank": 0, "reranked": True})
    added = report(reranked).for_library(LibraryReport([], {"backend": "local", "books_searched": 0,  # type: ignore[typeddict-item]
                                                            "generation": None, "lexical_index": {}, "model_groups": []},
                                                       ["a book was skipped"]))
    advised = added.advised([ADVICE], {"recommended": True, "hits_needing_page": [0]})
    out = render_search(advised)
    assert list(out) == [*RESULT_KEYS, "books", "library", "visual_fallback"]
    assert list(out["hits"][0]) == [*HIT_KEYS, "rerank", "book_id", "visual_fallback"]
    assert list(out["hits"][0]["scores"]) == ["lexical", "vector", "fused", "rerank"]
    assert out["warnings"] == ["from the channels", "a book was skipped"]
    assert list(render_search(report(hit()))) == RESULT_KEYS  # one book, no advice: nothing added


def test_a_library_hit_becomes_its_books_own_and_the_searched_report_is_untouched():
    searched = report(hit())
    library = searched.for_library(LibraryReport([], {}, []))  # type: ignore[arg-type]
    (own,) = library.hits
    assert (own.book_id, own.record_id, own.evidence_id) == ("b1", "r7", "b1#r7")
    assert own.locator["book_id"] == "b1" and own.locator["record_id"] == "r7"
    assert list(own.locator) == list(searched.hits[0].locator)  # the keys keep their places
    assert render_hit(own)["book_id"] == "b1"
    assert searched.hits[0].record_id == "b1#r7" and searched.hits[0].locator["book_id"] == "@all"


@pytest.mark.parametrize("record_id", ["b1#r#7", "book-with-dash#0001", "#r7"])
def test_an_evidence_id_splits_at_its_first_hash_whatever_the_record_id_holds(record_id):
    own = hit(record_id=record_id).in_book()
    assert f"{own.book_id}#{own.record_id}" == record_id == own.evidence_id


def test_editing_the_rendered_json_changes_neither_the_report_nor_the_next_rendering():
    shared_locator = hit().locator  # e.g. a locator lookup's cached answer
    done = report(hit(locator=shared_locator))
    first = render_search(done)
    first["hits"][0]["source_locator"]["page_index"] = 99
    first["hits"][0]["markdown_span"]["start"] = -1  # type: ignore[index]
    first["hits"][0]["channel_ranks"]["lexical"] = 50
    first["warnings"].append("edited")
    assert shared_locator["page_index"] == 3
    assert render_search(done) == render_search(report(hit()))


def test_reports_are_frozen_and_adding_builds_a_new_one():
    one = report(hit())
    with pytest.raises(AttributeError):
        one.hits[0].fused = 5.0  # type: ignore[misc]
    advised = one.advised([ADVICE], {"recommended": True})
    assert one.visual_fallback is None and one.hit_advice is None
    assert render_search(advised)["hits"][0]["visual_fallback"] == ADVICE
    assert "visual_fallback" not in render_search(one)["hits"][0]
    with pytest.raises(ValueError):
        one.advised([], {})  # one advice per hit


def test_hits_rendered_before_the_advice_render_as_the_advised_report_would():
    library = report(hit(record_id="b1#r1", rerank_score=1.0, rerank={"provider": "p"}), hit(record_id="b2#r9"))
    library = library.for_library(LibraryReport([], {}, []))  # type: ignore[arg-type]
    shown = render_hits(library)
    advised = library.advised([ADVICE, {"recommended": False}], {"recommended": True})
    assert render_search(advised, shown) == render_search(advised)
    assert [list(h) for h in render_search(advised, shown)["hits"]] == [list(h) for h in render_search(advised)["hits"]]
    assert "visual_fallback" not in shown[0]  # the rendered hits given are not edited
    with pytest.raises(ValueError):
        render_search(advised, shown[:1])


def _hybrid(reranker: object) -> tuple[object, list[Record]]:
    from book_agent.services.search.hybrid import HybridSearch, SearchChannels
    from book_agent.testing.memory_parts import MemoryRecords, WordOverlapIndex

    records = [Record(f"r{i:02d}", f"river ground water {'river ' * (i % 3)}passage {i}" + " long" * i,
                      {"kind": "pdf", "page_index": i}, seq=i, headings=[f"Ch {i}"]) for i in range(12)]
    channels = SearchChannels(lexical=WordOverlapIndex(records), vector_store=None, query_runtime=None,
                              records=MemoryRecords(records), reranker=reranker)  # type: ignore[arg-type]
    return HybridSearch("bk", channels), records


def test_a_rerank_reorders_the_report_and_adds_only_its_score_and_block():
    from book_agent.testing.fakes import FakeReranker

    scores = {f"r{i:02d}": float(i) for i in range(12)}  # the reranker prefers the later records
    search, _ = _hybrid(FakeReranker(scores))
    plain, _ = _hybrid(None)
    fused = {hit.record_id: hit for hit in plain.search("river ground", top_k=12).hits}  # type: ignore[attr-defined]
    reranked = search.search("river ground", top_k=4)  # type: ignore[attr-defined]
    assert [hit.record_id for hit in reranked.hits] == ["r11", "r10", "r09", "r08"]
    assert reranked.rerank["rerank_applied"] is True
    for hit in reranked.hits:
        assert hit.rerank_score == scores[hit.record_id] and hit.rerank["original_rank"] == 0
        assert hit._replace(rerank_score=None, rerank=None) == fused[hit.record_id]  # nothing else changed
    out = render_search(reranked)
    assert [h["rank"] for h in out["hits"]] == [1, 2, 3, 4]
    assert out["hits"][0]["scores"]["rerank"] == 11.0 and out["hits"][0]["rerank"]["reranked"] is True


def test_a_failed_rerank_keeps_the_fused_order_with_nothing_added():
    from book_agent.domain.errors import BookAgentError
    from book_agent.testing.fakes import FakeReranker

    failing, _ = _hybrid(FakeReranker(fail_with=BookAgentError("rerank.timeout", "too slow")))
    plain, _ = _hybrid(None)
    kept = failing.search("river ground", top_k=3)  # type: ignore[attr-defined]
    assert kept.hits == plain.search("river ground", top_k=3).hits  # type: ignore[attr-defined]
    assert kept.rerank["rerank_requested"] is True and kept.rerank["rerank_applied"] is False
    assert any("rerank" in w for w in kept.warnings)
