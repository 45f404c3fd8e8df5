"""What reading a book returns (contracts/sources.md): locators, source windows, page renders,
Markdown slices, the skill and a record.

TypedDicts, so the JSON the CLI and MCP print is the dict itself. Most are `total=False`:
a PDF locator has `page_index` and `bbox`, an EPUB one `href` and `spine_index`, and a
record's claim carries whatever keys the package's database gave it.
"""

# No `from __future__ import annotations`: a TypedDict reads Required/NotRequired at class
# creation, and a string annotation would hide them from __required_keys__.
from typing import Any, Required, TypedDict

from book_agent.domain.records import MarkdownSpan, RecordDict


class Verification(TypedDict, total=False):
    method: Required[str]  # exact | normalized | fuzzy | unverified | record-metadata
    score: float
    stage: str  # claimed | neighbour | book | none
    cfi: str  # EPUB: verified | unverified | unavailable (whether epub_cfi resolves back to the passage)
    threshold: float
    corrected: dict[str, object]
    markdown: str  # verified | corrected | found | unverified | not_found | unchecked
    best_score: float


class Locator(TypedDict, total=False):
    """Where a passage is in the original: a hit's `source_locator`, or `locate`'s answer."""

    book_id: str
    kind: str  # pdf | epub
    record_id: str | None
    page_index: int | None
    page_label: str | None
    bbox: list[float] | None
    href: str | None
    spine_index: int | None
    fragment: str | None
    epub_cfi: str | None  # EPUB: the passage as a range CFI (EPUB CFI 1.1), verified against the chapter's XHTML
    epub_cfi_start: str | None  # EPUB: the CFI of the passage's first character, for readers that go to a point
    char_start: int | None
    char_end: int | None
    markdown_span: MarkdownSpan | None
    verification: Verification
    warnings: list[str]


class SourceText(TypedDict, total=False):
    """`read_source`: a window of the original's text around the located span."""

    book_id: Required[str]
    kind: Required[str]
    page_index: int
    page_label: str | None
    href: str
    spine_index: int
    fragment: str | None
    images: list[str]
    extracted_by: str
    text: Required[str]
    window_start: int
    window_end: int
    text_chars: int
    char_start: int | None
    char_end: int | None
    span_in_text: MarkdownSpan | None
    truncated: bool
    max_chars: int
    page_text_chars: int
    page_label_pages: list[int]  # every page with the label asked for (when several share it)
    note: str


class PageImage(TypedDict, total=False):
    """`render_page`: a PNG of a PDF page (or a clip of it) in the runtime dir."""

    book_id: Required[str]
    page_index: Required[int]
    page_label: str | None
    path: Required[str]
    media_type: str
    width_px: int
    height_px: int
    page_size_pt: list[float]
    page_box: list[float]
    rotation: int
    clip: list[float] | None
    requested_clip: list[float] | None
    clip_widened: bool
    clip_clamped: bool
    scale: float
    requested_scale: float | None
    dpi: float
    scaled_down: bool
    max_pixels: int
    cached: bool
    bytes: int
    notes: list[str]
    host_image_support: str
    page_label_pages: list[int]  # every page with the label asked for (when several share it)
    image_base64: str
    highlights: list[dict[str, Any]]  # passages highlighted: {record_id, quote?, char_start, char_end, boxes}
    highlights_elsewhere: list[dict[str, Any]]  # passages asked for that are on other pages
    highlight_note: str


class HeadingMatch(TypedDict):
    heading: str
    start: int


class MarkdownSlice(TypedDict, total=False):
    """`read_markdown`: a record's span with context, a range, or a heading's section."""

    book_id: Required[str]
    mode: Required[str]  # record | range | heading
    markdown_chars: int
    record_id: str | None
    text: str
    context_before: str
    context_after: str
    context_chars: int
    markdown_span: MarkdownSpan | None
    headings: list[str]
    heading: str
    level: int
    truncated: bool
    other_matches: list[HeadingMatch]


class Skill(TypedDict):
    """`read_skill`: the package's SKILL.md, its front matter and body."""

    book_id: str
    path: str
    name: str | None
    description: str | None
    front_matter: dict[str, str]
    body: str
    text: str
    extra_files: list[str]


class RecordEntry(RecordDict, total=False):
    """`read_entry`: Record.to_dict() with the book, the evidence id and the record's locator."""

    book_id: str
    evidence_id: str
    source_locator: Locator
