"""Records of a PDF or an EPUB, with locators the runtime verifies.

The text comes from the runtime's own readers (`PdfSource.page_text`, `EpubSource.chapter`),
so each record's `char_start/char_end` is an offset into exactly the text `locate` checks.
PDF: a record is a run of sentences of one page's body (running heads and feet left out),
headed by the outline in force, else by the headings the layout shows. EPUB: a run of blocks
of one spine document (a long block cut at sentence ends), headed by the document's first line
when it is short (epub_chunks.py). Sizes: sizing.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError

from . import errors, guards, layout, sizing

Tick = Callable[[int, int], None]
MAX_OUTLINE_ITEMS = 50_000
MAX_OUTLINE_DEPTH = 15
MAX_HEADING_CHARS = 120
# PDFium's wrapper logs (to stderr, through logging's last resort) a cyclic or too deep outline:
# the builder reports what it found itself
logging.getLogger("pypdfium2").addHandler(logging.NullHandler())
logging.getLogger("pypdfium2").propagate = False


@dataclass
class Piece:
    record_id: str
    text: str
    headings: list[str]
    source: dict[str, Any]


@dataclass
class Extraction:
    """The records and what the reading found (the report's `extraction`)."""

    pieces: list[Piece] = field(default_factory=list)
    units: int = 0  # pages or spine documents
    empty: list[int] = field(default_factory=list)  # 1-based pages / spine positions without text
    garbage: list[int] = field(default_factory=list)  # ... whose text is mostly not letters
    furniture_pages: int = 0
    headings_from: str = "none"  # "outline", "layout", "documents" or "none"
    labels: str = "none"  # "pdf", "inferred" or "none"
    texts: list[str] = field(default_factory=list)  # a sample, for the language
    path: HeadingPath = field(default_factory=lambda: HeadingPath())
    outline_at: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # page -> marks


def _lf(text: str) -> str:
    """PDFium ends lines with CRLF; a record keeps LF only (the locator still counts PDFium's
    characters; `locate` verifies it as `normalized`)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def outline(doc: Any) -> list[tuple[int, int, str]]:
    """(page_index, level, title) of the bookmarks, in order; cycles and depth cut (pypdfium2
    stops at a bookmark seen before and at MAX_OUTLINE_DEPTH), at most MAX_OUTLINE_ITEMS."""
    out: list[tuple[int, int, str]] = []
    for mark in doc.get_toc(max_depth=MAX_OUTLINE_DEPTH):
        dest = mark.get_dest()
        index = dest.get_index() if dest is not None else None
        if index is not None:
            out.append((int(index), int(mark.level), " ".join(mark.get_title().split())[:MAX_HEADING_CHARS]))
        if len(out) >= MAX_OUTLINE_ITEMS:
            break
    return out


def heading_paths(marks: list[tuple[int, int, str]], pages: int) -> list[list[str]]:
    """Per page, the outline path in force at its start (the last marks at or before it)."""
    paths: list[list[str]] = []
    stack: list[tuple[int, str]] = []
    ordered = sorted(marks, key=lambda m: m[0])
    k = 0
    for page in range(pages):
        while k < len(ordered) and ordered[k][0] <= page:
            _, level, title = ordered[k]
            stack = [entry for entry in stack if entry[0] < level] + [(level, title)]
            k += 1
        paths.append([title for _, title in stack])
    return paths


def open_pdf(path: Path) -> Any:
    import pypdfium2

    guards.check_pdf_header(path)
    try:
        return pypdfium2.PdfDocument(str(path))
    except Exception as exc:  # PdfiumError, OSError: coded below
        raise guards.opened_pdf_error(path, exc) from exc


def pdf_pages(path: Path, doc: Any, tick: Tick) -> tuple[list[layout.PageLines], list[str | None]]:
    """Every page's text (the runtime reader's), its lines and label."""
    from book_agent_adapters.sources.pdf.reader import PdfSource

    source = PdfSource(path)
    try:
        count = source.page_count
        pages: list[layout.PageLines] = []
        labels: list[str | None] = []
        for index in range(count):
            text = source.page_text(index)
            pages.append(layout.PageLines(text, layout.split_lines(text)))
            labels.append(source.page_label(index))
            tick(index + 1, count)
        return pages, labels
    except BookAgentError as exc:
        raise errors.from_source(path.name, exc) from exc
    finally:
        source.close()


def pdf_extraction(path: Path, tick: Tick) -> Extraction:
    doc = open_pdf(path)
    try:
        if len(doc) == 0:
            raise errors.error(errors.NO_TEXT, f"{path.name} has no pages", "use an intact copy of the book",
                               book=path.name)
        pages, labels = pdf_pages(path, doc, tick)
        found = Extraction(units=len(pages))
        found.furniture_pages = layout.mark_furniture(pages, labels)
        marks = outline(doc)
        headings = _pdf_headings(doc, pages, marks, found)
    finally:
        doc.close()
    if any(labels):
        found.labels = "pdf"
    elif inferred := layout.inferred_labels(pages):
        labels, found.labels = [inferred.get(i) for i in range(len(pages))], "inferred"
    for index, page in enumerate(pages):
        _page_records(index, page, labels[index], headings, found)
    return found


def _pdf_headings(doc: Any, pages: list[layout.PageLines], marks: list[tuple[int, int, str]],
                  found: Extraction) -> dict[tuple[int, int], tuple[int, str]]:
    """{(page, offset): (level, title)}: the outline's marks at each page's start, else the
    layout's heading lines."""
    if marks:
        found.headings_from = "outline"
        return _placed_marks(pages, marks, found)
    for index, page in enumerate(pages):
        if page.lines:
            textpage = doc[index].get_textpage()
            try:
                page.sizes, page.bold = layout.font_runs(textpage, page.text, page.lines)
            finally:
                textpage.close()
    lines = layout.layout_headings(pages)
    found.headings_from = "layout" if lines else "none"
    return lines


def _squeeze(text: str) -> str:
    return "".join(text.split()).lower()


def _placed_marks(pages: list[layout.PageLines], marks: list[tuple[int, int, str]],
                  found: Extraction) -> dict[tuple[int, int], tuple[int, str]]:
    """{(page, line start): (level, title)} for each bookmark whose title opens a line of its
    page (a record then starts there); the others take effect at their page's start."""
    placed: dict[tuple[int, int], tuple[int, str]] = {}
    for page_index, level, title in sorted(marks, key=lambda m: m[0]):
        page = pages[page_index] if 0 <= page_index < len(pages) else None
        key = _squeeze(title)
        line = None
        if page is not None and key:
            line = next((s for s, e in page.lines if page.body[0] <= s < page.body[1]
                         and _squeeze(page.text[s:e]).startswith(key[:40]) and (page_index, s) not in placed), None)
        if line is None:
            found.outline_at.setdefault(page_index, []).append((level, title))
        else:
            placed[(page_index, line)] = (level, title)
    return placed


class HeadingPath:
    """The heading path in force as the reading goes on."""

    def __init__(self) -> None:
        self.stack: list[tuple[int, str]] = []

    def push(self, level: int, title: str) -> None:
        self.stack = [entry for entry in self.stack if entry[0] < level] + [(level, title)]

    def titles(self) -> list[str]:
        return [title for _, title in self.stack]


def _body_units(index: int, page: layout.PageLines, headings: dict[tuple[int, int], tuple[int, str]],
                ) -> tuple[list[tuple[int, int]], dict[int, tuple[int, str]]]:
    """The page body as sentence pieces, and {piece index: heading} for its heading lines."""
    pieces: list[tuple[int, int]] = []
    heads: dict[int, tuple[int, str]] = {}
    block: list[int] = []

    def flush() -> None:
        if block:
            for s, e in sizing.sentences(page.text, block[0], block[1]):
                pieces.extend(sizing.fit(page.text, s, e))
            block.clear()

    for start, end in page.lines:
        if not page.body[0] <= start < page.body[1]:
            continue
        if (index, start) in headings:
            flush()
            heads[len(pieces)] = headings[(index, start)]
            pieces.append((start, end))
        else:
            block[:] = [block[0] if block else start, end]
    flush()
    return pieces, heads


def _page_records(index: int, page: layout.PageLines, label: str | None,
                  headings: dict[tuple[int, int], tuple[int, str]], found: Extraction) -> None:
    state = layout.readability(page.text[page.body[0]:page.body[1]])
    if state != "ok":
        (found.empty if state == "empty" else found.garbage).append(index + 1)
    for level, title in found.outline_at.get(index, []):
        found.path.push(level, title)
    if state != "ok":
        return
    pieces, heads = _body_units(index, page, headings)
    for k, run in enumerate(sizing.group(pieces, page.text, frozenset(heads)), 1):
        if run[0] in heads:
            found.path.push(*heads[run[0]])
        start, end = pieces[run[0]][0], pieces[run[-1]][1]
        locator: dict[str, Any] = {"kind": "pdf", "page_index": index}
        if label:
            locator["page_label"] = label
            if found.labels == "inferred":
                locator["page_label_inferred"] = True
        locator.update(char_start=start, char_end=end)
        found.pieces.append(Piece(f"p{index + 1:04d}-{k:02d}", _lf(page.text[start:end]), found.path.titles(),
                                  locator))
    if len(found.texts) < 400:
        found.texts.append(page.text[page.body[0]:page.body[1]])
