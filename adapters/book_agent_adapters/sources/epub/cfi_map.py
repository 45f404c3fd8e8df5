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
    """One chunk of character data: the element holding it (an index into ChapterXml.paths),
    its odd step, and its text. Steps are kept as links to the parent element's path, not as
    one tuple per chunk: a document nested d deep would otherwise hold d steps per chunk."""

    path: int
    step: CfiStep
    text: str
    base: int  # origin of text[0] in the map's origin numbering


@dataclass
class ChapterXml:
    root: ElementTree.Element
    text: str
    origins: list[int]  # per character of text: an origin (see Chunk.base), or -1
    chunks: list[Chunk] = field(default_factory=list)
    paths: list[tuple[int, CfiStep | None]] = field(default_factory=list)  # (parent, step); 0 is the root
    hidden_after: set[int] = field(default_factory=set)  # chunks followed by text left out (ruby, script...)
    _bases: list[int] = field(default_factory=list)
    _agrees: list[bool] = field(default_factory=list)
    _children: dict[tuple[int, int], int] = field(default_factory=dict)
    _chunk_of: dict[tuple[int, int], int] = field(default_factory=dict)

    def steps(self, chunk: Chunk) -> tuple[CfiStep, ...]:
        """The chunk's steps from the root element (the last one odd)."""
        out = [chunk.step]
        node = chunk.path
        while node > 0:
            parent, step = self.paths[node]
            assert step is not None
            out.append(step)
            node = parent
        return tuple(reversed(out))

    def chunk_index(self, steps: tuple[CfiStep, ...]) -> int | None:
        """The document-order index of the chunk these steps name (indexes only: assertions
        are checked by the caller against the tree)."""
        if not self._chunk_of:
            self._children = {(parent, step.index): n for n, (parent, step) in enumerate(self.paths)
                              if step is not None}
            self._chunk_of = {(c.path, c.step.index): n for n, c in enumerate(self.chunks)}
        node: int | None = 0
        for step in steps[:-1]:
            node = self._children.get((node, step.index)) if node is not None else None
        return self._chunk_of.get((node, steps[-1].index)) if node is not None and steps else None

    def chunk_at(self, origin: int) -> tuple[Chunk, int]:
        """The chunk an origin falls in and the code-point offset inside it."""
        index, offset = self.index_at(origin)
        return self.chunks[index], offset

    def index_at(self, origin: int) -> tuple[int, int]:
        """The index of the chunk an origin falls in and the code-point offset inside it."""
        if not self._bases:
            self._bases = [c.base for c in self.chunks]
        index = bisect_right(self._bases, origin) - 1
        return index, origin - self.chunks[index].base

    def counted_alike(self, index: int) -> bool:
        """Whether epub.js finds this chunk by its step. EPUB CFI counts a parent's chunks
        between its elements (the chunk after the k-th element is /2k+1, empty or not); epub.js
        counts the parent's text nodes (its n-th text node is /2n-1). They agree on a chunk
        only when every element before it in its parent has text before it."""
        if not self._agrees:
            seen: dict[int, int] = {}
            for chunk in self.chunks:
                n = seen.get(chunk.path, 0)
                self._agrees.append(chunk.step.index == 2 * n + 1)
                seen[chunk.path] = n + 1
        return self._agrees[index]


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


def _note_hidden(xml: ChapterXml, node: ElementTree.Element, tag: str) -> None:
    """Mark the last chunk as followed by text a reader's DOM has but the chapter text leaves out."""
    if xml.chunks and tag and any(node.itertext()):
        xml.hidden_after.add(len(xml.chunks) - 1)


def _body(root: ElementTree.Element, paths: list[tuple[int, CfiStep | None]]) -> tuple[ElementTree.Element, int]:
    """Where the chapter text starts (<body>, else the root) and its path index."""
    for k, child in enumerate(root):
        if _local(child.tag) == "body":
            paths.append((0, CfiStep(2 * (k + 1), element_id(child))))
            return child, len(paths) - 1
    return root, 0


def walk(data: bytes) -> ChapterXml:
    """The chapter's text from its XML tree, with every character's origin. Time and memory
    are linear in the document's size, whatever its depth (each element's step is stored
    once, linked to its parent's)."""
    root = parse_xml(data)
    out = _Builder(track=True)
    xml = ChapterXml(root, "", [], paths=[(-1, None)])
    total = 0

    def emit(raw: str | None, path: int, step: CfiStep, pre: bool, skip_newline: bool = False) -> None:
        nonlocal total
        if raw:
            xml.chunks.append(Chunk(path, step, raw, total))
            if skip_newline:  # an HTML parser drops the newline that follows <pre>; the chapter text has none
                out.text(raw[1:], True, total + 1)
            else:
                out.text(raw, pre, total)
            total += len(raw)

    start, start_path = _body(root, xml.paths)
    # iterative, as extract_chapter is: ("enter", element, its path) or ("tail", element, the
    # parent's path, the tail's odd step) or ("leave", element)
    stack: list[tuple[str, ElementTree.Element, int, CfiStep | None, bool]] = [("enter", start, start_path, None, False)]
    while stack:
        kind, node, path, step, pre = stack.pop()
        tag = _local(node.tag)
        if kind == "tail":
            assert step is not None
            emit(node.tail, path, step, pre)
            continue
        if kind == "leave":
            if tag in BLOCK_TAGS:
                out.newline()
            elif tag in CELL_TAGS and out.last not in "\t\n":
                out.add("\t")
            continue
        if tag in SKIP_TAGS or not tag:
            _note_hidden(xml, node, tag)
            continue
        if tag in BLOCK_TAGS:
            out.newline()
        elif tag == "br":
            if out.last == "\n":
                out.add("\n")
            else:
                out.newline()
        child_pre = pre or tag == "pre"
        stack.append(("leave", node, path, None, pre))
        children = list(node)
        first_child = len(xml.paths)
        xml.paths.extend((path, CfiStep(2 * (k + 1), element_id(child))) for k, child in enumerate(children))
        for k in range(len(children) - 1, -1, -1):
            stack.append(("tail", children[k], path, CfiStep(2 * k + 3), child_pre))
            stack.append(("enter", children[k], first_child + k, None, child_pre))
        text = node.text
        emit(text, path, CfiStep(1), child_pre, skip_newline=tag == "pre" and text is not None and text.startswith("\n"))
    xml.text = out.result()
    assert out.origins is not None
    xml.origins = out.origins
    return xml
