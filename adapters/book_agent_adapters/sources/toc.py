"""A book's table of contents: the PDF outline (PDFium bookmarks) or the EPUB navigation
(EPUB 3 nav.xhtml `nav epub:type="toc"`, else the EPUB 2 NCX), with each entry's place and
the first record there (by the records' own page/href claims, in reading order).

A book without one says so (`source: "none"`); an entry whose target is missing (an outline
item pointing nowhere, a nav link to no document) keeps its title with `target: "none"`.
"""

from __future__ import annotations

import posixpath
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.sources.pdf.reader import PDFIUM_LOCK

MAX_ENTRIES = 5000


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def pdf_outline(resolver: Any) -> list[dict[str, Any]]:
    pdf = resolver.pdf()
    count = pdf.page_count
    entries: list[dict[str, Any]] = []
    with PDFIUM_LOCK:
        doc = pdf._document()
        try:
            items = [(item.level, item.get_title() or "", _dest_index(item)) for item in doc.get_toc(max_depth=16)]
        except Exception:  # a broken outline tree: what was read so far is all there is
            items = []
    for level, title, index in items[:MAX_ENTRIES]:
        page = index if isinstance(index, int) and 0 <= index < count else None
        entries.append({"level": level + 1, "title": title, "page_index": page,
                        "page_label": resolver.page_label(page) if page is not None else None,
                        "target": "page" if page is not None else "none"})
    return entries


def _dest_index(item: Any) -> int | None:
    try:
        dest = item.get_dest()
        return dest.get_index() if dest is not None else None
    except Exception:
        return None


def epub_navigation(resolver: Any) -> tuple[str, list[dict[str, Any]]]:
    """('nav' | 'ncx' | 'none', entries)."""
    epub = resolver.epub()
    opf_path, data = epub.package_document()
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError:
        return "none", []
    items = [el for el in root.iter() if _local(el.tag) == "item"]
    base = posixpath.dirname(opf_path)
    nav = next((el for el in items if "nav" in (el.get("properties") or "").split()), None)
    if nav is not None:
        entries = _nav_entries(epub, base, nav.get("href") or "")
        if entries:
            return "nav", entries
    ncx = next((el for el in items if el.get("media-type") == "application/x-dtbncx+xml"), None)
    if ncx is not None:
        entries = _ncx_entries(epub, base, ncx.get("href") or "")
        if entries:
            return "ncx", entries
    return "none", []


def _nav_entries(epub: Any, base: str, href: str) -> list[dict[str, Any]]:
    from selectolax.lexbor import LexborHTMLParser

    zip_path = posixpath.normpath(posixpath.join(base, unquote(href)))
    data = epub.member(zip_path)
    if not data:
        return []
    tree = LexborHTMLParser(data.decode("utf-8", "replace"))
    navs = tree.css("nav")
    toc = next((n for n in navs if "toc" in (n.attributes.get("epub:type") or "").split()), navs[0] if navs else None)
    if toc is None:
        return []
    entries: list[dict[str, Any]] = []
    for link in toc.css("a")[:MAX_ENTRIES]:
        level = sum(1 for node in _ancestors(link, toc) if node.tag == "ol")
        target = _target(epub, posixpath.dirname(zip_path), base, link.attributes.get("href") or "")
        entries.append({"level": max(level, 1), "title": " ".join(link.text(separator=" ").split()), **target})
    return entries


def _ancestors(node: Any, stop: Any) -> list[Any]:
    out, node = [], node.parent
    while node is not None and node != stop:
        out.append(node)
        node = node.parent
    return out


def _ncx_entries(epub: Any, base: str, href: str) -> list[dict[str, Any]]:
    zip_path = posixpath.normpath(posixpath.join(base, unquote(href)))
    data = epub.member(zip_path)
    try:
        root = ElementTree.fromstring(data) if data else None
    except ElementTree.ParseError:
        return []
    entries: list[dict[str, Any]] = []

    def walk(parent: Any, level: int) -> None:
        for point in (el for el in parent if _local(el.tag) == "navPoint"):
            label = next((el for el in point.iter() if _local(el.tag) == "text"), None)
            content = next((el for el in point if _local(el.tag) == "content"), None)
            src = content.get("src") if content is not None else ""
            target = _target(epub, posixpath.dirname(zip_path), base, src or "")
            entries.append({"level": level, "title": " ".join((label.text or "").split()) if label is not None else "",
                            **target})
            walk(point, level + 1)

    nav_map = next((el for el in root.iter() if _local(el.tag) == "navMap"), None) if root is not None else None
    if nav_map is not None:
        walk(nav_map, 1)
    return entries[:MAX_ENTRIES]


def _target(epub: Any, doc_dir: str, base: str, href: str) -> dict[str, Any]:
    """A nav link as an OPF-relative href + spine_index (target 'none' when it leads nowhere)."""
    path, _, fragment = href.partition("#")
    relative = posixpath.relpath(posixpath.normpath(posixpath.join(doc_dir, unquote(path))), base or ".")
    try:
        item, _ = epub.resolve_href(relative + (f"#{fragment}" if fragment else ""))
    except BookAgentError:
        return {"href": href or None, "spine_index": None, "fragment": fragment or None, "target": "none"}
    return {"href": item.href, "spine_index": item.index if item.index >= 0 else None,
            "fragment": fragment or None, "target": "chapter"}


def first_records(entries: list[dict[str, Any]], records: list[dict[str, Any]], kind: str) -> None:
    """Give each entry the first record (reading order) at or after its place, by the records' claims."""
    for entry in entries:
        entry["first_record_id"] = None
        if entry.get("target") == "none":
            continue
        for record in records:
            source = record.get("source") or {}
            if kind == "pdf" and isinstance(source.get("page_index"), int) and source["page_index"] >= entry["page_index"]:
                entry["first_record_id"] = record["record_id"]
                break
            if kind == "epub" and _same_place(source, entry):
                entry["first_record_id"] = record["record_id"]
                break


def _same_place(source: dict[str, Any], entry: dict[str, Any]) -> bool:
    href = str(source.get("href") or "")
    path, _, fragment = href.partition("#")
    if entry.get("spine_index") is not None and source.get("spine_index") == entry["spine_index"]:
        pass
    elif posixpath.normpath(unquote(path)) != posixpath.normpath(unquote(str(entry.get("href") or ""))):
        return False
    want = entry.get("fragment")
    return not want or want in (fragment, source.get("fragment"))


def table_of_contents(resolver: Any) -> dict[str, Any]:
    if resolver.kind == "pdf":
        entries, source = pdf_outline(resolver), "pdf-outline"
    else:
        source, entries = epub_navigation(resolver)
        source = {"nav": "epub-nav", "ncx": "epub-ncx"}.get(source, "none")
    if not entries:
        source = "none"
    else:
        first_records(entries, resolver.records.all(), resolver.kind)
    out: dict[str, Any] = {"book_id": resolver.book_id, "kind": resolver.kind, "source": source,
                           "entries": entries, "entry_count": len(entries)}
    if source == "none":
        out["note"] = "this book has no table of contents (no PDF outline, no EPUB navigation)"
    return out
