"""An EPUB original through zipfile + selectolax: spine, chapter text, safe href resolution.

Hrefs (in records and locators) are relative to the package document (the OPF), as in
the OPF manifest; a full path inside the zip is accepted too. An href is refused when it
is absolute, has a URL scheme, a backslash or NUL, or climbs out of the book with `..`
(`source.href_invalid`), and when it names no file of the book (`source.href_missing`).
Members larger than MAX_MEMBER_BYTES are refused rather than inflated (zip bombs).
"""

from __future__ import annotations

import posixpath
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.etree import ElementTree

from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.epub_cfi import CfiStep, cfi_error, parse_cfi
from book_agent_adapters.sources.epub.cfi import ChapterCfi, package_steps, span_cfi
from book_agent_adapters.sources.epub.chapter_text import (
    extract_chapter,
    extract_chapter_text,
    image_sources,
)

__all__ = ["Chapter", "EpubSource", "SpineItem", "extract_chapter_text"]

MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_HREF_CHARS = 2048


@dataclass(frozen=True)
class SpineItem:
    index: int
    href: str  # relative to the OPF, as the manifest writes it
    zip_path: str


@dataclass(frozen=True)
class Chapter:
    item: SpineItem
    text: str
    fragments: dict[str, int] = field(default_factory=dict)
    images: list[str] = field(default_factory=list)  # zip paths of the chapter's images
    anchors: dict[str, tuple[int, int]] = field(default_factory=dict)  # block-level ids: [start, end)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


class EpubSource:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._zip: zipfile.ZipFile | None = None
        self._names: set[str] = set()
        self._opf_dir = ""
        self._spine: list[SpineItem] | None = None
        self._chapters: dict[str, Chapter] = {}
        self._cfi_maps: dict[str, ChapterCfi] = {}
        self._package_steps: dict[str, tuple[CfiStep, CfiStep]] | None = None

    def _corrupt(self, what: str, exc: BaseException | None = None) -> BookAgentError:
        return BookAgentError(
            "source.original_corrupt",
            f"the original EPUB cannot be read ({what})" + (f": {exc}" if exc else ""),
            details={"path": str(self.path), "what": what},
            remediation="re-download or rebuild the package; meanwhile read book.md (`book-agent markdown BOOK` / the read_markdown tool)",
        )

    def _read(self, name: str) -> bytes:
        assert self._zip is not None
        info = self._zip.getinfo(name)
        if info.file_size > MAX_MEMBER_BYTES:
            raise self._corrupt(f"{name} inflates to {info.file_size} bytes, over the limit")
        try:
            return self._zip.read(info)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise self._corrupt(name, exc) from exc

    def _open(self) -> None:
        if self._spine is not None:
            return
        try:
            self._zip = zipfile.ZipFile(self.path)
            self._names = set(self._zip.namelist())
            opf_path = self._opf_path()
            root = ElementTree.fromstring(self._read(opf_path))
        except BookAgentError:
            self.close()
            raise
        except (zipfile.BadZipFile, OSError, ElementTree.ParseError, KeyError) as exc:
            self.close()
            raise self._corrupt("package document", exc) from exc
        self._opf_dir = posixpath.dirname(opf_path)
        manifest = {el.get("id"): el.get("href") or "" for el in root.iter() if _local(el.tag) == "item"}
        spine: list[SpineItem] = []
        for el in root.iter():
            if _local(el.tag) == "itemref":
                href = manifest.get(el.get("idref"))
                if href:
                    zip_path = posixpath.normpath(posixpath.join(self._opf_dir, unquote(href)))
                    spine.append(SpineItem(len(spine), href, zip_path))
        self._spine = spine

    def _opf_path(self) -> str:
        if "META-INF/container.xml" in self._names:
            container = ElementTree.fromstring(self._read("META-INF/container.xml"))
            for el in container.iter():
                if _local(el.tag) == "rootfile" and el.get("full-path") in self._names:
                    return str(el.get("full-path"))
        candidates = sorted(n for n in self._names if n.lower().endswith(".opf"))
        if not candidates:
            raise self._corrupt("no package document (.opf)")
        return candidates[0]

    def close(self) -> None:
        with self._lock:
            if self._zip is not None:
                self._zip.close()
                self._zip = None
            self._spine = None

    @property
    def spine(self) -> list[SpineItem]:
        with self._lock:
            self._open()
            assert self._spine is not None
            return list(self._spine)

    def package_document(self) -> tuple[str, bytes]:
        """The OPF's zip path and bytes (for the navigation document: sources/toc.py)."""
        with self._lock:
            self._open()
            path = self._opf_path()
            return path, self._read(path)

    def member(self, zip_path: str) -> bytes | None:
        with self._lock:
            self._open()
            return self._read(zip_path) if zip_path in self._names else None

    def resolve_href(self, href: Any) -> tuple[SpineItem, str | None]:
        """(item, fragment) for an href like `text/ch03.xhtml#p12`; raises href_invalid/missing."""
        if not isinstance(href, str) or not href.strip() or len(href) > MAX_HREF_CHARS:
            raise _href_error("source.href_invalid", href, "an href must be a non-empty relative path")
        path, _, fragment = href.partition("#")
        path = unquote(path)
        scheme = path.split("/", 1)[0]
        if path.startswith("/") or "\\" in path or "\0" in path or ":" in scheme:
            raise _href_error("source.href_invalid", href, "an href must be a relative path inside the book")
        spine = self.spine
        joined = posixpath.normpath(posixpath.join(self._opf_dir, path))
        if joined == ".." or joined.startswith("../"):
            raise _href_error("source.href_invalid", href, "the href escapes the book")
        for candidate in (joined, posixpath.normpath(path)):
            for item in spine:
                if item.zip_path == candidate:
                    return item, fragment or None
        if joined in self._names:
            return SpineItem(-1, path, joined), fragment or None  # a document outside the spine
        raise _href_error("source.href_missing", href, "the book has no such document")

    def chapter(self, item: SpineItem) -> Chapter:
        with self._lock:
            self._open()
            cached = self._chapters.get(item.zip_path)
            if cached is not None:
                return cached
            if item.zip_path not in self._names:
                raise _href_error("source.href_missing", item.href, "the spine names a missing document")
            data = self._read(item.zip_path)
        try:
            text, fragments, anchors = extract_chapter(data)
            images = [self._image_path(item, src) for src in image_sources(data)]
        except Exception as exc:  # selectolax parses nearly anything; be safe anyway
            raise self._corrupt(item.zip_path, exc) from exc
        chapter = Chapter(item, text, fragments, [p for p in images if p], anchors)
        with self._lock:
            self._chapters[item.zip_path] = chapter
        return chapter

    def _cfi_parts(self, item: SpineItem) -> tuple[tuple[CfiStep, CfiStep] | None, ChapterCfi]:
        chapter = self.chapter(item)
        with self._lock:
            if self._package_steps is None:
                opf_path, opf = self.package_document()
                self._package_steps = package_steps(opf, posixpath.dirname(opf_path))
            mapped = self._cfi_maps.get(item.zip_path)
            if mapped is None:
                mapped = ChapterCfi.build(self._read(item.zip_path), chapter.text)
                self._cfi_maps[item.zip_path] = mapped
            return self._package_steps.get(item.zip_path), mapped

    def resolve_cfi(self, cfi: Any) -> tuple[SpineItem, int, int]:
        """(chapter, char_start, char_end) a CFI names; a point CFI gives an empty span.
        source.cfi_invalid (malformed), source.cfi_not_found (no such chapter, element or text).
        The itemref's position decides the chapter: readers write either its id or its idref
        as the step's assertion, so that one is not checked; the chapter's own ids are."""
        parsed = parse_cfi(cfi)
        self.spine  # noqa: B018  # opens the book (and raises if it cannot be read)
        wanted = tuple(s.index for s in parsed.start.package)
        if parsed.end is not None and tuple(s.index for s in parsed.end.package) != wanted:
            raise cfi_error(cfi, "a range's two ends are in different chapters")
        for item in self.spine:
            steps, mapped = self._cfi_parts(item)
            if steps is None or tuple(s.index for s in steps) != wanted:
                continue
            if mapped.xml is None:
                raise BookAgentError("source.cfi_not_found", f"the chapter {item.href} has no CFI positions: "
                                     f"{mapped.why_not}", details={"href": item.href},
                                     remediation="read the chapter by its href (read_source with href)")
            start = mapped.offset_of(parsed.start, after=False)
            end = mapped.offset_of(parsed.end, after=True) if parsed.end is not None else start
            return item, start, max(start, end)
        raise BookAgentError("source.cfi_not_found", f"the CFI names no chapter of this book's spine: "
                             f"{''.join(str(s) for s in parsed.start.package)}",
                             details={"steps": "".join(str(s) for s in parsed.start.package),
                                      "chapter_count": len(self.spine)},
                             remediation="use a CFI from this book's locators (epub_cfi / epub_cfi_start)")

    def cfi(self, item: SpineItem, start: int, end: int) -> dict[str, Any]:
        """The EPUB CFI of [start, end) in a chapter's text: {epub_cfi (a range), epub_cfi_start,
        cfi: verified | unverified | unavailable, why?} (adapters/book_agent_adapters/sources/epub/cfi.py). Each chapter's
        XML map is built once and kept, as its text is."""
        steps, mapped = self._cfi_parts(item)
        return span_cfi(mapped, steps, self.chapter(item).text, start, end)

    def _image_path(self, item: SpineItem, src: str) -> str | None:
        src = unquote(src.partition("#")[0])
        if not src or ":" in src.split("/", 1)[0] or src.startswith("/"):
            return None
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(item.zip_path), src))
        return joined if joined in self._names else None


def _href_error(code: str, href: Any, why: str) -> BookAgentError:
    return BookAgentError(
        code,
        f"href {href!r}: {why}",
        details={"href": href},
        remediation="use an href from the book's spine (a search hit's source_locator, or `book-agent locate` / locate_source)",
    )
