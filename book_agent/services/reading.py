"""Reading use cases: a record, the Markdown rendition, the skill, and the original book
(locate a passage, read it back, render a page). Each goes through the book's ports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from book_agent.domain.limits import DEFAULT_AROUND
from book_agent.domain.sources.contents import Neighbours, TableOfContents
from book_agent.domain.sources.source_results import (
    Locator,
    MarkdownSlice,
    PageImage,
    RecordEntry,
    Skill,
    SourceText,
)
from book_agent.services.books import OpenBooks
from book_agent.services.context import Ports


class Reading:
    def __init__(self, ports: Ports, books: OpenBooks) -> None:
        self._ports = ports
        self._books = books

    def read_entry(self, book_ref: str, record_id: str) -> RecordEntry:
        book = self._books.open(book_ref)
        record = book.records.get(record_id)
        verified = book.locators.fetch([record.record_id]).get(record.record_id)
        claim = verified or cast(Locator, {"book_id": book.book_id, **record.source})  # unchecked: no original
        return {**record.to_dict(), "book_id": book.book_id, "evidence_id": f"{book.book_id}#{record.record_id}",
                "source_locator": dict(claim)}  # type: ignore[typeddict-item]

    def read_markdown(self, book_ref: str, record_id: str | None = None, start: int | None = None,
                      end: int | None = None, heading: str | None = None, context_chars: int = 500) -> MarkdownSlice:
        book = self._books.open(book_ref)
        span = None
        if record_id is not None:
            record = book.records.get(record_id)
            span = (record.md_start, record.md_end)
        return self._ports.markdown.read_markdown(
            book.package, record_span=span, record_id=record_id, start=start, end=end, heading=heading,
            context_chars=context_chars)

    def get_skill(self, book_ref: str) -> Skill:
        return self._ports.markdown.read_skill(self._books.open(book_ref).package)

    def locate_source(self, book_ref: str, hit_or_text: str | Mapping[str, object],
                      hints: Mapping[str, object] | None = None) -> Locator:
        """A hit, a record id, an evidence_id or a quotation -> a verified locator."""
        book = self._books.open(book_ref)
        if isinstance(hit_or_text, str) and hit_or_text.startswith(book.book_id + "#"):
            hit_or_text = hit_or_text.split("#", 1)[1]
        if isinstance(hit_or_text, str):
            found = book.records.fetch([hit_or_text]).get(hit_or_text)
            if found is not None:  # a record id, else a quotation
                hit_or_text = found.to_dict()
        return book.sources.locate(hit_or_text, hints=hints)

    def read_source(self, book_ref: str, locator: Mapping[str, object], max_chars: int = 12000) -> SourceText:
        return self._books.open(book_ref).sources.read_source(locator, max_chars=max_chars)

    def render_page(self, book_ref: str, page_index: int | None = None, clip: Sequence[float] | None = None,
                    dpi: int = 150, include_image: bool = False, page_label: str | None = None,
                    record_ids: Sequence[str] | None = None, quotes: Sequence[str] | None = None) -> PageImage:
        """A page; with record_ids/quotes, that page (else the first passage's) with them highlighted."""
        sources = self._books.open(book_ref).sources
        targets: list[str | Mapping[str, object]] = [{"record_id": r} for r in record_ids or []]
        targets += list(quotes or [])
        if targets:
            return sources.render_highlights(targets, page_index, clip=clip, dpi=dpi, include_image=include_image,
                                             page_label=page_label)
        return sources.render_page(page_index, clip=clip, dpi=dpi, include_image=include_image, page_label=page_label)

    def get_toc(self, book_ref: str) -> TableOfContents:
        return self._books.open(book_ref).sources.table_of_contents()

    def read_around(self, book_ref: str, record_id: str, around: int = DEFAULT_AROUND) -> Neighbours:
        """The records before and after one, in reading order, each with its verified locator."""
        book = self._books.open(book_ref)
        found = book.sources.records_around(record_id, around)
        verified = book.locators.fetch([n["record_id"] for n in found["records"]])
        for neighbour in found["records"]:
            neighbour["evidence_id"] = f"{book.book_id}#{neighbour['record_id']}"
            if neighbour["record_id"] in verified:
                neighbour["source_locator"] = dict(verified[neighbour["record_id"]])
        return found
