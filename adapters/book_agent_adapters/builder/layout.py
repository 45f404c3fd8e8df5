"""What a PDF's layout says beyond its text: running heads and folios, headings, readability.

- Running heads and footers: a page's first or last line that recurs (digits ignored) on at
  least REPEATS pages, or that is only a page number, is furniture: kept out of record text,
  unless it is all the page holds (a heading repeated as a page's only line is its text).
- Printed folios: the number in that furniture; where the PDF has no page labels and most
  folios sit at one constant offset from the page index, the pages get labels (inferred).
- Headings, for a PDF without an outline: a short line set larger than the body text (the
  size most characters have), or bold and numbered ("3.2 ...", "Chapter 4", "第三章"); levels
  by size, largest first.
- Readability: a page without text (a scan) or whose text is mostly not letters (a font whose
  characters map to nothing readable) is counted; the build refuses a book mostly so.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

REPEATS = 3
MAX_HEADING_CHARS = 80
_DIGITS = re.compile(r"\d+")
_NUMBERED = re.compile(r"^(?:第[一二三四五六七八九十百千\d]+[章节篇部卷]|(?:chapter|part|appendix|section)\s+\w+|"
                       r"\d+(?:\.\d+){0,3}\.?\s+\S)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?。！？;；,，:：]\s*$")
_BAD = re.compile(r"[\ufffd\ue000-\uf8ff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_READABLE = re.compile(r"[^\W\d_]", re.UNICODE)
_LEADERS = re.compile(r"[\d.·…‥_\-–—=]")  # digits and dot leaders: a contents page is not garbage


@dataclass
class PageLines:
    """One page's text with its non-empty lines as (start, end) spans."""

    text: str
    lines: list[tuple[int, int]]
    body: tuple[int, int] = (0, 0)  # the span left after furniture
    folio: int | None = None
    sizes: list[float] = field(default_factory=list)  # per line: font size (0 unknown)
    bold: list[bool] = field(default_factory=list)


def split_lines(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = 0
    for part in text.splitlines(keepends=True):
        stripped = part.strip()
        if stripped:
            lead = len(part) - len(part.lstrip())
            out.append((pos + lead, pos + lead + len(stripped)))
        pos += len(part)
    return out


def _key(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.split())).lower()


def _edge_number(text: str) -> int | None:
    """The number a running head or foot opens or closes with ("25", "§3.5 Lists 25", "- 7 -")."""
    match = re.match(r"^\W{0,2}(\d{1,5})(?:\W{0,2}$|\s)", text) or re.search(r"(?:^|\s)\W{0,2}(\d{1,5})\W{0,2}$", text)
    return int(match.group(1)) if match else None


def _edges(page: PageLines) -> list[tuple[int, str]]:
    """(index into lines, text) of the page's first and last line."""
    if not page.lines:
        return []
    ends = [0] if len(page.lines) == 1 else [0, len(page.lines) - 1]
    return [(k, page.text[slice(*page.lines[k])]) for k in ends]


def folio_offset(pages: list[PageLines]) -> int | None:
    """The offset (printed number - page index) most running heads and feet share, if any."""
    offsets = Counter(n - i for i, p in enumerate(pages) for _, t in _edges(p)
                      if len(t) <= 200 and (n := _edge_number(t)) is not None)
    if not offsets:
        return None
    offset, count = offsets.most_common(1)[0]
    return offset if count >= max(REPEATS, 0.3 * len(pages)) else None


def mark_furniture(pages: list[PageLines], labels: list[str | None]) -> int:
    """Set each page's body (its lines less a running head and foot) and printed folio; the
    number of pages that had furniture. A first or last line is furniture when it recurs
    (digits aside) on REPEATS pages, or ends or opens with the page's printed number: its
    label, or the number at the offset most pages' heads and feet share."""
    keys = Counter(_key(t) for p in pages for _, t in _edges(p))
    offset = folio_offset(pages)
    marked = 0
    for i, page in enumerate(pages):
        drop: list[int] = []
        for k, text in _edges(page):
            number = _edge_number(text) if len(text) <= 200 else None
            folio = number is not None and ((offset is not None and number == i + offset)
                                            or (labels[i] is not None and str(number) == labels[i]))
            if folio:
                page.folio = number
            if folio or (keys[_key(text)] >= REPEATS and len(text) <= 200):
                drop.append(k)
        lines = [span for k, span in enumerate(page.lines) if k not in drop]
        if not lines:  # a running head or foot frames a page's text: a page of only such lines is text
            drop, lines, page.folio = [], list(page.lines), None
        marked += bool(drop)
        page.body = (lines[0][0], lines[-1][1]) if lines else (0, 0)
    return marked


def inferred_labels(pages: list[PageLines]) -> dict[int, str]:
    """{page_index: printed number} from the first page with a folio on, at the shared offset;
    {} when the book prints none that most pages share."""
    offset = folio_offset(pages)
    seen = [i for i, p in enumerate(pages) if p.folio is not None]
    if offset is None or not seen:
        return {}
    return {i: str(i + offset) for i in range(seen[0], len(pages)) if i + offset >= 1}


def readability(text: str) -> str:
    """"ok", "empty" (under 10 characters: a scan or a blank page) or "garbage"."""
    visible = "".join(text.split())
    if len(visible) < 10:
        return "empty"
    bad = len(_BAD.findall(visible))
    readable = len(_READABLE.findall(visible))
    counted = len(visible) - len(_LEADERS.findall(visible))
    return "garbage" if bad > 0.3 * len(visible) or readable < 0.4 * counted else "ok"


def font_runs(textpage: Any, text: str, lines: list[tuple[int, int]]) -> tuple[list[float], list[bool]]:
    """Per line: the font size and boldness of its middle character (PDFium's text page)."""
    import pypdfium2.raw as pdfium_c

    sizes: list[float] = []
    bold: list[bool] = []
    for start, end in lines:
        sample = [i for i in (start, (start + end) // 2) if not text[i].isspace()] or [start]
        sizes.append(max(float(pdfium_c.FPDFText_GetFontSize(textpage, i)) for i in sample))
        bold.append(int(pdfium_c.FPDFText_GetFontWeight(textpage, sample[-1])) >= 600)
    return sizes, bold


def layout_headings(pages: list[PageLines]) -> dict[tuple[int, int], tuple[int, str]]:
    """{(page, line start): (level, title)} for lines the layout marks as headings."""
    weights: Counter[float] = Counter()
    for page in pages:
        for (s, e), size in zip(page.lines, page.sizes, strict=False):
            if size > 0:
                weights[round(size, 1)] += e - s
    if not weights:
        return {}
    body = weights.most_common(1)[0][0]
    found: dict[tuple[int, int], tuple[float, str]] = {}
    for index, page in enumerate(pages):
        for (s, e), size, bold in zip(page.lines, page.sizes, page.bold, strict=False):
            title = " ".join(page.text[s:e].split())
            if not (page.body[0] <= s < page.body[1] or s == page.body[0]) or len(title) > MAX_HEADING_CHARS:
                continue
            if _SENTENCE_END.search(title) or not _READABLE.search(title):
                continue
            larger = size >= 1.15 * body
            if larger or (bold and _NUMBERED.match(title)):
                found[(index, s)] = (round(size, 1) if larger else body + 0.05, title)
    sizes = sorted({size for size, _ in found.values()}, reverse=True)[:3]
    level = {size: k for k, size in enumerate(sizes)}
    return {key: (level.get(size, len(sizes) - 1 if sizes else 0), title) for key, (size, title) in found.items()}
