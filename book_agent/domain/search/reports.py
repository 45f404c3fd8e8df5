"""A search's answer as typed values, built once and rendered once (issue 47).

The hybrid search builds a `SearchReport` of `HitReport`s; the library adds each hit's book
(`HitReport.in_book`) and its own blocks (`SearchReport.for_library`), the book search the
page-image advice (`SearchReport.advised`): each by constructing a new value, never by editing
a dict another step made. `render_search` turns the report into the JSON the contract fixes
(contracts/search.md, contracts/cli-json.md; `SearchResult`), keys in the order they always had.

NamedTuples: immutable and typed as frozen dataclasses are, but a hit is built in ~0.5 us
against a frozen dataclass's ~3 (its __init__ sets each field through object.__setattr__), and
the classes are defined at import in a fraction of a dataclass's time (a cold search imports
them; fusion.py's note). Pydantic validation of every hit would cost more than the fusion.
The blocks inside (channel infos, the query's representation, locators) stay the TypedDicts
the contract names: plain data no step edits once the report holds them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from book_agent.domain.records import MarkdownSpan
from book_agent.domain.search.search_results import (
    ChannelInfo,
    FusionInfo,
    Hints,
    HitScores,
    LibraryBookRow,
    LibraryInfo,
    QueryRepresentation,
    RerankBlock,
    RerankInfo,
    SearchHit,
    SearchResult,
)
from book_agent.domain.search.visual_fallback import VisualFallback
from book_agent.domain.sources.source_results import Locator


class HitReport(NamedTuple):
    """One hit: its record, where it is in the original, and how each channel scored it."""

    record_id: str  # the id the search ranked it by (a library's: the evidence id, until `in_book`)
    book_id: str  # the book (or, until `in_book`, the library reference) it was searched in
    text: str
    headings: tuple[str, ...]
    locator: Locator  # verified, else the record's claim (marked unchecked)
    markdown_span: MarkdownSpan | None
    lexical: float | None  # the channel's score; None when it did not find the hit
    vector: float | None
    fused: float
    channel_ranks: Mapping[str, int]  # channel -> 1-based rank there
    rerank_score: float | None = None  # an applied rerank's raw score (None: not scored)
    rerank: RerankBlock | None = None  # an applied rerank's metadata
    library: bool = False  # a library search names each hit's book

    @property
    def evidence_id(self) -> str:
        return f"{self.book_id}#{self.record_id}"  # stable and citable (records.evidence_id)

    def in_book(self) -> HitReport:
        """A library's hit (ranked by evidence id `book#record`) as its book's own hit."""
        book_id, _, record_id = self.record_id.partition("#")
        locator: Locator = {**self.locator, "book_id": book_id, "record_id": record_id}
        return HitReport(record_id, book_id, self.text, self.headings, locator, self.markdown_span, self.lexical,
                         self.vector, self.fused, self.channel_ranks, self.rerank_score, self.rerank, library=True)


class LibraryReport(NamedTuple):
    """What a library search adds: the books it names and its indexes' state."""

    books: Sequence[LibraryBookRow]
    library: LibraryInfo
    warnings: Sequence[str]


class SearchReport(NamedTuple):
    """A search's answer (contracts/search.md), its hits best first (a hit's rank is its place)."""

    book_id: str  # the book, or the library reference searched
    query: str
    top_k: int
    hits: tuple[HitReport, ...]
    channels: Mapping[str, ChannelInfo]  # lexical, vector
    query_representation: QueryRepresentation
    fusion: FusionInfo
    rerank: RerankInfo
    hints: Hints
    warnings: tuple[str, ...]
    elapsed_ms: float
    library: LibraryReport | None = None
    visual_fallback: VisualFallback | None = None  # the result's page-image advice
    hit_advice: tuple[VisualFallback, ...] | None = None  # each hit's own, in the hits' order

    def for_library(self, added: LibraryReport) -> SearchReport:
        """The report of a library search: each hit its book's, the library's blocks and warnings added."""
        return self._replace(hits=tuple(hit.in_book() for hit in self.hits), library=added,
                             warnings=self.warnings + tuple(added.warnings))

    def advised(self, per_hit: Sequence[VisualFallback], summary: VisualFallback) -> SearchReport:
        """The report with each hit's page-image advice and the result's summary."""
        if len(per_hit) != len(self.hits):
            raise ValueError(f"{len(per_hit)} advices for {len(self.hits)} hits")
        return self._replace(visual_fallback=summary, hit_advice=tuple(per_hit))


def render_hit(hit: HitReport, rank: int = 0, advice: VisualFallback | None = None) -> SearchHit:
    """A hit as the contract's JSON object, at its 1-based rank (0: a reranker's candidate, not
    ranked yet: the rerank port takes these), with its page-image advice if judged."""
    scores: HitScores = {"lexical": hit.lexical, "vector": hit.vector, "fused": hit.fused}
    if hit.rerank_score is not None:
        scores["rerank"] = hit.rerank_score
    out: SearchHit = {
        "rank": rank,
        "evidence_id": hit.evidence_id,
        "record_id": hit.record_id,
        "text": hit.text,
        "headings": list(hit.headings),
        # copies: a caller may edit the JSON it is given, and a locator may be a cache's own
        "source_locator": hit.locator.copy(),
        "markdown_span": hit.markdown_span.copy() if hit.markdown_span is not None else None,
        "scores": scores,
        "channel_ranks": dict(hit.channel_ranks),
        "channels": sorted(hit.channel_ranks),
    }
    if hit.rerank is not None:
        out["rerank"] = hit.rerank.copy()
    if hit.library:
        out["book_id"] = hit.book_id
    if advice is not None:
        out["visual_fallback"] = advice
    return out


def render_hits(report: SearchReport) -> list[SearchHit]:
    """The report's hits as the contract's JSON objects, ranked by their places (with their advice if judged)."""
    advice = report.hit_advice or (None,) * len(report.hits)
    return [render_hit(hit, rank, one) for rank, hit, one in zip(
        range(1, len(report.hits) + 1), report.hits, advice, strict=True)]


def render_search(report: SearchReport, hits: Sequence[SearchHit] | None = None) -> SearchResult:
    """The report as the contract's JSON object, keys in the contract's order. `hits`: its hits
    as `render_hits` rendered them before the advice was judged on them (not rendered twice)."""
    if hits is None:
        shown = render_hits(report)
    elif len(hits) != len(report.hits):
        raise ValueError(f"{len(hits)} rendered hits for a report of {len(report.hits)}")
    else:
        advice = report.hit_advice or ()
        shown = [{**hit, "visual_fallback": one} for hit, one in zip(hits, advice, strict=True)] if advice else list(hits)
    out: SearchResult = {
        "book_id": report.book_id, "query": report.query, "top_k": report.top_k, "hits": shown,
        "channels": dict(report.channels), "query_representation": report.query_representation,
        "fusion": report.fusion, "rerank": report.rerank, "hints": dict(report.hints),
        "warnings": list(report.warnings), "elapsed_ms": report.elapsed_ms,
    }
    if report.library is not None:
        out["books"] = list(report.library.books)
        out["library"] = report.library.library
    if report.visual_fallback is not None:
        out["visual_fallback"] = report.visual_fallback
    return out

