"""Book packages of real books, built the way an upstream pipeline would build them.

The originals are real books nobody here wrote (tests/support/data/real_books/, licences
beside them). The records come from extractors of our own that are *not* the product's:
a PDF page's PDFium text cleaned the way a pipeline cleans it (hyphenated words joined,
lines joined, whitespace collapsed), an EPUB paragraph's text through ElementTree with
no-break spaces and word joiners folded. So the records' text and offsets differ from what
the product extracts, as they do in packages built elsewhere, and verification has work to do.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from xml.etree import ElementTree

from tests.support.package_builder import (
    RecordSpec,
    _file_entry,
    _markdown,
    random_vectors,
    write_database,
)

DATA = Path(__file__).resolve().parent / "data" / "real_books"
LSHORT_PDF = DATA / "lshort-zh-cn.pdf"  # Chinese A4 XeLaTeX, 139 pages, page labels
DEVILS_EPUB = DATA / "devils-dictionary.epub"  # Standard Ebooks: NBSP, word joiners, few ids
ART_OF_WAR_EPUB = Path(__file__).resolve().parents[2] / "examples" / "the-art-of-war" / "the-art-of-war.epub"
KUMO_EPUB = DATA / "kumo-no-ito.epub"  # Aozora Bunko, vertical, ruby with rb/rp/rt (tools/build/aozora_epub.py)

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
_BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "td", "th", "figcaption"}
_XHTML = "{http://www.w3.org/1999/xhtml}"


@dataclass
class Chunk:
    text: str
    source: dict[str, Any]
    headings: list[str]


def _join_lines(lines: list[str]) -> str:
    """Lines joined as a pipeline joins them: no space between two CJK characters."""
    out = ""
    for line in (x.strip() for x in lines):
        if not line:
            continue
        if out and not (_CJK.match(out[-1]) and _CJK.match(line[0])):
            out += " "
        out += line
    return re.sub(r"\s+", " ", out)


def _sentences(text: str, size: int) -> list[tuple[int, int]]:
    """Spans of about `size` characters, cut after a sentence end where there is one."""
    spans, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = max(text.rfind(mark, start + size // 2, end) for mark in ("。", ". ", "；", "! ", "? "))
            end = cut + 1 if cut > 0 else end
        spans.append((start, end))
        start = end
        while start < len(text) and text[start] == " ":
            start += 1
    return [(s, e) for s, e in spans if text[s:e].strip()]


def pdf_page_texts(path: Path) -> Iterator[tuple[int, str | None, str]]:
    """(page index, printed label or None, PDFium's raw text) of every page, as an upstream
    pipeline reads them (U+FFFE line-end hyphen marks kept)."""
    import pypdfium2

    doc = pypdfium2.PdfDocument(str(path))
    try:
        for index in range(len(doc)):
            page = doc[index]
            textpage = page.get_textpage()
            raw = textpage.get_text_range()
            textpage.close()
            page.close()
            yield index, doc.get_page_label(index) or None, raw
    finally:
        doc.close()


def pdf_chunks(path: Path, size: int = 500) -> list[Chunk]:
    chunks: list[Chunk] = []
    for index, label, raw in pdf_page_texts(path):
        # a pipeline's dehyphenation: PDFium's line-end hyphen mark joins the word
        text = _join_lines(raw.replace("\ufffe", "").splitlines())
        for start, end in _sentences(text, size):
            source = {"kind": "pdf", "page_index": index, "page_label": label, "char_start": start, "char_end": end}
            chunks.append(Chunk(text[start:end].strip(), source, [f"page {label or index + 1}"]))
    return chunks


def _spine(z: zipfile.ZipFile) -> tuple[PurePosixPath, list[str]]:
    container = ElementTree.fromstring(z.read("META-INF/container.xml"))
    opf_path = next(e.get("full-path") for e in container.iter() if e.tag.endswith("rootfile"))
    opf = ElementTree.fromstring(z.read(str(opf_path)))
    items = {e.get("id"): e.get("href") for e in opf.iter() if e.tag.endswith("}item")}
    spine = [items[e.get("idref")] for e in opf.iter() if e.tag.endswith("}itemref")]
    return PurePosixPath(str(opf_path)).parent, [str(h) for h in spine]


def _epub_text(element: ElementTree.Element) -> str:
    """The block's printed text: ruby annotations (<rt>, <rp>, <rtc>) left out, as a pipeline
    that knows ruby leaves them (the Aozora book's furigana are not its words)."""
    text = "".join(_printed(element)).replace("\u00a0", " ").replace("\u2060", "")
    return re.sub(r"\s+", " ", text).strip()


def _printed(element: ElementTree.Element) -> Iterator[str]:
    yield element.text or ""
    for child in element:
        if child.tag[len(_XHTML):] not in ("rt", "rp", "rtc"):
            yield from _printed(child)
        yield child.tail or ""


def epub_chunks(path: Path) -> list[Chunk]:
    chunks: list[Chunk] = []
    with zipfile.ZipFile(path) as z:
        base, spine = _spine(z)
        for spine_index, href in enumerate(spine):
            root = ElementTree.fromstring(z.read(str(base / href)))
            offset, heading = 0, href
            for element, fragment in _blocks(root, None):
                text = _epub_text(element)
                if not text:
                    continue
                if element.tag[len(_XHTML):] in ("h1", "h2", "h3"):
                    heading = text
                source = {"kind": "epub", "href": href, "spine_index": spine_index,
                          "char_start": offset, "char_end": offset + len(text)}
                if fragment:
                    source["fragment"] = fragment
                chunks.append(Chunk(text, source, [heading]))
                offset += len(text) + 1
    return chunks


def _blocks(element: ElementTree.Element, fragment: str | None) -> list[tuple[ElementTree.Element, str | None]]:
    """Leaf block elements in document order, each with the nearest id at or above it."""
    fragment = element.get("id") or fragment
    if element.tag.startswith(_XHTML) and element.tag[len(_XHTML):] in _BLOCKS:
        return [(element, fragment)]
    out: list[tuple[ElementTree.Element, str | None]] = []
    for child in element:
        out += _blocks(child, fragment)
    return out


def build_real_package(dest: Path, original: Path, book_id: str, title: str, language: str) -> Path:
    """A valid package of a real original, records from the upstream-style chunkers above."""
    kind = "pdf" if original.suffix == ".pdf" else "epub"
    chunks = pdf_chunks(original) if kind == "pdf" else epub_chunks(original)
    records = [RecordSpec(f"{book_id}-{i:05d}", c.text, c.headings) for i, c in enumerate(chunks)]
    root = Path(dest)
    (root / "original").mkdir(parents=True, exist_ok=True)
    rel = f"original/book.{kind}"
    (root / rel).write_bytes(original.read_bytes())
    markdown, spans = _markdown(records)
    (root / "book.md").write_text(markdown, encoding="utf-8")
    (root / "SKILL.md").write_text(f"---\nname: {book_id}\ndescription: Search and cite {title}.\n---\n\n# {title}\n",
                                   encoding="utf-8")
    matrix = random_vectors([r.record_id for r in records], 16)
    write_database(root / "index.sqlite", book_id, records, [c.source for c in chunks], spans, matrix,
                   {"embedding_model": "test/random-vectors"})
    vectors = {"schema": "book-agent.vectors", "schema_version": "0.1", "provider": "local",
               "model": "test/random-vectors", "dimensions": 16, "dtype": "float32", "normalized": True,
               "metric": "cosine", "query_instruction": "", "record_count": len(records)}
    (root / "vectors.json").write_text(json.dumps(vectors), encoding="utf-8")
    media = "application/pdf" if kind == "pdf" else "application/epub+zip"
    files = {"original": _file_entry(root, rel, media_type=media), "markdown": _file_entry(root, "book.md"),
             "skill": _file_entry(root, "SKILL.md"), "database": _file_entry(root, "index.sqlite"),
             "vector_manifest": _file_entry(root, "vectors.json")}
    manifest = {"schema": "book-agent.package", "schema_version": "0.1", "book_id": book_id, "title": title,
                "authors": ["(see the licence note)"], "language": language, "created_at": "2026-12-01T00:00:00Z",
                "generator": {"name": "tests/support/real_books.py", "version": "1"}, "files": files,
                "extra_files": []}
    (root / "book-package.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    return root


REAL_BOOKS = {
    "lshort-zh-cn": (LSHORT_PDF, "一份（不太）简短的 LaTeX 2ε 介绍", "zh"),
    "devils-dictionary": (DEVILS_EPUB, "The Devil's Dictionary", "en"),
    "art-of-war-real": (ART_OF_WAR_EPUB, "The Art of War", "en"),
}


def real_package(dest: Path, name: str) -> Path:
    original, title, language = REAL_BOOKS[name]
    return build_real_package(dest / name, original, name, title, language)
