"""The tools' parameters, typed once: one-book and library tools share them (and so their
JSON schemas). Bounds are the core's own (domain/limits.py)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from book_agent.domain.limits import DPI_RANGE, MAX_AROUND, MAX_CHARS_LIMIT, MAX_TOP_K

Query = Annotated[str, Field(min_length=1, max_length=4000, description="The question or keywords, any language.")]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K, description="How many hits to return.")]
Strict = Annotated[bool, Field(description="Fail instead of degrading when a channel is unavailable.")]
QueryVector = Annotated[list[float] | None,
                        Field(description="A ready embedding made with this book's model (rarely needed).")]
Hints = Annotated[
    dict[str, Any] | None,
    Field(description="Optional hints, e.g. {\"page_index\": 12}, {\"href\": \"text/ch03.xhtml\"}, {\"visual\": true}."),
]
RecordId = Annotated[str, Field(min_length=1, max_length=512, description="A record_id from a search hit.")]
MarkdownRecordId = Annotated[str | None, Field(description="Read around this record.")]
Start = Annotated[int | None, Field(ge=0, description="Start character offset in book.md.")]
End = Annotated[int | None, Field(ge=0, description="End character offset (exclusive).")]
Heading = Annotated[str | None, Field(min_length=1, description="Read the section with this heading.")]
ContextChars = Annotated[int, Field(ge=0, le=20000, description="Context on each side of a record.")]
Hit = Annotated[dict[str, Any] | None, Field(description="A hit object from search, passed unchanged.")]
LocateRecordId = Annotated[str | None, Field(min_length=1, description="A record_id to locate.")]
Quote = Annotated[str | None, Field(min_length=1, max_length=20000, description="A literal passage to find.")]
Locator = Annotated[dict[str, Any], Field(description="A locator from locate_source (or a hit's source_locator).")]
MaxChars = Annotated[int, Field(ge=1, le=MAX_CHARS_LIMIT, description="Most characters to return.")]
PageIndex = Annotated[int | None, Field(ge=0, description="0-based PDF page index (a locator's page_index).")]
PageLabel = Annotated[str | None, Field(min_length=1, max_length=64,
                                        description="The page by its printed label (a locator's page_label, e.g. "
                                                    "\"55\" or \"iv\"), instead of page_index.")]
Clip = Annotated[list[float] | None,
                 Field(min_length=4, max_length=4, description="[x0, y0, x1, y1] in PDF points, origin bottom-left.")]
Dpi = Annotated[int, Field(ge=DPI_RANGE[0], le=DPI_RANGE[1], description="Resolution of the render.")]
IncludeImage = Annotated[bool, Field(description="Also return the PNG as image content.")]
BookId = Annotated[str, Field(min_length=1, max_length=512,
                              description="The book to read: a book_id from list_books or from a hit's book_id.")]
Books = Annotated[list[str] | None, Field(min_length=1, max_length=1000,
                                          description="Search only these books (book_ids from list_books).")]
HighlightRecords = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=512)]] | None,
    Field(min_length=1, max_length=20,
          description="Highlight these records' passages (record_ids from search hits); the page defaults to the first's."),
]
HighlightQuotes = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=20000)]] | None,
    Field(min_length=1, max_length=20, description="Highlight these literal passages (as locate_source finds them)."),
]
AroundRecordId = Annotated[str, Field(min_length=1, max_length=512, description="The record to read around.")]
Around = Annotated[int, Field(ge=0, le=MAX_AROUND, description="Records to return on each side.")]
