"""The parts of SourceResolver a reader navigates by: the table of contents, the records
around a record, and page renders with passages highlighted (kept apart from resolver.py)."""

from __future__ import annotations

from typing import Any, cast

from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_DPI, MAX_AROUND
from book_agent.domain.sources.contents import Neighbours, TableOfContents
from book_agent.domain.sources.source_results import PageImage
from book_agent_adapters.sources.pdf.highlight import render_highlights
from book_agent_adapters.sources.toc import table_of_contents


class ContentsAndHighlights:
    book_id: str | None
    records: Any

    def table_of_contents(self) -> TableOfContents:
        """The PDF outline or EPUB navigation (`source: "none"` when the book has neither)."""
        return cast(TableOfContents, table_of_contents(self))

    def records_around(self, record_id: str, around: int) -> Neighbours:
        """The record and up to `around` records before and after it, in reading order."""
        if isinstance(around, bool) or not isinstance(around, int) or not 0 <= around <= MAX_AROUND:
            raise BookAgentError("source.around_invalid", f"around must be an integer in 0..{MAX_AROUND}, not {around!r}",
                                 details={"around": around}, remediation="e.g. --around 2 (records on each side)")
        self.records.get(record_id)  # source.record_not_found for an unknown id
        rows = self.records.all()
        at = next(i for i, row in enumerate(rows) if row["record_id"] == record_id)
        lo, hi = max(0, at - around), min(len(rows), at + around + 1)
        picked = [{"record_id": row["record_id"], "offset": i - at, "text": row["text"],
                   "source_locator": {"book_id": self.book_id, **(row.get("source") or {})}}
                  for i, row in enumerate(rows[lo:hi], start=lo)]
        return cast(Neighbours, {"book_id": self.book_id, "record_id": record_id, "around": around,
                                 "position": at, "record_count": len(rows), "records": picked,
                                 "before": at - lo, "after": hi - at - 1})

    def render_highlights(self, targets: Any, page_index: Any = None, clip: Any = None, dpi: Any = DEFAULT_DPI,
                          include_image: bool = False, *, page_label: Any = None) -> PageImage:
        """The page with passages (record ids as {"record_id"} or quotations) highlighted."""
        return cast(PageImage, render_highlights(self, targets, page_index, page_label, clip=clip, dpi=dpi,
                                                 include_image=include_image))
