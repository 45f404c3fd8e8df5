"""A chapter's text walked through its XML tree, each character tied to a CFI position.

Reading systems render an EPUB content document as XML (application/xhtml+xml), so its CFI
steps count the XML tree's elements and chunks of character data (EPUB CFI 1.1, 3.1.1), not
the HTML tree lexbor builds for our chapter text (an HTML parser opens `<span/>`, inserts
`<tbody>`...). This walk applies the chapter-text rules (epub_chapter_text.py: whitespace
collapsed outside <pre>, block breaks, skipped head/script/style/svg/math) to the XML tree,
so its text is the chapter's text, and keeps for each character the chunk and offset it came
from. Where the two parsers do disagree, epub_cfi.py aligns the two texts.
"""

from __future__ import annotations

import html.entities
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from xml.etree import ElementTree

from book_agent.domain.sources.epub_cfi import CfiStep
from book_agent_adapters.sources.epub.chapter_text import BLOCK_TAGS, CELL_TAGS, SKIP_TAGS, _Builder

_XML_ID = "{http://www.w3.org/XML/1998/namespace}id"
_ENTITY = re.compile(rb"&([A-Za-z][A-Za-z0-9]*);")
_XML_ENTITIES = frozenset({b"amp", b"lt", b"gt", b"quot", b"apos"})


class NotXml(ValueError):
    """The content document is not well-formed XML: a reading system could not address it either."""


@dataclass
class Chunk:
    """One chunk of character data: its steps from the root element (the last one odd) and text."""

    steps: tuple[CfiStep, ...]
    text: str
    base: int  # origin of text[0] in the map's origin numbering


@dataclass
class ChapterXml:
    root: ElementTree.Element
    text: str
    origins: list[int]  # per character of text: an origin (see Chunk.base), or -1
    chunks: list[Chunk] = field(default_factory=list)
    _bases: list[int] = field(default_factory=list)
    _order: dict[tuple[CfiStep, ...], int] = field(default_factory=dict)

    def chunk_index(self, steps: tuple[CfiStep, ...]) -> int | None:
        """The document-order index of the chunk these steps name."""
        if not self._order:
            self._order = {c.steps: n for n, c in enumerate(self.chunks)}
        return self._order.get(steps)

    def chunk_at(self, origin: int) -> tuple[Chunk, int]:
        """The chunk an origin falls in and the code-point offset inside it."""
        if not self._bases:
            self._bases = [c.base for c in self.chunks]
        chunk = self.chunks[bisect_right(self._bases, origin) - 1]
        return chunk, origin - chunk.base


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def _numeric_entities(data: bytes) -> bytes:
    """HTML's named entities as numeric references (XML knows only five): EPUB 2 books use
    &nbsp; with an XHTML DTD that an XML parser does not read."""
    def repl(match: re.Match[bytes]) -> bytes:
        name = match.group(1)
        code = html.entities.name2codepoint.get(name.decode("ascii"))
        return match.group() if name in _XML_ENTITIES or code is None else b"&#%d;" % code
    return _ENTITY.sub(repl, data)


def parse_xml(data: bytes) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(data)
    except ElementTree.ParseError as first:
        try:
            return ElementTree.fromstring(_numeric_entities(data))
        except ElementTree.ParseError:
            raise NotXml(str(first)) from first


def element_id(element: ElementTree.Element) -> str | None:
    return element.get("id") or element.get(_XML_ID) or None


def _body(root: ElementTree.Element) -> tuple[ElementTree.Element, tuple[CfiStep, ...]]:
    """Where the chapter text starts (<body>, else the root) and its steps from the root."""
    for k, child in enumerate(root):
        if _local(child.tag) == "body":
            return child, (CfiStep(2 * (k + 1), element_id(child)),)
    return root, ()


def walk(data: bytes) -> ChapterXml:
    """The chapter's text from its XML tree, with every character's origin."""
    root = parse_xml(data)
    out = _Builder(track=True)
    chunks: list[Chunk] = []
    total = 0

    def emit(raw: str | None, steps: tuple[CfiStep, ...], pre: bool) -> None:
        nonlocal total
        if raw:
            chunks.append(Chunk(steps, raw, total))
            out.text(raw, pre, total)
            total += len(raw)

    start, path = _body(root)
    # iterative, as extract_chapter is: ("enter", element) or ("tail", text of a chunk) or ("leave", tag)
    stack: list[tuple[str, ElementTree.Element, tuple[CfiStep, ...], bool]] = [("enter", start, path, False)]
    while stack:
        kind, node, steps, pre = stack.pop()
        tag = _local(node.tag)
        if kind == "tail":
            emit(node.tail, steps, pre)
            continue
        if kind == "leave":
            if tag in BLOCK_TAGS:
                out.newline()
            elif tag in CELL_TAGS and out.last not in "\t\n":
                out.add("\t")
            continue
        if tag in SKIP_TAGS or not tag:
            continue
        if tag in BLOCK_TAGS:
            out.newline()
        elif tag == "br":
            if out.last == "\n":
                out.add("\n")
            else:
                out.newline()
        child_pre = pre or tag == "pre"
        stack.append(("leave", node, steps, pre))
        children = list(node)
        for k in range(len(children) - 1, -1, -1):
            child = children[k]
            stack.append(("tail", child, (*steps, CfiStep(2 * k + 3)), child_pre))
            stack.append(("enter", child, (*steps, CfiStep(2 * (k + 1), element_id(child))), child_pre))
        text = node.text
        if tag == "pre" and text and text.startswith("\n"):
            # an HTML parser drops the newline that follows <pre>; the chapter text has none
            chunks.append(Chunk((*steps, CfiStep(1)), text, total))
            out.text(text[1:], True, total + 1)
            total += len(text)
        else:
            emit(text, (*steps, CfiStep(1)), child_pre)
    text = out.result()
    assert out.origins is not None
    return ChapterXml(root, text, out.origins, chunks)
