"""An EPUB CFI resolver of the tests' own, independent of the product's (book_agent/domain/sources/epub_cfi.py,
book_agent_adapters/sources/epub_cfi*.py): its own reading of the syntax (regular expressions), the
package document and chapters parsed with xml.dom.minidom (a DOM with comment, CDATA and text
nodes, as a reading system has), and the EPUB CFI 1.1 rules applied to that DOM directly:
3.1.1 even steps are child elements, odd steps the chunks of character data between them
(comments are not content, CDATA is), 3.1.2 an element's id asserted, 3.1.3 `!` from an itemref
to its manifest item's document, 3.1.4 offsets in UTF-16 code units, 3.4 ranges.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from dataclasses import dataclass
from urllib.parse import unquote
from xml.dom import Node, minidom

_STEP = re.compile(r"/(\d+)(?:\[([^\]]*)\])?")


@dataclass
class Point:
    package: list[tuple[int, str | None]]
    document: list[tuple[int, str | None]]
    offset: int


def _steps(text: str) -> list[tuple[int, str | None]]:
    found = _STEP.findall(text)
    assert "".join(f"/{n}" + (f"[{a}]" if a else "") for n, a in found) == text, text
    return [(int(n), a or None) for n, a in found]


def _point(path: str) -> Point:
    path, _, offset = path.rpartition(":")
    package, _, document = path.partition("!")
    return Point(_steps(package), _steps(document), int(offset))


def parse(cfi: str) -> tuple[Point, Point]:
    """(start, end) of a range CFI, or (point, point) for a point."""
    match = re.fullmatch(r"epubcfi\((.*)\)", cfi)
    assert match, cfi
    parts = match.group(1).split(",")
    if len(parts) == 1:
        point = _point(parts[0])
        return point, point
    parent, first, second = parts
    return _point(parent + first), _point(parent + second)


def _elements(node: Node) -> list[Node]:
    return [c for c in node.childNodes if c.nodeType == Node.ELEMENT_NODE]


def _child(node: Node, index: int, assertion: str | None) -> Node:
    assert index % 2 == 0 and index >= 2, f"/{index} is not an element step"
    child = _elements(node)[index // 2 - 1]
    assert (child.getAttribute("id") or None) == assertion, (index, assertion, child.getAttribute("id"))
    return child


def _chunk(node: Node, index: int) -> list[Node]:
    """The text and CDATA nodes of chunk `index` (odd) of an element's content."""
    assert index % 2 == 1
    chunk, out = 1, []
    for child in node.childNodes:
        if child.nodeType == Node.ELEMENT_NODE:
            chunk += 2
        elif child.nodeType in (Node.TEXT_NODE, Node.CDATA_SECTION_NODE) and chunk == index:
            out.append(child)
    return out


def _text_nodes(node: Node) -> list[Node]:
    out: list[Node] = []
    for child in node.childNodes:
        if child.nodeType in (Node.TEXT_NODE, Node.CDATA_SECTION_NODE):
            out.append(child)
        elif child.nodeType == Node.ELEMENT_NODE:
            out.extend(_text_nodes(child))
    return out


def _code_points(text: str, units: int) -> int:
    count = 0
    for i, ch in enumerate(text):
        if count == units:
            return i
        count += 2 if ord(ch) > 0xFFFF else 1
    assert count == units, "offset past the chunk's text"
    return len(text)


class Resolver:
    def __init__(self, chapter: bytes, package: tuple[bytes, str] | None = None,
                 documents: dict[str, bytes] | None = None) -> None:
        self.chapter = chapter
        self.package, self.documents = package, documents or {}

    def _document(self, point: Point) -> bytes:
        if self.package is None:
            return self.chapter
        opf, opf_dir = self.package
        root = minidom.parseString(opf).documentElement
        node = root
        for index, assertion in point.package:
            node = _child(node, index, assertion)
        assert node.localName == "itemref"
        items = {i.getAttribute("id"): i.getAttribute("href") for i in root.getElementsByTagNameNS("*", "item")}
        path = posixpath.normpath(posixpath.join(opf_dir, unquote(items[node.getAttribute("idref")])))
        return self.documents[path]

    def _position(self, dom: minidom.Document, point: Point) -> tuple[list[Node], int, int]:
        """(document-order text nodes, index of the point's node, code-point offset in it)."""
        node = dom.documentElement
        for index, assertion in point.document[:-1]:
            node = _child(node, index, assertion)
        chunk = _chunk(node, point.document[-1][0])
        everything = _text_nodes(dom.documentElement)
        remaining = point.offset
        for text_node in chunk:  # a chunk may be several nodes (text, CDATA, text around a comment)
            units = len(text_node.data.encode("utf-16-le")) // 2
            if remaining <= units:
                return everything, everything.index(text_node), _code_points(text_node.data, remaining)
            remaining -= units
        raise AssertionError("the offset is past its chunk")

    def text(self, cfi: str) -> str:
        """The text a reader's DOM range from the CFI's start to its end holds."""
        start, end = parse(cfi)
        data = self._document(start)
        assert data is self._document(end) or data == self._document(end)
        dom = minidom.parseString(data)
        nodes, a, i = self._position(dom, start)
        _, b, j = self._position(dom, end)
        if a == b:
            return str(nodes[a].data[i:j])
        return "".join([nodes[a].data[i:], *(n.data for n in nodes[a + 1 : b]), nodes[b].data[:j]])

    def following(self, cfi: str) -> str:
        """The document's text from a point CFI on."""
        point, _ = parse(cfi)
        nodes, a, i = self._position(minidom.parseString(self._document(point)), point)
        return "".join([nodes[a].data[i:], *(n.data for n in nodes[a + 1 :])])


def epub_resolver(path: str, href: str) -> Resolver:
    """A resolver over a real EPUB's package document and chapters; `href` (a locator's, relative
    to the package document) names the chapter."""
    with zipfile.ZipFile(path) as z:
        container = minidom.parseString(z.read("META-INF/container.xml"))
        opf_path = container.getElementsByTagNameNS("*", "rootfile")[0].getAttribute("full-path")
        docs = {n: z.read(n) for n in z.namelist() if n.endswith((".xhtml", ".html", ".htm"))}
        chapter = posixpath.normpath(posixpath.join(posixpath.dirname(opf_path), unquote(href)))
        return Resolver(docs[chapter], (z.read(opf_path), posixpath.dirname(opf_path)), docs)
