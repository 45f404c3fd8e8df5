"""EPUB CFIs for a chapter's text spans, and CFIs resolved back to text.

`span_cfi` turns [start, end) in a chapter's text (the offsets every EPUB locator carries)
into a range CFI and the CFI of its start, then resolves the range's points against the XML
tree (each element step and id checked) and keeps it only when it gives back exactly the span's
characters (whitespace aside: a reader's
DOM keeps the markup's indentation that the chapter text collapses). The syntax is
book_agent/domain/sources/epub_cfi.py (with the spec's sections); the tree walk epub_cfi_map.py.
"""

from __future__ import annotations

import posixpath
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.epub_cfi import CfiPoint, CfiStep, format_point, format_range
from book_agent.domain.sources.text_align import matching_blocks
from book_agent_adapters.sources.epub.cfi_map import ChapterXml, NotXml, element_id, walk

_SPACE = re.compile(r"\s+")


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def package_steps(opf: bytes, opf_dir: str) -> dict[str, tuple[CfiStep, CfiStep]]:
    """{zip path: (spine step, itemref step)} from the package document (3.1.1: the first
    step names the spine among the package element's children, the second its itemref;
    an itemref's own id is its assertion). A document in the spine twice keeps its first."""
    try:
        root = ElementTree.fromstring(opf)
    except ElementTree.ParseError:
        return {}
    manifest = {el.get("id"): el.get("href") or "" for el in root.iter() if _local(el.tag) == "item"}
    out: dict[str, tuple[CfiStep, CfiStep]] = {}
    for k, child in enumerate(root):
        if _local(child.tag) != "spine":
            continue
        spine_step = CfiStep(2 * (k + 1), element_id(child))
        for j, itemref in enumerate(child):
            href = manifest.get(itemref.get("idref")) if _local(itemref.tag) == "itemref" else None
            if href:
                path = posixpath.normpath(posixpath.join(opf_dir, unquote(href.partition("#")[0])))
                out.setdefault(path, (spine_step, CfiStep(2 * (j + 1), element_id(itemref))))
        break
    return out


@dataclass
class ChapterCfi:
    """One chapter's CFI map: the XML walk, and how the chapter text's offsets map onto it."""

    xml: ChapterXml | None
    blocks: list[tuple[int, int, int]] | None  # (xml pos, chapter pos, size), None: the texts are equal
    why_not: str | None = None
    _inverse: list[tuple[int, int]] = field(default_factory=list)  # (origin, xml pos) of kept characters

    @classmethod
    def build(cls, data: bytes, chapter_text: str) -> ChapterCfi:
        try:
            xml = walk(data)
        except NotXml as exc:
            return cls(None, None, f"the chapter is not well-formed XML ({exc}), so no reader can address it by CFI")
        if xml.text == chapter_text:
            return cls(xml, None)
        return cls(xml, matching_blocks(xml.text, chapter_text))

    def _to_xml(self, pos: int, forward: bool, lo: int, hi: int) -> int | None:
        """The XML-text position of chapter position `pos`, or the nearest shared one inside [lo, hi)."""
        if self.blocks is None:
            return pos
        starts = [b for _, b, _ in self.blocks]
        i = bisect_right(starts, pos) - 1
        if i >= 0:
            a, b, size = self.blocks[i]
            if pos < b + size:
                return a + pos - b
        if forward:
            nxt = i + 1
            if nxt < len(self.blocks) and self.blocks[nxt][1] < hi:
                return self.blocks[nxt][0]
        elif i >= 0 and self.blocks[i][1] + self.blocks[i][2] - 1 >= lo:
            a, b, size = self.blocks[i]
            return a + size - 1
        return None

    def points(self, start: int, end: int) -> tuple[tuple[CfiStep, ...], int, tuple[CfiStep, ...], int, bool] | None:
        """(steps, UTF-16 offset) of the span's start and end, and whether epub.js counts both
        as the spec does; or None."""
        if self.xml is None or end <= start:
            return None
        lo, hi = self._to_xml(start, True, start, end), self._to_xml(end - 1, False, start, end)
        if lo is None or hi is None or hi < lo:
            return None
        inside = [o for o in self.xml.origins[lo : hi + 1] if o >= 0]  # the characters the document holds
        if not inside:
            return None
        origins = self.xml.origins
        before = next((o for o in reversed(origins[max(0, lo - 64):lo]) if o >= 0), -1)  # kept characters around
        after = next((o for o in origins[hi + 1 : hi + 65] if o >= 0), None)
        a, i = _reader_start(self.xml, *self.xml.index_at(inside[0]), before)
        b, j = self.xml.index_at(inside[-1])
        b, j = _reader_end(self.xml, b, j + 1, after)
        chunk, end_chunk = self.xml.chunks[a], self.xml.chunks[b]
        alike = self.xml.counted_alike(a) and self.xml.counted_alike(b)  # epub.js finds both points
        return (self.xml.steps(chunk), _utf16(chunk.text[:i]), self.xml.steps(end_chunk), _utf16(end_chunk.text[:j]),
                alike)


    def offset_of(self, point: CfiPoint, after: bool) -> int:
        """The chapter-text offset a CFI point names (the first character at or after it; with
        `after`, the end of the last character before it), or source.cfi_not_found."""
        assert self.xml is not None
        _check_path(self.xml.root, point.document)
        index = self.xml.chunk_index(point.document)
        if index is None:
            raise _not_found("the CFI names no text of this chapter", "".join(str(s) for s in point.document))
        chunk = self.xml.chunks[index]
        cut = _code_points(chunk.text, point.offset or 0)
        if cut is None:
            raise _not_found(f"the character offset {point.offset} is past its text ({_utf16(chunk.text)} UTF-16 units)",
                             "".join(str(s) for s in point.document))
        origin = chunk.base + cut - (1 if after else 0)  # after: the last character before the point
        if not self._inverse:
            self._inverse = [(o, pos) for pos, o in enumerate(self.xml.origins) if o >= 0]
        k = bisect_right(self._inverse, (origin, -1))  # the first kept character at or after the origin
        if after:
            k = bisect_right(self._inverse, (origin, len(self.xml.origins))) - 1
            pos = self._inverse[k][1] + 1 if k >= 0 else 0
        else:
            pos = self._inverse[k][1] if k < len(self._inverse) else len(self.xml.text)
        return self._to_chapter(pos)

    def _to_chapter(self, pos: int) -> int:
        if self.blocks is None:
            return pos
        starts = [a for a, _, _ in self.blocks]
        i = bisect_right(starts, pos) - 1
        if i < 0:
            return 0
        a, b, size = self.blocks[i]
        return b + min(pos - a, size)


SCAN_CHUNKS = 8  # how far a boundary may move over chunks without text of the chapter (whitespace)


def _reader_start(xml: ChapterXml, index: int, offset: int, kept_before: int) -> tuple[int, int]:
    """A span's start as a point epub.js resolves as the spec does (issue 43). In a chunk the
    two count alike, it stays. Else, when no character of the chapter text lies between (the
    span's chunk holds none before it; `kept_before` is the origin of the last one before the
    span), it moves to the end of an earlier chunk counted alike, over at most SCAN_CHUNKS
    chunks of markup whitespace and never over left-out text (ruby annotations): the same place."""
    if xml.counted_alike(index):
        return index, offset
    for m in range(index - 1, max(-1, index - 1 - SCAN_CHUNKS), -1):
        chunk = xml.chunks[m]
        if m in xml.hidden_after or kept_before >= chunk.base + len(chunk.text):
            break  # text between: not the same place
        if xml.counted_alike(m):
            return m, len(chunk.text)
    return index, offset


def _reader_end(xml: ChapterXml, index: int, offset: int, kept_after: int | None) -> tuple[int, int]:
    """A span's end likewise: to the start of a later chunk counted alike (`kept_after`: the
    origin of the first character of the chapter text after the span)."""
    if xml.counted_alike(index):
        return index, offset
    for n in range(index + 1, min(len(xml.chunks), index + 1 + SCAN_CHUNKS)):
        chunk = xml.chunks[n]
        if n - 1 in xml.hidden_after or (kept_after is not None and kept_after < chunk.base):
            break
        if xml.counted_alike(n):
            return n, 0
    return index, offset


def _not_found(why: str, steps: str) -> BookAgentError:
    return BookAgentError("source.cfi_not_found", f"{why}: {steps}", details={"steps": steps},
                          remediation="use a CFI from this book's locators (epub_cfi / epub_cfi_start)")


def _utf16(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _code_points(text: str, units: int) -> int | None:
    """The code-point index at a UTF-16 offset (None: past the end, or inside a surrogate pair)."""
    count = 0
    for i, ch in enumerate(text):
        if count == units:
            return i
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(text) if count == units else None


def resolve_text(xml: ChapterXml, start: CfiPoint, end: CfiPoint) -> str:
    """The document text between two points of one chapter, in document order (the text of
    head, script, style, svg and math left out, as the chapter text leaves it out)."""
    ends = []
    for point in (start, end):
        _check_path(xml.root, point.document)
        chunk_index = xml.chunk_index(point.document)
        steps = "".join(str(s) for s in point.document)
        if chunk_index is None or point.offset is None:
            raise _not_found("the CFI names no text of this chapter", steps)
        cut = _code_points(xml.chunks[chunk_index].text, point.offset)
        if cut is None:
            raise _not_found("the CFI's character offset is past its text", steps)
        ends.append((chunk_index, cut))
    (a, i), (b, j) = ends
    if (a, i) > (b, j):
        return ""
    if a == b:
        return xml.chunks[a].text[i:j]
    middle = [c.text for c in xml.chunks[a + 1 : b]]
    return "".join([xml.chunks[a].text[i:], *middle, xml.chunks[b].text[:j]])


def _check_path(root: ElementTree.Element, steps: tuple[CfiStep, ...]) -> None:
    """Each element step exists and carries the element's id (3.1.2), or source.cfi_not_found."""
    node = root
    for step in steps[:-1]:
        children = list(node)
        k = step.index // 2 - 1
        if step.index % 2 or not 0 <= k < len(children) or step.assertion != element_id(children[k]):
            raise _not_found(f"the CFI's step {step} names no element of this chapter",
                             "".join(str(s) for s in steps))
        node = children[k]


def squash(text: str) -> str:
    return _SPACE.sub("", text)


def span_cfi(chapter: ChapterCfi, package: tuple[CfiStep, CfiStep] | None, chapter_text: str,
             start: int, end: int) -> dict[str, Any]:
    """{epub_cfi, epub_cfi_start, cfi} for [start, end) of a chapter: the range, its start,
    and `verified` (resolved back to exactly the span's text) or why there is none."""
    if package is None:
        return {"epub_cfi": None, "epub_cfi_start": None, "cfi": "unavailable",
                "why": "the chapter is not in the package document's spine"}
    if chapter.why_not is not None or chapter.xml is None:
        return {"epub_cfi": None, "epub_cfi_start": None, "cfi": "unavailable", "why": chapter.why_not}
    points = chapter.points(start, end)
    if points is None:
        return {"epub_cfi": None, "epub_cfi_start": None, "cfi": "unavailable",
                "why": "the span's text is not in the chapter's XML text"}
    s_steps, s_off, e_steps, e_off, alike = points
    first, last = CfiPoint(package, s_steps, s_off), CfiPoint(package, e_steps, e_off)
    cfi = format_range(first, last)  # written as the tests read it back (tests/integration/sources/test_epub_cfi.py)
    try:
        found = resolve_text(chapter.xml, first, last)
    except BookAgentError:
        found = None
    if found is None or squash(found) != squash(chapter_text[start:end]):
        return {"epub_cfi": None, "epub_cfi_start": None, "cfi": "unverified",
                "why": "the CFI did not resolve back to the span's text"}
    return {"epub_cfi": cfi, "epub_cfi_start": format_point(first), "cfi": "verified", "epubjs": alike}
