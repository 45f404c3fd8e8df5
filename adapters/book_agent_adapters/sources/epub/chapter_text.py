"""Plain text of one EPUB content document, with the character offset of every id.

selectolax (lexbor) parses the XHTML as HTML, which is forgiving with real-world books.
Text nodes have their whitespace collapsed as a browser would (except inside <pre>); block
elements start on a new line; <head>, <script> and <style> are skipped. `fragments` maps
each element id (and <a name>) to the offset where its text starts, so a locator's
fragment can be turned into a position and back. `anchors` (from `extract_chapter`) keeps only
the block-level ones: ids of block elements, and ids of other elements that open a line and
are not links or note references, so that a locator's fragment names a paragraph (or
heading, section...) rather than a footnote marker inside the previous paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

BLOCK_TAGS = frozenset(
    ["address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "thead", "tfoot", "tr", "ul"]
)
CELL_TAGS = frozenset({"td", "th"})
SKIP_TAGS = frozenset({"head", "script", "style", "template", "svg", "math"})
_SPACE = re.compile(r"\s+")
_COLLAPSING = re.compile(r"\s{2,}|[^\S ]")  # whitespace that collapsing to one space changes


class _Builder:
    """The chapter's text as it grows; with `track`, also where each character came from
    (`origins`: an index into the raw character data, -1 for a break the walk inserted),
    which the EPUB CFI map needs (epub_cfi_map.py)."""

    def __init__(self, track: bool = False) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.last = "\n"  # as if after a line break: no leading whitespace
        self.origins: list[int] | None = [] if track else None

    def add(self, text: str, origins: Sequence[int] | None = None) -> None:
        if text:
            self.parts.append(text)
            self.length += len(text)
            self.last = text[-1]
            if self.origins is not None:
                self.origins.extend(origins if origins is not None else [-1] * len(text))

    def space(self, origin: int = -1) -> None:
        if self.last not in " \n\t":
            self.add(" ", [origin])

    def newline(self) -> None:
        if self.length and self.last != "\n":
            if self.last == " ":  # a trailing space before a break carries nothing
                self.parts[-1] = self.parts[-1][:-1]
                self.length -= 1
                if self.origins is not None:
                    self.origins.pop()
            self.add("\n")

    def text(self, raw: str, pre: bool, base: int = -1) -> None:
        """Add a text node's data (whitespace collapsed unless in <pre>); `base` is the
        origin of raw[0] when tracking."""
        if self.origins is None:
            if pre:
                self.add(raw)
                return
            collapsed = _SPACE.sub(" ", raw)
            if collapsed.startswith(" "):
                self.space()
                collapsed = collapsed[1:]
            self.add(collapsed)
            return
        if pre:
            self.add(raw, range(base, base + len(raw)))
            return
        # only where collapsing changes something (a run of two or more, or a tab or newline):
        # the single spaces between words map one to one
        pieces: list[str] = []
        origins: list[int] = []
        pos = 0
        for match in _COLLAPSING.finditer(raw):
            pieces += (raw[pos : match.start()], " ")
            origins += range(base + pos, base + match.start())
            origins.append(base + match.start())
            pos = match.end()
        pieces.append(raw[pos:])
        origins += range(base + pos, base + len(raw))
        collapsed = "".join(pieces)
        if collapsed.startswith(" "):
            self.space(origins[0])
            collapsed, origins = collapsed[1:], origins[1:]
        self.add(collapsed, origins)

    def result(self) -> str:
        text = "".join(self.parts).rstrip()
        if self.origins is not None:
            del self.origins[len(text):]
        return text


def _is_note_link(tag: str, attrs: Any) -> bool:
    kinds = f"{attrs.get('epub:type') or ''} {attrs.get('role') or ''}"
    return "noteref" in kinds or "footnote" in kinds or "endnote" in kinds or (tag == "a" and bool(attrs.get("href")))


def extract_chapter_text(xhtml: bytes | str) -> tuple[str, dict[str, int]]:
    """(text, {fragment_id: char_offset}) of one XHTML content document."""
    text, fragments, _ = extract_chapter(xhtml)
    return text, fragments


def extract_chapter(xhtml: bytes | str) -> tuple[str, dict[str, int], dict[str, tuple[int, int]]]:
    """(text, fragments, anchors): every id's offset, and the block-level ids' extents
    [start, end) (an inline anchor opening a line extends to the end of that line)."""
    tree = _parse(xhtml)
    start = tree.body if tree.body is not None else tree.root
    out = _Builder()
    fragments: dict[str, int] = {}
    anchors: dict[str, list[int]] = {}
    if start is None:
        return "", fragments, {}
    # iterative walk: deep documents must not hit the recursion limit
    stack: list[tuple[Any, bool, bool, str | None]] = [(start, False, False, None)]
    while stack:
        node, leaving, pre, anchor = stack.pop()
        tag = node.tag
        if leaving:
            if anchor is not None:
                anchors[anchor][1] = out.length
            if tag in BLOCK_TAGS:
                out.newline()
            elif tag in CELL_TAGS and out.last not in "\t\n":
                out.add("\t")
            continue
        if tag == "-text":
            out.text(node.text_content or "", pre)
            continue
        if tag in SKIP_TAGS or tag.startswith("-"):  # comments, doctype
            continue
        if tag in BLOCK_TAGS:
            out.newline()
        elif tag == "br":
            if out.last == "\n":
                out.add("\n")  # a second <br> is a blank line
            else:
                out.newline()
        attrs = node.attributes
        anchor = None
        for key in ("id", "name") if tag == "a" else ("id",):
            value = attrs.get(key)
            if value and value not in fragments:
                fragments[value] = out.length
                if tag in BLOCK_TAGS or (out.last == "\n" and not _is_note_link(tag, attrs)):
                    anchors[value] = [out.length, out.length]
                    anchor = value if tag in BLOCK_TAGS else None
        stack.append((node, True, pre, anchor))
        child_pre = pre or tag == "pre"
        stack.extend((c, False, child_pre, None) for c in reversed(_children(node)))
    text = out.result()
    return text, {k: min(v, len(text)) for k, v in fragments.items()}, _extents(text, anchors)


def _parse(xhtml: bytes | str) -> Any:
    from selectolax.lexbor import LexborHTMLParser

    return LexborHTMLParser(xhtml if isinstance(xhtml, str) else xhtml.decode("utf-8", errors="replace"))


def _children(node: Any) -> list[Any]:
    children = []
    child = node.child
    while child is not None:
        children.append(child)
        child = child.next
    return children


def _extents(text: str, anchors: dict[str, list[int]]) -> dict[str, tuple[int, int]]:
    """Each anchor's [start, end) clipped to the text; an inline anchor's line is its block."""
    extents: dict[str, tuple[int, int]] = {}
    for key, (a, b) in anchors.items():
        a = min(a, len(text))
        if b <= a:
            line_end = text.find("\n", a)
            b = len(text) if line_end < 0 else line_end
        extents[key] = (a, min(b, len(text)))
    return extents


def image_sources(xhtml: bytes | str) -> list[str]:
    """The src of every <img> (and SVG <image> href) in document order, as written."""
    tree = _parse(xhtml)
    out: list[str] = []
    for node in tree.css("img, image"):
        attrs = node.attributes
        src = attrs.get("src") or attrs.get("href") or attrs.get("xlink:href")
        if src:
            out.append(src)
    return out
