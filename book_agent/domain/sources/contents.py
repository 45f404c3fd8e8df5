"""Result shapes of navigating a book: its table of contents and a record's neighbours."""


from typing import Any, Required, TypedDict


class TocEntry(TypedDict, total=False):
    level: Required[int]  # 1 for top-level entries
    title: Required[str]
    target: Required[str]  # "page" | "chapter" | "none" (the entry points nowhere)
    page_index: int | None  # PDF
    page_label: str | None
    href: str | None  # EPUB, relative to the OPF
    spine_index: int | None
    fragment: str | None
    first_record_id: str | None  # the first record at or after the entry, by the records' claims


class TableOfContents(TypedDict, total=False):
    book_id: Required[str]
    kind: Required[str]
    source: Required[str]  # "pdf-outline" | "epub-nav" | "epub-ncx" | "none"
    entries: Required[list[TocEntry]]
    entry_count: int
    note: str


class Neighbour(TypedDict, total=False):
    record_id: Required[str]
    offset: Required[int]  # -2, -1, 0 (the record asked for), 1, ...
    text: str
    evidence_id: str
    source_locator: dict[str, Any]


class Neighbours(TypedDict, total=False):
    book_id: Required[str]
    record_id: Required[str]
    around: int
    position: int  # the record's 0-based place in reading order
    record_count: int
    before: int
    after: int
    records: Required[list[Neighbour]]
