"""Records of any PDF or EPUB, with locators the product verifies (a dev-tool module).

The text comes from the product's own extractors (`PdfSource.page_text`, `EpubSource.chapter`),
so each record's `char_start/char_end` is an offset into exactly the text `locate` and
`source` check against. A record is a run of whole lines of one PDF page or one EPUB
document, 80 to 220 words (CJK characters count half a word), cut at sentence ends when one
line is longer (the sizing rules of tools/build/example_chunks.py, reused). Headings: the PDF's
outline (bookmarks), an EPUB document's first line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: tools.*
from book_agent_adapters.sources.epub.reader import EpubSource
from book_agent_adapters.sources.pdf.reader import PdfSource
from tools.build.example_chunks import group, lines, nearest_fragment, split_long

Tick = Callable[[int, int], None]
MAX_HEADING_CHARS = 120


@dataclass
class Piece:
    record_id: str
    text: str
    headings: list[str]
    source: dict[str, Any]


def runs(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each record's text in `text`: grouped whole lines, long lines cut."""
    units = [piece for s, e in lines(text, 0, len(text)) for piece in split_long(text, s, e)]
    for ids in group(units, text):
        yield units[ids[0]][0], units[ids[-1]][1]


def _lf(text: str) -> str:
    """PDFium ends lines with CRLF; book.md is read with universal newlines, so a record keeps
    LF only (the locator's offsets still count PDFium's characters; `locate` verifies it)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def outline(pdf_path: Path) -> list[tuple[int, int, str]]:
    """(page_index, level, title) of the PDF's bookmarks, in order; [] when it has none."""
    import pypdfium2

    doc = pypdfium2.PdfDocument(str(pdf_path))
    try:
        out = []
        for mark in doc.get_toc():
            dest = mark.get_dest()
            index = dest.get_index() if dest is not None else None
            if index is not None:
                out.append((int(index), int(mark.level), " ".join(mark.get_title().split())))
        return out
    finally:
        doc.close()


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


def pdf_pieces(path: Path, tick: Tick) -> list[Piece]:
    source = PdfSource(path)
    try:
        count = source.page_count
        headings = heading_paths(outline(path), count)
        out: list[Piece] = []
        for page in range(count):
            text = source.page_text(page)
            label = source.page_label(page)
            for k, (start, end) in enumerate(runs(text), 1):
                locator: dict[str, Any] = {"kind": "pdf", "page_index": page}
                if label:
                    locator["page_label"] = label
                locator.update(char_start=start, char_end=end)
                out.append(Piece(f"p{page + 1:04d}-{k:02d}", _lf(text[start:end]), headings[page], locator))
            tick(page + 1, count)
        return out
    finally:
        source.close()


def epub_pieces(path: Path, tick: Tick) -> list[Piece]:
    source = EpubSource(path)
    try:
        spine = source.spine
        out: list[Piece] = []
        for item in spine:
            chapter = source.chapter(item)
            text = chapter.text
            first = next(iter(lines(text, 0, len(text))), None)
            title = text[first[0]:first[1]] if first and first[1] - first[0] <= MAX_HEADING_CHARS else ""
            for k, (start, end) in enumerate(runs(text), 1):
                locator: dict[str, Any] = {"kind": "epub", "href": item.href}
                fragment = nearest_fragment(chapter, start)
                if fragment:
                    locator["fragment"] = fragment
                locator.update(spine_index=item.index, char_start=start, char_end=end)
                out.append(Piece(f"d{item.index + 1:03d}-{k:03d}", text[start:end], [title] if title else [],
                                 locator))
            tick(item.index + 1, len(spine))
        return out
    finally:
        source.close()


def book_pieces(path: Path, tick: Tick) -> list[Piece]:
    kind = path.suffix.lower()
    if kind == ".pdf":
        return pdf_pieces(path, tick)
    if kind == ".epub":
        return epub_pieces(path, tick)
    raise SystemExit(f"build_package: {path.name} is neither a .pdf nor an .epub")
